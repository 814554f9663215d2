package ratelimit_test

import (
	"context"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oxefs/oxefs/internal/testkit"
	"github.com/oxefs/oxefs/storage"
	"github.com/oxefs/oxefs/storage/ratelimit"
)

// TestUrgentReadsFirst: while an urgent stream (a batch being read) is
// open, a background stream (a prefetch) reading the same limited link
// gets no more than the read it had under way plus one Chunk a second;
// without priorities it would take about half of the link. The bound is
// in bytes, scaled by how long the urgent read took, so a slow machine
// does not fail it.
func TestUrgentReadsFirst(t *testing.T) {
	const rate = 256 << 10
	b, put := testkit.LocalBackend(t)
	put(t, "prefetch", make([]byte, 16<<20))
	put(t, "batch", make([]byte, 1<<20))
	lim := ratelimit.NewLimiter(rate)
	src := ratelimit.New(b, lim)
	chunk := int64(lim.Chunk())

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var background atomic.Int64
	started := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		rc, err := src.Open(storage.WithPriority(ctx, storage.Background), "prefetch", 0, -1)
		if err != nil {
			done <- err
			return
		}
		defer rc.Close()
		buf := make([]byte, 1<<20)
		var once sync.Once
		for {
			n, err := rc.Read(buf)
			if background.Add(int64(n)) >= 2*chunk {
				once.Do(func() { close(started) })
			}
			if err != nil {
				done <- err
				return
			}
		}
	}()
	select {
	case <-started:
	case err := <-done:
		t.Fatalf("the background stream ended: %v", err)
	}
	rc, err := src.Open(storage.WithPriority(context.Background(), 3), "batch", 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	// Counted from when the urgent stream is registered (in Open): what
	// the background read before that, however long this goroutine waited
	// for a core, is not the limiter's doing.
	start := time.Now()
	before := background.Load()
	n, err := io.Copy(io.Discard, rc)
	if err != nil || n != 1<<20 {
		t.Fatalf("urgent read: %d bytes, %v", n, err)
	}
	rc.Close()
	took := time.Since(start)
	during := background.Load() - before
	// One read under way when the urgent stream opened, one Chunk a
	// second after that (rounded up, and one more for a grant at the
	// start of the read's first second), two more for the boundaries
	// (a read granted before the urgent stream opened and counted after,
	// or granted before it closed and counted after). Without priorities
	// it would be about half the link: took × rate / 2, over twice this
	// bound from the first second on.
	bound := (4 + int64((took+time.Second-1)/time.Second)) * chunk
	t.Logf("urgent 1 MiB in %v at %d KiB/s; background got %d KiB meanwhile (bound %d KiB, %d reads held)",
		took.Round(time.Millisecond), rate>>10, during>>10, bound>>10, lim.Held())
	if during > bound {
		t.Fatalf("the background stream got %d bytes while the urgent one read, bound %d", during, bound)
	}
	if lim.Held() == 0 {
		t.Fatal("no background read was held for the urgent stream")
	}
	// Once the urgent stream is closed the background one has the link.
	after := background.Load()
	testkit.WaitFor(t, 30*time.Second, 10*time.Millisecond, "the background stream to read again", func() bool {
		return background.Load() >= after+2*chunk
	})
}
