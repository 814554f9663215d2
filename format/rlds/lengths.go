package rlds

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

	"github.com/oxefs/oxefs/episode"
	"github.com/oxefs/oxefs/internal/atomicfile"
	"github.com/oxefs/oxefs/storage"
)

// Lengths is a dataset's persistent episode-length index: the number of
// steps of every episode, by split and by the episode's index within its
// split (TFDS order: shard by shard, record by record). An episode that could
// not be read is -1 and listed in Corrupt.
type Lengths struct {
	Source string `json:"source"`
	// Info fingerprints the bytes the index was built from:
	// dataset_info.json and every shard's ObjectInfo. An index built from
	// other bytes is rebuilt, never trusted, even when the layout is the
	// same.
	Info string `json:"info"`
	// Shards holds each shard's ObjectInfo.Version, by file name: after a
	// rewrite, the shards whose version changed leave the disk cache.
	Shards  map[string]string  `json:"shards,omitempty"`
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

// statParallel bounds the shards stat'ed at once to fingerprint a dataset.
const statParallel = 16

// dataIdentity is what a length index is keyed on: the fingerprint and the
// version of each shard.
type dataIdentity struct {
	info    string
	shards  map[string]string
	objects map[string]storage.ObjectInfo // what shards is taken from
}

// identity stats every shard of every split and fingerprints them with
// dataset_info.json's bytes. Stat errors are classified as a fetch's are
// (a missing shard matches fs.ErrNotExist; a dead source storage.ErrUnavailable).
// A dataset opened offline takes each shard's ObjectInfo from what
// SaveOffline recorded.
func (d *Dataset) identity(ctx context.Context) (dataIdentity, error) {
	var names []string
	for _, s := range d.Meta.Splits {
		ns, err := d.Meta.ShardNames(s.Name)
		if err != nil {
			return dataIdentity{}, fmt.Errorf("dataset %s: %w", d.Name, err)
		}
		names = append(names, ns...)
	}
	objects := make([]storage.ObjectInfo, len(names))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(statParallel)
	for i, name := range names {
		g.Go(func() error {
			info, err := d.statShard(gctx, name)
			if err != nil {
				return fmt.Errorf("dataset %s: identify shard %s: %w", d.Name, name, err)
			}
			objects[i] = info
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return dataIdentity{}, err
	}
	h := sha256.New()
	h.Write(d.infoSum[:])
	id := dataIdentity{shards: make(map[string]string, len(names)), objects: make(map[string]storage.ObjectInfo, len(names))}
	for i, name := range names {
		fmt.Fprintf(h, "%s:%s;", name, objects[i].Version)
		id.shards[name] = objects[i].Version
		id.objects[name] = objects[i]
	}
	id.info = hex.EncodeToString(h.Sum(nil)[:8])
	return id, nil
}

// LoadLengths reads the persistent length index. It returns an error matching
// fs.ErrNotExist when there is none, or when it was built from other bytes
// than the dataset's now (see Lengths.Info).
func (d *Dataset) LoadLengths() (*Lengths, error) {
	l, _, _, err := d.loadLengths(d.store.Context())
	return l, err
}

// loadLengths is LoadLengths that also returns the identity of the
// dataset's bytes now and, when the index on disk is for other bytes, that
// stale index.
func (d *Dataset) loadLengths(ctx context.Context) (l *Lengths, id dataIdentity, stale *Lengths, err error) {
	b, err := os.ReadFile(d.lengthsPath())
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, id, nil, err
	}
	if id, err = d.identity(ctx); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			// Not to be taken for a missing index.
			return nil, id, nil, fmt.Errorf("%v (a shard that dataset_info.json lists is missing)", err)
		}
		return nil, id, nil, err
	}
	if b == nil {
		return nil, id, nil, fmt.Errorf("dataset %s: no length index: %w", d.Name, os.ErrNotExist)
	}
	l = new(Lengths)
	if err := json.Unmarshal(b, l); err != nil {
		return nil, id, nil, fmt.Errorf("dataset %s: length index %s: %w (delete it to rebuild)", d.Name, d.lengthsPath(), err)
	}
	if l.Info != id.info {
		return nil, id, l, fmt.Errorf("dataset %s: length index is for other bytes of the dataset (rewritten since): %w", d.Name, os.ErrNotExist)
	}
	return l, id, nil, nil
}

// forgetShards drops what this process holds of the shards whose version
// in stale differs from id's: their record index and the identity its
// reads named. The disk cache's copies of the old version are never read
// again (each copy is of one version) and go as its LRU takes them.
func (d *Dataset) forgetShards(stale *Lengths, id dataIdentity) error {
	for name, v := range stale.Shards {
		if id.shards[name] == v {
			continue
		}
		d.mu.Lock()
		delete(d.spans, name)
		delete(d.objects, name)
		hi := d.hops[name]
		d.mu.Unlock()
		if !d.src.Cached() {
			continue
		}
		if hi != nil {
			if <-hi.ready; hi.err == nil && hi.info.Version == id.shards[name] {
				hi = nil // indexed at the new version already: keep it
			}
		}
		if hi != nil {
			d.forgetRemote(name, hi)
		}
	}
	return nil
}

// BuildLengths indexes the named splits that the persistent index lacks,
// reading every episode (through the disk cache for remote sources) with at
// most workers shards at a time, and saves the index. progress, if not nil,
// is called with the number of episodes done since its last call, from
// several goroutines.
func (d *Dataset) BuildLengths(ctx context.Context, splits []string, workers int, progress func(done int)) (*Lengths, error) {
	l, id, stale, err := d.loadLengths(ctx)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		if stale != nil {
			if err := d.forgetShards(stale, id); err != nil {
				return nil, err
			}
		}
		l = &Lengths{Source: d.Source.Location(), Info: id.info, Shards: id.shards, Splits: map[string][]int32{}}
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
	var ranges []episode.Range
	for _, name := range todo {
		s, ok := d.Meta.Split(name)
		if !ok {
			return nil, fmt.Errorf("dataset %s: no split %q (valid: %v)", d.Name, name, d.Splits())
		}
		l.Splits[name] = make([]int32, s.NumExamples())
		ranges = append(ranges, episode.Range{Split: name, From: 0, To: s.NumExamples()})
	}
	segs, err := d.info.Segments(ranges)
	if err != nil {
		return nil, fmt.Errorf("dataset %s: %w", d.Name, err)
	}
	// at[k] is segment k's first episode's index within its split: the
	// segments cover whole splits, in order.
	at := make([]int, len(segs))
	for k := 1; k < len(segs); k++ {
		if segs[k].Split == segs[k-1].Split {
			at[k] = at[k-1] + segs[k-1].Count
		}
	}
	results := make([][]string, len(segs)) // corrupt ids per segment
	err = d.Scan(ctx, segs, workers, func(seg int, ref Ref, ep episode.Episode, err error) error {
		i := at[seg] + ref.Record - segs[seg].First
		if err != nil {
			l.Splits[ref.Split][i] = -1
			results[seg] = append(results[seg], d.EpisodeID(ref))
			d.store.Log().Warn("corrupt episode while indexing lengths", "err", err)
		} else {
			l.Splits[ref.Split][i] = int32(ep.Steps())
		}
		if progress != nil {
			progress(1)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("dataset %s: length index: %w", d.Name, err)
	}
	for _, ids := range results {
		l.Corrupt = append(l.Corrupt, ids...)
	}
	if err := atomicfile.WriteJSON(d.lengthsPath(), l); err != nil {
		return nil, fmt.Errorf("dataset %s: save length index: %w", d.Name, err)
	}
	return l, nil
}
