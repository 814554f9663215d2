package norm

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/oxefs/oxefs/config"
	"github.com/oxefs/oxefs/episode"
)

// fakeEpisode holds float features, step-major.
type fakeEpisode struct {
	id    string
	steps int
	feats map[string][]float64
	per   map[string]int
}

func (e *fakeEpisode) ID() string                    { return e.id }
func (e *fakeEpisode) Dataset() string               { return "d" }
func (e *fakeEpisode) Key() episode.Key              { return episode.Key{} }
func (e *fakeEpisode) Steps() int                    { return e.steps }
func (e *fakeEpisode) Size() int                     { return 0 }
func (e *fakeEpisode) Corrupt(err error) error       { return &episode.CorruptError{Dataset: "d", Err: err} }
func (e *fakeEpisode) Rename(string) episode.Episode { return e }
func (e *fakeEpisode) Feature(k string) (episode.View, error) {
	if _, ok := e.feats[k]; !ok {
		return nil, &episode.UnknownFeatureError{Dataset: "d", Key: k}
	}
	return fakeView{e.feats[k], e.per[k]}, nil
}

type fakeView struct {
	vals []float64
	per  int
}

func (v fakeView) Spec() episode.Feature                     { return episode.Feature{} }
func (v fakeView) Per() int                                  { return v.per }
func (v fakeView) Bytes(int) []byte                          { return nil }
func (v fakeView) Float64s(dst []float64) ([]float64, error) { return append(dst, v.vals...), nil }
func (v fakeView) Int64s(dst []int64) ([]int64, error)       { return dst, nil }

// episodes makes n random episodes of 2-dim actions and 1-dim states.
func episodes(n int, seed uint64) []*fakeEpisode {
	r := rand.New(rand.NewPCG(seed, 1))
	var out []*fakeEpisode
	for i := range n {
		steps := 1 + r.IntN(40)
		e := &fakeEpisode{id: fmt.Sprintf("d/train/0/%d", i), steps: steps, feats: map[string][]float64{}, per: map[string]int{"a": 2, "s": 1}}
		for range steps {
			e.feats["a"] = append(e.feats["a"], r.NormFloat64(), r.ExpFloat64())
			e.feats["s"] = append(e.feats["s"], float64(r.IntN(100)))
		}
		out = append(out, e)
	}
	return out
}

var spec = Spec{ActionKeys: []string{"a"}, StateKey: "s", Offset: config.Offset{Min: 2, Max: 4}, Summed: true}

// run adds eps, cut into segs segments, with the segments' goroutines
// started in a shuffled order.
func run(t *testing.T, eps []*fakeEpisode, segs int, seed uint64) Stats {
	t.Helper()
	acc := New(spec, 2, 1, segs)
	per := (len(eps) + segs - 1) / segs
	order := rand.New(rand.NewPCG(seed, 2)).Perm(segs)
	var wg sync.WaitGroup
	for _, s := range order {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, e := range eps[min(s*per, len(eps)):min((s+1)*per, len(eps))] {
				if err := acc.Add(s, e); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	return acc.Stats()
}

// TestStatsExact checks every statistic against a direct computation
// (numpy's rules: population std, linear quantiles) while every row fits
// the sample.
func TestStatsExact(t *testing.T) {
	eps := episodes(50, 1)
	got := run(t, eps, 7, 1)
	var acts, sums [][]float64
	used := 0
	for _, e := range eps {
		if e.steps < spec.Offset.Min+1 {
			continue
		}
		used++
		a := e.feats["a"]
		for t := range e.steps {
			acts = append(acts, a[2*t:2*t+2])
		}
		for o := spec.Offset.Min; o <= spec.Offset.Max; o++ {
			for t := 0; t+o <= e.steps-1; t++ {
				s := []float64{0, 0}
				for k := t; k < t+o; k++ {
					s[0] += a[2*k]
					s[1] += a[2*k+1]
				}
				sums = append(sums, s)
			}
		}
	}
	if got.Episodes != int64(used) {
		t.Errorf("episodes %d, want %d (those of at least offset.min+1 steps)", got.Episodes, used)
	}
	for _, c := range []struct {
		name string
		s    *Stat
		rows [][]float64
	}{{"action", got.Action, acts}, {"action_summed", got.ActionSum, sums}} {
		if c.s.Count != int64(len(c.rows)) || c.s.Sampled {
			t.Fatalf("%s: count %d sampled %v, want %d rows, exact", c.name, c.s.Count, c.s.Sampled, len(c.rows))
		}
		for j := range 2 {
			col := make([]float64, len(c.rows))
			var sum float64
			for i, r := range c.rows {
				col[i] = r[j]
				sum += r[j]
			}
			mean := sum / float64(len(col))
			var ss float64
			for _, x := range col {
				ss += (x - mean) * (x - mean)
			}
			slices.Sort(col)
			want := []float64{mean, math.Sqrt(ss / float64(len(col))), col[0], col[len(col)-1],
				Quantile(col, 0.01), Quantile(col, 0.10), Quantile(col, 0.50), Quantile(col, 0.90), Quantile(col, 0.99)}
			have := []float64{c.s.Mean[j], c.s.Std[j], c.s.Min[j], c.s.Max[j], c.s.Q01[j], c.s.Q10[j], c.s.Q50[j], c.s.Q90[j], c.s.Q99[j]}
			for k := range want {
				if math.Abs(have[k]-want[k]) > 1e-9*math.Max(1, math.Abs(want[k])) {
					t.Errorf("%s dim %d stat %d: %v, want %v", c.name, j, k, have[k], want[k])
				}
			}
		}
	}
}

// TestStatsDeterministic: the same bytes whatever the segments' order,
// also when the quantiles come from a sample.
func TestStatsDeterministic(t *testing.T) {
	defer func(k int) { keep = k }(keep)
	keep = 500
	eps := episodes(300, 2)
	a, b := run(t, eps, 9, 1), run(t, eps, 9, 2)
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if string(ja) != string(jb) {
		t.Fatalf("statistics depend on the order:\n%s\n%s", ja, jb)
	}
	if !a.ActionSum.Sampled || a.ActionSum.Count <= int64(keep) {
		t.Fatalf("want a sampled run: count %d, sampled %v", a.ActionSum.Count, a.ActionSum.Sampled)
	}
	// A sample of 500 puts the 1st percentile of an exponential within a
	// few hundredths of the exact one.
	keep = Keep
	exact := run(t, eps, 9, 1)
	if d := math.Abs(a.ActionSum.Q99[1] - exact.ActionSum.Q99[1]); d > 0.15*exact.ActionSum.Q99[1] {
		t.Errorf("sampled q99 %v, exact %v", a.ActionSum.Q99[1], exact.ActionSum.Q99[1])
	}
	if a.ActionSum.Mean[0] != exact.ActionSum.Mean[0] {
		t.Errorf("the mean depends on the sample: %v vs %v", a.ActionSum.Mean[0], exact.ActionSum.Mean[0])
	}
}

// TestStatsWithoutSum: a Spec that does not ask for action_summed (step
// samples) gets none, and the same action and state statistics.
func TestStatsWithoutSum(t *testing.T) {
	eps := episodes(40, 3)
	for _, summed := range []bool{true, false} {
		t.Run(fmt.Sprint("summed=", summed), func(t *testing.T) {
			sp := spec
			sp.Summed = summed
			acc := New(sp, 2, 1, 1)
			for _, e := range eps {
				if err := acc.Add(0, e); err != nil {
					t.Fatal(err)
				}
			}
			got, want := acc.Stats(), run(t, eps, 1, 1)
			if (got.ActionSum != nil) != summed {
				t.Fatalf("action_summed %+v with Summed %v", got.ActionSum, summed)
			}
			for _, c := range []struct {
				name      string
				got, want *Stat
			}{{"action", got.Action, want.Action}, {"state", got.State, want.State}} {
				g, _ := json.Marshal(c.got)
				w, _ := json.Marshal(c.want)
				if string(g) != string(w) {
					t.Errorf("%s: %s, want %s", c.name, g, w)
				}
			}
		})
	}
}

// TestQuantileMatchesNumpy: numpy.quantile([1, 2, 3, 4], q) values.
func TestQuantileMatchesNumpy(t *testing.T) {
	x := []float64{1, 2, 3, 4}
	for q, want := range map[float64]float64{0: 1, 0.01: 1.03, 0.5: 2.5, 0.99: 3.97, 1: 4} {
		if got := Quantile(x, q); math.Abs(got-want) > 1e-12 {
			t.Errorf("Quantile(%v) = %v, want %v", q, got, want)
		}
	}
	if got := Quantile([]float64{7}, 0.99); got != 7 {
		t.Errorf("one value: %v", got)
	}
}
