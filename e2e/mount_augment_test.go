package e2e

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oxefs/oxefs/internal/testkit"
)

// augmentMixYAML is writeStepMix's mix with an augment block: the affine
// and every colour op in a random order, cameras independent, dropout.
// No crop, so that a frame of the mount with --augment off is the input
// the recorded parameters apply to.
func writeAugmentMix(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(writeStepMix(t))
	if err != nil {
		t.Fatal(err)
	}
	return writeMixText(t, string(b)+`augment:
  rotate: 15
  translate: [0.1, 0.1]
  brightness: 0.3
  contrast: 0.3
  saturation: 0.4
  hue: 0.05
  sharpness: [0.5, 1.5]
  random_order: true
  dropout: 0.2
`)
}

// batchFile reads file of batch n under dir.
func batchFile(t *testing.T, dir string, n int, file string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "batches", fmt.Sprintf("%06d.%s", n, file)))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// npyData is the values of a NumPy 1.0 file.
func npyData(t *testing.T, b []byte) []byte {
	t.Helper()
	if len(b) < 10 || string(b[:8]) != "\x93NUMPY\x01\x00" {
		t.Fatal("not a NumPy 1.0 file")
	}
	return b[10+int(binary.LittleEndian.Uint16(b[8:10])):]
}

// TestMountAugment: an augmented mix's batches are the same bytes from a
// second daemon with one worker read in reverse, and from a daemon
// serving ranks 0-1 of 2; and each frame equals torchvision's replay of
// the recorded parameters (F.affine, then the F.adjust_* chain in the
// recorded order, testdata of package augment) on the same frame read
// from a mount with --augment off, within one level for ≥ 99.9% of the
// values outside the affine's fill.
func TestMountAugment(t *testing.T) {
	cfg := writeAugmentMix(t)
	aug, again, ranks, off := t.TempDir(), t.TempDir(), t.TempDir(), t.TempDir()
	startMount(t, aug, nil, "--config", cfg, "--cache-dir", t.TempDir())
	startMount(t, again, nil, "--config", cfg, "--cache-dir", t.TempDir(), "--workers", "1")
	startMount(t, ranks, nil, "--config", cfg, "--cache-dir", t.TempDir(), "--world", "2", "--ranks", "0-1")
	startMount(t, off, nil, "--config", cfg, "--cache-dir", t.TempDir(), "--augment", "off")

	var info struct {
		Sample struct {
			Arrays []struct {
				File string `json:"file"`
			} `json:"arrays"`
		} `json:"sample"`
		Augment struct {
			Arrays  []string `json:"arrays"`
			Columns []struct {
				Name string `json:"name"`
			} `json:"columns"`
		} `json:"augment"`
	}
	readJSON(t, filepath.Join(aug, "info.json"), &info)
	if len(info.Augment.Arrays) != 2 || len(info.Augment.Columns) != 18 {
		t.Fatalf("info.json's augment: %+v", info.Augment)
	}
	var offInfo struct {
		AugmentOff bool `json:"augment_off"`
	}
	readJSON(t, filepath.Join(off, "info.json"), &offInfo)
	if !offInfo.AugmentOff {
		t.Error("info.json of the --augment off mount does not say augment_off")
	}
	files := []string{"json"}
	for _, a := range info.Sample.Arrays {
		files = append(files, a.File)
	}
	const batches = 4
	for n := batches - 1; n >= 0; n-- {
		for _, f := range files {
			want := batchFile(t, aug, n, f)
			if got := batchFile(t, again, n, f); !bytes.Equal(got, want) {
				t.Errorf("batch %d %s differs between the two daemons", n, f)
			}
			if got := batchFile(t, filepath.Join(ranks, "rank", fmt.Sprint(n%2)), n/2, f); !bytes.Equal(got, want) {
				t.Errorf("batch %d %s differs from rank %d's batch %d", n, f, n%2, n/2)
			}
		}
	}

	// torchvision's replay, frame by frame.
	py := findPython(t, "numpy", "torch", "torchvision")
	dir := t.TempDir()
	type tcase struct {
		Name  string `json:"name"`
		Op    string `json:"op"`
		Input string `json:"input"`
		Out   [2]int `json:"out"`
	}
	var affine, colour []tcase
	var rows []byte
	var got [][]byte
	dropped := 0
	sizes := map[string][2]int{"primary": {24, 32}, "wrist": {16, 16}}
	for n := range 2 {
		for slot, size := range sizes {
			array := "observation.images." + slot
			params := npyData(t, batchFile(t, aug, n, array+".augment.npy"))
			augFrames := npyData(t, batchFile(t, aug, n, array+".npy"))
			offFrames := npyData(t, batchFile(t, off, n, array+".npy"))
			per := size[0] * size[1] * 3
			for i := range len(params) / (18 * 4) {
				row := params[i*18*4 : (i+1)*18*4]
				if math.Float32frombits(binary.LittleEndian.Uint32(row[17*4:])) == 1 {
					dropped++
					continue
				}
				for f := range len(augFrames) / per / (len(params) / (18 * 4)) {
					at := (i*len(augFrames)/(len(params)/(18*4)) + f*per)
					src := offFrames[at : at+per]
					if !bytes.ContainsFunc(src, func(r rune) bool { return r != 0 }) {
						continue // a slot the dataset lacks
					}
					name := fmt.Sprintf("b%d-%s-%d-%d", n, slot, i, f)
					testkit.WriteNPY(t, filepath.Join(dir, name+".in.npy"), "|u1", []int{size[0], size[1], 3}, src)
					affine = append(affine, tcase{Name: name, Op: "affine", Input: name + ".in.npy", Out: size})
					colour = append(colour, tcase{Name: name + "-c", Op: "colour", Input: name + ".ref.npy", Out: size})
					rows = append(rows, row...)
					got = append(got, augFrames[at:at+per])
				}
			}
		}
	}
	if len(got) == 0 || dropped == 0 {
		t.Fatalf("%d frames to replay, %d dropped cameras: nothing to check", len(got), dropped)
	}
	script, err := filepath.Abs("augment/testdata/torchvision_ops.py")
	if err != nil {
		t.Fatal(err)
	}
	run := func(cases []tcase) {
		t.Helper()
		js, err := json.Marshal(cases)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "cases.json"), js, 0o644); err != nil {
			t.Fatal(err)
		}
		testkit.WriteNPY(t, filepath.Join(dir, "params.npy"), "<f4", []int{len(cases), 18}, rows)
		out, err := exec.Command(py, script, dir).CombinedOutput()
		if err != nil {
			t.Fatalf("torchvision_ops.py: %v\n%s", err, out)
		}
		t.Logf("%s", strings.TrimSpace(string(out)))
	}
	run(affine)
	run(colour)
	values, within, fill := 0, 0, 0
	for k, c := range colour {
		_, ref := testkit.ReadNPY(t, filepath.Join(dir, c.Name+".ref.npy"))
		_, mask := testkit.ReadNPY(t, filepath.Join(dir, affine[k].Name+".mask.npy"))
		for j, v := range got[k] {
			if mask[j/3] == 1 {
				fill++
				continue
			}
			values++
			if d := int(v) - int(ref[j]); d >= -1 && d <= 1 {
				within++
			}
		}
	}
	frac := float64(within) / float64(values)
	t.Logf("%d frames, %d values: %.5f within one level of torchvision (%d fill values excluded)", len(got), values, frac, fill)
	if frac < 0.999 {
		t.Errorf("%.5f of the values within one level of torchvision, want ≥ 0.999", frac)
	}
}
