package lerobot

import (
	"context"
	"errors"
	"fmt"

	"github.com/oxefs/oxefs/episode"
	"github.com/oxefs/oxefs/storage"
	"github.com/oxefs/oxefs/store"
)

// A file of the dataset is read by ranges through the store
// (store.Source.ReadAt), each read pinned to the file's version when it
// was identified; where the bytes come from is the disk cache's choice.
// What the format says is what the bytes are for:
//
//   - a remote video file's sample table is parsed once (see IndexCache),
//     by the exact ranges the MP4 parser reads (see boundReader), each kept
//     as a range of its own, so that a restart reads them from disk;
//   - each loaded episode's bytes of each camera (the samples it keeps,
//     which lie together in the file: its span) are kept as one range,
//     fetched with one request the first time a frame of it is decoded and
//     read from disk after (see readVideo);
//   - a data file is kept by the disk cache's aligned blocks
//     (store.KeepBlocks): the footer's block and the blocks of an
//     episode's row group are fetched the first time they are read.
//
// The ranges share the RLDS shards' budget, LRU and locks. When the cache
// cannot keep a range (more than its whole budget, a full disk), the
// bytes are read from the source. A data or video file's identity is asked
// once (Dataset.dataFile, Dataset.videoFile), so that loading an episode
// again contacts the source for nothing.

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
	if !d.src.Cached() {
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
	o.blocks = blocks
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

// changed says that a file changed since it was first read, for err
// (storage.ErrVersionGone) from a read of it; other errors come back as
// they are.
func changed(name, since string, err error) error {
	if errors.Is(err, storage.ErrVersionGone) {
		return fmt.Errorf("%s changed since %s: restart to read the new version: %w", name, since, err)
	}
	return err
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

// readVideo reads the video bytes at off for an episode's camera: through
// the disk cache's range of the episode's span when the dataset has a disk
// cache and they lie in it, otherwise as a read of their own.
func (d *Dataset) readVideo(ctx context.Context, vs *videoSteps, p []byte, off int64) (int, error) {
	if !d.src.Cached() || !vs.span.contains(off, int64(len(p))) {
		return vs.obj.readAt(ctx, p, off)
	}
	o := vs.obj
	n, err := d.src.ReadAt(ctx, o.identity(), p, off, store.ReadOptions{Keep: store.KeepRange,
		Extent: store.Extent{Off: vs.span.off, Len: vs.span.n}})
	if err != nil {
		return n, fmt.Errorf("dataset %s: %w", d.Name, changed(o.name, "its sample table was read", err))
	}
	return n, nil
}

// FetchBytes brings the episode's video samples, of every camera it
// reads, into the disk cache: one request per camera for its span (see
// readVideo), which the decode then reads from disk. It does nothing
// without a disk cache (a local source is read in place) or for bytes
// already kept (asking the cache once per loaded episode); a span too
// large to keep is left to the decode.
func (ep *Episode) FetchBytes(ctx context.Context) error {
	d := ep.d
	if !d.src.Cached() {
		return nil
	}
	var one [1]byte
	for _, vs := range ep.videos {
		if vs.span.n == 0 || vs.fetched.Load() {
			continue
		}
		if _, err := d.readVideo(ctx, vs, one[:], vs.span.off); err != nil {
			return err
		}
		vs.fetched.Store(true)
	}
	return nil
}

// checked runs read, which reads the file at path (identified by file)
// and fails with bad data (corruptBytes, *episode.CorruptError) when its
// bytes do not parse, and reports bad data to the store as bytes that
// failed their check (store.Suspect): whether they are read again, kept
// as the file's own, or given up on is the store's to decide
// (store.Source.Recheck).
func (d *Dataset) checked(ctx context.Context, path string, file func(context.Context, string) (*object, error), read func() error) error {
	return d.src.Recheck(ctx, func() error {
		err := read()
		if !badBytes(err) {
			return err
		}
		obj, oerr := file(ctx, path)
		if oerr != nil {
			return fmt.Errorf("%w (identifying the file to read it again: %v)", err, oerr)
		}
		return &store.Suspect{Object: obj.identity(), Err: err}
	})
}

// badBytes reports whether err says that bytes read failed to parse, as
// opposed to a read that failed or a file that is missing.
func badBytes(err error) bool {
	return err != nil && (isCorrupt(err) || errors.Is(err, episode.ErrCorrupt)) && !errors.Is(err, episode.ErrMissingShard)
}
