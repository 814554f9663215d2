package pairs

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/oxefs/oxefs/format/rlds"
)

func TestParseNames(t *testing.T) {
	for _, tc := range []struct {
		parse func(string) (string, error)
		ok    []string
		bad   string
		valid string
	}{
		{func(s string) (string, error) { v, err := ParseFrameMode(s); return v.String(), err }, []string{"endpoints", "all", "stride", "fixed_n"}, "pairs", "valid: endpoints, all, stride, fixed_n"},
		{func(s string) (string, error) { v, err := ParseLayout(s); return v.String(), err }, []string{"BFHWC", "BCFHW"}, "NHWC", "valid: BFHWC, BCFHW"},
		{func(s string) (string, error) { v, err := ParseResizeMode(s); return v.String(), err }, []string{"squash", "crop", "pad"}, "stretch", "valid: squash, crop, pad"},
		{func(s string) (string, error) { v, err := ParseMetaMode(s); return v.String(), err }, []string{"full", "dataset", "none"}, "all", "valid: full, dataset, none"},
	} {
		for _, s := range tc.ok {
			if got, err := tc.parse(s); err != nil || got != s {
				t.Errorf("parse %q: %q, %v", s, got, err)
			}
		}
		if _, err := tc.parse(tc.bad); err == nil || !strings.Contains(err.Error(), tc.valid) {
			t.Errorf("parse %q: %v, want an error listing %q", tc.bad, err, tc.valid)
		}
	}
}

// TestNewErrors: a config that does not fit the dataset is refused with
// an error naming the field, the dataset and the valid choices.
func TestNewErrors(t *testing.T) {
	s := newStore(t)
	bridge := openFixture(t, s, "tiny_bridge")
	cases := []struct {
		name    string
		edit    func(*Config)
		unknown bool   // a *rlds.UnknownFeatureError
		msg     string // in the error text
	}{
		{"unknown image key", func(c *Config) { c.ImageKey = "steps/observation/rgb" }, true, `image_key: dataset tiny_bridge has no feature "steps/observation/rgb" (valid: steps/observation/image, steps/observation/wrist_image)`},
		{"image key not an image", func(c *Config) { c.ImageKey = "steps/observation/state" }, false, `image_key: dataset tiny_bridge: "steps/observation/state" is a per-step float32 [7] tensor feature, not a per-step image (valid: steps/observation/image, steps/observation/wrist_image)`},
		{"unknown action key", func(c *Config) { c.ActionKeys = []string{"steps/action"} }, true, "action_keys: dataset tiny_bridge has no feature \"steps/action\" (valid: steps/action/gripper_closedness_action, steps/action/rotation_delta"},
		{"text as action", func(c *Config) { c.ActionKeys = []string{"steps/language_instruction"} }, false, `action_keys: dataset tiny_bridge: "steps/language_instruction" is a per-step string [] text feature, not a per-step numeric tensor`},
		{"image as state", func(c *Config) { c.StateKey = "steps/observation/image" }, false, "state_key: dataset tiny_bridge: \"steps/observation/image\" is a per-step uint8 [96 128 3] image feature"},
		{"float as language", func(c *Config) { c.LanguageKey = "steps/reward" }, false, "language_key: dataset tiny_bridge: \"steps/reward\" is a per-step float32 [] tensor feature, not a text, string or code-point feature (valid: episode_metadata/file_path, steps/language_instruction)"},
		{"action wider than the mix", func(c *Config) { c.MaxActionDim = 6 }, false, "action_keys: dataset tiny_bridge: [steps/action/world_vector steps/action/rotation_delta steps/action/gripper_closedness_action] have 7 values per step, more than the mix's action dimension 6"},
		{"state wider than the mix", func(c *Config) { c.MaxStateDim = 3 }, false, "state_key: dataset tiny_bridge: \"steps/observation/state\" has 7 values per step, more than the mix's state dimension 3"},
		{"no size", func(c *Config) { c.Height = 0 }, false, "image_size"},
		{"bad frames", func(c *Config) { c.Frames = Frames{Mode: FramesAll, Offset: Offset{2, 4}} }, false, "dataset tiny_bridge: pair_frames all needs a fixed offset"},
		{"bad layout", func(c *Config) { c.Layout = 7 }, false, "valid: BFHWC, BCFHW"},
		{"bad resize", func(c *Config) { c.Resize = 7 }, false, "valid: squash, crop, pad"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := fixtureConfig("tiny_bridge")
			cfg.Frames = Frames{Offset: FixedOffset(1)}
			tc.edit(&cfg)
			_, err := New(bridge, cfg)
			if err == nil || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("got %v, want an error containing %q", err, tc.msg)
			}
			if errors.Is(err, rlds.ErrUnknownFeature) != tc.unknown {
				t.Errorf("errors.Is(err, rlds.ErrUnknownFeature) = %v", !tc.unknown)
			}
		})
	}
}

func TestDimsAndDefaults(t *testing.T) {
	s := newStore(t)
	for _, tc := range []struct {
		dataset       string
		action, state int
	}{
		{"tiny_bridge", 7, 7},
		{"tiny_table", 2, 2},
		{"tiny_kuka", 7, 4},
	} {
		ds := openFixture(t, s, tc.dataset)
		cfg := fixtureConfig(tc.dataset)
		a, st, err := Dims(ds, cfg.ActionKeys, cfg.StateKey)
		if err != nil || a != tc.action || st != tc.state {
			t.Errorf("%s: Dims = %d, %d, %v; want %d, %d", tc.dataset, a, st, err, tc.action, tc.state)
		}
		// Zero maxima mean the dataset's own.
		cfg.MaxActionDim, cfg.MaxStateDim = 0, 0
		cfg.Frames = Frames{Offset: FixedOffset(1)}
		asm := mustNew(t, ds, cfg)
		if got := asm.Config(); got.MaxActionDim != tc.action || got.MaxStateDim != tc.state {
			t.Errorf("%s: resolved dims %d, %d", tc.dataset, got.MaxActionDim, got.MaxStateDim)
		}
		if asm.SampleBytes() != 2*48*80*3 || asm.FramesPerSample() != 2 {
			t.Errorf("%s: %d bytes, %d frames", tc.dataset, asm.SampleBytes(), asm.FramesPerSample())
		}
	}
}

// TestMetaJSON: the field names of DESIGN "The mount", and what each meta
// mode serialises.
func TestMetaJSON(t *testing.T) {
	m := &Meta{
		DatasetName: "bridge", EpisodeID: "bridge/train/3/7", FrameIdx: 4, FrameIndices: []int{4, 9}, Offset: 5,
		Language: "put the carrot in the pot", Action: []float64{0.5, 0, 0}, InitialState: []float64{1, 2}, Robot: "widowx",
	}
	b, err := json.Marshal(m.For(MetaFull))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"dataset_name":"bridge","episode_id":"bridge/train/3/7","frame_idx":4,"frame_indices":[4,9],"offset":5,` +
		`"language":"put the carrot in the pot","action":[0.5,0,0],"initial_state":[1,2],"robot":"widowx"}`
	if string(b) != want {
		t.Errorf("full:\n got %s\nwant %s", b, want)
	}
	if b, _ := json.Marshal(m.For(MetaDataset)); string(b) != `{"dataset_name":"bridge"}` {
		t.Errorf("dataset: %s", b)
	}
	if v := m.For(MetaNone); v != nil {
		t.Errorf("none: %v", v)
	}
}

func TestDecodeCodes(t *testing.T) {
	codes := func(s string, pad int) []float64 {
		var v []float64
		for _, r := range s {
			v = append(v, float64(r))
		}
		return append(v, make([]float64, pad)...)
	}
	utf8Bytes := func(s string, pad int) []float64 {
		var v []float64
		for _, b := range []byte(s) {
			v = append(v, float64(b))
		}
		return append(v, make([]float64, pad)...)
	}
	cases := []struct {
		name string
		in   []float64
		want string
	}{
		{"ascii, zero padded", codes("push the red star", 10), "push the red star"},
		{"no padding", codes("exactly", 0), "exactly"},
		{"all zeros", make([]float64, 8), ""},
		{"latin-1 code point", codes("push the café sign", 5), "push the café sign"},
		{"code points beyond a byte", codes("move → left, 東", 3), "move → left, 東"},
		{"UTF-8 bytes (language_table)", utf8Bytes("put the crème brûlée down", 7), "put the crème brûlée down"},
		{"zero inside", append(codes("ab", 1), codes("cd", 2)...), "abcd"},
		{"invalid code point", []float64{104, -5, 105, 0x110000}, "h\uFFFDi\uFFFD"},
	}
	for _, tc := range cases {
		if got := string(decodeCodes(nil, tc.in)); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
