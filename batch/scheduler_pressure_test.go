package batch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oxefs/oxefs/internal/testkit"
)

// The default test shape's array bytes (see newTest).
const testBatchBytes = 4 * 2 * 8 * 8 * 3

// waitUntil waits for a state the scheduler reaches on another goroutine
// (a Get queued for memory); it fails the test after 10s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testkit.WaitFor(t, 10*time.Second, time.Millisecond, what, cond)
}

// getAsync runs Get on a goroutine; the result arrives on the channel.
type result struct {
	n   int64
	b   *Batch
	err error
}

func getAsync(ctx context.Context, s *Scheduler, n int64, out chan<- result) {
	go func() {
		b, err := s.Get(ctx, n)
		out <- result{n, b, err}
	}()
}

// TestPinnedBatchesAreNeverEvicted: with the budget full of batches that
// readers hold, a request for another batch waits instead of evicting one,
// and gets its memory when a reader lets go.
func TestPinnedBatchesAreNeverEvicted(t *testing.T) {
	s, tb := newTest(t, Config{Len: 10, Budget: 2 * testBatchBytes})
	b0, err := s.Get(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	b1, err := s.Get(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	out := make(chan result, 1)
	getAsync(context.Background(), s, 2, out)
	waitUntil(t, "batch 2 waits for memory", func() bool { return s.Waiting() == 1 })
	select {
	case r := <-out:
		t.Fatalf("batch 2 was served (%v) while both slots were held by readers", r.err)
	default:
	}
	for n, b := range []*Batch{b0, b1} {
		if !bytes.Equal(b.Frames(), pattern(int64(n), testBatchBytes)) {
			t.Fatalf("held batch %d was overwritten", n)
		}
	}
	b0.Release()
	r := <-out
	if r.err != nil {
		t.Fatal(r.err)
	}
	defer r.b.Release()
	if !bytes.Equal(r.b.Frames(), pattern(2, testBatchBytes)) || !bytes.Equal(b1.Frames(), pattern(1, testBatchBytes)) {
		t.Fatal("wrong content after admission")
	}
	b1.Release()
	if s.Stats.Evictions.Load() != 1 || tb.counts[0] != 1 || tb.counts[1] != 1 {
		t.Fatalf("evictions %d, builds %v: only the released batch 0 may be evicted", s.Stats.Evictions.Load(), tb.counts)
	}
}

// TestAdmissionIsFIFO: readers waiting for memory are admitted in the order
// they asked, and a newcomer queues behind them even when memory frees up
// just as it asks.
func TestAdmissionIsFIFO(t *testing.T) {
	const waiters = 20
	s, _ := newTest(t, Config{Len: 100, Budget: testBatchBytes})
	held, err := s.Get(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	out := make(chan result, waiters)
	for i := range int64(waiters) {
		getAsync(context.Background(), s, i+1, out)
		waitUntil(t, fmt.Sprintf("batch %d queues", i+1), func() bool { return s.Waiting() == int(i+1) })
	}
	held.Release()
	for want := int64(1); want <= waiters; want++ {
		r := <-out
		if r.err != nil {
			t.Fatal(r.err)
		}
		if r.n != want {
			t.Fatalf("batch %d was admitted before batch %d, which asked first", r.n, want)
		}
		if !bytes.Equal(r.b.Frames(), pattern(r.n, testBatchBytes)) {
			t.Fatalf("batch %d: wrong content", r.n)
		}
		// A newcomer asking while the budget is full queues last.
		if want == 1 {
			getAsync(context.Background(), s, 99, out)
			waitUntil(t, "the newcomer queues", func() bool { return s.Waiting() == waiters })
		}
		r.b.Release()
	}
	if r := <-out; r.n != 99 || r.err != nil {
		t.Fatalf("the newcomer: batch %d, %v", r.n, r.err)
	} else {
		r.b.Release()
	}
}

// TestCancelledWaiterLeavesQueue: a reader that gives up while waiting for
// memory leaves the queue; its batch is never built, and those behind it
// move up.
func TestCancelledWaiterLeavesQueue(t *testing.T) {
	s, tb := newTest(t, Config{Len: 10, Budget: testBatchBytes})
	held, err := s.Get(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	out := make(chan result, 2)
	getAsync(ctx, s, 1, out)
	waitUntil(t, "batch 1 queues", func() bool { return s.Waiting() == 1 })
	getAsync(context.Background(), s, 2, out)
	waitUntil(t, "batch 2 queues", func() bool { return s.Waiting() == 2 })
	cancel()
	if r := <-out; r.n != 1 || !errors.Is(r.err, context.Canceled) {
		t.Fatalf("the cancelled waiter got batch %d, %v; want batch 1, context.Canceled", r.n, r.err)
	}
	if w := s.Waiting(); w != 1 {
		t.Fatalf("%d waiting after one of two gave up", w)
	}
	held.Release()
	r := <-out
	if r.n != 2 || r.err != nil {
		t.Fatalf("batch %d, %v; want batch 2", r.n, r.err)
	}
	r.b.Release()
	tb.mu.Lock()
	defer tb.mu.Unlock()
	if tb.counts[1] != 0 {
		t.Fatalf("the abandoned batch 1 was built %d times", tb.counts[1])
	}
}

// TestGetRacesClose hammers Get from many goroutines while Close runs: no
// panic, no build started after Close, and every Get after Close returns
// ErrClosed.
func TestGetRacesClose(t *testing.T) {
	for trial := range 20 {
		tb := &testBuild{counts: map[int64]int{}, fail: map[int64]int{}}
		var closed atomic.Bool // Close has returned
		var builtAfter atomic.Int64
		build := func(ctx context.Context, n int64, frames []byte) ([]byte, error) {
			if closed.Load() {
				builtAfter.Add(1)
			}
			return tb.build(ctx, n, frames)
		}
		s, err := NewScheduler(Config{Len: 1000, Shape: []int{4, 2, 8, 8, 3}, Budget: 4 * testBatchBytes, Readahead: 2, Build: build})
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		start := make(chan struct{})
		for g := range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				for i := int64(0); i < 50; i++ {
					b, err := s.Get(context.Background(), int64(g)*50+i)
					if err == nil {
						b.Release()
						continue
					}
					if !errors.Is(err, ErrClosed) && !errors.Is(err, context.Canceled) {
						t.Errorf("trial %d: Get: %v, want ErrClosed or context.Canceled", trial, err)
						return
					}
				}
			}()
		}
		close(start)
		s.Close()
		closed.Store(true)
		wg.Wait()
		if _, err := s.Get(context.Background(), 0); !errors.Is(err, ErrClosed) {
			t.Fatalf("Get after Close: %v, want ErrClosed", err)
		}
		s.Close() // idempotent
		if n := builtAfter.Load(); n != 0 {
			t.Fatalf("trial %d: %d builds ran after Close returned", trial, n)
		}
	}
}
