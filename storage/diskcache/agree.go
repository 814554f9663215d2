package diskcache

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"slices"
	"sync"

	"github.com/oxefs/oxefs/storage"
)

// VerifyRanges says how a ranged read with no Check is verified before its
// bytes are kept or served (see verify.go).
type VerifyRanges int32

const (
	// VerifyTwice fetches such a range twice, at once, and takes its
	// bytes only when the two copies agree: the default.
	VerifyTwice VerifyRanges = iota
	// VerifyOff fetches it once and takes it as it came: for links the
	// user trusts not to damage bytes in transit.
	VerifyOff
)

// verifyRangesNames are VerifyRanges' names, as --verify-ranges takes them.
var verifyRangesNames = [...]string{VerifyTwice: "twice", VerifyOff: "off"}

func (v VerifyRanges) String() string {
	if v < 0 || int(v) >= len(verifyRangesNames) {
		return fmt.Sprintf("VerifyRanges(%d)", int32(v))
	}
	return verifyRangesNames[v]
}

// ParseVerifyRanges reads a VerifyRanges by name ("twice", "off").
func ParseVerifyRanges(s string) (VerifyRanges, error) {
	for v, name := range verifyRangesNames {
		if s == name {
			return VerifyRanges(v), nil
		}
	}
	return 0, fmt.Errorf("%q: must be %s (fetch each range no format checks twice, keep it when the copies agree) or %s (fetch it once, as it comes)",
		s, VerifyTwice, VerifyOff)
}

// SetVerifyRanges sets how the ranged reads of every backend of c that
// have no Check are verified (VerifyTwice until set).
func (c *Cache) SetVerifyRanges(v VerifyRanges) { c.verifyRanges.Store(int32(v)) }

// VerifyRanges returns what SetVerifyRanges set.
func (c *Cache) VerifyRanges() VerifyRanges { return VerifyRanges(c.verifyRanges.Load()) }

// comparesCopies reports whether a ranged read of b with no Check is
// fetched twice and compared: unless VerifyOff, or the source's objects
// are local files (a local directory is its own truth).
func (b *Backend) comparesCopies() bool {
	if storage.IsFiler(b.inner) {
		return false
	}
	return b.cache.VerifyRanges() != VerifyOff
}

// rangeSum identifies a copy of a range's bytes: their length and CRC32C.
type rangeSum struct {
	n   int64
	crc uint32
}

// sumOf returns the rangeSum of p.
func sumOf(p []byte) rangeSum {
	return rangeSum{int64(len(p)), crc32.Checksum(p, storage.CastagnoliTable)}
}

// summing is a Check that refuses nothing: fetchOnce sums what it sees.
func summing() io.WriteCloser { return nopWriteCloser{} }

type nopWriteCloser struct{}

func (nopWriteCloser) Write(p []byte) (int, error) { return len(p), nil }
func (nopWriteCloser) Close() error                { return nil }

// fetchAgreed is fetch for a range with no Check from a source that
// publishes checksums (see verify.go): it writes the n bytes at off of o
// into w only as a copy that another copy agrees with. held, when not
// nil, is the sum of the bytes already in w (read from a download under
// way), which count as the first copy; otherwise the first two copies are
// fetched at once, the first into w, the second summed only. Each later
// copy is fetched into w, after the backoff, until one agrees with any
// before it. w is a fill's sink (published only once fetchAgreed returns
// nil) or the caller's buffer (handed back only then).
func (b *Backend) fetchAgreed(ctx context.Context, o Object, w io.Writer, off, n int64, count bool, held *rangeSum) error {
	var seen []rangeSum
	if held != nil {
		seen = append(seen, *held)
	} else {
		first, second, err := b.fetchPair(ctx, o, w, off, n, count)
		if err != nil {
			return err
		}
		if first == second {
			b.cache.Stats.Compared.Add(1)
			return nil
		}
		seen = append(seen, first, second)
		b.cache.Stats.Damaged.Add(1)
	}
	p := b.cache.refetch
	for {
		if len(seen) >= p.tries+1 {
			b.cache.Stats.Rejected.Add(1)
			return &fetchError{storage.Transient(fmt.Errorf("%s: %d bytes at %d: no two of %d copies agreed (nothing was kept): %w",
				storage.Object(b.inner, o.Name), n, off, len(seen), storage.ErrChecksum))}
		}
		if len(seen) >= 2 {
			b.cache.log.Debug("disk cache: two copies of a range differ; fetching it again", "key", b.Key(o.Name),
				"offset", off, "bytes", n, "copies", len(seen))
			if err := p.wait(ctx, len(seen)-1); err != nil {
				return err
			}
		}
		if err := restartWriter(w); err != nil {
			return err
		}
		f := b.fetchOnce(ctx, o, w, off, n, summing, count)
		if f.err != nil {
			return f.err
		}
		got := rangeSum{f.seen, f.sum}
		if slices.Contains(seen, got) {
			b.cache.Stats.Compared.Add(1)
			return nil // w holds bytes another copy agrees with
		}
		seen = append(seen, got)
		b.cache.Stats.Damaged.Add(1)
	}
}

// fetchPair fetches two copies of the n bytes at off of o at once: the
// first into w, the second only summed. Both yield to more urgent readers
// when w is a fill's sink.
func (b *Backend) fetchPair(ctx context.Context, o Object, w io.Writer, off, n int64, count bool) (first, second rangeSum, err error) {
	ctx2, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg   sync.WaitGroup
		err2 error
	)
	wg.Go(func() { second, err2 = b.sumOnce(ctx2, o, w, off, n, count) })
	f := b.fetchOnce(ctx, o, w, off, n, summing, count)
	if f.err != nil {
		cancel()
	}
	wg.Wait()
	switch {
	case f.err != nil:
		return first, second, f.err
	case err2 != nil:
		if ctx.Err() != nil {
			return first, second, ctx.Err()
		}
		return first, second, err2
	}
	return rangeSum{f.seen, f.sum}, second, nil
}

// sumOnce fetches the n bytes at off of o and returns their sum, keeping
// none of them; w is the fill's writer the fetch yields for (see
// newPreemptible), never written to.
func (b *Backend) sumOnce(ctx context.Context, o Object, w io.Writer, off, n int64, count bool) (rangeSum, error) {
	rc := newPreemptible(ctx, w, off, n, func(ctx context.Context, off, n int64) (io.ReadCloser, error) {
		return storage.OpenVersion(ctx, b.inner, o.Name, o.Version, off, n)
	})
	defer rc.Close()
	t := &trackedWriter{w: io.Discard, sum: true}
	got, err := io.CopyBuffer(t, rc, make([]byte, min(max(n, 1), 32<<10)))
	if count {
		b.cache.Stats.RangeBytes.Add(got)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		err = nil // the object ended early: reported below
	}
	if err == nil && got != n {
		err = fmt.Errorf("%s: %d bytes at %d, got %d: %w", o.Name, n, off, got, io.ErrUnexpectedEOF)
	}
	b.Remember(o.Name, err)
	if err != nil {
		return rangeSum{}, &fetchError{err}
	}
	return rangeSum{t.n, t.crc}, nil
}
