package e2e

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestMountStepsRanks: step samples shard over ranks as pairs do. One
// daemon serving ranks 0-1 of 2 serves in rank/R/ batch k exactly the
// files (every array and the .json) a single-node daemon serves as batch
// R+2k, and the mix of two datasets, one without the wrist slot, keeps its
// proportions per batch.
func TestMountStepsRanks(t *testing.T) {
	cfg := writeStepMix(t)
	single, ranks := t.TempDir(), t.TempDir()
	startMount(t, single, nil, "--config", cfg, "--cache-dir", t.TempDir())
	startMount(t, ranks, nil, "--config", cfg, "--cache-dir", t.TempDir(), "--world", "2", "--ranks", "0-1")

	var info struct {
		Sample struct {
			Arrays []struct {
				File string `json:"file"`
			} `json:"arrays"`
		} `json:"sample"`
	}
	readJSON(t, filepath.Join(single, "info.json"), &info)
	if len(info.Sample.Arrays) == 0 {
		t.Fatal("info.json lists no sample arrays")
	}
	files := []string{"json"}
	for _, a := range info.Sample.Arrays {
		files = append(files, a.File)
	}
	read := func(dir string, n int, file string) []byte {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(dir, "batches", fmt.Sprintf("%06d.%s", n, file)))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for r := range 2 {
		for k := range 4 {
			for _, f := range files {
				got := read(filepath.Join(ranks, "rank", fmt.Sprint(r)), k, f)
				want := read(single, r+2*k, f)
				if !bytes.Equal(got, want) {
					t.Errorf("rank/%d batch %d %s differs from the single node's batch %d", r, k, f, r+2*k)
				}
			}
		}
	}
	// Proportions: 4 of bridge and 2 of kuka in every batch (weights 2:1).
	for n := range 8 {
		var meta struct {
			Dataset []string `json:"dataset_name"`
		}
		readJSON(t, filepath.Join(single, "batches", fmt.Sprintf("%06d.json", n)), &meta)
		count := map[string]int{}
		for _, d := range meta.Dataset {
			count[d]++
		}
		if count["bridge"] != 4 || count["kuka"] != 2 {
			t.Errorf("batch %d holds %v, want bridge 4 and kuka 2", n, count)
		}
	}
}

// writeStepMix writes a step-sample mix of two fixtures at 2:1: bridge
// with both camera slots, the state and a chunk of 4, kuka without a
// wrist camera or a state.
func writeStepMix(t *testing.T) string {
	t.Helper()
	bridge, _ := filepath.Abs("testdata/datasets/tiny_bridge/1.0.0")
	kuka, _ := filepath.Abs("testdata/datasets/tiny_kuka/1.0.0")
	return writeMixText(t, `batch_size: 6
num_batches: 8
sample:
  cameras:
    primary: {size: [24, 32], steps: [-1, 0]}
    wrist: {size: [16, 16]}
  state: {steps: [-1, 0]}
  action: {steps: "0:4"}
datasets:
  - name: bridge
    source: `+bridge+`
    weight: 2
    cameras: {primary: steps/observation/image, wrist: steps/observation/wrist_image}
    state_key: steps/observation/state
    action_keys: [steps/action/world_vector]
  - name: kuka
    source: `+kuka+`
    weight: 1
    cameras: {primary: steps/observation/image}
    action_keys: [steps/action]
`)
}
