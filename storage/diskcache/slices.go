package diskcache

import (
	"context"
	"errors"
	"fmt"
	"io"

	"golang.org/x/sync/errgroup"

	"github.com/oxefs/oxefs/storage"
)

// slicing is how a Backend fill downloads a large object: as ranged
// slices, several at once, each its own request to the wrapped backend (so
// a retrying backend resumes each on its own and a rate limit paces all).
type slicing struct {
	min      int64 // objects of at least this many bytes are sliced
	size     int64 // bytes per slice
	inFlight int   // slices downloaded at once
}

var defaultSlicing = slicing{min: 32 << 20, size: 8 << 20, inFlight: 6}

// errSlice stops a one-stream copy before its first byte: the object is
// large enough to download in slices.
var errSlice = errors.New("large object: download in slices")

// copy fills w with the named object: in one stream, or in parallel slices
// when the object's size, as the copy learns it before the first byte, is
// at least the slicing threshold. A prefetch always downloads in slices,
// whatever the size: a slice's request can be abandoned when the prefetch
// pauses for readers and resumed later (see Preemptible), which one
// stream through a retrying backend cannot.
func (b *Backend) copy(ctx context.Context, name string, w io.Writer, reserve func(int64) error) error {
	s, ok := w.(*sink)
	if ok && s.prefetch {
		return b.copySlices(ctx, name, s, reserve)
	}
	hint := reserve
	if ok {
		hint = func(size int64) error {
			if size >= b.cache.slicing.min {
				return errSlice
			}
			return reserve(size)
		}
	}
	_, err := storage.Copy(ctx, b.inner, name, w, hint)
	if errors.Is(err, errSlice) {
		return b.copySlices(ctx, name, s, reserve)
	}
	return err
}

// copySlices downloads the named object into s as ranged slices, several
// at once, after copying in the ranges of it already cached (OpenRange). The object's identity (storage.ObjectInfo) is asked before and
// after: an object that changed meanwhile is an error, as is one whose
// bytes do not add up to its size. Every slice reads the version found
// before (when the backend is a storage.Versioner), so the bytes readable
// through ReadFilling while the download runs are all of that version.
func (b *Backend) copySlices(ctx context.Context, name string, s *sink, reserve func(int64) error) error {
	before, err := b.inner.Stat(ctx, name)
	if err != nil {
		return err
	}
	if err := reserve(before.Size); err != nil {
		return err
	}
	s.setVersion(before.Version)
	gaps, err := b.copyRanges(name, before.Version, before.Size, s)
	if err != nil {
		return err
	}
	sl := b.cache.slicing
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(sl.inFlight)
	for _, gap := range gaps {
		for off := gap.off; off < gap.end && gctx.Err() == nil; off += sl.size {
			g.Go(func() error {
				return b.copySlice(gctx, name, before.Version, s, off, min(sl.size, gap.end-off))
			})
		}
	}
	if err := g.Wait(); errors.Is(err, storage.ErrVersionGone) {
		return fmt.Errorf("%s changed during its download (version %q is gone): %w",
			storage.Object(b.inner, name), before.Version, err)
	} else if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	after, err := b.inner.Stat(ctx, name)
	if err != nil {
		return err
	}
	if after != before {
		return fmt.Errorf("%s changed during its download (size %d, version %q; then size %d, version %q)",
			storage.Object(b.inner, name), before.Size, before.Version, after.Size, after.Version)
	}
	return nil
}

// copySlice copies the length bytes of version of the named object at off
// into s at the same offset.
func (b *Backend) copySlice(ctx context.Context, name, version string, s *sink, off, length int64) error {
	rc := Preemptible(ctx, s, off, length, func(ctx context.Context, off, n int64) (io.ReadCloser, error) {
		return storage.OpenVersion(ctx, b.inner, name, version, off, n)
	})
	defer rc.Close()
	buf := make([]byte, min(length, 256<<10))
	pos, end := off, off+length
	for pos < end {
		m, err := rc.Read(buf[:min(int64(len(buf)), end-pos)])
		if m > 0 {
			if _, werr := s.WriteAt(buf[:m], pos); werr != nil {
				return werr
			}
			pos += int64(m)
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			return err
		}
	}
	if pos < end {
		return fmt.Errorf("%s ended at byte %d of %d during its download in slices: it changed",
			storage.Object(b.inner, name), pos, end)
	}
	return nil
}
