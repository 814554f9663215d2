package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/oxefs/oxefs/internal/testkit"
)

// TestMountShutdownDuringSlowFetch: SIGTERM while a read waits on a slow
// download (a rate-capped source) ends the daemon within a second or two,
// exit 0. Shutdown cancels the download instead of waiting for it to
// finish (at 20 KB/s the batch's shards would take about a minute).
func TestMountShutdownDuringSlowFetch(t *testing.T) {
	testkit.RequireFUSE(t)
	srv := fakeGCS(t, "robotics", map[string]string{"tiny_bridge/1.0.0": "testdata/datasets/tiny_bridge/1.0.0"})
	cfg := filepath.Join(t.TempDir(), "mix.yaml")
	if err := os.WriteFile(cfg, []byte(`batch_size: 8
image_size: [32, 32]
datasets:
  - source: gs://robotics/tiny_bridge/1.0.0
    anonymous: true
    image_key: steps/observation/image
`), 0o644); err != nil {
		t.Fatal(err)
	}
	mnt := t.TempDir()
	env := []string{"STORAGE_EMULATOR_HOST=" + strings.TrimPrefix(srv.URL(), "http://")}
	d := startMount(t, mnt, env, "--config", cfg, "--cache-dir", t.TempDir(),
		"--max-fetch-rate", "20KB", "--workers", "1", "--grace", "30s")

	go os.ReadFile(filepath.Join(mnt, "batches", "000000.npy")) // waits on the download; its error does not matter

	// Wait until the build is under way and its download has moved bytes
	// past the metadata read at mount.
	var before int64
	deadline := time.Now().Add(30 * time.Second)
	for {
		var st struct {
			Train struct {
				Builds int64 `json:"builds"`
			} `json:"train"`
			Fetch struct {
				Bytes int64 `json:"bytes"`
			} `json:"fetch"`
		}
		if b, err := os.ReadFile(filepath.Join(mnt, "stats.json")); err == nil && json.Unmarshal(b, &st) == nil {
			if st.Train.Builds == 0 {
				before = st.Fetch.Bytes
			} else if st.Fetch.Bytes > before {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no fetch started within 30s:\n%s", d.stderr())
		}
		time.Sleep(50 * time.Millisecond)
	}

	start := time.Now()
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-d.exited:
		took := time.Since(start)
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v\n%s", err, d.stderr())
		}
		// The promise is about a second; 5 s leaves room for a loaded
		// machine while still failing the old behaviour (waiting out the
		// download, about a minute here).
		if took > 5*time.Second {
			t.Fatalf("SIGTERM during a slow download took %v to exit, want about a second:\n%s", took, d.stderr())
		}
		t.Logf("exited %v after SIGTERM", took)
	case <-time.After(90 * time.Second):
		d.cmd.Process.Kill()
		t.Fatalf("no exit within 90s of SIGTERM:\n%s", d.stderr())
	}
	d.cmd.ProcessState = &os.ProcessState{} // stopped: the cleanup has nothing left to do
}
