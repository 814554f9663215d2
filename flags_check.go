package main

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/oxefs/oxefs/frames"
	"github.com/oxefs/oxefs/internal/bytesize"
	"github.com/oxefs/oxefs/storage/diskcache"
)

// check refuses flag values that cannot work, before anything is opened.
// Each message names the flag, the value and what would work. --mem above
// what the machine can give is refused rather than clamped: the daemon
// would be killed for lack of memory at the first large batch, and a
// silently smaller budget would change what readahead and the RAM cache
// promise. Whether --mem holds one batch depends on the mix; loader.Open
// checks that.
func (f *pipelineFlags) check(machine machineMemory) error {
	if f.Config != "" {
		if _, err := os.Stat(f.Config); errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("--config %s: no such file", f.Config)
		} else if err != nil {
			return fmt.Errorf("--config %s: %w", f.Config, err)
		}
	}
	if machine.Bytes > 0 && int64(f.Mem) > machine.Bytes {
		return fmt.Errorf("--mem %s is more than the memory this machine gives the daemon, %s (%s): give at most that, and leave room for the trainer",
			bytesize.Format(int64(f.Mem)), bytesize.Format(machine.Bytes), machine.Source)
	}
	if f.Disk <= 0 {
		return fmt.Errorf("--disk %s: must be more than 0 (e.g. 50GiB)", bytesize.Format(int64(f.Disk)))
	}
	switch f.Decoder {
	case "":
		// OXEFS_DECODER set to nothing means what unset means.
		f.Decoder = frames.JPEGAuto
	case frames.JPEGAuto, frames.JPEGTurbo, frames.JPEGGo:
	default:
		return fmt.Errorf("--decoder %q (or OXEFS_DECODER): must be %s, %s or %s", f.Decoder, frames.JPEGAuto, frames.JPEGTurbo, frames.JPEGGo)
	}
	if f.Workers < 1 {
		return fmt.Errorf("--workers %d: must be at least 1 (the default is one per CPU)", f.Workers)
	}
	if f.Readahead < 0 {
		return fmt.Errorf("--readahead %d: must be 0 or more", f.Readahead)
	}
	if f.FetchStall <= 0 {
		return fmt.Errorf("--fetch-stall %v: must be more than 0 (the default is 30s)", f.FetchStall)
	}
	if f.FetchTimeout <= 0 {
		return fmt.Errorf("--fetch-timeout %v: must be more than 0 (the default is 2m)", f.FetchTimeout)
	}
	if f.VerifyRanges == "" {
		f.VerifyRanges = diskcache.VerifyTwice.String()
	}
	v, err := diskcache.ParseVerifyRanges(f.VerifyRanges)
	if err != nil {
		return fmt.Errorf("--verify-ranges %w", err)
	}
	f.verifyRanges = v
	return nil
}

// machineMemory is the memory this process may use: the smaller of the
// machine's (MemTotal) and its cgroup's limit. Bytes is 0 when neither
// could be read.
type machineMemory struct {
	Bytes  int64
	Source string // where Bytes comes from, for messages
}

// hostMemory reads the running machine's memory.
func hostMemory() machineMemory { return readMachineMemory("/") }

// unlimited is the smallest cgroup limit taken as none: cgroup v1 writes
// "no limit" as the largest page-aligned int64.
const unlimited = 1 << 60

// readMachineMemory reads /proc/meminfo and the process's memory cgroup
// limits (v2 memory.max, v1 memory.limit_in_bytes, of its cgroup and every
// ancestor, as limits nest) below root.
func readMachineMemory(root string) machineMemory {
	var m machineMemory
	if total, ok := memTotal(filepath.Join(root, "proc/meminfo")); ok {
		m = machineMemory{Bytes: total, Source: "MemTotal in /proc/meminfo"}
	}
	for _, file := range cgroupLimitFiles(root) {
		b, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			continue
		}
		v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil || v <= 0 || v >= unlimited { // "max": no limit
			continue
		}
		if m.Bytes == 0 || v < m.Bytes {
			m = machineMemory{Bytes: v, Source: "cgroup limit in /" + file}
		}
	}
	return m
}

// memTotal returns MemTotal from a /proc/meminfo.
func memTotal(file string) (int64, bool) {
	f, err := os.Open(file)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:")
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		return kb << 10, err == nil && kb > 0
	}
	return 0, false
}

// cgroupLimitFiles lists, relative to root, the files that may hold a
// memory limit for this process, from /proc/self/cgroup. In a container
// the cgroup's path may not exist below /sys/fs/cgroup (the container sees
// its own cgroup as the root), so every ancestor up to the hierarchy's
// root is listed too.
func cgroupLimitFiles(root string) []string {
	b, err := os.ReadFile(filepath.Join(root, "proc/self/cgroup"))
	if err != nil {
		return nil
	}
	var files []string
	up := func(dir, cgroup, name string) {
		for p := path.Clean("/" + cgroup); ; p = path.Dir(p) {
			files = append(files, path.Join(dir, p, name))
			if p == "/" {
				return
			}
		}
	}
	for line := range strings.Lines(string(b)) {
		// hierarchy-ID:controller-list:cgroup-path
		parts := strings.SplitN(strings.TrimSpace(line), ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" { // v2
			up("sys/fs/cgroup", parts[2], "memory.max")
			up("sys/fs/cgroup/unified", parts[2], "memory.max")
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			if c == "memory" { // v1
				up("sys/fs/cgroup/memory", parts[2], "memory.limit_in_bytes")
			}
		}
	}
	return files
}
