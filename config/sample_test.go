package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/oxefs/oxefs/episode"
)

// stepsMix is the contract's example: two slots with history, state
// history and a chunk of 50, over a LeRobot-like dataset with cameras and
// fps.
const stepsMix = `seed: 0
batch_size: 64
samples_per_episode: 0
layout: BFHWC
sample:
  drop_last: 7
  cameras:
    primary: {size: [256, 256], steps: [-1, 0]}
    wrist:   {size: [128, 128], steps: [-1, 0]}
  state:  {steps: [-1, 0]}
  action: {steps: "0:50"}
datasets:
  - name: aloha
    source: /data/aloha
    cameras: {primary: observation.images.top, wrist: observation.images.wrist}
    fps: 50
    action_keys: [action]
    state_key: observation.state
  - name: bridge
    source: /data/bridge/1.0.0
    weight: 0.5
`

func seq(from, to int) []int {
	var out []int
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

// TestParseSample: the contract's example parses to the sample block it
// describes, with step mode's defaults.
func TestParseSample(t *testing.T) {
	c, err := Parse([]byte(stepsMix))
	if err != nil {
		t.Fatal(err)
	}
	want := &StepSpec{
		Cameras: []CameraSlot{
			{Name: "primary", Size: [2]int{256, 256}, Deltas: Deltas{Steps: []int{-1, 0}}},
			{Name: "wrist", Size: [2]int{128, 128}, Deltas: Deltas{Steps: []int{-1, 0}}},
		},
		State:    Deltas{Steps: []int{-1, 0}},
		Action:   Deltas{Steps: seq(0, 50)},
		DropLast: 7,
	}
	if !reflect.DeepEqual(c.Steps, want) {
		t.Fatalf("sample:\n got %+v\nwant %+v", c.Steps, want)
	}
	a, b := &c.Datasets[0], &c.Datasets[1]
	if !reflect.DeepEqual(a.Cameras, map[string]string{"primary": "observation.images.top", "wrist": "observation.images.wrist"}) || a.FPS != 50 {
		t.Errorf("aloha: cameras %v fps %g", a.Cameras, a.FPS)
	}
	if b.Cameras != nil || b.FPS != 0 {
		t.Errorf("bridge: cameras %#v fps %g, want none", b.Cameras, b.FPS)
	}
	for _, d := range c.Datasets {
		if d.Offset != (Offset{}) || c.PlanOffset(&d) != FixedOffset(7) {
			t.Errorf("%s: offset %v, plan offset %v; want none and 7", d.Name, d.Offset, c.PlanOffset(&d))
		}
	}
	if got := c.SlotNames(); !slices.Equal(got, []string{"primary", "wrist"}) {
		t.Errorf("slots %v", got)
	}
	if l := c.Line("sample.action"); l != 11 {
		t.Errorf("sample.action on line %d, want 11", l)
	}
	if l := a.Line("cameras.wrist"); l != 15 {
		t.Errorf("aloha's cameras.wrist on line %d, want 15", l)
	}
}

// TestParseSampleForms: every accepted form of the block and its defaults.
func TestParseSampleForms(t *testing.T) {
	const ds = "datasets:\n  - {name: a, source: /x}\n"
	for _, tc := range []struct {
		name string
		yaml string
		want StepSpec
	}{
		{"empty block", "sample: {}\n" + ds, StepSpec{State: Deltas{Steps: []int{0}}, Action: Deltas{Steps: []int{0}}}},
		{"slot defaults from a later image_size", "sample:\n  cameras:\n    primary:\n    wrist: {}\nimage_size: [96, 128]\n" + ds, StepSpec{
			Cameras: []CameraSlot{{Name: "primary", Size: [2]int{96, 128}, Deltas: Deltas{Steps: []int{0}}}, {Name: "wrist", Size: [2]int{96, 128}, Deltas: Deltas{Steps: []int{0}}}},
			State:   Deltas{Steps: []int{0}}, Action: Deltas{Steps: []int{0}}}},
		{"slot order is the config's", "sample:\n  cameras: {z: {}, a: {}, m: {}}\n" + ds, StepSpec{
			Cameras: []CameraSlot{{Name: "z", Size: [2]int{256, 256}, Deltas: Deltas{Steps: []int{0}}}, {Name: "a", Size: [2]int{256, 256}, Deltas: Deltas{Steps: []int{0}}},
				{Name: "m", Size: [2]int{256, 256}, Deltas: Deltas{Steps: []int{0}}}},
			State: Deltas{Steps: []int{0}}, Action: Deltas{Steps: []int{0}}}},
		{"slices", "sample:\n  cameras: {p: {steps: -1:1}}\n  state: {steps: \"0:16:4\"}\n  action: {steps: ' 5 : 0 : -2 '}\n" + ds, StepSpec{
			Cameras: []CameraSlot{{Name: "p", Size: [2]int{256, 256}, Deltas: Deltas{Steps: []int{-1, 0}}}},
			State:   Deltas{Steps: []int{0, 4, 8, 12}}, Action: Deltas{Steps: []int{5, 3, 1}}}},
		{"one integer, a list in any order", "sample:\n  state: {steps: -3}\n  action: {steps: [4, 0, 0, -2]}\n" + ds, StepSpec{
			State: Deltas{Steps: []int{-3}}, Action: Deltas{Steps: []int{4, 0, 0, -2}}}},
		{"seconds", "sample:\n  cameras: {p: {seconds: [-0.1, 0]}}\n  state: {seconds: -0.0}\n  action: {seconds: [0, 0.02, 1e-1, 1]}\n" + ds, StepSpec{
			Cameras: []CameraSlot{{Name: "p", Size: [2]int{256, 256}, Deltas: Deltas{Seconds: []float64{-0.1, 0}}}},
			State:   Deltas{Seconds: []float64{0}}, Action: Deltas{Seconds: []float64{0, 0.02, 0.1, 1}}}},
		{"null keys take the defaults", "sample:\n  drop_last:\n  cameras:\n  state:\n  action: {steps: }\n" + ds, StepSpec{
			State: Deltas{Steps: []int{0}}, Action: Deltas{Steps: []int{0}}}},
		{"the list form the config as loaded writes", `{"sample": {"cameras": [{"name": "w", "size": [64, 48], "deltas": {"seconds": [0.5]}}, {"name": "p"}], "drop_last": 3}, "datasets": [{"name": "a", "source": "/x"}]}`, StepSpec{
			Cameras: []CameraSlot{{Name: "w", Size: [2]int{64, 48}, Deltas: Deltas{Seconds: []float64{0.5}}}, {Name: "p", Size: [2]int{256, 256}, Deltas: Deltas{Steps: []int{0}}}},
			State:   Deltas{Steps: []int{0}}, Action: Deltas{Steps: []int{0}}, DropLast: 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(tc.yaml))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(*c.Steps, tc.want) {
				t.Fatalf("\n got %+v\nwant %+v", *c.Steps, tc.want)
			}
		})
	}
}

// TestParseCamerasForms: a dataset's cameras absent (its only image goes
// to the first slot), empty (no camera) or a mapping, and its fps.
func TestParseCamerasForms(t *testing.T) {
	c, err := Parse([]byte("sample: {cameras: {p: {}, w: {}}}\ndatasets:\n  - {name: a, source: /x}\n  - {name: b, source: /x, cameras: {}}\n" +
		"  - {name: c, source: /x, cameras: {w: wrist}, fps: 29.97}\n  - {name: d, source: /x, fps: 10}\n"))
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []map[string]string{nil, {}, {"w": "wrist"}, nil} {
		if got := c.Datasets[i].Cameras; !reflect.DeepEqual(got, want) || (got == nil) != (want == nil) {
			t.Errorf("%s: cameras %#v, want %#v", c.Datasets[i].Name, got, want)
		}
	}
	if c.Datasets[2].FPS != 29.97 || c.Datasets[3].FPS != 10 {
		t.Errorf("fps %g, %g", c.Datasets[2].FPS, c.Datasets[3].FPS)
	}
}

func TestParseSteps(t *testing.T) {
	for _, tc := range []struct {
		s    string
		want []int
		err  string
	}{
		{"0:50", seq(0, 50), ""},
		{"-1:1", []int{-1, 0}, ""},
		{"-16:1:1", seq(-16, 1), ""},
		{"0:16:4", []int{0, 4, 8, 12}, ""},
		{"0:15:4", []int{0, 4, 8, 12}, ""},
		{"0:17:4", []int{0, 4, 8, 12, 16}, ""},
		{"3:0:-1", []int{3, 2, 1}, ""},
		{"0:1:", []int{0}, ""},
		{"-1048576:-1048575", []int{-1048576}, ""},
		{"0:4096", seq(0, 4096), ""},
		{"0", nil, `"0": not a slice; steps must be a list of integers or a slice "start:stop[:step]" (stop excluded)`},
		{"0:1:2:3", nil, "not a slice"},
		{":50", nil, `"" is not an integer`},
		{"a:b", nil, `"a" is not an integer`},
		{"0:1.5", nil, `"1.5" is not an integer`},
		{"0:10:0", nil, "the step must not be 0"},
		{"5:0", nil, "the slice is empty"},
		{"0:5:-1", nil, "the slice is empty"},
		{"0:0", nil, "the slice is empty"},
		{"0:4097", nil, "4097 steps, more than 4096"},
		{"0:1048577", nil, "1048577 is beyond ±1048576"},
		{"-99999999999999999999:0", nil, "is not an integer"},
	} {
		got, err := ParseSteps(tc.s)
		switch {
		case tc.err == "" && (err != nil || !slices.Equal(got, tc.want)):
			t.Errorf("ParseSteps(%q) = %v, %v; want %v", tc.s, got, err, tc.want)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("ParseSteps(%q) = %v, %v; want an error containing %q", tc.s, got, err, tc.err)
		}
	}
}

// TestStepsText: deltas at a fixed positive stride are written as the
// slice that ParseSteps reads back to them; others as a list, cut short
// past 8.
func TestStepsText(t *testing.T) {
	for _, tc := range []struct {
		steps []int
		want  string
	}{
		{seq(0, 100), `"0:100"`},
		{[]int{-1, 0}, `"-1:1"`},
		{[]int{0, 4, 8, 12}, `"0:13:4"`},
		{[]int{-4, -2, 0, 2, 4}, `"-4:5:2"`},
		{[]int{5}, "[5]"},
		{nil, "[]"},
		{[]int{3, 2, 1}, "[3, 2, 1]"},
		{[]int{0, 1, 5}, "[0, 1, 5]"},
		{[]int{0, 1, 2, 3, 4, 5, 6, 8, 9, 10}, "[0, 1, 2, …, 10] (10 deltas)"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			got := StepsText(tc.steps)
			if got != tc.want {
				t.Fatalf("StepsText(%v) = %s, want %s", tc.steps, got, tc.want)
			}
			if slice, err := strconv.Unquote(got); err == nil {
				if back, err := ParseSteps(slice); err != nil || !slices.Equal(back, tc.steps) {
					t.Errorf("ParseSteps(%s) = %v, %v; want %v back", got, back, err, tc.steps)
				}
			}
		})
	}
}

// TestParseSampleErrors: each problem of the sample block, the step-mode
// rules and the pair-mode rules for step keys, with its line, dataset,
// field and the valid choices.
func TestParseSampleErrors(t *testing.T) {
	const ds = "datasets:\n  - name: a\n    source: /x\n"
	const smp = "sample:\n  cameras: {primary: {}, wrist: {size: [128, 128]}}\n"
	many := make([]string, 4097)
	for i := range many {
		many[i] = "0"
	}
	for _, tc := range []struct {
		name string
		yaml string
		want []string
	}{
		// Pair-mode keys in step mode, and step keys in pair mode.
		{"image_key in step mode", smp + ds + "    image_key: steps/observation/image\n",
			[]string{"line 6", `dataset "a"`, "image_key: is for frame pairs; with `sample` map the dataset's image keys to the camera slots (primary, wrist) with cameras: {primary: <image key>, …}"}},
		{"offset in step mode", smp + ds + "    offset: 3\n", []string{"line 6", `dataset "a"`, "offset: is for frame pairs", "sample.drop_last"}},
		{"offset 0 in step mode", smp + ds + "    offset: 0\n", []string{"line 6", "offset: is for frame pairs"}},
		{"pair_frames in step mode", "pair_frames: endpoints\n" + smp + ds, []string{"line 1", "pair_frames: is for frame pairs", "sample.cameras.<slot>.steps"}},
		{"stride in step mode", "stride: 2\n" + smp + ds, []string{"line 1", "stride: is for frame pairs", `steps: "-8:1:4"`}},
		{"num_frames in step mode", "num_frames: 3\n" + smp + ds, []string{"line 1", "num_frames: is for frame pairs", "list a slot's steps"}},
		{"samples_per_episode in step mode", "samples_per_episode: -1\n" + smp + ds, []string{"samples_per_episode: must be in 0..1048576 (0 = every t of every episode), got -1"}},
		{"cameras in pair mode", ds + "    cameras: {primary: image}\n", []string{"line 4", `dataset "a"`, "cameras: is for step samples: add a `sample` block", "image_key"}},
		{"fps in pair mode", ds + "    fps: 10\n", []string{"line 4", `dataset "a"`, "fps: is for step samples"}},
		// The block.
		{"sample without a value", "sample:\n" + ds, []string{"line 1", "sample: has no value: write `sample: {}`"}},
		{"sample scalar", "sample: 3\n" + ds, []string{"line 1", "sample: must be a mapping", `got "3"`}},
		{"unknown sample key", "sample: {drop_lats: 2}\n" + ds, []string{"line 1", `unknown key "drop_lats" (did you mean drop_last?); valid keys: drop_last, cameras, state, action`}},
		{"drop_last negative", "sample:\n  drop_last: -1\n" + ds, []string{"line 2", "sample.drop_last: must be in 0..1048576", "got -1"}},
		{"drop_last huge", "sample:\n  drop_last: 2000000\n" + ds, []string{"line 2", "sample.drop_last: must be in 0..1048576"}},
		{"drop_last text", "sample:\n  drop_last: seven\n" + ds, []string{"line 2", "sample.drop_last: must be an integer"}},
		{"cameras a list of names", "sample:\n  cameras: [primary]\n" + ds, []string{"line 2", "sample.cameras: each slot of the list must be a mapping"}},
		{"cameras scalar", "sample:\n  cameras: primary\n" + ds, []string{"line 2", "sample.cameras: must be a mapping of camera slots"}},
		{"slot scalar", "sample:\n  cameras: {primary: 256}\n" + ds, []string{"line 2", "sample.cameras.primary: must be a mapping such as {size: [224, 224], steps: [-1, 0]}"}},
		{"slot decode unknown", "sample:\n  cameras:\n    primary: {decode: gpus}\n" + ds, []string{"line 3", "sample.cameras.primary.decode", `"gpus"`, "exact, fast, gpu"}},
		{"slot decode gpu with BCFHW", "layout: BCFHW\nsample:\n  cameras:\n    - {name: primary, decode: gpu}\n" + ds, []string{"line 4", "sample.cameras.primary.decode: decode: gpu serves each compressed frame in the place of its pixels", "use layout: BFHWC"}},
		{"mix decode gpu with BCFHW", "layout: BCFHW\ndecode: gpu\n" + smp + ds, []string{"line 2", "decode: decode: gpu serves", "use layout: BFHWC"}},
		{"pair decode gpu with BCFHW", "layout: BCFHW\ndecode: gpu\n" + ds, []string{"line 2", "decode: decode: gpu serves"}},
		{"unknown slot key", "sample:\n  cameras:\n    primary: {sizes: [1, 2]}\n" + ds, []string{"line 3", `unknown key "sizes" (did you mean size?); valid keys: size, steps, seconds`}},
		{"slot name with a dash", "sample:\n  cameras:\n    left-wrist: {}\n" + ds, []string{"line 3", `sample.cameras: slot name "left-wrist" must be 1 to 64 letters, digits or _`}},
		{"slot name too long", "sample:\n  cameras: {" + strings.Repeat("a", 65) + ": {}}\n" + ds, []string{"line 2", "must be 1 to 64 letters"}},
		{"slot given twice", "sample:\n  cameras:\n    p: {}\n    p: {}\n" + ds, []string{"line 4", `sample.cameras: slot "p" given twice (first on line 3)`}},
		{"listed slot given twice", `{"sample": {"cameras": [{"name": "p"}, {"name": "p"}]}, "datasets": [{"name": "a", "source": "/x"}]}`, []string{`slot "p" given twice`}},
		{"listed slot without a name", `{"sample": {"cameras": [{"size": [1, 1]}]}, "datasets": [{"name": "a", "source": "/x"}]}`, []string{"sample.cameras: each slot of the list needs a name"}},
		{"17 slots", "sample:\n  cameras: {" + strings.Repeat("a: {}, ", 0) + slotList(17) + "}\n" + ds, []string{"line 2", "sample.cameras: at most 16 camera slots, got 17"}},
		{"slot size zero", "sample:\n  cameras:\n    p: {size: [0, 64]}\n" + ds, []string{"line 3", "sample.cameras.p.size: must be [height, width], each in 1..8192, got [0 64]"}},
		{"slot size one number", "sample:\n  cameras:\n    p: {size: 64}\n" + ds, []string{"line 3", "sample.cameras.p.size: must be a list of two integers [height, width]"}},
		{"both steps and seconds", "sample:\n  action:\n    steps: [0]\n    seconds: [0.0]\n" + ds, []string{"line 4", "sample.action: give its deltas as steps or as seconds, not both (steps on line 3)"}},
		{"both in a slot", "sample:\n  cameras:\n    p: {seconds: [0], steps: [0]}\n" + ds, []string{"line 3", "sample.cameras.p: give its deltas as steps or as seconds, not both"}},
		{"empty steps", "sample:\n  state: {steps: []}\n" + ds, []string{"line 2", "sample.state: has no deltas: give at least one"}},
		{"empty seconds", "sample:\n  action: {seconds: []}\n" + ds, []string{"line 2", "sample.action: has no deltas"}},
		{"empty slice", "sample:\n  action: {steps: \"50:0\"}\n" + ds, []string{"line 2", `sample.action.steps: "50:0": the slice is empty`}},
		{"zero step", "sample:\n  action: {steps: \"0:50:0\"}\n" + ds, []string{"line 2", "sample.action.steps:", "the step must not be 0"}},
		{"not a slice", "sample:\n  action: {steps: next}\n" + ds, []string{"line 2", `sample.action.steps: "next": not a slice; steps must be a list of integers or a slice "start:stop[:step]"`}},
		{"too many steps", "sample:\n  action: {steps: [" + strings.Join(many, ", ") + "]}\n" + ds, []string{"line 2", "sample.action: at most 4096 deltas, got 4097"}},
		{"too many in a slice", "sample:\n  action: {steps: \"-1:4096\"}\n" + ds, []string{"line 2", "4097 steps, more than 4096"}},
		{"step beyond the bound", "sample:\n  state: {steps: [0, -2000000]}\n" + ds, []string{"line 2", "sample.state: step -2000000 is beyond ±1048576"}},
		{"steps of floats", "sample:\n  state: {steps: [0.5]}\n" + ds, []string{"line 2", "sample.state.steps: must be a list of integers or a slice"}},
		{"steps mapping", "sample:\n  state: {steps: {a: 1}}\n" + ds, []string{"sample.state.steps: must be a list of integers", "got a mapping"}},
		{"seconds of text", "sample:\n  action: {seconds: [zero]}\n" + ds, []string{"line 2", "sample.action.seconds: must be a list of numbers"}},
		{"seconds infinite", "sample:\n  action: {seconds: [.inf]}\n" + ds, []string{"line 2", "sample.action: +Inf seconds is not a number within ±1048576"}},
		{"deltas a list", "sample:\n  action: [0, 1]\n" + ds, []string{"line 2", "sample.action: must be a mapping such as {steps: [-1, 0]}", "got a list"}},
		{"unknown deltas key", "sample:\n  action: {step: [0]}\n" + ds, []string{`unknown key "step" (did you mean steps?); valid keys: steps, seconds`}},
		// A dataset's cameras and fps.
		{"unknown slot", smp + ds + "    cameras: {primery: observation.images.top}\n",
			[]string{"line 6", `dataset "a"`, `cameras: no camera slot "primery" in sample.cameras (did you mean primary?); the slots: primary, wrist`}},
		{"a slot and no slots", "sample: {}\n" + ds + "    cameras: {primary: top}\n", []string{"line 5", `no camera slot "primary" in sample.cameras; the slots: none (sample.cameras is empty)`}},
		{"empty image key", smp + ds + "    cameras: {primary: \"\"}\n", []string{"line 6", "cameras: slot primary: the image key is empty"}},
		{"slot without a key", smp + ds + "    cameras:\n      primary:\n", []string{"line 7", "cameras: slot primary: no image key"}},
		{"image key a list", smp + ds + "    cameras: {primary: [a]}\n", []string{"line 6", "cameras.primary: must be a string"}},
		{"cameras a list", smp + ds + "    cameras: [primary]\n", []string{"line 6", "cameras: must be a mapping of camera slots to image keys"}},
		{"camera slot twice", smp + ds + "    cameras:\n      primary: a\n      primary: b\n", []string{"line 8", `cameras: slot "primary" given twice (first on line 7)`}},
		{"fps zero", smp + ds + "    fps: 0\n", []string{"line 6", "fps: must be a number of frames per second in (0, 100000], got 0"}},
		{"fps negative", smp + ds + "    fps: -30\n", []string{"fps: must be a number of frames per second", "got -30"}},
		{"fps infinite", smp + ds + "    fps: .inf\n", []string{"fps: must be a number of frames per second", "got +Inf"}},
		{"fps text", smp + ds + "    fps: fast\n", []string{"line 6", "fps: must be a number", `got "fast"`}},
		{"not a whole frame", "sample:\n  action: {seconds: [0, 0.013]}\n" + ds + "    fps: 50\n",
			[]string{"line 2", `dataset "a"`, "sample.action: delta 0.013s is 0.65 frames at 50 fps, not a whole frame (within 0.0001s) (the dataset's fps is 50)"}},
		{"seconds beyond the bound at fps", "sample:\n  cameras: {p: {seconds: [100000]}}\n" + ds + "    fps: 100\n",
			[]string{"line 2", `dataset "a"`, "sample.cameras.p: delta 100000s is 1e+07 frames at 100 fps, beyond ±1048576"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.yaml))
			if err == nil {
				t.Fatal("parsed")
			}
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("%T is not a *ConfigError: %v", err, err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not say %q:\n%v", w, err)
				}
			}
		})
	}
}

func slotList(n int) string {
	s := make([]string, n)
	for i := range s {
		s[i] = fmt.Sprintf("s%d: {}", i)
	}
	return strings.Join(s, ", ")
}

// TestDecodeOf: a slot's decode mode is its own where it gives one (in
// either form of the cameras), else the mix's; pairs have the mix's.
func TestDecodeOf(t *testing.T) {
	const ds = "datasets: [{name: a, source: /x}]\n"
	for _, tc := range []struct {
		name, yaml string
		want       map[string]DecodeMode
	}{
		{"mix gpu, one slot exact", "decode: gpu\nsample:\n  cameras: {p: {}, w: {decode: exact}}\n",
			map[string]DecodeMode{"p": DecodeGPU, "w": DecodeExact}},
		{"list form, slot gpu", "sample:\n  cameras:\n    - {name: p, decode: gpu}\n    - {name: w}\n",
			map[string]DecodeMode{"p": DecodeGPU, "w": DecodeExact}},
		{"fast mix, slot gpu", "decode: fast\nsample:\n  cameras: {p: {decode: gpu}, w: {}}\n",
			map[string]DecodeMode{"p": DecodeGPU, "w": DecodeFast}},
		{"pairs", "decode: gpu\n", map[string]DecodeMode{"": DecodeGPU}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(tc.yaml + ds))
			if err != nil {
				t.Fatal(err)
			}
			for slot, want := range tc.want {
				if got := c.DecodeOf(slot); got != want {
					t.Errorf("slot %q: decode %v, want %v", slot, got, want)
				}
			}
			if got := DecodeGPU.Pixels(); got != DecodeExact {
				t.Errorf("gpu's pixels are %v, want exact", got)
			}
		})
	}
}

// TestParseSampleOneProblemEach: a value that does not decode is reported
// once, not again by the checks that follow.
func TestParseSampleOneProblemEach(t *testing.T) {
	for _, y := range []string{
		"sample:\n  cameras: {p: {size: [a, b]}}\n",
		"sample:\n  action: {steps: \"5:0\"}\n",
		"sample:\n  action: {steps: [0], seconds: [0]}\n",
		"sample:\n  state: {seconds: [x]}\n",
		"image_size: [0, 5]\nsample:\n  cameras: {p: {}}\n",
	} {
		_, err := Parse([]byte(y + "datasets: [{name: a, source: /x}]\n"))
		var es ConfigErrors
		if !errors.As(err, &es) || len(es) != 1 {
			t.Errorf("%q: want one problem, got %v", y, err)
		}
	}
}

// TestValidateSample: a sample block built in code is checked by the same
// rules.
func TestValidateSample(t *testing.T) {
	c, err := Parse([]byte("datasets:\n  - {name: a, source: /x}\n"))
	if err != nil {
		t.Fatal(err)
	}
	c.Steps = &StepSpec{
		Cameras: []CameraSlot{
			{Name: "p", Size: [2]int{64, 64}, Deltas: Deltas{Steps: []int{0}, Seconds: []float64{0}}},
			{Name: "p", Size: [2]int{64, 9000}, Deltas: Deltas{Steps: []int{0}}},
			{Name: "a b", Size: [2]int{64, 64}, Deltas: Deltas{Steps: []int{0}}},
		},
		State:    Deltas{},
		Action:   Deltas{Steps: []int{0}},
		DropLast: -2,
	}
	c.Datasets[0].Cameras = map[string]string{"q": "img"}
	err = c.Validate()
	for _, w := range []string{
		"sample.drop_last: must be in 0..1048576", `sample.cameras: slot "p" given twice`, "sample.cameras.p.size: must be [height, width], each in 1..8192, got [64 9000]",
		`slot name "a b" must be`, "sample.cameras.p: give its deltas as steps or as seconds, not both", "sample.state: has no deltas",
		`dataset "a": offset: is for frame pairs`, `cameras: no camera slot "q" in sample.cameras (did you mean p?); the slots: p, p, a b`,
	} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("error does not say %q:\n%v", w, err)
		}
	}
	c.Steps, c.Datasets[0].Offset, c.Datasets[0].FPS = nil, FixedOffset(1), 25
	err = c.Validate()
	for _, w := range []string{"cameras: is for step samples", "fps: is for step samples"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("pair mode: error does not say %q:\n%v", w, err)
		}
	}
}

// TestPlanOffset: step mode plans with a fixed offset of drop_last, so an
// episode of L steps has L−drop_last values of t (0 drops nothing); pair
// mode with the dataset's offset.
func TestPlanOffset(t *testing.T) {
	for _, tc := range []struct {
		yaml   string
		want   Offset
		starts int // of an episode of 10 steps
	}{
		{"sample: {}\ndatasets: [{name: a, source: /x}]\n", FixedOffset(0), 10},
		{"sample: {drop_last: 7}\ndatasets: [{name: a, source: /x}]\n", FixedOffset(7), 3},
		{"sample: {drop_last: 10}\ndatasets: [{name: a, source: /x}]\n", FixedOffset(10), 0},
		{"datasets: [{name: a, source: /x, offset: [2, 5]}]\n", Offset{2, 5}, 8},
		{"datasets: [{name: a, source: /x}]\n", FixedOffset(1), 9},
	} {
		c, err := Parse([]byte(tc.yaml))
		if err != nil {
			t.Fatal(err)
		}
		if o := c.PlanOffset(&c.Datasets[0]); o != tc.want || o.ValidStarts(10) != tc.starts {
			t.Errorf("%q: plan offset %v with %d starts in 10 steps, want %v and %d", tc.yaml, o, o.ValidStarts(10), tc.want, tc.starts)
		}
	}
}

// TestStepDeltas: deltas resolved per dataset, through the metadata's fps
// or the config's, and every problem named.
func TestStepDeltas(t *testing.T) {
	const mix = `sample:
  cameras:
    primary: {seconds: [-0.1, 0.0]}
    wrist: {steps: [0]}
  state: {seconds: [-0.1, 0]}
  action: {steps: "0:4"}
datasets:
  - {name: lerobot, source: /l}
  - {name: rlds, source: /r, fps: 10}
  - {name: other, source: /o, fps: 30}
`
	c, err := Parse([]byte(mix))
	if err != nil {
		t.Fatal(err)
	}
	want := StepDeltas{Slots: map[string][]int{"primary": {-1, 0}, "wrist": {0}}, State: []int{-1, 0}, Action: []int{0, 1, 2, 3}}
	for _, tc := range []struct {
		d    int
		meta float64
		want StepDeltas
		err  []string
	}{
		{0, 10, want, nil},
		{1, 0, want, nil},
		{2, 30, StepDeltas{Slots: map[string][]int{"primary": {-3, 0}, "wrist": {0}}, State: []int{-3, 0}, Action: []int{0, 1, 2, 3}}, nil},
		{2, 0, StepDeltas{Slots: map[string][]int{"primary": {-3, 0}, "wrist": {0}}, State: []int{-3, 0}, Action: []int{0, 1, 2, 3}}, nil},
		{0, 0, StepDeltas{}, []string{"line 8", `dataset "lerobot"`, "fps: deltas in seconds (sample.cameras.primary, sample.state) need a frame rate, and the dataset's metadata has none: set fps"}},
		{1, 15, StepDeltas{}, []string{"line 9", `dataset "rlds"`, "fps: is 10, but the dataset's metadata says 15 frames per second: leave fps out"}},
		{0, 25, StepDeltas{}, []string{"2 problems", "line 3", `dataset "lerobot": sample.cameras.primary: delta -0.1s is -2.5 frames at 25 fps, not a whole frame`, "line 5", "sample.state: delta -0.1s"}},
	} {
		d := &c.Datasets[tc.d]
		got, err := c.StepDeltas(d, tc.meta)
		if tc.err == nil {
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("%s at %g fps: %+v, %v; want %+v", d.Name, tc.meta, got, err, tc.want)
			}
			continue
		}
		var ce *ConfigError
		if !errors.As(err, &ce) {
			t.Errorf("%s at %g fps: %v is not a *ConfigError", d.Name, tc.meta, err)
			continue
		}
		for _, w := range tc.err {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s at %g fps: error does not say %q:\n%v", d.Name, tc.meta, w, err)
			}
		}
	}
	// The deltas are the caller's to keep: changing them changes no config.
	got, err := c.StepDeltas(&c.Datasets[1], 0)
	if err != nil {
		t.Fatal(err)
	}
	got.Action[0], got.Slots["wrist"][0] = 99, 99
	if c.Steps.Action.Steps[0] != 0 || c.Steps.Cameras[1].Deltas.Steps[0] != 0 {
		t.Error("StepDeltas shares the config's slices")
	}
	if b, _ := json.Marshal(want); string(b) != `{"slots":{"primary":[-1,0],"wrist":[0]},"state":[-1,0],"action":[0,1,2,3]}` {
		t.Errorf("JSON %s", b)
	}
	pair, _ := Parse([]byte("datasets: [{name: a, source: /x}]\n"))
	if _, err := pair.StepDeltas(&pair.Datasets[0], 10); err == nil {
		t.Error("StepDeltas of a pair-mode config")
	}
}

// stepFeatures are a dataset's features with one image, for the first
// slot.
var stepFeatures = []Feature{
	{Key: "observation.images.top", Kind: episode.KindImage, DType: "uint8", Shape: []int{480, 640, 3}, PerStep: true},
	{Key: "observation.state", Kind: episode.KindTensor, DType: "float32", Shape: []int{14}, PerStep: true},
	{Key: "action", Kind: episode.KindTensor, DType: "float32", Shape: []int{14}, PerStep: true},
}

// TestCheckFeaturesSteps: in step mode each slot's image key is checked
// against the dataset's images, and a dataset of several images must map
// them.
func TestCheckFeaturesSteps(t *testing.T) {
	const smp = "sample:\n  cameras: {primary: {}, wrist: {size: [128, 128]}}\n"
	for _, tc := range []struct {
		name  string
		keys  string
		feats []Feature
		want  map[string]string
		err   []string
	}{
		{"mapped", "    cameras: {primary: steps/observation/image, wrist: steps/observation/wrist_image}\n", bridgeFeatures,
			map[string]string{"primary": "steps/observation/image", "wrist": "steps/observation/wrist_image"}, nil},
		{"one slot of two", "    cameras: {wrist: steps/observation/wrist_image}\n", bridgeFeatures, map[string]string{"wrist": "steps/observation/wrist_image"}, nil},
		{"no camera", "    cameras: {}\n", bridgeFeatures, map[string]string{}, nil},
		{"the only image goes first", "", stepFeatures, map[string]string{"primary": "observation.images.top"}, nil},
		{"no image at all", "", stepFeatures[1:], map[string]string{}, nil},
		{"several images and no cameras", "", bridgeFeatures, nil,
			[]string{"line 4", `dataset "bridge"`, "cameras: required: the dataset has 2 image features (steps/observation/image, steps/observation/wrist_image); map them to the slots (primary, wrist) with cameras: {<slot>: <image key>}"}},
		{"unknown key", "    cameras:\n      primary: steps/observation/image\n      wrist: steps/observation/rgb\n", bridgeFeatures, nil,
			[]string{"line 8", `dataset "bridge"`, `cameras: slot wrist: no image feature "steps/observation/rgb" (valid: steps/observation/image, steps/observation/wrist_image)`}},
		{"not an image", "    cameras: {primary: observation.state}\n", stepFeatures, nil,
			[]string{"line 6", `cameras: slot primary: "observation.state" is a tensor feature, not a per-step image (valid: observation.images.top)`}},
		{"video is no camera", "    cameras: {primary: steps/observation/video}\n", bridgeFeatures, nil, []string{"line 6", "slot primary:", "is a video feature, not a per-step image"}},
		{"nothing to map to", "    cameras: {primary: image}\n", stepFeatures[1:], nil,
			[]string{`slot primary: no image feature "image" (valid: none: the dataset has no per-step image feature)`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(smp + "datasets:\n  - name: bridge\n    source: /data/bridge/1.0.0\n" + tc.keys))
			if err != nil {
				t.Fatal(err)
			}
			use, errs := c.Datasets[0].CheckFeatures(tc.feats)
			if tc.err == nil {
				if errs != nil || !reflect.DeepEqual(use.Cameras, tc.want) || use.ImageKey != "" {
					t.Fatalf("%+v, %v; want cameras %v", use, errs, tc.want)
				}
				return
			}
			for _, w := range tc.err {
				if errs == nil || !strings.Contains(errs.Error(), w) {
					t.Errorf("error does not say %q:\n%v", w, errs)
				}
			}
		})
	}
}

// TestSampleJSONRoundTrip: a step-mode config as loaded (JSON) parses back
// to the same config, and leaves out the pair-mode keys; a pair-mode config
// keeps them.
func TestSampleJSONRoundTrip(t *testing.T) {
	for _, y := range []string{
		stepsMix,
		"sample:\n  cameras: {w: {seconds: [-1e-7, -0.0, 0.1, 1048576]}, p: {size: [3, 5]}}\n  action: {seconds: 2}\ndatasets:\n  - {name: a, source: /x, cameras: {}}\n  - {name: b, source: /x, cameras: {w: k}}\n",
		"sample:\n  cameras: {w: {seconds: [-0.5, 0]}}\n  action: {steps: \"0:3\"}\ndatasets:\n  - {name: a, source: /x, fps: 2}\n  - {name: b, source: /x, fps: 4, weight: 0}\n",
		"sample: {}\nsamples_per_episode: 3\nnormalize: {action: q01_q99}\ndatasets: [{name: a, source: /x, weight: 1/3, val_split: val}]\n",
	} {
		c, err := Parse([]byte(y))
		if err != nil {
			t.Fatalf("%s: %v", y, err)
		}
		b, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{`"pair_frames"`, `"offset"`, `"image_key"`, `"stride"`, `"num_frames"`} {
			if strings.Contains(string(b), k) {
				t.Errorf("step-mode JSON holds %s: %s", k, b)
			}
		}
		c2, err := Parse(b)
		if err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		if !reflect.DeepEqual(c.Steps, c2.Steps) {
			t.Errorf("sample changed:\n%+v\n%+v", c.Steps, c2.Steps)
		}
		for i := range c.Datasets {
			a, b := c.Datasets[i], c2.Datasets[i]
			if !reflect.DeepEqual(a.Cameras, b.Cameras) || (a.Cameras == nil) != (b.Cameras == nil) || a.FPS != b.FPS || a.Offset != b.Offset {
				t.Errorf("dataset %s changed: %#v %g %v → %#v %g %v", a.Name, a.Cameras, a.FPS, a.Offset, b.Cameras, b.FPS, b.Offset)
			}
		}
		b2, _ := json.Marshal(c2)
		if string(b) != string(b2) {
			t.Fatalf("round trip changed the config:\n%s\n%s", b, b2)
		}
	}
	c, err := Parse([]byte("datasets: [{name: a, source: /x}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(c)
	const want = `{"seed":0,"batch_size":64,"image_size":[256,256],"layout":"BFHWC","meta":"full","samples_per_episode":1,"pair_frames":"endpoints","resize":"squash","decode":"exact","window_shards":4,"normalize":{"action":"none","state":"none"},"datasets":[{"name":"a","source":"/x","split":"train","weight":1,"offset":1}]}`
	if string(b) != want {
		t.Errorf("pair-mode JSON changed:\n got %s\nwant %s", b, want)
	}
}

// TestReadmeStepSamples: the README's step-sample config and each policy
// spec it shows parse, so the examples stay true.
func TestReadmeStepSamples(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "\n### Step samples\n")
	sec, _, _ = strings.Cut(sec, "\n### ")
	blocks := strings.Split(sec, "```yaml\n")
	if !ok || len(blocks) != 3 {
		t.Fatalf("the README's Step samples section has %d yaml blocks, want 2", len(blocks)-1)
	}
	example, _, _ := strings.Cut(blocks[1], "```")
	c, err := Parse([]byte(example))
	if err != nil {
		t.Fatalf("the example: %v", err)
	}
	if len(c.Steps.Cameras) != 2 || len(c.Steps.Action.Steps) != 50 || c.Datasets[0].Cameras["primary"] != "observation.images.top" {
		t.Errorf("the example: %+v", c.Steps)
	}
	copied(t, "the example", c)
	specs, _, _ := strings.Cut(blocks[2], "```")
	n := 0
	for _, spec := range strings.Split(specs, "\n\n") {
		c, err := Parse([]byte(spec + "\ndatasets: [{name: a, source: /x}]\n"))
		if err != nil {
			t.Errorf("%s\n: %v", spec, err)
			continue
		}
		copied(t, spec, c)
		n++
	}
	if n != 4 {
		t.Errorf("%d policy specs, want 4 (ACT, Diffusion Policy, pi0, Octo)", n)
	}
}

// copied checks that the config as info.json writes it (sample.cameras a
// list of {name, size, deltas}), copied into a config file as JSON or as
// YAML's block list, parses back to the same sample block.
func copied(t *testing.T, name string, c *Config) {
	t.Helper()
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Sample struct {
			Cameras []json.RawMessage `json:"cameras"`
		} `json:"sample"`
	}
	if err := json.Unmarshal(b, &doc); err != nil || len(doc.Sample.Cameras) != len(c.Steps.Cameras) {
		t.Fatalf("%s: info.json's sample.cameras is not a list of %d slots (%v): %s", name, len(c.Steps.Cameras), err, b)
	}
	var block strings.Builder
	block.WriteString("sample:\n  cameras:\n")
	for _, sl := range c.Steps.Cameras {
		d, err := json.Marshal(sl.Deltas)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&block, "    - name: %s\n      size: [%d, %d]\n      deltas: %s\n", sl.Name, sl.Size[0], sl.Size[1], d)
	}
	block.WriteString("datasets: [{name: a, source: /x}]\n")
	for _, form := range []struct{ name, text string }{{"JSON", string(b)}, {"YAML list", block.String()}} {
		back, err := Parse([]byte(form.text))
		if err != nil {
			t.Errorf("%s, copied from info.json as %s: %v\n%s", name, form.name, err, form.text)
			continue
		}
		if !reflect.DeepEqual(back.Steps.Cameras, c.Steps.Cameras) {
			t.Errorf("%s, copied from info.json as %s: cameras\n got %+v\nwant %+v", name, form.name, back.Steps.Cameras, c.Steps.Cameras)
		}
		if form.name == "JSON" && !reflect.DeepEqual(back.Steps, c.Steps) {
			t.Errorf("%s, copied from info.json as JSON: sample\n got %+v\nwant %+v", name, back.Steps, c.Steps)
		}
	}
}
