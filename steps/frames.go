package steps

import (
	"context"

	"github.com/oxefs/oxefs/augment"
	"github.com/oxefs/oxefs/episode"
	"github.com/oxefs/oxefs/frames"
	"github.com/oxefs/oxefs/plan"
	"github.com/oxefs/oxefs/sample"
)

// writeFrames writes every slot's frames, _is_pad and image_mask of
// sample i, each frame decoded once per batch by the frame stage f: one
// request per camera slot the dataset maps, with the transform
// parameters f draws for that slot. A slot the dataset lacks, or one
// augmentation dropped (its frames are zeros), has image_mask 0.
func (a *Assembler) writeFrames(ctx context.Context, w *Worker, f sample.Frames, s plan.Sample, ep episode.Episode, t int, b *Batch, i int) error {
	l := b.Layout
	steps := ep.Steps()
	mask := l.sample(b.Buf, l.imageMask, i)
	reqs := w.reqs[:0]
	for k, c := range a.cams {
		p := f.Params(k)
		if l.augment[k] >= 0 {
			recordParams(l.sample(b.Buf, l.augment[k], i), p)
		}
		dst := l.sample(b.Buf, l.frames[k], i)
		pad := l.sample(b.Buf, l.framePad[k], i)
		if c.key == "" {
			clear(dst)
			clear(b.compressed(k, i))
			for j := range pad {
				pad[j] = 1
			}
			mask[k] = 0
			continue
		}
		mask[k] = b2u(!dropped(p))
		if len(w.idx) <= len(reqs) {
			w.idx = append(w.idx, nil)
		}
		w.idx[len(reqs)] = clamped(a.cfg.Deltas.Slots[k], t, steps, w.idx[len(reqs)], pad)
		sl := a.spec.Slots[k]
		reqs = append(reqs, sample.Request{
			Image:    c.key,
			Declared: c.declared,
			Params:   p,
			Steps:    w.idx[len(reqs)],
			Dst: frames.Slot{
				Buf: dst, Frames: sl.Steps, H: sl.H, W: sl.W,
				Layout: frames.Layout(a.spec.Layout),          // same values: pairs' TestEnumsMatchFrames
				Resize: frames.ResizeMode(a.spec.Resize),      // same values
				Decode: frames.DecodeMode(sl.Decode.Pixels()), // same values
			},
			Compressed: b.compressed(k, i),
		})
	}
	w.reqs = reqs
	return f.Place(ctx, s.Dataset, ep, reqs)
}

// recordParams writes p, augment.Params or nil (the identity), as one row
// of an augment array: augment.Width() little-endian float32.
func recordParams(dst []byte, p sample.Params) {
	ap, ok := p.(augment.Params)
	if !ok {
		ap = augment.Identity()
	}
	ap.PutRow(dst)
}

// dropped reports whether p, augment.Params or nil, drops the camera.
func dropped(p sample.Params) bool {
	ap, ok := p.(augment.Params)
	return ok && ap.Drop
}
