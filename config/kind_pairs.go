package config

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
)

// The config rules of frame pairs (the mix has no `sample` block): its
// definition in kind.go (FramePairs), and here what its keys mean.

// pairRules are frame pairs'.
type pairRules struct{ c *Config }

// CheckImages is the rule of image_key: a per-step image, which may be
// left out when the dataset has one.
func (pairRules) CheckImages(d *DatasetConfig, images []string, byKey map[string]Feature, problem AddFunc, use *FeatureUse, inspect string) {
	add := func(field, format string, args ...any) { problem(d.Line(field), d.Name, field, format, args...) }
	switch {
	case d.ImageKey == "" && len(images) == 1:
		use.ImageKey = images[0]
	case d.ImageKey == "" && len(images) == 0:
		add("image_key", "the dataset has no per-step image feature; %s", inspect)
	case d.ImageKey == "":
		add("image_key", "required: the dataset has %d image features (valid: %s)", len(images), strings.Join(images, ", "))
	case !slices.Contains(images, d.ImageKey):
		if f, ok := byKey[d.ImageKey]; ok {
			add("image_key", "%q is a %s feature, not a per-step image (valid: %s)", d.ImageKey, f.Kind, strings.Join(images, ", "))
		} else {
			add("image_key", "no image feature %q (valid: %s)", d.ImageKey, strings.Join(images, ", "))
		}
	}
}

func (pairRules) marshal(c Config) ([]byte, error) { return json.Marshal(plainConfig(c)) }

func (pairRules) PlanOffset(d *DatasetConfig) Offset { return d.Offset }

func (pairRules) SlotNames() []string { return nil }

func (pairRules) SlotAugment(string) *Augment { return nil }

// ValidateDataset checks the dataset's offset, and refuses the keys of
// step mode in a pair-mode dataset.
func (pairRules) ValidateDataset(d *DatasetConfig, id string, f Frames, add AddFunc, field Report) {
	f.checkOffset(field)
	if hasKey(d.lines, "cameras") || d.Cameras != nil {
		add(d.Line("cameras"), id, "cameras", "is for step samples: add a `sample` block with camera slots (see the README's Step samples), or name the pair's camera with image_key")
	}
	if hasKey(d.lines, "fps") || d.FPS != 0 {
		add(d.Line("fps"), id, "fps", "is for step samples, whose deltas may be in seconds (a `sample` block); frame pairs count in steps")
	}
}

// ValidateMix checks the frame selection of the mix.
func (r pairRules) ValidateMix(_ AddFunc, top Report) {
	c := r.c
	mix := Frames{Mode: c.PairFrames, Stride: c.Stride, N: c.NumFrames, SamplesPerEpisode: c.SamplesPerEpisode}
	mix.checkMix(top)
}

// ValidateSampled: with pair_frames all or stride, F depends on the
// offset, which every dataset must then share.
func (pairRules) ValidateSampled(d, first *DatasetConfig, f Frames, field Report) *DatasetConfig {
	if !f.checkMode(field) && first != nil && first.Offset != d.Offset && (f.Mode == FramesAll || f.Mode == FramesStride) {
		field("offset", "pair_frames: %s needs the same offset in every dataset (F = %s frames per sample): %s has %s, this one %s",
			f.Mode, f.countText(), first.Name, first.Offset, d.Offset)
	}
	if first == nil {
		return d
	}
	return first
}

func (pairRules) stepSpec() (*StepSpec, error) {
	return nil, errors.New("config: StepDeltas of a config without a sample block (pair mode)")
}
