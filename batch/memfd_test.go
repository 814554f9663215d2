package batch

import (
	"bytes"
	"context"
	"os"
	"runtime"
	"testing"
)

// TestMemfdBuffers: with Config.Memfd each batch's whole .npy file is one
// memfd, served as one slice; a memfd is never reused, so a reader that
// still maps (here: holds a duplicate of) an evicted batch's file keeps
// seeing that batch while later ones are built within the budget; Close
// closes every memfd.
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
	s, err := NewScheduler(Config{Len: 10, Shape: []int{2, 64}, Meta: true, Build: tb.build, Budget: 2 * 128, Memfd: true})
	if err != nil {
		t.Fatal(err)
	}
	tb.s = s
	ctx := context.Background()
	b, err := s.Get(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	fd, ok := b.BackingFd()
	if !ok {
		t.Fatalf("no memfd (heap fallbacks: %d)", s.Stats.HeapFallbacks.Load())
	}
	want := append(NPYHeader([]int{2, 64}), pattern(0, 128)...)
	if parts := b.NPY(); len(parts) != 1 || !bytes.Equal(parts[0], want) {
		t.Fatalf("NPY() is %d parts, not the whole file in one", len(parts))
	}
	// A reader's own reference to the file, as a mapping would hold.
	kept, err := os.Open("/proc/self/fd/" + itoa(fd))
	if err != nil {
		t.Fatal(err)
	}
	defer kept.Close()
	b.Release()
	for n := int64(1); n < 10; n++ {
		b, err := s.Get(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b.Frames(), pattern(n, 128)) {
			t.Fatalf("batch %d: wrong bytes", n)
		}
		b.Release()
	}
	if tb.over.Load() || s.Held() > 2*128 {
		t.Fatalf("held %d bytes, budget %d", s.Held(), 2*128)
	}
	got := make([]byte, len(want)+1)
	k, err := kept.ReadAt(got, 0)
	if err != nil && k != len(want) {
		t.Fatal(err)
	}
	got = got[:k]
	if !bytes.Equal(got, want) {
		t.Fatal("an evicted batch's memfd was reused for another batch")
	}
	s.Close()
	if s.Held() != 0 {
		t.Errorf("held %d bytes after Close", s.Held())
	}
	if after := fds(); after != before+1 { // +1: kept
		t.Errorf("%d descriptors open before, %d after Close (one kept by the test)", before, after)
	}
}

func itoa(n int) string { return string(appendInt(nil, n)) }

func appendInt(b []byte, n int) []byte {
	if n >= 10 {
		b = appendInt(b, n/10)
	}
	return append(b, byte('0'+n%10))
}
