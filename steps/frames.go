package steps

import (
	"context"
	"slices"

	"github.com/oxefs/oxefs/episode"
	"github.com/oxefs/oxefs/plan"
)

// position is one frame of a sample: slot k, delta p, the step it shows.
type position struct {
	slot, pos, step int
	key             frameKey
	claim           *claim
	from            int  // repeats: the index in want of the position it copies, else -1
	mine            bool // this sample claimed the frame
}

// writeFrames writes every slot's frames, _is_pad and image_mask of
// sample i, decoding each frame once per batch: it claims the frames no
// sample has claimed, decodes them, releases them, and only then waits
// for the others' and copies them (decoding itself those whose owner gave
// up).
func (a *Assembler) writeFrames(ctx context.Context, w *Worker, s plan.Sample, ep episode.Episode, t int, b *Batch, i int) error {
	l := b.Layout
	steps := ep.Steps()
	mask := l.sample(b.Buf, l.imageMask, i)
	want := w.want[:0]
	defer func() { w.want = want[:0] }()
	for k, c := range a.cams {
		dst := l.sample(b.Buf, l.frames[k], i)
		pad := l.sample(b.Buf, l.framePad[k], i)
		if c.key == "" {
			clear(dst)
			for j := range pad {
				pad[j] = 1
			}
			mask[k] = 0
			continue
		}
		mask[k] = 1
		w.idx = clamped(a.cfg.Deltas.Slots[k], t, steps, w.idx, pad)
		sl := a.spec.Slots[k]
		for p, step := range w.idx {
			key := frameKey{dataset: s.Dataset, ep: s.Episode, image: c.key, step: step, h: sl.H, w: sl.W}
			from := -1
			for j := range want {
				if want[j].key == key {
					from = j
					break
				}
			}
			want = append(want, position{slot: k, pos: p, step: step, key: key, from: from})
		}
	}

	// Claim.
	owned, ownedKeys := w.owned[:0], w.ownedKeys[:0]
	for j := range want {
		x := &want[j]
		if x.from >= 0 {
			continue
		}
		c, mine := b.claim(x.key, i, x.slot, x.pos)
		x.claim, x.mine = c, mine
		if mine {
			owned = append(owned, c)
			ownedKeys = append(ownedKeys, x.key)
		}
	}
	w.owned, w.ownedKeys = owned, ownedKeys

	// Decode what this sample owns, slot by slot, then release it.
	if err := a.decodeOwned(ctx, w, ep, b, i, want); err != nil {
		b.release(ownedKeys, owned, false)
		return err
	}
	b.release(ownedKeys, owned, true)

	// Copy the others' frames, and this sample's repeats.
	for j := range want {
		x := &want[j]
		if x.from >= 0 || x.mine {
			continue
		}
		if err := a.await(ctx, w, ep, b, i, x); err != nil {
			b.revoke(i, ownedKeys, owned)
			return err
		}
	}
	for j := range want {
		x := &want[j]
		if x.from < 0 {
			continue
		}
		y := &want[x.from]
		sl := a.spec.Slots[x.slot]
		dst := l.sample(b.Buf, l.frames[x.slot], i)
		src := l.sample(b.Buf, l.frames[y.slot], i)
		copyFrame(a.spec.Layout, sl.H*sl.W, dst, sl.Steps, x.pos, src, a.spec.Slots[y.slot].Steps, y.pos)
	}
	return nil
}

// decodeOwned decodes the frames sample i owns, each slot's in one call
// (ascending steps), into their positions.
func (a *Assembler) decodeOwned(ctx context.Context, w *Worker, ep episode.Episode, b *Batch, i int, want []position) error {
	l := b.Layout
	for k := range a.cams {
		st := w.steps[:0]
		for j := range want {
			x := &want[j]
			if x.slot == k && x.mine {
				st = append(st, x.step)
			}
		}
		w.steps = st
		if len(st) == 0 {
			continue
		}
		slices.Sort(st)
		buf, err := a.decode(ctx, w, ep, k, st)
		if err != nil {
			return err
		}
		sl := a.spec.Slots[k]
		dst := l.sample(b.Buf, l.frames[k], i)
		for j := range want {
			x := &want[j]
			if x.slot == k && x.mine {
				f, _ := slices.BinarySearch(st, x.step)
				copyFrame(a.spec.Layout, sl.H*sl.W, dst, sl.Steps, x.pos, buf, len(st), f)
			}
		}
	}
	return nil
}

// await waits for another sample's claim on x's frame and copies its
// pixels, or decodes the frame itself when the owner gave up.
func (a *Assembler) await(ctx context.Context, w *Worker, ep episode.Episode, b *Batch, i int, x *position) error {
	c := x.claim
	select {
	case <-c.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	l := b.Layout
	sl := a.spec.Slots[x.slot]
	dst := l.sample(b.Buf, l.frames[x.slot], i)
	copied := false
	if c.sample != i {
		b.samples[c.sample].RLock()
		if c.valid {
			src := l.sample(b.Buf, l.frames[c.slot], c.sample)
			copyFrame(a.spec.Layout, sl.H*sl.W, dst, sl.Steps, x.pos, src, a.spec.Slots[c.slot].Steps, c.pos)
			copied = true
		}
		b.samples[c.sample].RUnlock()
	} else if c.valid {
		// This sample's own earlier claim (another slot of the same
		// camera and size).
		src := l.sample(b.Buf, l.frames[c.slot], i)
		copyFrame(a.spec.Layout, sl.H*sl.W, dst, sl.Steps, x.pos, src, a.spec.Slots[c.slot].Steps, c.pos)
		copied = true
	}
	if copied {
		return nil
	}
	w.one = append(w.one[:0], x.step)
	buf, err := a.decode(ctx, w, ep, x.slot, w.one)
	if err != nil {
		return err
	}
	copyFrame(a.spec.Layout, sl.H*sl.W, dst, sl.Steps, x.pos, buf, 1, 0)
	return nil
}
