package diskcache

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/oxefs/oxefs/storage"
)

// Fills share the bandwidth by priority. Every reader that waits on the
// source (on a fill, or outside one through Demand) has a priority, taken
// from its context (WithPriority; 0, the most urgent, when none is set),
// and a fill has the priority of the most urgent reader waiting on it, or
// Background when it is a prefetch nobody waits on. While a reader more
// urgent than a fill waits, the fill pauses: it writes nothing, and the
// requests it reads through newPreemptible are abandoned and opened again
// where they stopped once it may go on, so a paused fill takes no
// bandwidth at all. Fills of equal priority run side by side.
//
// The mount gives a batch's fetches the batch's index: the batch a reader
// waits for gets the bandwidth before those built ahead of it, and
// whole-shard prefetches get what the batches leave.

// Background is the priority of prefetch fills: below every reader's
// (storage.Background).
const Background = storage.Background

// WithPriority returns ctx carrying the priority of the reads made under
// it: lower is more urgent. Background is for prefetches; readers use
// small numbers (the mount uses the batch index). It is
// storage.WithPriority: a rate limit sees the same priorities.
func WithPriority(ctx context.Context, p int64) context.Context {
	return storage.WithPriority(ctx, p)
}

// PriorityOf returns the priority WithPriority set on ctx, or 0.
func PriorityOf(ctx context.Context) int64 { return storage.PriorityOf(ctx) }

// gate knows the priorities of the readers waiting on the source.
type gate struct {
	mu      sync.Mutex
	waiting map[int64]int // guarded by mu: readers per priority
	top     int64         // guarded by mu: the most urgent waiting, or Background
	changed chan struct{} // guarded by mu: closed, and replaced, when top or a fill's priority changes
}

func newGate() *gate {
	return &gate{waiting: make(map[int64]int), top: Background, changed: make(chan struct{})}
}

// enter registers a reader of priority p until leave is called.
func (g *gate) enter(p int64) (leave func()) {
	g.mu.Lock()
	g.waiting[p]++
	if p < g.top {
		g.top = p
		g.pokeLocked()
	}
	g.mu.Unlock()
	var once sync.Once
	return func() { once.Do(func() { g.leave(p) }) }
}

func (g *gate) leave(p int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.waiting[p]--; g.waiting[p] > 0 {
		return
	}
	delete(g.waiting, p)
	if p != g.top {
		return
	}
	g.top = Background
	for q := range g.waiting {
		g.top = min(g.top, q)
	}
	g.pokeLocked()
}

// poke wakes the fills that wait for a change.
func (g *gate) poke() {
	g.mu.Lock()
	g.pokeLocked()
	g.mu.Unlock()
}

func (g *gate) pokeLocked() {
	close(g.changed)
	g.changed = make(chan struct{})
}

// state returns the most urgent waiting priority and a channel closed at
// the next change.
func (g *gate) state() (int64, <-chan struct{}) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.top, g.changed
}

// priority is a fill's: the most urgent of the readers that waited on it.
type priority struct{ p atomic.Int64 }

// raise lowers the number to p when p is more urgent, reporting whether it
// did.
func (f *priority) raise(p int64) bool {
	for {
		old := f.p.Load()
		if p >= old {
			return false
		}
		if f.p.CompareAndSwap(old, p) {
			return true
		}
	}
}

// mustPause reports whether a fill of priority f must pause now, and
// returns a channel closed when that may have changed.
func (g *gate) mustPause(f *priority) (bool, <-chan struct{}) {
	top, changed := g.state()
	return top < f.p.Load(), changed
}
