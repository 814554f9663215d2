package pairs

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/oxefs/oxefs/format/rlds"
	"github.com/oxefs/oxefs/format/rlds/tfds"
)

// Meta is one sample's metadata record, the drop-in for a trainer's batch
// dict (DESIGN "The mount"). Build fills it, reusing its slices.
type Meta struct {
	DatasetName string `json:"dataset_name"`
	// EpisodeID is stable: dataset/split/shard/record.
	EpisodeID string `json:"episode_id"`
	// FrameIdx is t, the first frame.
	FrameIdx int `json:"frame_idx"`
	// FrameIndices are all F frames, ascending.
	FrameIndices []int `json:"frame_indices"`
	Offset       int   `json:"offset"`
	// Language is the instruction at t (or the episode's), "" when the
	// dataset has none.
	Language string `json:"language"`
	// Action is the sum of the per-step actions over [t, t+offset), the
	// action keys concatenated in config order, summed in float64 and
	// padded with zeros to the mix's largest action dimension.
	Action []float64 `json:"action"`
	// InitialState is the state at t, padded with zeros likewise.
	InitialState []float64 `json:"initial_state"`
	Robot        string    `json:"robot"`
}

// DatasetMeta is what `meta: dataset` keeps.
type DatasetMeta struct {
	DatasetName string `json:"dataset_name"`
}

// For returns what to serialise for the sample under mode: m itself for
// MetaFull, a DatasetMeta for MetaDataset, nil for MetaNone (no .json).
func (m *Meta) For(mode MetaMode) any {
	switch mode {
	case MetaFull:
		return m
	case MetaDataset:
		return DatasetMeta{DatasetName: m.DatasetName}
	}
	return nil
}

// numeric reports whether a feature holds numbers oxefs can sum or read.
func numeric(f tfds.Feature) bool {
	switch f.Kind {
	case tfds.KindClassLabel:
		return true
	case tfds.KindTensor:
		return f.DType != "string"
	}
	return false
}

// vectorDim is the number of values one step of a per-step numeric feature
// holds.
func vectorDim(ds *rlds.Dataset, field, key string) (int, error) {
	usable := func(f tfds.Feature) bool { return numeric(f) && f.PerStep && !f.Ragged() && knownShape(f.Shape) }
	f, ok := ds.Features.Lookup(key)
	if !ok || !usable(f) {
		return 0, keyError(ds, field, key, "a per-step numeric tensor of known shape", usable)
	}
	n := 1
	for _, d := range f.Shape {
		n *= d
	}
	return n, nil
}

func knownShape(shape []int) bool {
	for _, d := range shape {
		if d < 0 {
			return false
		}
	}
	return true
}

// keyError says that a config field names a key that does not exist (a
// *rlds.UnknownFeatureError) or a feature of the wrong kind, listing the
// keys that would do.
func keyError(ds *rlds.Dataset, field, key, want string, usable func(tfds.Feature) bool) error {
	var valid []string
	for _, f := range ds.Features.All() {
		if usable(f) {
			valid = append(valid, f.Key)
		}
	}
	f, ok := ds.Features.Lookup(key)
	if !ok {
		return fmt.Errorf("%s: %w", field, &rlds.UnknownFeatureError{Dataset: ds.Name, Key: key, Valid: valid})
	}
	scope := "episode-level"
	if f.PerStep {
		scope = "per-step"
	}
	return fmt.Errorf("%s: dataset %s: %q is a %s %s %v %v feature, not %s (valid: %s)",
		field, ds.Name, key, scope, f.DType, f.Shape, f.Kind, want, strings.Join(valid, ", "))
}

// Dims returns the action dimension (the per-step sizes of actionKeys
// added up) and the state dimension of a dataset, for the mix to take the
// largest of each. Keys must be per-step numeric features of known shape.
func Dims(ds *rlds.Dataset, actionKeys []string, stateKey string) (action, state int, err error) {
	for _, k := range actionKeys {
		n, err := vectorDim(ds, "action_keys", k)
		if err != nil {
			return 0, 0, err
		}
		action += n
	}
	if stateKey != "" {
		if state, err = vectorDim(ds, "state_key", stateKey); err != nil {
			return 0, 0, err
		}
	}
	return action, state, nil
}

// languageKind says how a language feature is stored.
type languageKind uint8

const (
	languageNone  languageKind = iota
	languageText               // Text or string tensor: UTF-8 bytes
	languageCodes              // integer tensor: code points (or UTF-8 bytes)
)

func languageOf(f tfds.Feature) languageKind {
	switch {
	case f.Ragged():
		return languageNone
	case f.Kind == tfds.KindText, f.Kind == tfds.KindTensor && f.DType == "string" && len(f.Shape) == 0:
		return languageText
	case f.Kind == tfds.KindTensor && f.DType != "string" && f.DType != "bool" &&
		f.DType != "float16" && f.DType != "float32" && f.DType != "float64" && len(f.Shape) == 1 && f.Shape[0] > 0:
		return languageCodes
	}
	return languageNone
}

// decodeCodes turns an integer instruction tensor into text, appending to
// dst. Zeros are padding and are dropped (language_table's own decoder and
// TFDS's fixture generator drop them all, trailing or not). When every
// other value is a byte and together they form valid UTF-8 with at least
// one multi-byte sequence, they are UTF-8 bytes (language_table stores its
// instructions so); otherwise each value is a Unicode code point, and one
// that is not a valid code point becomes U+FFFD.
func decodeCodes(dst []byte, vals []float64) []byte {
	start := len(dst)
	bytesOnly, high := true, false
	for _, v := range vals {
		if v == 0 {
			continue
		}
		if v < 0 || v > 255 || v != float64(int(v)) {
			bytesOnly = false
		}
		if v >= 0x80 {
			high = true
		}
		dst = append(dst, byte(int(v)))
	}
	if bytesOnly && high && utf8.Valid(dst[start:]) {
		return dst
	}
	dst = dst[:start]
	for _, v := range vals {
		if v == 0 {
			continue
		}
		r := utf8.RuneError
		if v > 0 && v <= utf8.MaxRune && v == float64(int(v)) {
			r = rune(int(v))
		}
		dst = utf8.AppendRune(dst, r)
	}
	return dst
}
