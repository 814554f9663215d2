package config

import (
	"fmt"
	"strings"
)

// names is one enumeration's name table: the field it is written under and
// its values' names, the default first. The same table parses, prints and
// lists the valid choices in error messages.
type names struct {
	field string
	of    []string
}

func (n names) name(i uint8, typ string) string {
	if int(i) < len(n.of) {
		return n.of[i]
	}
	return fmt.Sprintf("%s(%d)", typ, i)
}

func (n names) valid(i uint8) bool { return int(i) < len(n.of) }

// parse returns the index of s, or a *ConfigError naming the field and the
// valid choices.
func (n names) parse(s string) (uint8, error) {
	for i, x := range n.of {
		if s == x {
			return uint8(i), nil
		}
	}
	return 0, &ConfigError{Field: n.field, Msg: n.notOneOf(s)}
}

func (n names) notOneOf(s string) string {
	return fmt.Sprintf("%q is not one of %s", s, strings.Join(n.of, ", "))
}

// FrameMode says which frames of [t, t+offset] a sample holds (pair_frames).
type FrameMode uint8

const (
	// FramesEndpoints: t and t+offset (F = 2). The default.
	FramesEndpoints FrameMode = iota
	// FramesAll: every frame t, t+1, …, t+offset (F = offset+1; the offset
	// must be fixed and the same in every dataset).
	FramesAll
	// FramesStride: every Stride-th frame t, t+k, t+2k, …, t+offset
	// (F = offset/k+1; the offset must be fixed, a multiple of k and the
	// same in every dataset).
	FramesStride
	// FramesFixedN: N frames evenly spaced from t to t+offset, both
	// included: frame i is t + ⌊i·offset/(N−1) + ½⌋ (halves round up,
	// computed exactly in integers), so the frames are distinct when
	// offset ≥ N−1, which the config must guarantee. Equal to
	// np.round(np.linspace(t, t+offset, N)) except at exact halves, where
	// numpy rounds to even.
	FramesFixedN
)

var frameModes = names{"pair_frames", []string{"endpoints", "all", "stride", "fixed_n"}}

func (m FrameMode) String() string { return frameModes.name(uint8(m), "FrameMode") }

// Valid reports whether m is one of the modes.
func (m FrameMode) Valid() bool { return frameModes.valid(uint8(m)) }

// MarshalText writes the mode's name, as the config spells it.
func (m FrameMode) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// ParseFrameMode reads a pair_frames value; an unknown one is a
// *ConfigError listing the valid choices.
func ParseFrameMode(s string) (FrameMode, error) {
	i, err := frameModes.parse(s)
	return FrameMode(i), err
}

// Layout is the order of a batch's dimensions.
type Layout uint8

const (
	// BFHWC: [B, F, H, W, 3]; a sample's slot is [F][H][W][3]. The default.
	BFHWC Layout = iota
	// BCFHW: [B, 3, F, H, W]; a sample's slot is [3][F][H][W].
	BCFHW
)

var layouts = names{"layout", []string{"BFHWC", "BCFHW"}}

func (l Layout) String() string { return layouts.name(uint8(l), "Layout") }

// Valid reports whether l is one of the layouts.
func (l Layout) Valid() bool { return layouts.valid(uint8(l)) }

// MarshalText writes the layout's name, as the config spells it.
func (l Layout) MarshalText() ([]byte, error) { return []byte(l.String()), nil }

// ParseLayout reads a layout value; an unknown one is a *ConfigError
// listing the valid choices.
func ParseLayout(s string) (Layout, error) {
	i, err := layouts.parse(s)
	return Layout(i), err
}

// ResizeMode says how a frame of another aspect ratio reaches the target
// size. Each is a TensorFlow expression, reproduced exactly (then truncated
// to uint8 like everything else):
type ResizeMode uint8

const (
	// Squash: straight to the target size, aspect ratio not kept:
	// tf.image.resize(img, [H, W], "bilinear"). The default.
	Squash ResizeMode = iota
	// Crop: cut the largest centred box of the target's aspect ratio, then
	// resize it: Keras's smart_resize(img, [H, W]) (bilinear). With an
	// input of h×w, the box is ch = clamp(⌊w·H/W⌋, 1, h) rows by
	// cw = clamp(⌊h·W/H⌋, 1, w) columns, starting at row ⌊(h−ch)/2⌋ and
	// column ⌊(w−cw)/2⌋.
	Crop
	// Pad: resize to fit inside the target keeping the aspect ratio, and
	// fill the rest with zeros, the image centred:
	// tf.image.resize_with_pad(img, H, W, "bilinear"), whose float32
	// arithmetic is kept: ratio = max(w/W, h/H), the image becomes
	// ⌊h/ratio⌋×⌊w/ratio⌋ (at least 1), placed at row ⌊(H−h/ratio)/2⌋ and
	// column ⌊(W−w/ratio)/2⌋.
	Pad
)

var resizeModes = names{"resize", []string{"squash", "crop", "pad"}}

func (m ResizeMode) String() string { return resizeModes.name(uint8(m), "ResizeMode") }

// Valid reports whether m is one of the modes.
func (m ResizeMode) Valid() bool { return resizeModes.valid(uint8(m)) }

// MarshalText writes the mode's name, as the config spells it.
func (m ResizeMode) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// ParseResizeMode reads a resize value; an unknown one is a *ConfigError
// listing the valid choices.
func ParseResizeMode(s string) (ResizeMode, error) {
	i, err := resizeModes.parse(s)
	return ResizeMode(i), err
}

// DecodeMode says whether frames are TensorFlow's pixels exactly or a
// faster approximation.
type DecodeMode uint8

const (
	// DecodeExact: TensorFlow's decode and resize, bit for bit. The
	// default.
	DecodeExact DecodeMode = iota
	// DecodeFast: a JPEG at least twice the target size is decoded at 1/2,
	// 1/4 or 1/8 of its size by libjpeg-turbo (DCT-domain scaling), and
	// frames are resized with area weights (bilinear when enlarging) in
	// fixed point: close to exact (see the README's PSNR), not equal.
	DecodeFast
	// DecodeGPU: a JPEG frame is served as its compressed bytes, in the
	// place of its pixels, for the trainer to decode, resize and augment
	// on its device with the parameters the batch records; every other
	// frame (PNG, video, a JPEG too large for its place) is decoded as
	// DecodeExact decodes it. Frames must be BFHWC.
	DecodeGPU
)

var decodeModes = names{"decode", []string{"exact", "fast", "gpu"}}

func (m DecodeMode) String() string { return decodeModes.name(uint8(m), "DecodeMode") }

// Valid reports whether m is one of the modes.
func (m DecodeMode) Valid() bool { return decodeModes.valid(uint8(m)) }

// MarshalText writes the mode's name, as the config spells it.
func (m DecodeMode) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// Pixels is how frames of this mode are decoded where the daemon decodes
// them: DecodeGPU's frames that are not served compressed are exact.
func (m DecodeMode) Pixels() DecodeMode {
	if m == DecodeGPU {
		return DecodeExact
	}
	return m
}

// ParseDecodeMode reads a decode value; an unknown one is a *ConfigError
// listing the valid choices.
func ParseDecodeMode(s string) (DecodeMode, error) {
	i, err := decodeModes.parse(s)
	return DecodeMode(i), err
}

// MetaMode says what a batch's .json holds for each sample.
type MetaMode uint8

const (
	// MetaFull: every field of the sample's metadata. The default.
	MetaFull MetaMode = iota
	// MetaDataset: dataset_name only.
	MetaDataset
	// MetaNone: no .json at all.
	MetaNone
)

var metaModes = names{"meta", []string{"full", "dataset", "none"}}

func (m MetaMode) String() string { return metaModes.name(uint8(m), "MetaMode") }

// Valid reports whether m is one of the modes.
func (m MetaMode) Valid() bool { return metaModes.valid(uint8(m)) }

// MarshalText writes the mode's name, as the config spells it.
func (m MetaMode) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// ParseMetaMode reads a meta value; an unknown one is a *ConfigError
// listing the valid choices.
func ParseMetaMode(s string) (MetaMode, error) {
	i, err := metaModes.parse(s)
	return MetaMode(i), err
}

// NormMode says how a batch's actions or states are normalised with their
// dataset's statistics (oxefs stats), per dimension; padded dimensions stay
// 0 in every mode.
type NormMode uint8

const (
	// NormNone: the values as stored (summed over the offset, for
	// actions). The default.
	NormNone NormMode = iota
	// NormQuantile: 2·(x − q01)/(q99 − q01) − 1, clipped to [−1, 1]; a
	// dimension whose q99 equals its q01 gives 0.
	NormQuantile
	// NormMeanStd: (x − mean)/std; a dimension whose std is 0 gives x − mean.
	NormMeanStd
)

var normModes = names{"normalize", []string{"none", "q01_q99", "mean_std"}}

func (m NormMode) String() string { return normModes.name(uint8(m), "NormMode") }

// Valid reports whether m is one of the modes.
func (m NormMode) Valid() bool { return normModes.valid(uint8(m)) }

// MarshalText writes the mode's name, as the config spells it.
func (m NormMode) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// ParseNormMode reads a normalize value; an unknown one is a *ConfigError
// listing the valid choices.
func ParseNormMode(s string) (NormMode, error) {
	i, err := normModes.parse(s)
	return NormMode(i), err
}
