package e2e

import (
	"bufio"
	"encoding/json"
	"encoding/xml"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type benchLine struct {
	Index    int64          `json:"idx"`
	Seconds  float64        `json:"dt_s"`
	Reader   int            `json:"reader"`
	Warmup   bool           `json:"is_warmup"`
	Counts   map[string]int `json:"dataset_counts"`
	Dominant string         `json:"dominant_dataset"`
}

func readBenchLines(t *testing.T, path string) []benchLine {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []benchLine
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var l benchLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("%s: %v: %s", path, err, sc.Text())
		}
		out = append(out, l)
	}
	return out
}

// TestBenchMount runs `oxefs bench` on a demo mount and checks every file
// it writes, then `oxefs bench` on the same mix in-process: both must see
// the same dataset counts in every batch.
func TestBenchMount(t *testing.T) {
	dir := t.TempDir()
	cacheDir := t.TempDir()
	startMount(t, dir, nil, "--cache-dir", cacheDir)
	out := t.TempDir()
	stdout, stderr, code := runOxefs(t, nil, "bench", dir, "--readers", "3", "--warmup", "4", "--batches", "30", "--out", out, "--json")
	if code != 0 {
		t.Fatalf("bench: exit %d\n%s", code, stderr)
	}
	var s struct {
		Batches     int64              `json:"batches"`
		BatchesPerS float64            `json:"batches_per_s"`
		SamplesPerS float64            `json:"samples_per_s"`
		Latency     map[string]float64 `json:"latency"`
		FirstBatch  float64            `json:"time_to_first_batch_s"`
		PeakRSS     int64              `json:"daemon_peak_rss_bytes"`
		Shares      map[string]float64 `json:"shares"`
		Targets     map[string]float64 `json:"targets"`
		MaxDev      *float64           `json:"max_share_deviation"`
	}
	if err := json.Unmarshal([]byte(stdout), &s); err != nil {
		t.Fatalf("--json output: %v\n%s", err, stdout)
	}
	if s.Batches != 30 || s.BatchesPerS <= 0 || s.SamplesPerS <= 0 || s.FirstBatch <= 0 || s.PeakRSS <= 0 || s.MaxDev == nil {
		t.Errorf("summary: %+v", s)
	}
	if !(s.Latency["p50_s"] > 0 && s.Latency["p50_s"] <= s.Latency["p90_s"] && s.Latency["p90_s"] <= s.Latency["p99_s"] && s.Latency["p99_s"] <= s.Latency["max_s"]) {
		t.Errorf("latency percentiles: %v", s.Latency)
	}
	var sum float64
	for _, v := range s.Shares {
		sum += v
	}
	if math.Abs(sum-1) > 1e-9 || len(s.Shares) != 3 || len(s.Targets) != 3 {
		t.Errorf("shares %v (sum %v), targets %v", s.Shares, sum, s.Targets)
	}

	lines := readBenchLines(t, filepath.Join(out, "batch_times.jsonl"))
	measured := 0
	for i, l := range lines {
		if l.Index != int64(i) || l.Seconds <= 0 || l.Reader != i%3 || l.Dominant == "" || len(l.Counts) == 0 {
			t.Fatalf("line %d: %+v", i, l)
		}
		if l.Warmup != (i < 4) {
			t.Fatalf("line %d: is_warmup %v", i, l.Warmup)
		}
		if !l.Warmup {
			measured++
		}
	}
	if measured != 30 {
		t.Fatalf("%d measured lines, want 30", measured)
	}
	mix, err := os.ReadFile(filepath.Join(out, "mixture_summary.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"measured_batches: 30", "unique_dominant_datasets:", "dominant_switch_rate:", "shares:", "tiny_bridge", "tiny_table", "tiny_kuka"} {
		if !strings.Contains(string(mix), want) {
			t.Errorf("mixture_summary.txt lacks %q:\n%s", want, mix)
		}
	}
	for _, name := range []string{"mixture_over_time.svg", "mixture_shares.svg", "latency.svg"} {
		f, err := os.Open(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		dec := xml.NewDecoder(f)
		elems := 0
		for {
			tok, err := dec.Token()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%s is not XML: %v", name, err)
			}
			if se, ok := tok.(xml.StartElement); ok {
				if elems == 0 && se.Name.Local != "svg" {
					t.Fatalf("%s: root <%s>", name, se.Name.Local)
				}
				elems++
			}
		}
		f.Close()
		if elems < 30 {
			t.Errorf("%s has only %d elements", name, elems)
		}
	}

	// The same mix in-process (bench with neither a mount nor --config
	// builds the built-in demo mix): the same batches, so the same counts.
	out2 := t.TempDir()
	if _, stderr, code := runOxefs(t, nil, "bench", "--cache-dir", t.TempDir(), "--readers", "2", "--warmup", "4", "--batches", "30", "--out", out2); code != 0 {
		t.Fatalf("bench in-process: exit %d\n%s", code, stderr)
	}
	inproc := readBenchLines(t, filepath.Join(out2, "batch_times.jsonl"))
	if len(inproc) != len(lines) {
		t.Fatalf("%d in-process lines, %d through the mount", len(inproc), len(lines))
	}
	for i := range lines {
		a, b := lines[i].Counts, inproc[i].Counts
		if len(a) != len(b) {
			t.Fatalf("batch %d: counts %v through the mount, %v in-process", i, a, b)
		}
		for d, c := range a {
			if b[d] != c {
				t.Fatalf("batch %d: counts %v through the mount, %v in-process", i, a, b)
			}
		}
	}
}

func TestBenchErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", t.TempDir(), "--config", "testdata/manifest.json"}, "not both"},
		{[]string{"bench", t.TempDir()}, "not an oxefs mount"},
		{[]string{"bench", "--config", "testdata/manifest.json", "--cache-dir", t.TempDir()}, "mix config"},
	} {
		_, stderr, code := runOxefs(t, nil, tc.args...)
		if code == 0 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want an error with %q", tc.args, code, stderr, tc.want)
		}
	}
}

// TestBenchRanksMount: `oxefs bench` on the top of a --ranks mount points
// at MNT/rank/R instead of failing on a missing file, and on a rank's view
// warns that the build flags it was given (--workers) are the daemon's,
// not its own.
func TestBenchRanksMount(t *testing.T) {
	dir := t.TempDir()
	startMount(t, dir, nil, "--cache-dir", t.TempDir(), "--world", "2", "--ranks", "0-1", "--mem", "512MiB")
	_, stderr, code := runOxefs(t, nil, "bench", dir, "--out", t.TempDir())
	oneLine(t, "", stderr, code, "--ranks", filepath.Join(dir, "rank", "0"))
	_, stderr, code = runOxefs(t, nil, "bench", filepath.Join(dir, "rank", "1"), "--workers", "2", "--warmup", "0", "--batches", "2", "--out", t.TempDir())
	if code != 0 {
		t.Fatalf("bench rank/1: exit %d\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "level=WARN") || !strings.Contains(stderr, "--workers") || !strings.Contains(stderr, "ignored with a MOUNTPOINT") {
		t.Errorf("bench MOUNTPOINT --workers 2 did not warn that --workers is ignored:\n%s", stderr)
	}
}

// TestBenchHelpNamesItsFiles: `oxefs bench --help` names every file a
// run writes into --out, as the run itself writes them.
func TestBenchHelpNamesItsFiles(t *testing.T) {
	out := t.TempDir()
	if _, stderr, code := runOxefs(t, nil, "bench", "--cache-dir", t.TempDir(), "--readers", "1", "--warmup", "0", "--batches", "1", "--out", out); code != 0 {
		t.Fatalf("bench: exit %d\n%s", code, stderr)
	}
	written, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(written) == 0 {
		t.Fatal("bench wrote nothing into --out")
	}
	help, stderr, code := runOxefs(t, nil, "bench", "--help")
	if code != 0 {
		t.Fatalf("bench --help: exit %d\n%s", code, stderr)
	}
	// kong wraps help text at spaces only, so a file name stays whole.
	for _, f := range written {
		if !strings.Contains(help, f.Name()) {
			t.Errorf("bench --help does not name %s, which bench writes:\n%s", f.Name(), help)
		}
	}
}
