package retry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/oxefs/oxefs/storage"
)

// Stats counts the traffic of every Backend that shares it. It is safe for
// concurrent use.
type Stats struct {
	Attempts atomic.Int64 // source opens, first tries and retries
	Retries  atomic.Int64 // attempts after the first of a fetch or a Stat
	Bytes    atomic.Int64 // bytes delivered
	Failures atomic.Int64 // fetches that failed, other than by cancellation

	// warned maps a source's location to the highest attempt number a
	// retry of it was logged at warn level for since it last answered
	// (an *atomic.Int64): each backoff step of a failing source is one
	// warn line, whatever the number of reads, and of Backends over it,
	// that take the step at once.
	warned sync.Map
}

// Backend wraps a storage.Backend with retries. One Backend serves any
// number of concurrent reads.
type Backend struct {
	// dependencies
	inner storage.Backend
	stats *Stats
	log   *slog.Logger

	// constants
	policy Policy

	// warned is stats.warned's counter for this source.
	warned *atomic.Int64
}

var (
	_ storage.Backend   = (*Backend)(nil)
	_ storage.Copier    = (*Backend)(nil)
	_ storage.Versioner = (*Backend)(nil)
	_ storage.Unwrapper = (*Backend)(nil)
)

// New wraps b. A zero field of policy takes its DefaultPolicy value; stats,
// when not nil, counts attempts, retries, bytes and failures; log, when not
// nil, gets a record per retry: at warn level the first time any read of
// the source reaches that attempt since the source last answered (so one
// line per backoff step of the source, among every Backend sharing stats), at debug level for the others.
func New(b storage.Backend, policy Policy, stats *Stats, log *slog.Logger) *Backend {
	if stats == nil {
		stats = new(Stats)
	}
	w, _ := stats.warned.LoadOrStore(b.Location(), new(atomic.Int64))
	return &Backend{inner: b, stats: stats, log: log, policy: policy.WithDefaults(), warned: w.(*atomic.Int64)}
}

// Unwrap returns the wrapped backend (see storage.Unwrapper).
func (b *Backend) Unwrap() storage.Backend { return b.inner }

// Location is the wrapped backend's.
func (b *Backend) Location() string { return b.inner.Location() }

// errStalled marks an attempt abandoned by the stall watchdog.
var errStalled = errors.New("source stalled")

// copyBufs holds the 1 MiB buffers that fetches copy through.
var copyBufs = sync.Pool{New: func() any {
	b := make([]byte, 1<<20)
	return &b
}}

// Fetch streams the named object into w, exactly once and in order, and
// returns the bytes written.
//
// On a transient error (see storage.IsTransient), or when an attempt stalls
// for Policy.StallTimeout, Fetch waits and resumes at the offset already
// written; a source that asked to be left alone for longer (a 429's
// Retry-After: storage.TransientAfter) is waited for that long. Once the
// next wait would overrun Policy.MaxElapsed without
// progress, or a connection is refused a second time in a row (see
// maxRefused), it returns a *storage.UnavailableError (matching
// storage.ErrUnavailable) that wraps the last error. A permanent error (a
// missing object, matching fs.ErrNotExist; a 403 or 400) returns after the
// attempt that met it, and an error from w at once, both as they are. When
// ctx is done Fetch returns ctx.Err(): during a wait at once, during a read
// as soon as the backend's reader gives up.
//
// Damaged bytes (storage.ErrChecksum) are fetched again from the start when
// w is a storage.Restarter that can start over (as storage.ReadFile's
// buffer can); into any other w, whose bytes are already written, Fetch
// returns the error.
func (b *Backend) Fetch(ctx context.Context, name string, w io.Writer) (int64, error) {
	return b.fetch(ctx, name, "", 0, -1, w, time.Now())
}

// fetch is Fetch of length bytes from off (to the end when length < 0),
// with the budget's clock started at since. A version other than "" pins
// every attempt to that version of the object (storage.OpenVersion), so a
// resumed read never joins the bytes of two uploads.
func (b *Backend) fetch(ctx context.Context, name, version string, off, length int64, w io.Writer, since time.Time) (int64, error) {
	p := b.policy
	st := b.stats
	bufp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bufp)

	var (
		written  int64
		attempts int
		damaged  int // attempts whose bytes failed the checksum
		refused  int // attempts in a row whose connection was refused
		backoff  = p.InitialBackoff
	)
	// since is the start of the current stretch without progress.
	for {
		if err := ctx.Err(); err != nil {
			return written, err
		}
		attempts++
		st.Attempts.Add(1)
		if attempts > 1 {
			st.Retries.Add(1)
		}
		left := int64(-1)
		if length >= 0 {
			left = length - written
		}
		n, err, werr := b.attempt(ctx, name, version, off+written, left, w, *bufp)
		written += n
		switch {
		case werr != nil:
			if !errors.Is(werr, errReaderClosed) {
				st.Failures.Add(1)
			}
			return written, werr
		case err == nil:
			b.answered()
			return written, nil
		case ctx.Err() != nil:
			return written, ctx.Err()
		case errors.Is(err, storage.ErrChecksum):
			r, ok := w.(storage.Restarter)
			if !ok || off != 0 || length >= 0 || !r.Restart() {
				st.Failures.Add(1)
				return written, b.nameError(name, err)
			}
			// The bytes were bad: no progress, start over.
			written, n = 0, 0
			damaged++
		case !storage.IsTransient(err):
			st.Failures.Add(1)
			return written, b.nameError(name, err)
		}
		if n > 0 {
			since = time.Now()
			backoff = p.InitialBackoff
		}
		refused = refusals(refused, err)
		wait := max(jitter(backoff), storage.RetryAfter(err))
		if time.Since(since)+wait > p.MaxElapsed || refused > maxRefused {
			st.Failures.Add(1)
			return written, &storage.UnavailableError{URI: b.inner.Location(), Name: name, Attempts: attempts, Damaged: damaged, Err: err}
		}
		if written > 0 {
			// The next attempt resumes at the byte reached.
			if r, ok := w.(storage.Resumer); ok {
				r.Resumed()
			}
		}
		b.logRetry(ctx, name, attempts, off+written, wait, p.MaxElapsed-time.Since(since), err)
		if err := sleep(ctx, wait); err != nil {
			return written, err
		}
		backoff = min(2*backoff, p.MaxBackoff)
	}
}

// attempt copies length bytes (the rest when < 0) of the object from
// offset off into w under the stall watchdog. It returns the bytes written
// and either the backend's error or w's.
func (b *Backend) attempt(ctx context.Context, name, version string, off, length int64, w io.Writer, buf []byte) (n int64, err, werr error) {
	stall := b.policy.StallTimeout
	actx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	dog := startWatchdog(stall, cancel)
	defer dog.stop()

	// stalled names the watchdog's cancellation instead of the read error
	// it caused.
	stalled := func(err error) error {
		if ctx.Err() == nil && errors.Is(context.Cause(actx), errStalled) {
			return storage.Transient(fmt.Errorf("%w: no byte for %v at offset %d", errStalled, stall, off+n))
		}
		return err
	}
	rc, err := storage.OpenVersion(actx, b.inner, name, version, off, length)
	if err != nil {
		return 0, stalled(err), nil
	}
	defer rc.Close()
	for {
		// A reader that ignores its context still stops between reads.
		if err := actx.Err(); err != nil {
			return n, stalled(err), nil
		}
		m, err := rc.Read(buf)
		if m > 0 {
			dog.busy()
			wm, werr := w.Write(buf[:m])
			dog.progress()
			n += int64(wm)
			b.stats.Bytes.Add(int64(wm))
			if werr == nil && wm < m {
				werr = io.ErrShortWrite
			}
			if werr != nil {
				return n, nil, werr
			}
		}
		// io.EOF itself, by the Read contract: a wrapped EOF is an error
		// that happens to mention it, not the end of the object.
		if err == io.EOF {
			return n, nil, nil
		}
		if err != nil {
			return n, stalled(err), nil
		}
	}
}

// SizeHint asks the size of an object once, bounded by the stall timeout:
// it is a hint (room to make in a disk cache), never worth waiting or
// retrying for.
func (b *Backend) SizeHint(ctx context.Context, name string) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, b.policy.StallTimeout)
	defer cancel()
	info, err := b.inner.Stat(ctx, name)
	return info.Size, err
}

// CopyTo is Fetch for a destination that wants the object's size first:
// it asks the size (SizeHint), passes it to reserve when known and reserve
// is not nil, then fetches. The size request counts in the fetch's budget,
// so a dead source is given up within MaxElapsed + StallTimeout of the call.
func (b *Backend) CopyTo(ctx context.Context, name string, w io.Writer, reserve func(int64) error) (int64, error) {
	start := time.Now()
	if reserve != nil {
		if size, err := b.SizeHint(ctx, name); err == nil {
			if err := reserve(size); err != nil {
				return 0, err
			}
		}
	}
	return b.fetch(ctx, name, "", 0, -1, w, start)
}

// Stat identifies the named object, retrying transient errors as Fetch
// does: each attempt bounded by the stall timeout, the whole by MaxElapsed,
// after which it returns a *storage.UnavailableError. A permanent error (a
// missing object, matching fs.ErrNotExist) returns as it is.
func (b *Backend) Stat(ctx context.Context, name string) (storage.ObjectInfo, error) {
	p := b.policy
	start := time.Now()
	backoff := p.InitialBackoff
	refused := 0
	for attempts := 1; ; attempts++ {
		if attempts > 1 {
			b.stats.Retries.Add(1)
		}
		actx, cancel := context.WithTimeout(ctx, p.StallTimeout)
		info, err := b.inner.Stat(actx, name)
		timedOut := actx.Err() != nil
		cancel()
		switch {
		case err == nil:
			b.answered()
			return info, nil
		case ctx.Err() != nil:
			return storage.ObjectInfo{}, ctx.Err()
		case timedOut && errors.Is(err, context.DeadlineExceeded):
			// This attempt's own timeout: a stall, transient. Named as
			// one, so a give-up does not read as the caller's deadline.
			err = storage.Transient(fmt.Errorf("%w: no answer for %v", errStalled, p.StallTimeout))
		case !storage.IsTransient(err):
			return storage.ObjectInfo{}, b.nameError(name, err)
		}
		refused = refusals(refused, err)
		wait := max(jitter(backoff), storage.RetryAfter(err))
		if time.Since(start)+wait > p.MaxElapsed || refused > maxRefused {
			return storage.ObjectInfo{}, &storage.UnavailableError{URI: b.inner.Location(), Name: name, Attempts: attempts, Err: err}
		}
		b.logRetry(ctx, name, attempts, -1, wait, p.MaxElapsed-time.Since(start), err)
		if err := sleep(ctx, wait); err != nil {
			return storage.ObjectInfo{}, err
		}
		backoff = min(2*backoff, p.MaxBackoff)
	}
}

// maxRefused is how many attempts in a row whose connection was refused
// a read retries: one, for a server restarting. An endpoint where nothing
// listens answers the next attempt as fast, so the read gives up then,
// as a host that does not resolve is given up on at once, rather than
// waiting out MaxElapsed (on every scheme: the decorator is theirs).
const maxRefused = 1

// refusals counts an attempt that failed with err: the attempts in a row
// before it whose connection was refused were n.
func refusals(n int, err error) int {
	if errors.Is(err, syscall.ECONNREFUSED) {
		return n + 1
	}
	return 0
}

// answered ends a bout of failures: the next retry of the source is logged
// at warn level again from its first step.
func (b *Backend) answered() {
	if b.warned.Load() != 0 {
		b.warned.Store(0)
	}
}

// logRetry logs the retry of name after attempt (at offset off, -1 for a
// Stat): at warn level when no read of the source has reached that attempt
// since it last answered, else at debug level. The record names the
// source, the file, the error (with the backend's remedy: storage.Explainer)
// and how long the read keeps trying.
func (b *Backend) logRetry(ctx context.Context, name string, attempt int, off int64, wait, left time.Duration, err error) {
	if b.log == nil {
		return
	}
	level := slog.LevelDebug
	for {
		w := b.warned.Load()
		if int64(attempt) <= w {
			break
		}
		if b.warned.CompareAndSwap(w, int64(attempt)) {
			level = slog.LevelWarn
			break
		}
	}
	if !b.log.Enabled(ctx, level) {
		return
	}
	if ex := storage.Explainer(nil); storage.As(b.inner, &ex) {
		err = ex.Explain(err)
	}
	attrs := []slog.Attr{slog.String("source", b.inner.Location()), slog.String("file", name),
		slog.Int("attempt", attempt), slog.Duration("wait", wait.Round(time.Millisecond)),
		slog.Duration("gives_up_in", max(left, 0).Round(time.Second))}
	if off > 0 {
		attrs = append(attrs, slog.Int64("offset", off))
	}
	attrs = append(attrs, slog.Any("error", err))
	b.log.LogAttrs(ctx, level, "source read failed: retrying (--fetch-timeout bounds the time without progress)", attrs...)
}

// nameError names the object in a permanent error, unless the error names
// its path already.
func (b *Backend) nameError(name string, err error) error {
	if _, ok := errors.AsType[*fs.PathError](err); ok {
		return err
	}
	return fmt.Errorf("%s/%s: %w", b.inner.Location(), name, err)
}

// jitter draws a wait from [d/2, d].
func jitter(d time.Duration) time.Duration {
	half := d / 2
	return half + rand.N(d-half+1)
}

// sleep waits for d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
