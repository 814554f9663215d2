package bench

import (
	"os"
	"testing"
	"time"
)

// TestProcessCPU reads this process's time from /proc as the mount's
// benchmark reads the daemon's, and finds what getrusage says.
func TestProcessCPU(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skipf("SKIPPING: no /proc here (%v)", err)
	}
	x := 0
	for selfCPU() < 150*time.Millisecond {
		for i := range 1 << 16 {
			x ^= i
		}
	}
	_ = x
	got, err := processCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// /proc counts in ticks of 10 ms; the runtime's other threads add a little.
	if self := selfCPU(); got < 100*time.Millisecond || got > self+50*time.Millisecond {
		t.Errorf("/proc/self/stat says %v, getrusage %v", got, self)
	}
	if _, err := processCPU(-1); err == nil {
		t.Error("processCPU(-1) succeeded")
	}
	if pid := daemonPID([]byte(`{"pid": 1234, "rank": 0}`)); pid != 1234 {
		t.Errorf("daemonPID = %d", pid)
	}
}
