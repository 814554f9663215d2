package diskcache

import (
	"context"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"slices"
	"sort"
	"sync"

	"github.com/oxefs/oxefs/storage"
)

// sink is a fill's destination, the temp file: written in order (Write)
// or, by a fill in parallel slices, at offsets (WriteAt). Before each write
// it calls before (the pause for readers); it counts the bytes and records
// the written ranges, so that ReadFilling serves them before the fill is
// complete.
type sink struct {
	// dependencies
	f *os.File

	// constants
	before    func() error                   // called before each write; may block
	mustPause func() (bool, <-chan struct{}) // whether the fill must pause now (see gate.mustPause); may be nil
	wake      func()                         // called after each write
	prefetch  bool                           // the fill started as a prefetch (priority Background)
	stats     *Stats                         // the cache's; may be nil

	// yieldMu serializes before, which swaps the key's lock.
	yieldMu sync.Mutex

	mu    sync.RWMutex // held for reading during a ReadFilling read
	next  int64        // guarded by mu: offset of the next Write
	n     int64        // guarded by mu: bytes written
	spans []span       // guarded by mu: written ranges, sorted, disjoint, apart
	// sums holds the CRC32C of each of spans, computed as the bytes are
	// written, unless sumsLost: writes overlapped, so the bytes of a span
	// are not what its writes summed; guarded by mu.
	sums     []uint32
	sumsLost bool
	closed   bool // guarded by mu: the temp file is no longer ours to read
	// version is the storage.ObjectInfo.Version of the bytes being
	// written, when the fill knows it and reads only that version (a
	// download in slices); guarded by mu.
	version string
}

// span is the byte range [off, end).
type span struct{ off, end int64 }

var (
	_ io.Writer   = (*sink)(nil)
	_ io.WriterAt = (*sink)(nil)
)

func (s *sink) Write(p []byte) (int, error) {
	s.mu.RLock()
	off := s.next
	s.mu.RUnlock()
	n, err := s.WriteAt(p, off)
	s.mu.Lock()
	s.next = off + int64(n)
	s.mu.Unlock()
	return n, err
}

// pause returns once the fill may go on (see Cache.fill's yield).
func (s *sink) pause() error {
	if s.before == nil {
		return nil
	}
	s.yieldMu.Lock()
	defer s.yieldMu.Unlock()
	return s.before()
}

// setVersion records the version of the bytes the fill writes.
func (s *sink) setVersion(v string) {
	s.mu.Lock()
	s.version = v
	s.mu.Unlock()
}

// WriteAt writes p at off; concurrent calls write disjoint ranges.
func (s *sink) WriteAt(p []byte, off int64) (int, error) {
	if err := s.pause(); err != nil {
		return 0, err
	}
	n, err := s.f.WriteAt(p, off)
	if n > 0 {
		s.mu.Lock()
		s.n += int64(n)
		s.record(off, p[:n])
		s.mu.Unlock()
		if s.wake != nil {
			s.wake()
		}
	}
	return n, err
}

// written returns the bytes written.
func (s *sink) written() int64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.n
}

// record adds p, written at off, to the written spans and their sums.
// The CRC32C of a write that extends a span (the common case: a stream, a
// slice) continues the span's; spans that meet are combined
// (crc32cCombine). s.mu is held.
func (s *sink) record(off int64, p []byte) {
	end := off + int64(len(p))
	i := sort.Search(len(s.spans), func(i int) bool { return s.spans[i].end >= off })
	j := i
	for j < len(s.spans) && s.spans[j].off <= end {
		j++
	}
	var sum uint32
	lo, hi := off, end
	overlap := false
	for _, sp := range s.spans[i:j] {
		overlap = overlap || sp.end != off && sp.off != end
	}
	switch {
	case overlap:
		s.sumsLost = true
		lo, hi = min(off, s.spans[i].off), max(end, s.spans[j-1].end)
	case j > i && s.spans[i].end == off:
		lo = s.spans[i].off
		sum = crc32.Update(s.sums[i], storage.CastagnoliTable, p)
		if j-i == 2 {
			hi = s.spans[i+1].end
			sum = crc32cCombine(sum, s.sums[i+1], hi-end)
		}
	case j > i: // s.spans[i].off == end
		hi = s.spans[i].end
		sum = crc32cCombine(crc32.Checksum(p, storage.CastagnoliTable), s.sums[i], hi-end)
	default:
		sum = crc32.Checksum(p, storage.CastagnoliTable)
	}
	s.spans = slices.Replace(s.spans, i, j, span{lo, hi})
	s.sums = slices.Replace(s.sums, i, j, sum)
}

// covers reports whether the bytes written are exactly [0, size).
func (s *sink) covers(size int64) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if size == 0 {
		return len(s.spans) == 0
	}
	return len(s.spans) == 1 && s.spans[0] == span{0, size}
}

// crc32c returns the CRC32C of the bytes written, when they are exactly
// [0, size) and their sums were kept.
func (s *sink) crc32c(size int64) (uint32, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.sumsLost || len(s.spans) != 1 || s.spans[0] != (span{0, size}) {
		if size == 0 && len(s.spans) == 0 {
			return 0, true
		}
		return 0, false
	}
	return s.sums[0], true
}

// restart empties the temp file and forgets what was written, for a fill
// that starts over (its bytes failed a check). Reads through s see none of
// the old bytes after it returns.
func (s *sink) restart() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.next, s.n, s.spans, s.sums, s.sumsLost = 0, 0, nil, nil, false
	return resetTemp(s.f)
}

// readAt reads len(p) bytes at off when they are all written, reporting
// whether it did, and the version of the bytes when known.
func (s *sink) readAt(p []byte, off int64) (bool, string, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return false, "", nil
	}
	if !s.hasLocked(off, off+int64(len(p))) {
		return false, "", nil
	}
	if _, err := s.f.ReadAt(p, off); err != nil {
		return false, "", err
	}
	return true, s.version, nil
}

// hasLocked reports whether [off, end) is all written. s.mu is held.
func (s *sink) hasLocked(off, end int64) bool {
	if s.closed {
		return false
	}
	if end <= off {
		return true
	}
	i := sort.Search(len(s.spans), func(i int) bool { return s.spans[i].end > off })
	return i < len(s.spans) && s.spans[i].off <= off && s.spans[i].end >= end
}

// close stops the reads through s, waiting for those under way: the temp
// file is about to be emptied, renamed or closed.
func (s *sink) close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
}

// FillProgress returns a channel closed the next time a fill in this
// process writes bytes, or starts or stops writing: a reader that
// ReadFilling turned away may wait on it, as long as it cares to, and ask
// again.
func (c *Cache) FillProgress() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.progress
}

// sinkOf returns the sink of the fill of key under way here, or nil.
func (c *Cache) sinkOf(key string) *sink {
	c.mu.Lock()
	defer c.mu.Unlock()
	if f := c.fills[key]; f != nil {
		return f.sink
	}
	return nil
}

func (c *Cache) wake() {
	c.mu.Lock()
	c.wakeLocked()
	c.mu.Unlock()
}

// wakeLocked closes and replaces c.progress. c.mu is held.
func (c *Cache) wakeLocked() {
	close(c.progress)
	c.progress = make(chan struct{})
}

// ReadFilling reads len(p) bytes of key at off from the fill of key under
// way in this process, when those bytes are already written; it never
// waits for them. It reports false, without error, when no fill of key
// runs here (none, one in another process, one not yet started or already
// ended) or the range is not all written yet: the caller then reads the
// bytes some other way, the cached file or the source. version is the
// storage.ObjectInfo.Version the fill reads, when it reads only that one
// (a download in slices pins every slice to the version it found first),
// and "" when the fill does not know: bytes read with version "" may be of
// any version, and a caller that needs one must check them itself.
func (c *Cache) ReadFilling(key string, p []byte, off int64) (ok bool, version string, err error) {
	if off < 0 {
		return false, "", fmt.Errorf("disk cache %s: negative offset %d", key, off)
	}
	s := c.sinkOf(key)
	if s == nil {
		return false, "", nil
	}
	ok, version, err = s.readAt(p, off)
	if err != nil {
		return false, "", fmt.Errorf("disk cache %s: reading the fill in progress: %w", key, err)
	}
	return ok, version, nil
}

// Filled reports whether the n bytes at off of the named object are
// already written by its fill under way in this process, so that a caller
// can tell before it sets a buffer aside for ReadFilling.
func (b *Backend) Filled(name string, off, n int64) bool { return b.filledKey(b.Key(name), off, n) }

// FilledObject is Filled of the fill of the whole object o, of its
// version (OpenObject).
func (b *Backend) FilledObject(o Object, off, n int64) bool {
	if o.Version == "" {
		return b.Filled(o.Name, off, n)
	}
	return b.filledKey(b.VersionKey(o), off, n)
}

// filledKey is Filled of the fill of cache entry key.
func (b *Backend) filledKey(key string, off, n int64) bool {
	s := b.cache.sinkOf(key)
	if s == nil {
		return false
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.hasLocked(off, off+n)
}

// readFilling reads len(p) bytes of the named object at off from its fill
// under way in this process, when they are already written (see
// Cache.ReadFilling); ok is false when they are not. ctx is checked once:
// the read never waits on the source.
func (b *Backend) readFilling(ctx context.Context, name string, p []byte, off int64) (ok bool, version string, err error) {
	if err := ctx.Err(); err != nil {
		return false, "", err
	}
	return b.cache.ReadFilling(b.Key(name), p, off)
}

// FillProgress is the cache's (see Cache.FillProgress).
func (b *Backend) FillProgress() <-chan struct{} { return b.cache.FillProgress() }
