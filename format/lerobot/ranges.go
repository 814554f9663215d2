package lerobot

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/oxefs/oxefs/storage"
)

// A remote video file is read by ranges: its sample table once (see
// IndexCache), then the bytes of the samples a build decodes. With a disk
// cache (Options.Ranges), each loaded episode's bytes of each camera — the
// samples it keeps, which lie together in the file — are fetched with one
// request the first time a frame of it is decoded, pinned to the file's
// version when its table was read, and published in the disk cache as an
// entry of their own (diskcache.Backend.OpenRange). Later decodes, in this
// epoch or the next, or after a restart, read them from disk. The entries
// share the RLDS shards' budget, LRU and locks. When the cache cannot keep
// a range (more than its whole budget, a full disk), the bytes are read
// from the source as without a cache.

// maxRange bounds the bytes of one episode's camera kept as one disk
// cache entry; an episode with more is read from the source, sample run by
// sample run.
const maxRange = 256 << 20

// byteSpan is a range of a file's bytes.
type byteSpan struct{ off, n int64 }

// contains reports whether [off, off+n) lies within s.
func (s byteSpan) contains(off, n int64) bool {
	return s.n > 0 && off >= s.off && off+n <= s.off+s.n
}

// spanOf returns the bytes the samples occupy: from the first's start to
// the last's end, or nothing when that is more than maxRange.
func spanOf(samples []sample) byteSpan {
	if len(samples) == 0 {
		return byteSpan{}
	}
	lo, hi := samples[0].off, samples[0].off+int64(samples[0].size)
	for _, s := range samples[1:] {
		lo, hi = min(lo, s.off), max(hi, s.off+int64(s.size))
	}
	if hi-lo > maxRange {
		return byteSpan{}
	}
	return byteSpan{lo, hi - lo}
}

// readVideo reads the video bytes at off for an episode's camera: from its
// disk cache entry when the dataset has a disk cache and they lie in the
// episode's span, otherwise from the source.
func (d *Dataset) readVideo(ctx context.Context, vs *videoSteps, p []byte, off int64) (int, error) {
	if d.ranges == nil || !vs.span.contains(off, int64(len(p))) {
		return vs.obj.readAt(ctx, p, off)
	}
	f, err := d.videoRange(ctx, vs.obj, vs.span)
	switch {
	case err == nil:
		defer f.Close()
		return f.ReadAt(p, off-vs.span.off)
	case ctx.Err() != nil, errors.Is(err, storage.ErrVersionGone), errors.Is(err, storage.ErrUnavailable):
		// Given up, or the file changed: reading it again from the source
		// would wait as long again, or read other bytes.
		return 0, err
	}
	// The disk cache could not keep the range (more than its whole
	// budget, a full disk): read from the source.
	return vs.obj.readAt(ctx, p, off)
}

// videoRange returns the disk cache entry holding span of the video file,
// fetching it with one request, of the version the file's table was read
// from, when absent.
func (d *Dataset) videoRange(ctx context.Context, o *object, span byteSpan) (storage.File, error) {
	f, err := d.ranges.OpenRange(ctx, o.name, o.version, span.off, span.n, func(ctx context.Context, w io.Writer, reserve func(int64) error) error {
		if err := d.ranges.Remembered(o.name); err != nil {
			return err
		}
		if err := reserve(span.n); err != nil {
			return err
		}
		err := copyRange(ctx, o, span, w)
		d.ranges.Remember(o.name, err)
		return err
	})
	switch {
	case errors.Is(err, storage.ErrVersionGone):
		return nil, fmt.Errorf("dataset %s: %s changed since its sample table was read: restart to read the new version: %w", d.Name, o.name, err)
	case err != nil:
		return nil, fmt.Errorf("dataset %s: %w", d.Name, err)
	}
	return f, nil
}

// copyRange copies span of the object, of its version, into w; a short
// object is an error, so that the cache never publishes part of a range.
func copyRange(ctx context.Context, o *object, span byteSpan, w io.Writer) error {
	rc, err := storage.OpenVersion(ctx, o.src, o.name, o.version, span.off, span.n)
	if err != nil {
		return err
	}
	defer rc.Close()
	got, err := io.Copy(w, rc)
	if err == nil && got != span.n {
		err = fmt.Errorf("%s: %d bytes at %d, got %d: %w", o.name, span.n, span.off, got, io.ErrUnexpectedEOF)
	}
	return err
}
