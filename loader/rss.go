package loader

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// ReadRSS returns the process's resident set size now and at its peak
// (VmRSS, VmHWM) and the shared memory in it (RssShmem: batches in memfds,
// which VmRSS and VmHWM include), in bytes; zeros where /proc is not
// readable.
func ReadRSS() (now, peak, shmem int64) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, 0, 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if !ok || (key != "VmRSS" && key != "VmHWM" && key != "RssShmem") {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(val), " kB"), 10, 64)
		if err != nil {
			continue
		}
		switch key {
		case "VmRSS":
			now = kb << 10
		case "VmHWM":
			peak = kb << 10
		default:
			shmem = kb << 10
		}
	}
	return now, peak, shmem
}
