// Package ratelimit is the storage decorator that caps the bytes per
// second read from backends (the mount's --max-fetch-rate): every Backend
// that shares one Limiter shares its rate.
//
// It paces after the bytes arrive, outside the wrapped backend's reads, so
// wrapped around a storage/retry Backend its waits never count as a stalled
// source.
//
// The link goes to the most urgent reads first (priorities as
// storage.PriorityOf gives them: the batch being read, then batches built
// ahead, then whole-shard prefetches). While a stream of a more urgent
// priority is open, a less urgent stream reads nothing, but for one read
// of Chunk bytes a second among all of them (so a stream that waits still
// makes progress for the stall watchdog below it, and nothing waits for
// ever on a priority that may never fall). Every read is at most Chunk
// bytes, an eighth of a second of the rate: a less urgent read already
// under way when a more urgent stream opens holds the link for at most
// that. So prefetch and readahead use the link while no more urgent read
// is waiting, and take at most an eighth of it while one is. It imports
// only package storage of oxefs.
package ratelimit

import (
	"context"
	"io"
	"sync"
	"time"

	"github.com/oxefs/oxefs/storage"
)

// trickle is how often a stream kept waiting by a more urgent one may read
// one Chunk anyway, among all such streams.
const trickle = time.Second

// Limiter is a token bucket holding at most one second of tokens, so a
// burst never exceeds the rate for long, shared out by priority (see the
// package doc). It is safe for concurrent use.
type Limiter struct {
	rate  float64 // bytes per second
	chunk int     // the most bytes one read takes: an eighth of a second's

	mu       sync.Mutex
	tokens   float64       // guarded by mu; negative: bytes owed
	last     time.Time     // guarded by mu
	open     map[int64]int // guarded by mu: open streams per priority
	changed  chan struct{} // guarded by mu: closed, and replaced, when open changes
	trickled time.Time     // guarded by mu: when a kept-waiting read last went ahead
	held     int64         // guarded by mu: reads kept waiting so far
}

// NewLimiter allows bytesPerSecond; zero or less means no limit (nil).
func NewLimiter(bytesPerSecond int64) *Limiter {
	if bytesPerSecond <= 0 {
		return nil
	}
	return &Limiter{
		rate: float64(bytesPerSecond), tokens: float64(bytesPerSecond), last: time.Now(),
		chunk: int(max(bytesPerSecond/8, 4096)), open: make(map[int64]int), changed: make(chan struct{}),
	}
}

// Chunk is the most bytes one read through the limiter takes.
func (l *Limiter) Chunk() int { return l.chunk }

// Held is the number of reads kept waiting for a more urgent stream.
func (l *Limiter) Held() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.held
}

// Wait accounts n bytes just received and sleeps until the rate allows
// them, or ctx ends. A nil limiter never waits.
func (l *Limiter) Wait(ctx context.Context, n int) error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	now := time.Now()
	l.tokens = min(l.tokens+now.Sub(l.last).Seconds()*l.rate, l.rate)
	l.last = now
	l.tokens -= float64(n)
	owed := -l.tokens
	l.mu.Unlock()
	if owed <= 0 {
		return nil
	}
	t := time.NewTimer(time.Duration(owed / l.rate * float64(time.Second)))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// enter registers an open stream of priority p.
func (l *Limiter) enter(p int64) {
	l.mu.Lock()
	l.open[p]++
	l.pokeLocked()
	l.mu.Unlock()
}

// leave unregisters an open stream of priority p.
func (l *Limiter) leave(p int64) {
	l.mu.Lock()
	if l.open[p]--; l.open[p] <= 0 {
		delete(l.open, p)
	}
	l.pokeLocked()
	l.mu.Unlock()
}

func (l *Limiter) pokeLocked() {
	close(l.changed)
	l.changed = make(chan struct{})
}

// turn returns when a read of a stream of priority p may go: no open
// stream is more urgent, or it is this second's trickle. *prio is the
// stream's registered priority, moved to the current one first.
func (l *Limiter) turn(ctx context.Context, prio *int64) error {
	held := false
	for {
		p := storage.PriorityOf(ctx)
		l.mu.Lock()
		if p != *prio {
			if l.open[*prio]--; l.open[*prio] <= 0 {
				delete(l.open, *prio)
			}
			l.open[p]++
			*prio = p
			l.pokeLocked()
		}
		urgent := false
		for q := range l.open {
			if q < p {
				urgent = true
				break
			}
		}
		now := time.Now()
		if !urgent || now.Sub(l.trickled) >= trickle {
			if urgent {
				l.trickled = now
			}
			l.mu.Unlock()
			return nil
		}
		if !held {
			held = true
			l.held++
		}
		changed, next := l.changed, l.trickled.Add(trickle).Sub(now)
		l.mu.Unlock()
		t := time.NewTimer(next)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-changed:
		case <-t.C:
		}
		t.Stop()
	}
}

// Backend paces the reads of a wrapped backend to a Limiter.
type Backend struct {
	inner storage.Backend
	lim   *Limiter
}

var (
	_ storage.Backend   = (*Backend)(nil)
	_ storage.Copier    = (*Backend)(nil)
	_ storage.Versioner = (*Backend)(nil)
	_ storage.Unwrapper = (*Backend)(nil)
)

// New wraps b; a nil lim lets every byte through at once.
func New(b storage.Backend, lim *Limiter) *Backend { return &Backend{inner: b, lim: lim} }

// Location is the wrapped backend's.
func (b *Backend) Location() string { return b.inner.Location() }

// Unwrap returns the wrapped backend (see storage.Unwrapper).
func (b *Backend) Unwrap() storage.Backend { return b.inner }

// Stat is the wrapped backend's: it moves no object bytes.
func (b *Backend) Stat(ctx context.Context, name string) (storage.ObjectInfo, error) {
	return b.inner.Stat(ctx, name)
}

// Open returns a reader that, after each read, waits until the rate allows
// the bytes read.
func (b *Backend) Open(ctx context.Context, name string, off, length int64) (io.ReadCloser, error) {
	return b.OpenVersion(ctx, name, "", off, length)
}

// OpenVersion is Open of one version of the object, through the wrapped
// backend's storage.Versioner when it has one (see storage.OpenVersion).
func (b *Backend) OpenVersion(ctx context.Context, name, version string, off, length int64) (io.ReadCloser, error) {
	rc, err := storage.OpenVersion(ctx, b.inner, name, version, off, length)
	if err != nil || b.lim == nil {
		return rc, err
	}
	prio := storage.PriorityOf(ctx)
	b.lim.enter(prio)
	return &reader{ReadCloser: rc, ctx: ctx, lim: b.lim, prio: prio}, nil
}

// reader is an open stream: registered with its priority from Open to
// Close, it reads in turn (see Limiter.turn), at most Chunk bytes a read.
type reader struct {
	io.ReadCloser
	ctx  context.Context
	lim  *Limiter
	prio int64 // the priority registered
	once sync.Once
}

func (r *reader) Read(p []byte) (int, error) {
	if err := r.lim.turn(r.ctx, &r.prio); err != nil {
		return 0, err
	}
	n, err := r.ReadCloser.Read(p[:min(len(p), r.lim.chunk)])
	if n > 0 {
		if werr := r.lim.Wait(r.ctx, n); werr != nil && err == nil {
			err = werr
		}
	}
	return n, err
}

// Close closes the stream and unregisters it.
func (r *reader) Close() error {
	r.once.Do(func() { r.lim.leave(r.prio) })
	return r.ReadCloser.Close()
}

// CopyTo copies through the wrapped backend (storage.Copy), waiting after
// each write into w until the rate allows it.
func (b *Backend) CopyTo(ctx context.Context, name string, w io.Writer, reserve func(int64) error) (int64, error) {
	if b.lim == nil {
		return storage.Copy(ctx, b.inner, name, w, reserve)
	}
	prio := storage.PriorityOf(ctx)
	b.lim.enter(prio)
	cw := &writer{w: w, ctx: ctx, lim: b.lim, prio: prio}
	defer func() { b.lim.leave(cw.prio) }() // turn may have moved it
	return storage.Copy(ctx, b.inner, name, cw, reserve)
}

// writer paces the writes into a copy's destination, in turn (see
// Limiter.turn): the bytes of a copy arrive before it sees them, so its
// turn is taken before the write that lets the next ones come.
type writer struct {
	w    io.Writer
	ctx  context.Context
	lim  *Limiter
	prio int64 // the priority registered
}

func (w *writer) Write(p []byte) (int, error) {
	n, err := w.w.Write(p)
	if err == nil {
		err = w.lim.Wait(w.ctx, n)
	}
	if err == nil {
		err = w.lim.turn(w.ctx, &w.prio)
	}
	return n, err
}

// Resumed passes a resume on to the destination (see storage.Resumer).
func (w *writer) Resumed() {
	if r, ok := w.w.(storage.Resumer); ok {
		r.Resumed()
	}
}

// Restart passes a restart on to the destination, when it can start over.
func (w *writer) Restart() bool {
	r, ok := w.w.(storage.Restarter)
	return ok && r.Restart()
}
