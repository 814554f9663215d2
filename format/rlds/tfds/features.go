package tfds

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/oxefs/oxefs/episode"
)

// Feature is one leaf of the feature tree, under the key TFDS stores it as in
// each episode's tf.train.Example.
//
// How TFDS serializes a feature tree (core/example_serializer.py and
// features/{features_dict,sequence_feature,dataset_feature}.py):
// get_serialized_info() gives a nested dict of tensors, one per leaf;
// utils.flatten_nest_dict joins the nested dict keys with "/"; each leaf
// becomes one tf.train.Feature. A Dataset (RLDS `steps`) or Sequence
// encodes its elements one by one and stacks them (stack_nested), so a leaf
// inside `steps` is ONE list holding every step's values concatenated in step
// order: `steps/action` of a 120-step episode with action shape [7] is a
// float_list of 840 values, `steps/observation/image` a bytes_list of 120
// encoded images. Booleans and all integer types become int64_list, floats
// float_list, strings, images and encoded tensors bytes_list. An optional
// Tensor whose value is None is absent from the Example.
//
// A leaf nested in two or more sequence levels (a Sequence inside `steps`, a
// Sequence of Sequences, a Video inside `steps`) is ragged, and TFDS stores it
// under two kinds of keys instead of Key: Key+"/ragged_flat_values" holds all
// values and Key+"/ragged_row_lengths_0" ... the lengths of each inner level
// (see SequenceRank and ExampleKeys).
type Feature struct {
	Key string // flattened, "steps/observation/image"
	// Kind is the neutral model's feature kind; TFDS stores each so:
	//   - KindTensor: TFDS's Tensor, Scalar (a Tensor of shape []) and
	//     BBoxFeature (float32 [4]). With Encoding "none" the values are an
	//     int64_list (every integer dtype and bool), a float_list (every
	//     float dtype, float64 included, stored as float32) or a bytes_list
	//     (dtype string), flattened in row-major order. With Encoding
	//     "bytes" or "zlib" each element is one bytes value: the tensor's
	//     raw little-endian bytes, zlib-compressed for "zlib".
	//   - KindImage: Image and LabeledImage, one encoded image (Encoding
	//     "jpeg" or "png", or "" when features.json does not say) per
	//     element, in a bytes_list.
	//   - KindText: one UTF-8 string per element, in a bytes_list.
	//   - KindClassLabel: one int64 label per element, in an int64_list.
	//   - KindVideo: a sequence of encoded frames, one bytes value per
	//     frame; Shape is [frames, height, width, channels], frames usually
	//     -1.
	//   - KindUnsupported: a feature class oxefs cannot read (Audio, custom
	//     classes, TranslationVariableLanguages), listed so that inspect
	//     shows it; a dataset that has one stays usable for its other keys.
	Kind  episode.Kind
	DType string // TFDS dtype name: uint8, int32, int64, float32, float64, bool, string, ...
	// Shape of one element: for a PerStep feature the shape of one step's
	// value (the steps dimension left out); for a feature inside a Sequence,
	// the sequence's length comes first. -1 marks an unknown dimension.
	// Images are [height, width, channels].
	Shape []int
	// Encoding: tensors "none", "bytes" or "zlib"; images and videos the
	// encodingFormat, "jpeg" or "png", or "" when unspecified.
	Encoding string
	// PerStep is true when the feature lives inside a Dataset feature (RLDS
	// `steps`): the Example holds its values for every step.
	PerStep bool
	// Class is the feature's python class name from features.json, e.g.
	// "tensorflow_datasets.core.features.image_feature.Image"; empty when the
	// file names none.
	Class string
	// Optional is TFDS's Tensor(optional=True): the key may be missing from
	// an Example, meaning None.
	Optional bool
	// NumClasses is a ClassLabel's number of classes.
	NumClasses int64
	// SequenceRank is TFDS's TensorInfo.sequence_rank of the stored tensor:
	// the number of Dataset/Sequence levels around the values (a Video
	// counts as one). 0 for an episode-level scalar or tensor, 1 for a plain
	// per-step feature. At 2 and above the feature is ragged.
	SequenceRank int
}

// Ragged reports whether TFDS stores the feature as ragged_flat_values plus
// ragged_row_lengths_N keys rather than under Key.
func (f Feature) Ragged() bool { return f.SequenceRank >= 2 }

// ExampleKeys lists the tf.train.Example keys that hold the feature: Key
// itself, or for a ragged feature Key+"/ragged_flat_values" followed by
// Key+"/ragged_row_lengths_0" up to SequenceRank-2.
func (f Feature) ExampleKeys() []string {
	if !f.Ragged() {
		return []string{f.Key}
	}
	keys := []string{f.Key + "/ragged_flat_values"}
	for i := 0; i < f.SequenceRank-1; i++ {
		keys = append(keys, fmt.Sprintf("%s/ragged_row_lengths_%d", f.Key, i))
	}
	return keys
}

// Features is the flattened feature tree of a dataset.
type Features struct {
	all   []Feature // sorted by key
	byKey map[string]int
}

// All returns every leaf feature, sorted by key.
func (f *Features) All() []Feature {
	return append([]Feature(nil), f.all...)
}

// Lookup returns the feature with the given flattened key.
func (f *Features) Lookup(key string) (Feature, bool) {
	i, ok := f.byKey[key]
	if !ok {
		return Feature{}, false
	}
	return f.all[i], true
}

// Index returns the position of the feature with the given key in All.
func (f *Features) Index(key string) (int, bool) {
	i, ok := f.byKey[key]
	return i, ok
}

// Images returns the image features (Kind episode.KindImage), sorted by key: the keys
// a config may name as a camera.
func (f *Features) Images() []Feature {
	var out []Feature
	for _, x := range f.all {
		if x.Kind == episode.KindImage {
			out = append(out, x)
		}
	}
	return out
}

// Keys returns every flattened key, sorted.
func (f *Features) Keys() []string {
	keys := make([]string, len(f.all))
	for i, x := range f.all {
		keys[i] = x.Key
	}
	return keys
}

// featureJSON is TFDS's Feature proto as json_format.MessageToDict writes it
// into features.json: the python class name plus exactly one content field.
type featureJSON struct {
	PythonClassName string `json:"pythonClassName"`

	FeaturesDict *struct {
		Features map[string]*featureJSON `json:"features"`
	} `json:"featuresDict"`
	Sequence *struct {
		Feature *featureJSON `json:"feature"`
		Length  *pbInt64     `json:"length"`
	} `json:"sequence"`
	Tensor     *tensorJSON `json:"tensor"`
	Image      *imageJSON  `json:"image"`
	Video      *imageJSON  `json:"video"`
	Text       *struct{}   `json:"text"`
	ClassLabel *struct {
		NumClasses pbInt64 `json:"numClasses"`
	} `json:"classLabel"`
	BoundingBox *tensorJSON `json:"boundingBox"`
	Translation *struct {
		Languages                   []string `json:"languages"`
		VariableLanguagesPerExample bool     `json:"variableLanguagesPerExample"`
	} `json:"translation"`
	Audio       json.RawMessage `json:"audio"`
	JSONFeature json.RawMessage `json:"jsonFeature"`

	// Legacy (before TFDS 4.6) features.json: {"type": ..., "content": ...}.
	Type    json.RawMessage `json:"type"`
	Content json.RawMessage `json:"content"`
}

type shapeJSON struct {
	Dimensions []pbInt64 `json:"dimensions"`
}

type tensorJSON struct {
	Shape    shapeJSON `json:"shape"`
	DType    string    `json:"dtype"`
	Encoding string    `json:"encoding"`
	Optional bool      `json:"optional"`
}

type imageJSON struct {
	Shape          shapeJSON `json:"shape"`
	DType          string    `json:"dtype"`
	EncodingFormat string    `json:"encodingFormat"`
}

// content names the content fields that are set.
func (j *featureJSON) content() []string {
	var set []string
	add := func(ok bool, name string) {
		if ok {
			set = append(set, name)
		}
	}
	add(j.FeaturesDict != nil, "featuresDict")
	add(j.Sequence != nil, "sequence")
	add(j.Tensor != nil, "tensor")
	add(j.Image != nil, "image")
	add(j.Video != nil, "video")
	add(j.Text != nil, "text")
	add(j.ClassLabel != nil, "classLabel")
	add(j.BoundingBox != nil, "boundingBox")
	add(j.Translation != nil, "translation")
	add(isSet(j.Audio), "audio")
	add(isSet(j.JSONFeature), "jsonFeature")
	return set
}

func isSet(m json.RawMessage) bool {
	return len(m) > 0 && !bytes.Equal(m, []byte("null"))
}

// classContent is the content field each TFDS feature class writes, by the
// last component of its python class name. Classes not listed here are
// read by their content field when it is one of these, else unsupported.
var classContent = map[string]string{
	"FeaturesDict": "featuresDict",
	"Dataset":      "sequence",
	"Sequence":     "sequence",
	"Tensor":       "tensor",
	"Scalar":       "tensor",
	"Image":        "image",
	"LabeledImage": "image",
	"Video":        "video",
	"Text":         "text",
	"ClassLabel":   "classLabel",
	"BBoxFeature":  "boundingBox",
	"Translation":  "translation",
}

// ParseFeatures parses the bytes of a features.json as TFDS 4.x writes it
// (FeatureConnector.save_config) and flattens it into its leaf features.
// The root must be a FeaturesDict. A feature is read by its python class
// name (the last dotted component: FeaturesDict, Dataset, Sequence, Tensor,
// Scalar, Image, LabeledImage, Video, Text, ClassLabel, BBoxFeature,
// Translation); a file that omits the class name, or names a class oxefs does
// not know, is read by its content field instead ("tensor", "image", ...;
// "sequence" then means a Sequence, not a Dataset). Classes that are neither
// are kept as episode.KindUnsupported.
//
// Differences from TFDS: a Sequence or Dataset without "length" is read as
// variable-length (-1), where TFDS would read the proto default 0; a Dataset
// nested inside another Dataset or Sequence is refused (TFDS supports one
// level); the pre-4.6 {"type", "content"} format is refused.
func ParseFeatures(b []byte) (*Features, error) {
	var root featureJSON
	if err := json.Unmarshal(b, &root); err != nil {
		return nil, fmt.Errorf("features.json: %w", err)
	}
	p := flattener{byKey: map[string]int{}}
	if err := p.root(&root); err != nil {
		return nil, fmt.Errorf("features.json: %w", err)
	}
	sort.Slice(p.out, func(i, j int) bool { return p.out[i].Key < p.out[j].Key })
	for i, f := range p.out {
		p.byKey[f.Key] = i
	}
	return &Features{all: p.out, byKey: p.byKey}, nil
}

type flattener struct {
	out   []Feature
	byKey map[string]int // keys seen so far, to refuse duplicates
}

// scope is where in the tree a feature sits.
type scope struct {
	inDataset bool
	rank      int   // Dataset and Sequence levels around it
	seqDims   []int // lengths of the Sequence levels inside the Dataset, outermost first
}

func (p *flattener) root(j *featureJSON) error {
	if isSet(j.Type) && isSet(j.Content) {
		return errors.New(`legacy {"type", "content"} format (TFDS before 4.6) is not supported (regenerate features.json with TFDS 4.6 or later)`)
	}
	class, err := resolveClass(j, "")
	if err != nil {
		return err
	}
	if class != "FeaturesDict" {
		return fmt.Errorf("root feature is %s, want a FeaturesDict", describe(j))
	}
	return p.walk(j, "", scope{})
}

func join(parent, name string) string {
	if parent == "" {
		return name
	}
	return parent + "/" + name
}

func describe(j *featureJSON) string {
	if j.PythonClassName != "" {
		return j.PythonClassName
	}
	if c := j.content(); len(c) > 0 {
		return "a feature with " + strings.Join(c, ", ") + " content"
	}
	return "a feature without content"
}

// resolveClass returns the TFDS class (a key of classContent) to read j as,
// or "" for an unsupported feature.
func resolveClass(j *featureJSON, key string) (string, error) {
	at := ""
	if key != "" {
		at = fmt.Sprintf("feature %q: ", key)
	}
	set := j.content()
	if len(set) > 1 {
		return "", fmt.Errorf("%shas %d content fields (%s), want one", at, len(set), strings.Join(set, ", "))
	}
	if isSet(j.Type) && isSet(j.Content) {
		return "", fmt.Errorf(`%slegacy {"type", "content"} format (TFDS before 4.6) is not supported`, at)
	}
	short := j.PythonClassName[strings.LastIndexByte(j.PythonClassName, '.')+1:]
	if want, ok := classContent[short]; ok {
		if len(set) == 0 || set[0] != want {
			return "", fmt.Errorf("%s%s needs %q content, has %v", at, j.PythonClassName, want, set)
		}
		return short, nil
	}
	if len(set) == 0 {
		return "", fmt.Errorf("%s%s has no content", at, describe(j))
	}
	// Unknown or missing class name: go by the content field.
	return contentClass[set[0]], nil
}

// contentClass is the class a feature is read as when its python class name
// is missing or unknown. A "sequence" is a Sequence: without the class name
// there is no telling it from a Dataset.
var contentClass = map[string]string{
	"featuresDict": "FeaturesDict",
	"sequence":     "Sequence",
	"tensor":       "Tensor",
	"image":        "Image",
	"video":        "Video",
	"text":         "Text",
	"classLabel":   "ClassLabel",
	"boundingBox":  "BBoxFeature",
	"translation":  "Translation",
}

func (p *flattener) walk(j *featureJSON, key string, sc scope) error {
	class, err := resolveClass(j, key)
	if err != nil {
		return err
	}
	switch class {
	case "FeaturesDict":
		for name, child := range j.FeaturesDict.Features {
			if child == nil {
				return fmt.Errorf("feature %q is null", join(key, name))
			}
			if err := p.walk(child, join(key, name), sc); err != nil {
				return err
			}
		}
		return nil
	case "Dataset":
		if sc.inDataset || sc.rank > 0 {
			return fmt.Errorf("feature %q: a Dataset inside a Dataset or Sequence is not supported", key)
		}
		inner := j.Sequence.Feature
		if inner == nil {
			return fmt.Errorf("feature %q: Dataset without an inner feature", key)
		}
		return p.walk(inner, key, scope{inDataset: true, rank: 1})
	case "Sequence":
		inner := j.Sequence.Feature
		if inner == nil {
			return fmt.Errorf("feature %q: Sequence without an inner feature", key)
		}
		length := -1
		if j.Sequence.Length != nil {
			n := int64(*j.Sequence.Length)
			if n < -1 || n > maxDim {
				return fmt.Errorf("feature %q: bad Sequence length %d", key, n)
			}
			length = int(n)
		}
		sc.rank++
		sc.seqDims = append(sc.seqDims[:len(sc.seqDims):len(sc.seqDims)], length)
		return p.walk(inner, key, sc)
	case "Translation":
		if j.Translation.VariableLanguagesPerExample {
			return p.add(Feature{Key: key, Kind: episode.KindUnsupported, Class: j.PythonClassName}, sc)
		}
		// TFDS keeps the languages as a set.
		langs := slices.Compact(slices.Sorted(slices.Values(j.Translation.Languages)))
		for _, lang := range langs {
			f := Feature{Key: join(key, lang), Kind: episode.KindText, DType: "string", Shape: []int{}, Class: j.PythonClassName}
			if err := p.add(f, sc); err != nil {
				return err
			}
		}
		return nil
	}
	f := Feature{Key: key, Class: j.PythonClassName}
	switch class {
	case "Tensor", "Scalar":
		f.Kind = episode.KindTensor
		if err := tensorFeature(&f, j.Tensor, class == "Scalar"); err != nil {
			return err
		}
	case "BBoxFeature":
		f.Kind = episode.KindTensor
		if err := tensorFeature(&f, j.BoundingBox, false); err != nil {
			return err
		}
		if f.DType == "" {
			f.DType = "float32"
		}
	case "Image", "LabeledImage", "Video":
		img := j.Image
		f.Kind = episode.KindImage
		if class == "Video" {
			img, f.Kind = j.Video, episode.KindVideo
			sc.rank++ // a Video is a Sequence of Images
		}
		shape, err := parseShape(img.Shape)
		if err != nil {
			return fmt.Errorf("feature %q: %w", key, err)
		}
		f.Shape, f.DType, f.Encoding = shape, img.DType, strings.ToLower(img.EncodingFormat)
		if f.DType == "" {
			f.DType = "uint8"
		}
	case "Text":
		f.Kind, f.DType, f.Shape = episode.KindText, "string", []int{}
	case "ClassLabel":
		f.Kind, f.DType, f.Shape = episode.KindClassLabel, "int64", []int{}
		f.NumClasses = int64(j.ClassLabel.NumClasses)
	default:
		f.Kind = episode.KindUnsupported
	}
	return p.add(f, sc)
}

// maxDim bounds shape dimensions so that products of a few of them stay far
// from overflowing an int.
const maxDim = 1 << 31

func tensorFeature(f *Feature, t *tensorJSON, scalar bool) error {
	f.DType, f.Optional = t.DType, t.Optional
	if f.DType == "" {
		return fmt.Errorf("feature %q: tensor without a dtype", f.Key)
	}
	f.Encoding = strings.ToLower(t.Encoding)
	switch f.Encoding {
	case "":
		f.Encoding = "none"
	case "none", "bytes", "zlib":
	default:
		return fmt.Errorf("feature %q: unknown tensor encoding %q (TFDS writes none, bytes or zlib)", f.Key, t.Encoding)
	}
	if scalar {
		f.Shape = []int{}
		return nil
	}
	shape, err := parseShape(t.Shape)
	if err != nil {
		return fmt.Errorf("feature %q: %w", f.Key, err)
	}
	f.Shape = shape
	return nil
}

func parseShape(s shapeJSON) ([]int, error) {
	shape := make([]int, len(s.Dimensions))
	for i, d := range s.Dimensions {
		if d < -1 || d > maxDim {
			return nil, fmt.Errorf("bad shape dimension %d", d)
		}
		shape[i] = int(d)
	}
	return shape, nil
}

func (p *flattener) add(f Feature, sc scope) error {
	if _, dup := p.byKey[f.Key]; dup {
		return fmt.Errorf("two features flatten to the key %q", f.Key)
	}
	p.byKey[f.Key] = len(p.out)
	f.PerStep = sc.inDataset
	f.SequenceRank += sc.rank
	if len(sc.seqDims) > 0 {
		f.Shape = append(append([]int{}, sc.seqDims...), f.Shape...)
	}
	if f.Shape == nil && f.Kind != episode.KindUnsupported {
		f.Shape = []int{}
	}
	p.out = append(p.out, f)
	return nil
}
