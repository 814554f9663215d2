package testkit

import (
	"os"
	"testing"
	"time"

	"github.com/oxefs/oxefs/internal/missing"
)

// WaitFor polls cond every poll until it holds, and fails the test, naming
// what it waited for, when it does not within limit.
func WaitFor(t testing.TB, limit, poll time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", limit, what)
		}
		time.Sleep(poll)
	}
}

// RequireFUSE skips a test that mounts, loudly, where /dev/fuse is missing.
func RequireFUSE(t testing.TB) {
	t.Helper()
	if _, err := os.Stat("/dev/fuse"); err != nil {
		missing.Skip(t, missing.FUSE, err)
	}
}
