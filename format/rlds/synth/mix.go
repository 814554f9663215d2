package synth

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/oxefs/oxefs/internal/atomicfile"
)

// Mix config defaults written into every file: the resolution and batch
// size most OXE trainers use.
const (
	mixBatchSize = 64
	mixImageSize = 256
)

// singleDataset is the dataset of mix-single.yaml and mix-two-copies.yaml:
// RT-1's layout, one 256×320 camera, mid-sized, its frames close to the
// mix's median.
const singleDataset = "synth_fractal"

// mixEntry is one datasets: entry of a mix config.
type mixEntry struct {
	name, split, valSplit string
	weight                float64
	ds                    *plannedDataset
}

// writeMixes writes mix.yaml, mix-single.yaml, mix-two-copies.yaml and
// mix-steps.yaml into o.Dir and returns their paths.
// mixNumBatches is the num_batches of the written mix configs.
const mixNumBatches = 10000

func writeMixes(o Options, plans []*plannedDataset) ([]string, error) {
	single := plans[0]
	for _, p := range plans {
		if p.Name == singleDataset {
			single = p
		}
	}
	var all []mixEntry
	for _, p := range plans {
		all = append(all, mixEntry{name: p.Name, split: "train", valSplit: "val", weight: 1, ds: p})
	}
	files := []struct {
		name, about string
		entries     []mixEntry
	}{
		{"mix.yaml", fmt.Sprintf("all %d synthetic datasets at equal weight", len(plans)), all},
		{"mix-single.yaml", "one dataset alone: the baseline of the mixing-penalty measurement", []mixEntry{
			{name: single.Name, split: "train", valSplit: "val", weight: 1, ds: single},
		}},
		{"mix-two-copies.yaml", "the dataset of mix-single.yaml as two copies on disjoint halves at 50/50: " +
			"the same frames as mix-single.yaml, mixed", []mixEntry{
			{name: single.Name + "_a", split: "train[:50%]", valSplit: "val[:50%]", weight: 0.5, ds: single},
			{name: single.Name + "_b", split: "train[50%:]", valSplit: "val[50%:]", weight: 0.5, ds: single},
		}},
	}
	var paths []string
	for _, f := range files {
		path := filepath.Join(o.Dir, f.name)
		if err := atomicfile.Write(path, mixYAML(o.Seed, f.about, f.entries)); err != nil {
			return nil, fmt.Errorf("synth: %w", err)
		}
		paths = append(paths, path)
	}
	steps := filepath.Join(o.Dir, "mix-steps.yaml")
	if err := atomicfile.Write(steps, stepsYAML(o.Seed, all)); err != nil {
		return nil, fmt.Errorf("synth: %w", err)
	}
	paths = append(paths, steps)
	return paths, nil
}

// mixYAML renders a mix config in the README's format, with only the keys
// it documents.
func mixYAML(seed uint64, about string, entries []mixEntry) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Written by `oxefs synth`: %s.\n", about)
	b.WriteString("# SYNTHETIC datasets shaped like Open X-Embodiment, not real robot data.\n")
	// One pass over a small synthetic mix is a handful of batches: list
	// enough for trials and benchmarks (epochs repeat with new orders).
	fmt.Fprintf(&b, "seed: %d\nbatch_size: %d\nimage_size: [%d, %d]\nnum_batches: %d\ndatasets:\n",
		seed, mixBatchSize, mixImageSize, mixImageSize, mixNumBatches)
	for _, e := range entries {
		d := e.ds
		fmt.Fprintf(&b, "  - name: %s\n", e.name)
		fmt.Fprintf(&b, "    source: %s\n", yamlString(d.dir))
		fmt.Fprintf(&b, "    split: %s\n", yamlString(e.split))
		fmt.Fprintf(&b, "    val_split: %s\n", yamlString(e.valSplit))
		fmt.Fprintf(&b, "    weight: %.1f\n", e.weight)
		fmt.Fprintf(&b, "    image_key: %s\n", d.Cameras[0].Key)
		fmt.Fprintf(&b, "    offset: %d\n", d.Offset)
		fmt.Fprintf(&b, "    language_key: %s\n", d.Language.Key)
		keys := make([]string, len(d.Actions))
		for i, a := range d.Actions {
			keys[i] = a.Key
		}
		fmt.Fprintf(&b, "    action_keys: [%s]\n", strings.Join(keys, ", "))
		if d.State.Key != "" {
			fmt.Fprintf(&b, "    state_key: %s\n", d.State.Key)
		}
	}
	return b.Bytes()
}

// stepsYAML renders the step-sample mix: every dataset, two camera slots
// (primary 256×256 from the first camera that is not on the wrist, wrist
// 128×128 from the wrist camera where the dataset has one), two steps of
// camera and state history and a chunk of 50 actions — the sample of an
// ACT- or Diffusion-Policy-like trainer.
func stepsYAML(seed uint64, entries []mixEntry) []byte {
	var b bytes.Buffer
	b.WriteString("# Written by `oxefs synth`: all the synthetic datasets as step samples: two camera slots,\n")
	b.WriteString("# two steps of history, a chunk of 50 actions.\n")
	b.WriteString("# SYNTHETIC datasets shaped like Open X-Embodiment, not real robot data.\n")
	fmt.Fprintf(&b, "seed: %d\nbatch_size: %d\nnum_batches: %d\n", seed, mixBatchSize, mixNumBatches)
	b.WriteString("sample:\n  cameras:\n")
	b.WriteString("    primary: {size: [256, 256], steps: [-1, 0]}\n")
	b.WriteString("    wrist: {size: [128, 128], steps: [-1, 0]}\n")
	b.WriteString("  state: {steps: [-1, 0]}\n  action: {steps: \"0:50\"}\ndatasets:\n")
	for _, e := range entries {
		d := e.ds
		fmt.Fprintf(&b, "  - name: %s\n", e.name)
		fmt.Fprintf(&b, "    source: %s\n", yamlString(d.dir))
		fmt.Fprintf(&b, "    split: %s\n", yamlString(e.split))
		fmt.Fprintf(&b, "    val_split: %s\n", yamlString(e.valSplit))
		fmt.Fprintf(&b, "    weight: %.1f\n", e.weight)
		var slots []string
		for _, c := range d.Cameras {
			if !c.Wrist {
				slots = append(slots, "primary: "+c.Key)
				break
			}
		}
		for _, c := range d.Cameras {
			if c.Wrist {
				slots = append(slots, "wrist: "+c.Key)
				break
			}
		}
		fmt.Fprintf(&b, "    cameras: {%s}\n", strings.Join(slots, ", "))
		fmt.Fprintf(&b, "    language_key: %s\n", d.Language.Key)
		keys := make([]string, len(d.Actions))
		for i, a := range d.Actions {
			keys[i] = a.Key
		}
		fmt.Fprintf(&b, "    action_keys: [%s]\n", strings.Join(keys, ", "))
		if d.State.Key != "" {
			fmt.Fprintf(&b, "    state_key: %s\n", d.State.Key)
		}
	}
	return b.Bytes()
}

// yamlString quotes s as a YAML double-quoted scalar (a JSON string is
// one), so that paths and split strings with any characters read back
// unchanged.
func yamlString(s string) string {
	q, _ := json.Marshal(s) // a string always marshals
	return string(q)
}
