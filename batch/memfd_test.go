package batch

import (
	"bytes"
	"context"
	"github.com/oxefs/oxefs/internal/npy"
	"os"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/oxefs/oxefs/internal/testkit"
)

// TestMemfdBuffers: with Config.Memfd each batch's whole .npy file is one
// memfd, served as one slice and reused from batch to batch while nothing
// is lent; a memfd lent out (Batch.BackingFd) and mapped by a reader who
// closed it keeps its batch while later ones are built within the budget,
// and is reused once the mapping goes; Close frees every memfd.
func TestMemfdBuffers(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("SKIPPING: memfd buffers need Linux")
	}
	fds := func() int {
		ents, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Fatal(err)
		}
		return len(ents)
	}
	before := fds()
	tb := &testBuild{counts: map[int64]int{}}
	const size, budget = 128, 2 * 128
	s, err := NewScheduler(Config{Len: 40, Shape: []int{2, 64}, Meta: true, Build: tb.build, Budget: budget, Memfd: true})
	if err != nil {
		t.Fatal(err)
	}
	tb.s = s
	ctx := context.Background()
	get := func(n int64) *Batch {
		t.Helper()
		b, err := s.Get(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b.Frames(), pattern(n, size)) {
			t.Fatalf("batch %d: wrong bytes", n)
		}
		return b
	}
	watched := func() int {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.watched)
	}
	for n := range int64(10) {
		get(n).Release()
	}
	if w := watched(); w > 2 || s.Stats.HeapFallbacks.Load() != 0 {
		t.Fatalf("%d memfds for a budget of 2 batches (%d heap fallbacks)", w, s.Stats.HeapFallbacks.Load())
	}
	b := get(10)
	want := append(npy.Header("|u1", []int{2, 64}), pattern(10, size)...)
	if parts := b.NPY(); len(parts) != 1 || !bytes.Equal(parts[0], want) {
		t.Fatalf("NPY() is %d parts, not the whole file in one", len(parts))
	}
	fd, ok := b.BackingFd()
	if !ok {
		t.Fatal("no memfd lent")
	}
	m, err := unix.Mmap(fd, 0, len(want), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	unix.Close(fd) // the reader keeps only its mapping
	b.Release()
	for n := int64(11); n < 30; n++ {
		get(n).Release()
	}
	if tb.over.Load() || s.Held() > budget {
		t.Fatalf("held %d bytes, budget %d", s.Held(), budget)
	}
	if !bytes.Equal(m, want) {
		t.Fatal("a lent memfd still mapped was reused for another batch")
	}
	if w := watched(); w != 2 {
		t.Fatalf("%d memfds, want 2 (one cooling, one in use)", w)
	}
	unix.Munmap(m)
	testkit.WaitFor(t, 5*time.Second, 10*time.Millisecond, "the unmapped memfd back in use", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, b := range s.watched {
			if b.cooling {
				return false
			}
		}
		return true
	})
	for n := int64(30); n < 40; n++ {
		get(n).Release()
	}
	if w := watched(); w > 2 {
		t.Fatalf("%d memfds after the lent one came back, want 2", w)
	}
	s.Close()
	if s.Held() != 0 {
		t.Errorf("held %d bytes after Close", s.Held())
	}
	if after := fds(); after != before {
		t.Errorf("%d descriptors open before, %d after Close", before, after)
	}
}

// TestMemfdParts: with Config.Parts each file of a batch of several is a
// memfd of its own, exactly the file's size, mapped at its place in the
// one buffer the builder fills: the builder's bytes are every file's
// bytes, each lent memfd reads as its file alone, a file mapped by a
// reader keeps its batch past its release until unmapped (the buffer
// then cools, counted in the budget, and comes back), and Close frees
// every memfd.
func TestMemfdParts(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("SKIPPING: memfd buffers need Linux")
	}
	page := int64(os.Getpagesize())
	parts := []Part{{0, 100}, {page, page + 7}, {3 * page, page}}
	size := 4 * page
	fds := func() int {
		ents, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Fatal(err)
		}
		return len(ents)
	}
	before := fds()
	tb := &testBuild{counts: map[int64]int{}}
	budget := 2 * size
	s, err := NewScheduler(Config{Len: 40, Shape: []int{int(size)}, Build: tb.build, Budget: budget, Memfd: true, Headerless: true, Parts: parts})
	if err != nil {
		t.Fatal(err)
	}
	tb.s = s
	ctx := context.Background()
	get := func(n int64) *Batch {
		t.Helper()
		b, err := s.Get(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b.Frames(), pattern(n, int(size))) {
			t.Fatalf("batch %d: wrong bytes", n)
		}
		return b
	}
	for n := range int64(10) {
		get(n).Release()
	}
	if f := s.Stats.HeapFallbacks.Load(); f != 0 {
		t.Fatalf("%d heap fallbacks", f)
	}
	b := get(10)
	if _, ok := b.BackingFd(); ok {
		t.Fatal("a batch of several files lent a memfd for one whole .npy")
	}
	if _, ok := b.PartBackingFd(len(parts)); ok {
		t.Fatal("lent a part that does not exist")
	}
	var maps [][]byte
	for i, p := range parts {
		fd, ok := b.PartBackingFd(i)
		if !ok {
			t.Fatalf("part %d: no memfd lent", i)
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil || st.Size != p.Size {
			t.Fatalf("part %d: memfd of %d bytes (%v), want %d", i, st.Size, err, p.Size)
		}
		got := make([]byte, p.Size+10)
		if n, err := unix.Pread(fd, got, 0); err != nil || !bytes.Equal(got[:n], pattern(10, int(size))[p.Off:p.Off+p.Size]) {
			t.Fatalf("part %d: read %d bytes (%v), not the part's %d", i, n, err, p.Size)
		}
		m, err := unix.Mmap(fd, 0, int(p.Size), unix.PROT_READ, unix.MAP_SHARED)
		if err != nil {
			t.Fatal(err)
		}
		unix.Close(fd) // the reader keeps only its mapping
		maps = append(maps, m)
	}
	if l := s.Stats.Lent.Load(); l != int64(len(parts)) {
		t.Fatalf("Stats.Lent %d, want %d", l, len(parts))
	}
	b.Release()
	for n := int64(11); n < 30; n++ {
		get(n).Release()
	}
	if tb.over.Load() || s.Held() > budget {
		t.Fatalf("held %d bytes, budget %d", s.Held(), budget)
	}
	for i, p := range parts {
		if !bytes.Equal(maps[i], pattern(10, int(size))[p.Off:p.Off+p.Size]) {
			t.Fatalf("part %d: a lent memfd still mapped was reused for another batch", i)
		}
	}
	cooling := func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, b := range s.watched {
			if b.cooling {
				return true
			}
		}
		return false
	}
	// Unmapped one by one: the buffer comes back with the last.
	for i := range maps[:len(maps)-1] {
		unix.Munmap(maps[i])
	}
	time.Sleep(50 * time.Millisecond)
	if !cooling() {
		t.Fatal("the buffer came back while a part was still mapped")
	}
	unix.Munmap(maps[len(maps)-1])
	testkit.WaitFor(t, 5*time.Second, 10*time.Millisecond, "the unmapped parts back in use", func() bool { return !cooling() })
	for n := int64(30); n < 40; n++ {
		get(n).Release()
	}
	s.mu.Lock()
	w := len(s.watched)
	s.mu.Unlock()
	if w > 2*len(parts) {
		t.Fatalf("%d memfds after the lent buffer came back, want at most %d", w, 2*len(parts))
	}
	s.Close()
	if s.Held() != 0 {
		t.Errorf("held %d bytes after Close", s.Held())
	}
	if after := fds(); after != before {
		t.Errorf("%d descriptors open before, %d after Close", before, after)
	}
}

// TestMemfdPartsFallback: parts that do not tile the buffer page by page
// cannot be memfds of their own: each batch gets a heap buffer, counted,
// with the same bytes, and lends nothing.
func TestMemfdPartsFallback(t *testing.T) {
	const size = 256
	tb := &testBuild{counts: map[int64]int{}}
	s, err := NewScheduler(Config{Len: 4, Shape: []int{size}, Build: tb.build, Budget: 2 * size, Memfd: true, Headerless: true,
		Parts: []Part{{0, 64}, {64, 192}}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for n := range int64(4) {
		b, err := s.Get(context.Background(), n)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b.Frames(), pattern(n, size)) {
			t.Fatalf("batch %d: wrong bytes", n)
		}
		if _, ok := b.PartBackingFd(0); ok {
			t.Fatal("a heap buffer lent a memfd")
		}
		b.Release()
	}
	if f := s.Stats.HeapFallbacks.Load(); f == 0 {
		t.Fatal("no heap fallback counted")
	}
}

func TestTiles(t *testing.T) {
	for _, c := range []struct {
		size  int64
		parts []Part
		ok    bool
	}{
		{8192, []Part{{0, 4096}, {4096, 1}}, true},
		{8192, []Part{{0, 1}, {4096, 4096}}, true},
		{4096, []Part{{0, 1}, {64, 1}}, false},    // not on a page
		{12288, []Part{{0, 1}, {8192, 1}}, false}, // a page left unmapped between
		{8192, []Part{{0, 4096}}, false},          // the last page unmapped
		{4096, []Part{{0, 0}, {0, 1}}, false},     // an empty part
		{4096, nil, false},
	} {
		if err := tiles(c.size, c.parts, 4096); (err == nil) != c.ok {
			t.Errorf("tiles(%d, %v): %v", c.size, c.parts, err)
		}
	}
}
