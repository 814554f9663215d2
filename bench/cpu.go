package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// CPU is the processor time a source has used so far: Pipeline in the
// process that builds batches (the daemon, or this process in-process),
// Reader in this process when the pipeline runs elsewhere. Zeros where
// it cannot be read.
type CPU struct {
	Pipeline, Reader time.Duration
}

// selfCPU is this process's user and system time.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// userHZ is the kernel's clock-tick rate for /proc/PID/stat (USER_HZ), 100
// on every Linux architecture Go supports.
const userHZ = 100

// processCPU reads another process's user and system time from
// /proc/PID/stat.
func processCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name may hold spaces and parentheses: fields count from
	// after its last ')'. utime and stime are fields 14 and 15, here 11, 12.
	i := strings.LastIndexByte(string(b), ')')
	f := strings.Fields(string(b[i+1:]))
	if i < 0 || len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	s, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	return time.Duration(u+s) * time.Second / userHZ, nil
}

// daemonPID is the "pid" of info.json, 0 without one.
func daemonPID(info []byte) int {
	var i struct {
		PID int `json:"pid"`
	}
	json.Unmarshal(info, &i)
	return i.PID
}
