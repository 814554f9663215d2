package config

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/oxefs/oxefs/episode"
)

// bridgeFeatures describe a dataset like tiny_bridge, plus the kinds of
// feature the rules must refuse.
var bridgeFeatures = []Feature{
	{Key: "episode_metadata/file_path", Kind: episode.KindText, DType: "string", Shape: []int{}},
	{Key: "episode_metadata/instruction_codes", Kind: episode.KindTensor, DType: "int32", Shape: []int{16}},
	{Key: "episode_metadata/tags", Kind: episode.KindText, DType: "string", Shape: []int{3}},
	{Key: "steps/action/gesture", Kind: episode.KindClassLabel, DType: "int64", Shape: []int{}, PerStep: true},
	{Key: "steps/action/gripper_closedness_action", Kind: episode.KindTensor, DType: "float32", Shape: []int{1}, PerStep: true},
	{Key: "steps/action/rotation_delta", Kind: episode.KindTensor, DType: "float32", Shape: []int{3}, PerStep: true},
	{Key: "steps/action/terminate", Kind: episode.KindTensor, DType: "bool", Shape: []int{}, PerStep: true},
	{Key: "steps/action/world_vector", Kind: episode.KindTensor, DType: "float32", Shape: []int{3}, PerStep: true},
	{Key: "steps/language_codes", Kind: episode.KindTensor, DType: "int32", Shape: []int{512}, PerStep: true},
	{Key: "steps/language_codes_2d", Kind: episode.KindTensor, DType: "int32", Shape: []int{4, 128}, PerStep: true},
	{Key: "steps/language_codes_scalar", Kind: episode.KindTensor, DType: "int64", Shape: []int{}, PerStep: true},
	{Key: "steps/language_codes_unknown", Kind: episode.KindTensor, DType: "int32", Shape: []int{-1}, PerStep: true},
	{Key: "steps/language_embedding", Kind: episode.KindTensor, DType: "float32", Shape: []int{512}, PerStep: true},
	{Key: "steps/language_instruction", Kind: episode.KindText, DType: "string", Shape: []int{}, PerStep: true},
	{Key: "steps/language_strings", Kind: episode.KindTensor, DType: "string", Shape: []int{2}, PerStep: true},
	{Key: "steps/observation/depth", Kind: episode.KindTensor, DType: "float32", Shape: []int{-1, -1}, PerStep: true},
	{Key: "steps/observation/image", Kind: episode.KindImage, DType: "uint8", Shape: []int{96, 128, 3}, PerStep: true},
	{Key: "steps/observation/state", Kind: episode.KindTensor, DType: "float32", Shape: []int{7}, PerStep: true},
	{Key: "steps/observation/touch", Kind: episode.KindTensor, DType: "float32", Shape: []int{2}, PerStep: true, Ragged: true},
	{Key: "steps/observation/video", Kind: episode.KindVideo, DType: "uint8", Shape: []int{-1, 64, 64, 3}, PerStep: true},
	{Key: "steps/observation/wrist_image", Kind: episode.KindImage, DType: "uint8", Shape: []int{96, 128, 3}, PerStep: true},
	{Key: "steps/reward", Kind: episode.KindTensor, DType: "float32", Shape: []int{}, PerStep: true},
}

func featureNamed(t *testing.T, key string) Feature {
	t.Helper()
	for _, f := range bridgeFeatures {
		if f.Key == key {
			return f
		}
	}
	t.Fatalf("no feature %s", key)
	return Feature{}
}

// TestFeatureRules checks each rule's predicate on every kind of feature.
func TestFeatureRules(t *testing.T) {
	for _, tc := range []struct {
		key    string
		camera bool
		vector bool
		lang   Language
	}{
		{"episode_metadata/file_path", false, false, LanguageText},
		{"episode_metadata/instruction_codes", false, false, LanguageCodes},
		{"episode_metadata/tags", false, false, LanguageText}, // the first of three, as ever
		{"steps/action/gesture", false, false, LanguageNone},  // a ClassLabel is no quantity
		{"steps/action/gripper_closedness_action", false, true, LanguageNone},
		{"steps/action/terminate", false, true, LanguageNone}, // bool: 0 or 1
		{"steps/action/world_vector", false, true, LanguageNone},
		{"steps/language_codes", false, true, LanguageCodes},
		{"steps/language_codes_2d", false, true, LanguageNone},
		{"steps/language_codes_scalar", false, true, LanguageNone},
		{"steps/language_codes_unknown", false, false, LanguageNone},
		{"steps/language_embedding", false, true, LanguageNone},
		{"steps/language_instruction", false, false, LanguageText},
		{"steps/language_strings", false, false, LanguageNone},
		{"steps/observation/depth", false, false, LanguageNone}, // unknown shape
		{"steps/observation/image", true, false, LanguageNone},
		{"steps/observation/touch", false, false, LanguageNone}, // ragged
		{"steps/observation/video", false, false, LanguageNone},
	} {
		f := featureNamed(t, tc.key)
		if got := IsCamera(f); got != tc.camera {
			t.Errorf("IsCamera(%s) = %v", tc.key, got)
		}
		if got := IsVector(f); got != tc.vector {
			t.Errorf("IsVector(%s) = %v", tc.key, got)
		}
		if got := LanguageOf(f); got != tc.lang {
			t.Errorf("LanguageOf(%s) = %v, want %v", tc.key, got, tc.lang)
		}
	}
	if IsCamera(Feature{Key: "image", Kind: episode.KindImage, Shape: []int{8, 8, 3}}) {
		t.Error("an episode-level image is a camera")
	}
	if IsVector(Feature{Key: "x", Kind: episode.KindTensor, DType: "float32", Shape: []int{3}}) {
		t.Error("an episode-level tensor is a per-step vector")
	}
	if IsVector(Feature{Key: "x", Kind: episode.KindTensor, DType: "complex64", Shape: []int{3}, PerStep: true}) {
		t.Error("complex64 is a vector: no episode reader turns it into numbers")
	}
}

// parseOne parses a one-dataset config over the bridge-like features.
func parseOne(t *testing.T, keys string) *DatasetConfig {
	t.Helper()
	c, err := Parse([]byte("datasets:\n  - name: bridge\n    source: /data/bridge/1.0.0\n" + keys))
	if err != nil {
		t.Fatal(err)
	}
	return &c.Datasets[0]
}

// TestCheckFeatures: each feature key is checked with its rule, and each
// problem names the key's line, the dataset, the field and the keys that
// would do.
func TestCheckFeatures(t *testing.T) {
	const img = "    image_key: steps/observation/image\n"
	for _, tc := range []struct {
		name string
		keys string
		want []string // "" : no problem
	}{
		{"all good", img + "    language_key: steps/language_instruction\n    action_keys: [steps/action/world_vector, steps/action/rotation_delta, steps/action/terminate]\n    state_key: steps/observation/state\n", nil},
		{"code points per episode", img + "    language_key: episode_metadata/instruction_codes\n", nil},
		{"the only camera", "", []string{"line 2", `dataset "bridge"`, "image_key: required: the dataset has 2 image features (valid: steps/observation/image, steps/observation/wrist_image)"}},
		{"unknown camera", "    image_key: steps/observation/rgb\n", []string{"line 4", `image_key: no image feature "steps/observation/rgb"`}},
		{"not a camera", "    image_key: steps/observation/state\n", []string{"line 4", `"steps/observation/state" is a tensor feature, not a per-step image`}},
		{"video is no camera", "    image_key: steps/observation/video\n", []string{"line 4", "is a video feature, not a per-step image"}},
		{"ClassLabel action", img + "    action_keys: [steps/action/world_vector, steps/action/gesture]\n",
			[]string{"line 5", `dataset "bridge"`, `action_keys: "steps/action/gesture" is a per-step int64 [] class_label feature, not numeric per-step tensors`, "a class label names a category"}},
		{"ClassLabel state", img + "    state_key: steps/action/gesture\n", []string{"line 5", "state_key:", "class_label feature"}},
		{"text action", img + "    action_keys: [steps/language_instruction]\n", []string{"line 5", `"steps/language_instruction" is a per-step string`, "not numeric per-step tensors"}},
		{"unknown-shape state", img + "    state_key: steps/observation/depth\n", []string{"line 5", "state_key:", "unknown dimension"}},
		{"ragged action", img + "    action_keys: steps/observation/touch\n", []string{"line 5", "action_keys:", "not numeric per-step tensors"}},
		{"unknown action", img + "    action_keys: steps/action\n", []string{"line 5", `action_keys: no feature "steps/action" (closest numeric per-step tensors: steps/action/`, "oxefs inspect /data/bridge/1.0.0"}},
		{"code points of two dimensions", img + "    language_key: steps/language_codes_2d\n",
			[]string{"line 5", `dataset "bridge"`, `language_key: "steps/language_codes_2d" is a per-step int32 [4 128] tensor feature, not text or code-point features`, "shape [n]"}},
		{"code points of one value", img + "    language_key: steps/language_codes_scalar\n", []string{"line 5", "language_key:", "shape [n]"}},
		{"code points of unknown length", img + "    language_key: steps/language_codes_unknown\n", []string{"line 5", "language_key:", "shape [n]"}},
		{"strings of one dimension", img + "    language_key: steps/language_strings\n", []string{"line 5", `"steps/language_strings" is a per-step string [2] tensor feature`, "one string per step or per episode (shape [])"}},
		{"float language", img + "    language_key: steps/reward\n", []string{"line 5", `"steps/reward" is a per-step float32 [] tensor feature, not text or code-point features`}},
		{"every problem", "    action_keys: steps/action/gesture\n    state_key: nope\n", []string{"3 problems", "line 2", "line 4", "line 5"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := parseOne(t, tc.keys)
			use, errs := d.CheckFeatures(bridgeFeatures)
			if tc.want == nil {
				if errs != nil {
					t.Fatal(errs)
				}
				return
			}
			if errs == nil {
				t.Fatalf("accepted: %+v", use)
			}
			var ce *ConfigError
			if !errors.As(error(errs), &ce) || ce.Dataset != "bridge" {
				t.Fatalf("%v: not a *ConfigError of dataset bridge", errs)
			}
			for _, w := range tc.want {
				if !strings.Contains(errs.Error(), w) {
					t.Errorf("error does not say %q:\n%v", w, errs)
				}
			}
		})
	}
}

func TestCheckFeaturesUse(t *testing.T) {
	d := parseOne(t, "    language_key: steps/language_codes\n    action_keys: [steps/action/world_vector, steps/action/rotation_delta, steps/action/gripper_closedness_action]\n    state_key: steps/observation/state\n")
	feats := bridgeFeatures[:0:0]
	for _, f := range bridgeFeatures {
		if f.Key != "steps/observation/wrist_image" {
			feats = append(feats, f)
		}
	}
	use, errs := d.CheckFeatures(feats)
	if errs != nil {
		t.Fatal(errs)
	}
	want := FeatureUse{ImageKey: "steps/observation/image", ActionDim: 7, StateDim: 7, Language: LanguageCodes}
	if !reflect.DeepEqual(use, want) {
		t.Errorf("got %+v, want %+v", use, want)
	}
	_, errs = d.CheckFeatures(nil)
	if errs == nil || !strings.Contains(errs.Error(), "the dataset has no per-step image feature") {
		t.Errorf("no features: %v", errs)
	}
}
