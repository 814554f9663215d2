package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestStatsPrintsTheModesQuantities: `oxefs stats` prints, for each
// dataset, the quantities its mix normalises with, each dimension's row
// being the figures --json gives: action, action_summed and state for
// pairs; action, state and each camera slot's frames (image.<slot>,
// --json's images.<slot>) for step samples, whose actions are per step
// (there is no summed action, which an offset of 0 would make a block of
// zeros).
func TestStatsPrintsTheModesQuantities(t *testing.T) {
	dir := t.TempDir()
	if _, stderr, code := runOxefs(t, nil, "synth", dir, "--datasets", "2", "--episodes", "3", "--steps", "12"); code != 0 {
		t.Fatalf("synth: exit %d\n%s", code, stderr)
	}
	for _, tc := range []struct {
		mix     string
		json    []string
		printed []string
	}{
		{"mix.yaml", []string{"action", "action_summed", "state"}, []string{"action", "action_summed", "state"}},
		{"mix-steps.yaml", []string{"action", "images", "state"}, []string{"action", "image.primary", "state"}},
	} {
		t.Run(tc.mix, func(t *testing.T) {
			args := []string{"stats", "--config", filepath.Join(dir, tc.mix), "--cache-dir", t.TempDir()}
			text, stderr, code := runOxefs(t, nil, args...)
			if code != 0 {
				t.Fatalf("stats: exit %d\n%s", code, stderr)
			}
			js, stderr, code := runOxefs(t, nil, append(args, "--json")...)
			if code != 0 {
				t.Fatalf("stats --json: exit %d\n%s", code, stderr)
			}
			var stats map[string]map[string]json.RawMessage
			if err := json.Unmarshal([]byte(js), &stats); err != nil {
				t.Fatalf("stats --json: %v\n%s", err, js)
			}
			if len(stats) != 2 {
				t.Fatalf("stats --json has %d datasets, want 2:\n%s", len(stats), js)
			}
			printed := printedStats(t, text)
			for name, ds := range stats {
				var have []string
				for q := range ds {
					if q != "episodes" && q != "skipped_episodes" {
						have = append(have, q)
					}
				}
				slices.Sort(have)
				if !slices.Equal(have, tc.json) {
					t.Errorf("%s: --json has %v, want %v", name, have, tc.json)
				}
				var qs []string
				for q := range printed[name] {
					qs = append(qs, q)
				}
				slices.Sort(qs)
				if !slices.Equal(qs, tc.printed) {
					t.Errorf("%s: printed %v, want %v:\n%s", name, qs, tc.printed, text)
				}
				for _, q := range tc.printed {
					var s struct{ Mean, Std, Min, Max, Q01, Q99 []float64 }
					raw := ds[q]
					if slot, ok := strings.CutPrefix(q, "image."); ok {
						var images map[string]json.RawMessage
						if err := json.Unmarshal(ds["images"], &images); err != nil {
							t.Fatalf("%s images: %v", name, err)
						}
						raw = images[slot]
					}
					if err := json.Unmarshal(raw, &s); err != nil {
						t.Fatalf("%s %s: %v", name, q, err)
					}
					rows := printed[name][q]
					if len(rows) != len(s.Mean) || len(rows) == 0 {
						t.Fatalf("%s %s: %d rows printed, --json has %d dims", name, q, len(rows), len(s.Mean))
					}
					allZero := true
					for j, row := range rows {
						want := []string{fmt.Sprint(j)}
						for _, v := range []float64{s.Mean[j], s.Std[j], s.Min[j], s.Max[j], s.Q01[j], s.Q99[j]} {
							want = append(want, fmt.Sprintf("%.4g", v))
							allZero = allZero && v == 0
						}
						if !slices.Equal(row, want) {
							t.Errorf("%s %s dim %d: printed %v, --json gives %v", name, q, j, row, want)
						}
					}
					if allZero {
						t.Errorf("%s %s: every figure is 0", name, q)
					}
				}
			}
		})
	}
}

// printedStats reads stats' table: dataset → quantity → one row of
// fields (dim, mean, std, min, max, q01, q99) per dimension.
func printedStats(t *testing.T, text string) map[string]map[string][][]string {
	t.Helper()
	out := map[string]map[string][][]string{}
	var ds string
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 0:
		case !strings.HasPrefix(line, " ") && strings.HasSuffix(f[0], ":"):
			ds = strings.TrimSuffix(f[0], ":")
			out[ds] = map[string][][]string{}
		case f[0] == "quantity":
		case ds != "" && len(f) == 8:
			out[ds][f[0]] = append(out[ds][f[0]], f[1:])
		default:
			t.Fatalf("stats printed an unexpected line %q:\n%s", line, text)
		}
	}
	return out
}

// TestStatsOfDecodeGPU: the statistics of a decode: gpu mix are the
// decode: exact mix's (the frames the trainer decodes are exact's); the
// gpu mode is no mode frames are decoded in.
func TestStatsOfDecodeGPU(t *testing.T) {
	dir := t.TempDir()
	if _, stderr, code := runOxefs(t, nil, "synth", dir, "--datasets", "2", "--episodes", "3", "--steps", "12"); code != 0 {
		t.Fatalf("synth: exit %d\n%s", code, stderr)
	}
	mix, err := os.ReadFile(filepath.Join(dir, "mix-steps.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, decode := range []string{"exact", "gpu"} {
		cfg := writeMixText(t, "decode: "+decode+"\n"+string(mix))
		js, stderr, code := runOxefs(t, nil, "stats", "--config", cfg, "--cache-dir", t.TempDir(), "--json")
		if code != 0 {
			t.Fatalf("decode %s: stats: exit %d\n%s", decode, code, stderr)
		}
		out[decode] = js
	}
	if !strings.Contains(out["gpu"], `"images"`) {
		t.Fatalf("no image statistics:\n%s", out["gpu"])
	}
	if out["gpu"] != out["exact"] {
		t.Errorf("decode: gpu's statistics differ from exact's:\n%s\n%s", out["gpu"], out["exact"])
	}
}
