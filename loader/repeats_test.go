package loader

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/oxefs/oxefs/config"
)

// checkRepeats checks one pass of a val view, each sample given as its
// unit and whether it is marked a repeat: the unmarked samples are
// distinct units, every marked one repeats a unit the pass holds, and
// there are repeats exactly where the pass outgrows its units.
func checkRepeats(t *testing.T, units []string, repeat []bool) {
	t.Helper()
	seen := map[string]bool{}
	var repeats []string
	for i, u := range units {
		if repeat[i] {
			repeats = append(repeats, u)
			continue
		}
		if seen[u] {
			t.Fatalf("sample %d: unit %s served twice, unmarked", i, u)
		}
		seen[u] = true
	}
	for _, u := range repeats {
		if !seen[u] {
			t.Errorf("repeat of %s, a unit the pass never serves unmarked", u)
		}
	}
	if len(repeats) == 0 || len(repeats) != len(units)-len(seen) {
		t.Fatalf("%d repeats among %d samples of %d units: want a last batch topped up with repeats", len(repeats), len(units), len(seen))
	}
}

// TestValRepeatsMarked: the val view's last batch is topped up with
// samples of the next pass; its .json marks them with is_repeat (meta
// full and dataset), and the train view writes no is_repeat.
func TestValRepeatsMarked(t *testing.T) {
	var full []bool // meta full's marks: meta dataset marks the same samples
	for _, meta := range []string{"full", "dataset"} {
		t.Run(meta, func(t *testing.T) {
			// samples_per_episode 1: a unit is an episode.
			p := openYAMLPipeline(t, "batch_size: 8\nimage_size: [16, 16]\nmeta: "+meta+"\ndatasets:\n  - source: "+bridgeSource(t)+
				"\n    image_key: steps/observation/image\n    val_split: val\n    action_keys: [steps/action/world_vector]\n", 0)
			t.Cleanup(p.Close)
			read := func(train bool, n int64) (m struct {
				DatasetName []string `json:"dataset_name"`
				EpisodeID   []string `json:"episode_id"`
				IsRepeat    []bool   `json:"is_repeat"`
			}) {
				t.Helper()
				s := p.Val
				if train {
					s = p.Train
				}
				b, err := s.Get(context.Background(), n)
				if err != nil {
					t.Fatal(err)
				}
				defer b.Release()
				if err := json.Unmarshal(b.Meta(), &m); err != nil {
					t.Fatal(err)
				}
				return m
			}
			var units []string
			var repeat []bool
			for n := range p.Val.Len() {
				m := read(false, n)
				if len(m.IsRepeat) != len(m.DatasetName) {
					t.Fatalf("val batch %d: is_repeat %v for %d samples", n, m.IsRepeat, len(m.DatasetName))
				}
				units = append(units, m.EpisodeID...)
				repeat = append(repeat, m.IsRepeat...)
			}
			if meta == "full" {
				checkRepeats(t, units, repeat)
				full = repeat
			} else if !slices.Equal(repeat, full) {
				t.Fatalf("meta dataset marks %v, meta full %v", repeat, full)
			}
			for _, n := range []int64{0, p.Train.Len(), 1000} {
				if m := read(true, n); m.IsRepeat != nil {
					t.Fatalf("train batch %d has is_repeat %v", n, m.IsRepeat)
				}
			}
		})
	}
}

// TestStepsValRepeatsMarked: in step mode, sample_is_pad (the array after
// frame_index) marks the val view's repeats, and is all false on the
// train view, whose later epochs are new batches by design.
func TestStepsValRepeatsMarked(t *testing.T) {
	spec := &config.StepSpec{Cameras: twoSlots([]int{0}), Action: config.Deltas{Steps: []int{0, 1}}}
	cfg := stepConfig(t, bridgeStepYAML(t, "    val_split: val\n"), spec, bridgeCams)
	p, err := openStepPipeline(t, cfg, 2)
	if err != nil {
		t.Fatal(err)
	}
	arrays := layoutOf(p).Arrays
	if got := arrays[len(arrays)-1]; got.Name != "sample_is_pad" || got.DType != "|b1" || !slices.Equal(got.Shape, []int{8}) ||
		arrays[len(arrays)-2].Name != "frame_index" {
		t.Fatalf("last arrays %s, %s %s %v: want frame_index, then sample_is_pad |b1 [8]", arrays[len(arrays)-2].Name, got.Name, got.DType, got.Shape)
	}
	read := func(s bool, n int64) (pad []bool, units []string) {
		t.Helper()
		view := p.Train
		if s {
			view = p.Val
		}
		files, err := p.BatchFiles(context.Background(), view, n)
		if err != nil {
			t.Fatal(err)
		}
		var meta struct {
			EpisodeID []string `json:"episode_id"`
		}
		if err := json.Unmarshal(files[".json"], &meta); err != nil {
			t.Fatal(err)
		}
		padF := parseNPYFile(t, "sample_is_pad.npy", files[".sample_is_pad.npy"])
		frame := parseNPYFile(t, "frame_index.npy", files[".frame_index.npy"])
		for i, id := range meta.EpisodeID {
			v := padF.bytes(i)[0]
			if v > 1 {
				t.Fatalf("sample_is_pad[%d] = %d", i, v)
			}
			pad = append(pad, v == 1)
			units = append(units, fmt.Sprintf("%s@%d", id, frame.i64(i)))
		}
		return pad, units
	}
	var units []string
	var pad []bool
	for n := range p.Val.Len() {
		pd, u := read(true, n)
		pad, units = append(pad, pd...), append(units, u...)
	}
	checkRepeats(t, units, pad)
	for _, n := range []int64{0, p.Train.Len(), 1000} {
		if pd, _ := read(false, n); slices.Contains(pd, true) {
			t.Fatalf("train batch %d: sample_is_pad %v", n, pd)
		}
	}
}
