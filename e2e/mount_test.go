package e2e

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/oxefs/oxefs/internal/pythontest"
	"github.com/oxefs/oxefs/internal/testkit"
)

// daemon is an `oxefs mount` process.
type daemon struct {
	cmd     *exec.Cmd
	dir     string
	mu      sync.Mutex
	log     bytes.Buffer // guarded by mu: its stderr
	mounted chan struct{}
	exited  chan error
}

// startMount runs `oxefs mount dir args...` and waits until it has mounted.
// The test fails if it exits first; it is stopped at cleanup.
func startMount(t *testing.T, dir string, env []string, args ...string) *daemon {
	t.Helper()
	testkit.RequireFUSE(t)
	d := &daemon{dir: dir, mounted: make(chan struct{}), exited: make(chan error, 1)}
	d.cmd = exec.Command(oxefsBin, append([]string{"mount", dir}, args...)...)
	d.cmd.Env = append(os.Environ(), env...)
	stderr, err := d.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stderr)
		once := sync.Once{}
		for sc.Scan() {
			d.mu.Lock()
			d.log.WriteString(sc.Text() + "\n")
			d.mu.Unlock()
			if strings.Contains(sc.Text(), "msg=mounted") {
				once.Do(func() { close(d.mounted) })
			}
		}
		d.exited <- d.cmd.Wait()
	}()
	select {
	case <-d.mounted:
	case err := <-d.exited:
		t.Fatalf("oxefs mount exited before mounting (%v):\n%s", err, d.stderr())
	case <-time.After(60 * time.Second):
		d.cmd.Process.Kill()
		t.Fatalf("oxefs mount did not mount within 60s:\n%s", d.stderr())
	}
	t.Cleanup(func() { d.stop(t) })
	return d
}

func (d *daemon) stderr() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.log.String()
}

// stop sends SIGTERM and requires a clean exit (status 0) within 20s.
func (d *daemon) stop(t *testing.T) {
	t.Helper()
	if d.cmd.ProcessState != nil {
		return
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-d.exited:
		if err != nil {
			t.Errorf("oxefs mount exited with %v after SIGTERM:\n%s", err, d.stderr())
		}
	case <-time.After(20 * time.Second):
		d.cmd.Process.Kill()
		t.Errorf("oxefs mount did not exit within 20s of SIGTERM:\n%s", d.stderr())
	}
	if mounted(d.dir) {
		t.Errorf("%s is still mounted after the daemon exited", d.dir)
	}
}

// mounted reports whether dir is a mount point (per /proc/mounts).
func mounted(dir string) bool {
	b, _ := os.ReadFile("/proc/mounts")
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[1] == dir {
			return true
		}
	}
	return false
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v\n%s", path, err, b)
	}
}

type mountInfo struct {
	NumBatches int64 `json:"num_batches"`
	Frames     struct {
		Shape  []int  `json:"shape"`
		Layout string `json:"layout"`
	} `json:"frames"`
	Decoder string `json:"decoder"`
	Val     *struct {
		NumBatches int64 `json:"num_batches"`
	} `json:"val"`
}

// hashBatches reads batches [0, n) of view ("batches" or "val/batches"),
// .npy and .json, with `readers` goroutines in a shuffled order, and
// returns their hashes by index.
func hashBatches(t *testing.T, mnt, view string, n int64, readers int, seed uint64) []string {
	t.Helper()
	order := make([]int64, n)
	for i := range order {
		order[i] = int64(i)
	}
	if seed != 0 {
		rand.New(rand.NewPCG(seed, seed)).Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	}
	out := make([]string, n)
	next := atomic.Int64{}
	var wg sync.WaitGroup
	errs := make(chan error, readers)
	for range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				k := next.Add(1) - 1
				if k >= n {
					return
				}
				i := order[k]
				h := sha256.New()
				for _, ext := range []string{".npy", ".json"} {
					b, err := os.ReadFile(filepath.Join(mnt, view, fmt.Sprintf("%06d%s", i, ext)))
					if err != nil {
						errs <- err
						return
					}
					h.Write(b)
				}
				out[i] = fmt.Sprintf("%x", h.Sum(nil))
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return out
}

// TestMountBatchesAreDeterministic: the bytes of every batch are the same on
// two mounts with separate caches, whatever the reader order and count,
// and after a daemon restart.
func TestMountBatchesAreDeterministic(t *testing.T) {
	dirA, dirB := t.TempDir(), t.TempDir()
	cacheA, cacheB := t.TempDir(), t.TempDir()
	a := startMount(t, dirA, nil, "--cache-dir", cacheA, "--readahead", "4")
	startMount(t, dirB, nil, "--cache-dir", cacheB, "--readahead", "0", "--workers", "1")

	var info mountInfo
	readJSON(t, filepath.Join(dirA, "info.json"), &info)
	if info.NumBatches != 100 || len(info.Frames.Shape) != 5 || info.Val == nil {
		t.Fatalf("demo info.json: %+v", info)
	}
	const n = 24
	seqA := hashBatches(t, dirA, "batches", n, 1, 0)
	conB := hashBatches(t, dirB, "batches", n, 8, 7)
	valA := hashBatches(t, dirA, "val/batches", info.Val.NumBatches, 2, 3)
	valB := hashBatches(t, dirB, "val/batches", info.Val.NumBatches, 1, 0)
	for i := range n {
		if seqA[i] != conB[i] {
			t.Fatalf("batch %d differs between a sequential reader and 8 shuffled readers on another mount", i)
		}
	}
	for i := range valA {
		if valA[i] != valB[i] {
			t.Fatalf("val batch %d differs between mounts", i)
		}
	}
	distinct := map[string]bool{}
	for _, h := range seqA {
		distinct[h] = true
	}
	if len(distinct) != n {
		t.Fatalf("only %d distinct batches among %d", len(distinct), n)
	}

	// Restart: same cache directory, reversed order.
	a.stop(t)
	startMount(t, dirA, nil, "--cache-dir", cacheA)
	again := hashBatches(t, dirA, "batches", n, 3, 11)
	for i := range n {
		if again[i] != seqA[i] {
			t.Fatalf("batch %d differs after a daemon restart", i)
		}
	}
}

// findPython returns an interpreter that imports every module, or skips
// the test loudly. CI installs Debian's python3-numpy and python3-torch.
func findPython(t *testing.T, modules ...string) string {
	t.Helper()
	return pythontest.Find(t, modules...)
}

// TestMountPythonConsumers reads the mount with numpy.load (also with
// mmap_mode="r") and with a PyTorch DataLoader of 4 worker processes.
func TestMountPythonConsumers(t *testing.T) {
	py := findPython(t, "numpy", "torch")
	dir := t.TempDir()
	startMount(t, dir, nil, "--cache-dir", t.TempDir())
	script := `
import json, os, sys
import numpy as np
sys.path.insert(0, sys.argv[2])
from oxefs import Batches
import torch
from torch.utils.data import DataLoader
mnt = sys.argv[1]
info = json.load(open(os.path.join(mnt, "info.json")))
B, F, H, W, C = info["frames"]["shape"]
for i in range(20):
    a = np.load(f"{mnt}/batches/{i:06d}.npy")
    m = np.load(f"{mnt}/batches/{i:06d}.npy", mmap_mode="r")
    assert a.dtype == np.uint8 and a.shape == (B, F, H, W, C), (a.dtype, a.shape)
    assert (a == m).all()
    assert a.std() > 5, "flat frames"
ds = Batches(mnt, torch=True)
assert len(ds) == info["num_batches"]
seen = 0
for batch in DataLoader(ds, batch_size=None, num_workers=4):
    assert tuple(batch["frames"].shape) == (B, F, H, W, C)
    assert batch["action"].shape == (B, info["action_dim"]), batch["action"].shape
    assert batch["initial_state"].shape == (B, info["state_dim"])
    assert batch["action_mask"].shape == (B, info["action_dim"]) and batch["action_mask"].dtype == torch.bool
    assert batch["state_mask"].shape == (B, info["state_dim"])
    for j, name in enumerate(batch["dataset_name"]):
        dims = info["datasets"][name]
        assert int(batch["action_mask"][j].sum()) == dims["action_dim"], (name, batch["action_mask"][j], dims)
        assert int(batch["state_mask"][j].sum()) == dims["state_dim"], (name, batch["state_mask"][j], dims)
        assert bool(batch["action_mask"][j][:dims["action_dim"]].all())
        assert (batch["action"][j][~batch["action_mask"][j]] == 0).all(), "padding is not 0"
    assert batch["frame_indices"].shape == (B, F)
    assert len(batch["language"]) == B and len(batch["episode_id"]) == B
    assert set(batch["dataset_name"]) <= {"tiny_bridge", "tiny_table", "tiny_kuka"}
    assert (batch["frame_indices"][:, 1] - batch["frame_indices"][:, 0] == batch["offset"]).all()
    seen += 1
    if seen == 20:
        break
assert seen == 20
val = Batches(mnt, val=True)
assert len(val) == info["val"]["num_batches"] and val[0]["frames"].shape[0] == B
print("ok", seen)
`
	out, err := exec.Command(py, "-c", script, dir, "python").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "ok 20") {
		t.Fatalf("python consumers: %v\n%s", err, out)
	}
}

// TestMountRefusesBadConfig: every config problem stops `oxefs mount`
// before it mounts anything, with a message naming it.
func TestMountRefusesBadConfig(t *testing.T) {
	testkit.RequireFUSE(t)
	bridge, _ := filepath.Abs("testdata/datasets/tiny_bridge/1.0.0")
	for _, tc := range []struct {
		name, yaml, want string
	}{
		{"malformed", "datasets: [", "mix config"},
		{"unknown key", "batch_sise: 4\ndatasets:\n  - source: " + bridge, `unknown key "batch_sise"`},
		{"bad weight", "datasets:\n  - source: " + bridge + "\n    weight: lots", "weight"},
		{"empty split", "datasets:\n  - source: " + bridge + "\n    split: train[:1%]", "selects no episodes"},
		{"missing image key", "datasets:\n  - source: " + bridge + "\n    image_key: steps/observation/rgb", "steps/observation/wrist_image"},
		{"no such source", "datasets:\n  - source: /nonexistent/ds/1.0.0", "/nonexistent/ds/1.0.0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := filepath.Join(t.TempDir(), "mix.yaml")
			if err := os.WriteFile(cfg, []byte(tc.yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			_, stderr, code := runOxefs(t, nil, "mount", dir, "--config", cfg, "--cache-dir", t.TempDir())
			if code == 0 {
				t.Fatal("mount accepted a bad config")
			}
			if !strings.Contains(stderr, tc.want) {
				t.Fatalf("stderr lacks %q:\n%s", tc.want, stderr)
			}
			if mounted(dir) {
				t.Fatal("mounted despite the bad config")
			}
		})
	}
}

// corruptMix mounts the four corrupt fixtures as one mix.
func corruptMix(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("batch_size: 4\nimage_size: [32, 32]\ndatasets:\n")
	for _, v := range []string{"bad_crc", "truncated", "not_example", "missing_image"} {
		src, _ := filepath.Abs(filepath.Join("testdata/corrupt", v))
		fmt.Fprintf(&b, "  - name: %s\n    source: %s\n    image_key: steps/observation/rgb\n    offset: 1\n", v, src)
	}
	cfg := filepath.Join(t.TempDir(), "mix.yaml")
	if err := os.WriteFile(cfg, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestMountCorruptData reads one epoch of a mix of the corrupt fixtures:
// every damaged episode is substituted, counted and named in stats.json;
// with --strict the batches holding one fail with EIO and the rest read.
func TestMountCorruptData(t *testing.T) {
	cfg := corruptMix(t)
	dir := t.TempDir()
	startMount(t, dir, nil, "--config", cfg, "--cache-dir", t.TempDir())
	var info mountInfo
	readJSON(t, filepath.Join(dir, "info.json"), &info)
	for i := range info.NumBatches {
		if _, err := os.ReadFile(filepath.Join(dir, "batches", fmt.Sprintf("%06d.npy", i))); err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
	}
	var stats struct {
		Substitutions map[string]int64                   `json:"substitutions"`
		BadEpisodes   []struct{ Episode, Reason string } `json:"bad_episodes"`
	}
	readJSON(t, filepath.Join(dir, "stats.json"), &stats)
	want := map[string]string{ // dataset/split/shard/record -> what the reason names
		"bad_crc/train/0/2":       "crc",
		"truncated/train/1/4":     "truncated",
		"not_example/train/1/1":   "not a tf.train.Example",
		"missing_image/train/0/3": "steps/observation/rgb",
	}
	got := map[string]string{}
	for _, b := range stats.BadEpisodes {
		got[b.Episode] = b.Reason
	}
	for id, reason := range want {
		if !strings.Contains(got[id], reason) {
			t.Errorf("stats.json bad_episodes[%s] = %q, want a reason naming %q", id, got[id], reason)
		}
	}
	if len(got) != len(want) || stats.Substitutions["corrupt"] < int64(len(want)) {
		t.Errorf("stats.json: %d bad episodes %v, substitutions %v", len(got), got, stats.Substitutions)
	}

	strict := t.TempDir()
	startMount(t, strict, nil, "--config", cfg, "--cache-dir", t.TempDir(), "--strict")
	var failed, ok int
	for i := range info.NumBatches {
		_, err := os.ReadFile(filepath.Join(strict, "batches", fmt.Sprintf("%06d.npy", i)))
		switch {
		case err == nil:
			ok++
		case errors.Is(err, syscall.EIO):
			failed++
		default:
			t.Fatalf("batch %d: %v, want data or EIO", i, err)
		}
	}
	if failed == 0 || failed > len(want) || ok == 0 {
		t.Fatalf("--strict: %d batches failed with EIO, %d read; want 1..%d failures", failed, ok, len(want))
	}
}

// TestMountHangingSource serves a dataset from fake GCS through a proxy
// that hangs every shard download: the read fails with EIO within the
// configured fetch timeout, and once the source answers again the same read
// succeeds (after the failure memo's window).
func TestMountHangingSource(t *testing.T) {
	testkit.RequireFUSE(t)
	srv := fakeGCS(t, "robotics", map[string]string{"tiny_table/1.0.0": "testdata/datasets/tiny_table/1.0.0"})
	// a source that accepts shard requests and never answers them
	proxy := testkit.NewHangProxy(t, srv.URL(), func(p string) bool { return strings.Contains(p, ".tfrecord-") })

	cfg := filepath.Join(t.TempDir(), "mix.yaml")
	os.WriteFile(cfg, []byte("batch_size: 4\nimage_size: [32, 32]\ndatasets:\n  - source: gs://robotics/tiny_table/1.0.0\n    anonymous: true\n"), 0o644)
	mnt := t.TempDir()
	env := []string{"STORAGE_EMULATOR_HOST=" + strings.TrimPrefix(proxy.URL(), "http://")}
	dmn := startMount(t, mnt, env, "--config", cfg, "--cache-dir", t.TempDir(),
		"--fetch-stall", "300ms", "--fetch-timeout", "1s", "--readahead", "0")

	proxy.Hang.Store(true)
	start := time.Now()
	_, err := os.ReadFile(filepath.Join(mnt, "batches", "000000.npy"))
	if !errors.Is(err, syscall.EIO) {
		t.Fatalf("read with a hanging source: %v, want EIO", err)
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Fatalf("EIO took %v with --fetch-timeout 1s", d)
	}
	proxy.Hang.Store(false)
	// A failed shard is not asked again for min(--fetch-timeout, 10s) after
	// its fetch gave up, and the other shard's fetch may give up up to
	// --fetch-timeout + --fetch-stall after the EIO.
	time.Sleep(1300*time.Millisecond + time.Second)
	if _, err := os.ReadFile(filepath.Join(mnt, "batches", "000000.npy")); err != nil {
		t.Fatalf("read after the source recovered: %v\n%s", err, dmn.stderr())
	}
}

// TestMountLifecycle: a reader killed in the middle of its reads does not
// disturb the daemon, and SIGTERM unmounts and exits 0 while a file is
// still open, once --grace has passed.
func TestMountLifecycle(t *testing.T) {
	dir := t.TempDir()
	d := startMount(t, dir, nil, "--cache-dir", t.TempDir(), "--grace", "1s")
	path := filepath.Join(dir, "batches", "000050.npy")
	// dd reads in 4 KiB requests; kill it after it has started.
	dd := exec.Command("dd", "if="+path, "of=/dev/null", "bs=4k", "iflag=direct")
	stderr, _ := dd.StderrPipe()
	if err := dd.Start(); err != nil {
		t.Fatal(err)
	}
	dd.Process.Kill()
	io.Copy(io.Discard, stderr)
	dd.Wait()
	if b, err := os.ReadFile(path); err != nil || len(b) == 0 {
		t.Fatalf("read after a killed reader: %d bytes, %v", len(b), err)
	}
	f, err := os.Open(filepath.Join(dir, "batches", "000001.npy"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Read(make([]byte, 100)); err != nil {
		t.Fatal(err)
	}
	d.stop(t) // checks exit 0 within 20s and that nothing is left mounted
}

// TestWarm fetches a GCS mix's shards into the disk cache; a mount over
// that cache then reads without fetching a byte.
func TestWarm(t *testing.T) {
	srv := fakeGCS(t, "robotics", map[string]string{"tiny_bridge/1.0.0": "testdata/datasets/tiny_bridge/1.0.0"})
	env := []string{"STORAGE_EMULATOR_HOST=" + strings.TrimPrefix(srv.URL(), "http://")}
	cfg := filepath.Join(t.TempDir(), "mix.yaml")
	os.WriteFile(cfg, []byte("batch_size: 4\nimage_size: [32, 32]\ndatasets:\n  - source: gs://robotics/tiny_bridge/1.0.0\n    anonymous: true\n    image_key: steps/observation/image\n"), 0o644)
	cacheDir := t.TempDir()
	out, stderr, code := runOxefs(t, env, "warm", "--config", cfg, "--cache-dir", cacheDir)
	if code != 0 || !strings.Contains(out, "3 of 3 shards in the disk cache") {
		t.Fatalf("warm: exit %d\n%s\n%s", code, out, stderr)
	}
	shards, _ := filepath.Glob(filepath.Join(cacheDir, "files", "*", "tiny_bridge-train.tfrecord-*"))
	var n int
	for _, s := range shards {
		if !strings.HasSuffix(s, ".lock") {
			n++
		}
	}
	if n != 3 {
		t.Fatalf("%d train shards cached, want 3: %v", n, shards)
	}
	mnt := t.TempDir()
	startMount(t, mnt, env, "--config", cfg, "--cache-dir", cacheDir)
	if _, err := os.ReadFile(filepath.Join(mnt, "batches", "000000.npy")); err != nil {
		t.Fatal(err)
	}
	var stats struct {
		Disk struct{ Hits, Misses int64 } `json:"disk_cache"`
	}
	readJSON(t, filepath.Join(mnt, "stats.json"), &stats)
	if stats.Disk.Misses != 0 || stats.Disk.Hits == 0 {
		t.Fatalf("a mount over a warmed cache: %d disk cache misses, %d hits", stats.Disk.Misses, stats.Disk.Hits)
	}

	out, _, code = runOxefs(t, nil, "warm", "--cache-dir", t.TempDir())
	if code != 0 || !strings.Contains(out, "nothing to fetch") {
		t.Fatalf("warm of the local demo mix: exit %d, %s", code, out)
	}
}

// TestMountMemoryBound reads 200 batches of a 29-dataset synth mix (frames
// up to 480×640, one to three cameras) through a mount with --mem 512MiB,
// four readers at once, in both serving modes: the daemon's peak RSS
// (VmHWM, which counts the batches' memfd pages under passthrough) must
// stay under --mem + 256 MiB.
func TestMountMemoryBound(t *testing.T) {
	testkit.RequireFUSE(t)
	data := t.TempDir()
	if _, stderr, code := runOxefs(t, nil, "synth", data, "--episodes", "2", "--steps", "24"); code != 0 {
		t.Fatalf("synth: exit %d\n%s", code, stderr)
	}
	cfg := filepath.Join(data, "mix.yaml") // lists 10,000 batches
	cache := t.TempDir()
	for _, mode := range []string{"passthrough", "page-cache"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			args := []string{"--config", cfg, "--cache-dir", cache, "--mem", "512MiB"}
			if mode == "page-cache" {
				args = append(args, "--no-passthrough")
			}
			startMount(t, dir, nil, args...)
			var info struct {
				Train struct {
					Plan struct {
						Datasets []any `json:"datasets"`
					} `json:"plan"`
				} `json:"train"`
				Serving struct {
					Mode    string `json:"mode"`
					Refused string `json:"passthrough_refused"`
				} `json:"serving"`
			}
			readJSON(t, filepath.Join(dir, "info.json"), &info)
			if len(info.Train.Plan.Datasets) != 29 {
				t.Fatalf("the synth mix has %d datasets, want 29", len(info.Train.Plan.Datasets))
			}
			if info.Serving.Mode != mode {
				if mode == "passthrough" && info.Serving.Mode == "page-cache" && info.Serving.Refused != "" {
					t.Skipf("SKIPPING the passthrough half: the kernel refuses it here (%s)", info.Serving.Refused)
				}
				t.Fatalf("serving %q (%s), want %s", info.Serving.Mode, info.Serving.Refused, mode)
			}
			hashBatches(t, dir, "batches", 200, 4, 5)
			var stats struct {
				Memory struct {
					Peak   int64 `json:"peak_rss_bytes"`
					Shmem  int64 `json:"shmem_bytes"`
					Budget int64 `json:"budget_bytes"`
				} `json:"memory"`
				Samples map[string]int64 `json:"samples_per_dataset"`
			}
			readJSON(t, filepath.Join(dir, "stats.json"), &stats)
			t.Logf("%s: peak RSS %.0f MiB (shared memory included; %.0f MiB of it now) with --mem %.0f MiB", mode,
				float64(stats.Memory.Peak)/(1<<20), float64(stats.Memory.Shmem)/(1<<20), float64(stats.Memory.Budget)/(1<<20))
			if stats.Memory.Budget != 512<<20 {
				t.Fatalf("budget %d, want 512 MiB", stats.Memory.Budget)
			}
			if stats.Memory.Peak <= 0 || stats.Memory.Peak > 768<<20 {
				t.Fatalf("peak RSS %d bytes, bound 768 MiB", stats.Memory.Peak)
			}
			if mode == "passthrough" && stats.Memory.Shmem == 0 {
				t.Error("passthrough with no batch in shared memory")
			}
			if len(stats.Samples) != 29 {
				t.Fatalf("samples from %d datasets, want all 29", len(stats.Samples))
			}
		})
	}
}
