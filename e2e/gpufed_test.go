package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// gpufedMix writes a tiny synth set and a mix of it sized for a CPU run of
// scripts/gpufed.py: B=2 pairs of 32×32 frames.
func gpufedMix(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if _, stderr, code := runOxefs(t, nil, "synth", dir, "--datasets", "2", "--episodes", "2", "--steps", "12"); code != 0 {
		t.Fatalf("synth: exit %d: %s", code, stderr)
	}
	mix, err := os.ReadFile(filepath.Join(dir, "mix.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	s := regexp.MustCompile(`(?m)^batch_size: .*$`).ReplaceAllString(string(mix), "batch_size: 2")
	s = regexp.MustCompile(`(?m)^image_size: .*$`).ReplaceAllString(s, "image_size: [32, 32]")
	path := filepath.Join(dir, "mix-gpufed.yaml")
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestGPUFedScriptOnCPU runs the GPU-fed benchmark's whole path (mount,
// resident and fed training of every model, from a decode: exact mount
// and from a decode: gpu one, the JSON report) on the CPU with a few tiny
// steps: the script a GPU machine runs is the one tested.
func TestGPUFedScriptOnCPU(t *testing.T) {
	py := findPython(t, "numpy", "torch", "torchvision")
	mix := gpufedMix(t)
	out := filepath.Join(t.TempDir(), "gpufed.json")
	cmd := exec.Command(py, "scripts/gpufed.py", mix, "--device", "cpu", "--steps", "2", "--warmup", "1",
		"--workers", "2", "--binary", oxefsBin, "--mount-arg=--cache-dir="+t.TempDir(), "--json", out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gpufed.py: %v\n%s", err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	type feed struct {
		Fed      float64 `json:"fed_samples_per_s"`
		Fraction float64 `json:"fed_fraction"`
		Wait     float64 `json:"wait_share"`
		Daemon   float64 `json:"daemon_cpu_ms_per_sample"`
		Trainer  float64 `json:"trainer_cpu_ms_per_sample"`
	}
	var r struct {
		BatchSize int   `json:"batch_size"`
		Frames    []int `json:"frames"`
		Models    map[string]struct {
			Resident float64 `json:"resident_samples_per_s"`
			Pageable *feed   `json:"pageable"`
			GPU      *feed   `json:"gpu"`
		} `json:"models"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	if r.BatchSize != 2 || len(r.Frames) != 5 || r.Frames[2] != 32 {
		t.Errorf("batch %d frames %v; want 2 and [2 2 32 32 3]", r.BatchSize, r.Frames)
	}
	for _, name := range []string{"resnet18", "resnet50", "vit_b_16"} {
		m, ok := r.Models[name]
		if !ok || m.Pageable == nil || m.GPU == nil {
			t.Fatalf("no %s pageable and gpu results in %s", name, b)
		}
		for what, p := range map[string]*feed{"pageable": m.Pageable, "gpu": m.GPU} {
			if m.Resident <= 0 || p.Fed <= 0 || p.Fraction <= 0 || p.Wait < 0 || p.Wait > 1 || p.Daemon < 0 || p.Trainer <= 0 {
				t.Errorf("%s %s: implausible figures %+v resident %v", name, what, *p, m.Resident)
			}
		}
	}
}

// TestGPUFedScriptWithoutGPU: on a machine without a CUDA GPU the script
// says so and exits 0 without mounting anything.
func TestGPUFedScriptWithoutGPU(t *testing.T) {
	py := findPython(t, "numpy", "torch", "torchvision")
	if exec.Command(py, "-c", "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)").Run() == nil {
		t.Skip("SKIPPED: this machine has a CUDA GPU; the no-GPU answer is not reachable")
	}
	b, err := exec.Command(py, "scripts/gpufed.py", "no-such-mix.yaml", "--binary", oxefsBin).CombinedOutput()
	if err != nil {
		t.Fatalf("gpufed.py without a GPU: %v\n%s", err, b)
	}
	if !strings.Contains(string(b), "no CUDA GPU") {
		t.Errorf("output %q does not say there is no CUDA GPU", b)
	}
}
