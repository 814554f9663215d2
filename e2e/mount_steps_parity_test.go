package e2e

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/oxefs/oxefs/frames/av"
	"github.com/oxefs/oxefs/internal/missing"
	"github.com/oxefs/oxefs/internal/testkit"
)

// stepsRef is testdata/steps/<name>.json: step samples as the upstream
// libraries give them (steps_lerobot.py: LeRobotDataset with
// delta_timestamps; steps_rlds.py: numpy over tensorflow_datasets reads),
// one list of samples per spec, each spec with the mix config it assumes.
type stepsRef struct {
	Generator string      `json:"generator"`
	Specs     []stepsSpec `json:"specs"`
	// Frames are sha256 digests of uint8 [H, W, 3] frames; a sample's
	// frames are indices into it.
	Frames []string `json:"frames"`
}

type stepsSpec struct {
	Name      string `json:"name"`
	YAML      string `json:"yaml"` // $DATA: the absolute path of testdata/
	Layout    string `json:"layout"`
	BatchSize int    `json:"batch_size"`
	Slots     []struct {
		Name string `json:"name"`
		Size [2]int `json:"size"`
	} `json:"slots"`
	DropLast int `json:"drop_last"`
	// Datasets are what info.json says of each dataset the mix samples:
	// for LeRobot, the deltas are lerobot's own delta_indices.
	Datasets  map[string]stepsDataset `json:"datasets"`
	StateDim  int                     `json:"state_dim"`
	ActionDim int                     `json:"action_dim"`
	Samples   []stepsSample           `json:"samples"`
}

// stepsDataset is a dataset's entry under info.json's "datasets" in step
// mode; the references leave out Slots of slots the dataset does not map,
// and FPS where the dataset has none.
type stepsDataset struct {
	DatasetIndex *int64            `json:"dataset_index"`
	FPS          float64           `json:"fps"`
	Cameras      map[string]string `json:"cameras"`
	Deltas       *struct {
		Slots  map[string][]int `json:"slots"`
		State  []int            `json:"state"`
		Action []int            `json:"action"`
	} `json:"deltas"`
}

type stepsSample struct {
	View         string `json:"view"` // "batches" or "val/batches"
	DatasetName  string `json:"dataset_name"`
	DatasetIndex int64  `json:"dataset_index"`
	EpisodeID    string `json:"episode_id"`
	FrameIndex   int64  `json:"frame_index"`
	Task         string `json:"task"`
	Robot        string `json:"robot"`
	Images       map[string]struct {
		Frames []int `json:"frames"`
		IsPad  []int `json:"is_pad"`
		Mask   int   `json:"mask"`
	} `json:"images"`
	// Floats decode as float32 straight from their decimal (the
	// generators write each float32's shortest repr): exact.
	State       [][]float32 `json:"state"`
	StateIsPad  []int       `json:"state_is_pad"`
	StateMask   []int       `json:"state_mask"`
	Action      [][]float32 `json:"action"`
	ActionIsPad []int       `json:"action_is_pad"`
	ActionMask  []int       `json:"action_mask"`
}

func (s *stepsSample) key() string { return stepsKey(s.View, s.EpisodeID, s.FrameIndex) }

func stepsKey(view, episode string, t int64) string {
	return fmt.Sprintf("%s %s t=%d", view, episode, t)
}

// stepsArray is one array of a step-mode batch, as the contract lists
// them: its name (the file is NNNNNN.<name>.npy), dtype and shape.
type stepsArray struct {
	Name  string
	DType string
	Shape []int
}

// layout is the contract's array list for a spec: per slot frames, then
// per slot _is_pad, image_mask, state (3 arrays) and action (3 arrays)
// when the mix has them, dataset_index, frame_index, sample_is_pad.
func (s *stepsSpec) layout(b int) []stepsArray {
	first := &s.Samples[0]
	var out []stepsArray
	for _, sl := range s.Slots {
		T := len(first.Images[sl.Name].Frames)
		shape := []int{b, T, sl.Size[0], sl.Size[1], 3}
		if s.Layout == "BCFHW" {
			shape = []int{b, 3, T, sl.Size[0], sl.Size[1]}
		}
		out = append(out, stepsArray{"observation.images." + sl.Name, "|u1", shape})
	}
	for _, sl := range s.Slots {
		out = append(out, stepsArray{"observation.images." + sl.Name + "_is_pad", "|b1", []int{b, len(first.Images[sl.Name].Frames)}})
	}
	out = append(out, stepsArray{"image_mask", "|b1", []int{b, len(s.Slots)}})
	if s.StateDim > 0 {
		out = append(out,
			stepsArray{"observation.state", "<f4", []int{b, len(first.State), s.StateDim}},
			stepsArray{"observation.state_is_pad", "|b1", []int{b, len(first.State)}},
			stepsArray{"state_mask", "|b1", []int{b, s.StateDim}})
	}
	if s.ActionDim > 0 {
		out = append(out,
			stepsArray{"action", "<f4", []int{b, len(first.Action), s.ActionDim}},
			stepsArray{"action_is_pad", "|b1", []int{b, len(first.Action)}},
			stepsArray{"action_mask", "|b1", []int{b, s.ActionDim}})
	}
	return append(out, stepsArray{"dataset_index", "<i8", []int{b}}, stepsArray{"frame_index", "<i8", []int{b}},
		stepsArray{"sample_is_pad", "|b1", []int{b}})
}

// TestMountStepsParity mounts each spec of the step-sample references
// (testdata/steps/*.json, written by lerobot and tensorflow_datasets; see
// testdata/README.md) with samples_per_episode 0 and reads one pass:
// every array of every sample must equal the reference's for the same
// (episode_id, frame_index) — floats exactly, frames by the sha256 of
// each [H, W, 3] frame at each delta, _is_pad and masks — and every
// (episode, t) of the reference is seen once per pass. numpy.load reads
// the first batch's files with and without mmap_mode.
func TestMountStepsParity(t *testing.T) {
	for _, name := range []string{"lerobot", "rlds"} {
		var ref stepsRef
		readJSON(t, filepath.Join("testdata", "steps", name+".json"), &ref)
		if len(ref.Specs) == 0 {
			t.Fatalf("testdata/steps/%s.json has no specs", name)
		}
		for i := range ref.Specs {
			spec := &ref.Specs[i]
			t.Run(name+"/"+spec.Name, func(t *testing.T) {
				if name == "lerobot" {
					if err := av.Available(); err != nil {
						missing.Skip(t, missing.AVCodec, err)
					}
				}
				checkStepsSpec(t, &ref, spec)
			})
		}
	}
}

// stepsInfo is what the test reads of a step-mode info.json.
type stepsInfo struct {
	NumBatches int64 `json:"num_batches"`
	Val        *struct {
		NumBatches int64 `json:"num_batches"`
	} `json:"val"`
	Datasets map[string]stepsDataset `json:"datasets"`
	Sample   *struct {
		Mode     string `json:"mode"`
		DropLast int    `json:"drop_last"`
		Arrays   []struct {
			Name  string `json:"name"`
			File  string `json:"file"`
			DType string `json:"dtype"`
			Shape []int  `json:"shape"`
		} `json:"arrays"`
	} `json:"sample"`
}

func checkStepsSpec(t *testing.T, ref *stepsRef, spec *stepsSpec) {
	data, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	cfg := writeMixText(t, strings.ReplaceAll(spec.YAML, "$DATA", data))
	dir := t.TempDir()
	startMount(t, dir, nil, "--config", cfg, "--cache-dir", t.TempDir())
	if !strings.Contains(spec.YAML, "lerobot") {
		// RLDS frames are JPEG: the reference holds TensorFlow's pixels.
		requireExactJPEG(t, dir)
	}
	checkStepsMount(t, ref, spec, dir)
}

// requireExactJPEG skips a test that compares a mount's JPEG frames with
// TensorFlow's unless the mount decodes with libjpeg-turbo, as TensorFlow
// does: image/jpeg's pixels differ by a level here and there, which is
// right for it but not what the reference holds. That is the case where
// libturbojpeg is not installed, and where OXEFS_DECODER=go forces Go's.
func requireExactJPEG(t *testing.T, dir string) {
	t.Helper()
	var info struct {
		Decoder string `json:"decoder"`
	}
	readJSON(t, filepath.Join(dir, "info.json"), &info)
	if !strings.HasPrefix(info.Decoder, "libjpeg-turbo") {
		missing.Skipf(t, missing.ExactJPEG, "the mount decodes JPEG with %q", info.Decoder)
	}
}

// checkStepsMount reads one pass of every view of the mount at dir and
// compares it with the reference spec.
func checkStepsMount(t *testing.T, ref *stepsRef, spec *stepsSpec, dir string) {
	var info stepsInfo
	readJSON(t, filepath.Join(dir, "info.json"), &info)
	want := spec.layout(spec.BatchSize)
	if info.Sample == nil || info.Sample.Mode != "steps" {
		t.Fatalf("info.json: no \"sample\" with mode \"steps\": %+v", info.Sample)
	}
	var names []string
	for i, a := range info.Sample.Arrays {
		names = append(names, a.Name)
		if i < len(want) && (a.Name != want[i].Name || a.DType != want[i].DType || !slices.Equal(a.Shape, want[i].Shape) || a.File != want[i].Name+".npy") {
			t.Errorf("info.json sample.arrays[%d] = %+v, want name %s file %s.npy dtype %s shape %v", i, a, want[i].Name, want[i].Name, want[i].DType, want[i].Shape)
		}
	}
	if len(names) != len(want) {
		t.Fatalf("info.json sample.arrays %v: want %d arrays, the contract's list for this spec", names, len(want))
	}
	if info.Sample.DropLast != spec.DropLast {
		t.Errorf("info.json sample.drop_last %d, want %d", info.Sample.DropLast, spec.DropLast)
	}
	for name, w := range spec.Datasets {
		checkStepsDatasetInfo(t, name, info.Datasets[name], w)
	}

	index := map[string]*stepsSample{}
	units := map[string]int{} // per view
	for i := range spec.Samples {
		s := &spec.Samples[i]
		index[s.key()] = s
		units[s.View]++
	}
	seen := map[string]int{}
	unmarked := map[string]int{} // the val view's samples not marked sample_is_pad
	failures := 0
	fail := func(format string, args ...any) {
		t.Helper()
		if failures++; failures <= 30 {
			t.Errorf(format, args...)
		} else if failures == 31 {
			t.Error("more differences follow; not listed")
		}
	}
	for _, view := range []string{"batches", "val/batches"} {
		if units[view] == 0 {
			continue
		}
		n := info.NumBatches
		if view == "val/batches" {
			if info.Val == nil {
				t.Fatalf("info.json has no val view; the reference has %d val samples", units[view])
			}
			n = info.Val.NumBatches
		}
		if least := int64(math.Ceil(float64(units[view]) / float64(spec.BatchSize))); n < least {
			t.Errorf("%s: %d batches for %d sample units of batch size %d, want at least %d", view, n, units[view], spec.BatchSize, least)
		}
		for b := range n {
			base := filepath.Join(dir, view, fmt.Sprintf("%06d", b))
			arrays := map[string]npyArray{}
			for _, a := range want {
				arr := readStepsNPY(t, base+"."+a.Name+".npy")
				shape := slices.Clone(a.Shape)
				if shape[0] = arr.Shape[0]; arr.DType != a.DType || !slices.Equal(arr.Shape, shape) {
					t.Fatalf("%s.%s.npy: dtype %s shape %v, want %s %v", base, a.Name, arr.DType, arr.Shape, a.DType, shape)
				}
				arrays[a.Name] = arr
			}
			var meta struct {
				DatasetName []string `json:"dataset_name"`
				EpisodeID   []string `json:"episode_id"`
				Task        []string `json:"task"`
				Robot       []string `json:"robot"`
			}
			readJSON(t, base+".json", &meta)
			B := arrays["frame_index"].Shape[0]
			for _, f := range [][]string{meta.DatasetName, meta.EpisodeID, meta.Task, meta.Robot} {
				if len(f) != B {
					t.Fatalf("%s.json: %d dataset_name, %d episode_id, %d task, %d robot for %d samples", base, len(meta.DatasetName), len(meta.EpisodeID), len(meta.Task), len(meta.Robot), B)
				}
			}
			for j := range B {
				tt := arrays["frame_index"].int64At(j)
				key := stepsKey(view, meta.EpisodeID[j], tt)
				r := index[key]
				if r == nil {
					fail("%s sample %d: %s is not a sample of the reference", base, j, key)
					continue
				}
				seen[key]++
				switch pad := arrays["sample_is_pad"].row(j)[0]; {
				case pad > 1:
					fail("%s sample %d: sample_is_pad byte %d, want 0 or 1", base, j, pad)
				case view == "batches" && pad != 0:
					fail("%s sample %d: sample_is_pad on the train view", base, j)
				case pad == 0:
					unmarked[key]++
				}
				where := fmt.Sprintf("%s sample %d (%s)", base, j, key)
				compareStepsSample(fail, where, ref, spec, r, arrays, j, meta.DatasetName[j], meta.Task[j], meta.Robot[j])
			}
		}
	}
	// One pass: within each view and dataset, every unit is seen, and no
	// unit more than once more than another (the pass's last batch may
	// start the next epoch).
	type group struct{ view, dataset string }
	lo, hi := map[group]int{}, map[group]int{}
	for i := range spec.Samples {
		s := &spec.Samples[i]
		g, c := group{s.View, s.DatasetName}, seen[s.key()]
		if c == 0 {
			fail("%s: never served in one pass", s.key())
		}
		// The val view's pass, less the samples that top up its last
		// batch (sample_is_pad), serves each unit once.
		if s.View == "val/batches" && unmarked[s.key()] != 1 {
			fail("%s: served %d times unmarked in the val view's pass (%d in all), want once", s.key(), unmarked[s.key()], c)
		}
		if v, ok := lo[g]; !ok || c < v {
			lo[g] = c
		}
		hi[g] = max(hi[g], c)
	}
	for g := range lo {
		if hi[g]-lo[g] > 1 {
			t.Errorf("%s %s: units served between %d and %d times in one pass, want every unit once (±1 at the epoch edge)", g.view, g.dataset, lo[g], hi[g])
		}
	}
	t.Logf("%d reference samples; %d samples served in one pass", len(spec.Samples), sumValues(seen))

	t.Run("np.load", func(t *testing.T) {
		py := findPython(t, "numpy")
		script := `
import json, sys
import numpy as np
mnt = sys.argv[1]
info = json.load(open(mnt + "/info.json"))
for a in info["sample"]["arrays"]:
    p = f"{mnt}/batches/000000.{a['file']}"
    x = np.load(p)
    m = np.load(p, mmap_mode="r")
    assert x.dtype == np.dtype(a["dtype"]) and list(x.shape) == a["shape"], (p, x.dtype, x.shape, a)
    assert m.dtype == x.dtype and m.shape == x.shape and (m == x).all(), p
print("ok", len(info["sample"]["arrays"]))
`
		out, err := exec.Command(py, "-c", script, dir).CombinedOutput()
		if err != nil || !regexp.MustCompile(`(?m)^ok \d+$`).Match(out) {
			t.Fatalf("numpy.load of batch 0: %v\n%s", err, out)
		}
	})
}

// checkStepsDatasetInfo compares info.json's datasets.<name> with the
// reference's: dataset_index, cameras, fps (where the reference has one)
// and the deltas resolved to steps.
func checkStepsDatasetInfo(t *testing.T, name string, got, want stepsDataset) {
	t.Helper()
	if got.DatasetIndex == nil || *got.DatasetIndex != *want.DatasetIndex {
		t.Errorf("info.json datasets.%s.dataset_index %v, want %d", name, got.DatasetIndex, *want.DatasetIndex)
	}
	if !maps.Equal(got.Cameras, want.Cameras) {
		t.Errorf("info.json datasets.%s.cameras %v, want %v", name, got.Cameras, want.Cameras)
	}
	if want.FPS != 0 && got.FPS != want.FPS {
		t.Errorf("info.json datasets.%s.fps %v, want %v", name, got.FPS, want.FPS)
	}
	if got.Deltas == nil {
		t.Errorf("info.json datasets.%s has no deltas", name)
		return
	}
	for slot, d := range want.Deltas.Slots {
		if !slices.Equal(got.Deltas.Slots[slot], d) {
			t.Errorf("info.json datasets.%s.deltas.slots.%s %v, want %v", name, slot, got.Deltas.Slots[slot], d)
		}
	}
	if !slices.Equal(got.Deltas.State, want.Deltas.State) || !slices.Equal(got.Deltas.Action, want.Deltas.Action) {
		t.Errorf("info.json datasets.%s.deltas state %v action %v, want %v and %v", name, got.Deltas.State, got.Deltas.Action, want.Deltas.State, want.Deltas.Action)
	}
}

func sumValues(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// compareStepsSample compares sample j of a batch with its reference.
func compareStepsSample(fail func(string, ...any), where string, ref *stepsRef, spec *stepsSpec, r *stepsSample, arrays map[string]npyArray, j int, dataset, task, robot string) {
	if dataset != r.DatasetName || task != r.Task || robot != r.Robot {
		fail("%s: dataset_name %q task %q robot %q, want %q %q %q", where, dataset, task, robot, r.DatasetName, r.Task, r.Robot)
	}
	if got := arrays["dataset_index"].int64At(j); got != r.DatasetIndex {
		fail("%s: dataset_index %d, want %d", where, got, r.DatasetIndex)
	}
	for k, sl := range spec.Slots {
		img := r.Images[sl.Name]
		name := "observation.images." + sl.Name
		if got := arrays["image_mask"].boolRow(j)[k]; got != (img.Mask == 1) {
			fail("%s: image_mask[%s] %v, want %v", where, sl.Name, got, img.Mask == 1)
		}
		if got, want := arrays[name+"_is_pad"].boolRow(j), ints01(img.IsPad); !slices.Equal(got, want) {
			fail("%s: %s_is_pad %v, want %v", where, name, got, want)
		}
		slot := arrays[name].row(j)
		T, H, W := len(img.Frames), sl.Size[0], sl.Size[1]
		for f, fi := range img.Frames {
			sum := sha256.Sum256(testkit.FrameHWC(slot, spec.Layout == "BCFHW", f, T, H, W))
			if got := hex.EncodeToString(sum[:]); got != ref.Frames[fi] {
				fail("%s: %s frame at delta #%d has sha256 %.16s…, want %.16s… (reference frame %d)", where, name, f, got, ref.Frames[fi], fi)
			}
		}
	}
	if spec.StateDim > 0 {
		compareStepsFloats(fail, where, "observation.state", arrays["observation.state"].float32Row(j), r.State)
		if got, want := arrays["observation.state_is_pad"].boolRow(j), ints01(r.StateIsPad); !slices.Equal(got, want) {
			fail("%s: observation.state_is_pad %v, want %v", where, got, want)
		}
		if got, want := arrays["state_mask"].boolRow(j), ints01(r.StateMask); !slices.Equal(got, want) {
			fail("%s: state_mask %v, want %v", where, got, want)
		}
	}
	if spec.ActionDim > 0 {
		compareStepsFloats(fail, where, "action", arrays["action"].float32Row(j), r.Action)
		if got, want := arrays["action_is_pad"].boolRow(j), ints01(r.ActionIsPad); !slices.Equal(got, want) {
			fail("%s: action_is_pad %v, want %v", where, got, want)
		}
		if got, want := arrays["action_mask"].boolRow(j), ints01(r.ActionMask); !slices.Equal(got, want) {
			fail("%s: action_mask %v, want %v", where, got, want)
		}
	}
}

// compareStepsFloats compares a sample's [T, D] floats exactly.
func compareStepsFloats(fail func(string, ...any), where, name string, got []float32, want [][]float32) {
	var flat []float32
	for _, row := range want {
		flat = append(flat, row...)
	}
	if len(got) != len(flat) {
		fail("%s: %s has %d values, want %d", where, name, len(got), len(flat))
		return
	}
	D := len(want[0])
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(flat[i]) {
			fail("%s: %s[%d][%d] = %v, want %v (the whole row: %v)", where, name, i/D, i%D, got[i], flat[i], want[i/D])
			return
		}
	}
}

func ints01(v []int) []bool {
	out := make([]bool, len(v))
	for i, x := range v {
		out[i] = x == 1
	}
	return out
}

// npyArray is a .npy file of the step contract: NumPy format 1.0, dtype
// |u1, |b1, <f4 or <i8, C order, the data starting at a multiple of 64.
type npyArray struct {
	DType string
	Shape []int
	Data  []byte
}

var (
	npyDescr   = regexp.MustCompile(`'descr': '([^']*)'`)
	npyFortran = regexp.MustCompile(`'fortran_order': (True|False)`)
	npyShapeRE = regexp.MustCompile(`'shape': \(([^)]*)\)`)
	npySizes   = map[string]int{"|u1": 1, "|b1": 1, "<f4": 4, "<i8": 8}
)

// readStepsNPY reads and checks one .npy file of a step-mode batch; its
// size on stat must be the bytes read.
func readStepsNPY(t *testing.T, path string) npyArray {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(b)) != st.Size() {
		t.Fatalf("%s: stat says %d bytes, read %d", path, st.Size(), len(b))
	}
	if len(b) < 10 || string(b[:6]) != "\x93NUMPY" || b[6] != 1 || b[7] != 0 {
		t.Fatalf("%s: not a NumPy 1.0 file (starts %q)", path, b[:min(len(b), 8)])
	}
	off := 10 + int(binary.LittleEndian.Uint16(b[8:10]))
	if off > len(b) || off%64 != 0 || b[off-1] != '\n' {
		t.Fatalf("%s: header of %d bytes: the data must start at a multiple of 64 after a newline", path, off)
	}
	h := string(b[10:off])
	d, f, s := npyDescr.FindStringSubmatch(h), npyFortran.FindStringSubmatch(h), npyShapeRE.FindStringSubmatch(h)
	if d == nil || f == nil || s == nil || f[1] != "False" {
		t.Fatalf("%s: header %q: want descr, fortran_order False and shape", path, h)
	}
	size, ok := npySizes[d[1]]
	if !ok {
		t.Fatalf("%s: dtype %s, want one of |u1 |b1 <f4 <i8", path, d[1])
	}
	a := npyArray{DType: d[1], Data: b[off:]}
	n := size
	for _, x := range strings.Split(s[1], ",") {
		if x = strings.TrimSpace(x); x == "" {
			continue
		}
		v, err := strconv.Atoi(x)
		if err != nil {
			t.Fatalf("%s: shape (%s)", path, s[1])
		}
		a.Shape = append(a.Shape, v)
		n *= v
	}
	if len(a.Data) != n {
		t.Fatalf("%s: %d data bytes for %s %v (%d)", path, len(a.Data), a.DType, a.Shape, n)
	}
	if a.DType == "|b1" {
		for i, v := range a.Data {
			if v > 1 {
				t.Fatalf("%s: bool %d at byte %d", path, v, i)
			}
		}
	}
	return a
}

// row is sample j's bytes (the array's first axis is the batch).
func (a npyArray) row(j int) []byte {
	n := len(a.Data) / a.Shape[0]
	return a.Data[j*n : (j+1)*n]
}

func (a npyArray) int64At(j int) int64 { return int64(binary.LittleEndian.Uint64(a.row(j))) }

func (a npyArray) boolRow(j int) []bool {
	r := a.row(j)
	out := make([]bool, len(r))
	for i, v := range r {
		out[i] = v == 1
	}
	return out
}

func (a npyArray) float32Row(j int) []float32 {
	r := a.row(j)
	out := make([]float32, len(r)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(r[4*i:]))
	}
	return out
}
