package e2e

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/oxefs/oxefs/internal/testkit"
	"github.com/oxefs/oxefs/internal/testkit/fakehub"
)

// TestWarmFlippedMetadataThenOffline: `oxefs warm` of an s3:// or hf://
// dataset through a proxy that flips a byte of the first read of
// dataset_info.json and of features.json reads them again (what the
// answer publishes tells: S3's ETag, the MD5 of the bytes; the Hub's git
// blob id or LFS SHA-256), saves under <cache-dir>/index/ exactly the
// source's bytes, and `mount --offline` then serves every batch as an
// online run without faults does.
func TestWarmFlippedMetadataThenOffline(t *testing.T) {
	testkit.RequireFUSE(t)
	const dir = "testdata/datasets/tiny_bridge/1.0.0"
	files := testkit.ReadDirFiles(t, dir)
	for _, kind := range []string{"s3", "hf"} {
		t.Run(kind, func(t *testing.T) {
			var (
				mu   sync.Mutex
				seen = map[string]bool{}
			)
			// flipFirst flips the first read that carries the bytes of
			// each metadata file: the object's own read, or an LFS file's
			// read from the Hub's storage host (the Hub answers a
			// redirect).
			flipFirst := func(r testkit.SeenRequest, _ int) testkit.Fault {
				for _, name := range []string{"dataset_info.json", "features.json"} {
					sum := sha256.Sum256(files[name])
					lfs := kind == "hf" && len(files[name]) >= 1<<10
					if r.Method != "GET" || lfs && r.Path != "/lfs/"+hex.EncodeToString(sum[:]) || !lfs && !r.ReadsObject(name) {
						continue
					}
					mu.Lock()
					first := !seen[name]
					seen[name] = true
					mu.Unlock()
					if first {
						return testkit.FlipAt(200)
					}
				}
				return testkit.Pass()
			}
			var (
				source  string
				env     []string
				flipEnv func() ([]string, func() int)
				stop    func()
			)
			switch kind {
			case "s3":
				var srv *testkit.FakeS3
				srv, env = fakeS3(t, "robotics", map[string]string{"tiny_bridge/1.0.0": dir})
				source, stop = "s3://robotics/tiny_bridge/1.0.0", srv.Stop
				flipEnv = func() ([]string, func() int) {
					proxy := testkit.NewRequestFaultProxy(t, srv.URL, flipFirst)
					return append(append([]string(nil), env...), "AWS_ENDPOINT_URL_S3="+proxy.URL()), proxy.Flipped
				}
			case "hf":
				hub := fakehub.New(t, fakehub.Options{LFSThreshold: 1 << 10})
				hub.Commit("oxe/tiny_bridge", "main", files)
				env = []string{"HF_ENDPOINT=" + hub.URL(), "HF_HOME=" + t.TempDir()}
				source, stop = "hf://datasets/oxe/tiny_bridge", hub.Close
				flipEnv = func() ([]string, func() int) {
					hubProxy := testkit.NewRequestFaultProxy(t, hub.URL(), flipFirst)
					stProxy := testkit.NewRequestFaultProxy(t, hub.StorageURL(), flipFirst)
					hub.RedirectStorageTo(stProxy.URL())
					return append(append([]string(nil), env...), "HF_ENDPOINT="+hubProxy.URL()),
						func() int { return hubProxy.Flipped() + stProxy.Flipped() }
				}
			}
			cfg := writeMixText(t, `batch_size: 4
image_size: [32, 32]
samples_per_episode: 2
datasets:
  - source: `+source+`
    image_key: steps/observation/image
    val_split: val
`)
			wantTrain, wantVal := mountHashes(t, env, cfg, t.TempDir())

			cacheDir := t.TempDir()
			fenv, flipped := flipEnv()
			out, stderr, code := runOxefs(t, fenv, "warm", "--config", cfg, "--cache-dir", cacheDir,
				"--fetch-timeout", "5s", "--fetch-stall", "2s")
			if code != 0 {
				t.Fatalf("warm, metadata damaged on its first read: exit %d\n%s\n%s", code, out, stderr)
			}
			if flipped() != 2 {
				t.Fatalf("%d responses flipped, want 2 (dataset_info.json and features.json)", flipped())
			}
			if !strings.Contains(out, "mount --offline can serve this mix") {
				t.Fatalf("warm's output lacks the offline verdict:\n%s", out)
			}
			for _, name := range []string{"dataset_info.json", "features.json"} {
				saved, _ := filepath.Glob(filepath.Join(cacheDir, "index", "*", name))
				if len(saved) != 1 {
					t.Fatalf("%s saved under index/ as %v, want one file", name, saved)
				}
				if got, err := os.ReadFile(saved[0]); err != nil || !bytes.Equal(got, files[name]) {
					t.Errorf("%s saved for --offline differs from the source's (%v)", saved[0], err)
				}
			}
			stop()
			train, val := mountHashes(t, env, cfg, cacheDir, "--offline")
			sameHashes(t, "warm through flips + --offline, train", train, wantTrain)
			sameHashes(t, "warm through flips + --offline, val", val, wantVal)
		})
	}
}
