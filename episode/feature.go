package episode

import (
	"fmt"
	"sort"
)

// Kind says what a feature's values mean. It is oxefs's one feature-kind
// enum: each format describes its features with it (format/rlds/tfds
// documents how TFDS stores each kind) and config's rules check it.
type Kind uint8

const (
	// KindTensor: numbers or strings of a fixed dtype and shape.
	KindTensor Kind = iota + 1
	// KindImage: a camera, one frame per element, stored as an encoded
	// image (Encoding "jpeg" or "png", or "" when the dataset does not
	// say) or in a video track that many episodes share (Encoding
	// "video/<codec>"; the episode's view is then a Video).
	KindImage
	// KindText: one UTF-8 string per element.
	KindText
	// KindClassLabel: one integer label per element.
	KindClassLabel
	// KindVideo: a sequence of encoded frames per element (TFDS's Video).
	// A camera whose steps are frames of a shared video track is a
	// KindImage.
	KindVideo
	// KindUnsupported: a feature the format cannot read. It is listed so that
	// inspect shows it; the dataset stays usable for its other keys.
	KindUnsupported
)

var kindNames = [...]string{KindTensor: "tensor", KindImage: "image", KindText: "text",
	KindClassLabel: "class_label", KindVideo: "video", KindUnsupported: "unsupported"}

func (k Kind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Feature is one leaf of a dataset's feature tree, under a flattened key
// such as "steps/observation/image".
type Feature struct {
	Key   string
	Kind  Kind
	DType string // uint8, int32, int64, float32, float64, bool, string, ...
	// Shape of one element: for a PerStep feature one step's value (the
	// steps dimension left out). -1 marks an unknown dimension. Images are
	// [height, width, channels].
	Shape []int
	// Encoding says how the format stores the values ("jpeg", "png" or
	// "video/<codec>" for cameras; format-specific for tensors).
	// Informational above the format.
	Encoding string
	// PerStep is true for a feature with one value per step, false for one
	// value per episode.
	PerStep bool
	// Ragged is true for a feature nested in more than one sequence level
	// (a sequence inside each step), which oxefs does not read.
	Ragged bool
	// Class is the format's own name for the feature type, for inspect.
	Class string
	// NumClasses is a class label's number of classes.
	NumClasses int64
}

// Features is a dataset's flattened feature tree, sorted by key.
type Features struct {
	all   []Feature
	byKey map[string]int
}

// NewFeatures indexes the features by key. A key given twice is an error.
func NewFeatures(all []Feature) (*Features, error) {
	fs := &Features{all: append([]Feature(nil), all...), byKey: make(map[string]int, len(all))}
	sort.Slice(fs.all, func(i, j int) bool { return fs.all[i].Key < fs.all[j].Key })
	for i, f := range fs.all {
		if _, dup := fs.byKey[f.Key]; dup {
			return nil, fmt.Errorf("feature %q is declared twice", f.Key)
		}
		fs.byKey[f.Key] = i
	}
	return fs, nil
}

// All returns every feature, sorted by key.
func (fs *Features) All() []Feature { return append([]Feature(nil), fs.all...) }

// Lookup returns the feature with the given key.
func (fs *Features) Lookup(key string) (Feature, bool) {
	i, ok := fs.byKey[key]
	if !ok {
		return Feature{}, false
	}
	return fs.all[i], true
}

// Keys returns every key, sorted.
func (fs *Features) Keys() []string {
	keys := make([]string, len(fs.all))
	for i, f := range fs.all {
		keys[i] = f.Key
	}
	return keys
}

// Matching returns the keys of the features for which ok is true, sorted.
func (fs *Features) Matching(ok func(Feature) bool) []string {
	var keys []string
	for _, f := range fs.all {
		if ok(f) {
			keys = append(keys, f.Key)
		}
	}
	return keys
}
