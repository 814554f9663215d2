// Package norm computes the statistics trainers normalise actions and
// states with: per dataset and per dimension, the count, mean, standard
// deviation (population, as numpy's default), min, max and the 1st and 99th
// percentiles (numpy's default linear rule), of three quantities:
//
//   - action: every step's action (the configured action keys, concatenated);
//   - action_summed: the action a sample holds, summed over [t, t+offset),
//     for every (t, offset) the sampler can draw: each offset of the
//     configured range, each t with t+offset within the episode;
//   - state: every step's state.
//
// Only episodes the sampler can use (at least offset.min+1 steps) count;
// corrupt ones are skipped and counted.
//
// # Determinism
//
// The statistics are a function of the data alone, whatever the number of
// workers and the order they finish in, so that batches normalised with
// them are too. Episodes are added in order within a segment (a run of one
// shard), segment partials are combined in segment order (Chan's pairwise
// formula), and the quantiles come from a bottom-k sample: the Keep rows
// with the smallest hash of (episode, t, offset), a set that does not
// depend on order. Up to Keep rows the quantiles are exact; past it they
// come from that uniform sample (rank error about 0.03% at 131,072 rows).
package norm

import (
	"container/heap"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"sync"

	"github.com/oxefs/oxefs/config"
	"github.com/oxefs/oxefs/episode"
)

// Keep is the number of rows kept per quantity for the quantiles.
const Keep = 1 << 17

// keep is Keep, smaller in tests.
var keep = Keep

// Spec says what to compute over one dataset: its config's keys and
// offset range, and whether action_summed is wanted.
type Spec struct {
	ActionKeys []string
	StateKey   string
	Offset     config.Offset
	// Summed asks for action_summed, what a pair sample holds. A step
	// sample holds each step's action, so its mix leaves it out (its
	// offset of 0 would make it a block of zeros).
	Summed bool
}

// Stat is one quantity's statistics, one value per dimension.
type Stat struct {
	Count int64     `json:"count"`
	Mean  []float64 `json:"mean"`
	Std   []float64 `json:"std"`
	Min   []float64 `json:"min"`
	Max   []float64 `json:"max"`
	Q01   []float64 `json:"q01"`
	Q99   []float64 `json:"q99"`
	// Sampled is set when the quantiles come from a sample of Keep rows
	// rather than every row.
	Sampled bool `json:"quantiles_sampled,omitempty"`
}

// Stats are one dataset's statistics. A quantity the config does not
// name (no action_keys, no state_key) is nil, and so is ActionSum
// unless the Spec asks for it.
type Stats struct {
	Episodes  int64 `json:"episodes"`
	Skipped   int64 `json:"skipped_episodes"`
	Action    *Stat `json:"action,omitempty"`
	ActionSum *Stat `json:"action_summed,omitempty"`
	State     *Stat `json:"state,omitempty"`
}

// quantity indexes the three quantities.
const (
	qAction = iota
	qActionSum
	qState
	nQuantities
)

// moments are running count, mean, M2 (Welford), min and max per
// dimension.
type moments struct {
	n        int64
	mean, m2 []float64
	lo, hi   []float64
	dim      int
	inUse    bool
}

func newMoments(dim int) moments {
	m := moments{dim: dim, inUse: dim > 0, mean: make([]float64, dim), m2: make([]float64, dim), lo: make([]float64, dim), hi: make([]float64, dim)}
	return m
}

func (m *moments) add(row []float64) {
	m.n++
	for j, x := range row {
		d := x - m.mean[j]
		m.mean[j] += d / float64(m.n)
		m.m2[j] += d * (x - m.mean[j])
		if m.n == 1 || x < m.lo[j] {
			m.lo[j] = x
		}
		if m.n == 1 || x > m.hi[j] {
			m.hi[j] = x
		}
	}
}

// merge adds o's rows (Chan et al.'s pairwise update).
func (m *moments) merge(o *moments) {
	if o.n == 0 {
		return
	}
	if m.n == 0 {
		m.n = o.n
		copy(m.mean, o.mean)
		copy(m.m2, o.m2)
		copy(m.lo, o.lo)
		copy(m.hi, o.hi)
		return
	}
	n := m.n + o.n
	for j := range m.mean {
		d := o.mean[j] - m.mean[j]
		m.mean[j] += d * float64(o.n) / float64(n)
		m.m2[j] += o.m2[j] + d*d*float64(m.n)*float64(o.n)/float64(n)
		m.lo[j] = min(m.lo[j], o.lo[j])
		m.hi[j] = max(m.hi[j], o.hi[j])
	}
	m.n = n
}

// Partial is the statistics of one segment's episodes, added in order.
type Partial struct {
	m                 [nQuantities]moments
	episodes, skipped int64
}

// Accumulator computes one dataset's Stats: one Partial per segment,
// filled by one goroutine each, and a shared sample.
type Accumulator struct {
	spec      Spec
	actionDim int
	stateDim  int
	parts     []Partial

	mu     sync.Mutex
	sample [nQuantities]rowHeap // guarded by mu
}

// New returns an accumulator over segments segments of a dataset whose
// action keys hold actionDim values per step and state key stateDim.
func New(spec Spec, actionDim, stateDim, segments int) *Accumulator {
	a := &Accumulator{spec: spec, actionDim: actionDim, stateDim: stateDim, parts: make([]Partial, segments)}
	for i := range a.parts {
		a.parts[i].m = a.newQuantities()
	}
	return a
}

// newQuantities returns the moments of each quantity; one not computed
// has no dimensions (and comes out nil).
func (a *Accumulator) newQuantities() [nQuantities]moments {
	summed := 0
	if a.spec.Summed {
		summed = a.actionDim
	}
	return [nQuantities]moments{newMoments(a.actionDim), newMoments(summed), newMoments(a.stateDim)}
}

// Skip counts an episode of segment seg that could not be read.
func (a *Accumulator) Skip(seg int) { a.parts[seg].skipped++ }

// Add adds one episode to segment seg's partial. Calls for one segment
// must come in episode order from one goroutine at a time.
func (a *Accumulator) Add(seg int, ep episode.Episode) error {
	steps := ep.Steps()
	if steps < a.spec.Offset.Min+1 {
		return nil // no sample can use it
	}
	p := &a.parts[seg]
	p.episodes++
	var rows [nQuantities][]sampleRow
	h := fnv.New64a()
	h.Write([]byte(ep.ID()))
	id := h.Sum64()

	if a.actionDim > 0 {
		acts, err := concat(ep, a.spec.ActionKeys, a.actionDim)
		if err != nil {
			return err
		}
		for t := range steps {
			row := acts[t*a.actionDim : (t+1)*a.actionDim]
			p.m[qAction].add(row)
			rows[qAction] = append(rows[qAction], sampleRow{hash: mix(id, qAction, t, 0), vals: row})
		}
		// prefix[t] is the sum of steps [0, t).
		prefix := make([]float64, (steps+1)*a.actionDim)
		for t := range steps {
			for j := range a.actionDim {
				prefix[(t+1)*a.actionDim+j] = prefix[t*a.actionDim+j] + acts[t*a.actionDim+j]
			}
		}
		for o := a.spec.Offset.Min; a.spec.Summed && o <= a.spec.Offset.Max; o++ {
			for t := 0; t+o <= steps-1; t++ {
				row := make([]float64, a.actionDim)
				for j := range row {
					row[j] = prefix[(t+o)*a.actionDim+j] - prefix[t*a.actionDim+j]
				}
				p.m[qActionSum].add(row)
				rows[qActionSum] = append(rows[qActionSum], sampleRow{hash: mix(id, qActionSum, t, o), vals: row})
			}
		}
	}
	if a.stateDim > 0 {
		states, err := concat(ep, []string{a.spec.StateKey}, a.stateDim)
		if err != nil {
			return err
		}
		for t := range steps {
			row := states[t*a.stateDim : (t+1)*a.stateDim]
			p.m[qState].add(row)
			rows[qState] = append(rows[qState], sampleRow{hash: mix(id, qState, t, 0), vals: row})
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for q := range rows {
		for _, r := range rows[q] {
			a.sample[q].offer(r)
		}
	}
	return nil
}

// concat reads keys' values for every step, step-major, dim values per
// step in all.
func concat(ep episode.Episode, keys []string, dim int) ([]float64, error) {
	steps := ep.Steps()
	out := make([]float64, steps*dim)
	at := 0
	var buf []float64
	for _, k := range keys {
		v, err := ep.Feature(k)
		if err != nil {
			return nil, err
		}
		if buf, err = v.Float64s(buf[:0]); err != nil {
			return nil, err
		}
		per := v.Per()
		if len(buf) != steps*per || at+per > dim {
			return nil, ep.Corrupt(fmt.Errorf("feature %q has %d values, want %d steps of %d", k, len(buf), steps, per))
		}
		for t := range steps {
			copy(out[t*dim+at:t*dim+at+per], buf[t*per:(t+1)*per])
		}
		at += per
	}
	if at != dim {
		return nil, fmt.Errorf("keys %v hold %d values per step, want %d", keys, at, dim)
	}
	return out, nil
}

// mix hashes a row's identity (splitmix64 finaliser over the fields).
func mix(id uint64, q, t, o int) uint64 {
	x := id ^ uint64(q)<<56 ^ uint64(t)<<24 ^ uint64(o)
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// Stats combines the segments, in order.
func (a *Accumulator) Stats() Stats {
	var total Partial
	total.m = a.newQuantities()
	for i := range a.parts {
		p := &a.parts[i]
		total.episodes += p.episodes
		total.skipped += p.skipped
		for q := range total.m {
			total.m[q].merge(&p.m[q])
		}
	}
	out := Stats{Episodes: total.episodes, Skipped: total.skipped}
	a.mu.Lock()
	defer a.mu.Unlock()
	stat := func(q int) *Stat {
		m := &total.m[q]
		if !m.inUse {
			return nil
		}
		s := &Stat{Count: m.n, Mean: m.mean, Min: m.lo, Max: m.hi, Std: make([]float64, m.dim)}
		for j := range s.Std {
			if m.n > 0 {
				s.Std[j] = math.Sqrt(m.m2[j] / float64(m.n))
			}
		}
		s.Q01, s.Q99 = a.sample[q].quantiles(m.dim, 0.01), a.sample[q].quantiles(m.dim, 0.99)
		s.Sampled = m.n > int64(len(a.sample[q]))
		return s
	}
	out.Action, out.ActionSum, out.State = stat(qAction), stat(qActionSum), stat(qState)
	return out
}

// sampleRow is one row offered to the sample.
type sampleRow struct {
	hash uint64
	vals []float64
}

// less orders rows by hash, then values: two rows with the same hash and
// values are interchangeable, so the kept set is the same in any order.
func less(a, b sampleRow) bool {
	if a.hash != b.hash {
		return a.hash < b.hash
	}
	return slices.Compare(a.vals, b.vals) < 0
}

// rowHeap keeps the Keep smallest rows, the largest at the top.
type rowHeap []sampleRow

func (h rowHeap) Len() int           { return len(h) }
func (h rowHeap) Less(i, j int) bool { return less(h[j], h[i]) }
func (h rowHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *rowHeap) Push(x any)        { *h = append(*h, x.(sampleRow)) }
func (h *rowHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func (h *rowHeap) offer(r sampleRow) {
	if len(*h) < keep {
		r.vals = slices.Clone(r.vals)
		heap.Push(h, r)
		return
	}
	if less(r, (*h)[0]) {
		r.vals = slices.Clone(r.vals)
		(*h)[0] = r
		heap.Fix(h, 0)
	}
}

// quantiles returns the q-quantile of each dimension of the rows, by
// numpy's default (linear) rule; nil without rows.
func (h rowHeap) quantiles(dim int, q float64) []float64 {
	if len(h) == 0 {
		return nil
	}
	out := make([]float64, dim)
	col := make([]float64, len(h))
	for j := range dim {
		for i, r := range h {
			col[i] = r.vals[j]
		}
		slices.Sort(col)
		out[j] = Quantile(col, q)
	}
	return out
}

// Quantile is numpy.quantile(sorted, q) with the default linear method:
// the value at position q·(n−1), interpolated as numpy does it.
func Quantile(sorted []float64, q float64) float64 {
	pos := q * float64(len(sorted)-1)
	lo := int(math.Floor(pos))
	hi := min(lo+1, len(sorted)-1)
	t := pos - float64(lo)
	a, b := sorted[lo], sorted[hi]
	d := b - a
	if t >= 0.5 {
		return b - d*(1-t)
	}
	return a + d*t
}
