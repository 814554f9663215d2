package e2e

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMountStepsPassthrough: a root daemon on a kernel that allows it
// serves every array file of a step batch by FUSE passthrough, each from
// a memfd of its own: numpy loads every file of several batches, with and
// without mmap_mode, to the same arrays as a --no-passthrough daemon
// serves, none of those bytes passes through the daemon, and stats.json
// counts the opens served by passthrough.
func TestMountStepsPassthrough(t *testing.T) {
	py := findPython(t, "numpy")
	cfg := writeStepMix(t)
	pt, pc := t.TempDir(), t.TempDir()
	startMount(t, pt, nil, "--config", cfg, "--cache-dir", t.TempDir())
	var info struct {
		Serving struct {
			Mode    string `json:"mode"`
			Refused string `json:"passthrough_refused"`
			Parted  string `json:"parted"`
		} `json:"serving"`
		Sample struct {
			Arrays []struct {
				Name string `json:"name"`
			} `json:"arrays"`
		} `json:"sample"`
	}
	readJSON(t, filepath.Join(pt, "info.json"), &info)
	if info.Serving.Mode != "passthrough" {
		if info.Serving.Refused == "" {
			t.Fatalf("serving %+v: neither passthrough nor a reason", info.Serving)
		}
		t.Skipf("SKIPPING: the kernel refuses FUSE passthrough here (%s)", info.Serving.Refused)
	}
	if !strings.Contains(info.Serving.Parted, "memfd of its own") {
		t.Errorf("info.json serving.parted %q does not say each file is served from a memfd of its own", info.Serving.Parted)
	}
	if len(info.Sample.Arrays) < 8 {
		t.Fatalf("info.json lists %d arrays", len(info.Sample.Arrays))
	}
	startMount(t, pc, nil, "--config", cfg, "--cache-dir", t.TempDir(), "--no-passthrough")
	var stats struct {
		Served  int64 `json:"served_bytes"`
		Serving struct {
			Mode  string `json:"mode"`
			Opens int64  `json:"passthrough_opens"`
		} `json:"serving"`
	}
	readJSON(t, filepath.Join(pt, "stats.json"), &stats)
	before := stats.Served
	var names []string
	for _, a := range info.Sample.Arrays {
		names = append(names, a.Name)
	}
	// Each array of batches 0-5: its sha256 read whole, mapped, and read
	// at an offset; the three must agree.
	script := `
import sys, hashlib, numpy as np
mnt, names = sys.argv[1], sys.argv[2].split(",")
for i in range(6):
    for k in names:
        p = f"{mnt}/batches/{i:06d}.{k}.npy"
        a = np.load(p)
        m = np.load(p, mmap_mode="r")
        assert a.dtype == m.dtype and a.shape == m.shape and (a == m).all(), p
        raw = open(p, "rb").read()
        with open(p, "rb") as f:
            f.seek(7); assert f.read() == raw[7:], p
        print(k, i, a.dtype, a.shape, hashlib.sha256(raw).hexdigest())
`
	out := map[string]string{}
	for _, mnt := range []string{pt, pc} {
		b, err := exec.Command(py, "-c", script, mnt, strings.Join(names, ",")).CombinedOutput()
		if err != nil {
			t.Fatalf("numpy on %s: %v\n%s", mnt, err, b)
		}
		out[mnt] = string(b)
	}
	if out[pt] != out[pc] {
		t.Errorf("passthrough and page-cache daemons serve different step files:\n%s\n---\n%s", out[pt], out[pc])
	}
	readJSON(t, filepath.Join(pt, "stats.json"), &stats)
	if stats.Served != before {
		t.Errorf("the passthrough daemon served %d bytes of step files, want 0", stats.Served-before)
	}
	// Each file is opened 4 times by the script (numpy's memmap once
	// more): every open served by passthrough.
	if min := int64(6 * len(names) * 4); stats.Serving.Mode != "passthrough" || stats.Serving.Opens < min {
		t.Errorf("stats.json serving %+v, want passthrough with at least %d opens", stats.Serving, min)
	}
}
