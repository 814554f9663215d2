package synth

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/oxefs/oxefs/format/synthetic"
)

// The TFDS feature classes, as features.json names them.
const (
	classDict    = "tensorflow_datasets.core.features.features_dict.FeaturesDict"
	classDataset = "tensorflow_datasets.core.features.dataset_feature.Dataset"
	classTensor  = "tensorflow_datasets.core.features.tensor_feature.Tensor"
	classScalar  = "tensorflow_datasets.core.features.scalar.Scalar"
	classImage   = "tensorflow_datasets.core.features.image_feature.Image"
	classText    = "tensorflow_datasets.core.features.text_feature.Text"
)

// leaf is one feature of the dataset, under its flattened key, with its
// features.json entry.
type leaf struct {
	key  string
	json map[string]any
}

func dims(shape ...int) map[string]any {
	if len(shape) == 0 {
		return map[string]any{}
	}
	d := make([]string, len(shape))
	for i, n := range shape {
		d[i] = strconv.Itoa(n) // proto JSON writes int64 as strings
	}
	return map[string]any{"dimensions": d}
}

func tensorLeaf(key, dtype string, shape ...int) leaf {
	class := classTensor
	if len(shape) == 0 {
		class = classScalar
	}
	return leaf{key, map[string]any{
		"pythonClassName": class,
		"tensor":          map[string]any{"dtype": dtype, "encoding": "none", "shape": dims(shape...)},
	}}
}

func textLeaf(key string) leaf {
	return leaf{key, map[string]any{"pythonClassName": classText, "text": map[string]any{}}}
}

// leaves lists every feature of the dataset, in the order of its features:
// the RLDS step scalars, the cameras, actions, state and language, and the
// episode metadata.
func leaves(d synthetic.Dataset) []leaf {
	ls := []leaf{
		tensorLeaf("steps/is_first", "bool"),
		tensorLeaf("steps/is_last", "bool"),
		tensorLeaf("steps/is_terminal", "bool"),
		tensorLeaf("steps/reward", "float32"),
		tensorLeaf("steps/discount", "float32"),
	}
	format := "jpeg"
	if d.PNG {
		format = "png"
	}
	for _, c := range d.Cameras {
		ls = append(ls, leaf{c.Key, map[string]any{
			"pythonClassName": classImage,
			"image":           map[string]any{"dtype": "uint8", "encodingFormat": format, "shape": dims(c.Height, c.Width, 3)},
			"description":     "Synthetic camera frames written by oxefs synth, not real robot data.",
		}})
	}
	for _, a := range d.Actions {
		ls = append(ls, tensorLeaf(a.Key, "float32", a.Dim))
	}
	if d.State.Key != "" {
		ls = append(ls, tensorLeaf(d.State.Key, "float32", d.State.Dim))
	}
	if d.Language.Codepoints > 0 {
		ls = append(ls, tensorLeaf(d.Language.Key, "int32", d.Language.Codepoints))
	} else {
		ls = append(ls, textLeaf(d.Language.Key))
	}
	return append(ls,
		tensorLeaf("episode_metadata/episode_id", "int64"),
		textLeaf("episode_metadata/file_path"),
	)
}

// featuresJSON returns the dataset's features.json: the leaves nested into
// FeaturesDicts by their key, with `steps` a TFDS Dataset of unknown length,
// exactly the tree TFDS writes for an RLDS dataset. encoding/json sorts the
// keys, so the bytes depend on the layout alone.
func featuresJSON(d synthetic.Dataset) ([]byte, error) {
	root := map[string]any{}
	for _, l := range leaves(d) {
		parts := strings.Split(l.key, "/")
		node := root
		for _, p := range parts[:len(parts)-1] {
			child, ok := node[p]
			if !ok {
				child = map[string]any{}
				node[p] = child
			}
			next, ok := child.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("dataset %s: feature %q lies under a leaf", d.Name, l.key)
			}
			node = next
		}
		last := parts[len(parts)-1]
		if _, dup := node[last]; dup {
			return nil, fmt.Errorf("dataset %s: feature %q defined twice", d.Name, l.key)
		}
		node[last] = l
	}
	tree, err := toFeature(root, "")
	if err != nil {
		return nil, err
	}
	return json.MarshalIndent(tree, "", "    ")
}

// toFeature turns the nested key tree into features.json objects.
func toFeature(node map[string]any, key string) (map[string]any, error) {
	feats := make(map[string]any, len(node))
	for name, child := range node {
		switch c := child.(type) {
		case leaf:
			feats[name] = c.json
		case map[string]any:
			f, err := toFeature(c, key+"/"+name)
			if err != nil {
				return nil, err
			}
			feats[name] = f
		}
	}
	dict := map[string]any{"pythonClassName": classDict, "featuresDict": map[string]any{"features": feats}}
	if key == "/steps" {
		return map[string]any{
			"pythonClassName": classDataset,
			"sequence":        map[string]any{"feature": dict, "length": "-1"},
		}, nil
	}
	return dict, nil
}

// datasetInfo is dataset_info.json: the fields of TFDS's DatasetInfo proto
// that a reader needs, in proto-JSON form (int64 as strings).
type datasetInfo struct {
	Citation     string            `json:"citation"`
	Description  string            `json:"description"`
	FileFormat   string            `json:"fileFormat"`
	ModuleName   string            `json:"moduleName"`
	Name         string            `json:"name"`
	ReleaseNotes map[string]string `json:"releaseNotes"`
	Splits       []splitInfo       `json:"splits"`
	Version      string            `json:"version"`
}

type splitInfo struct {
	FilepathTemplate string   `json:"filepathTemplate"`
	Name             string   `json:"name"`
	NumBytes         string   `json:"numBytes"`
	ShardLengths     []string `json:"shardLengths"`
}

// shardTemplate is TFDS's default file name template.
const shardTemplate = "{DATASET}-{SPLIT}.{FILEFORMAT}-{SHARD_X_OF_Y}"

// version is the TFDS version directory every synthetic dataset is written
// under.
const version = "1.0.0"

// shardName expands shardTemplate: TFDS pads shard numbers to five digits,
// or more when the count needs them.
func shardName(dataset, split string, shard, shards int) string {
	width := max(len(strconv.Itoa(shards)), 5)
	return fmt.Sprintf("%s-%s.tfrecord-%0*d-of-%0*d", dataset, split, width, shard, width, shards)
}

func (p *plannedDataset) infoJSON(seed uint64, shardBytes [][]int64) ([]byte, error) {
	info := datasetInfo{
		Description: fmt.Sprintf("SYNTHETIC data written by `oxefs synth` (seed %d), shaped like the Open X-Embodiment "+
			"dataset %s: same kinds of cameras, actions, states and language. Not real robot data.", seed, p.Like),
		FileFormat:   "tfrecord",
		ModuleName:   "oxefs.synth",
		Name:         p.Name,
		ReleaseNotes: map[string]string{version: "Synthetic data for oxefs trials, tests and benchmarks."},
		Version:      version,
	}
	for i, s := range p.splits {
		si := splitInfo{FilepathTemplate: shardTemplate, Name: s.name}
		var total int64
		for j, sh := range s.shards {
			si.ShardLengths = append(si.ShardLengths, strconv.Itoa(sh.end-sh.start))
			total += shardBytes[i][j]
		}
		si.NumBytes = strconv.FormatInt(total, 10)
		info.Splits = append(info.Splits, si)
	}
	return json.MarshalIndent(info, "", "  ")
}
