// Package ratelimit is the storage decorator that caps the bytes per
// second read from backends (the mount's --max-fetch-rate): every Backend
// that shares one Limiter shares its rate.
//
// It paces after the bytes arrive, outside the wrapped backend's reads, so
// wrapped around a storage/retry Backend its waits never count as a stalled
// source. It imports only package storage of oxefs.
package ratelimit

import (
	"context"
	"io"
	"sync"
	"time"

	"github.com/oxefs/oxefs/storage"
)

// Limiter is a token bucket holding at most one second of tokens, so a
// burst never exceeds the rate for long. It is safe for concurrent use.
type Limiter struct {
	rate float64 // bytes per second

	mu     sync.Mutex
	tokens float64   // guarded by mu; negative: bytes owed
	last   time.Time // guarded by mu
}

// NewLimiter allows bytesPerSecond; zero or less means no limit (nil).
func NewLimiter(bytesPerSecond int64) *Limiter {
	if bytesPerSecond <= 0 {
		return nil
	}
	return &Limiter{rate: float64(bytesPerSecond), tokens: float64(bytesPerSecond), last: time.Now()}
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

// Backend paces the reads of a wrapped backend to a Limiter.
type Backend struct {
	inner storage.Backend
	lim   *Limiter
}

var (
	_ storage.Backend   = (*Backend)(nil)
	_ storage.Copier    = (*Backend)(nil)
	_ storage.Versioner = (*Backend)(nil)
)

// New wraps b; a nil lim lets every byte through at once.
func New(b storage.Backend, lim *Limiter) *Backend { return &Backend{inner: b, lim: lim} }

// Location is the wrapped backend's.
func (b *Backend) Location() string { return b.inner.Location() }

// Unwrap returns the wrapped backend.
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
	return &reader{ReadCloser: rc, ctx: ctx, lim: b.lim}, nil
}

type reader struct {
	io.ReadCloser
	ctx context.Context
	lim *Limiter
}

func (r *reader) Read(p []byte) (int, error) {
	n, err := r.ReadCloser.Read(p)
	if n > 0 {
		if werr := r.lim.Wait(r.ctx, n); werr != nil && err == nil {
			err = werr
		}
	}
	return n, err
}

// CopyTo copies through the wrapped backend (storage.Copy), waiting after
// each write into w until the rate allows it.
func (b *Backend) CopyTo(ctx context.Context, name string, w io.Writer, reserve func(int64) error) (int64, error) {
	if b.lim == nil {
		return storage.Copy(ctx, b.inner, name, w, reserve)
	}
	return storage.Copy(ctx, b.inner, name, &writer{w: w, ctx: ctx, lim: b.lim}, reserve)
}

// writer paces the writes into a copy's destination.
type writer struct {
	w   io.Writer
	ctx context.Context
	lim *Limiter
}

func (w *writer) Write(p []byte) (int, error) {
	n, err := w.w.Write(p)
	if err == nil {
		err = w.lim.Wait(w.ctx, n)
	}
	return n, err
}

// Restart passes a restart on to the destination, when it can start over.
func (w *writer) Restart() bool {
	r, ok := w.w.(storage.Restarter)
	return ok && r.Restart()
}
