package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/oxefs/oxefs/internal/testkit"
)

func writeMixText(t *testing.T, yaml string) string {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "mix.yaml")
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestMountRefusesOffsetNoEpisodeSatisfies: an offset longer than every
// episode of a local dataset stops `oxefs mount` before it mounts, with a
// message naming the dataset, the offset and the longest episode.
func TestMountRefusesOffsetNoEpisodeSatisfies(t *testing.T) {
	testkit.RequireFUSE(t)
	table, _ := filepath.Abs("testdata/datasets/tiny_table/1.0.0")
	cfg := writeMixText(t, "datasets:\n  - name: table\n    source: "+table+"\n    offset: [30, 40]\n")
	dir := t.TempDir()
	stderr, code := mountRefused(t, dir, "--config", cfg, "--cache-dir", t.TempDir())
	if code == 0 {
		t.Fatal("mount accepted an offset no episode satisfies")
	}
	for _, want := range []string{`dataset "table"`, "offset [30, 40]", "longest of its 10 episodes has 14"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}

// mountRefused runs `oxefs mount dir args...`, which should exit without
// mounting, and returns its stderr and exit code. A daemon that mounts
// instead fails the test and is stopped.
func mountRefused(t *testing.T, dir string, args ...string) (string, int) {
	t.Helper()
	return mountRefusedEnv(t, dir, nil, args...)
}

// mountRefusedEnv is mountRefused with env added to the daemon's
// environment.
func mountRefusedEnv(t *testing.T, dir string, env []string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(oxefsBin, append([]string{"mount", dir}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	for {
		select {
		case err := <-exited:
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				return stderr.String(), ee.ExitCode()
			}
			if err != nil {
				t.Fatal(err)
			}
			return stderr.String(), 0
		case <-time.After(100 * time.Millisecond):
			if mounted(dir) {
				cmd.Process.Signal(syscall.SIGTERM)
				<-exited
				t.Fatalf("oxefs mounted %s instead of refusing the config", dir)
			}
		}
	}
}

// TestMountSparseLongEpisodes: with one episode of 24 long enough for the
// offset, and whole windows without any, every batch reads; the
// substitutions are counted.
func TestMountSparseLongEpisodes(t *testing.T) {
	bridge, _ := filepath.Abs("testdata/datasets/tiny_bridge/1.0.0")
	cfg := writeMixText(t, "batch_size: 8\nimage_size: [16, 16]\nwindow_shards: 1\ndatasets:\n  - source: "+bridge+
		"\n    image_key: steps/observation/image\n    offset: 13\n")
	dir := t.TempDir()
	startMount(t, dir, nil, "--config", cfg, "--cache-dir", t.TempDir())
	var info mountInfo
	readJSON(t, filepath.Join(dir, "info.json"), &info)
	if info.NumBatches != 3 {
		t.Fatalf("%d batches, want 3", info.NumBatches)
	}
	for i := range info.NumBatches {
		if _, err := os.ReadFile(filepath.Join(dir, "batches", fmt.Sprintf("%06d.npy", i))); err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
	}
	var stats struct {
		Substitutions map[string]int64 `json:"substitutions"`
		Samples       map[string]int64 `json:"samples_per_dataset"`
	}
	readJSON(t, filepath.Join(dir, "stats.json"), &stats)
	if stats.Substitutions["short_episode"] < 23 || stats.Samples["tiny_bridge"] != 24 {
		t.Fatalf("stats.json: substitutions %v, samples %v; want ≥ 23 short episodes substituted, 24 samples", stats.Substitutions, stats.Samples)
	}
}

// TestMountOffsetUnknownLengths: from a remote source without a length
// index the mount cannot know that no episode is long enough; info.json
// says episodes_too_short is unknown (null), and the first read fails with
// an explanation in stats.json and the log.
func TestMountOffsetUnknownLengths(t *testing.T) {
	testkit.RequireFUSE(t)
	srv := fakeGCS(t, "robotics", map[string]string{"tiny_table/1.0.0": "testdata/datasets/tiny_table/1.0.0"})
	cfg := writeMixText(t, "batch_size: 4\nimage_size: [16, 16]\ndatasets:\n  - name: table\n    source: gs://robotics/tiny_table/1.0.0\n    anonymous: true\n    offset: [30, 40]\n")
	dir := t.TempDir()
	env := []string{"STORAGE_EMULATOR_HOST=" + strings.TrimPrefix(srv.URL(), "http://")}
	d := startMount(t, dir, env, "--config", cfg, "--cache-dir", t.TempDir(), "--readahead", "0")
	var info struct {
		Train struct {
			Plan struct {
				Datasets []map[string]any `json:"datasets"`
			} `json:"plan"`
		} `json:"train"`
	}
	readJSON(t, filepath.Join(dir, "info.json"), &info)
	if ds := info.Train.Plan.Datasets; len(ds) != 1 || ds[0]["episodes_too_short"] != nil {
		t.Errorf("info.json datasets %v: want episodes_too_short null (not known)", ds)
	}
	_, err := os.ReadFile(filepath.Join(dir, "batches", "000000.npy"))
	if !errors.Is(err, syscall.EIO) {
		t.Fatalf("batch 0: %v, want EIO", err)
	}
	var stats struct {
		Unusable map[string]string `json:"unusable_datasets"`
	}
	readJSON(t, filepath.Join(dir, "stats.json"), &stats)
	want := []string{"no episode is long enough for offset [30, 40]", "longest seen: 14 steps"}
	for _, w := range want {
		if !strings.Contains(stats.Unusable["table"], w) {
			t.Errorf("stats.json unusable_datasets %v: want the table's reason saying %q", stats.Unusable, w)
		}
		if !strings.Contains(d.stderr(), w) {
			t.Errorf("the log does not say %q:\n%s", w, d.stderr())
		}
	}
}
