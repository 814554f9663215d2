package lerobot

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/oxefs/oxefs/storage"
	"github.com/oxefs/oxefs/storage/diskcache"
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

// A remote data file is read through the disk cache too, by blocks of
// dataBlock bytes at aligned offsets, each fetched with one request pinned
// to the file's version and kept as a range entry: the footer's block and
// the blocks of an episode's row group are fetched the first time they
// are read, and read from disk after. A data file's identity is asked once
// (Dataset.dataFile), so that loading an episode again contacts the
// source for nothing.

// dataBlock is the size of the disk cache's blocks of a data file.
const dataBlock = 1 << 20

// dataFile returns the data file at name: with a disk cache, identified
// once and read by blocks through it; without, identified at each call and
// read from the source.
func (d *Dataset) dataFile(ctx context.Context, name string) (*object, error) {
	return d.file(ctx, name, true)
}

// videoFile returns the video file at name: with a disk cache, identified
// once (its reads go through the cache by episode, see readVideo, and the
// MP4 parser's by the exact ranges it reads, see boundReader); without,
// identified at each call.
func (d *Dataset) videoFile(ctx context.Context, name string) (*object, error) {
	return d.file(ctx, name, false)
}

func (d *Dataset) file(ctx context.Context, name string, blocks bool) (*object, error) {
	if d.ranges == nil {
		return d.stat(ctx, name)
	}
	d.filesMu.Lock()
	o, ok := d.files[name]
	d.filesMu.Unlock()
	if ok {
		return o, nil
	}
	o, err := d.stat(ctx, name)
	if err != nil {
		return nil, err
	}
	if blocks {
		o.blocks = d.ranges
	}
	d.filesMu.Lock()
	defer d.filesMu.Unlock()
	if d.files == nil {
		d.files = map[string]*object{}
	}
	if prev, ok := d.files[name]; ok {
		return prev, nil
	}
	d.files[name] = o
	return o, nil
}

// readBlocks reads exactly p, which lies within the object, at off through
// the disk cache's blocks of the object.
func (o *object) readBlocks(ctx context.Context, p []byte, off int64) (int, error) {
	n := 0
	for n < len(p) {
		at := off + int64(n)
		span := byteSpan{at / dataBlock * dataBlock, 0}
		span.n = min(dataBlock, o.size-span.off)
		f, err := o.block(ctx, span)
		if err != nil {
			if errors.Is(err, storage.ErrVersionGone) {
				return n, fmt.Errorf("%s changed since it was first read: restart to read the new version: %w", o.name, err)
			}
			if !fallBack(ctx, err) {
				return n, err
			}
			m, err := o.readSource(ctx, p[n:], at)
			return n + m, err
		}
		m, err := readFull(f, p[n:min(int64(len(p)), span.off+span.n-off)], at-span.off)
		f.Close()
		n += m
		if err != nil {
			return n, fmt.Errorf("%s: cached block at %d: %w", o.name, span.off, err)
		}
	}
	return n, nil
}

// readFull reads exactly p at off of a cached file; the io.EOF an
// io.ReaderAt may give with a full read is no error.
func readFull(f io.ReaderAt, p []byte, off int64) (int, error) {
	n, err := f.ReadAt(p, off)
	if err == io.EOF && n == len(p) {
		err = nil
	}
	return n, err
}

// block returns the disk cache entry holding span of the object.
func (o *object) block(ctx context.Context, span byteSpan) (storage.File, error) {
	return cachedRange(ctx, o.blocks, o, span)
}

// cachedRange returns the entry of cache holding span of the object,
// fetching it with one request, of the object's version, when absent.
func cachedRange(ctx context.Context, cache *diskcache.Backend, o *object, span byteSpan) (storage.File, error) {
	return cache.OpenRange(ctx, o.name, o.version, span.off, span.n, func(ctx context.Context, w io.Writer, reserve func(int64) error) error {
		if err := cache.Remembered(o.name); err != nil {
			return err
		}
		if err := reserve(span.n); err != nil {
			return err
		}
		err := copyRange(ctx, o, span, w)
		cache.Remember(o.name, err)
		return err
	})
}

// fallBack reports whether a read the disk cache could not serve is read
// from the source instead: not when the reader gave up, the source did
// (reading again would wait as long again), or the file changed (reading
// again would read other bytes).
func fallBack(ctx context.Context, err error) bool {
	return ctx.Err() == nil && !errors.Is(err, storage.ErrVersionGone) && !errors.Is(err, storage.ErrUnavailable)
}

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
	case !fallBack(ctx, err):
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
	f, err := cachedRange(ctx, d.ranges, o, span)
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
