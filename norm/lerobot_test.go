package norm

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
)

// TestLeRobotQuantile checks lerobotQuantile against what lerobot 0.4.4
// itself returns (testdata/norm_lerobot.py) for float32 columns and
// uint8 pixel channels.
func TestLeRobotQuantile(t *testing.T) {
	b, err := os.ReadFile("../testdata/norm/lerobot_quantiles.json")
	if err != nil {
		t.Fatal(err)
	}
	var ref struct {
		Cases []struct {
			Name, Kind              string
			Values                  []float64
			Q01, Q10, Q50, Q90, Q99 float64
		}
	}
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	if len(ref.Cases) == 0 {
		t.Fatal("no cases")
	}
	for _, c := range ref.Cases {
		t.Run(c.Name, func(t *testing.T) {
			col := slices.Clone(c.Values)
			slices.Sort(col)
			var vals []float64
			var counts []int64
			for i, v := range col {
				if i > 0 && v == col[i-1] {
					counts[len(counts)-1]++
					continue
				}
				vals, counts = append(vals, v), append(counts, 1)
			}
			for l, want := range []float64{c.Q01, c.Q10, c.Q50, c.Q90, c.Q99} {
				got := lerobotQuantile(vals, counts, c.Kind == "float32", Levels[l])
				if math.Abs(got-want) > 1e-12*max(1, math.Abs(want)) {
					t.Errorf("q%02.0f = %.17g, lerobot %.17g", Levels[l]*100, got, want)
				}
			}
		})
	}
}

// TestImageSteps checks the frames sampled per episode against lerobot's
// sample_indices for a few lengths.
func TestImageSteps(t *testing.T) {
	for _, tc := range []struct {
		steps int
		n     int
		last  int
	}{
		{1, 1, 0}, {7, 7, 6}, {100, 100, 99}, {101, 100, 100}, {1000, 177, 999}, {20000, 1681, 19999},
	} {
		got := ImageSteps(tc.steps)
		if len(got) != tc.n || got[0] != 0 || got[len(got)-1] != tc.last || !slices.IsSorted(got) {
			t.Errorf("ImageSteps(%d): %d indices from %d to %d, want %d to %d", tc.steps, len(got), got[0], got[len(got)-1], tc.n, tc.last)
		}
	}
}

// TestPerEpisodeQuantiles: action's PerEpisode is each episode's own
// LeRobot quantile, averaged weighted by steps; action_summed has none.
func TestPerEpisodeQuantiles(t *testing.T) {
	eps := episodes(20, 3)
	got := run(t, eps, 3, 3)
	if got.ActionSum.PerEpisode != nil {
		t.Errorf("action_summed has per-episode quantiles %v, want none", got.ActionSum.PerEpisode)
	}
	pe := got.Action.PerEpisode
	if pe == nil {
		t.Fatal("action has no per-episode quantiles")
	}
	for j := range 2 {
		for l, q := range Levels {
			var sum float64
			var n int
			for _, e := range eps {
				if e.steps < spec.Offset.Min+1 {
					continue
				}
				col := make([]float64, e.steps)
				for k := range col {
					col[k] = float64(float32(e.feats["a"][2*k+j]))
				}
				slices.Sort(col)
				counts := make([]int64, len(col))
				for k := range counts {
					counts[k] = 1 // random floats: distinct
				}
				sum += lerobotQuantile(col, counts, true, q) * float64(e.steps)
				n += e.steps
			}
			want := sum / float64(n)
			if have := (*pe.at(l))[j]; math.Abs(have-want) > 1e-12*max(1, math.Abs(want)) {
				t.Errorf("dim %d q%v: %v, want %v", j, q, have, want)
			}
		}
	}
}

// TestImageStats: a slot's statistics are those of every pixel added, in
// [0, 1], per channel; per-episode quantiles weight each episode by its
// frames.
func TestImageStats(t *testing.T) {
	r := rand.New(rand.NewPCG(38, 1))
	acc := New(Spec{Images: []string{"top", "wrist"}}, 0, 0, 2)
	var chans [3][]float64
	var frames int64
	var perEp [nLevels][3]float64
	for e := range 5 {
		n := 1 + r.IntN(4)
		pix := make([]byte, n*6*5*3)
		for i := range pix {
			pix[i] = byte(r.IntN(64) + 64*(i%3)) // channel c in [64c, 64c+64)
		}
		acc.AddImage(e%2, 0, pix, n)
		frames += int64(n)
		for c := range 3 {
			var col []float64
			for i := c; i < len(pix); i += 3 {
				col = append(col, float64(pix[i]))
				chans[c] = append(chans[c], float64(pix[i])/255)
			}
			slices.Sort(col)
			vals, counts := []float64{}, []int64{}
			for i, v := range col {
				if i > 0 && v == col[i-1] {
					counts[len(counts)-1]++
					continue
				}
				vals, counts = append(vals, v), append(counts, 1)
			}
			for l, q := range Levels {
				perEp[l][c] += lerobotQuantile(vals, counts, false, q) / 255 * float64(n)
			}
		}
	}
	s := acc.Stats()
	if len(s.Images) != 2 || s.Images["wrist"].Count != 0 {
		t.Fatalf("images %v, want top and an empty wrist", s.Images)
	}
	top := s.Images["top"]
	if top.Count != frames {
		t.Errorf("count %d, want %d frames", top.Count, frames)
	}
	for c, col := range chans {
		slices.Sort(col)
		var sum, ss float64
		for _, x := range col {
			sum += x
		}
		mean := sum / float64(len(col))
		for _, x := range col {
			ss += (x - mean) * (x - mean)
		}
		want := []float64{mean, math.Sqrt(ss / float64(len(col))), col[0], col[len(col)-1]}
		have := []float64{top.Mean[c], top.Std[c], top.Min[c], top.Max[c]}
		for l, q := range Levels {
			want = append(want, Quantile(col, q), perEp[l][c]/float64(frames))
			have = append(have, (*top.at(l))[c], (*top.PerEpisode.at(l))[c])
		}
		for k := range want {
			if math.Abs(have[k]-want[k]) > 1e-12 {
				t.Errorf("channel %d figure %d: %v, want %v", c, k, have[k], want[k])
			}
		}
	}
}
