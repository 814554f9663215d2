package ratelimit

import (
	"context"
	"testing"
	"time"
)

func TestRateLimiter(t *testing.T) {
	if NewLimiter(0) != nil {
		t.Fatal("rate 0 must mean no limiter")
	}
	var none *Limiter
	if err := none.Wait(context.Background(), 1<<30); err != nil {
		t.Fatal(err)
	}
	// 1 MB/s with a full first second of tokens: 3 MB take at least 2 s of
	// owed time. The bound is one-sided (a loaded machine only adds time).
	l := NewLimiter(1e6)
	start := time.Now()
	for range 30 {
		if err := l.Wait(context.Background(), 100_000); err != nil {
			t.Fatal(err)
		}
	}
	if d := time.Since(start); d < 1900*time.Millisecond {
		t.Fatalf("3 MB at 1 MB/s took %v", d)
	}
	// A cancelled context ends a wait.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := l.Wait(ctx, 10_000_000); err == nil {
		t.Fatal("Wait ignored a cancelled context")
	}
}
