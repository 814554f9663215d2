package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/oxefs/oxefs/internal/testkit"
)

// sigterm sends SIGTERM to the daemon and returns its exit error and how
// long it took to exit; it fails the test after 30s.
func (d *daemon) sigterm(t *testing.T) (error, time.Duration) {
	t.Helper()
	start := time.Now()
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-d.exited:
		return err, time.Since(start)
	case <-time.After(30 * time.Second):
		d.cmd.Process.Kill()
		<-d.exited
		t.Fatalf("oxefs mount did not exit within 30s of SIGTERM:\n%s", d.stderr())
		return nil, 0
	}
}

// TestMountShutdownDuringBuilds sends SIGTERM while readers keep builds in
// flight, 20 times: the daemon must exit with status 0, without a panic,
// within 5s every time (builds are cancelled, not waited for).
func TestMountShutdownDuringBuilds(t *testing.T) {
	testkit.RequireFUSE(t)
	cacheDir := t.TempDir()
	for trial := range 20 {
		dir := t.TempDir()
		d := startMount(t, dir, nil, "--cache-dir", cacheDir, "--workers", "1", "--readahead", "4")
		const readers = 6
		var wg sync.WaitGroup
		first := make(chan struct{}, readers)
		for r := range readers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := r; ; i += readers {
					if _, err := os.ReadFile(filepath.Join(dir, "batches", fmt.Sprintf("%06d.npy", i%100))); err != nil {
						return // the mount went away
					}
					if i == r {
						first <- struct{}{}
					}
				}
			}()
		}
		for range readers {
			<-first // every reader is going: builds are in flight
		}
		err, took := d.sigterm(t)
		wg.Wait()
		log := d.stderr()
		if err != nil || strings.Contains(log, "panic") {
			t.Fatalf("trial %d: exit %v after SIGTERM during builds:\n%s", trial, err, log)
		}
		if took > 5*time.Second {
			t.Fatalf("trial %d: exit took %v after SIGTERM, want under 5s", trial, took)
		}
		if mounted(dir) {
			t.Fatalf("trial %d: %s still mounted", trial, dir)
		}
	}
}

// TestMountShutdownCancelsSlowBuild: a slow build (a 512-sample batch of
// 256x256 frames on one worker) that no one waits for any more is
// cancelled at SIGTERM: the daemon exits within 5s.
func TestMountShutdownCancelsSlowBuild(t *testing.T) {
	testkit.RequireFUSE(t)
	data := t.TempDir()
	if _, stderr, code := runOxefs(t, nil, "synth", data, "--datasets", "2", "--episodes", "4", "--steps", "20"); code != 0 {
		t.Fatalf("synth: exit %d\n%s", code, stderr)
	}
	mixYAML, err := os.ReadFile(filepath.Join(data, "mix.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(data, "big.yaml")
	if err := os.WriteFile(cfg, []byte(strings.Replace(string(mixYAML), "batch_size: 64", "batch_size: 512", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	d := startMount(t, dir, nil, "--config", cfg, "--cache-dir", t.TempDir(), "--workers", "1", "--readahead", "8", "--mem", "4GiB")
	// A reader reads batch 0 and goes: its readahead builds go on for no
	// one.
	var stats struct {
		Train struct {
			Builds int64 `json:"builds"`
		} `json:"train"`
	}
	f, err := os.Open(filepath.Join(dir, "batches", "000000.npy"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Read(make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	f.Close()
	readJSON(t, filepath.Join(dir, "stats.json"), &stats)
	if stats.Train.Builds < 2 {
		t.Fatalf("%d builds started, want the batch and its readahead", stats.Train.Builds)
	}
	err, took := d.sigterm(t)
	if err != nil || strings.Contains(d.stderr(), "panic") {
		t.Fatalf("exit %v after SIGTERM:\n%s", err, d.stderr())
	}
	t.Logf("exit %v after SIGTERM with readahead builds in flight", took)
	if took > 5*time.Second {
		t.Fatalf("exit took %v after SIGTERM, want under 5s", took)
	}
}
