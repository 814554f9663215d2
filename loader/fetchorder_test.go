package loader

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"
)

// TestFetchOrderLowestFirst: while one batch holds the turn, the waiting
// batches get it lowest index first, whatever order they asked in (here
// 12, 3, 9, 5, one after the other).
func TestFetchOrderLowestFirst(t *testing.T) {
	q := newFetchOrder()
	ctx := context.Background()
	release, err := q.acquire(ctx, 7)
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		order []int64
		wg    sync.WaitGroup
	)
	for i, n := range []int64{12, 3, 9, 5} {
		if i > 0 {
			waitWaiting(t, q, i) // ask in this order: FIFO would keep it
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			rel, err := q.acquire(ctx, n)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			order = append(order, n)
			mu.Unlock()
			rel()
		}()
	}
	waitWaiting(t, q, 4)
	release()
	wg.Wait()
	if want := []int64{3, 5, 9, 12}; !slices.Equal(order, want) {
		t.Fatalf("turns went to %v, want %v", order, want)
	}
	if rel, err := q.acquire(ctx, 0); err != nil {
		t.Fatalf("the turn was not freed: %v", err)
	} else {
		rel()
	}
}

// TestFetchOrderCancelledWaiter: a waiter that gives up leaves the queue
// and the others still get their turn; nothing hangs.
func TestFetchOrderCancelledWaiter(t *testing.T) {
	q := newFetchOrder()
	release, err := q.acquire(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	gaveUp := make(chan error, 1)
	go func() {
		_, err := q.acquire(ctx, 1)
		gaveUp <- err
	}()
	got := make(chan struct{})
	go func() {
		rel, err := q.acquire(context.Background(), 2)
		if err == nil {
			rel()
		}
		close(got)
	}()
	waitWaiting(t, q, 2)
	cancel()
	if err := <-gaveUp; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled waiter: %v", err)
	}
	release()
	select {
	case <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("batch 2 never got its turn after batch 1 gave up")
	}
}

func waitWaiting(t *testing.T, q *fetchOrder, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		q.mu.Lock()
		k := len(q.waiting)
		q.mu.Unlock()
		if k == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d waiters, want %d", k, n)
		}
		time.Sleep(time.Millisecond)
	}
}
