package tfds

import (
	"slices"
	"strings"
	"testing"

	"github.com/oxefs/oxefs/episode"
)

// want is a compact expectation for one flattened feature.
type want struct {
	key      string
	kind     episode.Kind
	dtype    string
	shape    []int
	encoding string
	perStep  bool
	class    string // last component of the python class name
	rank     int    // SequenceRank
}

func checkFeatures(t *testing.T, f *Features, wants []want) {
	t.Helper()
	all := f.All()
	var keys []string
	for _, x := range all {
		keys = append(keys, x.Key)
	}
	var wantKeys []string
	for _, w := range wants {
		wantKeys = append(wantKeys, w.key)
	}
	if !slices.Equal(keys, wantKeys) {
		t.Fatalf("keys\n%s\nwant\n%s", strings.Join(keys, "\n"), strings.Join(wantKeys, "\n"))
	}
	for _, w := range wants {
		t.Run(w.key, func(t *testing.T) {
			got, ok := f.Lookup(w.key)
			if !ok {
				t.Fatalf("Lookup(%q) found nothing", w.key)
			}
			class := got.Class[strings.LastIndexByte(got.Class, '.')+1:]
			if got.Kind != w.kind || got.DType != w.dtype || !slices.Equal(got.Shape, w.shape) ||
				got.Encoding != w.encoding || got.PerStep != w.perStep || class != w.class || got.SequenceRank != w.rank {
				t.Errorf("got  kind=%v dtype=%s shape=%v encoding=%q perStep=%v class=%s rank=%d\nwant kind=%v dtype=%s shape=%v encoding=%q perStep=%v class=%s rank=%d",
					got.Kind, got.DType, got.Shape, got.Encoding, got.PerStep, class, got.SequenceRank,
					w.kind, w.dtype, w.shape, w.encoding, w.perStep, w.class, w.rank)
			}
		})
	}
}

// testdata/bridge_features.json was written by TFDS 4.9's
// FeatureConnector.save_config from a FeaturesDict shaped like Open
// X-Embodiment's bridge (RLDS: a `steps` Dataset plus episode_metadata).
// Expected values: TFDS's own flattening of it,
//
//	import json, tensorflow_datasets as tfds
//	from tensorflow_datasets.core import utils
//	from tensorflow_datasets.core.features.feature import dtype_to_str
//	f = tfds.features.FeatureConnector.from_json(json.load(open(PATH)))
//	si = utils.flatten_nest_dict(f.get_serialized_info())
//	for k, t in sorted(utils.flatten_nest_dict(f.get_tensor_info()).items()):
//	  print(k, dtype_to_str(t.dtype), [-1 if d is None else d for d in t.shape],
//	        'per_step' if t.dataset_lvl else '', si[k].sequence_rank)
func TestParseFeaturesBridge(t *testing.T) {
	f, err := ParseFeatures(readFixture(t, "bridge_features.json"))
	if err != nil {
		t.Fatal(err)
	}
	checkFeatures(t, f, []want{
		{"episode_metadata/episode_id", episode.KindTensor, "int32", []int{}, "none", false, "Scalar", 0},
		{"episode_metadata/file_path", episode.KindText, "string", []int{}, "", false, "Text", 0},
		{"steps/action/open_gripper", episode.KindTensor, "bool", []int{}, "none", true, "Scalar", 1},
		{"steps/action/rotation_delta", episode.KindTensor, "float32", []int{3}, "none", true, "Tensor", 1},
		{"steps/action/terminate_episode", episode.KindTensor, "float32", []int{}, "none", true, "Scalar", 1},
		{"steps/action/world_vector", episode.KindTensor, "float32", []int{3}, "none", true, "Tensor", 1},
		{"steps/is_first", episode.KindTensor, "bool", []int{}, "none", true, "Scalar", 1},
		{"steps/is_last", episode.KindTensor, "bool", []int{}, "none", true, "Scalar", 1},
		{"steps/is_terminal", episode.KindTensor, "bool", []int{}, "none", true, "Scalar", 1},
		{"steps/observation/image", episode.KindImage, "uint8", []int{480, 640, 3}, "jpeg", true, "Image", 1},
		{"steps/observation/natural_language_embedding", episode.KindTensor, "float32", []int{512}, "none", true, "Tensor", 1},
		{"steps/observation/natural_language_instruction", episode.KindTensor, "string", []int{}, "none", true, "Tensor", 1},
		{"steps/observation/state", episode.KindTensor, "float32", []int{7}, "none", true, "Tensor", 1},
		{"steps/reward", episode.KindTensor, "float32", []int{}, "none", true, "Scalar", 1},
	})
	imgs := f.Images()
	if len(imgs) != 1 || imgs[0].Key != "steps/observation/image" {
		t.Errorf("Images() = %v", imgs)
	}
}

// testdata/rich_features.json was written by TFDS 4.9 from a FeaturesDict
// that uses every feature class oxefs reads; expected values as in
// TestParseFeaturesBridge. The ragged keys were checked by serializing an
// episode with TFDS's example_serializer.ExampleSerializer, whose Example
// holds steps/contact/ragged_flat_values, steps/contact/ragged_row_lengths_0,
// pairs/ragged_flat_values, pairs/ragged_row_lengths_0, caption/en,
// caption/fr, and a bytes_list per step for steps/gripper_closed and
// steps/observation/depth (encoded tensors), without episode_metadata/success
// when that optional value is None.
func TestParseFeaturesRich(t *testing.T) {
	f, err := ParseFeatures(readFixture(t, "rich_features.json"))
	if err != nil {
		t.Fatal(err)
	}
	checkFeatures(t, f, []want{
		{"box", episode.KindTensor, "float32", []int{4}, "none", false, "BBoxFeature", 0},
		{"caption/en", episode.KindText, "string", []int{}, "", false, "Translation", 0},
		{"caption/fr", episode.KindText, "string", []int{}, "", false, "Translation", 0},
		{"episode_metadata/episode_id", episode.KindTensor, "int64", []int{}, "none", false, "Scalar", 0},
		{"episode_metadata/file_path", episode.KindText, "string", []int{}, "", false, "Text", 0},
		{"episode_metadata/has_language", episode.KindTensor, "bool", []int{}, "none", false, "Scalar", 0},
		{"episode_metadata/success", episode.KindTensor, "bool", []int{}, "none", false, "Tensor", 0},
		{"frames", episode.KindVideo, "uint8", []int{-1, 64, 64, 3}, "png", false, "Video", 1},
		{"pairs", episode.KindTensor, "int64", []int{-1, -1, 2}, "none", false, "Tensor", 2},
		{"steps/action", episode.KindTensor, "float32", []int{7}, "none", true, "Tensor", 1},
		{"steps/contact", episode.KindTensor, "int32", []int{-1, 3}, "none", true, "Tensor", 2},
		{"steps/discount", episode.KindTensor, "float32", []int{}, "none", true, "Scalar", 1},
		{"steps/gripper_closed", episode.KindTensor, "uint8", []int{-1}, "bytes", true, "Tensor", 1},
		{"steps/is_first", episode.KindTensor, "bool", []int{}, "none", true, "Scalar", 1},
		{"steps/is_last", episode.KindTensor, "bool", []int{}, "none", true, "Scalar", 1},
		{"steps/is_terminal", episode.KindTensor, "bool", []int{}, "none", true, "Scalar", 1},
		{"steps/language_embedding", episode.KindTensor, "float32", []int{512}, "none", true, "Tensor", 1},
		{"steps/language_instruction", episode.KindText, "string", []int{}, "", true, "Text", 1},
		{"steps/observation/depth", episode.KindTensor, "float32", []int{64, 64, 1}, "zlib", true, "Tensor", 1},
		{"steps/observation/image", episode.KindImage, "uint8", []int{256, 256, 3}, "jpeg", true, "Image", 1},
		{"steps/observation/image_wrist", episode.KindImage, "uint8", []int{128, 128, 3}, "png", true, "Image", 1},
		{"steps/observation/natural_language_embedding", episode.KindTensor, "float32", []int{512}, "none", true, "Tensor", 1},
		{"steps/observation/natural_language_instruction", episode.KindTensor, "string", []int{}, "none", true, "Tensor", 1},
		{"steps/observation/state", episode.KindTensor, "float32", []int{7}, "none", true, "Tensor", 1},
		{"steps/reward", episode.KindTensor, "float32", []int{}, "none", true, "Scalar", 1},
		{"steps/skill", episode.KindClassLabel, "int64", []int{}, "", true, "ClassLabel", 1},
		{"tags", episode.KindText, "string", []int{-1}, "", false, "Text", 1},
	})
	if x, _ := f.Lookup("episode_metadata/success"); !x.Optional {
		t.Error("episode_metadata/success is not Optional")
	}
	if x, _ := f.Lookup("steps/skill"); x.NumClasses != 3 {
		t.Errorf("steps/skill NumClasses %d, want 3", x.NumClasses)
	}
	for key, keys := range map[string]string{
		"steps/contact": "steps/contact/ragged_flat_values steps/contact/ragged_row_lengths_0",
		"pairs":         "pairs/ragged_flat_values pairs/ragged_row_lengths_0",
		"steps/action":  "steps/action",
		"frames":        "frames",
		"tags":          "tags",
	} {
		x, _ := f.Lookup(key)
		if got := strings.Join(x.ExampleKeys(), " "); got != keys {
			t.Errorf("%s: ExampleKeys %s, want %s", key, got, keys)
		}
	}
	var imgs []string
	for _, x := range f.Images() {
		imgs = append(imgs, x.Key)
	}
	if got := strings.Join(imgs, " "); got != "steps/observation/image steps/observation/image_wrist" {
		t.Errorf("Images() = %s", got)
	}
}

// Hand-written features.json files often leave out pythonClassName; oxefs
// reads them by their content field (TFDS itself would refuse them).
func TestParseFeaturesWithoutClassNames(t *testing.T) {
	f, err := ParseFeatures([]byte(`{"featuresDict": {"features": {
		"episode_metadata": {"featuresDict": {"features": {"file_path": {"text": {}}}}},
		"steps": {
			"pythonClassName": "tensorflow_datasets.core.features.dataset_feature.Dataset",
			"sequence": {"feature": {"featuresDict": {"features": {
				"action": {"tensor": {"shape": {"dimensions": ["7"]}, "dtype": "float32"}},
				"observation": {"featuresDict": {"features": {
					"image": {"image": {"shape": {"dimensions": [256, 256, 3]}, "dtype": "uint8", "encodingFormat": "JPEG"}}
				}}}
			}}}}
		},
		"tags": {"sequence": {"feature": {"text": {}}}},
		"custom": {"pythonClassName": "my_project.features.Fancy", "tensor": {"shape": {}, "dtype": "int64"}},
		"sound": {"pythonClassName": "tensorflow_datasets.core.features.audio_feature.Audio", "audio": {"dtype": "int64"}}
	}}}`))
	if err != nil {
		t.Fatal(err)
	}
	checkFeatures(t, f, []want{
		{"custom", episode.KindTensor, "int64", []int{}, "none", false, "Fancy", 0},
		{"episode_metadata/file_path", episode.KindText, "string", []int{}, "", false, "", 0},
		{"sound", episode.KindUnsupported, "", nil, "", false, "Audio", 0},
		{"steps/action", episode.KindTensor, "float32", []int{7}, "none", true, "", 1},
		{"steps/observation/image", episode.KindImage, "uint8", []int{256, 256, 3}, "jpeg", true, "", 1},
		// An unnamed "sequence" is a Sequence, not a Dataset; a missing
		// length means variable.
		{"tags", episode.KindText, "string", []int{-1}, "", false, "", 1},
	})
}

func TestParseFeaturesErrors(t *testing.T) {
	const ds = `"pythonClassName": "tensorflow_datasets.core.features.dataset_feature.Dataset"`
	dict := func(features string) string { return `{"featuresDict": {"features": {` + features + `}}}` }
	for _, tc := range []struct {
		name, json, want string
	}{
		{"not json", `{"featuresDict": `, "features.json"},
		{"legacy", `{"type": "tensorflow_datasets.core.features.features_dict.FeaturesDict", "content": {}}`, "legacy"},
		{"root tensor", `{"tensor": {"dtype": "int64"}}`, "want a FeaturesDict"},
		{"root empty", `{}`, "no content"},
		{"two contents", dict(`"x": {"tensor": {"dtype": "int64"}, "text": {}}`), `has 2 content fields`},
		{"class and content disagree", dict(`"x": {"pythonClassName": "tensorflow_datasets.core.features.image_feature.Image", "tensor": {"dtype": "uint8"}}`), `needs "image" content`},
		{"no dtype", dict(`"x": {"tensor": {"shape": {}}}`), "without a dtype"},
		{"bad encoding", dict(`"x": {"tensor": {"dtype": "uint8", "encoding": "gzip"}}`), `unknown tensor encoding "gzip"`},
		{"bad dimension", dict(`"x": {"tensor": {"dtype": "uint8", "shape": {"dimensions": ["-2"]}}}`), "bad shape dimension -2"},
		{"huge dimension", dict(`"x": {"image": {"shape": {"dimensions": ["99999999999"]}}}`), "bad shape dimension"},
		{"bad sequence length", dict(`"x": {"sequence": {"feature": {"text": {}}, "length": "-5"}}`), "bad Sequence length"},
		{"sequence without feature", dict(`"x": {"sequence": {"length": "-1"}}`), "without an inner feature"},
		{"null feature", dict(`"x": null`), `"x" is null`},
		{"nested dataset", dict(`"steps": {` + ds + `, "sequence": {"feature": {` + ds + `, "sequence": {"feature": {"text": {}}}}}}`), "Dataset inside a Dataset"},
		{"dataset in sequence", dict(`"s": {"sequence": {"feature": {` + ds + `, "sequence": {"feature": {"text": {}}}}}}`), "Dataset inside a Dataset or Sequence"},
		{"colliding keys", dict(`"a/b": {"text": {}}, "a": {"featuresDict": {"features": {"b": {"text": {}}}}}`), `flatten to the key "a/b"`},
		{"no content", dict(`"x": {"pythonClassName": "my.Thing"}`), "no content"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := ParseFeatures([]byte(tc.json))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				var keys []string
				if f != nil {
					keys = f.Keys()
				}
				t.Fatalf("ParseFeatures = %v, %v; want an error containing %q", keys, err, tc.want)
			}
		})
	}
}

func TestFeaturesAllIsACopy(t *testing.T) {
	f, err := ParseFeatures(readFixture(t, "bridge_features.json"))
	if err != nil {
		t.Fatal(err)
	}
	all := f.All()
	all[0].Key = "changed"
	if x := f.All()[0].Key; x == "changed" {
		t.Error("All() hands out the internal slice")
	}
	if _, ok := f.Lookup("steps"); ok {
		t.Error("Lookup found a non-leaf")
	}
}
