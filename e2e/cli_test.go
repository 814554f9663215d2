package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// oneLine fails the test unless a failed command printed exactly one line
// on stderr, containing every want, and no usage text anywhere.
func oneLine(t *testing.T, stdout, stderr string, code int, want ...string) {
	t.Helper()
	if code == 0 {
		t.Fatalf("exit 0, want a failure; stderr:\n%s", stderr)
	}
	if strings.Contains(stdout+stderr, "Usage:") {
		t.Errorf("usage printed on an error:\nstdout:\n%s\nstderr:\n%s", stdout, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	if len(lines) != 1 {
		t.Errorf("stderr has %d lines, want 1:\n%s", len(lines), stderr)
	}
	for _, w := range want {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr lacks %q:\n%s", w, stderr)
		}
	}
}

// TestHelpShowsReadableDefaults: sizes in --help are human-readable, and
// every flag with a default shows it.
func TestHelpShowsReadableDefaults(t *testing.T) {
	out, errOut, code := runOxefs(t, nil, "mount", "--help")
	if code != 0 {
		t.Fatalf("mount --help: exit %d: %s", code, errOut)
	}
	if !regexp.MustCompile(`--mem=[0-9.]+[KMGT]iB\s`).MatchString(out) {
		t.Errorf("mount --help shows --mem's default in raw bytes:\n%s", out)
	}
	if !strings.Contains(out, "--disk=50GiB") {
		t.Errorf("mount --help lacks --disk=50GiB:\n%s", out)
	}
	out, _, _ = runOxefs(t, nil, "synth", "--help")
	if !strings.Contains(out, "--datasets=29") {
		t.Errorf("synth --help shows no default for --datasets:\n%s", out)
	}
}

// TestMissingConfigIsOneLine: a --config that does not exist is one line
// naming the path, not 40 lines of usage first.
func TestMissingConfigIsOneLine(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope.yaml")
	for _, cmd := range []string{"mount", "warm", "bench"} {
		t.Run(cmd, func(t *testing.T) {
			args := []string{cmd, "--config", missing, "--cache-dir", t.TempDir()}
			if cmd == "mount" {
				args = append(args, filepath.Join(t.TempDir(), "mnt"))
			}
			stdout, stderr, code := runOxefs(t, nil, args...)
			oneLine(t, stdout, stderr, code, "--config "+missing, "no such file")
		})
	}
}

// TestFlagErrors: flag values that cannot work are refused before anything
// is opened, each with one line naming the flag, the value and what would
// work.
func TestFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"mem above the machine", []string{"--mem", "1000TiB"}, []string{"--mem 1000.0 TiB", "more than", "memory"}},
		{"mem of 1 byte", []string{"--mem", "1"}, []string{"--mem 1 B is too small", "one batch of 16×2×64×64×3", "use --mem ≥ 3.0 MiB"}},
		{"mem of 8 bytes", []string{"--mem", "8"}, []string{"--mem 8 B is too small", "use --mem ≥ 3.0 MiB"}},
		{"fetch-timeout 0", []string{"--fetch-timeout", "0"}, []string{"--fetch-timeout 0s", "must be more than 0"}},
		{"negative fetch-stall", []string{"--fetch-stall=-1s"}, []string{"--fetch-stall -1s", "must be more than 0"}},
		{"no workers", []string{"--workers", "0"}, []string{"--workers 0", "at least 1"}},
		{"negative readahead", []string{"--readahead=-1"}, []string{"--readahead -1", "0 or more"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"--log-level", "warn", "warm", "--cache-dir", t.TempDir()}, tc.args...)
			stdout, stderr, code := runOxefs(t, nil, args...)
			oneLine(t, stdout, stderr, code, tc.want...)
		})
	}
}

// TestBenchWithoutConfig: `oxefs bench` with neither a mount nor --config
// measures the built-in demo mix in-process, as its help says.
func TestBenchWithoutConfig(t *testing.T) {
	out := t.TempDir()
	stdout, stderr, code := runOxefs(t, nil, "bench", "--cache-dir", t.TempDir(), "--readers", "1",
		"--warmup", "0", "--batches", "2", "--out", out, "--json")
	if code != 0 {
		t.Fatalf("bench: exit %d\n%s", code, stderr)
	}
	var s struct {
		Batches int64 `json:"batches"`
	}
	if err := json.Unmarshal([]byte(stdout), &s); err != nil || s.Batches != 2 {
		t.Fatalf("summary %q: %v, want 2 batches", stdout, err)
	}
	if _, err := os.Stat(filepath.Join(out, "summary.json")); err != nil {
		t.Fatal(err)
	}
}

// TestProgressInLogs: with stderr redirected (a file, a pipe), progress is
// plain lines, never the \r frames of a terminal bar.
func TestProgressInLogs(t *testing.T) {
	dir := t.TempDir()
	_, stderr, code := runOxefs(t, nil, "synth", "--datasets", "1", "--episodes", "2", "--steps", "2", dir)
	if code != 0 {
		t.Fatalf("synth: exit %d\n%s", code, stderr)
	}
	if strings.Contains(stderr, "\r") {
		t.Errorf("progress wrote \\r frames into a redirected stderr:\n%q", stderr)
	}
	if !strings.Contains(stderr, "synth: 1 datasets: 4/4 episodes") {
		t.Errorf("no final progress line on stderr:\n%q", stderr)
	}
}

// TestSourceHints: a source that is a directory above datasets lists them;
// a GCS source without credentials suggests anonymous access.
func TestSourceHints(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		want []string
	}{
		{"dataset's parent", nil, []string{"testdata/datasets/tiny_table"},
			[]string{"no dataset_info.json", "datasets below it: 1.0.0", "tiny_table/1.0.0"}},
		{"datasets' root", nil, []string{"testdata/datasets"},
			[]string{"datasets below it: tiny_bridge/1.0.0, tiny_kuka/1.0.0, tiny_table/1.0.0"}},
		{"gcs without credentials", []string{"GOOGLE_APPLICATION_CREDENTIALS=" + filepath.Join(t.TempDir(), "none.json"), "STORAGE_EMULATOR_HOST="},
			[]string{"gs://robotics/tiny_kuka/1.0.0"}, []string{"anonymous: true", "--anonymous"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A small --disk: a host with less free space than the default
			// would add a warning line that is not what this test is about.
			args := append([]string{"inspect", "--cache-dir", t.TempDir(), "--disk", "1GiB"}, tc.args...)
			stdout, stderr, code := runOxefs(t, tc.env, args...)
			oneLine(t, stdout, stderr, code, tc.want...)
		})
	}
}

func TestVersion(t *testing.T) {
	out, _, code := runOxefs(t, nil, "version")
	if code != 0 || !strings.HasPrefix(out, "oxefs ") {
		t.Fatalf("exit %d, output %q", code, out)
	}
}

// TestHelpPlaceholdersAndSummaries: placeholders in --help do not read as
// defaults (--ranks=RANKS, --config=FILE, not --ranks=0-7 or
// --config=mix.yaml), and inspect's one-liner names both formats and the
// remote stores.
func TestHelpPlaceholdersAndSummaries(t *testing.T) {
	out, errOut, code := runOxefs(t, nil, "mount", "--help")
	if code != 0 {
		t.Fatalf("mount --help: exit %d: %s", code, errOut)
	}
	for _, bad := range []string{"--ranks=0-7", "--config=mix.yaml"} {
		if strings.Contains(out, bad) {
			t.Errorf("mount --help shows %s, which reads as a default:\n%s", bad, out)
		}
	}
	for _, want := range []string{"--ranks=RANKS", "--config=FILE"} {
		if !strings.Contains(out, want) {
			t.Errorf("mount --help lacks %s:\n%s", want, out)
		}
	}
	out, errOut, code = runOxefs(t, nil, "--help")
	if code != 0 {
		t.Fatalf("--help: exit %d: %s", code, errOut)
	}
	i := strings.Index(out, "inspect <source>")
	if i < 0 {
		t.Fatalf("--help lacks inspect:\n%s", out)
	}
	summary := strings.Join(strings.Fields(out[i:min(len(out), i+300)]), " ")
	for _, want := range []string{"RLDS", "LeRobot", "gs://", "s3://", "Hugging Face Hub"} {
		if !strings.Contains(summary, want) {
			t.Errorf("inspect's summary lacks %q: %s", want, summary)
		}
	}
}

// TestDebugLogBuildLines: --log-level debug logs a line per batch built,
// with its view, index and build time.
func TestDebugLogBuildLines(t *testing.T) {
	dir := t.TempDir()
	d := startMount(t, dir, nil, "--cache-dir", t.TempDir(), "--readahead", "0")
	if _, err := os.ReadFile(filepath.Join(dir, "batches", "000002.npy")); err != nil {
		t.Fatal(err)
	}
	d.stop(t)
	if strings.Contains(d.stderr(), "batch built") {
		t.Errorf("a batch build logged at info level:\n%s", d.stderr())
	}

	dir = t.TempDir()
	d = startMount(t, dir, nil, "--log-level", "debug", "--cache-dir", t.TempDir(), "--readahead", "0")
	if _, err := os.ReadFile(filepath.Join(dir, "batches", "000002.npy")); err != nil {
		t.Fatal(err)
	}
	d.stop(t)
	if !regexp.MustCompile(`level=DEBUG msg="batch built" view=train batch=2 took=\S+`).MatchString(d.stderr()) {
		t.Errorf("--log-level debug: no line for batch 2's build:\n%s", d.stderr())
	}
}
