package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oxefs/oxefs/internal/testkit"
)

// TestMountTwoCamerasOfOneSource mounts the ordinary two-camera mix: two
// entries over the same source and split, each with its own image_key.
// Every batch must read, each sample must come from an episode of its own
// entry, and the bytes must equal those of the same mix whose second entry
// reads a copy of the dataset (where nothing can be shared between the
// entries).
func TestMountTwoCamerasOfOneSource(t *testing.T) {
	testkit.RequireFUSE(t)
	bridge, _ := filepath.Abs("testdata/datasets/tiny_bridge/1.0.0")
	copied := testkit.CopyDir(t, bridge)
	mixYAML := func(second string) string {
		cfg := filepath.Join(t.TempDir(), "mix.yaml")
		text := fmt.Sprintf(`batch_size: 8
num_batches: 60
image_size: [32, 32]
datasets:
  - name: cam_main
    source: %s
    image_key: steps/observation/image
  - name: cam_wrist
    source: %s
    image_key: steps/observation/wrist_image
`, bridge, second)
		if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	shared, separate := t.TempDir(), t.TempDir()
	// A small RAM cache churns, so entries meet each other's episodes both
	// in flight and cached.
	startMount(t, shared, nil, "--config", mixYAML(bridge), "--cache-dir", t.TempDir(), "--mem", "48MiB")
	startMount(t, separate, nil, "--config", mixYAML(copied), "--cache-dir", t.TempDir(), "--mem", "48MiB")
	var info mountInfo
	readJSON(t, filepath.Join(shared, "info.json"), &info)
	n := min(info.NumBatches, 60)
	if n < 10 {
		t.Fatalf("info.json lists %d batches", info.NumBatches)
	}
	got := hashBatches(t, shared, "batches", n, 4, 9)
	want := hashBatches(t, separate, "batches", n, 1, 0)
	for i := range n {
		if got[i] != want[i] {
			t.Fatalf("batch %d differs between a mix with both cameras of one source and one reading a copy", i)
		}
	}
	seen := map[string]int{}
	for i := range n {
		b, err := os.ReadFile(filepath.Join(shared, "batches", fmt.Sprintf("%06d.json", i)))
		if err != nil {
			t.Fatal(err)
		}
		var meta struct {
			DatasetName []string `json:"dataset_name"`
			EpisodeID   []string `json:"episode_id"`
		}
		if err := json.Unmarshal(b, &meta); err != nil {
			t.Fatal(err)
		}
		for j, name := range meta.DatasetName {
			seen[name]++
			if j < len(meta.EpisodeID) && !strings.HasPrefix(meta.EpisodeID[j], name+"/") {
				t.Fatalf("batch %d sample %d: dataset %s but episode %s", i, j, name, meta.EpisodeID[j])
			}
		}
	}
	if seen["cam_main"] == 0 || seen["cam_wrist"] == 0 {
		t.Fatalf("samples per entry: %v, want both cameras", seen)
	}
}
