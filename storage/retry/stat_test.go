package retry

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/oxefs/oxefs/internal/testkit"
	"github.com/oxefs/oxefs/storage"
)

// TestStatHangingSourceUnavailable: a Stat whose every attempt hangs gives
// up with a *storage.UnavailableError that names the stall and does not
// match context.DeadlineExceeded, which would read as the caller's own
// deadline (an interrupted read, retried at once by the kernel's caller).
func TestStatHangingSourceUnavailable(t *testing.T) {
	src, _, _ := faultSetup(t, testkit.Always(testkit.HangAtOnce()))
	b := New(src, Policy{InitialBackoff: 10 * time.Millisecond, MaxBackoff: 20 * time.Millisecond,
		MaxElapsed: 300 * time.Millisecond, StallTimeout: 100 * time.Millisecond}, nil, nil)
	_, err := b.Stat(context.Background(), testShard)
	if !errors.Is(err, storage.ErrUnavailable) || !errors.Is(err, errStalled) {
		t.Fatalf("Stat of a hanging source: %v, want ErrUnavailable naming the stall", err)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Stat of a hanging source: %v matches context.DeadlineExceeded", err)
	}
}
