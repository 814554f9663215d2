package pairs

import (
	"github.com/oxefs/oxefs/config"
	"github.com/oxefs/oxefs/sample"
)

// The frame layouts and resize modes are package config's; these names
// keep the frame writer (resize.go), which moves to package frames, as it
// is.
type (
	Layout     = config.Layout
	ResizeMode = config.ResizeMode
)

// See config.Layout and config.ResizeMode.
const (
	BFHWC  = config.BFHWC
	BCFHW  = config.BCFHW
	Squash = config.Squash
	Crop   = config.Crop
	Pad    = config.Pad
)

// Config describes how one dataset of a mix becomes samples. Every dataset
// of a mix must give the same FramesPerSample, size and layout; the mix
// passes its largest action and state dimensions to all of them. A Config
// is made from a mix config and a dataset that passed package config's
// rules (config.Parse, config.DatasetConfig.CheckFeatures): New trusts
// them and does not check the keys again.
type Config struct {
	// ImageKey is the camera, a flattened image feature key such as
	// "steps/observation/image".
	ImageKey string
	// Frames selects the frames of a sample (see Select).
	Frames config.Frames
	// ActionKeys are summed over [t, t+offset) and concatenated in this
	// order, e.g. [steps/action/world_vector, steps/action/rotation_delta].
	// Empty: the action is all zeros.
	ActionKeys []string
	// StateKey is the state read at t. Empty: all zeros.
	StateKey string
	// LanguageKey is the instruction, a feature config.LanguageOf accepts:
	// a Text (or string tensor) feature, or an integer tensor of code points
	// (language_table), per step (read at t) or per episode. Empty: no
	// language.
	LanguageKey string
	// Robot is written as is into each sample's metadata.
	Robot string
	// Height and Width are the target frame size.
	Height, Width int
	Resize        config.ResizeMode
	Layout        config.Layout
	// Decode says whether frames are TensorFlow's exactly or decoded fast.
	Decode config.DecodeMode
	// Augmented: the camera is augmented, and each sample's parameters
	// (augment.Params.Row, the identity's where none were drawn) are
	// recorded in the batch's second file, NNNNNN.augment.npy (see Kind).
	// Every dataset of a mix gives the same.
	Augmented bool
	// MaxActionDim and MaxStateDim are the largest action and state
	// dimensions of the mix; shorter ones are padded with zeros.
	// Zero means this dataset's own.
	MaxActionDim, MaxStateDim int
	// ActionNorm and StateNorm, when set, normalise the dataset's own
	// dimensions of the action (after summing) and of the state; padding
	// stays 0.
	ActionNorm, StateNorm *sample.Affine
}
