package fs

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/oxefs/oxefs/internal/testkit"
)

// memfdBatches is fakeBatches whose batches are each one memfd holding the
// whole .npy file, as batch.Scheduler makes them with Config.Memfd.
type memfdBatches struct {
	*fakeBatches
	t *testing.T
}

func (m memfdBatches) Get(ctx context.Context, n int64) (Batch, error) {
	b, err := m.fakeBatches.Get(ctx, n)
	if err != nil {
		return nil, err
	}
	fd, err := newMemfd(m.want(n))
	if err != nil {
		m.t.Error(err)
		return nil, err
	}
	return &memfdBatch{fakeBatch: b.(*fakeBatch), fd: fd, lendFrom: fd}, nil
}

// newMemfd returns a memfd holding data.
func newMemfd(data []byte) (int, error) {
	fd, err := unix.MemfdCreate("test-batch", unix.MFD_CLOEXEC)
	if err != nil {
		return -1, err
	}
	if _, err := unix.Pwrite(fd, data, 0); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// memfdOf returns a memfd holding data, closed at the end of the test.
func memfdOf(tb testing.TB, data []byte) int {
	fd, err := newMemfd(data)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { unix.Close(fd) })
	return fd
}

type memfdBatch struct {
	*fakeBatch
	fd       int // closed at Release; -1: none of its own
	lendFrom int // the memfd lent
}

// BackingFd lends a new read-only description, as batch.Batch does.
func (b *memfdBatch) BackingFd() (int, bool) {
	fd, err := unix.Open(fmt.Sprintf("/proc/self/fd/%d", b.lendFrom), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	return fd, err == nil
}

func (b *memfdBatch) Release() {
	b.once.Do(func() {
		b.pinned.Add(-1)
		if b.fd >= 0 {
			unix.Close(b.fd) // the kernel keeps its own reference while it serves the file
		}
	})
}

// TestPassthrough mounts with MountOptions.Passthrough: .npy files whose
// batch has a memfd are read and mapped straight from it, no byte passing
// through this process (the Recorder sees each open once, with 0 bytes),
// also in parallel and at any offset; a mapping outlives the file's close
// and the batch's release, with the batch's bytes; a view whose batches
// have no memfd is served by the daemon as before on the same mount.
func TestPassthrough(t *testing.T) {
	testkit.RequireFUSE(t)
	train := memfdBatches{&fakeBatches{n: 6, frames: 3<<20 + 777, meta: true}, t}
	val := &fakeBatches{n: 2, frames: 1 << 20}
	var served, opens atomic.Int64
	dir := t.TempDir()
	srv, err := Mount(dir, Options{
		Train: train, Val: val,
		Info:  func() []byte { return []byte(`{}`) },
		Stats: func() []byte { return []byte(`{}`) },
		Recorder: func(n int64, isVal bool, bytes int, wait time.Duration) {
			if !isVal {
				served.Add(int64(bytes))
				if bytes == 0 {
					opens.Add(1)
				}
			}
		},
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}, MountOptions{Passthrough: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Unmount(); err != nil {
			t.Error(err)
		}
	})
	if srv.Serving() != ServePassthrough {
		t.Skipf("SKIPPING: this kernel refuses FUSE passthrough (%v); the page-cache mode is what every other mount test covers", srv.Refused())
	}
	path := func(n int64) string { return filepath.Join(dir, "batches", batchName(n)+".npy") }

	var wg sync.WaitGroup
	errs := make(chan error, 12)
	for r := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := int64(r % 6)
			got, err := os.ReadFile(path(n))
			if err != nil || !bytes.Equal(got, train.want(n)) {
				errs <- fmt.Errorf("reader %d of batch %d: %v, equal=%v", r, n, err, bytes.Equal(got, train.want(n)))
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	f, err := os.Open(path(4))
	if err != nil {
		t.Fatal(err)
	}
	want := train.want(4)
	buf := make([]byte, 1<<20)
	if k, err := f.ReadAt(buf, 60); err != nil || !bytes.Equal(buf[:k], want[60:60+k]) {
		t.Errorf("ReadAt(60): %d bytes, %v", k, err)
	}
	m, err := unix.Mmap(int(f.Fd()), 0, len(want), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	f.Close()
	testkit.WaitFor(t, 5*time.Second, 10*time.Millisecond, "every batch released", func() bool { return train.pinned.Load() == 0 })
	if !bytes.Equal(m, want) {
		t.Error("a mapping of a closed, released batch file does not hold its batch")
	}
	if served.Load() != 0 {
		t.Errorf("the daemon served %d bytes of passthrough files", served.Load())
	}
	// 12 readers and one more open of the train view, every one served by
	// passthrough; each recorded at least once (go-fuse asks a batch for
	// its memfd once per inode while the kernel has none for it).
	if opens.Load() == 0 || srv.PassthroughOpens() != 13 {
		t.Errorf("%d opens recorded, %d served by passthrough (want 13)", opens.Load(), srv.PassthroughOpens())
	}
	got, err := os.ReadFile(filepath.Join(dir, "val", "batches", "000001.npy"))
	if err != nil || !bytes.Equal(got, val.want(1)) {
		t.Errorf("a batch without a memfd on a passthrough mount: %v, equal=%v", err, bytes.Equal(got, val.want(1)))
	}
}
