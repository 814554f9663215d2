package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"go.yaml.in/yaml/v3"
)

// This file is where a config's kind of sample is decided, once, from
// the registry of kinds, kinds. Config registers its two built-in kinds
// itself, so that it parses and validates a config on its own (its tests,
// `oxefs check`): a `sample` block asks for step samples, no block for
// frame pairs (the default). Any other kind is registered by the
// composition root (loader/kind.go's table, RegisterKind), with its own
// top-level YAML block, the parser of that block and its rules
// (KindDef), all in the kind's one file there. internal/layers'
// TestOneFactory keeps every other file from asking: no other file
// compares a sample block with nil or a Kind with one of its values.

// Kind names a kind of sample: what a config asks for (Config.Kind), the
// key of the composition root's table.
type Kind string

// The built-in kinds of sample.
const (
	KindPairs Kind = "pairs" // frame pairs: no `sample` block
	KindSteps Kind = "steps" // step samples: the mix's `sample` block
)

// KindDef is one kind of sample as config knows it: the block that asks
// for it and its rules.
type KindDef struct {
	Kind Kind
	// Key is the top-level key of the kind's YAML block: a config that
	// holds it asks for the kind. "" only for the default kind (pairs).
	Key string
	// Parse reads the block, n being its value (or what json.Marshal
	// wrote of it, when info.json's config is read back), into the
	// block that Config.KindBlock returns and that info.json writes
	// under Key. Problems are returned as an error, a ConfigErrors (with
	// their lines, field and valid choices) or any other (reported on
	// the block's line); the block returned with them, if not nil, still
	// asks for the kind. Nil for the built-in kinds, whose blocks are
	// fields of Config.
	Parse func(n *yaml.Node) (any, error)
	// Rules are the kind's config rules for c.
	Rules func(c *Config) KindRules

	// asked says whether c asks for a built-in kind; nil: the kind's
	// block is there (or, with no Key, the default).
	asked func(c *Config) bool
}

// The built-in kinds' definitions, which the composition root's table
// names beside their mixKind.
var (
	StepSamples = &KindDef{Kind: KindSteps, Key: "sample",
		Rules: func(c *Config) KindRules { return stepRules{c} },
		asked: func(c *Config) bool { return c.Steps != nil }}
	FramePairs = &KindDef{Kind: KindPairs,
		Rules: func(c *Config) KindRules { return pairRules{c} }}
)

// kinds is the registry of the kinds of sample: a config's kind is the
// first that it asks for; the last, the default, is asked for by a
// config that asks for no other.
var kinds = []*KindDef{StepSamples, FramePairs}

// RegisterKind adds a kind of sample to the registry, before the
// default; registering a kind already there (a built-in one) does
// nothing. It panics on a definition that would make configs ambiguous:
// no Key, Parse or Rules, a Key of config's own, or a Kind or Key of
// another kind. Call it from an init function only: Parse and every
// method of Config read the registry without a lock.
func RegisterKind(k *KindDef) {
	if slices.Contains(kinds, k) {
		return
	}
	switch {
	case k.Kind == "" || k.Key == "" || k.Parse == nil || k.Rules == nil:
		panic(fmt.Sprintf("config: kind %q needs a Kind, a Key, Parse and Rules", k.Kind))
	case slices.Contains(configKeys, k.Key):
		panic(fmt.Sprintf("config: kind %q: %q is a key of the config itself", k.Kind, k.Key))
	}
	for _, o := range kinds {
		if o.Kind == k.Kind || o.Key == k.Key {
			panic(fmt.Sprintf("config: kind %q (block %q) registered twice, or over kind %q (block %q)", k.Kind, k.Key, o.Kind, o.Key))
		}
	}
	kinds = slices.Insert(kinds, len(kinds)-1, k)
}

// Kinds are the kinds of sample the registry holds, in its order.
func Kinds() []Kind {
	out := make([]Kind, len(kinds))
	for i, k := range kinds {
		out[i] = k.Kind
	}
	return out
}

// Kind is the kind of sample c asks for.
func (c *Config) Kind() Kind { return c.kindDef().Kind }

// KindBlock is the block of c's kind as its KindDef.Parse read it; nil
// for the built-in kinds, whose blocks are fields of Config.
func (c *Config) KindBlock() any { return c.blocks[c.kindDef().Key] }

func (c *Config) kindDef() *KindDef {
	for _, k := range kinds {
		if k.isAsked(c) {
			return k
		}
	}
	panic("config: the kinds registry has no default")
}

// isAsked says whether c asks for k.
func (k *KindDef) isAsked(c *Config) bool {
	switch {
	case k.asked != nil:
		return k.asked(c)
	case k.Key == "":
		return true
	}
	_, ok := c.blocks[k.Key]
	return ok
}

// blockKind is the registered kind whose block is key; nil: none.
func blockKind(key string) *KindDef {
	for _, k := range kinds {
		if k.Parse != nil && k.Key == key {
			return k
		}
	}
	return nil
}

// topKeys are the keys a config may hold: config's own, then the blocks
// of the registered kinds.
func topKeys() []string {
	out := slices.Clone(configKeys)
	for _, k := range kinds {
		if k.Parse != nil {
			out = append(out, k.Key)
		}
	}
	return out
}

// kindBlock reads the block of registered kind k.
func (p *parser) kindBlock(c *Config, k *KindDef, v *yaml.Node) {
	if p.blocksRead == nil {
		p.blocksRead = make(map[string]bool)
	}
	p.blocksRead[k.Key] = true
	b, err := k.Parse(v)
	var ce ConfigErrors
	switch {
	case errors.As(err, &ce):
		for _, e := range ce {
			p.add(e.Line, e.Dataset, e.Field, "%s", e.Msg)
		}
	case err != nil:
		p.add(v.Line, "", k.Key, "%v", err)
	}
	if b != nil {
		if c.blocks == nil {
			c.blocks = make(map[string]any)
		}
		c.blocks[k.Key] = b
	}
}

// emptyBlocks refuses a registered kind's key given no value (`key:`),
// which would ask for no kind.
func (p *parser) emptyBlocks(c *Config) {
	for _, k := range kinds {
		if _, given := c.lines[k.Key]; given && k.Parse != nil && !p.blocksRead[k.Key] {
			p.add(c.lines[k.Key], "", k.Key, "has no value: give the block of %s samples, or leave the key out", k.Kind)
		}
	}
}

// checkOneKind refuses a config that asks for two kinds of sample, on
// the second's block.
func (c *Config) checkOneKind(top Report) {
	var asked []*KindDef
	for _, k := range kinds {
		if k.Key != "" && k.isAsked(c) {
			asked = append(asked, k)
		}
	}
	if len(asked) > 1 {
		top(asked[1].Key, "asks for %s samples, and `%s` for %s samples: a config asks for one kind (leave one block out)", asked[1].Kind, asked[0].Key, asked[0].Kind)
	}
}

// KindRules are the config rules that differ by kind of sample: what its
// block means to validation and to the plan. They report problems
// through an AddFunc (any line, dataset and field) or a Report (a key of
// the mix or of the dataset at hand, on its line).
type KindRules interface {
	// PlanOffset is the offset the plan counts d's units with.
	PlanOffset(d *DatasetConfig) Offset
	// SlotNames are the camera slots, in order.
	SlotNames() []string
	// SlotAugment is camera slot name's own augment block; nil: none.
	SlotAugment(name string) *Augment
	// ValidateMix checks the keys of the mix that are the kind's.
	ValidateMix(add AddFunc, top Report)
	// ValidateDataset checks d's keys that are the kind's (f: its frames).
	ValidateDataset(d *DatasetConfig, id string, f Frames, add AddFunc, field Report)
	// ValidateSampled checks d, a dataset with a weight, against first,
	// the first such, and returns the first from here on.
	ValidateSampled(d, first *DatasetConfig, f Frames, field Report) *DatasetConfig
	// CheckImages finds the dataset's camera(s) among its per-step image
	// features, into use.
	CheckImages(d *DatasetConfig, images []string, byKey map[string]Feature, add AddFunc, use *FeatureUse, inspect string)
}

// What only the built-in kinds' rules do, which a registered kind's
// rules cannot (their methods are unexported).
type (
	// marshaler writes c as info.json shows it; a registered kind's
	// config is written plain, its block under its key (marshalBlock).
	marshaler interface {
		marshal(c Config) ([]byte, error)
	}
	// unaugmenter is the sample block with no slot's augment block.
	unaugmenter interface{ withoutAugment() *StepSpec }
	// slotDecoder gives camera slot name's own decode mode; nil: none.
	slotDecoder interface{ slotDecode(name string) *DecodeMode }
	// stepSpecer is the sample block whose deltas StepDeltas resolves;
	// an error for a kind without one.
	stepSpecer interface{ stepSpec() (*StepSpec, error) }
)

// rules are c's kind's.
func (c *Config) rules() KindRules { return c.kindDef().Rules(c) }

// rules are the kind's of the config d was validated with (pairs for a
// DatasetConfig that was not).
func (d *DatasetConfig) rules() KindRules { return (&Config{Steps: d.steps, blocks: d.blocks}).rules() }

// marshalBlock writes c as its kind's rules say: the built-in kinds' own
// way, else plain with the kind's block under its key, last.
func (c Config) marshalBlock() ([]byte, error) {
	k := c.kindDef()
	if m, ok := k.Rules(&c).(marshaler); ok {
		return m.marshal(c)
	}
	b, err := json.Marshal(plainConfig(c))
	if err != nil {
		return nil, err
	}
	key, _ := json.Marshal(k.Key)
	block, err := json.Marshal(c.blocks[k.Key])
	if err != nil {
		return nil, err
	}
	out := append(b[:len(b)-1:len(b)-1], ',')
	out = append(append(append(out, key...), ':'), block...)
	return append(out, '}'), nil
}

// plainConfig is Config without its MarshalJSON.
type plainConfig Config
