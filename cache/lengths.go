package cache

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"golang.org/x/sync/errgroup"
)

// Lengths is a dataset's persistent episode-length index: the number of
// steps of every episode, by split and by the episode's index within its
// split (TFDS order: shard by shard, record by record). An episode that could
// not be read is -1 and listed in Corrupt.
type Lengths struct {
	Source string `json:"source"`
	// Info fingerprints dataset_info.json's splits: an index built for
	// other shards is rebuilt, never trusted.
	Info    string             `json:"info"`
	Splits  map[string][]int32 `json:"splits"`
	Corrupt []string           `json:"corrupt,omitempty"`
}

// LengthStats summarises one split's episode lengths (readable episodes
// only).
type LengthStats struct {
	Episodes, Corrupt int
	Min, Median, Max  int
	Mean              float64
	TotalSteps        int64
}

// Stats summarises a split; ok is false when the split is not indexed.
func (l *Lengths) Stats(split string) (LengthStats, bool) {
	ls, ok := l.Splits[split]
	if !ok {
		return LengthStats{}, false
	}
	var st LengthStats
	sorted := make([]int32, 0, len(ls))
	for _, n := range ls {
		if n < 0 {
			st.Corrupt++
			continue
		}
		sorted = append(sorted, n)
		st.TotalSteps += int64(n)
	}
	st.Episodes = len(sorted)
	if len(sorted) == 0 {
		return st, true
	}
	slices.Sort(sorted)
	st.Min, st.Max = int(sorted[0]), int(sorted[len(sorted)-1])
	st.Median = int(sorted[len(sorted)/2])
	st.Mean = float64(st.TotalSteps) / float64(len(sorted))
	return st, true
}

func (d *Dataset) lengthsPath() string { return filepath.Join(d.indexDir(), "lengths.json") }

// infoFingerprint identifies the shard layout an index was built from.
func (d *Dataset) infoFingerprint() string {
	h := sha256.New()
	for _, s := range d.Info.Splits {
		fmt.Fprintf(h, "%s:%v;", s.Name, s.ShardLengths)
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// LoadLengths reads the persistent length index. It returns an error matching
// fs.ErrNotExist when there is none, or when it was built for another shard
// layout.
func (d *Dataset) LoadLengths() (*Lengths, error) {
	b, err := os.ReadFile(d.lengthsPath())
	if err != nil {
		return nil, err
	}
	var l Lengths
	if err := json.Unmarshal(b, &l); err != nil {
		return nil, fmt.Errorf("dataset %s: length index %s: %w (delete it to rebuild)", d.Name, d.lengthsPath(), err)
	}
	if l.Info != d.infoFingerprint() {
		return nil, fmt.Errorf("dataset %s: length index is for another version of the dataset: %w", d.Name, os.ErrNotExist)
	}
	return &l, nil
}

// BuildLengths indexes the named splits that the persistent index lacks,
// reading every episode (through the disk cache for remote sources) with at
// most workers shards at a time, and saves the index. progress, if not nil,
// is called with the number of episodes done since its last call, from
// several goroutines.
func (d *Dataset) BuildLengths(ctx context.Context, splits []string, workers int, progress func(done int)) (*Lengths, error) {
	l, err := d.LoadLengths()
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		l = &Lengths{Source: d.Source.URI(), Info: d.infoFingerprint(), Splits: map[string][]int32{}}
	}
	var todo []string
	for _, name := range splits {
		if _, ok := l.Splits[name]; !ok && !slices.Contains(todo, name) {
			todo = append(todo, name)
		}
	}
	if len(todo) == 0 {
		return l, nil
	}
	type job struct {
		split  string
		shard  int
		first  int64 // index within the split of the shard's first record
		length int64
	}
	var jobs []job
	for _, name := range todo {
		s, ok := d.Info.Split(name)
		if !ok {
			return nil, fmt.Errorf("dataset %s: no split %q (valid: %v)", d.Name, name, d.Splits())
		}
		l.Splits[name] = make([]int32, s.NumExamples())
		var first int64
		for i, n := range s.ShardLengths {
			jobs = append(jobs, job{name, i, first, n})
			first += n
		}
	}
	var (
		g, gctx = errgroup.WithContext(ctx)
		results = make([][]string, len(jobs)) // corrupt ids per job
	)
	g.SetLimit(max(workers, 1))
	for ji, j := range jobs {
		g.Go(func() error {
			out := l.Splits[j.split][j.first : j.first+j.length]
			for r := range int(j.length) {
				ref := Ref{Split: j.split, Shard: j.shard, Record: r}
				ep, err := d.load(gctx, ref)
				switch {
				case err == nil:
					out[r] = int32(ep.steps)
				case errors.Is(err, ErrCorrupt):
					out[r] = -1
					results[ji] = append(results[ji], d.EpisodeID(ref))
					d.store.log.Warn("corrupt episode while indexing lengths", "err", err)
				default:
					return err
				}
				if progress != nil {
					progress(1)
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, fmt.Errorf("dataset %s: length index: %w", d.Name, err)
	}
	for _, ids := range results {
		l.Corrupt = append(l.Corrupt, ids...)
	}
	if err := writeFileAtomic(d.lengthsPath(), l); err != nil {
		return nil, fmt.Errorf("dataset %s: save length index: %w", d.Name, err)
	}
	return l, nil
}

// writeFileAtomic writes v as JSON to a temp file beside path and renames
// it, so readers see the old file or the new one, never a part.
func writeFileAtomic(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}
