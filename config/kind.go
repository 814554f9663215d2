package config

import (
	"encoding/json"
	"slices"
)

// This file is where a config's kind of sample is decided, once: a
// `sample` block asks for step samples, none for frame pairs. Config's own
// rules of each kind are a kindRules; the composition root maps the kind
// to its sample.Kind with Pick (loader/kind.go). internal/layers'
// TestOneFactory keeps every other file from asking.

// Kinds holds one value per kind of sample, for Pick.
type Kinds[T any] struct {
	// Pairs is frame pairs (no `sample` block).
	Pairs func() T
	// Steps is step samples, with the mix's sample block.
	Steps func(s *StepSpec) T
}

// Pick returns k's value for c's kind of sample.
func Pick[T any](c *Config, k Kinds[T]) T {
	if c.Steps != nil {
		return k.Steps(c.Steps)
	}
	return k.Pairs()
}

// kindRules are the config rules that differ by kind of sample.
type kindRules interface {
	// marshal writes c as info.json shows it.
	marshal(c Config) ([]byte, error)
	// planOffset is the offset the plan counts d's units with.
	planOffset(d *DatasetConfig) Offset
	// slotNames are the camera slots, in order.
	slotNames() []string
	// slotAugment is camera slot name's own augment block; nil: none.
	slotAugment(name string) *Augment
	// withoutAugment is the sample block with no slot's augment block.
	withoutAugment() *StepSpec
	// validateMix checks the keys of the mix that are the kind's.
	validateMix(add addFunc, top report)
	// validateDataset checks d's keys that are the kind's (f: its frames).
	validateDataset(d *DatasetConfig, id string, f Frames, add addFunc, field report)
	// validateSampled checks d, a dataset with a weight, against first,
	// the first such, and returns the first from here on.
	validateSampled(d, first *DatasetConfig, f Frames, field report) *DatasetConfig
	// checkImages finds the dataset's camera(s) among its per-step image
	// features, into use.
	checkImages(d *DatasetConfig, images []string, byKey map[string]Feature, p *problems, use *FeatureUse, inspect string)
}

// rules are c's kind's.
func (c *Config) rules() kindRules {
	return Pick(c, Kinds[kindRules]{
		Pairs: func() kindRules { return pairRules{c} },
		Steps: func(*StepSpec) kindRules { return stepRules{c} },
	})
}

// rules are the kind's of the config d was validated with (pairs for a
// DatasetConfig that was not).
func (d *DatasetConfig) rules() kindRules { return (&Config{Steps: d.steps}).rules() }

// pairRules are frame pairs'.
type pairRules struct{ c *Config }

// stepRules are step samples': c has a sample block.
type stepRules struct{ c *Config }

// plainConfig is Config without its MarshalJSON.
type plainConfig Config

func (pairRules) marshal(c Config) ([]byte, error) { return json.Marshal(plainConfig(c)) }

// marshal leaves out pair_frames, a pair-mode key.
func (stepRules) marshal(c Config) ([]byte, error) {
	return json.Marshal(struct {
		plainConfig
		PairFrames *FrameMode `json:"pair_frames,omitempty"` // hides plain's
	}{plainConfig: plainConfig(c)})
}

func (pairRules) planOffset(d *DatasetConfig) Offset { return d.Offset }

// planOffset is a fixed offset of sample.drop_last, so that t ∈ [0,
// L−drop_last): 0 when nothing is dropped, and every t of the episode is
// a unit.
func (r stepRules) planOffset(*DatasetConfig) Offset { return FixedOffset(r.c.Steps.DropLast) }

func (pairRules) slotNames() []string { return nil }

func (pairRules) slotAugment(string) *Augment { return nil }

func (pairRules) withoutAugment() *StepSpec { return nil }

func (r stepRules) withoutAugment() *StepSpec {
	s := *r.c.Steps
	s.Cameras = slices.Clone(s.Cameras)
	for i := range s.Cameras {
		s.Cameras[i].Augment = nil
	}
	return &s
}

func (r stepRules) slotAugment(name string) *Augment {
	for i := range r.c.Steps.Cameras {
		if s := &r.c.Steps.Cameras[i]; s.Name == name {
			return s.Augment
		}
	}
	return nil
}

func (r stepRules) slotNames() []string {
	out := make([]string, len(r.c.Steps.Cameras))
	for i, s := range r.c.Steps.Cameras {
		out[i] = s.Name
	}
	return out
}
