// Package norm computes the statistics trainers normalise actions, states
// and frames with: per dataset and per dimension, the count, mean, standard
// deviation (population, as numpy's default), min, max and the 1st, 10th,
// 50th, 90th and 99th percentiles (numpy's default linear rule; LeRobot's
// set), of three quantities:
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
// Frames (AddImage): per camera slot and channel, over a fixed sample of
// each episode's frames (ImageSteps, LeRobot's rule), as served (the
// slot's size), in [0, 1]. Pixels are k/255, so a 256-bin histogram per
// channel gives every figure, quantiles included, exactly.
//
// # Two kinds of quantiles
//
// The percentiles are exact over the dataset's rows (up to Keep, see
// below). LeRobot computes them per episode and averages them weighted by
// the episode's count; a model trained under LeRobot was normalised with
// those, so each Stat also carries them (PerEpisode) for action, state and
// frames: per episode LeRobot's histogram rule over its own rows (its
// sampled frames' pixels; lerobotQuantile), then the count-weighted mean.
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
	// Images names the camera slots whose frames AddImage is given, in
	// the order of its slot argument.
	Images []string
}

// Levels are the quantiles computed, in Quantiles' order: LeRobot's.
var Levels = [nLevels]float64{0.01, 0.10, 0.50, 0.90, 0.99}

const nLevels = 5

// Quantiles are the 1st, 10th, 50th, 90th and 99th percentiles, one value
// per dimension each.
type Quantiles struct {
	Q01 []float64 `json:"q01"`
	Q10 []float64 `json:"q10"`
	Q50 []float64 `json:"q50"`
	Q90 []float64 `json:"q90"`
	Q99 []float64 `json:"q99"`
}

// at returns the quantile of Levels[i].
func (q *Quantiles) at(i int) *[]float64 {
	return [nLevels]*[]float64{&q.Q01, &q.Q10, &q.Q50, &q.Q90, &q.Q99}[i]
}

// Stat is one quantity's statistics, one value per dimension.
type Stat struct {
	Count int64     `json:"count"`
	Mean  []float64 `json:"mean"`
	Std   []float64 `json:"std"`
	Min   []float64 `json:"min"`
	Max   []float64 `json:"max"`
	Quantiles
	// Sampled is set when the quantiles come from a sample of Keep rows
	// rather than every row.
	Sampled bool `json:"quantiles_sampled,omitempty"`
	// PerEpisode are LeRobot's quantiles: each episode's own, averaged
	// weighted by its count (steps; sampled frames for images). Nil for
	// action_summed, which LeRobot has no counterpart of.
	PerEpisode *Quantiles `json:"per_episode,omitempty"`
}

// Stats are one dataset's statistics. A quantity the config does not
// name (no action_keys, no state_key) is nil, and so is ActionSum
// unless the Spec asks for it. Images holds one Stat per camera slot
// the Spec names (3 dimensions: R, G, B, in [0, 1]), Count being the
// frames sampled.
type Stats struct {
	Episodes  int64            `json:"episodes"`
	Skipped   int64            `json:"skipped_episodes"`
	Action    *Stat            `json:"action,omitempty"`
	ActionSum *Stat            `json:"action_summed,omitempty"`
	State     *Stat            `json:"state,omitempty"`
	Images    map[string]*Stat `json:"images,omitempty"`
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
	// perEp sums each episode's quantiles times its steps, per quantity
	// (action and state) and level, dimension-major.
	perEp [nQuantities][nLevels][]float64
	// img holds per camera slot the pixel histogram of each channel, the
	// frames counted, and the per-episode quantiles times their frames.
	img []imagePartial
}

// imagePartial is one camera slot's part of a Partial.
type imagePartial struct {
	hist   [3][256]int64
	frames int64
	perEp  [nLevels][3]float64
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
		a.parts[i].perEp = a.newPerEpisode()
		a.parts[i].img = make([]imagePartial, len(spec.Images))
	}
	return a
}

// newPerEpisode returns the per-episode quantile sums of action and
// state.
func (a *Accumulator) newPerEpisode() [nQuantities][nLevels][]float64 {
	var out [nQuantities][nLevels][]float64
	for l := range nLevels {
		out[qAction][l] = make([]float64, a.actionDim)
		out[qState][l] = make([]float64, a.stateDim)
	}
	return out
}

// Uses reports whether an episode of steps steps counts: a sample can use
// it (at least offset.min+1 steps).
func (a *Accumulator) Uses(steps int) bool { return steps >= a.spec.Offset.Min+1 }

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
	if !a.Uses(steps) {
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
		addPerEpisode(&p.perEp[qAction], acts, steps, a.actionDim)
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
		addPerEpisode(&p.perEp[qState], states, steps, a.stateDim)
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

// addPerEpisode adds an episode's own quantiles of vals (steps rows of
// dim values), by LeRobot's rule over float32 data, times steps, to sums.
func addPerEpisode(sums *[nLevels][]float64, vals []float64, steps, dim int) {
	col := make([]float64, steps)
	for j := range dim {
		for t := range steps {
			col[t] = float64(float32(vals[t*dim+j]))
		}
		slices.Sort(col)
		var distinct []float64
		var counts []int64
		for i, v := range col {
			if i > 0 && v == col[i-1] {
				counts[len(counts)-1]++
				continue
			}
			distinct, counts = append(distinct, v), append(counts, 1)
		}
		for l, q := range Levels {
			sums[l][j] += lerobotQuantile(distinct, counts, true, q) * float64(steps)
		}
	}
}

// ImageSteps are the frames of an episode of steps steps that the image
// statistics sample: LeRobot's sample_indices, round(linspace(0, steps−1,
// n)) with n = steps up to 100, then max(100, ⌊steps^0.75⌋) up to 10,000.
func ImageSteps(steps int) []int {
	if steps <= 0 {
		return nil
	}
	n := max(min(steps, 100), min(int(math.Pow(float64(steps), 0.75)), 10_000))
	out := make([]int, n)
	for i := range out {
		if n > 1 {
			out[i] = int(math.RoundToEven(float64(i) * float64(steps-1) / float64(n-1)))
		}
	}
	return out
}

// AddImage adds the sampled frames of one episode of camera slot slot
// (Spec.Images' order) to segment seg: pix holds them as interleaved RGB,
// 3 bytes a pixel. Calls for one segment must come in episode order from
// one goroutine at a time, like Add's, and only for episodes Add counts.
func (a *Accumulator) AddImage(seg, slot int, pix []byte, frames int) {
	p := &a.parts[seg].img[slot]
	var h [3][256]int64
	for i := 0; i+2 < len(pix); i += 3 {
		h[0][pix[i]]++
		h[1][pix[i+1]]++
		h[2][pix[i+2]]++
	}
	for c := range h {
		var vals []float64
		var counts []int64
		for v, n := range h[c] {
			p.hist[c][v] += n
			if n > 0 {
				vals, counts = append(vals, float64(v)), append(counts, n)
			}
		}
		if len(vals) == 0 {
			continue
		}
		for l, q := range Levels {
			p.perEp[l][c] += lerobotQuantile(vals, counts, false, q) / 255 * float64(frames)
		}
	}
	p.frames += int64(frames)
}

// histQuantile is numpy.quantile of the values k/255 counted in h, by
// Quantile's rule; 0 without any.
func histQuantile(h *[256]int64, q float64) float64 {
	var n int64
	for _, c := range h {
		n += c
	}
	if n == 0 {
		return 0
	}
	pos := q * float64(n-1)
	lo := int64(math.Floor(pos))
	hi := min(lo+1, n-1)
	// at is the value at sorted position i.
	at := func(i int64) float64 {
		for v, c := range h {
			if i < c {
				return float64(v) / 255
			}
			i -= c
		}
		return 1
	}
	return Quantile([]float64{at(lo), at(hi)}, pos-float64(lo))
}

// imageStat is the Stat of one slot's histograms.
func imageStat(p *imagePartial) *Stat {
	s := &Stat{Count: p.frames, PerEpisode: &Quantiles{}}
	for c := range p.hist {
		h := &p.hist[c]
		var n int64
		var sum float64
		lo, hi := -1, -1
		for v, k := range h {
			if k == 0 {
				continue
			}
			if lo < 0 {
				lo = v
			}
			hi = v
			n += k
			sum += float64(v) / 255 * float64(k)
		}
		var mean, m2 float64
		if n > 0 {
			mean = sum / float64(n)
			for v, k := range h {
				d := float64(v)/255 - mean
				m2 += d * d * float64(k)
			}
		}
		s.Mean = append(s.Mean, mean)
		s.Std = append(s.Std, math.Sqrt(m2/float64(max(n, 1))))
		s.Min = append(s.Min, float64(max(lo, 0))/255)
		s.Max = append(s.Max, float64(max(hi, 0))/255)
		for l, q := range Levels {
			*s.at(l) = append(*s.at(l), histQuantile(h, q))
			pe := 0.0
			if p.frames > 0 {
				pe = p.perEp[l][c] / float64(p.frames)
			}
			*s.PerEpisode.at(l) = append(*s.PerEpisode.at(l), pe)
		}
	}
	return s
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
	total.perEp = a.newPerEpisode()
	total.img = make([]imagePartial, len(a.spec.Images))
	for i := range a.parts {
		p := &a.parts[i]
		total.episodes += p.episodes
		total.skipped += p.skipped
		for q := range total.m {
			total.m[q].merge(&p.m[q])
		}
		for q := range p.perEp {
			for l := range p.perEp[q] {
				for j, v := range p.perEp[q][l] {
					total.perEp[q][l][j] += v
				}
			}
		}
		for k := range p.img {
			t, o := &total.img[k], &p.img[k]
			for c := range o.hist {
				for v, n := range o.hist[c] {
					t.hist[c][v] += n
				}
			}
			t.frames += o.frames
			for l := range o.perEp {
				for c, v := range o.perEp[l] {
					t.perEp[l][c] += v
				}
			}
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
		for l, level := range Levels {
			*s.at(l) = a.sample[q].quantiles(m.dim, level)
		}
		s.Sampled = m.n > int64(len(a.sample[q]))
		if q != qActionSum && m.n > 0 {
			s.PerEpisode = &Quantiles{}
			for l := range Levels {
				pe := make([]float64, m.dim)
				for j, v := range total.perEp[q][l] {
					pe[j] = v / float64(m.n)
				}
				*s.PerEpisode.at(l) = pe
			}
		}
		return s
	}
	out.Action, out.ActionSum, out.State = stat(qAction), stat(qActionSum), stat(qState)
	if len(a.spec.Images) > 0 {
		out.Images = map[string]*Stat{}
		for k, name := range a.spec.Images {
			out.Images[name] = imageStat(&total.img[k])
		}
	}
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

// lerobotBins is the number of bins of LeRobot's quantile histograms
// (RunningQuantileStats).
const lerobotBins = 5000

// lerobotQuantile is LeRobot's quantile q of one episode's column (0.4.4,
// RunningQuantileStats): a histogram of lerobotBins equal bins from
// min−1e-10 to max+1e-10, the first bin whose cumulative count reaches
// q·n, and the linear interpolation within it. vals are the column's
// distinct values, ascending, with their counts; the edges are computed in
// float32 for float32 data (f32), as numpy does, else in float64. A column
// of fewer than 2 rows has its mean as every quantile.
func lerobotQuantile(vals []float64, counts []int64, f32 bool, q float64) float64 {
	var n int64
	var sum float64
	for i, c := range counts {
		n += c
		sum += vals[i] * float64(c)
	}
	if n < 2 {
		return sum / float64(n)
	}
	edge := lerobotEdges(vals[0], vals[len(vals)-1], f32)
	target := q * float64(n)
	// cum is the cumulative count of bins [0, i]: values below edge(i+1),
	// the last bin's right edge included.
	var cum int64
	v := 0
	for i := range lerobotBins {
		before := cum
		for v < len(vals) && (vals[v] < edge(i+1) || i == lerobotBins-1 && vals[v] <= edge(i+1)) {
			cum += counts[v]
			v++
		}
		if float64(cum) < target {
			continue
		}
		if i == 0 {
			return edge(0)
		}
		if cum == before {
			return edge(i)
		}
		lo, hi := edge(i), edge(i+1)
		width := hi - lo
		if f32 {
			width = float64(float32(hi) - float32(lo))
		}
		return lo + (target-float64(before))/float64(cum-before)*width
	}
	return edge(lerobotBins)
}

// lerobotEdges returns numpy.linspace(lo−1e-10, hi+1e-10, lerobotBins+1)'s
// edge i, in float32 arithmetic for f32.
func lerobotEdges(lo, hi float64, f32 bool) func(i int) float64 {
	if f32 {
		start, stop := float32(lo)-float32(1e-10), float32(hi)+float32(1e-10)
		step := float32(stop-start) / lerobotBins
		return func(i int) float64 {
			if i == lerobotBins {
				return float64(stop)
			}
			return float64(float32(float32(i)*step) + start)
		}
	}
	start, stop := lo-1e-10, hi+1e-10
	step := (stop - start) / lerobotBins
	return func(i int) float64 {
		if i == lerobotBins {
			return stop
		}
		return float64(i)*step + start
	}
}
