package loader

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"testing"

	"github.com/oxefs/oxefs/augment"
	"github.com/oxefs/oxefs/config"
	"github.com/oxefs/oxefs/internal/testkit"
	"github.com/oxefs/oxefs/steps"
)

// augmentSpec is a training augmentation with every kind of op and
// dropout.
func augmentSpec(shared bool) augment.Spec {
	return augment.Spec{
		Crop:       0.8,
		Rotate:     augment.Symmetric(10),
		Brightness: augment.Jitter(0.3),
		Hue:        augment.Symmetric(0.1),
		Shared:     shared,
		Dropout:    0.4,
	}
}

// augmentPipeline opens tiny_bridge's step samples with two camera slots
// of history [-1, 0] (and a third the dataset lacks) under spec.
func augmentPipeline(t *testing.T, spec augment.Spec, workers int, val bool) *Pipeline {
	t.Helper()
	s := &config.StepSpec{Cameras: twoSlots([]int{-1, 0}), Action: config.Deltas{Steps: []int{0, 1}}}
	extra := ""
	if val {
		extra = "    val_split: val\n"
	}
	cfg := stepConfig(t, bridgeStepYAML(t, extra), s, bridgeCams)
	cfg.Augment = &config.Augment{Spec: spec}
	p, err := openStepPipeline(t, cfg, workers)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// vec is sample i's recorded parameters of a slot.
func vec(t *testing.T, b stepBatch, slot string, i int) [augment.NumColumns]float32 {
	t.Helper()
	a, ok := b.arrays[steps.AugmentArray(slot)]
	if !ok {
		t.Fatalf("no %s array", steps.AugmentArray(slot))
	}
	return [augment.NumColumns]float32(a.f32(i))
}

// TestAugmentConsistency: each (sample, camera) has one parameter set,
// recorded, that every frame of its history shares — a padded history
// (t = 0, both deltas the same frame) is the same bytes twice; cameras
// draw their own unless shared; dropout keeps a present camera and
// zeroes the dropped one's frames and its image_mask.
func TestAugmentConsistency(t *testing.T) {
	const drop = augment.NumColumns - 1
	for _, tc := range []struct {
		name   string
		shared bool
	}{{"independent", false}, {"shared", true}} {
		t.Run(tc.name, func(t *testing.T) {
			p := augmentPipeline(t, augmentSpec(tc.shared), 2, false)
			padded, dropped := 0, 0
			for n := range p.Train.Len() {
				b := readStepBatch(t, p, n)
				for i := range b.meta.EpisodeID {
					pv, wv := vec(t, b, "primary", i), vec(t, b, "wrist", i)
					if _, err := augment.FromVector(pv); err != nil {
						t.Fatalf("batch %d sample %d: %v", n, i, err)
					}
					same := slices.Equal(pv[:drop], wv[:drop])
					if same != tc.shared {
						t.Errorf("batch %d sample %d: primary %v and wrist %v, shared %v", n, i, pv, wv, tc.shared)
					}
					if pv[drop] == 1 && wv[drop] == 1 {
						t.Errorf("batch %d sample %d: both present cameras dropped", n, i)
					}
					if tv := vec(t, b, "third", i); tv[drop] == 1 {
						t.Errorf("batch %d sample %d: the absent camera is counted as dropped", n, i)
					}
					for k, slot := range []string{"primary", "wrist"} {
						frames := b.arrays["observation.images."+slot].bytes(i)
						half := len(frames) / 2
						mask := b.arrays["image_mask"].bytes(i)[k]
						if vec(t, b, slot, i)[drop] == 1 {
							dropped++
							if bytes.ContainsFunc(frames, func(r rune) bool { return r != 0 }) {
								t.Errorf("batch %d sample %d: dropped %s is not zeros", n, i, slot)
							}
							if mask != 0 {
								t.Errorf("batch %d sample %d: dropped %s has image_mask %d, want 0", n, i, slot, mask)
							}
							continue
						}
						if mask != 1 {
							t.Errorf("batch %d sample %d: present %s has image_mask %d, want 1", n, i, slot, mask)
						}
						if b.arrays["observation.images."+slot+"_is_pad"].bytes(i)[0] == 1 {
							padded++
							if !bytes.Equal(frames[:half], frames[half:]) {
								t.Errorf("batch %d sample %d: %s's two frames of step 0 differ", n, i, slot)
							}
						}
					}
				}
			}
			if padded == 0 || dropped == 0 {
				t.Fatalf("%d padded histories and %d dropped cameras: the test saw nothing to check", padded, dropped)
			}
		})
	}
}

// TestAugmentApplied: a camera's frames with parameters drawn are not
// those of the same sample without augmentation.
func TestAugmentApplied(t *testing.T) {
	aug := readStepBatch(t, augmentPipeline(t, augmentSpec(false), 2, false), 0)
	s := &config.StepSpec{Cameras: twoSlots([]int{-1, 0}), Action: config.Deltas{Steps: []int{0, 1}}}
	p, err := openStepPipeline(t, stepConfig(t, bridgeStepYAML(t, ""), s, bridgeCams), 2)
	if err != nil {
		t.Fatal(err)
	}
	plain := readStepBatch(t, p, 0)
	if !slices.Equal(aug.meta.EpisodeID, plain.meta.EpisodeID) {
		t.Fatalf("augmentation changed the samples: %v, %v", aug.meta.EpisodeID, plain.meta.EpisodeID)
	}
	for i := range aug.meta.EpisodeID {
		for _, slot := range []string{"primary", "wrist"} {
			name := "observation.images." + slot
			if bytes.Equal(aug.arrays[name].bytes(i), plain.arrays[name].bytes(i)) {
				t.Errorf("sample %d: %s is as it was without augmentation", i, slot)
			}
		}
	}
}

// TestAugmentDeterministic: a batch is the same bytes with 1 worker in
// order and 4 in reverse.
func TestAugmentDeterministic(t *testing.T) {
	one := trainBatches(t, augmentPipeline(t, augmentSpec(false), 1, false), false)
	four := trainBatches(t, augmentPipeline(t, augmentSpec(false), 4, false), true)
	if len(one) < 2 {
		t.Fatalf("%d batches", len(one))
	}
	for n := range one {
		if !bytes.Equal(one[n], four[n]) {
			t.Fatalf("batch %d differs between 1 worker in order and 4 workers in reverse", n)
		}
	}
}

// TestAugmentVal: the val view is not augmented: it records the centre
// crop twin of the training crop and nothing else, for every sample.
func TestAugmentVal(t *testing.T) {
	p := augmentPipeline(t, augmentSpec(false), 2, true)
	files, err := p.BatchFiles(context.Background(), p.Val, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := augment.Eval(augmentSpec(false), augment.Camera{Name: "primary"}).Vector()
	f := parseNPYFile(t, "primary.augment", files["."+steps.AugmentArray("primary")+".npy"])
	for i := range f.shape[0] {
		if got := [augment.NumColumns]float32(f.f32(i)); got != want {
			t.Errorf("val sample %d: %v, want the centre twin %v", i, got, want)
		}
	}
	var in struct {
		Augment *augmentInfo `json:"augment"`
	}
	if err := json.Unmarshal(p.info, &in); err != nil {
		t.Fatal(err)
	}
	if in.Augment == nil || len(in.Augment.Arrays) != 3 || len(in.Augment.Columns) != augment.NumColumns {
		t.Errorf("info.json's augment: %+v", in.Augment)
	}
}

// TestAugmentNoneNoArrays: without augment, no array records it and
// info.json has no augment key.
func TestAugmentNoneNoArrays(t *testing.T) {
	s := &config.StepSpec{Cameras: twoSlots([]int{0}), Action: config.Deltas{Steps: []int{0}}}
	p, err := openStepPipeline(t, stepConfig(t, bridgeStepYAML(t, ""), s, bridgeCams), 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range layoutOf(p).Arrays {
		if bytes.HasSuffix([]byte(a.Name), []byte(".augment")) {
			t.Errorf("array %s without augment", a.Name)
		}
	}
	if bytes.Contains(p.info, []byte(`"augment"`)) {
		t.Errorf("info.json names augment without it")
	}
}

// TestAugmentOff: AugmentOff (--augment off) gives the batches of the
// config without its augment block, and info.json says so.
func TestAugmentOff(t *testing.T) {
	s := &config.StepSpec{Cameras: twoSlots([]int{0}), Action: config.Deltas{Steps: []int{0}}}
	plain, err := openStepPipeline(t, stepConfig(t, bridgeStepYAML(t, ""), s, bridgeCams), 1)
	if err != nil {
		t.Fatal(err)
	}
	cfg := stepConfig(t, bridgeStepYAML(t, ""), s, bridgeCams)
	cfg.Augment = &config.Augment{Spec: augmentSpec(false)}
	cfg.Steps.Cameras[1].Augment = &config.Augment{Spec: augment.Spec{Contrast: augment.Jitter(0.5)}}
	off, err := Open(context.Background(), Options{
		Config: cfg, CacheDir: t.TempDir(), Mem: 256 << 20, Disk: 1 << 30, AugmentOff: true,
		Workers: 1, Decoder: "go", Version: "test", Log: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(off.Close)
	want, got := trainBatches(t, plain, false), trainBatches(t, off, false)
	if len(want) == 0 || len(got) != len(want) {
		t.Fatalf("%d batches, want %d", len(got), len(want))
	}
	for n := range want {
		if !bytes.Equal(got[n], want[n]) {
			t.Fatalf("batch %d with augment off differs from the config without augment", n)
		}
	}
	var in struct {
		AugmentOff bool `json:"augment_off"`
	}
	if err := json.Unmarshal(off.info, &in); err != nil {
		t.Fatal(err)
	}
	if !in.AugmentOff || bytes.Contains(plain.info, []byte(`augment_off`)) {
		t.Errorf("info.json does not say augment_off")
	}
	if cfg.Augment == nil {
		t.Errorf("AugmentOff changed the caller's config")
	}
}

// TestAugmentPairs: frame pairs are augmented with one parameter set per
// sample for both frames, recorded in the batch's NNNNNN.augment.npy
// (float32 [B, 18], listed in info.json; the .json does not repeat it),
// the frames file keeps the plain mix's header, and the batch is a
// function of its index alone.
func TestAugmentPairs(t *testing.T) {
	yaml := "batch_size: 8\nimage_size: [32, 48]\nsamples_per_episode: 3\nseed: 3\ndatasets:\n  - source: " + bridgeSource(t) +
		"\n    image_key: steps/observation/image\n    action_keys: [steps/action/world_vector]\n"
	plain := openYAMLPipeline(t, yaml, 0)
	t.Cleanup(plain.Close)
	aug := openYAMLPipeline(t, yaml+"augment: {crop: 0.8, rotate: 5, brightness: 0.2}\n", 0)
	t.Cleanup(aug.Close)
	if bytes.Contains(plain.info, []byte(`"augment"`)) || !bytes.Contains(aug.info, []byte(`"augment"`)) {
		t.Errorf("info.json's augment: %v without, %v with", bytes.Contains(plain.info, []byte(`"augment"`)), bytes.Contains(aug.info, []byte(`"augment"`)))
	}
	var in struct {
		Files   []string     `json:"files"`
		Augment *augmentInfo `json:"augment"`
	}
	if err := json.Unmarshal(aug.info, &in); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(in.Files, []string{"npy", "augment.npy"}) || in.Augment == nil || !slices.Equal(in.Augment.Arrays, []string{"augment"}) || len(in.Augment.Columns) != augment.NumColumns {
		t.Errorf("info.json: files %v, augment %+v", in.Files, in.Augment)
	}
	for n := range int64(2) {
		a, err := aug.BatchFiles(context.Background(), aug.Train, n)
		if err != nil {
			t.Fatal(err)
		}
		b, err := plain.BatchFiles(context.Background(), plain.Train, n)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := b[".augment.npy"]; ok || len(b) != 2 {
			t.Errorf("batch %d of the plain mix: files %v, want .npy and .json", n, slices.Sorted(maps.Keys(b)))
		}
		f := parseNPYFile(t, "augment", a[".augment.npy"])
		if f.descr != "<f4" || !slices.Equal(f.shape, []int{8, augment.NumColumns}) {
			t.Fatalf("batch %d: augment.npy is %s %v, want <f4 [8 %d]", n, f.descr, f.shape, augment.NumColumns)
		}
		for i := range 8 {
			row := [augment.NumColumns]float32(f.f32(i))
			p, err := augment.FromVector(row)
			if err != nil || p.Crop.W == 1 {
				t.Errorf("batch %d sample %d: %v (%v), want a cropped draw", n, i, row, err)
			}
		}
		if bytes.Contains(a[".json"], []byte(`"augment"`)) || bytes.Contains(b[".json"], []byte(`"augment"`)) {
			t.Errorf("batch %d: a .json records augment", n)
		}
		pf, af := parseNPYFile(t, "plain", b[".npy"]), parseNPYFile(t, "augmented", a[".npy"])
		if !bytes.Equal(a[".npy"][:len(a[".npy"])-len(af.data)], b[".npy"][:len(b[".npy"])-len(pf.data)]) || len(af.data) != len(pf.data) {
			t.Errorf("batch %d: the frames file's header or size differs from the plain mix's", n)
		}
		if bytes.Equal(a[".npy"], b[".npy"]) {
			t.Errorf("batch %d: frames as without augmentation", n)
		}
		again, err := aug.BatchFiles(context.Background(), aug.Train, n)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range []string{".npy", ".augment.npy", ".json"} {
			if !bytes.Equal(again[s], a[s]) {
				t.Errorf("batch %d %s differs when built again", n, s)
			}
		}
	}
}

// TestAugmentDatasetOverride: a dataset's own block replaces the mix's
// for its samples: kuka switched off records the identity, bridge the
// mix's draws.
func TestAugmentDatasetOverride(t *testing.T) {
	s := &config.StepSpec{Cameras: twoSlots([]int{0}), Action: config.Deltas{Steps: []int{0}}}
	yaml := "batch_size: 8\nsamples_per_episode: 2\nseed: 9\ndatasets:\n  - name: bridge\n    source: " + bridgeSource(t) +
		"\n    action_keys: " + bridgeActions + "\n  - name: kuka\n    source: " +
		filepath.Join(testkit.Testdata(t), "datasets/tiny_kuka/1.0.0") + "\n    action_keys: [steps/action]\n"
	cfg := stepConfig(t, yaml, s, bridgeCams, nil)
	cfg.Augment = &config.Augment{Spec: augment.Spec{Rotate: augment.Symmetric(10)}}
	cfg.Datasets[1].Augment = &config.Augment{}
	p, err := openStepPipeline(t, cfg, 2)
	if err != nil {
		t.Fatal(err)
	}
	identity := augment.Identity().Vector()
	seen := map[string]int{}
	for n := range p.Train.Len() {
		b := readStepBatch(t, p, n)
		for i, name := range b.meta.DatasetName {
			v := vec(t, b, "primary", i)
			if (v == identity) != (name == "kuka") {
				t.Errorf("batch %d sample %d of %s: %v", n, i, name, v)
			}
			seen[name]++
		}
	}
	if seen["bridge"] == 0 || seen["kuka"] == 0 {
		t.Fatalf("samples seen: %v", seen)
	}
}
