package diskcache

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"time"

	"github.com/oxefs/oxefs/storage"
)

// Every byte is checked before it is kept:
//
//   - A whole object whose source publishes a checksum
//     (storage.ObjectInfo.Checksum: GCS's CRC32C) is checked against it
//     before it is published. A download in parallel slices combines the
//     slices' CRC32Cs as they are written (CRC32C composes: crc32cCombine),
//     so nothing is read twice; any other algorithm, or a sink whose
//     writes overlapped, reads the temp file back once. A mismatch is
//     damage in transit. A download in slices is mended first: each slice
//     fetched again, and where the copies differ, a third time, the two
//     that agree winning (mendSlices); the cached ranges of that version
//     are dropped either way (the download may have reused the damaged
//     bytes from them). Otherwise, or when the mended copy still fails,
//     the temp file is emptied and the object is fetched again after a
//     backoff, up to refetchPolicy.tries downloads; then the read fails
//     with a transient error matching storage.ErrChecksum (EIO for that
//     read), and nothing is kept.
//   - A range has no checksum of its own at the source. A read with a
//     Check (a TFRecord record's CRCs, say) whose fresh bytes fail it is
//     fetched again after a backoff: when the next fetch passes, its bytes
//     are kept; when it fails with the very same bytes (same length and
//     CRC32C), the source holds them, and the check's error is returned as
//     it is (real corruption, which the format substitutes and counts);
//     when every fetch gives other failing bytes, the read fails with a
//     transient error matching storage.ErrChecksum.
//   - A range or block without a Check (a video frame's sample bytes, a
//     parquet block) has nothing to be checked against, so it is compared
//     with a second copy (VerifyTwice, the default; fetchAgreed): two
//     requests at once, the first streamed into the fill, the second only
//     summed, and the bytes are kept, or handed to the reader, only when
//     both copies have the same length and CRC32C. When they differ, it
//     is fetched again after the backoff, until a fetch agrees with any
//     copy before it; when none has agreed after refetchPolicy.tries+1
//     fetches, the read fails with a transient error matching
//     storage.ErrChecksum and nothing is kept. The bytes a whole-object
//     download under way has written (not yet checked) count as one copy.
//     VerifyOff keeps such a range as read, one request: it is proven
//     only when a download of the whole object reuses it and passes the
//     object's checksum (or dropped, with the rest of that version's
//     ranges, when it fails).
//   - A source that publishes no checksum (a local directory, a
//     storage.Filer) is its own truth: its bytes are kept as read, once.
//
// Checksums are computed on fetch only: a read from the cache computes
// nothing.

// refetchPolicy bounds the fetches of bytes that failed a check.
type refetchPolicy struct {
	tries   int           // fetches in all, the first included
	backoff time.Duration // wait before the second; doubled for each one after
}

var defaultRefetch = refetchPolicy{tries: 3, backoff: 200 * time.Millisecond}

// wait sleeps before fetch number try+1 (try ≥ 1), or until ctx is done.
func (p refetchPolicy) wait(ctx context.Context, try int) error {
	d := p.backoff << (try - 1)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// A Retrial is the one rule for bytes that failed a check, written once:
// fetch them again after a backoff, compare, and only then call them the
// source's. The disk cache's checked ranges follow it (fetch), and so do
// the checks formats make of bytes already read (store.Source.Recheck).
// Each fetch whose bytes failed is noted with what the check saw
// (Evidence):
//
//   - the same evidence as the failed fetch before it (the same bytes, or
//     the same failure) is the source's own bytes: VerdictSource, and the
//     check's error stands (real corruption, which the format substitutes
//     and counts);
//   - evidence further into the object (a later At) is progress past the
//     bytes that failed before: the count starts over;
//   - other evidence each time, once refetchPolicy.tries fetches have
//     failed, is damage in transit that never went away: VerdictGaveUp,
//     a transient error matching storage.ErrChecksum (EIO for that read),
//     and nothing is kept;
//   - otherwise VerdictAgain, once the backoff has passed.
type Retrial struct {
	policy refetchPolicy
	fails  int      // failed fetches since the last progress
	last   Evidence // of the last failed fetch, when fails > 0
}

// Evidence is what a check saw of bytes it refused.
type Evidence struct {
	At  int64  // where in the object the refused bytes start
	Len int64  // how many bytes the check saw
	Sum uint32 // their CRC32C, or that of the check's error text
}

// Verdict is what a Retrial says of a failed fetch.
type Verdict int

const (
	// VerdictAgain: fetch again (the backoff has passed).
	VerdictAgain Verdict = iota
	// VerdictSource: the same bytes twice; the check's error stands.
	VerdictSource
	// VerdictGaveUp: other failing bytes on every fetch.
	VerdictGaveUp
)

// Retrial starts the trial of bytes that failed a check, under the
// cache's policy.
func (c *Cache) Retrial() *Retrial { return &Retrial{policy: c.refetch} }

// NewRetrial starts the trial of bytes that failed a check under the
// default policy, for reads that go through no cache.
func NewRetrial() *Retrial { return &Retrial{policy: defaultRefetch} }

// Failed notes a fetch whose bytes failed their check, with what the check
// saw, and returns the verdict (see Retrial); for VerdictAgain it first
// waits the backoff, and returns ctx's error when ctx is done meanwhile.
func (r *Retrial) Failed(ctx context.Context, ev Evidence) (Verdict, error) {
	switch {
	case r.fails > 0 && ev == r.last:
		return VerdictSource, nil
	case r.fails > 0 && ev.At > r.last.At:
		r.fails = 0 // past the bytes that failed before
	}
	r.fails++
	r.last = ev
	if r.fails >= r.policy.tries {
		return VerdictGaveUp, nil
	}
	if err := r.policy.wait(ctx, r.fails); err != nil {
		return VerdictAgain, err
	}
	return VerdictAgain, nil
}

// Fetches returns how many fetches failed since the last progress.
func (r *Retrial) Fetches() int { return r.fails }

// crc32cCombine returns the CRC32C of A followed by B, given crcA of A,
// crcB of B and B's length: zlib's crc32_combine (Mark Adler's method),
// which applies lenB zero bytes to crcA with powers of the CRC's GF(2)
// operator matrix, for the Castagnoli polynomial.
func crc32cCombine(crcA, crcB uint32, lenB int64) uint32 {
	if lenB <= 0 {
		return crcA
	}
	var even, odd [32]uint32
	odd[0] = crc32.Castagnoli // the operator for one zero bit
	row := uint32(1)
	for n := 1; n < 32; n++ {
		odd[n] = row
		row <<= 1
	}
	gf2Square(&even, &odd) // two zero bits
	gf2Square(&odd, &even) // four
	for {
		gf2Square(&even, &odd) // one zero byte, then 4, 16...
		if lenB&1 != 0 {
			crcA = gf2Times(&even, crcA)
		}
		lenB >>= 1
		if lenB == 0 {
			break
		}
		gf2Square(&odd, &even)
		if lenB&1 != 0 {
			crcA = gf2Times(&odd, crcA)
		}
		lenB >>= 1
		if lenB == 0 {
			break
		}
	}
	return crcA ^ crcB
}

func gf2Times(mat *[32]uint32, vec uint32) uint32 {
	var sum uint32
	for i := 0; vec != 0; i, vec = i+1, vec>>1 {
		if vec&1 != 0 {
			sum ^= mat[i]
		}
	}
	return sum
}

func gf2Square(square, mat *[32]uint32) {
	for n := range 32 {
		square[n] = gf2Times(mat, mat[n])
	}
}

// verify checks the size bytes the fill wrote into s against the checksum
// the source published (info.Checksum), when it published one.
func (b *Backend) verify(name string, info storage.ObjectInfo, s *sink) error {
	c := info.Checksum
	if !c.Published() {
		return nil
	}
	object := storage.Object(b.inner, name)
	if !s.covers(info.Size) {
		return fmt.Errorf("%s: the download does not hold all of its %d bytes: %w", object, info.Size, io.ErrUnexpectedEOF)
	}
	if c.Algorithm == storage.CRC32C {
		if sum, ok := s.crc32c(info.Size); ok {
			return c.Check(object, binary.BigEndian.AppendUint32(nil, sum))
		}
	}
	h, err := c.NewHash()
	if err != nil {
		return fmt.Errorf("%s: %w", object, err)
	}
	if _, err := io.Copy(h, io.NewSectionReader(s.f, 0, info.Size)); err != nil {
		return fmt.Errorf("disk cache %s: reading back the download to check it: %w", b.Key(name), err)
	}
	return c.Check(object, h.Sum(nil))
}

// fillVerified writes the object want (of want.Version when it names
// one) into s, checked against its source's checksum (see above), fetching
// it again while it comes damaged.
func (b *Backend) fillVerified(ctx context.Context, want Object, s *sink, reserve func(int64) error) error {
	name := want.Name
	p := b.cache.refetch
	for try := 1; ; try++ {
		info, err := b.copy(ctx, want, s, reserve)
		whole := err == nil // every byte written: a download that can be mended
		if whole {
			err = b.verify(name, info, s)
			if err == nil && info.Checksum.Published() {
				b.cache.Stats.Verified.Add(1)
			}
		}
		if !errors.Is(err, storage.ErrChecksum) || ctx.Err() != nil {
			return err
		}
		b.cache.Stats.Damaged.Add(1)
		if info.Version != "" {
			// The cached ranges the download reused may be the damaged
			// bytes.
			if ferr := b.ForgetRanges(name, info.Version); ferr != nil {
				b.cache.log.Warn("disk cache: could not drop the cached ranges of a damaged download", "key", b.Key(name), "err", ferr)
			}
		}
		if whole && (info.Size >= b.cache.slicing.min || s.prefetch) {
			// Downloaded in slices: mend the damaged ones rather than
			// fetch it all again, which at a high damage rate may never
			// come whole.
			merr := b.mendSlices(ctx, name, info, s)
			if merr == nil {
				if merr = b.verify(name, info, s); merr == nil {
					b.cache.Stats.Verified.Add(1)
					return nil
				}
			}
			if !errors.Is(merr, storage.ErrChecksum) {
				return merr
			}
			err = merr
		}
		if try >= p.tries {
			b.cache.Stats.Rejected.Add(1)
			return storage.Transient(fmt.Errorf("%w (on each of %d downloads; nothing was kept)", err, try))
		}
		b.cache.log.Warn("disk cache: a download failed its checksum; fetching it again", "key", b.Key(name),
			"download", try, "err", err)
		if err := s.restart(); err != nil {
			return fmt.Errorf("disk cache %s: %w", b.Key(name), err)
		}
		if err := p.wait(ctx, try); err != nil {
			return err
		}
	}
}

// mendSlices repairs a download of the named object whose bytes failed
// the checksum, slice by slice (slicing.size): each slice is fetched
// again and compared (CRC32C) with what the download wrote; where they
// differ, it is fetched a third time and the two copies that agree win
// (random damage does not repeat itself). A slice whose three copies all
// differ is left as it is, and the checksum, checked after, fails again.
// Slices are mended one at a time, so it holds three slices' bytes at
// most (24 MiB with the default 8 MiB slices).
func (b *Backend) mendSlices(ctx context.Context, name string, info storage.ObjectInfo, s *sink) error {
	size := b.cache.slicing.size
	var onDisk, first, second []byte
	for off := int64(0); off < info.Size; off += size {
		n := min(size, info.Size-off)
		if err := s.pause(); err != nil {
			return err
		}
		onDisk = grow(onDisk, n)
		if _, err := s.f.ReadAt(onDisk, off); err != nil {
			return fmt.Errorf("disk cache %s: reading back the download to mend it: %w", b.Key(name), err)
		}
		first = grow(first, n)
		if err := b.fetchSlice(ctx, name, info.Version, first, off); err != nil {
			return err
		}
		sum := func(p []byte) uint32 { return crc32.Checksum(p, storage.CastagnoliTable) }
		d, f := sum(onDisk), sum(first)
		if d == f {
			continue
		}
		second = grow(second, n)
		if err := b.fetchSlice(ctx, name, info.Version, second, off); err != nil {
			return err
		}
		switch sec := sum(second); {
		case sec == f:
			if _, err := s.WriteAt(first, off); err != nil {
				return err
			}
			b.cache.log.Debug("disk cache: mended a damaged slice", "key", b.Key(name), "offset", off, "bytes", n)
		case sec != d:
			b.cache.log.Debug("disk cache: three different copies of a slice", "key", b.Key(name), "offset", off)
		}
	}
	return nil
}

// grow returns p resized to n bytes, reusing its array when it can.
func grow(p []byte, n int64) []byte {
	if int64(cap(p)) >= n {
		return p[:n]
	}
	return make([]byte, n)
}

// fetchSlice reads len(p) bytes of version of the named object at off from
// the source.
func (b *Backend) fetchSlice(ctx context.Context, name, version string, p []byte, off int64) error {
	rc, err := storage.OpenVersion(ctx, b.inner, name, version, off, int64(len(p)))
	if err != nil {
		return err
	}
	defer rc.Close()
	if _, err := io.ReadFull(rc, p); err != nil {
		return fmt.Errorf("%s: %d bytes at %d: %w", storage.Object(b.inner, name), len(p), off, err)
	}
	return nil
}
