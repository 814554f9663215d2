package e2e

import (
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestMountPassthrough: by default a root daemon on a kernel that allows
// it serves .npy files by FUSE passthrough, says so in info.json and its
// log, and serves the same bytes as a --no-passthrough daemon (page
// cache); numpy reads and maps the files, and no .npy read reaches the
// daemon (stats.json's read latencies count one record per open, none
// per read).
func TestMountPassthrough(t *testing.T) {
	py := findPython(t, "numpy")
	type serving struct {
		Mode    string `json:"mode"`
		Refused string `json:"passthrough_refused"`
	}
	var info struct {
		Serving serving `json:"serving"`
	}
	pt := t.TempDir()
	d := startMount(t, pt, nil, "--cache-dir", t.TempDir())
	readJSON(t, filepath.Join(pt, "info.json"), &info)
	if info.Serving.Mode != "passthrough" {
		if info.Serving.Refused == "" {
			t.Fatalf("serving %+v: neither passthrough nor a reason", info.Serving)
		}
		t.Skipf("SKIPPING: the kernel refuses FUSE passthrough here (%s)", info.Serving.Refused)
	}
	if !strings.Contains(d.stderr(), "serving=passthrough") {
		t.Errorf("the log does not say passthrough:\n%s", d.stderr())
	}
	pc := t.TempDir()
	startMount(t, pc, nil, "--cache-dir", t.TempDir(), "--no-passthrough")
	readJSON(t, filepath.Join(pc, "info.json"), &info)
	if info.Serving.Mode != "page-cache" || info.Serving.Refused != "" {
		t.Fatalf("--no-passthrough serves %+v", info.Serving)
	}
	if a, b := hashBatches(t, pt, "batches", 12, 3, 1), hashBatches(t, pc, "batches", 12, 2, 2); !slices.Equal(a, b) {
		t.Fatal("passthrough and page-cache mounts serve different bytes")
	}
	var stats struct {
		Served  int64 `json:"served_bytes"`
		Serving struct {
			Mode  string `json:"mode"`
			Opens int64  `json:"passthrough_opens"`
		} `json:"serving"`
	}
	served := func(mnt string) int64 {
		readJSON(t, filepath.Join(mnt, "stats.json"), &stats)
		return stats.Served
	}
	before := [2]int64{served(pt), served(pc)}
	script := `
import sys, numpy as np
mnt = sys.argv[1]
for i in range(12, 20):
    a = np.load(f"{mnt}/batches/{i:06d}.npy")
    m = np.load(f"{mnt}/batches/{i:06d}.npy", mmap_mode="r")
    with open(f"{mnt}/batches/{i:06d}.npy", "rb") as f:
        f.seek(1000); part = f.read(5000)
    assert (a == m).all() and a.std() > 5
    assert part == open(f"{mnt}/batches/{i:06d}.npy", "rb").read()[1000:6000]
print("ok")
`
	for i, mnt := range []string{pt, pc} {
		if out, err := exec.Command(py, "-c", script, mnt).CombinedOutput(); err != nil || !strings.Contains(string(out), "ok") {
			t.Fatalf("numpy on %s: %v\n%s", mnt, err, out)
		}
		before[i] = served(mnt) - before[i]
	}
	// The same .npy reads: none of their bytes passes through the
	// passthrough daemon; all of them through the page-cache one.
	if before[0] != 0 || before[1] < 8*390000 {
		t.Errorf("numpy's reads of 8 batches: %d bytes served by the passthrough daemon (want 0), %d by the page-cache one", before[0], before[1])
	}
	// The script opens each of its 8 files 4 times (numpy's memmap more:
	// it opens the file for the header, then to map it), the hashes 12
	// more.
	for _, tc := range []struct {
		mnt, mode string
		min, max  int64
	}{{pt, "passthrough", 8*4 + 12, 8*8 + 12}, {pc, "page-cache", 0, 0}} {
		served(tc.mnt)
		if stats.Serving.Mode != tc.mode || stats.Serving.Opens < tc.min || stats.Serving.Opens > tc.max {
			t.Errorf("%s: stats.json serving %+v, want %s with %d–%d passthrough opens", tc.mnt, stats.Serving, tc.mode, tc.min, tc.max)
		}
	}
}
