package e2e

import (
	"encoding/json"
	"math"
	"os"
	"strings"
	"testing"
)

// TestBenchAugmentCost: `oxefs bench --augment-cost` builds the same
// batches with the config's augmentation and without, in turn, and
// reports each one's CPU per sample and their ratio, consistently; it
// refuses what it cannot compare, naming why.
func TestBenchAugmentCost(t *testing.T) {
	cfg := writeAugmentMix(t, slotSizes[0], slotSizes[1], allOps)
	cache := t.TempDir()
	stdout, stderr, code := runOxefs(t, nil, "bench", "--config", cfg, "--cache-dir", cache, "--augment-cost",
		"--warmup", "1", "--batches", "6", "--readahead", "4", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "ignored with --augment-cost") || !strings.Contains(stderr, "--readahead") {
		t.Errorf("--readahead with --augment-cost: no warning that it is ignored; stderr %q", stderr)
	}
	var s struct {
		AugmentCost bool     `json:"augment_cost"`
		Batches     int      `json:"batches"`
		Samples     int      `json:"samples"`
		On          float64  `json:"on_cpu_ms_per_sample"`
		Off         float64  `json:"off_cpu_ms_per_sample"`
		Ratio       float64  `json:"ratio"`
		Median      float64  `json:"batch_ratio_median"`
		Min         float64  `json:"batch_ratio_min"`
		Max         float64  `json:"batch_ratio_max"`
		Extra       *float64 `json:"pipeline_cpu_ms_per_sample"`
	}
	if err := json.Unmarshal([]byte(stdout), &s); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, stdout)
	}
	if !s.AugmentCost || s.Batches != 6 || s.Samples != 36 || s.Extra != nil {
		t.Errorf("summary %+v: want augment_cost, 6 batches of 6 samples, and no single-run fields", s)
	}
	if !(s.On > 0 && s.Off > 0) {
		t.Errorf("CPU per sample on %v, off %v: want both above 0", s.On, s.Off)
	}
	if math.Abs(s.Ratio-s.On/s.Off) > 1e-9*s.Ratio {
		t.Errorf("ratio %v is not on ÷ off = %v", s.Ratio, s.On/s.Off)
	}
	if !(s.Min <= s.Median && s.Median <= s.Max && s.Min > 0) {
		t.Errorf("batch ratios: median %v outside %v–%v", s.Median, s.Min, s.Max)
	}

	stdout, stderr, code = runOxefs(t, nil, "bench", "--config", cfg, "--cache-dir", cache, "--augment-cost",
		"--warmup", "0", "--batches", "2")
	if code != 0 || !strings.Contains(stdout, "augment on") || !strings.Contains(stdout, "on ÷ off") {
		t.Errorf("text summary: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}

	// the same mix with no augment block
	text, err := os.ReadFile(writeAugmentMix(t, slotSizes[0], slotSizes[1], "  brightness: 0.5\n"))
	if err != nil {
		t.Fatal(err)
	}
	plain := writeMixText(t, strings.Replace(string(text), "augment:\n  brightness: 0.5\n", "", 1))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--config", plain}, "augments nothing"},
		{[]string{t.TempDir()}, "give --config, not a MOUNTPOINT"},
		{[]string{"--config", cfg, "--augment", "off"}, "leave --augment on"},
		{[]string{"--config", cfg, "--bare-decode"}, "give one"},
	} {
		args := append([]string{"bench", "--augment-cost", "--cache-dir", cache, "--warmup", "0", "--batches", "1"}, tc.args...)
		_, stderr, code := runOxefs(t, nil, args...)
		if code == 0 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want an error with %q", tc.args, code, stderr, tc.want)
		}
	}
}
