package main

import (
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// The built-in demo mix: the three fixture datasets written by
// tensorflow_datasets (testdata/datasets), so `oxefs mount DIR` serves
// batches with no config and no network.
//
//go:embed testdata/datasets
var demoData embed.FS

const demoMix = `# The built-in demo mix: three tiny RLDS datasets written by tensorflow_datasets.
seed: 0
batch_size: 16
image_size: [64, 64]
samples_per_episode: 4
num_batches: 100
datasets:
  - name: tiny_bridge
    source: $DEMO/tiny_bridge/1.0.0
    split: train
    val_split: val
    weight: 0.5
    image_key: steps/observation/image
    offset: [1, 3]
    language_key: steps/language_instruction
    action_keys: [steps/action/world_vector, steps/action/rotation_delta, steps/action/gripper_closedness_action]
    state_key: steps/observation/state
    robot: widowx
  - name: tiny_table
    source: $DEMO/tiny_table/1.0.0
    split: train
    weight: 0.25
    image_key: steps/observation/rgb
    offset: 2
    language_key: steps/observation/instruction
    action_keys: [steps/action]
    state_key: steps/observation/effector_translation
    robot: xarm
  - name: tiny_kuka
    source: $DEMO/tiny_kuka/1.0.0
    split: train
    val_split: test
    weight: 0.25
    image_key: steps/observation/image
    offset: 2
    language_key: episode_metadata/language_instruction
    action_keys: [steps/action]
    state_key: steps/observation/joint_bytes
    robot: kuka_iiwa
`

// writeDemo extracts the demo datasets under dir (replacing what a previous
// run left) and returns the demo mix config.
func writeDemo(dir string) ([]byte, error) {
	root := filepath.Join(dir, "demo")
	err := fs.WalkDir(demoData, "testdata/datasets", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := strings.TrimPrefix(p, "testdata/datasets")
		target := filepath.Join(root, filepath.FromSlash(rel))
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := demoData.ReadFile(p)
		if err != nil {
			return err
		}
		if old, err := os.ReadFile(target); err == nil && string(old) == string(b) {
			return nil
		}
		tmp := target + ".tmp"
		if err := os.WriteFile(tmp, b, 0o644); err != nil {
			return err
		}
		return os.Rename(tmp, target)
	})
	if err != nil {
		return nil, fmt.Errorf("demo mix: %w", err)
	}
	return []byte(strings.ReplaceAll(demoMix, "$DEMO", root)), nil
}
