// Package synth owns `oxefs synth`: synthetic datasets shaped like the
// Open X-Embodiment mix, written offline, for trials, tests and benchmarks.
//
// Generate writes up to 29 datasets (synthetic.Datasets lists them, and
// package synthetic draws their episodes) in the TFDS
// layout that tensorflow_datasets itself reads and writes:
// DIR/<name>/1.0.0/ holds dataset_info.json (splits, shard lengths, sizes),
// features.json (the RLDS feature tree) and sharded TFRecord files of
// tf.train.Example episodes with both CRCs. The datasets mirror the real
// mix's variety: frames from 128×128 to 480×640 and 360×640, one to three
// cameras, JPEG at the 2–3 bits per pixel of real camera frames and one PNG
// dataset, language as Text or as int32 code points, flat and dict actions
// of 2 to 30 values, states of 0 to 15, episodes of 20 to 120 steps, train
// and val splits, the RLDS step scalars and episode metadata. Frames are
// rendered scenes (a textured table, objects, an arm that carries one of
// them, sensor noise), not flat colours, so that codecs, caches and
// decoders do realistic work. Every dataset is named synth_* and says in
// its description that it is synthetic.
//
// Beside the datasets it writes mix configs (README "Mix config"):
// mix.yaml with every dataset, mix-single.yaml with one representative
// dataset, and mix-two-copies.yaml with that dataset twice on disjoint
// halves, the pair that measures the mixing penalty.
//
// The output is a pure function of the options: each episode is drawn
// from a stream keyed by (seed, dataset, split, episode), so the bytes are
// the same whatever the number of workers or GOMAXPROCS, and the same
// episode keeps its bytes when --shards or --episodes change. (The JPEG
// and PNG bytes are those of the Go standard library that built oxefs, on
// its architecture: a compiler that fuses floating-point operations may
// round the scenes differently elsewhere.)
//
// Writing is crash-safe: each shard is written to a temporary file and
// renamed, and a dataset's dataset_info.json, which is what makes it a
// dataset to TFDS and oxefs, is removed before its shards are rewritten and
// written only after all of them, so that a partial dataset is never
// mistaken for a complete one. Running again over the same DIR replaces
// each dataset it writes, shards left from a different layout included.
//
// synth is the RLDS format's writer: it imports the format's TFRecord and
// Example encoders, the format-neutral content (format/synthetic) and
// nothing above the formats.
package synth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/oxefs/oxefs/format/rlds/tfrecord"
	"github.com/oxefs/oxefs/format/synthetic"
	"github.com/oxefs/oxefs/internal/atomicfile"
)

// Options says what Generate writes.
type Options struct {
	// Dir receives DIR/<name>/1.0.0/ per dataset and the mix configs.
	Dir string
	// Datasets is how many of the table to write, in its order; 0 writes
	// all of them, more than len(Datasets()) is an error.
	Datasets int
	// Episodes overrides every dataset's number of train episodes. The val
	// split holds a tenth as many, at least 2.
	Episodes int
	// Steps, when positive, makes every episode that many steps long
	// (at least 2); otherwise each episode's length is drawn from its
	// dataset's range.
	Steps int
	// Shards overrides every dataset's number of train shards (one per 6
	// episodes by default); it is capped at the number of episodes. Val
	// splits get one shard per 8 episodes.
	Shards int
	// ShardBytes, when positive, sizes every dataset's train split so that
	// each of its Shards train shards holds about this many bytes, as the
	// shards of a large dataset do: the number of train episodes follows
	// from the encoded size of the split's first episodes, and Episodes is
	// ignored. It needs Shards.
	ShardBytes int64
	// Seed keys every random choice.
	Seed uint64
	// Workers bounds the shards encoded at once; 0 means GOMAXPROCS.
	Workers int
	// Start, when set, is called once before any work with the totals
	// about to be written.
	Start func(datasets, episodes int)
	// Progress, when set, is called after each episode with its encoded
	// size. It is called from several goroutines at once.
	Progress func(episodes int, bytes int64)
	Log      *slog.Logger
}

// Result summarises what Generate wrote.
type Result struct {
	Datasets []DatasetResult
	Episodes int
	Frames   int
	Bytes    int64 // shard bytes, the TFRecord files
	// MixFiles are the mix configs written: mix.yaml, mix-single.yaml,
	// mix-two-copies.yaml and mix-steps.yaml, as absolute paths.
	MixFiles []string
	Elapsed  time.Duration
}

// DatasetResult is one dataset written. Its Dataset is the layout as
// written: Offset is capped below --steps.
type DatasetResult struct {
	synthetic.Dataset
	Dir           string         // absolute: DIR/<name>/1.0.0
	SplitEpisodes map[string]int // episodes written per split
	Frames        int            // camera frames, all cameras
	Bytes         int64          // shard bytes
}

// plannedDataset is one dataset's layout: its splits, episode lengths and
// shards.
type plannedDataset struct {
	synthetic.Dataset
	dir    string
	splits []plannedSplit
}

type plannedSplit struct {
	name   string
	steps  []int // per episode
	shards []shardRange
	idBase int64 // episode_id of the split's first episode
}

// shardRange is the episodes [start, end) of a split that one shard holds.
type shardRange struct{ start, end int }

func (o *Options) normalise() error {
	if o.Dir == "" {
		return errors.New("synth: no output directory")
	}
	if o.Datasets < 0 || o.Episodes < 0 || o.Steps < 0 || o.Shards < 0 || o.Workers < 0 || o.ShardBytes < 0 {
		return errors.New("synth: --datasets, --episodes, --steps, --shards, --shard-size and --workers must not be negative")
	}
	if o.ShardBytes > 0 && o.Shards == 0 {
		return errors.New("synth: --shard-size needs --shards: it sizes each of that many train shards")
	}
	if o.Steps == 1 {
		return errors.New("synth: --steps must be at least 2 (a pair needs two frames)")
	}
	if o.Datasets > len(synthetic.Datasets()) {
		return fmt.Errorf("synth: --datasets %d: there are %d synthetic datasets", o.Datasets, len(synthetic.Datasets()))
	}
	if o.Datasets == 0 {
		o.Datasets = len(synthetic.Datasets())
	}
	if o.Workers == 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	abs, err := filepath.Abs(o.Dir)
	if err != nil {
		return fmt.Errorf("synth: %w", err)
	}
	o.Dir = abs
	return nil
}

// plan lays out every dataset: episode counts and lengths, and shards.
func plan(o Options) []*plannedDataset {
	var out []*plannedDataset
	for _, d := range synthetic.Datasets()[:o.Datasets] {
		train := d.Episodes
		if o.Episodes > 0 {
			train = o.Episodes
		}
		if o.Steps > 0 {
			d.Offset = min(d.Offset, o.Steps-1)
		}
		p := &plannedDataset{Dataset: d, dir: filepath.Join(o.Dir, d.Name, version)}
		p.splits = planSplits(o, d, train)
		out = append(out, p)
	}
	return out
}

// planSplits lays out a dataset's train split of train episodes and its
// val split, a tenth as many.
func planSplits(o Options, d synthetic.Dataset, train int) []plannedSplit {
	val := max(2, train/10)
	trainShards := max(2, (train+5)/6)
	if o.Shards > 0 {
		trainShards = o.Shards
	}
	return []plannedSplit{
		planSplit(o, d, "train", train, trainShards, 0),
		planSplit(o, d, "val", val, (val+7)/8, int64(train)),
	}
}

// sizeSamples is how many of a train split's first episodes sizeShards
// encodes to learn the dataset's bytes per step.
const sizeSamples = 2

// sizeShards re-plans every dataset so that its train shards hold about
// o.ShardBytes each (Options.ShardBytes). It encodes the first episodes of
// each train split to learn the bytes per step, then takes episodes, at
// their planned lengths, until their estimated bytes reach Shards ×
// ShardBytes (to the nearest episode, and at least one per shard).
func sizeShards(ctx context.Context, o Options, plans []*plannedDataset) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(o.Workers)
	for _, p := range plans {
		g.Go(func() error {
			enc := newEncoder()
			var size, steps int64
			for i := range sizeSamples {
				n := episodeSteps(o, p.Dataset, "train", i)
				k := episodeKey{seed: o.Seed, dataset: p.Name, split: "train", index: i, id: int64(i), steps: n}
				rec, _, err := record(p.Dataset, k, enc)
				if err != nil {
					return fmt.Errorf("synth: %s: sizing shards: %w", p.Name, err)
				}
				size += int64(len(rec)) + tfrecord.HeaderLen + tfrecord.FooterLen
				steps += int64(n)
				if err := gctx.Err(); err != nil {
					return err
				}
			}
			perStep := float64(size) / float64(steps)
			target := float64(o.Shards) * float64(o.ShardBytes)
			train, sum := 0, 0.0
			for {
				next := float64(episodeSteps(o, p.Dataset, "train", train)) * perStep
				if train >= o.Shards && sum+next/2 >= target {
					break
				}
				sum += next
				train++
			}
			p.splits = planSplits(o, p.Dataset, train)
			return nil
		})
	}
	return g.Wait()
}

func planSplit(o Options, d synthetic.Dataset, name string, episodes, shards int, idBase int64) plannedSplit {
	s := plannedSplit{name: name, steps: make([]int, episodes), idBase: idBase}
	for i := range s.steps {
		s.steps[i] = episodeSteps(o, d, name, i)
	}
	shards = min(max(shards, 1), episodes)
	for i := range shards {
		s.shards = append(s.shards, shardRange{start: i * episodes / shards, end: (i + 1) * episodes / shards})
	}
	return s
}

// episodeSteps is the length of episode i of a split: --steps, or drawn
// from the dataset's range by a stream keyed by the episode alone.
func episodeSteps(o Options, d synthetic.Dataset, split string, i int) int {
	if o.Steps > 0 {
		return o.Steps
	}
	return synthetic.EpisodeSteps(d, o.Seed, split, i)
}

// shardTask is one shard file to write.
type shardTask struct {
	ds     *plannedDataset
	index  int // of ds in the plan
	split  int
	shard  int
	result *int64 // the file's size, set when written
}

// Generate writes the datasets and the mix configs. It stops at the first
// error or when ctx is cancelled; datasets completed by then are whole and
// usable, the others have no dataset_info.json.
func Generate(ctx context.Context, o Options) (*Result, error) {
	if err := o.normalise(); err != nil {
		return nil, err
	}
	began := time.Now()
	plans := plan(o)
	if o.ShardBytes > 0 {
		if err := sizeShards(ctx, o, plans); err != nil {
			return nil, err
		}
	}
	total := 0
	for _, p := range plans {
		for _, s := range p.splits {
			total += len(s.steps)
		}
	}
	if o.Start != nil {
		o.Start(len(plans), total)
	}

	// Unmark every dataset first: from here until its dataset_info.json is
	// written again, it is not a dataset.
	for _, p := range plans {
		if err := os.MkdirAll(p.dir, 0o755); err != nil {
			return nil, fmt.Errorf("synth: %w", err)
		}
		if err := os.Remove(filepath.Join(p.dir, "dataset_info.json")); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("synth: %w", err)
		}
	}

	res := &Result{}
	sizes := make([][][]int64, len(plans)) // dataset, split, shard
	var tasks []shardTask
	remaining := make([]atomic.Int32, len(plans))
	for di, p := range plans {
		sizes[di] = make([][]int64, len(p.splits))
		for si, s := range p.splits {
			sizes[di][si] = make([]int64, len(s.shards))
			for sh := range s.shards {
				tasks = append(tasks, shardTask{ds: p, index: di, split: si, shard: sh, result: &sizes[di][si][sh]})
			}
			remaining[di].Add(int32(len(s.shards)))
		}
	}
	frames := make([]atomic.Int64, len(plans))

	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(o.Workers)
	for _, t := range tasks {
		di := t.index
		if gctx.Err() != nil {
			break
		}
		g.Go(func() error {
			n, err := writeShard(gctx, o, t)
			if err != nil {
				return err
			}
			frames[di].Add(int64(n))
			if remaining[di].Add(-1) > 0 {
				return nil
			}
			// The last shard of the dataset is in: finish it.
			return finishDataset(o, t.ds, sizes[di])
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	for di, p := range plans {
		dr := DatasetResult{Dataset: p.Dataset, Dir: p.dir, SplitEpisodes: map[string]int{}, Frames: int(frames[di].Load())}
		for si, s := range p.splits {
			dr.SplitEpisodes[s.name] = len(s.steps)
			res.Episodes += len(s.steps)
			for _, b := range sizes[di][si] {
				dr.Bytes += b
			}
		}
		res.Frames += dr.Frames
		res.Bytes += dr.Bytes
		res.Datasets = append(res.Datasets, dr)
	}
	mixes, err := writeMixes(o, plans)
	if err != nil {
		return nil, err
	}
	res.MixFiles = mixes
	res.Elapsed = time.Since(began)
	return res, nil
}

// writeShard renders, encodes and writes one shard to a temporary file,
// then renames it into place. It returns the frames written.
func writeShard(ctx context.Context, o Options, t shardTask) (frames int, err error) {
	p := t.ds
	s := p.splits[t.split]
	r := s.shards[t.shard]
	name := shardName(p.Name, s.name, t.shard, len(s.shards))
	f, err := atomicfile.CreateTemp(p.dir, name) // 0644 under umask 022: a dataset for others to read
	if err != nil {
		return 0, fmt.Errorf("synth: %w", err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	w := newRecordWriter(f)
	enc := newEncoder()
	for i := r.start; i < r.end; i++ {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		k := episodeKey{seed: o.Seed, dataset: p.Name, split: s.name, index: i, id: s.idBase + int64(i), steps: s.steps[i]}
		rec, n, err := record(p.Dataset, k, enc)
		if err != nil {
			return 0, fmt.Errorf("synth: %s %s episode %d: %w", p.Name, s.name, i, err)
		}
		if err := w.write(rec); err != nil {
			return 0, fmt.Errorf("synth: %s: %w", name, err)
		}
		frames += n
		if o.Progress != nil {
			o.Progress(1, int64(len(rec)))
		}
	}
	size, err := w.close()
	if err != nil {
		return 0, fmt.Errorf("synth: %s: %w", name, err)
	}
	if err := f.Close(); err != nil {
		return 0, fmt.Errorf("synth: %s: %w", name, err)
	}
	if err := os.Rename(f.Name(), filepath.Join(p.dir, name)); err != nil {
		return 0, fmt.Errorf("synth: %w", err)
	}
	*t.result = size
	return frames, nil
}

// finishDataset removes what an earlier run with another layout left,
// then writes features.json and, last, dataset_info.json.
func finishDataset(o Options, p *plannedDataset, sizes [][]int64) error {
	keep := map[string]bool{}
	for _, s := range p.splits {
		for i := range s.shards {
			keep[shardName(p.Name, s.name, i, len(s.shards))] = true
		}
	}
	entries, err := os.ReadDir(p.dir)
	if err != nil {
		return fmt.Errorf("synth: %w", err)
	}
	for _, e := range entries {
		n := e.Name()
		oldShard := strings.HasPrefix(n, p.Name+"-") && strings.Contains(n, ".tfrecord-") && !keep[n]
		leftover := strings.HasPrefix(n, ".") && strings.Contains(n, ".tmp-") // a crashed run's
		if oldShard || leftover {
			if err := os.Remove(filepath.Join(p.dir, n)); err != nil {
				return fmt.Errorf("synth: %w", err)
			}
			o.Log.Debug("removed stale file", "dataset", p.Name, "file", n)
		}
	}
	feats, err := featuresJSON(p.Dataset)
	if err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(p.dir, "features.json"), feats); err != nil {
		return fmt.Errorf("synth: %w", err)
	}
	info, err := p.infoJSON(o.Seed, sizes)
	if err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(p.dir, "dataset_info.json"), info); err != nil {
		return fmt.Errorf("synth: %w", err)
	}
	o.Log.Debug("dataset written", "dataset", p.Name, "dir", p.dir)
	return nil
}
