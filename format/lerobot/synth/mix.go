package synth

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/oxefs/oxefs/format/lerobot"
	"github.com/oxefs/oxefs/internal/atomicfile"
)

// Mix config defaults, those of the RLDS synth's configs.
const (
	mixBatchSize  = 64
	mixImageSize  = 256
	mixNumBatches = 10000
)

// singleDataset is the dataset of mix-single.yaml, as in the RLDS synth.
const singleDataset = "synth_fractal"

// writeMixes writes mix.yaml (every dataset at equal weight) and
// mix-single.yaml (one dataset) into o.Dir and returns their paths.
func writeMixes(o Options, plans []*dataset) ([]string, error) {
	single := plans[0]
	for _, p := range plans {
		if p.Name == singleDataset {
			single = p
		}
	}
	files := []struct {
		name, about string
		entries     []*dataset
	}{
		{"mix.yaml", fmt.Sprintf("all %d synthetic LeRobot datasets at equal weight", len(plans)), plans},
		{"mix-single.yaml", "one synthetic LeRobot dataset alone", []*dataset{single}},
	}
	var paths []string
	for _, f := range files {
		path := filepath.Join(o.Dir, f.name)
		if err := atomicfile.Write(path, mixYAML(o.Seed, f.about, f.entries)); err != nil {
			return nil, fmt.Errorf("synth: %w", err)
		}
		paths = append(paths, path)
	}
	return paths, nil
}

// mixYAML renders a mix config in the README's format.
func mixYAML(seed uint64, about string, entries []*dataset) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Written by `oxefs synth --format lerobot`: %s.\n", about)
	b.WriteString("# SYNTHETIC datasets shaped like Open X-Embodiment, in LeRobot v3 layout, not real robot data.\n")
	fmt.Fprintf(&b, "seed: %d\nbatch_size: %d\nimage_size: [%d, %d]\nnum_batches: %d\ndatasets:\n",
		seed, mixBatchSize, mixImageSize, mixImageSize, mixNumBatches)
	for _, d := range entries {
		fmt.Fprintf(&b, "  - name: %s\n", d.Name)
		fmt.Fprintf(&b, "    source: %s\n", yamlString(d.Dir))
		fmt.Fprintf(&b, "    split: train\n")
		fmt.Fprintf(&b, "    val_split: val\n")
		fmt.Fprintf(&b, "    weight: 1.0\n")
		fmt.Fprintf(&b, "    image_key: %s\n", d.Cameras[0])
		fmt.Fprintf(&b, "    offset: %d\n", d.Offset)
		fmt.Fprintf(&b, "    language_key: %s\n", lerobot.TaskKey)
		fmt.Fprintf(&b, "    action_keys: [action]\n")
		if d.Dataset.State.Key != "" {
			fmt.Fprintf(&b, "    state_key: observation.state\n")
		}
	}
	return b.Bytes()
}

// yamlString quotes s as a YAML double-quoted scalar.
func yamlString(s string) string {
	q, _ := json.Marshal(s) // a string always marshals
	return string(q)
}
