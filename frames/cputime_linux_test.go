//go:build linux

package frames

import (
	"syscall"
	"time"
	"unsafe"
)

// threadCPU is the CPU time of the calling OS thread (the caller locks it),
// read with clock_gettime(CLOCK_THREAD_CPUTIME_ID), which is exact to the
// nanosecond (getrusage lags by up to a scheduler tick). On a shared
// machine it measures what a frame costs a core, which wall time under
// contention does not.
func threadCPU() time.Duration {
	const clockThreadCPUTimeID = 3
	var ts syscall.Timespec
	if _, _, e := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTimeID, uintptr(unsafe.Pointer(&ts)), 0); e != 0 {
		return 0
	}
	return time.Duration(ts.Nano())
}
