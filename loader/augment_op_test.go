package loader

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/oxefs/oxefs/augment"
	"github.com/oxefs/oxefs/config"
	"github.com/oxefs/oxefs/frames"
	"github.com/oxefs/oxefs/steps"
)

// invertOp is an op that exists only in this file: each (sample, camera)
// is inverted (255 − x) with probability p. It is the proof that an op
// is one description plus one registration: nothing else in the tree
// knows it.
var invertOp = augment.Op{
	Name:     "invert",
	Single:   func(p float64) augment.Range { return augment.Range{Lo: p, Hi: p} },
	OK:       func(r augment.Range) bool { return r.Lo >= 0 && r.Hi <= 1 },
	Valid:    "a probability in [0, 1], or a range [lo, hi] of them",
	Columns:  []augment.Column{{Name: "invert", Meaning: "1: every value is 255 − x; 0: none"}},
	Identity: []float32{0},
	Draw: func(r augment.Range, rand augment.Rand) (v [frames.FrameOpValues]float32) {
		if rand.Float(0) < rand.Uniform(1, r.Lo, r.Hi) {
			v[0] = 1
		}
		return v
	},
	Apply: func(f frames.Frame, v *[frames.FrameOpValues]float32) {
		for y := range f.H() {
			for x := range f.W() {
				r, g, b := f.At(x, y)
				f.Set(x, y, 255-r, 255-g, 255-b)
			}
		}
	},
}

// TestAugmentRegisteredOp registers invertOp (one call) and follows it
// through: its key parses from YAML and its domain is checked with the
// valid range named; it draws deterministically without moving the
// fused stages' draws; its column is recorded in every augment array and
// described in info.json; and it is applied to exactly the frames whose
// recorded value says so, in step batches and in pair batches (both frames
// of a pair), the same bytes with 1 worker in order and 2 in reverse.
func TestAugmentRegisteredOp(t *testing.T) {
	t.Cleanup(augment.Register(invertOp))

	t.Run("domain", func(t *testing.T) {
		for _, tc := range []struct {
			name, block, want string
		}{
			{"above 1", "  invert: 1.5\n", "line 2: augment.invert: [1.5, 1.5] is not valid; valid: a probability in [0, 1]"},
			{"reversed", "  invert: [0.8, 0.2]\n", "augment.invert: [0.8, 0.2] is not valid"},
			{"not a number", "  invert: often\n", "augment.invert"},
			{"misspelt", "  invrt: 0.5\n", "invert"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				_, err := config.Parse([]byte("augment:\n" + tc.block + bridgeStepYAML(t, "")))
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("error %v, want one containing %q", err, tc.want)
				}
			})
		}
	})

	t.Run("draw", func(t *testing.T) {
		i, _, ok := augment.LookupOp("invert")
		if !ok {
			t.Fatal("invert is not in the table")
		}
		base := augmentSpec(false)
		with := base
		with.Ops[i] = augment.Range{Lo: 0.5, Hi: 0.5}
		inverted := 0
		for n := range 64 {
			cam := augment.Camera{Slot: n % 2, Name: "primary"}
			p, q := augment.Draw(with, 7, int64(n), 3, cam), augment.Draw(with, 7, int64(n), 3, cam)
			if p != q {
				t.Fatalf("batch %d: two draws differ: %v, %v", n, p, q)
			}
			if p.Vector() != augment.Draw(base, 7, int64(n), 3, cam).Vector() {
				t.Fatalf("batch %d: the op moved the fused stages' draws", n)
			}
			row := p.Row(nil)
			if len(row) != augment.NumColumns+1 || row[augment.NumColumns] != p.Op[i][0] {
				t.Fatalf("batch %d: row %v does not end with the op's value %v", n, row, p.Op[i][0])
			}
			back, err := augment.FromRow(row)
			if err != nil || back != p {
				t.Fatalf("batch %d: FromRow(Row) = %v, %v; want %v", n, back, err, p)
			}
			inverted += int(p.Op[i][0])
		}
		if inverted == 0 || inverted == 64 {
			t.Fatalf("%d of 64 draws inverted at p = 0.5", inverted)
		}
	})

	t.Run("applied and recorded", func(t *testing.T) {
		s := func() *config.StepSpec {
			return &config.StepSpec{Cameras: twoSlots([]int{-1, 0}), Action: config.Deltas{Steps: []int{0, 1}}}
		}
		cfg := stepConfig(t, "augment:\n  invert: 0.5\n"+bridgeStepYAML(t, ""), s(), bridgeCams)
		p, err := openStepPipeline(t, cfg, 2)
		if err != nil {
			t.Fatal(err)
		}
		plainP, err := openStepPipeline(t, stepConfig(t, bridgeStepYAML(t, ""), s(), bridgeCams), 2)
		if err != nil {
			t.Fatal(err)
		}
		var in struct {
			Augment *augmentInfo `json:"augment"`
		}
		if err := json.Unmarshal(p.info, &in); err != nil {
			t.Fatal(err)
		}
		if in.Augment == nil || len(in.Augment.Columns) != augment.NumColumns+1 || in.Augment.Columns[augment.NumColumns] != (augmentColumn{invertOp.Columns[0].Name, invertOp.Columns[0].Meaning}) {
			t.Fatalf("info.json's augment does not describe the op's column: %+v", in.Augment)
		}
		inverted, kept := 0, 0
		for n := range p.Train.Len() {
			b, plain := readStepBatch(t, p, n), readStepBatch(t, plainP, n)
			if !slices.Equal(b.meta.EpisodeID, plain.meta.EpisodeID) {
				t.Fatalf("batch %d: the op changed the samples", n)
			}
			for i := range b.meta.EpisodeID {
				for _, slot := range []string{"primary", "wrist"} {
					a := b.arrays[steps.AugmentArray(slot)]
					if !slices.Equal(a.shape, []int{len(b.meta.EpisodeID), augment.NumColumns + 1}) {
						t.Fatalf("batch %d: %s is %v", n, steps.AugmentArray(slot), a.shape)
					}
					row := a.f32(i)
					if _, err := augment.FromRow(row); err != nil {
						t.Fatalf("batch %d sample %d %s: %v", n, i, slot, err)
					}
					got, want := b.arrays["observation.images."+slot].bytes(i), plain.arrays["observation.images."+slot].bytes(i)
					switch row[augment.NumColumns] {
					case 1:
						inverted++
						want = slices.Clone(want)
						for j := range want {
							want[j] = 255 - want[j]
						}
					case 0:
						kept++
					default:
						t.Fatalf("batch %d sample %d %s: invert recorded as %v", n, i, slot, row[augment.NumColumns])
					}
					if !bytes.Equal(got, want) {
						t.Errorf("batch %d sample %d %s: frames are not the unaugmented ones with invert %v applied", n, i, slot, row[augment.NumColumns])
					}
				}
			}
		}
		if inverted == 0 || kept == 0 {
			t.Fatalf("%d inverted and %d kept cameras: the test saw nothing to compare", inverted, kept)
		}
		one, err := openStepPipeline(t, stepConfig(t, "augment:\n  invert: 0.5\n"+bridgeStepYAML(t, ""), s(), bridgeCams), 1)
		if err != nil {
			t.Fatal(err)
		}
		inOrder, reversed := trainBatches(t, one, false), trainBatches(t, p, true)
		for n := range inOrder {
			if !bytes.Equal(inOrder[n], reversed[n]) {
				t.Fatalf("batch %d differs between 1 worker in order and 2 in reverse", n)
			}
		}
	})

	t.Run("pairs", func(t *testing.T) {
		yaml := "batch_size: 8\nimage_size: [32, 48]\nsamples_per_episode: 3\nseed: 3\ndatasets:\n  - source: " + bridgeSource(t) +
			"\n    image_key: steps/observation/image\n    action_keys: [steps/action/world_vector]\n"
		plain := openYAMLPipeline(t, yaml, 0)
		t.Cleanup(plain.Close)
		aug := openYAMLPipeline(t, yaml+"augment: {invert: 0.5}\n", 0)
		t.Cleanup(aug.Close)
		inverted, kept := 0, 0
		for n := range int64(2) {
			a, err := aug.BatchFiles(context.Background(), aug.Train, n)
			if err != nil {
				t.Fatal(err)
			}
			b, err := plain.BatchFiles(context.Background(), plain.Train, n)
			if err != nil {
				t.Fatal(err)
			}
			f := parseNPYFile(t, "augment", a[".augment.npy"])
			if !slices.Equal(f.shape, []int{8, augment.NumColumns + 1}) {
				t.Fatalf("batch %d: augment.npy is %v, want [8 %d]", n, f.shape, augment.NumColumns+1)
			}
			af, pf := parseNPYFile(t, "augmented", a[".npy"]), parseNPYFile(t, "plain", b[".npy"])
			per := len(pf.data) / 8
			for i := range 8 {
				got, want := af.data[i*per:(i+1)*per], slices.Clone(pf.data[i*per:(i+1)*per])
				if f.f32(i)[augment.NumColumns] == 1 {
					inverted++
					for j := range want {
						want[j] = 255 - want[j]
					}
				} else {
					kept++
				}
				if !bytes.Equal(got, want) {
					t.Errorf("batch %d sample %d: both frames are not the plain ones with invert %v applied", n, i, f.f32(i)[augment.NumColumns])
				}
			}
		}
		if inverted == 0 || kept == 0 {
			t.Fatalf("%d inverted and %d kept samples: the test saw nothing to compare", inverted, kept)
		}
	})
}
