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

// copy fills s with the named object and returns its identity as the
// source gave it before the first byte: in one stream pinned to that
// version, or in parallel slices when the object's size is at least the
// slicing threshold. A prefetch always downloads in slices, whatever the
// size: a slice's request can be abandoned when the prefetch pauses for
// readers and resumed later (see newPreemptible), which one stream
// through a retrying backend cannot.
func (b *Backend) copy(ctx context.Context, want Object, s *sink, reserve func(int64) error) (storage.ObjectInfo, error) {
	name := want.Name
	info, err := b.inner.Stat(ctx, name)
	if err != nil {
		return info, err
	}
	pinned := false
	if want.Version != "" && info.Version != want.Version {
		// An older version than the source's current one: read pinned to
		// it (whose checksum the source's answer does not give).
		info, pinned = storage.ObjectInfo{Size: want.Size, Version: want.Version}, true
	}
	if err := reserve(info.Size); err != nil {
		return info, err
	}
	if s.prefetch || info.Size >= b.cache.slicing.min {
		return info, b.copySlices(ctx, name, s, info, pinned)
	}
	rc, err := storage.OpenVersion(ctx, b.inner, name, info.Version, 0, -1)
	if err != nil {
		return info, err
	}
	defer rc.Close()
	n, err := io.Copy(s, rc)
	if err == nil && n != info.Size {
		err = fmt.Errorf("%s: %d bytes, its size was %d: it changed during its download",
			storage.Object(b.inner, name), n, info.Size)
	}
	return info, err
}

// copySlices downloads the named object, found as before, into s as
// ranged slices, several at once, after copying in the ranges of it
// already cached (openRange). The object's identity is asked again after:
// an object that changed meanwhile is an error, as is one whose bytes do
// not add up to its size. Every slice reads the version found before
// (when the backend is a storage.Versioner), so the bytes readable through
// ReadFilling while the download runs are all of that version.
func (b *Backend) copySlices(ctx context.Context, name string, s *sink, before storage.ObjectInfo, pinned bool) error {
	s.setVersion(before.Version)
	gaps, err := b.copyRanges(name, before.Version, 0, before.Size, s)
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
	if pinned {
		return nil // every slice read that version, which the source still has
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
// into s at the same offset. Whenever it (re)starts, after a pause for more
// urgent readers say, it first copies the ranges of the slice that were
// cached on their own meanwhile (a record a batch needed) and fetches only
// the rest.
func (b *Backend) copySlice(ctx context.Context, name, version string, s *sink, off, length int64) error {
	pos, end := off, off+length
	for pos < end {
		if err := s.pause(); err != nil {
			return err
		}
		gaps, err := b.copyRanges(name, version, pos, end, s)
		if err != nil {
			return err
		}
		if len(gaps) == 0 {
			return nil
		}
		// Fetch the first gap; the cached ranges after it are looked
		// for again once it is done (more may be cached by then).
		gap := gaps[0]
		got, err := b.fetchSpan(ctx, name, version, s, gap)
		pos = gap.off + got
		if errors.Is(err, errPaused) {
			continue
		}
		if err != nil {
			return err
		}
		if pos < gap.end {
			return fmt.Errorf("%s ended at byte %d of %d during its download in slices: it changed",
				storage.Object(b.inner, name), pos, gap.end)
		}
	}
	return nil
}

// fetchSpan fetches g of version of the named object into s until done,
// or until the fill must pause (errPaused), and returns the bytes written.
func (b *Backend) fetchSpan(ctx context.Context, name, version string, s *sink, g span) (int64, error) {
	rc := &preemptible{ctx: ctx, s: s, pos: g.off, end: g.end, stopOnPause: true,
		open: func(ctx context.Context, off, n int64) (io.ReadCloser, error) {
			return storage.OpenVersion(ctx, b.inner, name, version, off, n)
		}}
	defer rc.Close()
	buf := make([]byte, min(g.end-g.off, 256<<10))
	pos := g.off
	for pos < g.end {
		m, err := rc.Read(buf[:min(int64(len(buf)), g.end-pos)])
		if m > 0 {
			if _, werr := s.WriteAt(buf[:m], pos); werr != nil {
				return pos - g.off, werr
			}
			pos += int64(m)
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			return pos - g.off, err
		}
	}
	return pos - g.off, nil
}
