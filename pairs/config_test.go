package pairs

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/oxefs/oxefs/config"
	"github.com/oxefs/oxefs/episode"
)

// TestNewErrors: New trusts the rules package config applied when the mix
// was opened, and refuses only what would make Build misbehave, naming the
// field and the dataset.
func TestNewErrors(t *testing.T) {
	s := newStore(t)
	bridge := openFixture(t, s, "tiny_bridge")
	cases := []struct {
		name    string
		edit    func(*Config)
		unknown bool   // a *episode.UnknownFeatureError
		msg     string // in the error text
	}{
		{"unknown image key", func(c *Config) { c.ImageKey = "steps/observation/rgb" }, true, `image_key: dataset tiny_bridge has no feature "steps/observation/rgb"`},
		{"unknown action key", func(c *Config) { c.ActionKeys = []string{"steps/action"} }, true, `action_keys: dataset tiny_bridge has no feature "steps/action"`},
		{"unknown state key", func(c *Config) { c.StateKey = "steps/state" }, true, `state_key: dataset tiny_bridge has no feature "steps/state"`},
		{"unknown language key", func(c *Config) { c.LanguageKey = "steps/instruction" }, true, `language_key: dataset tiny_bridge has no feature "steps/instruction"`},
		{"float as language", func(c *Config) { c.LanguageKey = "steps/reward" }, false, `language_key: dataset tiny_bridge: "steps/reward" has shape [], not the [n] of code points`},
		{"action wider than the mix", func(c *Config) { c.MaxActionDim = 6 }, false, "action_keys: dataset tiny_bridge: [steps/action/world_vector steps/action/rotation_delta steps/action/gripper_closedness_action] have 7 values per step, more than the mix's action dimension 6"},
		{"state wider than the mix", func(c *Config) { c.MaxStateDim = 3 }, false, "state_key: dataset tiny_bridge: \"steps/observation/state\" has 7 values per step, more than the mix's state dimension 3"},
		{"no size", func(c *Config) { c.Height = 0 }, false, "dataset tiny_bridge: 0x80 frames"},
		{"bad frames", func(c *Config) {
			c.Frames = config.Frames{Mode: config.FramesAll, Offset: config.Offset{Min: 2, Max: 4}}
		}, false, "dataset tiny_bridge: mix config: offset: pair_frames: all needs one fixed offset"},
		{"bad layout", func(c *Config) { c.Layout = 7 }, false, "layout Layout(7)"},
		{"bad resize", func(c *Config) { c.Resize = 7 }, false, "resize ResizeMode(7)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := fixtureConfig("tiny_bridge")
			cfg.Frames = config.Frames{Offset: config.FixedOffset(1)}
			tc.edit(&cfg)
			_, err := New(bridge.Info(), cfg)
			if err == nil || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("got %v, want an error containing %q", err, tc.msg)
			}
			if errors.Is(err, episode.ErrUnknownFeature) != tc.unknown {
				t.Errorf("errors.Is(err, episode.ErrUnknownFeature) = %v", !tc.unknown)
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
		// Zero maxima mean the dataset's own.
		cfg.MaxActionDim, cfg.MaxStateDim = 0, 0
		cfg.Frames = config.Frames{Offset: config.FixedOffset(1)}
		asm := mustNew(t, ds, cfg)
		if got := asm.Config(); got.MaxActionDim != tc.action || got.MaxStateDim != tc.state {
			t.Errorf("%s: resolved dims %d, %d", tc.dataset, got.MaxActionDim, got.MaxStateDim)
		}
		if asm.SampleBytes() != 2*48*80*3 || asm.FramesPerSample() != 2 {
			t.Errorf("%s: %d bytes, %d frames", tc.dataset, asm.SampleBytes(), asm.FramesPerSample())
		}
	}
}

// TestMetaJSON: the field names the README documents, and what each meta
// mode serialises.
func TestMetaJSON(t *testing.T) {
	m := &Meta{
		DatasetName: "bridge", EpisodeID: "bridge/train/3/7", FrameIdx: 4, FrameIndices: []int{4, 9}, Offset: 5,
		Language: "put the carrot in the pot", Action: []float64{0.5, 0, 0}, InitialState: []float64{1, 2}, Robot: "widowx",
	}
	b, err := json.Marshal(m.For(config.MetaFull))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"dataset_name":"bridge","episode_id":"bridge/train/3/7","frame_idx":4,"frame_indices":[4,9],"offset":5,` +
		`"language":"put the carrot in the pot","action":[0.5,0,0],"initial_state":[1,2],"robot":"widowx"}`
	if string(b) != want {
		t.Errorf("full:\n got %s\nwant %s", b, want)
	}
	if b, _ := json.Marshal(m.For(config.MetaDataset)); string(b) != `{"dataset_name":"bridge"}` {
		t.Errorf("dataset: %s", b)
	}
	if v := m.For(config.MetaNone); v != nil {
		t.Errorf("none: %v", v)
	}
}
