package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oxefs/oxefs/internal/testkit"
)

// TestMountDiskAboveFreeSpace mounts a GCS mix with --disk 1GiB and the
// cache on a 20 MiB filesystem: the mount warns and bounds the disk cache
// by the free space (stats.json says so), and batches read.
func TestMountDiskAboveFreeSpace(t *testing.T) {
	testkit.RequireFUSE(t)
	cacheDir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=20m", "tmpfs", cacheDir).CombinedOutput(); err != nil {
		t.Skipf("SKIPPED: %s needs to mount a 20 MiB tmpfs (root): %v %s", t.Name(), err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", cacheDir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v %s", cacheDir, err, out)
		}
	})
	srv := fakeGCS(t, "robotics", map[string]string{"tiny_table/1.0.0": "testdata/datasets/tiny_table/1.0.0"})
	env := []string{"STORAGE_EMULATOR_HOST=" + strings.TrimPrefix(srv.URL(), "http://")}
	cfg := filepath.Join(t.TempDir(), "mix.yaml")
	if err := os.WriteFile(cfg, []byte("batch_size: 4\nimage_size: [32, 32]\ndatasets:\n  - source: gs://robotics/tiny_table/1.0.0\n    anonymous: true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mnt := t.TempDir()
	d := startMount(t, mnt, env, "--config", cfg, "--cache-dir", cacheDir, "--disk", "1GiB")
	if !strings.Contains(d.stderr(), "--disk is larger than the cache filesystem can hold") {
		t.Fatalf("no warning about --disk:\n%s", d.stderr())
	}
	readAllBatches(t, mnt)
	var stats struct {
		Disk struct {
			Budget int64 `json:"budget_bytes"`
		} `json:"disk_cache"`
	}
	readJSON(t, filepath.Join(mnt, "stats.json"), &stats)
	if stats.Disk.Budget <= 0 || stats.Disk.Budget > 20<<20 {
		t.Fatalf("stats.json disk budget %d on a 20 MiB filesystem", stats.Disk.Budget)
	}
}
