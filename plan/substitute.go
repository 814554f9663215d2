package plan

import (
	"iter"

	"github.com/oxefs/oxefs/keyed"
)

// Substitutes returns, in the order to try them, the candidates that may
// replace a sample whose episode could not be used (corrupt, or too short
// for its offset): one unit of every other episode of the dataset, each
// episode once — first those of the sample's own window, then those of the
// windows that follow it in its epoch's order, wrapping around, so that the
// walk covers the whole dataset — and last the sample's own episode again,
// with a new key (a new t), for damage that only some frames have.
// Episodes without sample units (samples_per_episode 0 and too short or
// unreadable by the length index) are left out. Within a window the
// episodes come in an order keyed by the sample, so that the bad units of
// one window spread over its good episodes instead of all landing on one.
//
// The sequence depends only on the plan and the sample's Dataset and Index
// (pass the planned sample or any of its substitutes): the caller that
// tries candidates in order and skips only those that are sure to fail
// gets the same replacement whichever reader meets the damage first. Each
// candidate has Attempt set (1, 2, … in walk order), Index of the sample
// and a key of its own. Producing a candidate costs O(1) amortised plus a
// binary search over the window's segments; the walk is O(episodes) in all.
func (p *Plan) Substitutes(s Sample) iter.Seq[Sample] {
	return func(yield func(Sample) bool) {
		d := p.ds[s.Dataset]
		e, pos := s.Index/d.units, s.Index%d.units
		o := d.order(e)
		slot := o.find(pos)
		first := &d.windows[o.perm[slot]]
		f := d.unitOrder(e, o.perm[slot], o.start[slot+1]-o.start[slot])
		origEp, _ := d.unitAt(first, int64(f.at(uint64(pos-o.start[slot]))))

		walk := keyed.Part(keyed.Part(d.unitKey, tagSubstitute), uint64(s.Index))
		attempt := 0
		emit := func(w *window, ep int64) bool {
			units := d.unitsIn(ep, ep+1)
			if units == 0 || d.isUnreadable(ep) {
				return true
			}
			attempt++
			unit := int64(keyed.Below(keyed.Mix64(walk^keyed.Mix64(uint64(ep))), uint64(units)))
			var r Sample
			d.fill(&r, s.Dataset, w, ep, unit, e)
			r.Index, r.Attempt = s.Index, attempt
			r.Key = keyed.Part(keyed.Part(keyed.Part(r.Key, tagSubstitute), uint64(attempt)), uint64(s.Index))
			return yield(r)
		}
		W := len(o.perm)
		for step := range W {
			wi := o.perm[(slot+step)%W]
			w := &d.windows[wi]
			n := uint64(w.ep1 - w.ep0)
			order := newFeistel(n, keyed.Part(walk, uint64(wi)))
			for i := range n {
				ep := w.ep0 + int64(order.at(i))
				if ep == origEp {
					continue
				}
				if !emit(w, ep) {
					return
				}
			}
		}
		emit(first, origEp)
	}
}
