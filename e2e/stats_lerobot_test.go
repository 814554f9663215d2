package e2e

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// TestStatsMatchLeRobot: `oxefs stats` over every episode of the fixture
// lerobot_av1 gives the figures lerobot 0.4.4 itself wrote into its
// meta/stats.json: action and state (count, mean, std, min, max and the
// per-episode quantiles, lerobot's kind), and the frames of its PNG camera
// (served at their own size, so the pixels are lerobot's: count, mean,
// min, max, per-episode quantiles). lerobot computed its video cameras'
// statistics from the frames before encoding, and its image std
// overflows uint8 (0.4.4's RunningQuantileStats squares the pixels in
// uint8), so neither is compared.
func TestStatsMatchLeRobot(t *testing.T) {
	root, err := filepath.Abs("testdata/lerobot/lerobot_av1")
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "mix.yaml")
	mix := `batch_size: 4
samples_per_episode: 0
sample:
  cameras: {side: {size: [48, 64]}}
datasets:
  - name: lr
    source: ` + root + `
    split: train+val
    cameras: {side: observation.images.side}
    action_keys: [action]
    state_key: observation.state
`
	if err := os.WriteFile(cfg, []byte(mix), 0o644); err != nil {
		t.Fatal(err)
	}
	js, stderr, code := runOxefs(t, nil, "stats", "--json", "--config", cfg, "--cache-dir", t.TempDir())
	if code != 0 {
		t.Fatalf("stats: exit %d\n%s", code, stderr)
	}
	type quantiles struct{ Q01, Q10, Q50, Q90, Q99 []float64 }
	type stat struct {
		Count                   int64
		Mean, Std, Min, Max     []float64
		PerEpisode              *quantiles `json:"per_episode"`
		Q01, Q10, Q50, Q90, Q99 []float64
	}
	var got map[string]struct {
		Action, State *stat
		Images        map[string]*stat
	}
	if err := json.Unmarshal([]byte(js), &got); err != nil {
		t.Fatalf("stats --json: %v\n%s", err, js)
	}
	b, err := os.ReadFile(filepath.Join(root, "meta", "stats.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ref map[string]map[string]json.RawMessage
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	// flat reads one of lerobot's figures, flattening (3,1,1) image arrays.
	flat := func(t *testing.T, key, fig string) []float64 {
		var v any
		if err := json.Unmarshal(ref[key][fig], &v); err != nil {
			t.Fatalf("stats.json %s %s: %v", key, fig, err)
		}
		var out []float64
		var walk func(any)
		walk = func(x any) {
			switch x := x.(type) {
			case []any:
				for _, e := range x {
					walk(e)
				}
			case float64:
				out = append(out, x)
			}
		}
		walk(v)
		return out
	}
	lr := got["lr"]
	if lr.Action == nil || lr.State == nil || lr.Images["side"] == nil {
		t.Fatalf("stats --json lacks action, state or images.side:\n%s", js)
	}
	for _, tc := range []struct {
		key   string
		s     *stat
		image bool
	}{
		{"action", lr.Action, false},
		{"observation.state", lr.State, false},
		{"observation.images.side", lr.Images["side"], true},
	} {
		t.Run(tc.key, func(t *testing.T) {
			if want := int64(flat(t, tc.key, "count")[0]); tc.s.Count != want {
				t.Errorf("count %d, lerobot %d", tc.s.Count, want)
			}
			pe := tc.s.PerEpisode
			if pe == nil {
				t.Fatal("no per_episode quantiles")
			}
			figs := map[string][]float64{"mean": tc.s.Mean, "min": tc.s.Min, "max": tc.s.Max,
				"q01": pe.Q01, "q10": pe.Q10, "q50": pe.Q50, "q90": pe.Q90, "q99": pe.Q99}
			if !tc.image {
				figs["std"] = tc.s.Std
			}
			for fig, have := range figs {
				want := flat(t, tc.key, fig)
				if len(have) != len(want) {
					t.Errorf("%s: %d values, lerobot %d", fig, len(have), len(want))
					continue
				}
				for j := range want {
					// lerobot sums in float32 where its data is float32.
					if math.Abs(have[j]-want[j]) > 1e-5*max(1, math.Abs(want[j])) {
						t.Errorf("%s[%d] = %.9g, lerobot %.9g", fig, j, have[j], want[j])
					}
				}
			}
		})
	}
}
