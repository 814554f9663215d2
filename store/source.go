package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"sync"

	"golang.org/x/sync/semaphore"

	"github.com/oxefs/oxefs/storage"
	"github.com/oxefs/oxefs/storage/diskcache"
)

// A format reads an object's bytes through a Source with one call,
// ReadAt (or OpenAt, for a file over the range): the object's name,
// version and size (an Object), an offset and a length, and what the
// bytes are for (ReadOptions.Keep: a range read again the same way,
// scattered reads kept by blocks, or a read done once). Where the bytes
// come from is the disk cache's policy (diskcache.Backend.ReadAt): the
// whole object when it is cached, a download under way, a cached range or
// block, or the source, pinned to the version, at the reader's priority
// (diskcache.WithPriority on ctx) and yielding to more urgent readers. A
// version that is gone is an error that says so (storage.ErrVersionGone).
// A format never steers the cache.

// Object is one version of an object: what a ranged read is pinned to.
type Object = diskcache.Object

// CacheEntry is a file of the disk cache, as OpenAt and OpenFile return
// one: checked as it arrived and published by rename, never written in
// place (an object fetched again is a new file).
type CacheEntry = diskcache.Entry

// Keep says what the disk cache keeps of the bytes a ranged read fetches.
type Keep = diskcache.Keep

// What a ranged read's bytes are kept as (see diskcache.Keep).
const (
	KeepRange  = diskcache.KeepRange
	KeepBlocks = diskcache.KeepBlocks
	KeepNone   = diskcache.KeepNone
)

// BlockSize is the size of the blocks KeepBlocks keeps.
const BlockSize = diskcache.BlockSize

// ReadOptions shape a ranged read (see diskcache.ReadOptions).
type ReadOptions = diskcache.ReadOptions

// Extent is a byte range of an object (see ReadOptions.Extent).
type Extent = diskcache.Extent

// Source is one source as the store reads it: metadata through the
// store's stack (Backend), objects in place when they are local files,
// and through the disk cache otherwise.
type Source struct {
	src    storage.Backend    // as given
	remote storage.Backend    // src through the store's stack
	cache  *diskcache.Backend // nil: read in place, or the store has no disk cache
	log    *slog.Logger
	slots  *semaphore.Weighted // the store's index slots; nil: none

	mu sync.Mutex
	// verified holds the versions whose whole copy the store fetched and
	// checked against the source's checksum to look again at bytes that
	// failed a format's check (see Recheck); their ranged reads come
	// from that copy while the disk cache holds it. Guarded by mu.
	verified map[Object]bool
}

// Source returns src as the store reads it.
func (s *Store) Source(src storage.Backend) *Source {
	return &Source{src: src, remote: s.Wrap(src), cache: s.cached(src), log: s.log, slots: s.indexSlots}
}

// Direct returns src read as it is, with no store: no disk cache, no
// decorators; every ranged read asks src.
func Direct(src storage.Backend) *Source {
	return &Source{src: src, remote: src, log: slog.New(slog.DiscardHandler)}
}

// Backend is the source through the store's stack (retries, the rate
// limit), for metadata and identities.
func (s *Source) Backend() storage.Backend { return s.remote }

// Cached reports whether the source's objects are read through the disk
// cache (a remote source of a store with one).
func (s *Source) Cached() bool { return s.cache != nil }

// InPlace reports whether the source's objects are local files, read in
// place.
func (s *Source) InPlace() bool {
	return storage.IsFiler(s.src)
}

// ErrNoDiskCache is the error of a whole-object read of a remote source
// of a store without a disk cache: there is nowhere to keep the object.
var ErrNoDiskCache = errors.New("a remote source needs a disk cache")

// noDiskCache is ErrNoDiskCache, naming the source.
func (s *Source) noDiskCache() error {
	return fmt.Errorf("%s: %w", s.src.Location(), ErrNoDiskCache)
}

// Location is the source's.
func (s *Source) Location() string { return s.src.Location() }

// Stat returns the named object's identity, asked of the source through
// the store's stack. An object whose fetch gave up recently (see
// diskcache's failure memo) is not asked again until the memo expires,
// and a Stat that gives up is remembered the same way.
func (s *Source) Stat(ctx context.Context, name string) (storage.ObjectInfo, error) {
	if s.cache != nil {
		if err := s.cache.Remembered(name); err != nil {
			return storage.ObjectInfo{}, err
		}
	}
	info, err := s.remote.Stat(ctx, name)
	if err != nil && s.cache != nil {
		s.cache.Remember(name, err)
	}
	return info, err
}

// IndexSlot waits for one of the store's slots for indexing the named
// remote object (many small requests), and returns its release. An
// object whose fetch gave up recently fails at once, without queueing
// behind the objects that may still succeed.
func (s *Source) IndexSlot(ctx context.Context, name string) (release func(), err error) {
	if s.cache != nil {
		if err := s.cache.Remembered(name); err != nil {
			return nil, err
		}
	}
	if s.slots == nil {
		return func() {}, nil
	}
	if err := s.slots.Acquire(ctx, 1); err != nil {
		return nil, err
	}
	return func() { s.slots.Release(1) }, nil
}

// Open reads the whole object o (see OpenFile) from off, length bytes or
// to its end when length < 0.
func (s *Source) Open(ctx context.Context, o Object, off, length int64) (io.ReadCloser, error) {
	if s.InPlace() {
		return s.src.Open(ctx, o.Name, off, length)
	}
	f, err := s.OpenFile(ctx, o)
	if err != nil {
		return nil, err
	}
	off = min(max(off, 0), f.Size())
	n := f.Size() - off
	if length >= 0 {
		n = min(n, length)
	}
	return &fileReader{SectionReader: io.NewSectionReader(f, off, n), f: f}, nil
}

// fileReader reads part of an open file, and closes the file.
type fileReader struct {
	*io.SectionReader
	f storage.File
}

func (r *fileReader) Close() error { return r.f.Close() }

// OpenFile returns the whole object o as a local file: in place for a
// source of local files, from the disk cache (fetched when absent)
// otherwise. The disk cache keeps a copy per version (o.Version, the
// identity the caller read the object at): a new version is never served
// from an old one's copy, across restarts, warm and offline mounts.
func (s *Source) OpenFile(ctx context.Context, o Object) (storage.File, error) {
	return s.openFile(ctx, o, false)
}

// OpenFileBackground is OpenFile for prefetching: its download yields to
// the reads others wait for.
func (s *Source) OpenFileBackground(ctx context.Context, o Object) (storage.File, error) {
	return s.openFile(ctx, o, true)
}

func (s *Source) openFile(ctx context.Context, o Object, background bool) (storage.File, error) {
	if fl := storage.Filer(nil); storage.As(s.src, &fl) {
		return fl.OpenFile(ctx, o.Name)
	}
	if s.cache == nil {
		return nil, s.noDiskCache()
	}
	return s.cache.OpenObject(ctx, o, background)
}

// OpenCached returns the whole object o, of its version, from the disk
// cache when it is there, and an error matching fs.ErrNotExist otherwise:
// it never fetches.
func (s *Source) OpenCached(o Object) (storage.File, error) {
	if s.cache == nil {
		return nil, fmt.Errorf("%s: %w", o.Name, fs.ErrNotExist)
	}
	return s.cache.OpenCachedObject(o)
}

// Contains reports whether the whole object o, of its version, can be
// read without the source: in place, or from the disk cache.
func (s *Source) Contains(o Object) bool {
	if s.cache == nil {
		return storage.IsFiler(s.src)
	}
	return s.cache.ContainsObject(o)
}

// ReadAt reads len(p) bytes at off of o (see above); fewer is an error.
func (s *Source) ReadAt(ctx context.Context, o Object, p []byte, off int64, opts ReadOptions) (int, error) {
	if f := s.checked(o); f != nil {
		defer f.Close()
		n, err := f.ReadAt(p, off)
		if err == io.EOF && n == len(p) {
			err = nil
		}
		if err == io.EOF {
			err = fmt.Errorf("%s: %d bytes at %d, got %d: %w", o.Name, len(p), off, n, io.ErrUnexpectedEOF)
		}
		return n, err
	}
	if s.cache != nil {
		return s.cache.ReadAt(ctx, o, p, off, opts)
	}
	return s.readDirect(ctx, o, p, off, opts)
}

// OpenAt returns the n bytes at off of o as a file of n bytes (see above).
func (s *Source) OpenAt(ctx context.Context, o Object, off, n int64, opts ReadOptions) (storage.File, error) {
	if f := s.checked(o); f != nil {
		if off < 0 || n < 0 || off+n > f.Size() {
			f.Close()
			return nil, fmt.Errorf("%s: %d bytes at %d of %d: %w", o.Name, n, off, f.Size(), io.ErrUnexpectedEOF)
		}
		return &partFile{SectionReader: io.NewSectionReader(f, off, n), f: f}, nil
	}
	if s.cache != nil {
		return s.cache.OpenAt(ctx, o, off, n, opts)
	}
	buf := make([]byte, n)
	if _, err := s.readDirect(ctx, o, buf, off, opts); err != nil {
		return nil, err
	}
	return &memFile{buf: buf}, nil
}

// readDirect reads p at off of o from the source itself, in place for
// local files: one request, pinned to o's version.
func (s *Source) readDirect(ctx context.Context, o Object, p []byte, off int64, opts ReadOptions) (int, error) {
	read := s.remote
	if storage.IsFiler(s.src) {
		read = s.src
	}
	rc, err := storage.OpenVersion(ctx, read, o.Name, o.Version, off, int64(len(p)))
	if err != nil {
		return 0, err
	}
	defer rc.Close()
	n, err := io.ReadFull(rc, p)
	if opts.Check != nil && (err == nil || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)) {
		c := opts.Check()
		if _, werr := c.Write(p[:n]); werr != nil {
			return n, werr
		}
		if cerr := c.Close(); cerr != nil {
			return n, cerr
		}
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		err = fmt.Errorf("%s: %d bytes at %d, got %d: %w", o.Name, len(p), off, n, io.ErrUnexpectedEOF)
	}
	return n, err
}

// partFile is part of an open file, as a file of its own.
type partFile struct {
	*io.SectionReader
	f storage.File
}

func (f *partFile) Close() error { return f.f.Close() }

// memFile is bytes read from the source and kept nowhere.
type memFile struct{ buf []byte }

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 || off > int64(len(f.buf)) {
		return 0, fmt.Errorf("read at %d of %d bytes", off, len(f.buf))
	}
	n := copy(p, f.buf[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}
func (f *memFile) Size() int64  { return int64(len(f.buf)) }
func (f *memFile) Close() error { return nil }

// Demand registers a reader of ctx's priority waiting on the source
// outside the disk cache (for an object's index, say): until done is
// called, less urgent fills pause, as they do for readers waiting on them.
func (s *Store) Demand(ctx context.Context) (done func()) {
	if s.disk == nil {
		return func() {}
	}
	return s.disk.Demand(ctx)
}
