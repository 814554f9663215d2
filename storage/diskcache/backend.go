package diskcache

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"

	"github.com/oxefs/oxefs/storage"
)

// Backend is a storage.Backend whose objects are read through the disk
// cache: each is fetched whole from the wrapped backend on first use, then
// read in place as a local file.
type Backend struct {
	// dependencies
	inner storage.Backend
	cache *Cache

	// constants
	prefix  string          // key prefix of this backend's objects
	fillCtx context.Context // lifetime of the fills
}

var (
	_ storage.Filer     = (*Backend)(nil)
	_ storage.Unwrapper = (*Backend)(nil)
)

// Wrap returns b read through the cache. Its objects are cached under the
// key prefix/NAME, so prefix must name b uniquely among the backends that
// share the cache directory. Fills run under fillCtx (the daemon's
// lifetime), so one reader giving up does not cancel a fill for the others.
func (c *Cache) Wrap(b storage.Backend, prefix string, fillCtx context.Context) *Backend {
	return &Backend{inner: b, cache: c, prefix: prefix, fillCtx: fillCtx}
}

// Location is the wrapped backend's.
func (b *Backend) Location() string { return b.inner.Location() }

// Stat is the wrapped backend's: the cache holds bytes, not versions.
func (b *Backend) Stat(ctx context.Context, name string) (storage.ObjectInfo, error) {
	return b.inner.Stat(ctx, name)
}

// Key returns the cache key of the named object.
func (b *Backend) Key(name string) string { return b.prefix + "/" + name }

// OpenFile returns the cached copy of the named object, fetching it first
// when it is absent.
func (b *Backend) OpenFile(ctx context.Context, name string) (storage.File, error) {
	return b.open(ctx, name, false)
}

// OpenFileBackground is OpenFile for prefetching: while readers wait on
// other fills, this fill pauses between writes (unless a reader waits on it
// too).
func (b *Backend) OpenFileBackground(ctx context.Context, name string) (storage.File, error) {
	return b.open(ctx, name, true)
}

func (b *Backend) open(ctx context.Context, name string, background bool) (storage.File, error) {
	return b.openKey(ctx, b.Key(name), Object{Name: name}, background)
}

// VersionKey is the cache key of the whole object o at its version: a
// copy of each version is an entry of its own (KEY.versions/VERSION,
// VERSION hashed), so a new version is never served from an old one's
// copy, two daemons reading different versions each keep theirs, and the
// old versions' copies go as the budget's LRU takes them.
func (b *Backend) VersionKey(o Object) string {
	sum := sha256.Sum256([]byte(o.Version))
	return b.Key(o.Name) + ".versions/" + hex.EncodeToString(sum[:8])
}

// OpenObject returns the whole object o, of o.Version, as a local file,
// fetching that version when it is not cached: its bytes are the
// version's (an older version than the source's current one is read
// pinned to it, storage.ErrVersionGone when the source keeps it no
// more). o without a version is OpenFile of its name. A background
// (prefetch) fill yields to the fills readers wait for.
func (b *Backend) OpenObject(ctx context.Context, o Object, background bool) (storage.File, error) {
	if o.Version == "" {
		return b.open(ctx, o.Name, background)
	}
	return b.openKey(ctx, b.VersionKey(o), o, background)
}

// OpenCachedObject returns the cached copy of the whole object o, of its
// version, when there is one, and an error matching fs.ErrNotExist when
// there is none: it never fetches. o without a version is OpenCached.
func (b *Backend) OpenCachedObject(o Object) (storage.File, error) {
	if o.Version == "" {
		return b.OpenCached(o.Name)
	}
	e, err := b.cache.openExisting(b.VersionKey(o))
	if err != nil {
		return nil, err
	}
	b.cache.Stats.Hits.Add(1)
	return e, nil
}

// ContainsObject reports whether the whole object o, of its version, is
// cached, without touching its LRU position.
func (b *Backend) ContainsObject(o Object) bool {
	if o.Version == "" {
		return b.Contains(o.Name)
	}
	return b.cache.Contains(b.VersionKey(o))
}

// openKey opens the cache entry key, filled with the whole object want
// (of want.Version when it names one). Failures are remembered under the
// object's name, whatever its version: the source is what failed.
func (b *Backend) openKey(ctx context.Context, key string, want Object, background bool) (storage.File, error) {
	memo := b.Key(want.Name)
	e, err := b.cache.open(ctx, b.fillCtx, key, func(ctx context.Context, w io.Writer, reserve func(int64) error) error {
		if err := b.cache.failures.check(memo); err != nil {
			return err
		}
		s, ok := w.(*sink)
		if !ok {
			return fmt.Errorf("disk cache %s: a fill writes into its sink", key) // never: Cache.fill's
		}
		err := b.fillVerified(ctx, want, s, reserve)
		if errors.Is(err, storage.ErrUnavailable) {
			b.cache.failures.note(memo, err)
		}
		return err
	}, background)
	if err != nil {
		return nil, err
	}
	return e, nil
}

// Open reads the cached copy of the named object (see OpenFile) from off,
// length bytes or to its end when length < 0.
func (b *Backend) Open(ctx context.Context, name string, off, length int64) (io.ReadCloser, error) {
	f, err := b.OpenFile(ctx, name)
	if err != nil {
		return nil, err
	}
	off = min(max(off, 0), f.Size())
	n := f.Size() - off
	if length >= 0 {
		n = min(n, length)
	}
	return &sectionReader{ctx: ctx, r: io.NewSectionReader(f, off, n), Closer: f}, nil
}

// sectionReader reads part of a cached file until its context is done.
type sectionReader struct {
	ctx context.Context
	r   *io.SectionReader
	io.Closer
}

func (r *sectionReader) Read(p []byte) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, err
	}
	return r.r.Read(p)
}

// Contains reports whether the named object is cached, without touching
// its LRU position.
func (b *Backend) Contains(name string) bool { return b.cache.Contains(b.Key(name)) }

// Forget drops the cached copy of the named object, when there is one: its
// bytes are stale. A reader that has it open keeps reading the old bytes;
// the next open fetches it again.
func (b *Backend) Forget(name string) error { return b.cache.Remove(b.Key(name)) }

// OpenCached returns the cached copy of the named object when there is one,
// and an error matching fs.ErrNotExist when there is none: it never fetches.
func (b *Backend) OpenCached(name string) (storage.File, error) {
	key := b.Key(name)
	if err := checkKey(key); err != nil {
		return nil, err
	}
	e, err := b.cache.openExisting(key)
	if err != nil {
		return nil, err
	}
	b.cache.Stats.Hits.Add(1)
	return e, nil
}

// Remembered returns the remembered failure of the named object's last
// fetch (see Open's failMemo), or nil: callers that fetch parts of an
// object outside OpenFile share the memo with its whole-object fills.
func (b *Backend) Remembered(name string) error { return b.cache.failures.check(b.Key(name)) }

// Remember notes a fetch of the named object that gave up, when err
// matches storage.ErrUnavailable; other errors are not remembered.
func (b *Backend) Remember(name string, err error) {
	if errors.Is(err, storage.ErrUnavailable) {
		b.cache.failures.note(b.Key(name), err)
	}
}

// Retrial starts the trial of bytes of b's objects that failed a check,
// under the cache's policy (see Retrial).
func (b *Backend) Retrial() *Retrial { return b.cache.Retrial() }

// Unwrap returns the wrapped backend (see storage.Unwrapper).
func (b *Backend) Unwrap() storage.Backend { return b.inner }
