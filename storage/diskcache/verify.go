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
//     damage in transit: the temp file is emptied, the cached ranges of
//     that version that the download reused are dropped (they may be the
//     damaged bytes), and the object is fetched again after a backoff, up
//     to refetchPolicy.tries downloads; then the read fails with a
//     transient error matching storage.ErrChecksum (EIO for that read),
//     and nothing is kept.
//   - A range has no checksum of its own at the source. A read with a
//     Check (a TFRecord record's CRCs, say) whose fresh bytes fail it is
//     fetched again after a backoff: when the next fetch passes, its bytes
//     are kept; when it fails with the very same bytes (same length and
//     CRC32C), the source holds them, and the check's error is returned as
//     it is (real corruption, which the format substitutes and counts);
//     when every fetch gives other failing bytes, the read fails with a
//     transient error matching storage.ErrChecksum. A range or block
//     without a Check is kept as read: it is proven only when a download
//     of the whole object reuses it and passes the object's checksum (or
//     dropped, with the rest of that version's ranges, when it fails).
//   - A source that publishes no checksum (a local directory) is its own
//     truth: its bytes are kept as read.
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

// fillVerified writes the named object into s, checked against its
// source's checksum (see above), fetching it again while it comes damaged.
func (b *Backend) fillVerified(ctx context.Context, name string, s *sink, reserve func(int64) error) error {
	p := b.cache.refetch
	for try := 1; ; try++ {
		info, err := b.copy(ctx, name, s, reserve)
		if err == nil {
			err = b.verify(name, info, s)
			if err == nil && info.Checksum.Published() {
				b.cache.Stats.Verified.Add(1)
			}
		}
		if !errors.Is(err, storage.ErrChecksum) || ctx.Err() != nil {
			return err
		}
		b.cache.Stats.Damaged.Add(1)
		if try >= p.tries {
			b.cache.Stats.Rejected.Add(1)
			return storage.Transient(fmt.Errorf("%w (on each of %d downloads; nothing was kept)", err, try))
		}
		b.cache.log.Warn("disk cache: a download failed its checksum; fetching it again", "key", b.Key(name),
			"download", try, "err", err)
		if info.Version != "" {
			// The cached ranges it reused may be the damaged bytes.
			if ferr := b.ForgetRanges(name, info.Version); ferr != nil {
				b.cache.log.Warn("disk cache: could not drop the cached ranges of a damaged download", "key", b.Key(name), "err", ferr)
			}
		}
		if err := s.restart(); err != nil {
			return fmt.Errorf("disk cache %s: %w", b.Key(name), err)
		}
		if err := p.wait(ctx, try); err != nil {
			return err
		}
	}
}
