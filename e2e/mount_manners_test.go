package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/oxefs/oxefs/internal/testkit"
)

// writeMix writes a one-dataset mix of tiny_bridge with extra top-level
// lines and returns its path.
func writeMix(t *testing.T, extra string) string {
	t.Helper()
	src, _ := filepath.Abs("testdata/datasets/tiny_bridge/1.0.0")
	cfg := filepath.Join(t.TempDir(), "mix.yaml")
	text := extra + "datasets:\n  - source: " + src + "\n    image_key: steps/observation/image\n    val_split: val\n"
	if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfg
}

type viewInfo struct {
	NumBatches int64 `json:"num_batches"`
	MaxBatch   int64 `json:"max_batch"`
}

// TestMountNumBatches: num_batches bounds the train listing only; names past
// it plan on (later epochs, resume) up to info.json's max_batch. The val
// view is one pass: names past it do not exist.
func TestMountNumBatches(t *testing.T) {
	dir := t.TempDir()
	startMount(t, dir, nil, "--config", writeMix(t, "batch_size: 4\nimage_size: [32, 32]\nnum_batches: 4\n"), "--cache-dir", t.TempDir())
	var info struct {
		Train viewInfo  `json:"train"`
		Val   *viewInfo `json:"val"`
	}
	readJSON(t, filepath.Join(dir, "info.json"), &info)
	if info.Train.NumBatches != 4 || info.Val == nil {
		t.Fatalf("info.json: %+v", info)
	}
	if info.Train.MaxBatch < 1<<40 {
		t.Fatalf("info.json train.max_batch = %d, want the plan's bound (≥ 2^40)", info.Train.MaxBatch)
	}
	ents, err := os.ReadDir(filepath.Join(dir, "batches"))
	if err != nil || len(ents) != 8 {
		t.Fatalf("batches/ lists %d entries (%v), want 4 .npy + 4 .json", len(ents), err)
	}
	read := func(view string, n int64, ext string) ([]byte, error) {
		return os.ReadFile(filepath.Join(dir, view, fmt.Sprintf("%06d.%s", n, ext)))
	}
	first, err := read("batches", 0, "npy")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int64{4, 9, 1234567, info.Train.MaxBatch} {
		for _, ext := range []string{"npy", "json"} {
			b, err := read("batches", n, ext)
			if err != nil {
				t.Fatalf("train batch %d.%s past num_batches: %v", n, ext, err)
			}
			if ext == "npy" && (len(b) != len(first) || string(b) == string(first)) {
				t.Fatalf("train batch %d: %d bytes, same as batch 0: %v", n, len(b), string(b) == string(first))
			}
		}
	}
	for _, tc := range []struct {
		view string
		n    int64
	}{{"batches", info.Train.MaxBatch + 1}, {"val/batches", info.Val.NumBatches}, {"val/batches", info.Val.NumBatches + 5}} {
		if _, err := read(tc.view, tc.n, "npy"); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s/%d.npy: %v, want ENOENT", tc.view, tc.n, err)
		}
	}
	if _, err := read("val/batches", info.Val.NumBatches-1, "npy"); err != nil {
		t.Errorf("last val batch: %v", err)
	}
}

// TestMountListingBuildsNothing: ls -l of 10,000 batches (20,000 entries:
// a readdir and a stat of each) builds no batch; json.load of a .json file,
// which stats as size 0, still reads it whole.
func TestMountListingBuildsNothing(t *testing.T) {
	dir := t.TempDir()
	startMount(t, dir, nil, "--config", writeMix(t, "batch_size: 4\nimage_size: [32, 32]\nnum_batches: 10000\n"), "--cache-dir", t.TempDir())
	start := time.Now()
	ents, err := os.ReadDir(filepath.Join(dir, "batches"))
	if err != nil || len(ents) != 20000 {
		t.Fatalf("batches/: %d entries, %v", len(ents), err)
	}
	for _, e := range ents {
		st, err := os.Lstat(filepath.Join(dir, "batches", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(e.Name(), ".json") && st.Size() != 0 {
			t.Fatalf("%s: size %d, want 0 (a .json size is not known before its batch is built)", e.Name(), st.Size())
		}
	}
	took := time.Since(start)
	t.Logf("readdir + lstat of %d entries: %v", len(ents), took)
	var stats struct {
		Train struct {
			Requests int64 `json:"requests"`
			Builds   int64 `json:"builds"`
		} `json:"train"`
	}
	readJSON(t, filepath.Join(dir, "stats.json"), &stats)
	if stats.Train.Builds != 0 || stats.Train.Requests != 0 {
		t.Fatalf("ls -l started %d builds (%d requests), want none", stats.Train.Builds, stats.Train.Requests)
	}
	if took > 20*time.Second {
		t.Fatalf("readdir + lstat of 20,000 entries took %v", took)
	}
	py := findPython(t, "numpy")
	out, err := exec.Command(py, "-c", `
import json, sys
m = json.load(open(sys.argv[1]))
assert len(m["dataset_name"]) == 4, m
print("ok")
`, filepath.Join(dir, "batches", "009999.json")).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "ok") {
		t.Fatalf("json.load of a .json file: %v\n%s", err, out)
	}
}

// TestMountRefusesStacking: a second mount on a live mount's directory is
// refused naming the first daemon's pid, and the first goes on serving.
func TestMountRefusesStacking(t *testing.T) {
	dir := t.TempDir()
	first := startMount(t, dir, nil, "--cache-dir", t.TempDir())
	stderr, code := runRefused(t, "mount", dir, "--cache-dir", t.TempDir())
	want := fmt.Sprintf("already an oxefs mount, pid %d", first.cmd.Process.Pid)
	if code == 0 || !strings.Contains(stderr, want) {
		t.Fatalf("second mount: exit %d, stderr lacks %q:\n%s", code, want, stderr)
	}
	var info struct{ PID int }
	readJSON(t, filepath.Join(dir, "info.json"), &info)
	if info.PID != first.cmd.Process.Pid {
		t.Fatalf("info.json pid %d, want the first daemon's %d", info.PID, first.cmd.Process.Pid)
	}
	if _, err := os.ReadFile(filepath.Join(dir, "batches", "000000.npy")); err != nil {
		t.Fatalf("the first mount after a refused second: %v", err)
	}
}

// TestMountNonEmpty: mounting over a directory with files in it is refused
// unless --nonempty; the files are there again after the unmount.
func TestMountNonEmpty(t *testing.T) {
	testkit.RequireFUSE(t)
	dir := t.TempDir()
	keep := filepath.Join(dir, "keep.txt")
	if err := os.WriteFile(keep, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	stderr, code := runRefused(t, "mount", dir, "--cache-dir", t.TempDir())
	if code == 0 || !strings.Contains(stderr, "not empty") || !strings.Contains(stderr, "--nonempty") {
		t.Fatalf("mount over a non-empty directory: exit %d\n%s", code, stderr)
	}
	if mounted(dir) {
		t.Fatal("mounted over a non-empty directory without --nonempty")
	}
	d := startMount(t, dir, nil, "--cache-dir", t.TempDir(), "--nonempty")
	if _, err := os.Stat(keep); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("keep.txt under the mount: %v", err)
	}
	d.stop(t)
	if b, err := os.ReadFile(keep); err != nil || string(b) != "mine" {
		t.Fatalf("keep.txt after unmount: %q %v", b, err)
	}
}

// TestMountCleansStaleWithLog: a daemon killed with SIGKILL leaves a dead
// mount; the next mount there cleans it and says so in its log.
func TestMountCleansStaleWithLog(t *testing.T) {
	dir := t.TempDir()
	cacheDir := t.TempDir()
	d := startMount(t, dir, nil, "--cache-dir", cacheDir)
	d.cmd.Process.Kill()
	<-d.exited
	var sfs syscall.Statfs_t
	if err := syscall.Statfs(dir, &sfs); !errors.Is(err, syscall.ENOTCONN) {
		t.Fatalf("after SIGKILL: statfs %v, want ENOTCONN", err)
	}
	again := startMount(t, dir, nil, "--cache-dir", cacheDir)
	if log := again.stderr(); !strings.Contains(log, "stale mount") || !strings.Contains(log, dir) {
		t.Fatalf("the log does not say a stale mount was cleaned:\n%s", log)
	}
	if _, err := os.ReadFile(filepath.Join(dir, "batches", "000000.npy")); err != nil {
		t.Fatal(err)
	}
}

// TestMountSignalKeepsMmapReaders: SIGTERM while numpy holds a batch mapped
// (mmap_mode="r") detaches the mount but serves the mapping until it is
// closed: the reader reads every byte (no SIGBUS), then the daemon exits 0.
func TestMountSignalKeepsMmapReaders(t *testing.T) {
	py := findPython(t, "numpy")
	cfg := writeMix(t, "batch_size: 16\nimage_size: [256, 256]\nnum_batches: 4\n")
	// The expected bytes come from a second mount of the same mix, so that
	// nothing of the batch is in the first mount's page cache before the
	// signal: the reader's page faults must reach the detached daemon.
	ref := t.TempDir()
	startMount(t, ref, nil, "--config", cfg, "--cache-dir", t.TempDir())
	var info mountInfo
	readJSON(t, filepath.Join(ref, "info.json"), &info)
	arrayBytes := 1
	for _, d := range info.Frames.Shape {
		arrayBytes *= d
	}
	whole, err := os.ReadFile(filepath.Join(ref, "batches", "000001.npy"))
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("%x", sha256.Sum256(whole[len(whole)-arrayBytes:]))

	dir := t.TempDir()
	d := startMount(t, dir, nil, "--config", cfg, "--cache-dir", t.TempDir(), "--grace", "5m")
	reader := exec.Command(py, "-u", "-c", `
import hashlib, os, sys
import numpy as np
mnt = sys.argv[1]
m = np.load(os.path.join(mnt, "batches", "000001.npy"), mmap_mode="r")
# What holds the file, for the failure message: descriptors and mappings.
fds = []
for fd in os.listdir("/proc/self/fd"):
    try:
        fds.append(os.readlink("/proc/self/fd/" + fd))
    except OSError:
        pass  # the descriptor listdir itself used
maps = [line.split()[-1] for line in open("/proc/self/maps") if line.rstrip().endswith(".npy")]
print("holding: fds", [f for f in fds if f.endswith(".npy")], "maps", maps, file=sys.stderr, flush=True)
print("mapped", flush=True)
sys.stdin.readline()
print("detached" if not os.path.ismount(mnt) else "still mounted", flush=True)
print("sha", hashlib.sha256(m.tobytes()).hexdigest(), int(m.sum()), flush=True)
`, dir)
	stdin, _ := reader.StdinPipe()
	stdout, _ := reader.StdoutPipe()
	var readerErr bytes.Buffer
	reader.Stderr = &readerErr
	if err := reader.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stdout)
	if !lines.Scan() || lines.Text() != "mapped" {
		reader.Process.Kill()
		reader.Wait()
		t.Fatalf("reader: %q %v\n%s", lines.Text(), lines.Err(), readerErr.String())
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	// The mount leaves the namespace before the daemon exits.
	testkit.WaitFor(t, 10*time.Second, 20*time.Millisecond, "the mount to be detached", func() bool { return !mounted(dir) })
	// The reader goes on only once the daemon has said what it saw after
	// the detach: a reader let go as soon as the mount left the namespace
	// may finish and close the file before a slow daemon looks, and the
	// daemon then rightly finds nothing open ("signal: unmounted").
	testkit.WaitFor(t, 20*time.Second, 20*time.Millisecond, "the daemon to log what it found open after the detach", func() bool {
		return strings.Contains(d.stderr(), "signal: detached") || strings.Contains(d.stderr(), "signal: unmounted")
	})
	if _, err := io.WriteString(stdin, "go\n"); err != nil {
		t.Fatal(err)
	}
	var got []string
	for lines.Scan() {
		got = append(got, lines.Text())
	}
	if err := reader.Wait(); err != nil {
		t.Fatalf("reader across SIGTERM: %v (output %q, stderr %s)\ndaemon:\n%s", err, got, readerErr.String(), d.stderr())
	}
	if len(got) != 2 || got[0] != "detached" || !strings.HasPrefix(got[1], "sha "+want+" ") {
		t.Fatalf("reader output %q, want detached and sha %s", got, want)
	}
	select {
	case err := <-d.exited:
		if err != nil {
			t.Fatalf("daemon exit after its last reader closed: %v\n%s", err, d.stderr())
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("daemon still running 20s after its last reader closed (--grace 5m):\n%s", d.stderr())
	}
	// numpy opens the file twice (np.load reads the header through one
	// descriptor, the memmap opens another); the kernel's release of the
	// first is asynchronous, so the daemon may still count it at the signal.
	log := d.stderr()
	if !regexp.MustCompile(`detached; serving [12] open files`).MatchString(log) || !strings.Contains(log, "last open file was closed") {
		t.Errorf("the daemon log does not say it detached, served the open file and saw it closed:\n%s\nreader: %s", log, readerErr.String())
	}
}

// TestMountSignalNoOpenFiles: with no file open, SIGTERM exits 0 at once,
// not after the grace period.
func TestMountSignalNoOpenFiles(t *testing.T) {
	dir := t.TempDir()
	d := startMount(t, dir, nil, "--cache-dir", t.TempDir(), "--grace", "5m")
	if _, err := os.ReadFile(filepath.Join(dir, "batches", "000000.npy")); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-d.exited:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v\n%s", err, d.stderr())
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("no exit 20s after SIGTERM with no open files (--grace 5m):\n%s", d.stderr())
	}
	t.Logf("exited %v after SIGTERM", time.Since(start))
	if mounted(dir) {
		t.Fatal("still mounted after exit")
	}
}

// runRefused runs an oxefs command that should fail at once and returns its
// stderr and exit code; one still running after 60s (a mount that was not
// refused) is stopped and fails the test.
func runRefused(t *testing.T, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, oxefsBin, args...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("oxefs %v was still running after 60s (not refused):\n%s", args, stderr.String())
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return stderr.String(), cmd.ProcessState.ExitCode()
}
