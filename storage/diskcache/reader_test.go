package diskcache

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/oxefs/oxefs/storage"
)

// versioned is an in-memory backend whose objects have versions: a
// rewrite makes the old version gone. It counts the reads that reach it.
type versioned struct {
	mu    sync.Mutex
	data  map[string][]byte
	gen   map[string]int
	sums  map[string]storage.Checksum // published when publish is set
	reads atomic.Int64

	publish bool // publish each object's CRC32C, as GCS does
}

func newVersioned() *versioned {
	return &versioned{data: map[string][]byte{}, gen: map[string]int{}, sums: map[string]storage.Checksum{}}
}

func (v *versioned) put(name string, b []byte) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.data[name] = b
	v.gen[name]++
	if v.publish {
		v.sums[name] = storage.CRC32CChecksum(crc32.Checksum(b, storage.CastagnoliTable))
	}
}

func (v *versioned) Location() string { return "mem://versioned" }

func (v *versioned) Stat(_ context.Context, name string) (storage.ObjectInfo, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	b, ok := v.data[name]
	if !ok {
		return storage.ObjectInfo{}, fmt.Errorf("%s: %w", name, fs.ErrNotExist)
	}
	return storage.ObjectInfo{Size: int64(len(b)), Version: strconv.Itoa(v.gen[name]), Checksum: v.sums[name]}, nil
}

func (v *versioned) Open(ctx context.Context, name string, off, length int64) (io.ReadCloser, error) {
	info, err := v.Stat(ctx, name)
	if err != nil {
		return nil, err
	}
	return v.OpenVersion(ctx, name, info.Version, off, length)
}

func (v *versioned) OpenVersion(_ context.Context, name, version string, off, length int64) (io.ReadCloser, error) {
	v.reads.Add(1)
	v.mu.Lock()
	defer v.mu.Unlock()
	if strconv.Itoa(v.gen[name]) != version {
		return nil, &storage.VersionError{Object: name, Version: version}
	}
	b := v.data[name]
	off = min(off, int64(len(b)))
	end := int64(len(b))
	if length >= 0 {
		end = min(end, off+length)
	}
	return io.NopCloser(bytes.NewReader(b[off:end])), nil
}

func readerCache(t testing.TB, budget int64) (*Backend, *versioned) {
	t.Helper()
	c, err := Open(t.TempDir(), budget, testLog(t), 0)
	if err != nil {
		t.Fatal(err)
	}
	src := newVersioned()
	return c.Wrap(src, "src", context.Background()), src
}

func object(t testing.TB, b *Backend, name string) Object {
	t.Helper()
	info, err := b.Stat(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return Object{Name: name, Size: info.Size, Version: info.Version}
}

// TestReadAtKeepsRanges: a range is fetched once, with one request, and
// read from disk after; a block read fetches the blocks around it once;
// KeepNone keeps nothing. (With VerifyOff: VerifyTwice's second copies
// are counted in agree_test.go.)
func TestReadAtKeepsRanges(t *testing.T) {
	b, src := readerCache(t, 64<<20)
	b.cache.SetVerifyRanges(VerifyOff)
	data := bytes.Repeat([]byte("0123456789abcdef"), (2*BlockSize+100)/16)
	src.put("f", data)
	o := object(t, b, "f")
	ctx := context.Background()
	read := func(off, n int64, opts ReadOptions) {
		t.Helper()
		p := make([]byte, n)
		if _, err := b.ReadAt(ctx, o, p, off, opts); err != nil || !bytes.Equal(p, data[off:off+n]) {
			t.Fatalf("%d bytes at %d (%+v): %v, or other bytes", n, off, opts, err)
		}
	}
	for range 2 {
		read(10, 100, ReadOptions{Keep: KeepRange})
	}
	if got := src.reads.Load(); got != 1 {
		t.Fatalf("a range read twice: %d requests, want 1", got)
	}
	for range 2 {
		read(BlockSize-5, 10, ReadOptions{Keep: KeepBlocks}) // across two blocks
	}
	if got := src.reads.Load(); got != 3 {
		t.Fatalf("a read across two blocks, twice: %d requests in all, want 3", got)
	}
	for range 2 {
		read(50, 10, ReadOptions{Keep: KeepNone})
	}
	if got := src.reads.Load(); got != 5 {
		t.Fatalf("a read kept nowhere, twice: %d requests in all, want 5", got)
	}
	if got := b.cache.Stats.RangesFetched.Load(); got != 3 {
		t.Errorf("RangesFetched %d, want 3 (the range and two blocks)", got)
	}
	// The whole object in the cache serves every read that names no
	// version.
	f, err := b.OpenFile(ctx, "f")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	before := src.reads.Load()
	o.Version = ""
	read(1000, 5000, ReadOptions{Keep: KeepRange})
	read(7, 3, ReadOptions{Keep: KeepNone})
	if got := src.reads.Load(); got != before {
		t.Errorf("%d requests with the whole object cached, want none", got-before)
	}
}

// TestReadAtPinnedToVersion: a read of a version that is gone fails with
// storage.ErrVersionGone, and the ranges of that version are dropped.
func TestReadAtPinnedToVersion(t *testing.T) {
	b, src := readerCache(t, 64<<20)
	src.put("f", []byte("old bytes, version one"))
	o := object(t, b, "f")
	ctx := context.Background()
	p := make([]byte, 5)
	if _, err := b.ReadAt(ctx, o, p, 0, ReadOptions{Keep: KeepRange}); err != nil {
		t.Fatal(err)
	}
	if !b.ContainsRange("f", o.Version, 0, 5) {
		t.Fatal("the range is not cached")
	}
	src.put("f", []byte("new bytes, version two"))
	_, err := b.ReadAt(ctx, o, make([]byte, 5), 4, ReadOptions{Keep: KeepRange})
	if !errors.Is(err, storage.ErrVersionGone) {
		t.Fatalf("a read of a rewritten object: %v, want storage.ErrVersionGone", err)
	}
	if b.ContainsRange("f", o.Version, 0, 5) {
		t.Error("the range of the gone version is still cached")
	}
}

// TestReadAtCheckAndFallback: bytes the check refuses are not kept; they
// are fetched once more, and the same bytes again are the source's, so the
// check's error is returned; a range the cache cannot keep (more than its budget) is
// read from the source.
func TestReadAtCheckAndFallback(t *testing.T) {
	b, src := readerCache(t, 1<<10)
	data := bytes.Repeat([]byte{7}, 4<<10)
	src.put("f", data)
	o := object(t, b, "f")
	ctx := context.Background()
	bad := errors.New("bad bytes")
	_, err := b.ReadAt(ctx, o, make([]byte, 100), 0, ReadOptions{Keep: KeepRange,
		Check: func() io.WriteCloser { return failingCheck{bad} }})
	if !errors.Is(err, bad) {
		t.Fatalf("a read whose check fails: %v, want its error", err)
	}
	if got := src.reads.Load(); got != 2 || b.ContainsRange("f", o.Version, 0, 100) {
		t.Fatalf("a refused range: %d requests, cached %v; want 2 (the same bytes twice), not cached", got, b.ContainsRange("f", o.Version, 0, 100))
	}
	p := make([]byte, 2<<10)
	if _, err := b.ReadAt(ctx, o, p, 100, ReadOptions{Keep: KeepRange}); err != nil || !bytes.Equal(p, data[100:100+len(p)]) {
		t.Fatalf("a range over the budget: %v, or other bytes", err)
	}
	p = make([]byte, 10)
	x := Extent{Off: 0, Len: 3 << 10}
	if _, err := b.ReadAt(ctx, o, p, 20, ReadOptions{Keep: KeepRange, Extent: x}); err != nil || !bytes.Equal(p, data[20:30]) {
		t.Fatalf("a read within an extent over the budget: %v, or other bytes", err)
	}
}

type failingCheck struct{ err error }

func (c failingCheck) Write([]byte) (int, error) { return 0, c.err }
func (c failingCheck) Close() error              { return c.err }

// countingCheck counts the bytes it sees and whether it was closed.
type countingCheck struct {
	n      int64
	closed bool
}

func (c *countingCheck) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }
func (c *countingCheck) Close() error                { c.closed = true; return nil }

// TestReadAtCheckCombinations: a check on a block read, which it could not
// see, is refused; on a read within an extent the cache cannot keep, it
// sees the whole extent; and it is closed when the source fails.
func TestReadAtCheckCombinations(t *testing.T) {
	b, src := readerCache(t, 1<<10)
	data := bytes.Repeat([]byte{7}, 4<<10)
	src.put("f", data)
	o := object(t, b, "f")
	ctx := context.Background()
	c := &countingCheck{}
	check := func() io.WriteCloser { return c }
	if _, err := b.ReadAt(ctx, o, make([]byte, 10), 0, ReadOptions{Keep: KeepBlocks, Check: check}); err == nil {
		t.Error("a checked block read: no error; want one")
	}
	if c.n != 0 {
		t.Errorf("a refused block read checked %d bytes", c.n)
	}
	x := Extent{Off: 0, Len: 3 << 10}
	p := make([]byte, 10)
	if _, err := b.ReadAt(ctx, o, p, 20, ReadOptions{Keep: KeepRange, Extent: x, Check: check}); err != nil || !bytes.Equal(p, data[20:30]) {
		t.Fatalf("a checked read within an extent over the budget: %v, or other bytes", err)
	}
	if c.n != x.Len || !c.closed {
		t.Errorf("the check of an extent over the budget saw %d bytes, closed %v; want %d, closed", c.n, c.closed, x.Len)
	}
	c = &countingCheck{}
	src.put("f", data) // o's version is gone
	if _, err := b.ReadAt(ctx, o, make([]byte, 10), 0, ReadOptions{Keep: KeepNone, Check: check}); !errors.Is(err, storage.ErrVersionGone) {
		t.Fatalf("a read of a gone version: %v; want storage.ErrVersionGone", err)
	}
	if !c.closed {
		t.Error("the check of a failed read was not closed")
	}
}
