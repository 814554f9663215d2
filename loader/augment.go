package loader

import (
	"context"
	"fmt"
	"strings"

	"github.com/oxefs/oxefs/augment"
	"github.com/oxefs/oxefs/frames"
	"github.com/oxefs/oxefs/plan"
	"github.com/oxefs/oxefs/sample"
)

// augmenter is the Transformer of a config's augment blocks: each camera
// slot's Spec (the dataset's block, else the slot's own, else the mix's) drawn per (global batch,
// sample, slot) from the mix's seed, dropout drawn over the sample's
// cameras with the mix's block. Draws that change nothing are nil, so
// that a slot without augmentation decodes as it always has.
type augmenter struct {
	seed  uint64
	train bool
	pl    *plan.Plan
	mix   *augment.Spec     // the mix's block; nil: none
	specs [][]*augment.Spec // per dataset (Mix.Datasets) and slot; nil: none
	cams  []augment.Camera
	// present[d][k]: dataset d has a camera for slot k (step samples);
	// nil: every slot is present (pairs).
	present [][]bool
}

// newAugmenter returns the Transformer of m's augmentation for the view
// planned by pl, nil when no slot is augmented.
func newAugmenter(m *Mix, pl *plan.Plan, train bool) *augmenter {
	cfg := m.Config
	slots := cfg.SlotNames()
	steps := len(slots) > 0
	if !steps {
		slots = []string{""} // pairs: the one camera
	}
	a := &augmenter{seed: cfg.Seed, train: train, pl: pl}
	if cfg.Augment != nil && cfg.Augment.Enabled() {
		a.mix = &cfg.Augment.Spec
	}
	on := a.mix != nil
	for k, name := range slots {
		a.cams = append(a.cams, augment.Camera{Slot: k, Name: name, Wrist: strings.Contains(name, "wrist")})
	}
	for _, d := range m.Datasets {
		row := make([]*augment.Spec, len(slots))
		for k, name := range slots {
			s := cfg.AugmentFor(&d.Config, name)
			if s != nil && !s.Enabled() && s.EvalCrop == 0 {
				s = nil
			}
			on = on || s != nil
			row[k] = s
		}
		a.specs = append(a.specs, row)
	}
	if !on {
		return nil
	}
	if steps {
		for _, d := range m.Datasets {
			row := make([]bool, len(slots))
			for k, name := range slots {
				_, row[k] = d.Cameras[name]
			}
			a.present = append(a.present, row)
		}
	}
	return a
}

// Params draws slot k of sample i of the view's batch n (Transformer).
func (a *augmenter) Params(n int64, i int, s plan.Sample, k int) sample.Params {
	spec := a.specs[s.Dataset][k]
	if !a.train {
		if spec == nil {
			return nil
		}
		return nonIdentity(augment.Eval(*spec, a.cams[k]))
	}
	g := a.pl.Global(n)
	var p augment.Params
	if spec != nil {
		p = augment.Draw(*spec, a.seed, g, i, a.cams[k])
	} else {
		p = augment.Identity()
	}
	if a.mix != nil && a.mix.Dropout > 0 {
		var cams [8]augment.Camera
		cs := append(cams[:0], a.cams...)
		if a.present != nil {
			for j := range cs {
				cs[j].Absent = !a.present[s.Dataset][j]
			}
		}
		var buf [8]augment.Params
		p.Drop = augment.DrawSample(buf[:0], *a.mix, a.seed, g, i, cs)[k].Drop
	}
	return nonIdentity(p)
}

// nonIdentity is p, or nil when p changes nothing.
func nonIdentity(p augment.Params) sample.Params {
	if p == augment.Identity() {
		return nil
	}
	return p
}

// augmentingCPU is the CPU decoder that applies augment.Params: each
// worker's own, with one frames.Augment it rewrites per request, so that
// no frame allocates.
type augmentingCPU struct {
	*sample.CPU
	aug frames.Augment
}

// Decode decodes with the frames.Decoder, p's augmentation applied to
// every frame of the slot.
func (c *augmentingCPU) Decode(ctx context.Context, src frames.Source, steps []int, dst frames.Slot, p sample.Params) error {
	if p == nil {
		return c.CPU.Decode(ctx, src, steps, dst, nil)
	}
	ap, ok := p.(augment.Params)
	if !ok {
		return fmt.Errorf("the CPU decoder applies augment.Params, asked for %T", p)
	}
	ap.SetAugment(&c.aug)
	dst.Augment = c.aug
	return src.Decode(ctx, c.Frames(), steps, dst)
}
