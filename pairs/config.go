package pairs

import (
	"fmt"
	"strings"
)

// FrameMode says which frames of [t, t+offset] a sample holds.
type FrameMode uint8

const (
	// FramesEndpoints: t and t+offset (F = 2). The default.
	FramesEndpoints FrameMode = iota
	// FramesAll: every frame t, t+1, …, t+offset (F = offset+1; the offset
	// must be fixed).
	FramesAll
	// FramesStride: every Stride-th frame t, t+k, t+2k, … ≤ t+offset
	// (F = ⌊offset/k⌋+1; the offset must be fixed). t+offset is the last
	// frame only when k divides the offset.
	FramesStride
	// FramesFixedN: N frames evenly spaced from t to t+offset, both
	// included: frame i is t + ⌊i·offset/(N−1) + ½⌋ (halves round up,
	// computed exactly in integers), so the frames are distinct when
	// offset ≥ N−1, which the config must guarantee. Equal to
	// np.round(np.linspace(t, t+offset, N)) except at exact halves, where
	// numpy rounds to even.
	FramesFixedN
)

var frameModeNames = []string{"endpoints", "all", "stride", "fixed_n"}

func (m FrameMode) String() string {
	if int(m) < len(frameModeNames) {
		return frameModeNames[m]
	}
	return fmt.Sprintf("FrameMode(%d)", m)
}

// ParseFrameMode reads a pair_frames value.
func ParseFrameMode(s string) (FrameMode, error) {
	i, err := parseName("pair_frames", s, frameModeNames)
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

var layoutNames = []string{"BFHWC", "BCFHW"}

func (l Layout) String() string {
	if int(l) < len(layoutNames) {
		return layoutNames[l]
	}
	return fmt.Sprintf("Layout(%d)", l)
}

// ParseLayout reads a layout value.
func ParseLayout(s string) (Layout, error) {
	i, err := parseName("layout", s, layoutNames)
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

var resizeNames = []string{"squash", "crop", "pad"}

func (m ResizeMode) String() string {
	if int(m) < len(resizeNames) {
		return resizeNames[m]
	}
	return fmt.Sprintf("ResizeMode(%d)", m)
}

// ParseResizeMode reads a resize value.
func ParseResizeMode(s string) (ResizeMode, error) {
	i, err := parseName("resize", s, resizeNames)
	return ResizeMode(i), err
}

// MetaMode says what a batch's .json holds for each sample.
type MetaMode uint8

const (
	// MetaFull: every field of Meta. The default.
	MetaFull MetaMode = iota
	// MetaDataset: dataset_name only.
	MetaDataset
	// MetaNone: no .json at all.
	MetaNone
)

var metaNames = []string{"full", "dataset", "none"}

func (m MetaMode) String() string {
	if int(m) < len(metaNames) {
		return metaNames[m]
	}
	return fmt.Sprintf("MetaMode(%d)", m)
}

// ParseMetaMode reads a meta value.
func ParseMetaMode(s string) (MetaMode, error) {
	i, err := parseName("meta", s, metaNames)
	return MetaMode(i), err
}

func parseName(field, s string, names []string) (int, error) {
	for i, n := range names {
		if s == n {
			return i, nil
		}
	}
	return 0, fmt.Errorf("%s %q is not valid (valid: %s)", field, s, strings.Join(names, ", "))
}

// Config describes how one dataset of a mix becomes samples. Every dataset
// of a mix must give the same FramesPerSample, size and layout; the mix
// passes its largest action and state dimensions to all of them.
type Config struct {
	// ImageKey is the camera, a flattened image feature key such as
	// "steps/observation/image".
	ImageKey string
	// Frames selects the frames of a sample.
	Frames Frames
	// ActionKeys are summed over [t, t+offset) and concatenated in this
	// order, e.g. [steps/action/world_vector, steps/action/rotation_delta].
	// Empty: the action is all zeros.
	ActionKeys []string
	// StateKey is the state read at t. Empty: all zeros.
	StateKey string
	// LanguageKey is the instruction: a Text (or string tensor) feature, or
	// an integer tensor of code points (language_table), per step (read at
	// t) or per episode. Empty: no language.
	LanguageKey string
	// Robot is written as is into each sample's metadata.
	Robot string
	// Height and Width are the target frame size.
	Height, Width int
	Resize        ResizeMode
	Layout        Layout
	// MaxActionDim and MaxStateDim are the largest action and state
	// dimensions of the mix (see Dims); shorter ones are padded with zeros.
	// Zero means this dataset's own.
	MaxActionDim, MaxStateDim int
}

// Offset is the distance from a sample's first frame to its last, fixed
// (Min == Max) or drawn per sample from [Min, Max].
type Offset struct{ Min, Max int }

// FixedOffset is an offset of exactly n steps.
func FixedOffset(n int) Offset { return Offset{n, n} }

// Fixed reports whether the offset is one value.
func (o Offset) Fixed() bool { return o.Min == o.Max }

// ValidStarts is the number of frames t of an episode of steps steps that
// can start a sample: t ∈ [0, steps−1−Min]. Zero or less means the episode
// is too short for the offset and has no sample units. The plan counts
// samples_per_episode: 0 units with it.
func (o Offset) ValidStarts(steps int) int { return steps - o.Min }

func (o Offset) String() string {
	if o.Fixed() {
		return fmt.Sprint(o.Min)
	}
	return fmt.Sprintf("[%d, %d]", o.Min, o.Max)
}

// Frames is a sample's frame selection.
//
// t and the offset are chosen in this order:
//
//  1. t. With SamplesPerEpisode ≥ 1, t = keyed.Draw(key, keyed.StreamT, n) with
//     n = Offset.ValidStarts(steps): uniform over every t for which the
//     smallest offset fits. With SamplesPerEpisode = 0, t is the sample's
//     Unit, which the plan enumerates over the same n starts.
//  2. The offset. A fixed offset is used as is. A range is drawn after t,
//     over the offsets that fit: offset = Min + keyed.Draw(key,
//     keyed.StreamOffset, hi−Min+1) with hi = min(Max, steps−1−t). Near the
//     end of an episode the range is thus narrowed, never clamped to its
//     edge, and every t keeps the same chance whatever the range.
//
// An episode with fewer than Min+1 steps has no valid t: a
// *ShortEpisodeError.
type Frames struct {
	Mode   FrameMode
	Offset Offset
	// Stride is k for FramesStride.
	Stride int
	// N is the number of frames for FramesFixedN.
	N int
	// SamplesPerEpisode is the mix's samples_per_episode: 0 means the
	// sample's Unit is t itself.
	SamplesPerEpisode int
}

// Validate checks the selection on its own.
func (f Frames) Validate() error {
	o := f.Offset
	if o.Min < 1 {
		return fmt.Errorf("offset %v: must be at least 1 (a pair needs two distinct steps)", o)
	}
	if o.Max < o.Min {
		return fmt.Errorf("offset %v: max is below min", o)
	}
	if f.SamplesPerEpisode < 0 {
		return fmt.Errorf("samples_per_episode %d: must be 0 (every pair) or more", f.SamplesPerEpisode)
	}
	switch f.Mode {
	case FramesEndpoints:
	case FramesAll:
		if !o.Fixed() {
			return fmt.Errorf("pair_frames all needs a fixed offset (F = offset+1 frames per sample), got %v", o)
		}
	case FramesStride:
		if f.Stride < 1 {
			return fmt.Errorf("pair_frames stride: stride %d must be at least 1", f.Stride)
		}
		if !o.Fixed() {
			return fmt.Errorf("pair_frames stride needs a fixed offset (F = offset/stride+1 frames per sample), got %v", o)
		}
	case FramesFixedN:
		if f.N < 2 {
			return fmt.Errorf("pair_frames fixed_n: n = %d must be at least 2", f.N)
		}
		if o.Min < f.N-1 {
			return fmt.Errorf("pair_frames fixed_n: n = %d distinct frames need an offset of at least %d, got %v", f.N, f.N-1, o)
		}
	default:
		return fmt.Errorf("pair_frames %v is not valid (valid: %s)", f.Mode, strings.Join(frameModeNames, ", "))
	}
	return nil
}

// Count is F, the number of frames per sample. The Frames must be valid.
func (f Frames) Count() int {
	switch f.Mode {
	case FramesAll:
		return f.Offset.Min + 1
	case FramesStride:
		return f.Offset.Min/f.Stride + 1
	case FramesFixedN:
		return f.N
	}
	return 2
}
