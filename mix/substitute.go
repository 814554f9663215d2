package mix

// maxWalk bounds the units Substitute looks at.
const maxWalk = 1 << 20

// Substitute returns the attempt-th replacement (attempt = 1, 2, …) for a
// sample whose episode could not be used (corrupt, or too short for its
// offset). Candidates are the units that follow the sample in its epoch's
// order: the rest of its window first (wrapping around the window), then the
// following windows. The attempt-th candidate from an episode that is new in
// that walk (and not the sample's own) is returned, with Attempt set and its
// own Key, so the same sample and attempt always give the same replacement
// and repeated failures move on to new episodes. Pass the planned sample or
// any of its substitutes: only Dataset and Index are read. A dataset with
// fewer other episodes than attempt cycles through those it has; a dataset
// of one episode gives that episode back with a new key. The caller bounds
// the attempts.
func (p *Plan) Substitute(s Sample, attempt int) Sample {
	if attempt <= 0 {
		return s
	}
	d := p.ds[s.Dataset]
	e, pos := s.Index/d.units, s.Index%d.units
	o := d.order(e)
	slot := o.find(pos)
	local := pos - o.start[slot]

	var (
		origEp, origUnit int64
		found            []Sample
		seen             = make(map[int64]bool)
		walked           int64
		W                = len(o.perm)
	)
walk:
	for step := 0; step < W; step++ {
		sl := (slot + step) % W
		wi := o.perm[sl]
		w := &d.windows[wi]
		n := o.start[sl+1] - o.start[sl]
		f := d.unitOrder(e, wi, n)
		if step == 0 {
			origEp, origUnit = d.unitAt(w, int64(f.at(uint64(local))))
		}
		for i := int64(0); i < n; i++ {
			x := i
			if step == 0 {
				if i == n-1 {
					break
				}
				x = (local + 1 + i) % n
			}
			if walked++; walked > maxWalk {
				break walk
			}
			ep, unit := d.unitAt(w, int64(f.at(uint64(x))))
			if ep == origEp || seen[ep] {
				continue
			}
			seen[ep] = true
			found = append(found, Sample{})
			d.fill(&found[len(found)-1], s.Dataset, w, ep, unit, e)
			if len(found) == attempt {
				break walk
			}
		}
	}
	var r Sample
	if len(found) == 0 {
		d.fill(&r, s.Dataset, &d.windows[o.perm[slot]], origEp, origUnit, e)
	} else {
		r = found[(attempt-1)%len(found)]
	}
	r.Index, r.Attempt = s.Index, attempt
	r.Key = hashPart(hashPart(hashPart(r.Key, tagSubstitute), uint64(attempt)), uint64(s.Index))
	return r
}
