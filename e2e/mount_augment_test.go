package e2e

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/oxefs/oxefs/internal/testkit"
)

// The fixture's source frames: tiny_bridge's cameras, whose sizes the
// native mount's slots take so that its frames are the decoded sources.
var (
	bridgePrimary = [2]int{96, 128}
	bridgeWrist   = [2]int{64, 64}
)

// The augment blocks of the tests' mixes. geometryOps are the ops that
// move pixels (a random resized crop, the affine); colourOps every colour
// op in a random order with the affine but no crop, so that a frame of a
// mount with --augment off at the slot's size is the input they apply to.
// Replaying the colour ops on torchvision's own resized crop would
// compare the resizes too: colour factors above 1 stretch a one-level
// difference of the two resizes into several, so each set is replayed
// on the input it was applied to. Both drop cameras (dropout).
const (
	geometryOps = `  random_resized_crop: {scale: [0.6, 0.9], ratio: [0.8, 1.25]}
  rotate: 15
  translate: [0.1, 0.1]
  dropout: 0.2
`
	colourOps = `  rotate: 15
  translate: [0.1, 0.1]
  brightness: 0.3
  contrast: 0.3
  saturation: 0.4
  hue: 0.05
  sharpness: [0.5, 1.5]
  random_order: true
  dropout: 0.2
`
	allOps = `  random_resized_crop: {scale: [0.6, 0.9], ratio: [0.8, 1.25]}
` + colourOps
)

// cropTwin is the side (a fraction of the source's) of the val view's
// centre crop: the centre twin of random_resized_crop's mean scale.
var cropTwin = float32(math.Sqrt((0.6 + 0.9) / 2))

// writeAugmentMix is a step mix of tiny_bridge (with a val split) and
// tiny_kuka (no wrist camera) with camera slots of the given sizes and
// the augment block ops (cameras independent).
func writeAugmentMix(t *testing.T, primary, wrist [2]int, ops string) string {
	t.Helper()
	bridge, _ := filepath.Abs("testdata/datasets/tiny_bridge/1.0.0")
	kuka, _ := filepath.Abs("testdata/datasets/tiny_kuka/1.0.0")
	return writeMixText(t, fmt.Sprintf(`batch_size: 6
num_batches: 8
sample:
  cameras:
    primary: {size: [%d, %d], steps: [-1, 0]}
    wrist: {size: [%d, %d]}
  state: {steps: [-1, 0]}
  action: {steps: "0:4"}
augment:
%sdatasets:
  - name: bridge
    source: %s
    weight: 2
    val_split: val
    cameras: {primary: steps/observation/image, wrist: steps/observation/wrist_image}
    state_key: steps/observation/state
    action_keys: [steps/action/world_vector]
  - name: kuka
    source: %s
    weight: 1
    cameras: {primary: steps/observation/image}
    action_keys: [steps/action]
`, primary[0], primary[1], wrist[0], wrist[1], ops, bridge, kuka))
}

// The slots of writeAugmentMix's mixes, and tiny_bridge's source frame
// sizes, which a mount's slots take so that its frames are the decoded
// sources.
var (
	slotSizes     = [2][2]int{{24, 32}, {16, 16}}
	bridgeSources = [2][2]int{{96, 128}, {64, 64}}
	slotNames     = [2]string{"primary", "wrist"}
	slotSteps     = [2]int{2, 1}
)

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

// replayer runs augment/testdata/torchvision_ops.py over cases, each with
// its recorded parameter row, in one directory.
type replayer struct {
	t   *testing.T
	py  string
	dir string
}

// replayCase is one case of torchvision_ops.py (cases.json's entry).
type replayCase struct {
	Name  string `json:"name"`
	Op    string `json:"op"`
	Input string `json:"input"`
	Out   [2]int `json:"out"`
}

// run replays cases, rows[k] being case k's row (float32 [18]): each
// writes <name>.ref.npy (and for the affine <name>.mask.npy) in r.dir.
func (r replayer) run(cases []replayCase, rows []byte) {
	t := r.t
	t.Helper()
	js, err := json.Marshal(cases)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r.dir, "cases.json"), js, 0o644); err != nil {
		t.Fatal(err)
	}
	testkit.WriteNPY(t, filepath.Join(r.dir, "params.npy"), "<f4", []int{len(cases), 18}, rows)
	script, err := filepath.Abs("augment/testdata/torchvision_ops.py")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(r.py, script, r.dir).CombinedOutput()
	if err != nil {
		t.Fatalf("torchvision_ops.py: %v\n%s", err, out)
	}
	t.Logf("%s", strings.TrimSpace(string(out)))
}

// within counts the values of got within one level of ref.npy, leaving
// out those mask.npy (when named) marks as fill.
func (r replayer) within(got []byte, ref, mask string) (values, close, fill int) {
	t := r.t
	t.Helper()
	_, want := testkit.ReadNPY(t, filepath.Join(r.dir, ref))
	var m []byte
	if mask != "" {
		_, m = testkit.ReadNPY(t, filepath.Join(r.dir, mask))
	}
	if len(want) != len(got) {
		t.Fatalf("%s: %d values, the mount's frame %d", ref, len(want), len(got))
	}
	for j, v := range got {
		if m != nil && m[j/3] == 1 {
			fill++
			continue
		}
		values++
		if d := int(v) - int(want[j]); d >= -1 && d <= 1 {
			close++
		}
	}
	return values, close, fill
}

// augmentFiles are the files of a batch of the augmented mix: every
// array's and the .json.
func augmentFiles(t *testing.T, mnt string) []string {
	t.Helper()
	var info struct {
		Sample struct {
			Arrays []struct {
				File string `json:"file"`
			} `json:"arrays"`
		} `json:"sample"`
	}
	readJSON(t, filepath.Join(mnt, "info.json"), &info)
	files := []string{"json"}
	for _, a := range info.Sample.Arrays {
		files = append(files, a.File)
	}
	return files
}

// readBatches reads files of batches 0..n-1 of view (under mnt), last
// first.
func readBatches(t *testing.T, mnt string, n int, files []string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for b := n - 1; b >= 0; b-- {
		for _, f := range files {
			out[fmt.Sprintf("%06d.%s", b, f)] = batchFile(t, mnt, b, f)
		}
	}
	return out
}

// replayed is what replay compared.
type replayed struct {
	frames, values, close, fill, dropped int
}

// replay checks the frames of batches 0..batches-1 of view ("" or "val")
// of the augmented mount aug against torchvision's replay of the recorded
// parameters: ops (torchvision_ops.py's, in order) on the same frame of
// src, a mount of the same mix with --augment off whose slots have sizes
// (the sources' for a crop; then only tiny_bridge's samples, whose
// sources those are, are replayed). A dropped camera must be zeros with
// image_mask 0; want, when not nil, checks each sample's recorded row.
func replay(t *testing.T, rp replayer, aug, src, view string, batches int, sizes [2][2]int, ops []string, want func(row func(int) float32) string) replayed {
	t.Helper()
	type frame struct {
		name string
		got  []byte
		row  []byte
		out  [2]int
	}
	var todo []frame
	var r replayed
	native := sizes != slotSizes
	augDir, srcDir := filepath.Join(aug, view), filepath.Join(src, view)
	for n := range batches {
		for _, f := range []string{"dataset_index.npy", "frame_index.npy"} {
			if !bytes.Equal(batchFile(t, augDir, n, f), batchFile(t, srcDir, n, f)) {
				t.Fatalf("%s batch %d: %s differs between the mix and its --augment off twin: not the same samples", view, n, f)
			}
		}
		index := npyData(t, batchFile(t, augDir, n, "dataset_index.npy"))
		mask := npyData(t, batchFile(t, augDir, n, "image_mask.npy"))
		for k, slot := range slotNames {
			array := "observation.images." + slot
			params := npyData(t, batchFile(t, augDir, n, array+".augment.npy"))
			augFrames := npyData(t, batchFile(t, augDir, n, array+".npy"))
			srcFrames := npyData(t, batchFile(t, srcDir, n, array+".npy"))
			per, srcPer, T := slotSizes[k][0]*slotSizes[k][1]*3, sizes[k][0]*sizes[k][1]*3, slotSteps[k]
			for i := range len(params) / (18 * 4) {
				row := params[i*18*4 : (i+1)*18*4]
				col := func(c int) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(row[4*c:])) }
				if want != nil {
					if msg := want(col); msg != "" {
						t.Errorf("%s batch %d sample %d %s: %s", view, n, i, slot, msg)
					}
				}
				all := augFrames[i*T*per : (i+1)*T*per]
				if col(17) == 1 {
					r.dropped++
					if bytes.ContainsFunc(all, func(r rune) bool { return r != 0 }) || mask[i*len(slotNames)+k] != 0 {
						t.Errorf("%s batch %d sample %d: dropped %s is not zeros with image_mask 0", view, n, i, slot)
					}
					continue
				}
				if native && binary.LittleEndian.Uint64(index[8*i:]) != 0 {
					continue // kuka's: its sources are not of these sizes
				}
				for f := range T {
					in := srcFrames[(i*T+f)*srcPer : (i*T+f+1)*srcPer]
					if !bytes.ContainsFunc(in, func(r rune) bool { return r != 0 }) {
						continue // a slot the dataset lacks
					}
					name := fmt.Sprintf("%sb%d-%s-%d-%d", view, n, slot, i, f)
					testkit.WriteNPY(t, filepath.Join(rp.dir, name+".in.npy"), "|u1", []int{sizes[k][0], sizes[k][1], 3}, in)
					todo = append(todo, frame{name: name, got: all[f*per : (f+1)*per], row: row, out: slotSizes[k]})
				}
			}
		}
	}
	if len(todo) == 0 {
		t.Fatalf("%s: no frame to replay", view)
	}
	var rows []byte
	for _, f := range todo {
		rows = append(rows, f.row...)
	}
	for s, op := range ops {
		var cases []replayCase
		for _, f := range todo {
			in := f.name + ".in.npy"
			if s > 0 {
				in = f.name + "-" + ops[s-1] + ".ref.npy"
			}
			cases = append(cases, replayCase{Name: f.name + "-" + op, Op: op, Input: in, Out: f.out})
		}
		rp.run(cases, rows)
	}
	for _, f := range todo {
		mask := ""
		if slices.Contains(ops, "affine") {
			mask = f.name + "-affine.mask.npy"
		}
		v, c, fl := rp.within(f.got, f.name+"-"+ops[len(ops)-1]+".ref.npy", mask)
		r.frames, r.values, r.close, r.fill = r.frames+1, r.values+v, r.close+c, r.fill+fl
	}
	frac := float64(r.close) / float64(r.values)
	t.Logf("%s view, %v: %d frames, %d values: %.5f within one level of torchvision (%d fill values excluded), %d dropped cameras",
		viewName(view), ops, r.frames, r.values, frac, r.fill, r.dropped)
	if frac < 0.999 {
		t.Errorf("%s view, %v: %.5f of the values within one level of torchvision, want ≥ 0.999", viewName(view), ops, frac)
	}
	return r
}

func viewName(v string) string {
	if v == "" {
		return "train"
	}
	return v
}

// isCentreTwin says what is wrong with a val row: it must be the centre
// crop twin (cropTwin) and otherwise the identity.
func isCentreTwin(col func(int) float32) string {
	want := [18]float32{cropTwin, cropTwin, 0.5, 0.5, 0, 0, 0, 1, 1, 1, 0, 1, -1, -1, -1, -1, -1, 0}
	for c, w := range want {
		if col(c) != w {
			return fmt.Sprintf("column %d is %v, want %v (the centre twin of the crop, else the identity)", c, col(c), w)
		}
	}
	return ""
}

// TestMountAugment: an augmented mix (a random resized crop, the affine,
// every colour op, dropout) gives the same bytes from a second daemon
// with one worker read in reverse, from a daemon serving ranks 0-1 of 2,
// and after it is unmounted and mounted again on the same cache
// directory, train and val views alike; its val view records the crop's
// centre twin and nothing else.
func TestMountAugment(t *testing.T) {
	cfg := writeAugmentMix(t, slotSizes[0], slotSizes[1], allOps)
	aug, again, ranks, cache := t.TempDir(), t.TempDir(), t.TempDir(), t.TempDir()
	first := startMount(t, aug, nil, "--config", cfg, "--cache-dir", cache)
	startMount(t, again, nil, "--config", cfg, "--cache-dir", t.TempDir(), "--workers", "1")
	startMount(t, ranks, nil, "--config", cfg, "--cache-dir", t.TempDir(), "--world", "2", "--ranks", "0-1")

	var info struct {
		Augment struct {
			Arrays  []string `json:"arrays"`
			Columns []struct {
				Name string `json:"name"`
			} `json:"columns"`
		} `json:"augment"`
		Val struct {
			NumBatches int `json:"num_batches"`
		} `json:"val"`
	}
	readJSON(t, filepath.Join(aug, "info.json"), &info)
	if len(info.Augment.Arrays) != 2 || len(info.Augment.Columns) != 18 {
		t.Fatalf("info.json's augment: %+v", info.Augment)
	}
	if info.Val.NumBatches < 1 {
		t.Fatalf("info.json: %d val batches", info.Val.NumBatches)
	}
	files := augmentFiles(t, aug)
	const batches = 4
	want := readBatches(t, aug, batches, files)
	wantVal := readBatches(t, filepath.Join(aug, "val"), 1, files)
	check := func(what string, got, want map[string][]byte) {
		t.Helper()
		for name, w := range want {
			if !bytes.Equal(got[name], w) {
				t.Errorf("%s: %s differs", what, name)
			}
		}
	}
	check("--workers 1 in reverse", readBatches(t, again, batches, files), want)
	for n := range batches {
		for _, f := range files {
			if got := batchFile(t, filepath.Join(ranks, "rank", fmt.Sprint(n%2)), n/2, f); !bytes.Equal(got, want[fmt.Sprintf("%06d.%s", n, f)]) {
				t.Errorf("batch %d %s differs from rank %d's batch %d", n, f, n%2, n/2)
			}
		}
	}
	first.stop(t)
	if mounted(aug) {
		t.Fatalf("%s still mounted", aug)
	}
	startMount(t, aug, nil, "--config", cfg, "--cache-dir", cache)
	check("after a remount", readBatches(t, aug, batches, files), want)
	check("the val view after a remount", readBatches(t, filepath.Join(aug, "val"), 1, files), wantVal)

	for _, slot := range slotNames {
		params := npyData(t, wantVal["000000.observation.images."+slot+".augment.npy"])
		for i := range len(params) / (18 * 4) {
			col := func(c int) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(params[(i*18+c)*4:])) }
			if msg := isCentreTwin(col); msg != "" {
				t.Errorf("val sample %d %s: %s", i, slot, msg)
			}
		}
	}
}

// TestMountAugmentParity: each training frame a mount serves equals
// torchvision's replay of the parameters recorded beside it, within one
// level for ≥ 99.9% of the values outside the affine's fill
// (augment/testdata/torchvision_ops.py): F.resized_crop (bilinear,
// antialias off) of the source frame, read from a mount of the same mix
// whose slots are the sources' sizes with --augment off, then F.affine;
// and F.affine then the F.adjust_* chain in the recorded order on the
// frame of a mount at the slots' sizes with --augment off. A dropped
// camera is zeros with image_mask 0. The val view is not augmented: its
// rows are the crop's centre twin and nothing else, and its frames are
// F.resized_crop of that centre box of the source.
func TestMountAugmentParity(t *testing.T) {
	geo, native, colour, off := t.TempDir(), t.TempDir(), t.TempDir(), t.TempDir()
	startMount(t, geo, nil, "--config", writeAugmentMix(t, slotSizes[0], slotSizes[1], geometryOps), "--cache-dir", t.TempDir())
	startMount(t, native, nil, "--config", writeAugmentMix(t, bridgeSources[0], bridgeSources[1], geometryOps), "--cache-dir", t.TempDir(), "--augment", "off")
	startMount(t, colour, nil, "--config", writeAugmentMix(t, slotSizes[0], slotSizes[1], colourOps), "--cache-dir", t.TempDir())
	startMount(t, off, nil, "--config", writeAugmentMix(t, slotSizes[0], slotSizes[1], colourOps), "--cache-dir", t.TempDir(), "--augment", "off")
	var offInfo struct {
		AugmentOff bool `json:"augment_off"`
	}
	readJSON(t, filepath.Join(off, "info.json"), &offInfo)
	if !offInfo.AugmentOff {
		t.Error("info.json of the --augment off mount does not say augment_off")
	}

	rp := replayer{t: t, py: findPython(t, "numpy", "torch", "torchvision"), dir: t.TempDir()}
	dropped := replay(t, rp, geo, native, "", 2, bridgeSources, []string{"resized_crop", "affine"}, nil).dropped
	dropped += replay(t, rp, colour, off, "", 2, slotSizes, []string{"affine", "colour"}, nil).dropped
	if dropped == 0 {
		t.Error("no camera dropped: the dropout went unchecked")
	}
	replay(t, rp, geo, native, "val", 1, bridgeSources, []string{"resized_crop"}, isCentreTwin)
}

// TestMountAugmentPairs: an augmented pair mix serves each batch as
// NNNNNN.npy (the frames, with the plain mix's header and size),
// NNNNNN.augment.npy (float32 [B, 18]: each sample's parameters, a
// cropped draw) and NNNNNN.json without them, as info.json's files list;
// the same mix without augment serves no augment.npy; the Python package
// reads it as the batch's "augment". The same bytes after a remount on
// the same cache directory.
func TestMountAugmentPairs(t *testing.T) {
	const head = "batch_size: 4\nimage_size: [24, 32]\nnum_batches: 3\n"
	aug, plain, cache := t.TempDir(), t.TempDir(), t.TempDir()
	cfg := writeMix(t, head+"augment: {random_resized_crop: {scale: [0.6, 0.9]}, brightness: 0.2}\n")
	first := startMount(t, aug, nil, "--config", cfg, "--cache-dir", cache)
	startMount(t, plain, nil, "--config", writeMix(t, head), "--cache-dir", t.TempDir())
	var info struct {
		Files   []string `json:"files"`
		Augment struct {
			Arrays []string `json:"arrays"`
			In     string   `json:"in"`
		} `json:"augment"`
	}
	readJSON(t, filepath.Join(aug, "info.json"), &info)
	if !slices.Equal(info.Files, []string{"npy", "augment.npy"}) || !slices.Equal(info.Augment.Arrays, []string{"augment"}) {
		t.Fatalf("info.json: files %v, augment %+v", info.Files, info.Augment)
	}
	if _, err := os.Stat(filepath.Join(plain, "batches", "000000.augment.npy")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the plain mix's 000000.augment.npy: %v, want ENOENT", err)
	}
	files := []string{"npy", "augment.npy", "json"}
	want := readBatches(t, aug, 2, files)
	for n := range 2 {
		name := fmt.Sprintf("%06d.", n)
		frames, plainFrames := want[name+"npy"], batchFile(t, plain, n, "npy")
		hdr := len(frames) - len(npyData(t, frames))
		if len(frames) != len(plainFrames) || !bytes.Equal(frames[:hdr], plainFrames[:hdr]) || bytes.Equal(frames, plainFrames) {
			t.Errorf("batch %d: the frames file is not the plain mix's header and size with other pixels", n)
		}
		params := want[name+"augment.npy"]
		if !bytes.Contains(params[:hdr], []byte("'descr': '<f4'")) || !bytes.Contains(params, []byte("'shape': (4, 18)")) {
			t.Errorf("batch %d: augment.npy header %q", n, params[:min(len(params), 80)])
		}
		rows := npyData(t, params)
		if len(rows) != 4*18*4 {
			t.Fatalf("batch %d: augment.npy holds %d bytes, want 4 rows of 18 float32", n, len(rows))
		}
		for i := range 4 {
			if w := math.Float32frombits(binary.LittleEndian.Uint32(rows[i*18*4:])); w >= 1 || w <= 0 {
				t.Errorf("batch %d sample %d: crop_w %v, want a cropped draw", n, i, w)
			}
		}
		if bytes.Contains(want[name+"json"], []byte(`"augment"`)) {
			t.Errorf("batch %d: the .json records augment", n)
		}
	}
	// The Python package gives the parameters as the batch's "augment".
	script := `
import sys
import numpy as np
sys.path.insert(0, sys.argv[2])
from oxefs import Batches
b = Batches(sys.argv[1])[1]
a = np.load(sys.argv[1] + "/batches/000001.augment.npy")
assert b["augment"].dtype == np.float32 and b["augment"].shape == (4, 18), (b["augment"].dtype, b["augment"].shape)
assert (b["augment"] == a).all() and b["frames"].shape == (4, 2, 24, 32, 3)
print("ok")
`
	if out, err := exec.Command(findPython(t, "numpy"), "-c", script, aug, "python").CombinedOutput(); err != nil || !strings.Contains(string(out), "ok") {
		t.Errorf("python: %v\n%s", err, out)
	}
	first.stop(t)
	startMount(t, aug, nil, "--config", cfg, "--cache-dir", cache)
	for name, w := range readBatches(t, aug, 2, files) {
		if !bytes.Equal(w, want[name]) {
			t.Errorf("%s differs after a remount", name)
		}
	}
}
