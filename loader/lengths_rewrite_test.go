package loader

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/oxefs/oxefs/norm"
)

// TestOpenAllPairsAfterRewrite: samples_per_episode 0 plans from the
// episodes as they are after a dataset is rewritten in place with the same
// layout (dataset_info.json unchanged), not from the length index of the
// bytes before.
func TestOpenAllPairsAfterRewrite(t *testing.T) {
	src := filepath.Join(fixtures, "tiny_bridge/1.0.0")
	data := t.TempDir()
	if err := os.CopyFS(data, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	y := "samples_per_episode: 0\ndatasets:\n  - name: bridge\n    source: " + data + "\n" +
		"    image_key: steps/observation/image\n    offset: [5, 8]\n"
	units := func(steps []int32) int64 {
		var n int64
		for _, L := range steps {
			if L >= 6 {
				n += int64(L - 5)
			}
		}
		return n
	}
	cacheDir := t.TempDir()
	planned := func() int64 {
		t.Helper()
		m, err := openYAML(t, newStore(t, cacheDir), y, MixOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return m.Train.Info().Datasets[0].Units
	}

	steps := stepsOf(t, "tiny_bridge")["train"] // 3 shards of 8 episodes
	if got, want := planned(), units(steps); got != want {
		t.Fatalf("before the rewrite: %d units planned, want %d", got, want)
	}
	// Shard 0 gets shard 1's records: the same count, other lengths.
	b, err := os.ReadFile(filepath.Join(data, "tiny_bridge-train.tfrecord-00001-of-00003"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(data, "tiny_bridge-train.tfrecord-00000-of-00003"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	rewritten := slices.Concat(steps[8:16], steps[8:])
	if units(rewritten) == units(steps) {
		t.Fatal("fixture: the rewrite must change the number of units")
	}
	if got, want := planned(), units(rewritten); got != want {
		t.Fatalf("after the rewrite: %d units planned, want %d (the stale index gives %d)", got, want, units(steps))
	}
}

// TestStatsAfterRewrite: saved statistics are reused for the same bytes
// and config, and recomputed after a rewrite in place or for another
// config, like the length index.
func TestStatsAfterRewrite(t *testing.T) {
	src := filepath.Join(fixtures, "tiny_bridge/1.0.0")
	data := t.TempDir()
	if err := os.CopyFS(data, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	cfg := func(offset string) string {
		return "datasets:\n  - name: bridge\n    source: " + data + "\n    image_key: steps/observation/image\n" +
			"    offset: " + offset + "\n    action_keys: [steps/action/world_vector]\n"
	}
	stats := savedStats(t)
	first := checkStatsReused(t, stats, cfg)
	// Shard 0 gets shard 1's records: other values, the same layout.
	b, err := os.ReadFile(filepath.Join(data, "tiny_bridge-train.tfrecord-00001-of-00003"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(data, "tiny_bridge-train.tfrecord-00000-of-00003"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if s := stats(cfg("2"), false); s != nil {
		t.Fatal("statistics of the bytes before the rewrite were served")
	}
	after := stats(cfg("2"), true)
	if after.ActionSum.Mean[0] == first.ActionSum.Mean[0] {
		t.Fatal("the rewrite did not change the statistics")
	}
}

// savedStats returns a function that opens the mix y over one cache
// directory, loads its first dataset's saved statistics or, with compute,
// computes and saves them, and returns them (nil when none are saved).
func savedStats(t *testing.T) func(y string, compute bool) *norm.Stats {
	cacheDir := t.TempDir()
	return func(y string, compute bool) *norm.Stats {
		t.Helper()
		m, err := openYAML(t, newStore(t, cacheDir), y, MixOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := m.NormStats(t.Context(), compute, 2, "", nil); err != nil {
			t.Fatal(err)
		}
		return m.Datasets[0].Norm
	}
}

// checkStatsReused checks that statistics are not there before they are
// computed, are reused for the same config, and are not served for another
// offset; it returns those computed for offset 2.
func checkStatsReused(t *testing.T, stats func(string, bool) *norm.Stats, cfg func(offset string) string) *norm.Stats {
	t.Helper()
	if s := stats(cfg("2"), false); s != nil {
		t.Fatal("statistics before any were computed")
	}
	first := stats(cfg("2"), true)
	if first == nil {
		t.Fatal("no statistics computed")
	}
	again := stats(cfg("2"), false)
	if again == nil || again.ActionSum.Mean[0] != first.ActionSum.Mean[0] {
		t.Fatalf("saved statistics not reused: %+v", again)
	}
	if s := stats(cfg("3"), false); s != nil {
		t.Fatal("statistics of offset 2 served for offset 3")
	}
	return first
}
