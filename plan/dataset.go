package plan

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"sync"

	"github.com/oxefs/oxefs/config"
	"github.com/oxefs/oxefs/episode"
	"github.com/oxefs/oxefs/keyed"
)

// planDataset is one dataset of a plan. Everything but the order cache is
// immutable.
type planDataset struct {
	// constants
	name, source, split string
	given               config.Weight
	spe                 int64
	units               int64 // U: sample units in one epoch
	episodes            int64
	tooShort            int64 // when lengthsKnown
	unreadable          int64 // when lengthsKnown
	lengthsKnown        bool
	shards              int
	splits              []string
	splitKey            []uint64 // hash state after (seed, keyed.String(name/split))
	segs                []segment
	windows             []window // only windows with units
	cum                 []int64  // SamplesPerEpisode 0: units before episode e; len episodes+1
	bad                 []int64  // SamplesPerEpisode 0: the unreadable episodes, ascending
	orderKey            uint64   // hash state after (seed, keyed.String(name), tagWindowOrder)
	unitKey             uint64   // hash state after (seed, keyed.String(name), tagWindowUnits)

	mu     sync.Mutex
	orders [orderCache]*epochOrder // guarded by mu
	next   int                     // guarded by mu: the slot to replace
}

type segment struct {
	split int    // index in planDataset.splits
	shard int    // shard within the split
	first int    // record within the shard
	ep    int64  // the dataset's episode number of the first record
	n     int64  // records
	key   uint64 // hash state after (seed, keyed.String(name/split), shard)
}

// window is a run of windowShards consecutive shards of the selection.
type window struct {
	ep0, ep1   int64 // episodes [ep0, ep1)
	seg0, seg1 int   // segments [seg0, seg1)
	units      int64
}

// epochOrder is the window order of one epoch: perm[i] is the i-th window
// and start[i] the units before it.
type epochOrder struct {
	epoch int64
	perm  []int32
	start []int64 // len(perm)+1
}

func newPlanDataset(opts Options, sh DatasetShape) (*planDataset, error) {
	d := &planDataset{
		name:   sh.Name,
		source: sh.Source,
		split:  sh.Split,
		given:  sh.Weight,
		spe:    int64(opts.SamplesPerEpisode),
	}
	nameKey := keyed.String(sh.Name)
	base := keyed.Part(keyed.Init(opts.Seed), nameKey)
	d.orderKey = keyed.Part(base, tagWindowOrder)
	d.unitKey = keyed.Part(base, tagWindowUnits)

	// Segments, and the shards they form.
	splitIdx := make(map[string]int)
	var shardStarts []int // first segment of each shard
	for i, s := range sh.Segments {
		if s.Shard < 0 || s.First < 0 || s.Count < 0 || s.First > math.MaxInt-s.Count {
			return nil, fmt.Errorf("mix: dataset %s: bad segment %d: %+v", sh.Name, i, s)
		}
		if s.Count == 0 {
			continue
		}
		si, ok := splitIdx[s.Split]
		if !ok {
			si = len(d.splits)
			splitIdx[s.Split] = si
			d.splits = append(d.splits, s.Split)
			d.splitKey = append(d.splitKey, keyed.Part(keyed.Init(opts.Seed), keyed.String(sh.Name+"/"+s.Split)))
		}
		if n := len(d.segs); n == 0 || d.segs[n-1].split != si || d.segs[n-1].shard != s.Shard {
			shardStarts = append(shardStarts, len(d.segs))
		}
		d.segs = append(d.segs, segment{split: si, shard: s.Shard, first: s.First, ep: d.episodes, n: int64(s.Count),
			key: keyed.Part(d.splitKey[si], uint64(s.Shard))})
		d.episodes += int64(s.Count)
	}
	d.shards = len(shardStarts)

	// Units per episode.
	if d.spe == 0 {
		if int64(len(sh.Lengths)) != d.episodes {
			return nil, fmt.Errorf("mix: dataset %s: samples_per_episode 0 needs the length of each of its %d episodes, got %d", sh.Name, d.episodes, len(sh.Lengths))
		}
		if sh.MinOffset < 0 {
			return nil, fmt.Errorf("mix: dataset %s: negative offset %d", sh.Name, sh.MinOffset)
		}
		d.cum = make([]int64, d.episodes+1)
		for e, l := range sh.Lengths {
			u := int64(l) - int64(sh.MinOffset)
			switch {
			case l < 0:
				// One unit, so that the record is read, found bad and
				// substituted (counted, or EIO under --strict) once an
				// epoch, as with samples_per_episode ≥ 1, never left out
				// unseen.
				d.unreadable++
				d.bad = append(d.bad, int64(e))
				u = 1
			case u <= 0:
				d.tooShort++
				u = 0
			}
			d.cum[e+1] = d.cum[e] + u
		}
		d.units = d.cum[d.episodes]
		d.lengthsKnown = true
	} else {
		if d.episodes > math.MaxInt64/4/d.spe {
			return nil, fmt.Errorf("mix: dataset %s: %d episodes × %d samples overflow", sh.Name, d.episodes, d.spe)
		}
		d.units = d.episodes * d.spe
		if d.lengthsKnown = int64(len(sh.Lengths)) == d.episodes; d.lengthsKnown {
			for _, l := range sh.Lengths {
				switch {
				case l < 0:
					d.unreadable++
				case int(l) <= sh.MinOffset:
					d.tooShort++
				}
			}
		}
	}

	// Windows of windowShards shards; empty ones are left out.
	for s := 0; s < len(shardStarts); s += opts.WindowShards {
		w := window{seg0: shardStarts[s], seg1: len(d.segs)}
		if e := s + opts.WindowShards; e < len(shardStarts) {
			w.seg1 = shardStarts[e]
		}
		w.ep0 = d.segs[w.seg0].ep
		last := d.segs[w.seg1-1]
		w.ep1 = last.ep + last.n
		w.units = d.unitsIn(w.ep0, w.ep1)
		if w.units > 0 {
			d.windows = append(d.windows, w)
		}
	}
	if len(d.windows) > math.MaxInt32 {
		return nil, fmt.Errorf("mix: dataset %s: too many windows", sh.Name)
	}
	return d, nil
}

// unitsIn counts the units of episodes [e0, e1).
func (d *planDataset) unitsIn(e0, e1 int64) int64 {
	if d.spe > 0 {
		return (e1 - e0) * d.spe
	}
	return d.cum[e1] - d.cum[e0]
}

// isUnreadable reports that episode ep is one the length index could not
// read (SamplesPerEpisode 0): its one unit is never a substitute.
func (d *planDataset) isUnreadable(ep int64) bool {
	_, found := slices.BinarySearch(d.bad, ep)
	return found
}

// empty reports that the dataset has no unit that can be served: none at
// all, or (samples_per_episode 0) only the unreadable episodes' one each.
func (d *planDataset) empty() bool {
	return d.units == 0 || d.spe == 0 && d.units == d.unreadable
}

func (d *planDataset) whyEmpty(minOffset int) string {
	switch {
	case d.episodes == 0:
		return "its split selects no episodes"
	case d.unreadable == d.episodes:
		return fmt.Sprintf("no sample units: all %d episodes are unreadable", d.episodes)
	default:
		return fmt.Sprintf("no sample units: %d of %d episodes are shorter than offset+1 = %d steps and %d are unreadable",
			d.tooShort, d.episodes, minOffset+1, d.unreadable)
	}
}

// appendSamples appends the dataset's samples k0 … k1−1.
func (d *planDataset) appendSamples(dst []Sample, di int, k0, k1 int64) []Sample {
	for k := k0; k < k1; {
		e, pos := k/d.units, k%d.units
		o := d.order(e)
		slot := o.find(pos)
		wi := o.perm[slot]
		w := &d.windows[wi]
		lo, hi := o.start[slot], o.start[slot+1]
		f := d.unitOrder(e, wi, hi-lo)
		for ; k < k1 && pos < hi; k, pos = k+1, pos+1 {
			ep, unit := d.unitAt(w, int64(f.at(uint64(pos-lo))))
			dst = append(dst, Sample{})
			d.fill(&dst[len(dst)-1], di, w, ep, unit, e)
			dst[len(dst)-1].Index = k
		}
	}
	return dst
}

// unitOrder is the permutation of window wi's n units in epoch e, keyed
// by (seed, dataset, epoch, window).
func (d *planDataset) unitOrder(e int64, wi int32, n int64) feistel {
	return newFeistel(uint64(n), keyed.Part(keyed.Part(d.unitKey, uint64(e)), uint64(wi)))
}

// unitAt maps unit x of window w (in natural order) to an episode and a
// unit within it.
func (d *planDataset) unitAt(w *window, x int64) (ep, unit int64) {
	if d.spe == 1 {
		return w.ep0 + x, 0
	}
	if d.spe > 0 {
		return w.ep0 + x/d.spe, x % d.spe
	}
	u := d.cum[w.ep0] + x
	// The episode e with cum[e] ≤ u < cum[e+1].
	i := sort.Search(int(w.ep1-w.ep0), func(i int) bool { return d.cum[w.ep0+int64(i)+1] > u })
	ep = w.ep0 + int64(i)
	return ep, u - d.cum[ep]
}

// fill writes the sample of unit unit of episode ep, in window w, epoch e.
func (d *planDataset) fill(s *Sample, di int, w *window, ep, unit, e int64) {
	segs := d.segs[w.seg0:w.seg1]
	i := sort.Search(len(segs), func(i int) bool { return segs[i].ep+segs[i].n > ep })
	sg := &segs[i]
	rec := sg.first + int(ep-sg.ep)
	h := keyed.Part(sg.key, uint64(rec))
	h = keyed.Part(h, uint64(unit))
	*s = Sample{
		Dataset: di,
		Episode: episode.Key{Split: d.splits[sg.split], Shard: sg.shard, Record: rec},
		Unit:    int(unit),
		Epoch:   e,
		Key:     keyed.Part(h, uint64(e)),
	}
}

// order returns epoch e's window order, from the cache when it is there.
func (d *planDataset) order(e int64) *epochOrder {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, o := range d.orders {
		if o != nil && o.epoch == e {
			return o
		}
	}
	o := d.buildOrder(e)
	d.orders[d.next] = o
	d.next = (d.next + 1) % orderCache
	return o
}

// buildOrder shuffles the windows for epoch e (Fisher–Yates, keyed by the
// dataset and the epoch) and sums their units in that order.
func (d *planDataset) buildOrder(e int64) *epochOrder {
	W := len(d.windows)
	o := &epochOrder{epoch: e, perm: make([]int32, W), start: make([]int64, W+1)}
	for i := range o.perm {
		o.perm[i] = int32(i)
	}
	key := keyed.Part(d.orderKey, uint64(e))
	for i := W - 1; i > 0; i-- {
		j := keyed.Below(keyed.Mix64(key+uint64(i)*0x9e3779b97f4a7c15), uint64(i+1))
		o.perm[i], o.perm[j] = o.perm[j], o.perm[i]
	}
	for i, w := range o.perm {
		o.start[i+1] = o.start[i] + d.windows[w].units
	}
	return o
}

// find returns the slot whose units hold position pos of the epoch.
func (o *epochOrder) find(pos int64) int {
	return sort.Search(len(o.perm), func(i int) bool { return o.start[i+1] > pos })
}
