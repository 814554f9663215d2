package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/oxefs/oxefs/internal/testkit"
)

// procStatusKiB reads a "Name:  N kB" line of /proc/PID/status, in bytes.
func procStatusKiB(t *testing.T, pid int, name string) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, name+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("/proc/%d/status %q: %v", pid, line, err)
			}
			return kb << 10
		}
	}
	t.Fatalf("/proc/%d/status has no %s", pid, name)
	return 0
}

// countDents lists dir with getdents(2) alone, as ls does, and returns
// the number of entries other than . and ..
func countDents(t *testing.T, dir string) int {
	t.Helper()
	fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	buf := make([]byte, 1<<16)
	count := 0
	for {
		n, err := syscall.Getdents(fd, buf)
		if err != nil {
			t.Fatalf("getdents %s: %v", dir, err)
		}
		if n == 0 {
			return count
		}
		for off := 0; off < n; {
			reclen := int(buf[off+16]) | int(buf[off+17])<<8
			if name := string(buf[off+19 : off+reclen]); !strings.HasPrefix(name, ".\x00") && !strings.HasPrefix(name, "..\x00") {
				count++
			}
			off += reclen
		}
	}
}

// TestMountListingMemoryBound: listing 1,000,000 batches (2,000,000
// entries) twice at --mem 512MiB keeps the daemon's peak RSS within --mem
// + 256 MiB, as everything else: the kernel's inodes of listed entries no
// longer each hold a node in the daemon (1.2 GB peak before). Then a stat
// of 40,000 entries, past the node bound, keeps the nodes held within it.
func TestMountListingMemoryBound(t *testing.T) {
	dir := t.TempDir()
	d := startMount(t, dir, nil, "--config", writeMix(t, "batch_size: 4\nimage_size: [32, 32]\nnum_batches: 1000000\n"),
		"--cache-dir", t.TempDir(), "--mem", "512MiB")
	pid := d.cmd.Process.Pid
	before := procStatusKiB(t, pid, "VmHWM")
	bdir := filepath.Join(dir, "batches")
	for pass := range 2 {
		if n := countDents(t, bdir); n != 2000000 {
			t.Fatalf("listing %d: %d entries, want 2,000,000", pass, n)
		}
	}
	for i := range 20000 {
		for _, ext := range []string{"npy", "json"} {
			if _, err := os.Lstat(filepath.Join(bdir, fmt.Sprintf("%06d.%s", i, ext))); err != nil {
				t.Fatal(err)
			}
		}
	}
	peak := procStatusKiB(t, pid, "VmHWM")
	t.Logf("daemon peak RSS %.0f MiB before listing, %.0f MiB after two listings of 2,000,000 entries and 40,000 stats (--mem 512MiB)",
		float64(before)/(1<<20), float64(peak)/(1<<20))
	if bound := int64(512+256) << 20; peak > bound {
		t.Fatalf("daemon peak RSS %d MiB after listing, bound %d MiB (--mem + 256 MiB)", peak>>20, bound>>20)
	}
	var stats struct {
		Serving struct {
			Nodes *struct {
				Held        int   `json:"held"`
				Max         int   `json:"max"`
				Invalidated int64 `json:"invalidated"`
			} `json:"nodes"`
		} `json:"serving"`
		Train struct {
			Builds int64 `json:"builds"`
		} `json:"train"`
	}
	// Invalidations run behind the lookups, which they never hold up.
	testkit.WaitFor(t, 30*time.Second, 20*time.Millisecond, "stats.json serving.nodes.held within max (16384)", func() bool {
		readJSON(t, filepath.Join(dir, "stats.json"), &stats)
		return stats.Serving.Nodes != nil && stats.Serving.Nodes.Held <= stats.Serving.Nodes.Max
	})
	if nodes := stats.Serving.Nodes; nodes.Max != 16384 || nodes.Invalidated == 0 {
		t.Fatalf("stats.json serving.nodes = %+v, want max 16384 and some invalidated after 40,000 stats", nodes)
	}
	if stats.Train.Builds != 0 {
		t.Fatalf("listing built %d batches", stats.Train.Builds)
	}
}
