package config

// This file is where a config's kind of sample is decided, once, from
// the registry of kinds: kinds, a line each. A `sample` block asks for
// step samples, none for frame pairs. A kind's config rules are its
// kindRules, in its own file (kind_<name>.go); the composition root maps
// Config.Kind to the kind's sample.Kind with its own table
// (loader/kind.go). internal/layers' TestOneFactory keeps every other
// file from asking: no other file compares a sample block with nil or a
// Kind with one of its values.

// Kind names a kind of sample: what a config asks for (Config.Kind), the
// key of the composition root's table.
type Kind string

// The kinds of sample.
const (
	KindPairs Kind = "pairs" // frame pairs: no `sample` block
	KindSteps Kind = "steps" // step samples: the mix's `sample` block
)

// kindDef is one kind of sample as config knows it.
type kindDef struct {
	kind Kind
	// asked says whether c asks for the kind (its block is there); nil:
	// the default, the kind of a config that asks for no other.
	asked func(c *Config) bool
	// rules are the kind's config rules for c.
	rules func(c *Config) kindRules
}

// kinds is the registry of the kinds of sample, one line each: a config's
// kind is the first that it asks for; the last is the default.
var kinds = []kindDef{
	{KindSteps, func(c *Config) bool { return c.Steps != nil }, func(c *Config) kindRules { return stepRules{c} }},
	{KindPairs, nil, func(c *Config) kindRules { return pairRules{c} }},
}

// Kinds are the kinds of sample the registry holds, in its order.
func Kinds() []Kind {
	out := make([]Kind, len(kinds))
	for i, k := range kinds {
		out[i] = k.kind
	}
	return out
}

// Kind is the kind of sample c asks for.
func (c *Config) Kind() Kind { return c.kindDef().kind }

func (c *Config) kindDef() kindDef {
	for _, k := range kinds {
		if k.asked == nil || k.asked(c) {
			return k
		}
	}
	panic("config: the kinds registry has no default")
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
	// stepSpec is the sample block whose deltas StepDeltas resolves; an
	// error for a kind without one.
	stepSpec() (*StepSpec, error)
}

// rules are c's kind's.
func (c *Config) rules() kindRules { return c.kindDef().rules(c) }

// rules are the kind's of the config d was validated with (pairs for a
// DatasetConfig that was not).
func (d *DatasetConfig) rules() kindRules { return (&Config{Steps: d.steps}).rules() }

// plainConfig is Config without its MarshalJSON.
type plainConfig Config
