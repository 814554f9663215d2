package config

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestEnumNames(t *testing.T) {
	for _, tc := range []struct {
		parse func(string) (string, error)
		ok    []string
		bad   string
		want  string
	}{
		{func(s string) (string, error) { v, err := ParseFrameMode(s); return v.String(), err }, []string{"endpoints", "all", "stride", "fixed_n"}, "pairs", `pair_frames: "pairs" is not one of endpoints, all, stride, fixed_n`},
		{func(s string) (string, error) { v, err := ParseLayout(s); return v.String(), err }, []string{"BFHWC", "BCFHW"}, "NHWC", `layout: "NHWC" is not one of BFHWC, BCFHW`},
		{func(s string) (string, error) { v, err := ParseResizeMode(s); return v.String(), err }, []string{"squash", "crop", "pad"}, "stretch", `resize: "stretch" is not one of squash, crop, pad`},
		{func(s string) (string, error) { v, err := ParseMetaMode(s); return v.String(), err }, []string{"full", "dataset", "none"}, "all", `meta: "all" is not one of full, dataset, none`},
	} {
		for _, s := range tc.ok {
			if got, err := tc.parse(s); err != nil || got != s {
				t.Errorf("parse %q: %q, %v", s, got, err)
			}
		}
		_, err := tc.parse(tc.bad)
		var ce *ConfigError
		if !errors.As(err, &ce) || err.Error() != tc.want {
			t.Errorf("parse %q: %v, want the *ConfigError %q", tc.bad, err, tc.want)
		}
	}
	if s := Layout(7).String(); s != "Layout(7)" || Layout(7).Valid() || !BCFHW.Valid() {
		t.Errorf("Layout(7) is %q", s)
	}
	b, err := json.Marshal(map[string]any{"l": BCFHW, "m": MetaNone, "f": FramesFixedN, "r": Crop})
	if err != nil || string(b) != `{"f":"fixed_n","l":"BCFHW","m":"none","r":"crop"}` {
		t.Errorf("JSON %s, %v", b, err)
	}
}

// TestValidateTyped: a config built in code with values no YAML can give
// is refused with the valid choices.
func TestValidateTyped(t *testing.T) {
	c, err := Parse([]byte("datasets:\n  - {name: a, source: /x}\n"))
	if err != nil {
		t.Fatal(err)
	}
	c.Layout, c.Meta, c.Resize, c.PairFrames = 7, 8, 9, 10
	err = c.Validate()
	for _, w := range []string{"4 problems", `layout: "Layout(7)" is not one of BFHWC, BCFHW`, `meta: "MetaMode(8)" is not one of full`,
		`resize: "ResizeMode(9)" is not one of squash`, `pair_frames: "FrameMode(10)" is not one of endpoints`} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("error does not say %q: %v", w, err)
		}
	}
}

// TestFramesValidate: the frame rules Parse applies, on a selection built
// in code, and F.
func TestFramesValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    Frames
		n    int    // Count when valid
		err  string // in the error when not
	}{
		{"endpoints fixed", Frames{Mode: FramesEndpoints, Offset: FixedOffset(5)}, 2, ""},
		{"endpoints range", Frames{Mode: FramesEndpoints, Offset: Offset{3, 7}}, 2, ""},
		{"all", Frames{Mode: FramesAll, Offset: FixedOffset(4)}, 5, ""},
		{"stride divides", Frames{Mode: FramesStride, Offset: FixedOffset(6), Stride: 2}, 4, ""},
		{"stride does not divide", Frames{Mode: FramesStride, Offset: FixedOffset(7), Stride: 3}, 0, "offset: pair_frames: stride needs an offset that is a multiple of stride 3, got 7"},
		{"fixed_n", Frames{Mode: FramesFixedN, Offset: Offset{4, 9}, N: 5}, 5, ""},
		{"offset 0", Frames{Mode: FramesEndpoints, Offset: FixedOffset(0)}, 0, "offset: must be ≥ 1"},
		{"range reversed", Frames{Mode: FramesEndpoints, Offset: Offset{5, 3}}, 0, "offset: range [5, 3] has min > max"},
		{"all with range", Frames{Mode: FramesAll, Offset: Offset{3, 5}}, 0, "offset: pair_frames: all needs one fixed offset"},
		{"stride with range", Frames{Mode: FramesStride, Offset: Offset{3, 5}, Stride: 2}, 0, "offset: pair_frames: stride needs one fixed offset"},
		{"stride 0", Frames{Mode: FramesStride, Offset: FixedOffset(4)}, 0, "stride: pair_frames: stride needs stride in 1.."},
		{"stride unused", Frames{Mode: FramesAll, Offset: FixedOffset(4), Stride: 2}, 0, "stride: is only used with pair_frames: stride (pair_frames is all)"},
		{"fixed_n 1", Frames{Mode: FramesFixedN, Offset: FixedOffset(4), N: 1}, 0, "num_frames: pair_frames: fixed_n needs num_frames in 2.."},
		{"fixed_n too close", Frames{Mode: FramesFixedN, Offset: Offset{3, 9}, N: 5}, 0, "offset: pair_frames: fixed_n with num_frames 5 needs offset ≥ 4"},
		{"negative samples", Frames{Offset: FixedOffset(1), SamplesPerEpisode: -1}, 0, "samples_per_episode: must be in 0.."},
		{"bad mode", Frames{Mode: 9, Offset: FixedOffset(1)}, 0, "is not one of endpoints, all, stride, fixed_n"},
	} {
		err := tc.f.Validate()
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.err == "" && tc.f.Count() != tc.n:
			t.Errorf("%s: F = %d, want %d", tc.name, tc.f.Count(), tc.n)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: %v, want an error containing %q", tc.name, err, tc.err)
		}
	}
}

// TestFramesOf: every sampled dataset of a valid config gives the same F.
func TestFramesOf(t *testing.T) {
	c, err := Parse([]byte("pair_frames: stride\nstride: 3\nsamples_per_episode: 0\ndatasets:\n  - {name: a, source: /x, offset: 6}\n  - {name: b, source: /y, offset: 6}\n"))
	if err != nil {
		t.Fatal(err)
	}
	f := c.FramesOf(&c.Datasets[1])
	if f != (Frames{Mode: FramesStride, Offset: FixedOffset(6), Stride: 3}) || f.Count() != 3 || c.Frames() != 3 || f.Validate() != nil {
		t.Errorf("%+v: F = %d, config F = %d, %v", f, f.Count(), c.Frames(), f.Validate())
	}
}
