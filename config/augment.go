package config

import (
	"encoding/json"
	"errors"
	"slices"

	"go.yaml.in/yaml/v3"

	"github.com/oxefs/oxefs/augment"
)

// Augment is an `augment` block: the augmentation it states, a preset
// with its explicit keys applied over it. It is written to info.json in
// the block's own form, every key spelled out, so that the config as
// loaded reads back to the same Spec.
type Augment struct {
	augment.Spec
}

// The keys of an augment block are augment.Keys: the fused stages' and
// the settings, each a case of augmentBlock, then the registered ops
// (augment.Ops), read from their descriptors with no case of their own.
// mixOnlyKeys are those only the mix-level block may hold (they are about
// a sample's cameras together).
var (
	resizedCropKeys = []string{"scale", "ratio"}
	mixOnlyKeys     = []string{"shared", augment.FieldDropout, augment.FieldDropoutKeep}
)

// augmentBlock reads an augment block at prefix (`augment`,
// `sample.cameras.wrist.augment`): `off` (no augmentation), or a mapping
// of augment.Keys. The preset is applied first, then every explicit key
// over it. Each key's line goes into lines as prefix.<key>; mix says
// whether the mix-level keys (shared, dropout) are allowed; dataset names
// the dataset entry whose block it is ("" for none).
func (p *parser) augmentBlock(dataset, prefix string, v *yaml.Node, lines map[string]int, mix bool) *Augment {
	a := &Augment{}
	if v.Kind == yaml.ScalarNode && v.Value == "off" {
		return a
	}
	if v.Kind != yaml.MappingNode {
		field{p: p, key: prefix, v: v, dataset: dataset}.bad("must be `off` or a mapping such as {preset: octo, rotate: 5}")
		return nil
	}
	// The preset first, whatever its place, so that the keys override it.
	for j := 0; j+1 < len(v.Content); j += 2 {
		if k, pv := resolve(v.Content[j]), resolve(v.Content[j+1]); k != nil && pv != nil && k.Value == augment.FieldPreset {
			var name string
			f := field{p: p, key: prefix + "." + augment.FieldPreset, v: pv, line: k.Line, dataset: dataset}
			if !f.str(&name) {
				break
			}
			s, err := augment.Preset(name)
			if err != nil {
				p.augmentErr(dataset, prefix, k.Line, err)
				break
			}
			a.Spec = s
		}
	}
	s := &a.Spec
	own := make(map[string]int)
	p.mapping(v, dataset, augment.Keys(), own, func(key string, v *yaml.Node) {
		f := field{p: p, key: prefix + "." + key, v: v, line: own[key], dataset: dataset}
		switch key {
		case augment.FieldPreset:
			// read above
		case "random_resized_crop":
			// torchvision's RandomResizedCrop defaults.
			c := augment.ResizedCrop{Scale: augment.Range{Lo: 0.08, Hi: 1}, Ratio: augment.Range{Lo: 3.0 / 4, Hi: 4.0 / 3}}
			if v.Kind != yaml.MappingNode {
				f.bad("must be a mapping such as {scale: [0.8, 1.0], ratio: [0.9, 1.1]}")
				return
			}
			p.mapping(v, dataset, resizedCropKeys, map[string]int{}, func(key string, v *yaml.Node) {
				g := field{p: p, key: f.key + "." + key, v: v, line: v.Line, dataset: dataset}
				if key == "scale" {
					g.rangeOf(&c.Scale, nil)
				} else {
					g.rangeOf(&c.Ratio, nil)
				}
			})
			s.ResizedCrop = c
		case augment.FieldCrop:
			f.float(&s.Crop)
		case augment.FieldRotate:
			f.rangeOf(&s.Rotate, augment.Symmetric)
		case augment.FieldTranslate:
			var r augment.Range
			if f.rangeOf(&r, func(t float64) augment.Range { return augment.Range{Lo: t, Hi: t} }) {
				s.Translate = [2]float64{r.Lo, r.Hi}
			}
		case augment.FieldBrightness:
			f.rangeOf(&s.Brightness, augment.Jitter)
		case augment.FieldContrast:
			f.rangeOf(&s.Contrast, augment.Jitter)
		case augment.FieldSaturation:
			f.rangeOf(&s.Saturation, augment.Jitter)
		case augment.FieldHue:
			f.rangeOf(&s.Hue, augment.Symmetric)
		case augment.FieldSharpness:
			f.rangeOf(&s.Sharpness, augment.Jitter)
		case augment.FieldSubset:
			f.int(&s.Subset)
		case "random_order":
			f.bool(&s.RandomOrder)
		case "wrist_colour_only":
			f.bool(&s.WristColourOnly)
		case "shared":
			f.bool(&s.Shared)
		case augment.FieldDropout:
			f.float(&s.Dropout)
		case augment.FieldDropoutKeep:
			f.str(&s.DropoutKeep)
		case augment.FieldEvalCrop:
			f.float(&s.EvalCrop)
		default:
			// a registered op: its range, as its descriptor reads it
			if i, op, ok := augment.LookupOp(key); ok {
				f.rangeOf(&s.Ops[i], op.Single)
			}
		}
	})
	if !mix {
		for _, k := range mixOnlyKeys {
			if l, ok := own[k]; ok {
				p.add(l, dataset, prefix+"."+k, "only the mix-level augment block sets %s (it is about a sample's cameras together)", k)
			}
		}
	}
	for k, l := range own {
		lines[prefix+"."+k] = l
	}
	if err := s.Validate(); err != nil {
		p.augmentErr(dataset, prefix, lineOf(v), err)
	}
	return a
}

// augmentErr reports err, a *augment.FieldError, on its key's line.
func (p *parser) augmentErr(dataset, prefix string, line int, err error) {
	var fe *augment.FieldError
	if !errors.As(err, &fe) {
		p.add(line, dataset, prefix, "%s", err.Error())
		return
	}
	p.add(line, dataset, prefix+"."+fe.Field, "%s is not valid; valid: %s", fe.Value, fe.Valid)
}

// rangeOf reads [lo, hi], or, with single, one number x as single(x).
func (f field) rangeOf(dst *augment.Range, single func(float64) augment.Range) bool {
	what := "must be a range [lo, hi]"
	if single != nil {
		what = "must be a number or a range [lo, hi]"
	}
	if single != nil && f.scalar() {
		var x float64
		if !f.float(&x) {
			return false
		}
		*dst = single(x)
		return true
	}
	if f.v.Kind != yaml.SequenceNode || len(f.v.Content) != 2 {
		return f.bad("%s", what)
	}
	var r [2]float64
	for i, e := range f.v.Content {
		e = resolve(e)
		if e == nil || (field{p: f.p, key: f.key, v: e, line: f.line}).float(&r[i]) == false {
			return false
		}
	}
	*dst = augment.Range{Lo: r[0], Hi: r[1]}
	return true
}

// checkAugment checks the augment blocks against the mix's camera slots:
// dropout_keep names one, and dropout has two cameras to choose between.
func (c *Config) checkAugment(add AddFunc) {
	if c.Augment == nil {
		return
	}
	slots := c.SlotNames()
	if len(slots) == 0 {
		slots = []string{"image"}
	}
	if err := c.Augment.ValidateSlots(slots); err != nil {
		var fe *augment.FieldError
		if errors.As(err, &fe) {
			key := "augment." + fe.Field
			line := c.lines[key]
			if line == 0 {
				line = c.lines["augment"]
			}
			add(line, "", key, "%s is not valid; valid: %s", fe.Value, fe.Valid)
		}
	}
}

// AugmentFor returns the augmentation of camera slot `slot` of dataset d:
// d's own block, else AugmentOf(slot).
func (c *Config) AugmentFor(d *DatasetConfig, slot string) *augment.Spec {
	if d != nil && d.Augment != nil {
		return &d.Augment.Spec
	}
	return c.AugmentOf(slot)
}

// AugmentOf returns the augmentation of camera slot `slot` (its own
// block, else the mix's), nil for none. In pair mode slot is "".
func (c *Config) AugmentOf(slot string) *augment.Spec {
	if a := c.rules().SlotAugment(slot); a != nil {
		return &a.Spec
	}
	if c.Augment != nil {
		return &c.Augment.Spec
	}
	return nil
}

// WithoutAugment returns a copy of c with no augment block at all (the
// `--augment off` flag): the same batches as a config that never had one.
func (c *Config) WithoutAugment() *Config {
	d := *c
	d.Augment = nil
	if u, ok := c.rules().(unaugmenter); ok {
		d.Steps = u.withoutAugment()
	}
	d.Datasets = slices.Clone(c.Datasets)
	for i := range d.Datasets {
		d.Datasets[i].Augment = nil
	}
	return &d
}

// Augmented reports whether camera slot's frames are augmented in either
// view (slot "" in pair mode): its block (or the mix's, or a dataset's) changes training
// frames or gives val frames a centre crop, or the mix's block drops
// cameras. A batch records an augmented slot's parameters.
func (c *Config) Augmented(slot string) bool {
	on := func(s *augment.Spec) bool { return s != nil && (s.Enabled() || s.EvalCrop > 0 && s.EvalCrop < 1) }
	if on(c.AugmentOf(slot)) {
		return true
	}
	for i := range c.Datasets {
		if on(c.AugmentFor(&c.Datasets[i], slot)) {
			return true
		}
	}
	return c.Augment != nil && c.Augment.Dropout > 0
}

// MarshalJSON writes the block in its config form, every key spelled out
// (shared and dropout where set).
func (a Augment) MarshalJSON() ([]byte, error) {
	s := a.Spec
	r := func(x augment.Range) [2]float64 { return [2]float64{x.Lo, x.Hi} }
	m := map[string]any{
		augment.FieldCrop:       s.Crop,
		augment.FieldRotate:     r(s.Rotate),
		augment.FieldTranslate:  s.Translate,
		augment.FieldBrightness: r(s.Brightness),
		augment.FieldContrast:   r(s.Contrast),
		augment.FieldSaturation: r(s.Saturation),
		augment.FieldHue:        r(s.Hue),
		augment.FieldSharpness:  r(s.Sharpness),
		augment.FieldSubset:     s.Subset,
		"random_order":          s.RandomOrder,
		"wrist_colour_only":     s.WristColourOnly,
		augment.FieldEvalCrop:   s.EvalCrop,
	}
	// The mix-level keys only where set, so that a slot's or a dataset's
	// block reads back.
	if s.Shared {
		m["shared"] = true
	}
	if s.Dropout != 0 {
		m[augment.FieldDropout] = s.Dropout
	}
	if s.Preset != "" {
		m[augment.FieldPreset] = s.Preset
	}
	if s.DropoutKeep != "" {
		m[augment.FieldDropoutKeep] = s.DropoutKeep
	}
	for i, op := range augment.Ops() {
		m[op.Name] = r(s.Ops[i])
	}
	if c := s.ResizedCrop; c != (augment.ResizedCrop{}) {
		m["random_resized_crop"] = map[string][2]float64{"scale": r(c.Scale), "ratio": r(c.Ratio)}
	}
	return json.Marshal(m)
}
