package synth

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/parquet-go/parquet-go"

	"github.com/oxefs/oxefs/format/lerobot"
	"github.com/oxefs/oxefs/internal/atomicfile"
)

// writeMeta writes the task table, the episode table and, last, info.json.
func (p *dataset) writeMeta(o Options) error {
	p.Bytes = p.dataBytes
	for _, b := range p.videoBytes {
		p.Bytes += b
	}
	p.Frames = 0
	for _, e := range p.Episodes {
		p.Frames += e.Steps * len(p.Cameras)
	}
	if err := p.writeTasks(); err != nil {
		return err
	}
	if err := p.writeEpisodes(); err != nil {
		return err
	}
	info, err := p.infoJSON(o)
	if err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(p.Dir, lerobot.InfoPath), info); err != nil {
		return fmt.Errorf("synth: %w", err)
	}
	return nil
}

// pandasTasks is the pandas metadata pyarrow writes for the task table:
// the task text is the DataFrame's index, as LeRobot keeps it.
const pandasTasks = `{"index_columns": ["__index_level_0__"], "column_indexes": [{"name": null, "field_name": null, "pandas_type": "unicode", "numpy_type": "object", "metadata": {"encoding": "UTF-8"}}], "columns": [{"name": "task_index", "field_name": "task_index", "pandas_type": "int64", "numpy_type": "int64", "metadata": null}, {"name": null, "field_name": "__index_level_0__", "pandas_type": "unicode", "numpy_type": "object", "metadata": null}], "attributes": {}, "creator": {"library": "pyarrow", "version": "19.0.0"}, "pandas_version": "2.2.3"}`

func (p *dataset) writeTasks() error {
	schema := parquet.NewSchema("schema", parquet.Group{
		"task_index":        int64Leaf,
		"__index_level_0__": parquet.String(),
	})
	b := parquet.NewRowBuilder(schema)
	ci, _ := schema.Lookup("task_index")
	ct, _ := schema.Lookup("__index_level_0__")
	var rows []parquet.Row
	for i, t := range p.Tasks {
		b.Reset()
		b.Add(ci.ColumnIndex, parquet.Int64Value(int64(i)))
		b.Add(ct.ColumnIndex, parquet.ByteArrayValue([]byte(t)))
		rows = append(rows, b.Row())
	}
	return writeTable(filepath.Join(p.Dir, lerobot.TasksPath), schema, rows, parquet.KeyValueMetadata("pandas", pandasTasks))
}

// writeEpisodes writes the episode table, one file.
func (p *dataset) writeEpisodes() error {
	g := parquet.Group{
		"episode_index":             int64Leaf,
		"tasks":                     parquet.List(parquet.String()),
		"length":                    int64Leaf,
		"data/chunk_index":          int64Leaf,
		"data/file_index":           int64Leaf,
		"dataset_from_index":        int64Leaf,
		"dataset_to_index":          int64Leaf,
		"meta/episodes/chunk_index": int64Leaf,
		"meta/episodes/file_index":  int64Leaf,
	}
	double := parquet.Leaf(parquet.DoubleType)
	for _, k := range p.Cameras {
		v := "videos/" + k + "/"
		g[v+"chunk_index"], g[v+"file_index"] = int64Leaf, int64Leaf
		g[v+"from_timestamp"], g[v+"to_timestamp"] = double, double
	}
	schema := parquet.NewSchema("schema", g)
	col := func(path ...string) int {
		leaf, _ := schema.Lookup(path...)
		return leaf.ColumnIndex
	}
	b := parquet.NewRowBuilder(schema)
	var rows []parquet.Row
	for e, r := range p.rows {
		b.Reset()
		i64 := func(name string, v int64) { b.Add(col(name), parquet.Int64Value(v)) }
		i64("episode_index", r.Index)
		b.Add(col("tasks", "list", "element"), parquet.ByteArrayValue([]byte(p.Tasks[p.Episodes[e].Task])))
		i64("length", r.Length)
		i64("data/chunk_index", r.DataChunk)
		i64("data/file_index", r.DataFile)
		i64("dataset_from_index", r.From)
		i64("dataset_to_index", r.To)
		i64("meta/episodes/chunk_index", 0)
		i64("meta/episodes/file_index", 0)
		for ci, k := range p.Cameras {
			s := p.spans[ci][e]
			v := "videos/" + k + "/"
			i64(v+"chunk_index", s.Chunk)
			i64(v+"file_index", s.File)
			b.Add(col(v+"from_timestamp"), parquet.DoubleValue(s.FromTimestamp))
			b.Add(col(v+"to_timestamp"), parquet.DoubleValue(s.ToTimestamp))
		}
		rows = append(rows, b.Row())
	}
	name, _ := lerobot.FilePath(lerobot.EpisodesPath, 0, 0, "")
	return writeTable(filepath.Join(p.Dir, name), schema, rows)
}

// writeTable writes a small parquet file in one row group.
func writeTable(path string, schema *parquet.Schema, rows []parquet.Row, opts ...parquet.WriterOption) (err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("synth: %w", err)
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("synth: %w", err)
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("synth: %w", cerr)
		}
	}()
	w := parquet.NewWriter(f, append([]parquet.WriterOption{schema, parquet.Compression(&parquet.Snappy)}, opts...)...)
	if _, err := w.WriteRows(rows); err != nil {
		return fmt.Errorf("synth: %s: %w", path, err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("synth: %s: %w", path, err)
	}
	return nil
}

// SyntheticNote is info.json's top-level "synthetic" entry.
const SyntheticNote = "SYNTHETIC data written by `oxefs synth --format lerobot`: rendered scenes and made-up actions shaped like an Open X-Embodiment dataset, not real robot data"

type featureJSON struct {
	DType string         `json:"dtype"`
	Shape []int          `json:"shape"`
	Names any            `json:"names"`
	Info  map[string]any `json:"info,omitempty"`
}

func (p *dataset) infoJSON(o Options) ([]byte, error) {
	names := func(prefix string, n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("%s%d", prefix, i)
		}
		return out
	}
	features := map[string]featureJSON{
		"action":        {DType: "float32", Shape: []int{p.Dataset.ActionDim()}, Names: names("a", p.Dataset.ActionDim())},
		"timestamp":     {DType: "float32", Shape: []int{1}},
		"frame_index":   {DType: "int64", Shape: []int{1}},
		"episode_index": {DType: "int64", Shape: []int{1}},
		"index":         {DType: "int64", Shape: []int{1}},
		"task_index":    {DType: "int64", Shape: []int{1}},
	}
	if st := p.Dataset.State; st.Key != "" {
		features["observation.state"] = featureJSON{DType: "float32", Shape: []int{st.Dim}, Names: names("s", st.Dim)}
	}
	for ci, c := range p.Dataset.Cameras {
		w, h := c.Width&^1, c.Height&^1
		features[p.Cameras[ci]] = featureJSON{DType: "video", Shape: []int{h, w, 3}, Names: []string{"height", "width", "channels"},
			Info: map[string]any{
				"video.height": h, "video.width": w, "video.codec": o.Codec, "video.pix_fmt": "yuv420p",
				"video.is_depth_map": false, "video.fps": FPS, "video.channels": 3, "has_audio": false,
			}}
	}
	frames := 0
	for _, e := range p.Episodes {
		frames += e.Steps
	}
	info := struct {
		Synthetic       string                 `json:"synthetic"`
		Version         string                 `json:"codebase_version"`
		RobotType       string                 `json:"robot_type"`
		Episodes        int                    `json:"total_episodes"`
		Frames          int                    `json:"total_frames"`
		Tasks           int                    `json:"total_tasks"`
		ChunksSize      int                    `json:"chunks_size"`
		DataFileSizeMB  float64                `json:"data_files_size_in_mb"`
		VideoFileSizeMB float64                `json:"video_files_size_in_mb"`
		FPS             int                    `json:"fps"`
		Splits          map[string]string      `json:"splits"`
		DataPath        string                 `json:"data_path"`
		VideoPath       string                 `json:"video_path"`
		Features        map[string]featureJSON `json:"features"`
	}{
		Synthetic: SyntheticNote, Version: "v3.0", RobotType: p.Name, Episodes: len(p.episodes), Frames: frames,
		Tasks: len(p.Tasks), ChunksSize: 1000,
		DataFileSizeMB: float64(o.DataFileBytes) / (1 << 20), VideoFileSizeMB: float64(o.VideoFileBytes) / (1 << 20),
		FPS:      FPS,
		Splits:   map[string]string{"train": fmt.Sprintf("0:%d", p.Train), "val": fmt.Sprintf("%d:%d", p.Train, p.Train+p.Val)},
		DataPath: dataPath, VideoPath: videoPath, Features: features,
	}
	b, err := json.MarshalIndent(info, "", "    ")
	if err != nil {
		return nil, fmt.Errorf("synth: %s: info.json: %w", p.Name, err)
	}
	return append(b, '\n'), nil
}
