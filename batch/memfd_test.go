package batch

import (
	"bytes"
	"context"
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
	want := append(NPYHeader([]int{2, 64}), pattern(10, size)...)
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
