package cache

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"cloud.google.com/go/storage"
	"google.golang.org/api/googleapi"
)

// RetryPolicy says how long a Fetcher keeps trying a failing source.
type RetryPolicy struct {
	// InitialBackoff is the wait after the first failed attempt. Each
	// further wait doubles, drawn with jitter from [w/2, w], up to
	// MaxBackoff. An attempt that delivered bytes restarts the doubling.
	InitialBackoff time.Duration
	MaxBackoff     time.Duration
	// MaxElapsed bounds the time a fetch goes without progress, waits
	// included: counted from the start of the fetch, and again from the end
	// of every attempt that delivered bytes. When the next wait would
	// overrun it, the fetch fails with an *UnavailableError; as an attempt
	// that delivers nothing lasts at most StallTimeout, a dead source is
	// given up within MaxElapsed + StallTimeout. A download that keeps
	// moving is never abandoned, however large the file.
	MaxElapsed time.Duration
	// StallTimeout abandons an attempt that delivers no byte for this long,
	// the wait for the response included (a half-open connection never
	// fails by itself). A stall is a transient error.
	StallTimeout time.Duration
}

// DefaultRetryPolicy suits GCS and network filesystems:
//   - 100ms first wait: most GCS faults (a reset connection, one 503) clear
//     at once, and a trainer should not pay the client library's 1s for them;
//   - 10s largest wait: reached after seven doublings, so a 429 or a run of
//     503s backs off as GCS asks, while a source that recovers is noticed
//     within seconds; the jitter spreads the daemons of a cluster;
//   - 2min without progress: rides out a regional blip, yet a reader gets
//     EIO for its batch rather than a silent hang;
//   - 30s stall: GCS sends the first byte in well under a second and rarely
//     pauses for more than a few; nothing for 30s is a dead connection.
func DefaultRetryPolicy() RetryPolicy {
	return RetryPolicy{
		InitialBackoff: 100 * time.Millisecond,
		MaxBackoff:     10 * time.Second,
		MaxElapsed:     2 * time.Minute,
		StallTimeout:   30 * time.Second,
	}
}

// withDefaults fills the fields that are not positive from DefaultRetryPolicy.
func (p RetryPolicy) withDefaults() RetryPolicy {
	d := DefaultRetryPolicy()
	if p.InitialBackoff <= 0 {
		p.InitialBackoff = d.InitialBackoff
	}
	if p.MaxBackoff <= 0 {
		p.MaxBackoff = d.MaxBackoff
	}
	p.MaxBackoff = max(p.MaxBackoff, p.InitialBackoff)
	if p.MaxElapsed <= 0 {
		p.MaxElapsed = d.MaxElapsed
	}
	if p.StallTimeout <= 0 {
		p.StallTimeout = d.StallTimeout
	}
	return p
}

// FetchStats counts the traffic of every Fetch that shares it. It is safe
// for concurrent use.
type FetchStats struct {
	Attempts atomic.Int64 // source opens, first tries and retries
	Retries  atomic.Int64 // attempts after the first of a fetch
	Bytes    atomic.Int64 // bytes written to destinations
	Failures atomic.Int64 // fetches that failed, other than by cancellation
}

// Fetcher reads whole files from Sources, retrying transient faults. Its
// fields are set before first use; one Fetcher serves any number of
// concurrent fetches.
type Fetcher struct {
	// Policy bounds the retries; a zero field takes its DefaultRetryPolicy
	// value.
	Policy RetryPolicy
	// Stats, when not nil, counts attempts, retries, bytes and failures.
	Stats *FetchStats
	// Log, when not nil, gets one debug record per retry.
	Log *slog.Logger
	// Limit, when not nil, caps the bytes per second of every fetch that
	// shares it.
	Limit *RateLimiter
}

// errStalled marks an attempt abandoned by the stall watchdog.
var errStalled = errors.New("source stalled")

// errChecksum marks bytes that failed the storage client's CRC32C check:
// damaged in transit, worth fetching again from the start.
var errChecksum = errors.New("checksum mismatch")

// copyBufs holds the 1 MiB buffers that fetches copy through.
var copyBufs = sync.Pool{New: func() any {
	b := make([]byte, 1<<20)
	return &b
}}

// Fetch streams the named file into w, exactly once and in order, and
// returns the bytes written.
//
// On a transient error (see IsTransient), or when an attempt stalls for
// Policy.StallTimeout, Fetch waits and resumes at the offset already written.
// Once the next wait would overrun Policy.MaxElapsed without progress, it
// returns an *UnavailableError (matching ErrUnavailable) that wraps the last
// error. A permanent error (a missing file, matching fs.ErrNotExist; a 403 or
// 400) returns after the attempt that met it, and an error from w at once,
// both as they are. When ctx is done Fetch returns ctx.Err(): during a wait at
// once, during a read as soon as the source's reader gives up, which the GCS
// reader does when its context is cancelled.
//
// A CRC32C mismatch that the storage client finds at the end of a whole
// object (bytes damaged in transit) is retried from the start when w can
// start over (as ReadFile's buffer can); into any other w, whose bytes are
// already written, Fetch returns it as an error matching errChecksum.
func (f *Fetcher) Fetch(ctx context.Context, src Source, name string, w io.Writer) (int64, error) {
	return f.fetch(ctx, src, name, w, time.Now())
}

// fetch is Fetch with the budget's clock started at since.
func (f *Fetcher) fetch(ctx context.Context, src Source, name string, w io.Writer, since time.Time) (int64, error) {
	p := f.Policy.withDefaults()
	st := f.Stats
	if st == nil {
		st = new(FetchStats)
	}
	bufp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bufp)

	var (
		written  int64
		attempts int
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
		n, err, werr := attempt(ctx, src, name, written, w, *bufp, p.StallTimeout, st, f.Limit)
		written += n
		switch {
		case werr != nil:
			st.Failures.Add(1)
			return written, werr
		case err == nil:
			return written, nil
		case ctx.Err() != nil:
			return written, ctx.Err()
		case errors.Is(err, errChecksum):
			r, ok := w.(restarter)
			if !ok {
				st.Failures.Add(1)
				return written, nameError(src, name, err)
			}
			// The bytes were bad: no progress, start over.
			r.restart()
			written, n = 0, 0
		case !IsTransient(err):
			st.Failures.Add(1)
			return written, nameError(src, name, err)
		}
		if n > 0 {
			since = time.Now()
			backoff = p.InitialBackoff
		}
		wait := jitter(backoff)
		if time.Since(since)+wait > p.MaxElapsed {
			st.Failures.Add(1)
			return written, &UnavailableError{URI: src.URI(), Name: name, Attempts: attempts, Err: err}
		}
		if f.Log != nil {
			f.Log.LogAttrs(ctx, slog.LevelDebug, "fetch retry",
				slog.String("source", src.URI()), slog.String("file", name),
				slog.Int("attempt", attempts), slog.Int64("offset", written),
				slog.Duration("wait", wait), slog.Any("error", err))
		}
		if err := sleep(ctx, wait); err != nil {
			return written, err
		}
		backoff = min(2*backoff, p.MaxBackoff)
	}
}

// Size asks the size of a file once, bounded by the stall timeout: it is a
// hint (room to make in the disk cache), never worth waiting or retrying for.
func (f *Fetcher) Size(ctx context.Context, src Source, name string) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, f.Policy.withDefaults().StallTimeout)
	defer cancel()
	return src.Size(ctx, name)
}

// fetchSized is Fetch for a destination that wants the file's size first:
// it asks the size (a hint, once, bounded by the stall timeout), passes it to
// reserve when known, then fetches. The size request counts in the fetch's
// budget, so a dead source is given up within MaxElapsed + StallTimeout of
// the call.
func (f *Fetcher) fetchSized(ctx context.Context, src Source, name string, w io.Writer, reserve func(int64) error) error {
	start := time.Now()
	if size, err := f.Size(ctx, src, name); err == nil {
		if err := reserve(size); err != nil {
			return err
		}
	}
	_, err := f.fetch(ctx, src, name, w, start)
	return err
}

// ReadFile fetches a small file, such as dataset_info.json, into memory,
// retrying as Fetch does, a checksum mismatch included.
func (f *Fetcher) ReadFile(ctx context.Context, src Source, name string) ([]byte, error) {
	var b memFile
	if _, err := f.Fetch(ctx, src, name, &b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// restarter is a destination that can drop what was written and start over.
type restarter interface{ restart() }

// memFile is an in-memory destination that can start over.
type memFile struct{ bytes.Buffer }

func (m *memFile) restart() { m.Reset() }

// attempt copies the file from offset off into w under the stall watchdog.
// It returns the bytes written and either the source's error or w's.
func attempt(ctx context.Context, src Source, name string, off int64, w io.Writer, buf []byte, stall time.Duration, st *FetchStats, lim *RateLimiter) (n int64, err, werr error) {
	actx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	dog := startWatchdog(stall, cancel)
	defer dog.stop()

	// stalled names the watchdog's cancellation instead of the read error
	// it caused.
	stalled := func(err error) error {
		if ctx.Err() == nil && errors.Is(context.Cause(actx), errStalled) {
			return fmt.Errorf("%w: no byte for %v at offset %d", errStalled, stall, off+n)
		}
		return err
	}
	rc, err := src.Open(actx, name, off)
	if err != nil {
		return 0, stalled(err), nil
	}
	defer rc.Close()
	for {
		// A reader that ignores its context (a local file) still stops
		// between reads.
		if err := actx.Err(); err != nil {
			return n, stalled(err), nil
		}
		m, err := rc.Read(buf)
		if m > 0 {
			dog.busy()
			wm, werr := w.Write(buf[:m])
			if werr == nil {
				// Pacing to --max-fetch-rate is not a stalled source.
				werr = lim.Wait(actx, wm)
			}
			dog.progress()
			n += int64(wm)
			st.Bytes.Add(int64(wm))
			if werr == nil && wm < m {
				werr = io.ErrShortWrite
			}
			if werr != nil {
				return n, nil, werr
			}
		}
		// io.EOF itself, by the Read contract: a wrapped EOF is an error
		// that happens to mention it, not the end of the file.
		if err == io.EOF {
			return n, nil, nil
		}
		if err != nil {
			return n, stalled(err), nil
		}
	}
}

// watchdog cancels an attempt that has delivered no byte for timeout.
// Reads only record the time of progress; the timer, when it fires, re-arms
// itself for the rest of the quiet period or cancels.
type watchdog struct {
	// constants
	timeout time.Duration
	start   time.Time
	timer   *time.Timer
	cancel  context.CancelCauseFunc

	// mutable state
	last atomic.Int64 // time of the last progress, ns since start; -1 while writing to the destination
	done atomic.Bool
}

func startWatchdog(timeout time.Duration, cancel context.CancelCauseFunc) *watchdog {
	d := &watchdog{timeout: timeout, start: time.Now(), cancel: cancel}
	// Armed only once d.timer is set, so that fire may use it.
	d.timer = time.AfterFunc(math.MaxInt64, d.fire)
	d.timer.Reset(timeout)
	return d
}

// busy suspends the watchdog while the destination is written: a slow
// destination is not a stalled source.
func (d *watchdog) busy() { d.last.Store(-1) }

// progress restarts the quiet period.
func (d *watchdog) progress() { d.last.Store(int64(time.Since(d.start))) }

func (d *watchdog) stop() {
	d.done.Store(true)
	d.timer.Stop()
}

func (d *watchdog) fire() {
	if d.done.Load() {
		return
	}
	last := d.last.Load()
	if last < 0 {
		d.timer.Reset(d.timeout)
		return
	}
	if quiet := time.Since(d.start) - time.Duration(last); quiet < d.timeout {
		d.timer.Reset(d.timeout - quiet)
		return
	}
	d.cancel(errStalled)
}

// IsTransient reports whether err is worth retrying: HTTP 408, 429 and 5xx,
// a connection reset, refused or aborted, an unexpected EOF, a timeout, a
// stalled source, a checksum mismatch (retried from the start: see Fetch),
// and whatever else the storage client retries by default (a lost HTTP/2
// connection, a closed idle connection). A missing file and a cancelled
// context are not.
func IsTransient(err error) bool {
	switch {
	case err == nil:
		return false
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, context.Canceled):
		return false
	case errors.Is(err, errStalled),
		errors.Is(err, errChecksum),
		errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, syscall.ECONNABORTED),
		errors.Is(err, syscall.EPIPE),
		errors.Is(err, syscall.ETIMEDOUT),
		errors.Is(err, syscall.EHOSTUNREACH),
		errors.Is(err, syscall.ENETUNREACH),
		errors.Is(err, syscall.ENETDOWN):
		return true
	}
	if ae, ok := errors.AsType[*googleapi.Error](err); ok {
		return ae.Code == 408 || ae.Code == 429 || (ae.Code >= 500 && ae.Code < 600)
	}
	if de, ok := errors.AsType[*net.DNSError](err); ok {
		return de.IsTemporary || de.IsTimeout
	}
	if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
		return true
	}
	return storage.ShouldRetry(err)
}

// nameError names the file in a permanent error, unless the error names
// its path already.
func nameError(src Source, name string, err error) error {
	if _, ok := errors.AsType[*fs.PathError](err); ok {
		return err
	}
	return fmt.Errorf("%s/%s: %w", src.URI(), name, err)
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
