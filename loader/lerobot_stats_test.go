package loader

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestLeRobotStatsSaved: normalisation statistics of a LeRobot dataset are
// saved and reused for the same data and config, like RLDS ones, and not
// for another config, or after a data file is rewritten in place or the
// episode table changes.
func TestLeRobotStatsSaved(t *testing.T) {
	requireVideo(t)
	data := t.TempDir()
	if err := os.CopyFS(data, os.DirFS(filepath.Join(lerobotFixtures, "lerobot_av1"))); err != nil {
		t.Fatal(err)
	}
	cfg := func(offset string) string {
		return "datasets:\n  - name: lr\n    source: " + data + "\n    image_key: observation.images.top\n" +
			"    offset: " + offset + "\n    action_keys: [action]\n    state_key: observation.state\n"
	}
	stats := savedStats(t)
	first := checkStatsReused(t, stats, cfg)
	// A data file rewritten in place (same bytes, a new modification
	// time: a new version).
	file := filepath.Join(data, "data", "chunk-000", "file-001.parquet")
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(file, later, later); err != nil {
		t.Fatal(err)
	}
	if s := stats(cfg("2"), false); s != nil {
		t.Fatal("statistics saved before a data file was rewritten were served")
	}
	if s := stats(cfg("2"), true); s == nil || s.ActionSum.Mean[0] != first.ActionSum.Mean[0] {
		t.Fatalf("statistics of the same values differ: %+v", s)
	}
	if s := stats(cfg("2"), false); s == nil {
		t.Fatal("statistics computed after the rewrite were not saved")
	}
	// meta/info.json changed (a byte appended: still valid JSON).
	info := filepath.Join(data, "meta", "info.json")
	b, err := os.ReadFile(info)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(info, []byte(string(b)+" "), 0o644); err != nil {
		t.Fatal(err)
	}
	if s := stats(cfg("2"), false); s != nil {
		t.Fatal("statistics saved for another info.json were served")
	}
}
