package e2e

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/oxefs/oxefs/internal/testkit"
)

// TestWarmFlippedMetadataThenOffline: `oxefs warm` of an s3:// dataset
// through a proxy that flips a byte of the first read of dataset_info.json
// and of features.json reads them again (their ETag, the MD5 of the bytes,
// tells), saves under <cache-dir>/index/ exactly the source's bytes, and
// `mount --offline` then serves every batch as an online run without
// faults does.
func TestWarmFlippedMetadataThenOffline(t *testing.T) {
	testkit.RequireFUSE(t)
	const dir = "testdata/datasets/tiny_bridge/1.0.0"
	srv, env := fakeS3(t, "robotics", map[string]string{"tiny_bridge/1.0.0": dir})
	var (
		mu   sync.Mutex
		seen = map[string]bool{}
	)
	proxy := testkit.NewRequestFaultProxy(t, srv.URL, func(r testkit.SeenRequest, _ int) testkit.Fault {
		for _, name := range []string{"dataset_info.json", "features.json"} {
			if r.ReadsObject(name) {
				mu.Lock()
				first := !seen[name]
				seen[name] = true
				mu.Unlock()
				if first {
					return testkit.FlipAt(200)
				}
			}
		}
		return testkit.Pass()
	})
	cfg := writeMixText(t, `batch_size: 4
image_size: [32, 32]
samples_per_episode: 2
datasets:
  - source: s3://robotics/tiny_bridge/1.0.0
    image_key: steps/observation/image
    val_split: val
`)
	wantTrain, wantVal := mountHashes(t, env, cfg, t.TempDir())

	cacheDir := t.TempDir()
	flipped := append(append([]string(nil), env...), "AWS_ENDPOINT_URL_S3="+proxy.URL())
	out, stderr, code := runOxefs(t, flipped, "warm", "--config", cfg, "--cache-dir", cacheDir,
		"--fetch-timeout", "5s", "--fetch-stall", "2s")
	if code != 0 {
		t.Fatalf("warm, metadata damaged on its first read: exit %d\n%s\n%s", code, out, stderr)
	}
	if proxy.Flipped() != 2 {
		t.Fatalf("%d responses flipped, want 2 (dataset_info.json and features.json)", proxy.Flipped())
	}
	if !strings.Contains(out, "mount --offline can serve this mix") {
		t.Fatalf("warm's output lacks the offline verdict:\n%s", out)
	}
	for _, name := range []string{"dataset_info.json", "features.json"} {
		want, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		saved, _ := filepath.Glob(filepath.Join(cacheDir, "index", "*", name))
		if len(saved) != 1 {
			t.Fatalf("%s saved under index/ as %v, want one file", name, saved)
		}
		if got, err := os.ReadFile(saved[0]); err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s saved for --offline differs from the source's (%v)", saved[0], err)
		}
	}
	srv.Stop()
	train, val := mountHashes(t, env, cfg, cacheDir, "--offline")
	sameHashes(t, "warm through flips + --offline, train", train, wantTrain)
	sameHashes(t, "warm through flips + --offline, val", val, wantVal)
}
