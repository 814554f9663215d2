package diskcache

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/oxefs/oxefs/storage"
)

// A byte range of one version of an object can be cached as an entry of
// its own (openRange), beside the whole objects, in the same LRU and
// budget: a reader that needs one record of a shard fetches and keeps
// just that. Such entries live under KEY.ranges/VERSION/OFFSET-LENGTH
// (VERSION hashed, so any version string makes a valid key). A later
// download of the whole object, of the same version, copies them from the
// disk instead of fetching their bytes again.

// rangeDir is the key under which the ranges of one version of the named
// object are cached.
func (b *Backend) rangeDir(name, version string) string {
	sum := sha256.Sum256([]byte(version))
	return b.Key(name) + ".ranges/" + hex.EncodeToString(sum[:8])
}

func (b *Backend) rangeKey(name, version string, off, n int64) string {
	return b.rangeDir(name, version) + "/" + strconv.FormatInt(off, 10) + "-" + strconv.FormatInt(n, 10)
}

// openRange returns the cache entry holding the n bytes at off of version
// of the named object, calling fn to write them when it is absent. The
// entry is published as whole objects are (complete or not at all) and
// filled once across the processes sharing the cache. The caller waits as
// a reader of ctx's priority. fn must write exactly those bytes, of that
// version: a whole-object download of the version reuses them as they are.
func (b *Backend) openRange(ctx context.Context, name, version string, off, n int64, fn FillFunc) (storage.File, error) {
	e, err := b.cache.open(ctx, b.fillCtx, b.rangeKey(name, version, off, n), fn, false)
	if err != nil {
		return nil, err
	}
	return e, nil
}

// ContainsRange reports whether the range (see openRange) is cached,
// without touching its LRU position.
func (b *Backend) ContainsRange(name, version string, off, n int64) bool {
	return b.cache.Contains(b.rangeKey(name, version, off, n))
}

// ForgetRange drops one cached range (see openRange): its bytes failed a
// check when read back. A reader that has it open keeps its descriptor.
func (b *Backend) ForgetRange(name, version string, off, n int64) error {
	return b.cache.Remove(b.rangeKey(name, version, off, n))
}

// ForgetRanges drops the cached ranges of version of the named object:
// their bytes are stale. Readers that have one open keep reading it
// through their descriptor.
func (b *Backend) ForgetRanges(name, version string) error {
	return b.cache.removeTree(b.rangeDir(name, version))
}

// cachedRange is a cached range of an object, open.
type cachedRange struct {
	off, n int64
	e      *Entry
}

// openRanges opens the cached ranges of version of the named object that
// lie within [from, to), sorted by offset, skipping those that overlap one
// before them. The caller closes them.
func (b *Backend) openRanges(name, version string, from, to int64) []cachedRange {
	dir := b.rangeDir(name, version)
	entries, err := os.ReadDir(b.cache.path(dir))
	if err != nil {
		return nil
	}
	var out []cachedRange
	for _, d := range entries {
		offText, nText, ok := strings.Cut(d.Name(), "-")
		if !ok || d.IsDir() {
			continue // a lock file, or not ours
		}
		off, err1 := strconv.ParseInt(offText, 10, 64)
		n, err2 := strconv.ParseInt(nText, 10, 64)
		if err1 != nil || err2 != nil || off < from || n <= 0 || off+n > to {
			continue
		}
		e, err := b.cache.openExisting(dir + "/" + d.Name())
		if err != nil {
			continue // evicted since the listing
		}
		if e.Size() != n {
			e.Close()
			continue
		}
		out = append(out, cachedRange{off: off, n: n, e: e})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].off < out[j].off })
	kept := out[:0]
	var end int64
	for _, r := range out {
		if r.off < end {
			r.e.Close()
			continue
		}
		kept = append(kept, r)
		end = r.off + r.n
	}
	return kept
}

// copyRanges writes the cached ranges of version of the named object that
// lie within [from, to) into s, and returns the byte ranges of [from, to)
// still to fetch, in order.
func (b *Backend) copyRanges(name, version string, from, to int64, s *sink) ([]span, error) {
	var gaps []span
	pos := from
	for _, r := range b.openRanges(name, version, from, to) {
		err := copyEntry(r, s)
		r.e.Close()
		if err != nil {
			if errors.Is(err, fs.ErrClosed) || errors.Is(err, io.ErrUnexpectedEOF) {
				continue // unreadable now: fetch it instead
			}
			return nil, err
		}
		if r.off > pos {
			gaps = append(gaps, span{pos, r.off})
		}
		pos = r.off + r.n
		b.cache.Stats.RangesReused.Add(1)
	}
	if pos < to {
		gaps = append(gaps, span{pos, to})
	}
	return gaps, nil
}

// copyEntry writes r's bytes into s at r's offset.
func copyEntry(r cachedRange, s *sink) error {
	buf := make([]byte, min(r.n, 1<<20))
	for done := int64(0); done < r.n; {
		m, err := r.e.ReadAt(buf[:min(int64(len(buf)), r.n-done)], done)
		if m > 0 {
			if _, werr := s.WriteAt(buf[:m], r.off+done); werr != nil {
				return werr
			}
			done += int64(m)
		}
		if err == io.EOF && done < r.n {
			return io.ErrUnexpectedEOF
		}
		if err != nil && err != io.EOF {
			return err
		}
	}
	return nil
}
