package plan

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/big"
	"slices"
)

// maxPeriod bounds the period of the proportion schedule. When the exact
// shares need a longer period, the fractional shares are rounded to
// multiples of 1/maxPeriod sample per batch.
const maxPeriod = 4096

// schedule decides how many samples of each dataset every batch holds.
//
// With normalised weights w_d and batch size B, dataset d gets
// base_d = ⌊B·w_d⌋ samples in every batch plus one extra sample in some
// batches: its fractional share f_d = B·w_d − base_d is a rational p_d/Q
// with a common period Q, and exactly m_d = Q·f_d of any Q consecutive
// batches, starting at a multiple of Q, give d an extra sample. The
// fractions sum to an integer r (the batch is full), so r datasets get an
// extra sample in each batch. Choosing which is the Pfair scheduling
// problem (r processors, tasks of utilisation f_d, Σf_d = r); the PD²
// algorithm solves it with every lag N·f_d − extras_d(N) strictly inside
// (−1, 1). One period of its schedule is computed at construction, checked
// slot by slot, and kept as prefix counts, so the number of samples of d in
// batches [0, N) is N·base_d + ⌊N/Q⌋·m_d + prefix[N mod Q][d].
type schedule struct {
	batch   int
	period  int64 // Q
	base    []int64
	extra   []int64    // m_d, extras per period
	prefix  []int32    // (Q+1)×D, row-major: extras of d in slots [0, s)
	weights []*big.Rat // normalised weights as scheduled
	// quantised reports that the exact shares needed a period above
	// maxPeriod and were rounded to multiples of 1/maxPeriod.
	quantised bool
	// maxBatch bounds batch indices so that no count overflows int64.
	maxBatch int64
}

// newSchedule builds the schedule for normalised weights (Σ = 1; zeros
// allowed: never sampled).
func newSchedule(batch int, weights []*big.Rat, names []string) (*schedule, error) {
	D := len(weights)
	s := &schedule{
		batch:    batch,
		base:     make([]int64, D),
		extra:    make([]int64, D),
		weights:  make([]*big.Rat, D),
		maxBatch: math.MaxInt64 / int64(batch+1),
	}
	B := new(big.Rat).SetInt64(int64(batch))
	frac := make([]*big.Rat, D)
	var sumBase int64
	for d, w := range weights {
		t := new(big.Rat).Mul(B, w)
		fl := new(big.Int).Quo(t.Num(), t.Denom()) // t ≥ 0: Quo truncates = floor
		s.base[d] = fl.Int64()
		sumBase += s.base[d]
		frac[d] = new(big.Rat).Sub(t, new(big.Rat).SetInt(fl))
	}
	r := int64(batch) - sumBase // Σ f_d, an integer because Σ w_d = 1

	// The exact period: the lcm of the fractions' denominators.
	lcm := big.NewInt(1)
	exact := true
	for _, f := range frac {
		den := f.Denom()
		g := new(big.Int).GCD(nil, nil, lcm, den)
		lcm.Mul(lcm, new(big.Int).Quo(den, g))
		if lcm.Cmp(big.NewInt(maxPeriod)) > 0 {
			exact = false
			break
		}
	}
	m := make([]int64, D) // extras per period of length Q
	var Q int64
	if exact {
		Q = lcm.Int64()
		for d, f := range frac {
			m[d] = new(big.Int).Quo(new(big.Int).Mul(f.Num(), big.NewInt(Q)), f.Denom()).Int64()
		}
	} else {
		var err error
		if m, err = quantise(frac, r, names, s.base); err != nil {
			return nil, err
		}
		s.quantised = true
		// The period of the rounded shares: maxPeriod divided by every
		// power of two that divides all m_d.
		Q = maxPeriod
		for Q > 1 && allDivisible(m, 2) {
			for d := range m {
				m[d] /= 2
			}
			Q /= 2
		}
	}
	s.period = Q
	copy(s.extra, m)
	for d := range weights {
		// w'_d = (base_d + m_d/Q) / B: the weight as scheduled.
		w := new(big.Rat).SetFrac64(s.base[d]*Q+m[d], Q)
		s.weights[d] = w.Quo(w, B)
	}
	prefix, err := pd2(Q, r, m, names)
	if err != nil {
		return nil, err
	}
	s.prefix = prefix
	return s, nil
}

func allDivisible(m []int64, k int64) bool {
	for _, x := range m {
		if x%k != 0 {
			return false
		}
	}
	return true
}

// quantise rounds fractional shares to multiples of 1/maxPeriod by largest
// remainder, keeping their sum r. A dataset whose whole share is below the
// resolution is lifted to one step, taken from the dataset rounded up the
// most, so that no dataset with a positive weight is left out.
func quantise(frac []*big.Rat, r int64, names []string, base []int64) ([]int64, error) {
	D := len(frac)
	m := make([]int64, D)
	rem := make([]*big.Rat, D) // m_d − maxPeriod·f_d after rounding
	P := new(big.Rat).SetInt64(maxPeriod)
	var sum int64
	for d, f := range frac {
		a := new(big.Rat).Mul(f, P)
		fl := new(big.Int).Quo(a.Num(), a.Denom())
		m[d] = fl.Int64()
		sum += m[d]
		rem[d] = new(big.Rat).Sub(a, new(big.Rat).SetInt(fl)) // in [0, 1)
	}
	order := make([]int, D)
	for d := range order {
		order[d] = d
	}
	slices.SortStableFunc(order, func(a, b int) int { return rem[b].Cmp(rem[a]) })
	deficit := r*maxPeriod - sum
	if deficit < 0 || deficit > int64(D) {
		return nil, fmt.Errorf("mix: internal error: rounding deficit %d for %d datasets", deficit, D)
	}
	for _, d := range order[:deficit] {
		m[d]++
	}
	for d := range m {
		if m[d] > 0 || base[d] > 0 || frac[d].Sign() == 0 {
			continue
		}
		// The donor: the dataset whose rounded share exceeds its exact one
		// the most, among those that keep a sample per batch or an extra.
		donor := -1
		var best *big.Rat
		for e := range m {
			if m[e] < 1 || (m[e] == 1 && base[e] == 0) {
				continue
			}
			over := new(big.Rat).SetInt64(m[e])
			over.Sub(over, new(big.Rat).Mul(frac[e], P))
			if best == nil || over.Cmp(best) > 0 {
				donor, best = e, over
			}
		}
		if donor < 0 {
			return nil, fmt.Errorf("mix: dataset %s: its weight is below the plan's resolution of 1/%d sample per batch and no other dataset can give way; raise its weight or the batch size", names[d], maxPeriod)
		}
		m[donor]--
		m[d] = 1
	}
	return m, nil
}

// task is one dataset in the PD² simulation: utilisation p/q (reduced),
// done subtasks so far.
type task struct {
	d          int
	p, q, done int64
}

// Subtask i (1-based) of a task of weight p/q has the window
// [⌊(i−1)q/p⌋, ⌈iq/p⌉).
func (t *task) release(i int64) int64  { return (i - 1) * t.q / t.p }
func (t *task) deadline(i int64) int64 { return (i*t.q + t.p - 1) / t.p }

// bbit is PD²'s successor bit: 1 when subtask i's window overlaps i+1's.
func (t *task) bbit(i int64) int64 {
	if i*t.q%t.p != 0 {
		return 1
	}
	return 0
}

// group is PD²'s group deadline of subtask i, 0 for light tasks (weight <
// 1/2): for a heavy task, ⌈⌈d·(1−w)⌉ / (1−w)⌉ with d the subtask's
// deadline — the time by which a cascade of forced allocations starting at
// subtask i ends.
func (t *task) group(i int64) int64 {
	if 2*t.p < t.q {
		return 0
	}
	c := t.q - t.p // 1−w = c/q
	d := t.deadline(i)
	k := (d*c + t.q - 1) / t.q
	return (k*t.q + c - 1) / c
}

// pd2 schedules one period: Q slots, r extras in each, dataset d getting
// m_d extras in all. It returns the prefix counts, after checking every lag.
func pd2(Q, r int64, m []int64, names []string) ([]int32, error) {
	D := len(m)
	var tasks []*task
	for d, md := range m {
		if md == 0 {
			continue
		}
		if md >= Q {
			return nil, fmt.Errorf("mix: internal error: dataset %s gets %d extras in %d batches", names[d], md, Q)
		}
		g := gcd(md, Q)
		tasks = append(tasks, &task{d: d, p: md / g, q: Q / g})
	}
	prefix := make([]int32, (Q+1)*int64(D))
	eligible := make([]*task, 0, len(tasks))
	for t := int64(0); t < Q; t++ {
		eligible = eligible[:0]
		for _, tk := range tasks {
			i := tk.done + 1
			if tk.done < tk.p*(Q/tk.q) && tk.release(i) <= t {
				eligible = append(eligible, tk)
			}
		}
		if int64(len(eligible)) < r {
			return nil, fmt.Errorf("mix: internal error: proportion schedule has %d candidates for %d extra samples in batch %d of its period", len(eligible), r, t)
		}
		slices.SortFunc(eligible, func(a, b *task) int {
			ia, ib := a.done+1, b.done+1
			if c := cmp.Compare(a.deadline(ia), b.deadline(ib)); c != 0 {
				return c
			}
			if c := cmp.Compare(b.bbit(ib), a.bbit(ia)); c != 0 {
				return c
			}
			if c := cmp.Compare(b.group(ib), a.group(ia)); c != 0 {
				return c
			}
			return cmp.Compare(a.d, b.d)
		})
		row, next := prefix[t*int64(D):(t+1)*int64(D)], prefix[(t+1)*int64(D):(t+2)*int64(D)]
		copy(next, row)
		for _, tk := range eligible[:r] {
			tk.done++
			next[tk.d]++
		}
	}
	if err := checkLags(Q, r, m, prefix, names); err != nil {
		return nil, err
	}
	return prefix, nil
}

// errLag reports a schedule that is not Pfair: a bug, never a config error.
var errLag = errors.New("mix: internal error: proportion schedule out of bounds")

// checkLags verifies the schedule: r extras in each slot, and for every
// dataset and every slot boundary s, |s·m_d/Q − extras_d(s)| < 1, with
// exactly m_d extras at the end of the period (so the schedule repeats).
func checkLags(Q, r int64, m []int64, prefix []int32, names []string) error {
	D := int64(len(m))
	for s := int64(0); s <= Q; s++ {
		var total int64
		for d := range D {
			x := int64(prefix[s*D+d])
			total += x
			// |s·m/Q − x| < 1  ⇔  |s·m − x·Q| < Q
			if lag := s*m[d] - x*Q; lag <= -Q || lag >= Q {
				return fmt.Errorf("%w: dataset %s has %d extra samples after %d of %d batches, target %d/%d", errLag, names[d], x, s, Q, s*m[d], Q)
			}
			if s > 0 {
				if step := x - int64(prefix[(s-1)*D+d]); step < 0 || step > 1 {
					return fmt.Errorf("%w: dataset %s gets %d extra samples in one batch", errLag, names[d], step)
				}
			}
		}
		if total != s*r {
			return fmt.Errorf("%w: %d extra samples in the first %d batches, want %d", errLag, total, s, s*r)
		}
	}
	for d := range D {
		if int64(prefix[Q*D+d]) != m[d] {
			return fmt.Errorf("%w: dataset %s gets %d extras per period, want %d", errLag, names[d], prefix[Q*D+d], m[d])
		}
	}
	return nil
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// count returns the number of samples of dataset d in batches [0, n).
func (s *schedule) count(d int, n int64) int64 {
	q, r := n/s.period, n%s.period
	D := int64(len(s.base))
	return n*s.base[d] + q*s.extra[d] + int64(s.prefix[r*D+int64(d)])
}
