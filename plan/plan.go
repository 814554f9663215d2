package plan

import (
	"errors"
	"fmt"
	"math"

	"github.com/oxefs/oxefs/config"
	"github.com/oxefs/oxefs/episode"
	"github.com/oxefs/oxefs/keyed"
)

// Domain tags: every keyed hash of the plan names what it is for, so that no
// two random choices share a stream.
const (
	tagWindowOrder uint64 = 0x6f72646572 // "order": the window order of an epoch
	tagWindowUnits uint64 = 0x756e697473 // "units": the unit order within a window
	tagInterleave  uint64 = 0x696e746c76 // "intlv": sample positions in a batch
	tagSubstitute  uint64 = 0x7375627374 // "subst": a substitute's key
)

// orderCache is how many epochs' window orders each dataset keeps. A batch
// touches one or two epochs of a dataset (more only for a dataset smaller
// than its share of a batch, whose orders are tiny).
const orderCache = 4

// Options are the parts of a config that the plan depends on.
type Options struct {
	Seed      uint64
	BatchSize int
	// SamplesPerEpisode n ≥ 1 makes (episode, j < n) the sample units; 0
	// makes every valid pair a unit, which needs DatasetShape.Lengths.
	SamplesPerEpisode int
	// WindowShards is the number of consecutive shards in a window.
	WindowShards int
	// NumBatches is the number of batches listed; 0 means one pass over
	// the sample units: ⌈units / batch size⌉.
	NumBatches int64
}

// Segment is a run of consecutive records of one shard, part of a split
// selection.
type Segment = episode.Segment

// DatasetShape is everything the plan needs to know about one dataset.
type DatasetShape struct {
	Name string
	// Source and Split are reported, not used.
	Source string
	Split  string
	Weight config.Weight
	// Segments are the selected episodes in split order: shard by shard,
	// record by record. Consecutive segments of the same shard form one
	// shard of the selection.
	Segments []Segment
	// Lengths are the steps of each selected episode in segment order; a
	// negative length is an unreadable episode. SamplesPerEpisode 0 needs
	// them; otherwise they are optional and only counted (episodes too
	// short or unreadable, for Info), never planned with, so that a plan
	// does not depend on whether an index exists.
	Lengths []int32
	// MinOffset is the smallest offset: an episode of L steps has
	// max(0, L − MinOffset) units (SamplesPerEpisode 0), t in
	// [0, L − MinOffset). An unreadable episode has one, t = 0: its
	// build fails and is substituted and counted like any bad record.
	MinOffset int
}

// Plan is the batch plan: a pure function from a batch index to its
// samples. It is safe for concurrent use.
type Plan struct {
	// constants
	seed       uint64
	batch      int
	numBatches int64 // over all ranks
	rank       int64
	world      int64
	sched      *schedule
	ds         []*planDataset // shared by the shards of a plan
	active     []int          // datasets that get samples
}

// NewPlan builds a plan. It fails on an inconsistent shape, a dataset with
// a weight but no sample units, or weights the plan cannot honour.
func New(opts Options, shapes []DatasetShape) (*Plan, error) {
	switch {
	case opts.BatchSize <= 0:
		return nil, fmt.Errorf("mix: batch size must be positive, got %d", opts.BatchSize)
	case opts.WindowShards <= 0:
		return nil, fmt.Errorf("mix: window_shards must be positive, got %d", opts.WindowShards)
	case opts.SamplesPerEpisode < 0:
		return nil, fmt.Errorf("mix: samples_per_episode must be ≥ 0, got %d", opts.SamplesPerEpisode)
	case opts.NumBatches < 0:
		return nil, fmt.Errorf("mix: num_batches must be positive, got %d", opts.NumBatches)
	case len(shapes) == 0:
		return nil, errors.New("mix: no datasets")
	}
	p := &Plan{
		seed:  opts.Seed,
		batch: opts.BatchSize,
		world: 1,
	}
	names := make([]string, len(shapes))
	weights := make([]config.Weight, len(shapes))
	units := make([]int64, len(shapes))
	seen := make(map[string]bool)
	var total int64
	for i, sh := range shapes {
		if sh.Name == "" {
			return nil, fmt.Errorf("mix: dataset %d has no name", i)
		}
		if seen[sh.Name] {
			return nil, fmt.Errorf("mix: dataset name %q used twice", sh.Name)
		}
		seen[sh.Name] = true
		d, err := newPlanDataset(opts, sh)
		if err != nil {
			return nil, err
		}
		if sh.Weight.Sampled() && d.empty() {
			return nil, fmt.Errorf("mix: dataset %s: %s", sh.Name, d.whyEmpty(sh.MinOffset))
		}
		p.ds = append(p.ds, d)
		names[i], weights[i], units[i] = sh.Name, sh.Weight, d.units
		if sh.Weight.Sampled() {
			if total > math.MaxInt64-d.units {
				return nil, errors.New("mix: sample units overflow int64")
			}
			total += d.units
		}
	}
	w, err := normalise(weights, units, names)
	if err != nil {
		return nil, err
	}
	if p.sched, err = newSchedule(opts.BatchSize, w, names); err != nil {
		return nil, err
	}
	for d := range p.ds {
		if p.sched.base[d] > 0 || p.sched.extra[d] > 0 {
			p.active = append(p.active, d)
		}
	}
	p.numBatches = opts.NumBatches
	if p.numBatches == 0 {
		p.numBatches = (total-1)/int64(opts.BatchSize) + 1
	}
	return p, nil
}

// Shard returns the plan as rank rank of world sees it: global batches
// rank, rank+world, rank+2·world… renumbered from 0.
func (p *Plan) Shard(rank, world int) (*Plan, error) {
	if world < 1 || rank < 0 || rank >= world {
		return nil, fmt.Errorf("mix: rank %d of world %d: need 0 ≤ rank < world", rank, world)
	}
	q := *p
	q.rank, q.world = int64(rank), int64(world)
	return &q, nil
}

// NumBatches is the number of batches this rank lists: ⌈num_batches /
// world⌉, the same on every rank. Rank r's batch n is global batch
// n·world + r, so a rank whose last batch lies past the epoch's
// num_batches − 1 continues into the next epoch for it (at most world − 1
// such batches over all ranks). Equal lengths keep data-parallel ranks in
// step: a rank that runs out one step early leaves the others waiting in
// a collective for good.
func (p *Plan) NumBatches() int64 {
	if p.numBatches <= 0 {
		return 0
	}
	return (p.numBatches + p.world - 1) / p.world
}

// BatchSize is the number of samples in a batch.
func (p *Plan) BatchSize() int { return p.batch }

// MaxBatch is the largest batch index the plan accepts; any n in
// [0, MaxBatch] plans, whatever NumBatches says.
func (p *Plan) MaxBatch() int64 { return (p.sched.maxBatch - 1 - p.rank) / p.world }

// global maps a rank's batch index to the global one.
func (p *Plan) global(n int64) int64 {
	if n < 0 || n > p.MaxBatch() {
		panic(fmt.Sprintf("mix: batch %d out of range [0, %d]", n, p.MaxBatch()))
	}
	return n*p.world + p.rank
}

// Global is the global index of this rank's batch n: n·world + rank.
func (p *Plan) Global(n int64) int64 { return n*p.world + p.rank }

// Batch appends batch n's samples to dst[:0] and returns it: BatchSize
// samples, datasets interleaved. The cost is O(datasets + batch size),
// whatever n, plus O(windows) the first time an epoch of a dataset is
// touched.
func (p *Plan) Batch(n int64, dst []Sample) []Sample {
	g := p.global(n)
	dst = dst[:0]
	for _, d := range p.active {
		dst = p.ds[d].appendSamples(dst, d, p.sched.count(d, g), p.sched.count(d, g+1))
	}
	interleave(dst, keyed.Part(keyed.Part(keyed.Init(p.seed), tagInterleave), uint64(g)))
	return dst
}

// interleave shuffles the batch's positions (Fisher–Yates, keyed).
func interleave(s []Sample, key uint64) {
	for i := len(s) - 1; i > 0; i-- {
		j := keyed.Below(keyed.Mix64(key+uint64(i)*0x9e3779b97f4a7c15), uint64(i+1))
		s[i], s[j] = s[j], s[i]
	}
}
