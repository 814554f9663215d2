package steps

import (
	"sync"

	"github.com/oxefs/oxefs/episode"
)

// Batch is one batch being built: its buffer, its layout, and the claims
// on its frames (decode once).
type Batch struct {
	Buf    []byte
	Layout *Layout

	mu     sync.Mutex
	claims map[frameKey]*claim // guarded by mu
	// samples[i] guards the frames of sample i while another sample copies
	// from them, and the validity of the claims sample i owns.
	samples []sync.RWMutex
}

// NewBatch returns the batch over buf, a buffer of l.Total bytes, with
// every array's header written.
func NewBatch(l *Layout, buf []byte) *Batch {
	l.WriteHeaders(buf)
	return &Batch{Buf: buf, Layout: l, claims: map[frameKey]*claim{}, samples: make([]sync.RWMutex, l.Arrays[0].Shape[0])}
}

// frameKey is one decoded frame: the same key of two samples is the same
// pixels.
type frameKey struct {
	dataset int
	ep      episode.Key
	image   string
	step    int
	h, w    int
}

// claim is a frame one sample decodes for the batch: done is closed once
// the owner has decoded it or given up; valid (guarded by the owner's
// samples lock) says its pixels are at (sample, slot, pos).
type claim struct {
	done              chan struct{}
	sample, slot, pos int
	valid             bool
}

// claim returns the frame's claim, and whether it is new (the caller
// owns it and must release it).
func (b *Batch) claim(k frameKey, sample, slot, pos int) (*claim, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if c, ok := b.claims[k]; ok {
		return c, false
	}
	c := &claim{done: make(chan struct{}), sample: sample, slot: slot, pos: pos}
	b.claims[k] = c
	return c, true
}

// release ends the owner's claims: decoded, their pixels can be copied;
// not, they are forgotten (later samples claim the frame anew) and those
// waiting decode it themselves.
func (b *Batch) release(keys []frameKey, cs []*claim, decoded bool) {
	if !decoded {
		b.mu.Lock()
		for j, k := range keys {
			if b.claims[k] == cs[j] {
				delete(b.claims, k)
			}
		}
		b.mu.Unlock()
	}
	for _, c := range cs {
		if decoded {
			c.valid = true // before close: the waiters read it after
		}
		close(c.done)
	}
}

// revoke withdraws the claims sample i released as decoded, before sample
// i is rewritten (a failure after them; the builder substitutes): no one
// copies from it any longer, and later samples claim those frames anew.
func (b *Batch) revoke(i int, keys []frameKey, cs []*claim) {
	b.samples[i].Lock()
	for _, c := range cs {
		c.valid = false
	}
	b.samples[i].Unlock()
	b.mu.Lock()
	for j, k := range keys {
		if b.claims[k] == cs[j] {
			delete(b.claims, k)
		}
	}
	b.mu.Unlock()
}
