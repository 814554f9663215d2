package loader

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
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
