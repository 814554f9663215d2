package e2e

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/oxefs/oxefs/internal/testkit"
)

// TestMountDeadSource: with every train shard hanging, a read of a train
// batch gets EIO within --fetch-timeout + --fetch-stall (the promise; the
// test allows 3x for a loaded machine), with no readahead and with the
// default, for the first batch and the ones after it; a val batch, whose
// shards answer, reads meanwhile; once the source is back, reads succeed
// after at most the failure memo's window (min(--fetch-timeout, 10s)) more.
func TestMountDeadSource(t *testing.T) {
	testkit.RequireFUSE(t)
	const (
		stall   = time.Second
		timeout = 2 * time.Second
		promise = timeout + stall
		window  = timeout // min(--fetch-timeout, 10s)
	)
	for _, readahead := range []string{"0", "8"} {
		t.Run("readahead="+readahead, func(t *testing.T) {
			srv := fakeGCS(t, "robotics", map[string]string{"tiny_bridge/1.0.0": "testdata/datasets/tiny_bridge/1.0.0"})
			// While Hang is set, every request for a train shard hangs (a
			// dead source); metadata and val shards pass.
			proxy := testkit.NewHangProxy(t, srv.URL(), func(p string) bool { return strings.Contains(p, "-train.tfrecord-") })
			cfg := filepath.Join(t.TempDir(), "mix.yaml")
			if err := os.WriteFile(cfg, []byte(`batch_size: 8
image_size: [32, 32]
datasets:
  - source: gs://robotics/tiny_bridge/1.0.0
    anonymous: true
    image_key: steps/observation/image
    val_split: val
`), 0o644); err != nil {
				t.Fatal(err)
			}
			mnt := t.TempDir()
			env := []string{"STORAGE_EMULATOR_HOST=" + strings.TrimPrefix(proxy.URL(), "http://")}
			d := startMount(t, mnt, env, "--config", cfg, "--cache-dir", t.TempDir(),
				"--fetch-stall", stall.String(), "--fetch-timeout", timeout.String(),
				"--readahead", readahead, "--workers", "1")

			read := func(view string, n int) (time.Duration, error) {
				start := time.Now()
				_, err := os.ReadFile(filepath.Join(mnt, view, fmt.Sprintf("%06d.npy", n)))
				return time.Since(start), err
			}
			proxy.Hang.Store(true)
			for _, n := range []int{0, 1, 2} {
				took, err := read("batches", n)
				if !errors.Is(err, syscall.EIO) {
					t.Fatalf("train batch %d with dead train shards: %v, want EIO", n, err)
				}
				if took > 3*promise {
					t.Fatalf("train batch %d: EIO after %v; the promise is %v\n%s", n, took, promise, d.stderr())
				}
				t.Logf("train batch %d: EIO after %v", n, took.Round(time.Millisecond))
			}
			took, err := read("val/batches", 0)
			if err != nil {
				t.Fatalf("val batch 0, whose shards answer, while train shards are dead: %v", err)
			}
			if took > 3*promise {
				t.Fatalf("val batch 0 took %v while train shards are dead; the promise is %v", took, promise)
			}

			// The source comes back: within the memo window (plus a retry
			// budget for fetches still running), reads succeed, and then
			// every batch does.
			proxy.Hang.Store(false)
			back := time.Now()
			for {
				_, err := read("batches", 0)
				if err == nil {
					break
				}
				if time.Since(back) > 3*(window+promise) {
					t.Fatalf("batch 0 still fails %v after the source came back: %v\n%s", time.Since(back), err, d.stderr())
				}
				time.Sleep(100 * time.Millisecond) // polling pace only
			}
			t.Logf("batch 0 read %v after the source came back", time.Since(back).Round(time.Millisecond))
			var info mountInfo
			readJSON(t, filepath.Join(mnt, "info.json"), &info)
			for n := range int(info.NumBatches) {
				if _, err := read("batches", n); err != nil {
					t.Fatalf("batch %d after the source came back: %v", n, err)
				}
			}
		})
	}
}
