package loader

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oxefs/oxefs/config"
)

// TestOpenFeatureRules: the two keys the sample assembler cannot read are
// refused when the mix is opened, with the YAML line of the key, not when
// a batch is built: a ClassLabel as an action, and a language tensor of a
// shape that holds no one instruction.
func TestOpenFeatureRules(t *testing.T) {
	// tiny_bridge with steps/is_terminal turned into a per-step ClassLabel
	// (opening reads only the metadata).
	bridge := filepath.Join(t.TempDir(), "tiny_bridge", "1.0.0")
	if err := os.CopyFS(bridge, os.DirFS(fixtures+"tiny_bridge/1.0.0")); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(bridge, "features.json")
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	steps := doc["featuresDict"].(map[string]any)["features"].(map[string]any)["steps"].(map[string]any)
	stepFeatures := steps["sequence"].(map[string]any)["feature"].(map[string]any)["featuresDict"].(map[string]any)["features"].(map[string]any)
	stepFeatures["is_terminal"] = map[string]any{
		"pythonClassName": "tensorflow_datasets.core.features.class_label_feature.ClassLabel",
		"classLabel":      map[string]any{"numClasses": "2"},
	}
	if b, err = json.Marshal(doc); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}

	store := newStore(t, t.TempDir())
	for _, tc := range []struct {
		name string
		yaml string
		want []string
	}{
		{"ClassLabel action", "datasets:\n  - name: bridge\n    source: " + bridge + "\n    image_key: steps/observation/image\n" +
			"    action_keys: [steps/action/world_vector, steps/is_terminal]\n",
			[]string{"line 5", `dataset "bridge"`, `action_keys: "steps/is_terminal" is a per-step int64 [] class_label feature, not numeric per-step tensors`}},
		{"scalar code-point language", "datasets:\n  - name: kuka\n    source: " + fixtures + "tiny_kuka/1.0.0\n" +
			"    language_key: episode_metadata/episode_id\n",
			[]string{"line 4", `dataset "kuka"`, `language_key: "episode_metadata/episode_id" is an episode-level int64 [] tensor feature, not text or code-point features`, "shape [n]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := openYAML(t, store, tc.yaml, MixOptions{})
			var ce *config.ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("%v is not a *ConfigError", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not say %q:\n%v", w, err)
				}
			}
		})
	}
}
