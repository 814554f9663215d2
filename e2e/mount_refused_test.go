package e2e

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMountRefusedSourceBoundedAndLogged: a mix of many gs:// datasets
// whose endpoint refuses every connection (STORAGE_EMULATOR_HOST at a
// closed port) fails the mount within about one fetch's bound
// (--fetch-timeout + --fetch-stall), not one per wave of datasets opened
// together, and logs its retries at warn level while it tries: a line per
// backoff step of a source, naming the source and the address to check.
func TestMountRefusedSourceBoundedAndLogged(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()

	const (
		datasets = 48 // six waves of the eight datasets opened at once
		timeout  = 3 * time.Second
		stall    = time.Second
		promise  = timeout + stall
	)
	var b strings.Builder
	b.WriteString("batch_size: 8\nimage_size: [32, 32]\ndatasets:\n")
	for i := range datasets {
		fmt.Fprintf(&b, "  - source: gs://robotics/ds%d/1.0.0\n    anonymous: true\n    image_key: steps/observation/image\n", i)
	}
	cfg := filepath.Join(t.TempDir(), "mix.yaml")
	if err := os.WriteFile(cfg, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	stderr, code := mountRefusedEnv(t, t.TempDir(), []string{"STORAGE_EMULATOR_HOST=" + closed},
		"--config", cfg, "--cache-dir", t.TempDir(), "--fetch-timeout", timeout.String(), "--fetch-stall", stall.String())
	took := time.Since(start)
	if code == 0 {
		t.Fatal("mounted with every source refusing connections")
	}
	t.Logf("refused after %v", took.Round(time.Millisecond))
	// One bound, with room for a loaded machine: waves of eight would take
	// six bounds (24 s).
	if took > 3*promise {
		t.Errorf("the mount took %v to give up; the bound is --fetch-timeout + --fetch-stall = %v", took, promise)
	}
	for _, w := range []string{"giving up after", "connection refused", "more datasets not opened"} {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr lacks %q:\n%s", w, stderr)
		}
	}
	var warns []string
	for line := range strings.Lines(stderr) {
		if strings.Contains(line, "level=WARN") && strings.Contains(line, "retrying") {
			warns = append(warns, line)
		}
	}
	if len(warns) == 0 {
		t.Fatalf("no warn line while the source was retried:\n%s", stderr)
	}
	for _, w := range []string{"source=gs://robotics/ds", "attempt=1", "STORAGE_EMULATOR_HOST=" + closed, "gives_up_in="} {
		if !strings.Contains(strings.Join(warns, ""), w) {
			t.Errorf("the warn lines lack %q:\n%s", w, strings.Join(warns, ""))
		}
	}
	// Once per source per backoff step: at most a line per attempt of each
	// of the (at most eight) sources tried.
	perSource := map[string]int{}
	for _, line := range warns {
		src := line[strings.Index(line, "source="):]
		src = src[:strings.IndexByte(src, ' ')]
		perSource[src]++
	}
	if len(perSource) > 8 {
		t.Errorf("%d sources logged retries; only the eight opened at once should have been tried", len(perSource))
	}
	for src, n := range perSource {
		if n > 8 {
			t.Errorf("%s: %d warn lines in %v: more than one per backoff step", src, n, promise)
		}
	}
	t.Logf("%d warn lines from %d sources, e.g. %s", len(warns), len(perSource), warns[0])
}
