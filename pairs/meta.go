package pairs

import (
	"unicode/utf8"

	"github.com/oxefs/oxefs/config"
)

// Meta is one sample's metadata record, the drop-in for a trainer's batch
// dict (README "The mount"). Build fills it, reusing its slices.
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
func (m *Meta) For(mode config.MetaMode) any {
	switch mode {
	case config.MetaFull:
		return m
	case config.MetaDataset:
		return DatasetMeta{DatasetName: m.DatasetName}
	}
	return nil
}

// languageKind says how a language feature is stored (config.Language).
type languageKind uint8

const (
	languageNone  languageKind = iota
	languageText               // Text or string tensor: UTF-8 bytes
	languageCodes              // integer tensor: code points (or UTF-8 bytes)
)

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
