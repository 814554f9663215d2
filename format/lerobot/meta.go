package lerobot

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"

	"github.com/oxefs/oxefs/storage"
)

// EpisodesPath is the path template of the episode table's files.
const EpisodesPath = "meta/episodes/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"

// TasksPath is the task table.
const TasksPath = "meta/tasks.parquet"

// maxEpisodes bounds total_episodes, so that a corrupt info.json cannot
// make oxefs walk or allocate without end.
const maxEpisodes = 1 << 26

// EpisodeMeta is one row of the episode table: where an episode's rows and
// frames are.
type EpisodeMeta struct {
	Index  int64
	Length int64
	// DataChunk and DataFile name the data file; From and To are the
	// episode's rows as global frame indices (dataset_from_index,
	// dataset_to_index).
	DataChunk, DataFile int64
	From, To            int64
	// Videos holds, per video key, the video file and where the episode
	// lies in it.
	Videos map[string]VideoSpan
}

// VideoSpan is where one episode's frames of one camera are: a video file
// and the episode's first and end timestamps in it, in seconds.
type VideoSpan struct {
	Chunk, File                int64
	FromTimestamp, ToTimestamp float64
}

// readEpisodes reads the episode table, file after file, until it holds
// total_episodes rows, and checks that they are episodes 0..N-1, once each,
// with consistent row ranges. It returns the rows and the files read.
func readEpisodes(ctx context.Context, src storage.Backend, in *Info, videoKeys []string) ([]EpisodeMeta, []string, error) {
	if in.Episodes > maxEpisodes {
		return nil, nil, fmt.Errorf("%s: total_episodes %d is more than oxefs reads (%d)", InfoPath, in.Episodes, maxEpisodes)
	}
	chunksSize := in.ChunksSize
	if chunksSize <= 0 {
		chunksSize = 1000 // LeRobot's default
	}
	var (
		eps   []EpisodeMeta
		files []string
	)
	chunk, file := int64(0), int64(0)
	for int64(len(eps)) < in.Episodes {
		name, _ := FilePath(EpisodesPath, chunk, file, "")
		t, err := openObjectTable(ctx, src, name)
		if err != nil {
			return nil, nil, fmt.Errorf("episode table: %d of %d episodes read, then %w", len(eps), in.Episodes, err)
		}
		rows, err := episodeRows(t, videoKeys)
		if err != nil {
			return nil, nil, err
		}
		if len(rows) == 0 {
			return nil, nil, fmt.Errorf("%s: no episodes", name)
		}
		eps, files = append(eps, rows...), append(files, name)
		if file++; file >= chunksSize {
			chunk, file = chunk+1, 0
		}
	}
	sort.Slice(eps, func(i, j int) bool { return eps[i].Index < eps[j].Index })
	for i, e := range eps {
		switch {
		case e.Index != int64(i):
			return nil, nil, fmt.Errorf("episode table: episode %d is missing or listed twice (total_episodes %d)", i, in.Episodes)
		case e.Length <= 0 || e.To-e.From != e.Length || e.From < 0:
			return nil, nil, fmt.Errorf("episode table: episode %d has length %d and rows [%d, %d)", e.Index, e.Length, e.From, e.To)
		}
	}
	if int64(len(eps)) != in.Episodes {
		return nil, nil, fmt.Errorf("episode table: %d episodes, info.json says total_episodes %d", len(eps), in.Episodes)
	}
	return eps, files, nil
}

func episodeRows(t *table, videoKeys []string) ([]EpisodeMeta, error) {
	n := t.rows()
	ints := func(name string) ([]int64, error) {
		c, err := t.column(name)
		if err != nil {
			return nil, err
		}
		return c.int64s(0, n)
	}
	floats := func(name string) ([]float64, error) {
		c, err := t.column(name)
		if err != nil {
			return nil, err
		}
		return c.float64s(0, n, 1)
	}
	var errs []error
	get := func(name string) []int64 {
		v, err := ints(name)
		errs = append(errs, err)
		return v
	}
	idx, length := get("episode_index"), get("length")
	dc, df := get("data/chunk_index"), get("data/file_index")
	from, to := get("dataset_from_index"), get("dataset_to_index")
	type vcols struct {
		chunk, file []int64
		from, to    []float64
	}
	vids := make([]vcols, len(videoKeys))
	for i, k := range videoKeys {
		vids[i].chunk, vids[i].file = get("videos/"+k+"/chunk_index"), get("videos/"+k+"/file_index")
		var err error
		vids[i].from, err = floats("videos/" + k + "/from_timestamp")
		errs = append(errs, err)
		vids[i].to, err = floats("videos/" + k + "/to_timestamp")
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	out := make([]EpisodeMeta, n)
	for r := range out {
		e := EpisodeMeta{Index: idx[r], Length: length[r], DataChunk: dc[r], DataFile: df[r], From: from[r], To: to[r]}
		if len(videoKeys) > 0 {
			e.Videos = make(map[string]VideoSpan, len(videoKeys))
			for i, k := range videoKeys {
				e.Videos[k] = VideoSpan{Chunk: vids[i].chunk[r], File: vids[i].file[r], FromTimestamp: vids[i].from[r], ToTimestamp: vids[i].to[r]}
			}
		}
		out[r] = e
	}
	return out, nil
}

// readTasks reads the task table: task_index → task text. pandas writes
// the text as the table's index, __index_level_0__; a column named task is
// read first when there is one.
func readTasks(ctx context.Context, src storage.Backend) (map[int64]string, error) {
	t, err := openObjectTable(ctx, src, TasksPath)
	if err != nil {
		return nil, err
	}
	n := t.rows()
	ic, err := t.column("task_index")
	if err != nil {
		return nil, err
	}
	idx, err := ic.int64s(0, n)
	if err != nil {
		return nil, err
	}
	var tc *column
	for _, name := range []string{"task", "__index_level_0__"} {
		if t.has(name) {
			if tc, err = t.column(name); err != nil {
				return nil, err
			}
			break
		}
	}
	if tc == nil {
		_, err := t.column("task")
		return nil, err
	}
	text, err := tc.bytes(0, n)
	if err != nil {
		return nil, err
	}
	tasks := make(map[int64]string, n)
	for i, k := range idx {
		if _, dup := tasks[k]; dup {
			return nil, fmt.Errorf("%s: task_index %d is listed twice", TasksPath, k)
		}
		tasks[k] = string(text[i])
	}
	return tasks, nil
}

// openObjectTable opens a whole parquet object of src, read into memory:
// the metadata tables are small.
func openObjectTable(ctx context.Context, src storage.Backend, name string) (*table, error) {
	b, err := storage.ReadFile(ctx, src, name)
	if err != nil {
		return nil, err
	}
	return openTable(name, bytesReaderAt(b), int64(len(b)))
}

// bytesReaderAt reads a byte slice.
type bytesReaderAt []byte

func (b bytesReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 || off > int64(len(b)) {
		return 0, fmt.Errorf("read at %d of %d bytes", off, len(b))
	}
	n := copy(p, b[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// sortedKeys returns m's keys, sorted.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
