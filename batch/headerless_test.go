package batch

import (
	"bytes"
	"context"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// TestHeaderless: with Config.Headerless the builder's buffer is the whole
// file: NPYSize is the buffer's length, and NPY is that buffer alone, the
// bytes the builder wrote and nothing before them, on the heap and in a
// memfd (whose lent description holds the same bytes from offset 0), also
// for buffers reused from batch to batch.
func TestHeaderless(t *testing.T) {
	for _, memfd := range []bool{false, true} {
		name := "heap"
		if memfd {
			name = "memfd"
			if runtime.GOOS != "linux" {
				t.Skip("SKIPPING: memfd buffers need Linux")
			}
		}
		t.Run(name, func(t *testing.T) {
			tb := &testBuild{counts: map[int64]int{}}
			const size = 1000
			s, err := NewScheduler(Config{Len: 8, Shape: []int{size}, Meta: true, Build: tb.build, Budget: 2 * size, Memfd: memfd, Headerless: true})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			tb.s = s
			if s.NPYSize() != size || s.BatchBytes() != size {
				t.Fatalf("NPYSize %d, BatchBytes %d; want %d: no header", s.NPYSize(), s.BatchBytes(), size)
			}
			for n := range int64(8) {
				b, err := s.Get(context.Background(), n)
				if err != nil {
					t.Fatal(err)
				}
				parts := b.NPY()
				if len(parts) != 1 || !bytes.Equal(parts[0], pattern(n, size)) || !bytes.Equal(b.Frames(), pattern(n, size)) {
					t.Fatalf("batch %d: NPY is %d slices, want the builder's %d bytes in one", n, len(parts), size)
				}
				fd, ok := b.BackingFd()
				if ok != memfd {
					t.Fatalf("batch %d: BackingFd ok=%v on %s", n, ok, name)
				}
				if ok {
					got := make([]byte, size+1)
					k, err := unix.Pread(fd, got, 0)
					unix.Close(fd)
					if err != nil || !bytes.Equal(got[:k], pattern(n, size)) {
						t.Fatalf("batch %d: the lent memfd holds %d bytes (%v), not the builder's %d", n, k, err, size)
					}
				}
				b.Release()
			}
			if memfd && s.Stats.HeapFallbacks.Load() != 0 {
				t.Errorf("%d heap fallbacks", s.Stats.HeapFallbacks.Load())
			}
			if tb.over.Load() || s.Held() > 2*size {
				t.Errorf("held %d bytes, budget %d", s.Held(), 2*size)
			}
		})
	}
}
