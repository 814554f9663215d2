package testkit

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// Manifest is testdata/manifest.json: the fixture datasets as
// tensorflow_datasets wrote them and TensorFlow read them back
// (testdata/generate.py), the ground truth tests check against. It holds
// the fields some test reads; the file has more.
type Manifest struct {
	Datasets map[string]ManifestDataset `json:"datasets"`
}

// ManifestDataset is one fixture dataset. Dir is relative to testdata.
type ManifestDataset struct {
	Name         string                   `json:"name"`
	Dir          string                   `json:"dir"`
	SplitOrder   []string                 `json:"split_order"`
	Splits       map[string]ManifestSplit `json:"splits"`
	ExampleKeys  []ManifestExampleKey     `json:"example_keys"`
	SplitStrings []ManifestSplitString    `json:"split_strings"`
}

// ManifestSplit is one split of a dataset and its shards.
type ManifestSplit struct {
	NumExamples  int64           `json:"num_examples"`
	ShardLengths []int64         `json:"shard_lengths"`
	Shards       []ManifestShard `json:"shards"`
}

// ManifestShard is one shard file and its records in file order.
type ManifestShard struct {
	File    string           `json:"file"`
	Records []ManifestRecord `json:"records"`
}

// ManifestRecord is one episode as TFDS read it.
type ManifestRecord struct {
	Index      int                    `json:"index"`
	EpisodeID  int64                  `json:"episode_id"`
	NumSteps   int                    `json:"num_steps"`
	IsFirst    []bool                 `json:"is_first"`
	IsLast     []bool                 `json:"is_last"`
	Reward     []float64              `json:"reward"`
	Discount   []float64              `json:"discount"`
	Language   string                 `json:"language"`
	Codepoints []int64                `json:"instruction_codepoints"`
	Action     map[string][][]float64 `json:"action"`
	State      map[string][][]float64 `json:"state"`
	Images     map[string]struct{ Height, Width, Channels int }
	Depth      *struct {
		SHA256 []string `json:"sha256_float32le_per_step"`
	} `json:"depth"`
	FilePath string `json:"file_path"`
	// LanguageSame is nil where the dataset's instruction is per episode.
	LanguageSame *bool `json:"language_all_steps_equal"`
}

// ManifestExampleKey is one key of a dataset's tf.train.Example and its
// kind.
type ManifestExampleKey struct {
	Key  string `json:"key"`
	Kind string `json:"kind"`
}

// ManifestSplitString is a split string TFDS was asked for and what it
// read: the episodes and file instructions, or its error.
type ManifestSplitString struct {
	Split            string  `json:"split"`
	OK               bool    `json:"ok"`
	EpisodeIDs       []int64 `json:"episode_ids"`
	FileInstructions []struct {
		File            string `json:"file"`
		Skip            int64  `json:"skip"`
		Take            int64  `json:"take"`
		ExamplesInShard int64  `json:"examples_in_shard"`
	} `json:"file_instructions"`
	Error string `json:"error"`
	Note  string `json:"note"`
}

// LoadManifest reads testdata/manifest.json; it fails the test when the
// file is missing or lists fewer than the three fixture datasets.
func LoadManifest(t testing.TB) Manifest {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(Testdata(t), "manifest.json"))
	if err != nil {
		t.Fatalf("the TFDS fixtures are missing (regenerate with python3 testdata/generate.py): %v", err)
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("testdata/manifest.json: %v", err)
	}
	if len(m.Datasets) < 3 {
		t.Fatalf("testdata/manifest.json lists %d datasets, want at least 3", len(m.Datasets))
	}
	return m
}

// Steps returns the episode lengths of a dataset's splits, in read order
// (shard by shard), by split.
func (d ManifestDataset) Steps() map[string][]int {
	out := make(map[string][]int)
	for name, s := range d.Splits {
		for _, sh := range s.Shards {
			for _, r := range sh.Records {
				out[name] = append(out[name], r.NumSteps)
			}
		}
	}
	return out
}
