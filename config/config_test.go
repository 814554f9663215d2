package config

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParseDefaults(t *testing.T) {
	c, err := Parse([]byte(`
datasets:
  - source: gs://gresearch/robotics/bridge/0.1.0
    anonymous: true
  - name: kuka
    source: /data/oxe/kuka/0.1.0/
    weight: 0.25
    offset: [3, 7]
    action_keys: steps/action
`))
	if err != nil {
		t.Fatal(err)
	}
	want := &Config{
		BatchSize: 64, ImageSize: [2]int{256, 256}, Layout: BFHWC, Meta: MetaFull,
		SamplesPerEpisode: 1, PairFrames: FramesEndpoints, Resize: Squash, WindowShards: 4,
		Datasets: []DatasetConfig{
			{Name: "bridge", Source: "gs://gresearch/robotics/bridge/0.1.0", Anonymous: true, Split: "train",
				Weight: NewWeight(1, 1), Offset: Offset{1, 1}},
			{Name: "kuka", Source: "/data/oxe/kuka/0.1.0/", Split: "train", Weight: NewWeight(1, 4),
				Offset: Offset{3, 7}, ActionKeys: []string{"steps/action"}},
		},
	}
	// Line bookkeeping is not part of the value.
	c.lines = nil
	for i := range c.Datasets {
		c.Datasets[i].line, c.Datasets[i].lines = 0, nil
	}
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("got  %+v\nwant %+v", c, want)
	}
	if c.NumBatches != 0 || c.Frames() != 2 {
		t.Fatalf("num_batches %d frames %d", c.NumBatches, c.Frames())
	}
}

func TestNameFromSource(t *testing.T) {
	for src, want := range map[string]string{
		"gs://gresearch/robotics/bridge/0.1.0":                "bridge",
		"/data/oxe/kuka/0.1.0/":                               "kuka",
		"hf://datasets/lerobot/pusht":                         "pusht",
		"hf://datasets/lerobot/pusht@v3.0":                    "pusht",
		"hf://datasets/oxe/mirror@refs%2Fpr%2F1/bridge/1.0.0": "bridge",
	} {
		if got := nameFromSource(src); got != want {
			t.Errorf("nameFromSource(%q) = %q, want %q", src, got, want)
		}
	}
}

func TestParseFull(t *testing.T) {
	c, err := Parse([]byte(`
seed: 18446744073709551615
batch_size: 128
image_size: [224, 320]
layout: BCFHW
meta: dataset
samples_per_episode: 0
pair_frames: stride
stride: 2
resize: pad
decode: fast
window_shards: 8
num_batches: 100000
normalize: {action: q01_q99, state: mean_std}
datasets:
  - name: bridge
    source: gs://gresearch/robotics/bridge/0.1.0
    anonymous: true
    split: train[:90%]
    val_split: train[90%:]
    weight: 1.0
    image_key: steps/observation/image
    offset: 6
    language_key: steps/observation/natural_language_instruction
    action_keys: [steps/action/world_vector, steps/action/rotation_delta]
    state_key: steps/observation/state
    robot: WidowX
`))
	if err != nil {
		t.Fatal(err)
	}
	if c.Seed != 1<<64-1 || c.BatchSize != 128 || c.ImageSize != [2]int{224, 320} || c.Layout != BCFHW ||
		c.Meta != MetaDataset || c.SamplesPerEpisode != 0 || c.PairFrames != FramesStride || c.Stride != 2 || c.Resize != Pad || c.Decode != DecodeFast ||
		c.WindowShards != 8 || c.NumBatches != 100000 || c.Frames() != 4 || c.Normalize != (Normalize{NormQuantile, NormMeanStd}) {
		t.Fatalf("%+v", c)
	}
	d := c.Datasets[0]
	if d.ValSplit != "train[90%:]" || d.Robot != "WidowX" || d.Offset != (Offset{6, 6}) || len(d.ActionKeys) != 2 || d.Line("robot") != 27 {
		t.Fatalf("%+v (robot on line %d)", d, d.Line("robot"))
	}
}

// TestParseErrors checks that each problem is reported with its line, the
// dataset, the field and the valid choices.
func TestParseErrors(t *testing.T) {
	const ds = "datasets:\n  - name: a\n    source: /x\n"
	for _, c := range []struct {
		name string
		yaml string
		want []string // substrings of the message
	}{
		{"malformed yaml", "datasets: [\n", []string{"line"}},
		{"tab indentation", "datasets:\n\t- name: a\n", []string{"line 2"}},
		{"empty", "", []string{"empty", "datasets"}},
		{"not a mapping", "- a\n- b\n", []string{"mapping"}},
		{"two documents", ds + "---\nseed: 1\n", []string{"more than one YAML document"}},
		{"no datasets", "seed: 1\n", []string{"datasets: required"}},
		{"datasets not a list", "datasets: {a: 1}\n", []string{"line 1", "datasets: must be a list"}},
		{"unknown top-level key", "batch_sise: 3\n" + ds, []string{"line 1", `unknown key "batch_sise"`, "did you mean batch_size?", "valid keys: seed, batch_size"}},
		{"unknown dataset key", ds + "    wieght: 2\n", []string{"line 4", `dataset "a"`, `unknown key "wieght"`, "did you mean weight?", "valid keys: name, source"}},
		{"repeated key", ds + "    source: /y\n", []string{"line 4", `dataset "a"`, "source: given twice (first on line 3)"}},
		{"merge key", "base: &b {split: train}\n" + ds + "    <<: *b\n", []string{`unknown key "base"`, "merge keys are not supported"}},
		{"bad weight", ds + "    weight: heavy\n", []string{"line 4", `dataset "a"`, "weight: must be a number", `"proportionate"`, `got "heavy"`}},
		{"infinite weight", ds + "    weight: .inf\n", []string{"weight: must be a number"}},
		{"huge exponent", ds + "    weight: 1e99999\n", []string{"weight: must be a number"}},
		{"weight list", ds + "    weight: [1]\n", []string{"weight: must be a number", "got a list"}},
		{"all weights dropped", "datasets:\n  - {name: a, source: /x, weight: 0}\n  - {name: b, source: /x, weight: -1}\n", []string{"datasets: every dataset has weight ≤ 0"}},
		{"proportionate with full numeric weights", "datasets:\n  - {name: a, source: /x}\n  - {name: b, source: /x, weight: proportionate}\n",
			[]string{"line 3", `dataset "b"`, "weight: proportionate datasets (b)", "(a 1) already sum to 1.000", "less than 1"}},
		{"layout", "layout: bfhwc\n" + ds, []string{"line 1", `layout: "bfhwc" is not one of BFHWC, BCFHW`}},
		{"meta", "meta: all\n" + ds, []string{`meta: "all" is not one of full, dataset, none`}},
		{"pair_frames", "pair_frames: pairs\n" + ds, []string{`pair_frames: "pairs" is not one of endpoints, all, stride, fixed_n`}},
		{"resize", "resize: stretch\n" + ds, []string{`resize: "stretch" is not one of squash, crop, pad`}},
		{"decode", "decode: turbo\n" + ds, []string{"line 1", `decode: "turbo" is not one of exact, fast`}},
		{"normalize mode", "normalize: {action: minmax}\n" + ds, []string{"line 1", `normalize.action: "minmax" is not one of none, q01_q99, mean_std`}},
		{"normalize key", "normalize: {actions: q01_q99}\n" + ds, []string{`unknown key "actions"`, "did you mean action?", "valid keys: action, state"}},
		{"normalize scalar", "normalize: q01_q99\n" + ds, []string{"normalize: must be a mapping such as {action: q01_q99}"}},
		{"batch_size 0", "batch_size: 0\n" + ds, []string{"line 1", "batch_size: must be in 1..65536, got 0"}},
		{"batch_size negative", "batch_size: -4\n" + ds, []string{"batch_size: must be in 1..65536, got -4"}},
		{"batch_size string", "batch_size: \"64\"\n" + ds, []string{"batch_size: must be an integer", `got "64"`}},
		{"batch_size float", "batch_size: 6.5\n" + ds, []string{"batch_size: must be an integer"}},
		{"image_size one", "image_size: [256]\n" + ds, []string{"image_size: must be a list of two integers [height, width]"}},
		{"image_size zero", "image_size: [0, 256]\n" + ds, []string{"image_size: must be [height, width], each in 1..8192"}},
		{"samples_per_episode", "samples_per_episode: -1\n" + ds, []string{"samples_per_episode: must be in 0..", "0 = every valid pair"}},
		{"window_shards", "window_shards: 0\n" + ds, []string{"window_shards: must be in 1.."}},
		{"num_batches", "num_batches: 0\n" + ds, []string{"num_batches: must be in 1..", "leave it out"}},
		{"seed negative", "seed: -1\n" + ds, []string{"seed: must be an integer in 0..18446744073709551615"}},
		{"offset 0", ds + "    offset: 0\n", []string{"line 4", `dataset "a"`, "offset: must be ≥ 1"}},
		{"offset reversed", ds + "    offset: [7, 3]\n", []string{`dataset "a"`, "offset: range [7, 3] has min > max"}},
		{"offset three", ds + "    offset: [1, 2, 3]\n", []string{"offset: must be an integer or a range [min, max]"}},
		{"anonymous yes", ds + "    anonymous: yes\n", []string{"anonymous: must be true or false"}},
		{"duplicate names", ds + "  - name: a\n    source: /y\n", []string{"line 4", `dataset "a"`, "name: used twice (also datasets[0])"}},
		{"copies need names", "datasets:\n  - source: /d/bridge/0.1.0\n  - source: /d/bridge/0.1.0\n", []string{`dataset "bridge"`, "used twice"}},
		{"no source", "datasets:\n  - name: a\n", []string{`dataset "a"`, "source: required"}},
		{"no name", "datasets:\n  - split: train\n", []string{"datasets[0]", "name: required"}},
		{"slash in name", "datasets:\n  - {name: a/b, source: /x}\n", []string{"name: must not contain a slash"}},
		{"empty split", ds + "    split: \"\"\n", []string{"split: must not be empty"}},
		{"action_keys mapping", ds + "    action_keys: {a: 1}\n", []string{"action_keys: must be a list of feature keys"}},
		{"stride without mode", "stride: 2\n" + ds, []string{"stride: is only used with pair_frames: stride"}},
		{"stride missing", "pair_frames: stride\n" + ds, []string{"stride: pair_frames: stride needs stride"}},
		{"stride multiple", "pair_frames: stride\nstride: 2\n" + ds + "    offset: 5\n", []string{`dataset "a"`, "offset: pair_frames: stride needs an offset that is a multiple of stride 2, got 5"}},
		{"fixed_n missing", "pair_frames: fixed_n\n" + ds, []string{"num_frames: pair_frames: fixed_n needs num_frames in 2.."}},
		{"fixed_n offset", "pair_frames: fixed_n\nnum_frames: 4\n" + ds + "    offset: 2\n", []string{"offset: pair_frames: fixed_n with num_frames 4 needs offset ≥ 3"}},
		{"all with ranges", "pair_frames: all\n" + ds + "    offset: [2, 4]\n", []string{"offset: pair_frames: all needs one fixed offset"}},
		{"all with different offsets", "pair_frames: all\ndatasets:\n  - {name: a, source: /x, offset: 3}\n  - {name: b, source: /x, offset: 4}\n",
			[]string{"line 4", `dataset "b"`, "needs the same offset in every dataset", "a has 3, this one 4"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.yaml))
			if err == nil {
				t.Fatal("parsed")
			}
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("%T is not a *ConfigError: %v", err, err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not say %q:\n%v", w, err)
				}
			}
		})
	}
}

// TestParseReportsAll checks that one Parse reports every problem, in line
// order.
func TestParseReportsAll(t *testing.T) {
	_, err := Parse([]byte("layout: x\nmeta: y\ndatasets:\n  - name: a\n    weight: q\n"))
	var es ConfigErrors
	if !errors.As(err, &es) || len(es) != 4 {
		t.Fatalf("want 4 problems (layout, meta, weight, source), got %v", err)
	}
	for i := 1; i < len(es); i++ {
		if es[i].Line < es[i-1].Line {
			t.Fatalf("problems out of line order: %v", err)
		}
	}
}

func TestWeights(t *testing.T) {
	for _, c := range []struct {
		text, want string
		ok         bool
	}{
		{"1", "1", true}, {"1.0", "1", true}, {"0.54", "0.54", true}, {".5", "0.5", true}, {"3/4", "0.75", true},
		{"1e-3", "0.001", true}, {"1_000", "1000", true}, {"1/3", "1/3", true}, {"-2", "-2", true},
		{"proportionate", "proportionate", true}, {"abc", "", false}, {"1/0", "", false}, {"0x10", "", false},
		{"1e70", "1e70", true}, {"1e-70", "1e-70", true}, {"0.000001e-99", "1e-105", true}, {"25e98", "25e98", true},
		{"1e100", "1e100", true}, {"1e300", "", false}, {"1e1000", "", false}, {"nan", "", false}, {"", "", false},
	} {
		w, err := ParseWeight(c.text)
		if (err == nil) != c.ok || (c.ok && w.String() != c.want) {
			t.Errorf("ParseWeight(%q) = %v, %v; want %s", c.text, w, err, c.want)
		}
		if err != nil {
			continue
		}
		// What String writes (info.json's config) reads back to the same value.
		if back, err := ParseWeight(w.String()); err != nil || !w.Proportionate && back.Value.Cmp(w.Value) != 0 {
			t.Errorf("ParseWeight(%q) = %v, %v: not %s", w.String(), back, err, c.text)
		}
	}
}

// TestConfigJSONRoundTrip checks that the config as loaded (JSON, for
// info.json) parses back to the same config.
func TestConfigJSONRoundTrip(t *testing.T) {
	for _, y := range []string{
		"datasets:\n  - {name: a, source: /x, weight: 1/3, offset: [2, 9], val_split: val}\n  - {name: b, source: /y, weight: 0.125}\n",
		"seed: 7\npair_frames: fixed_n\nnum_frames: 3\nnum_batches: 9\ndatasets:\n  - {name: a, source: /x, weight: 0.5, offset: 4}\n  - {name: b, source: /y, weight: proportionate, offset: 2}\n",
	} {
		c, err := Parse([]byte(y))
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		c2, err := Parse(b)
		if err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		b2, _ := json.Marshal(c2)
		if string(b) != string(b2) {
			t.Fatalf("round trip changed the config:\n%s\n%s", b, b2)
		}
	}
}

// TestYAMLIndentationErrorLine: a key indented less than its siblings is
// reported on its own line, not on the line where its block starts (the
// YAML decoder's), and a problem the decoder already places is left as it
// is.
func TestYAMLIndentationErrorLine(t *testing.T) {
	for _, tc := range []struct {
		name, yaml, want string
	}{
		{"key dedented", "batch_size: 8\nimage_size: [32, 32]\ndatasets:\n  - source: /data/bridge\n    name: bridge\n    image_key: image\n   weight: 2\n",
			"line 7: did not find expected '-' indicator (in the block that starts on line 3: check the indentation of line 7)"},
		{"key indented", "batch_size: 8\ndatasets:\n  - source: /data/bridge\n    name: bridge\n     weight: 2\n",
			"line 5: mapping values are not allowed in this context"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}
