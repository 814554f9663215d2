package plan

import (
	"fmt"
	"math/big"
)

// ShardKey names one shard of one dataset of a plan.
type ShardKey struct {
	Dataset int
	Split   string
	Shard   int
}

// Shards appends to dst[:0] the shards that batch n reads, each once,
// dataset by dataset, in the order the batch's samples reach them.
func (p *Plan) Shards(n int64, dst []ShardKey) []ShardKey {
	g := p.global(n)
	dst = dst[:0]
	var buf []Sample
	for _, d := range p.active {
		buf = p.ds[d].appendSamples(buf[:0], d, p.sched.count(d, g), p.sched.count(d, g+1))
		first := len(dst)
		for _, s := range buf {
			k := ShardKey{Dataset: d, Split: s.Episode.Split, Shard: s.Episode.Shard}
			dup := false
			for _, x := range dst[first:] {
				if x == k {
					dup = true
					break
				}
			}
			if !dup {
				dst = append(dst, k)
			}
		}
	}
	return dst
}

// ShardsAhead appends to dst[:0] the shards that batches n … n+count−1
// read, each once, in the order the plan first needs them: what a
// prefetcher fetches ahead.
func (p *Plan) ShardsAhead(n int64, count int, dst []ShardKey) []ShardKey {
	dst = dst[:0]
	seen := make(map[ShardKey]bool)
	var buf []ShardKey
	for i := range int64(count) {
		if n+i > p.MaxBatch() {
			break
		}
		buf = p.Shards(n+i, buf)
		for _, k := range buf {
			if !seen[k] {
				seen[k] = true
				dst = append(dst, k)
			}
		}
	}
	return dst
}

// DatasetShards lists every shard of dataset d's selection, in split
// order: what `oxefs warm` fetches.
func (p *Plan) DatasetShards(d int) []ShardKey {
	ds := p.ds[d]
	var out []ShardKey
	for i, sg := range ds.segs {
		if i > 0 && ds.segs[i-1].split == sg.split && ds.segs[i-1].shard == sg.shard {
			continue
		}
		out = append(out, ShardKey{Dataset: d, Split: ds.splits[sg.split], Shard: sg.shard})
	}
	return out
}

// DatasetSummary describes one dataset of a plan, for info.json and inspect.
type DatasetSummary struct {
	Name   string `json:"name"`
	Source string `json:"source,omitempty"`
	Split  string `json:"split"`
	// Weight is the normalised weight as planned (quantised when the plan
	// says so); WeightExact the same as an exact fraction; Given the weight
	// as configured.
	Weight      float64 `json:"weight"`
	WeightExact string  `json:"weight_exact"`
	Given       string  `json:"weight_given"`
	// PerBatch is the mean samples per batch, BatchSize × Weight.
	PerBatch float64 `json:"samples_per_batch"`
	Episodes int64   `json:"episodes"`
	Units    int64   `json:"sample_units"`
	// TooShort and Unreadable count episodes too short for the offset and
	// unreadable ones when the episode lengths are known (an index); nil
	// (null) when they are not: such episodes are then found, substituted
	// and counted as batches are built (stats.json).
	TooShort   *int64 `json:"episodes_too_short"`
	Unreadable *int64 `json:"episodes_unreadable"`
	Shards     int    `json:"shards"`
	Windows    int    `json:"windows"`
	// EpochBatches is the number of batches one dataset-epoch lasts.
	EpochBatches float64 `json:"batches_per_epoch"`
}

// Info summarises a plan.
type Info struct {
	BatchSize  int   `json:"batch_size"`
	NumBatches int64 `json:"num_batches"` // this rank's
	Rank       int   `json:"rank"`
	World      int   `json:"world"`
	// Period is the number of batches after which the proportions repeat.
	Period int64 `json:"period"`
	// Quantised reports that the weights were rounded to multiples of
	// 1/(4096·BatchSize) because the exact ones needed a longer period.
	Quantised bool             `json:"quantised"`
	Datasets  []DatasetSummary `json:"datasets"`
}

// Info returns the plan's summary.
func (p *Plan) Info() Info {
	in := Info{
		BatchSize:  p.batch,
		NumBatches: p.NumBatches(),
		Rank:       int(p.rank),
		World:      int(p.world),
		Period:     p.sched.period,
		Quantised:  p.sched.quantised,
	}
	for i, d := range p.ds {
		w := p.sched.weights[i]
		wf, _ := w.Float64()
		per := wf * float64(p.batch)
		s := DatasetSummary{
			Name:        d.name,
			Source:      d.source,
			Split:       d.split,
			Weight:      wf,
			WeightExact: w.RatString(),
			Given:       d.given.String(),
			PerBatch:    per,
			Episodes:    d.episodes,
			Units:       d.units,
			Shards:      d.shards,
			Windows:     len(d.windows),
		}
		if per > 0 {
			s.EpochBatches = float64(d.units) / per
		}
		if d.lengthsKnown {
			short, unreadable := d.tooShort, d.unreadable
			s.TooShort, s.Unreadable = &short, &unreadable
		}
		in.Datasets = append(in.Datasets, s)
	}
	return in
}

// Weights returns the normalised weights as planned, exactly.
func (p *Plan) Weights() []*big.Rat {
	out := make([]*big.Rat, len(p.sched.weights))
	for i, w := range p.sched.weights {
		out[i] = new(big.Rat).Set(w)
	}
	return out
}

// Count returns the number of samples of dataset d in global batches
// [0, n): the proportions' closed form, O(1).
func (p *Plan) Count(d int, n int64) int64 {
	if n < 0 || n > p.sched.maxBatch {
		panic(fmt.Sprintf("mix: batch %d out of range", n))
	}
	return p.sched.count(d, n)
}
