package steps

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/oxefs/oxefs/config"
	"github.com/oxefs/oxefs/episode"
	"github.com/oxefs/oxefs/internal/pythontest"
	"github.com/oxefs/oxefs/plan"
	"github.com/oxefs/oxefs/sample"
)

var bridgeKey = episode.Key{Split: "train", Shard: 0, Record: 0} // 8 steps

func TestLayoutFilesAreNPY(t *testing.T) {
	for _, lay := range []config.Layout{config.BFHWC, config.BCFHW} {
		spec := bridgeSpec(5, lay, []int{-1, 0}, []int{-1, 0}, []int{0, 1, 2})
		l, err := NewLayout(spec)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, a := range l.Arrays {
			names = append(names, a.Name)
		}
		want := []string{
			"observation.images.primary", "observation.images.wrist", "observation.images.left",
			"observation.images.primary_is_pad", "observation.images.wrist_is_pad", "observation.images.left_is_pad",
			"image_mask", "observation.state", "observation.state_is_pad", "state_mask",
			"action", "action_is_pad", "action_mask", "dataset_index", "frame_index", "sample_is_pad",
		}
		if !slices.Equal(names, want) {
			t.Fatalf("arrays %v, want %v", names, want)
		}
		buf := bytes.Repeat([]byte{0xee}, int(l.Total))
		newTestBatch(l, buf)
		shapes := map[string][]int{
			"observation.images.primary": {5, 2, 48, 64, 3}, "observation.images.left": {5, 1, 16, 16, 3},
			"image_mask": {5, 3}, "observation.state": {5, 2, 9}, "action": {5, 3, 8}, "action_mask": {5, 8}, "frame_index": {5},
		}
		if lay == config.BCFHW {
			shapes["observation.images.primary"] = []int{5, 3, 2, 48, 64}
			shapes["observation.images.left"] = []int{5, 3, 1, 16, 16}
		}
		dir := t.TempDir()
		var end int64
		for _, a := range l.Arrays {
			if a.Off%FileAlign != 0 || a.Off < end {
				t.Errorf("%s at %d: not at a multiple of FileAlign after the previous file (ends %d)", a.Name, a.Off, end)
			}
			end = a.Off + a.Size
			f := buf[a.Off : a.Off+a.Size]
			n := parseNPY(t, f)
			if n.descr != a.DType || !slices.Equal(n.shape, a.Shape) {
				t.Errorf("%s: header says %s %v, layout %s %v", a.Name, n.descr, n.shape, a.DType, a.Shape)
			}
			if s, ok := shapes[a.Name]; ok && !slices.Equal(a.Shape, s) {
				t.Errorf("%s: shape %v, want %v", a.Name, a.Shape, s)
			}
			elem := map[string]int{DTypeU8: 1, DTypeBool: 1, DTypeF32: 4, DTypeI64: 8}[a.DType]
			size := elem
			for _, d := range a.Shape {
				size *= d
			}
			if len(n.data) != size {
				t.Errorf("%s: %d data bytes, want %d", a.Name, len(n.data), size)
			}
			if err := os.WriteFile(filepath.Join(dir, a.File), f, 0o644); err != nil {
				t.Fatal(err)
			}
			if i := slices.Index(want, a.Name); i+1 < len(want) {
				if pad := buf[end:l.Arrays[i+1].Off]; bytes.ContainsFunc(pad, func(r rune) bool { return r != 0 }) {
					t.Errorf("padding after %s not zeroed", a.Name)
				}
			}
		}
		if l.Total%FileAlign != 0 || l.Total < end {
			t.Errorf("total %d for files ending at %d", l.Total, end)
		}
		t.Run("numpy", func(t *testing.T) { numpyLoads(t, dir, l) })
	}
}

// numpyLoads checks with NumPy itself that every file loads, with and
// without mmap_mode, to the layout's dtype and shape.
func numpyLoads(t *testing.T, dir string, l *Layout) {
	py := pythontest.Find(t, "numpy")
	var want []string
	for _, a := range l.Arrays {
		want = append(want, fmt.Sprintf("%s %s %v", a.File, strings.Trim(a.DType, "<|"), a.Shape))
	}
	script := `
import sys, os, numpy as np
for f in sys.argv[2:]:
    a = np.load(os.path.join(sys.argv[1], f)); m = np.load(os.path.join(sys.argv[1], f), mmap_mode="r")
    assert a.shape == m.shape and a.dtype == m.dtype
    print(f, a.dtype.str.strip("<|"), "[" + " ".join(str(d) for d in a.shape) + "]")
`
	args := []string{"-c", script, dir}
	for _, a := range l.Arrays {
		args = append(args, a.File)
	}
	out, err := exec.Command(py, args...).CombinedOutput()
	if err != nil {
		if strings.Contains(string(out), "No module named 'numpy'") {
			t.Logf("numpy missing: %s", out)
			return
		}
		t.Fatalf("numpy: %v\n%s", err, out)
	}
	if got := strings.Split(strings.TrimSpace(string(out)), "\n"); !slices.Equal(got, want) {
		t.Fatalf("numpy read\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// build builds samples ts (t each, samples_per_episode 0) of the episode
// into one batch, each sample by its own goroutine when parallel.
func build(t *testing.T, a *Assembler, spec Spec, ep episode.Episode, key episode.Key, ts []int, parallel bool) (*testBatch, []Meta, int64) {
	t.Helper()
	l := a.lay
	b := newTestBatch(l, make([]byte, l.Total))
	metas := make([]Meta, len(ts))
	workers := make([]*testWorkerT, len(ts))
	errs := make([]error, len(ts))
	var wg sync.WaitGroup
	for i, tt := range ts {
		workers[i] = testWorker(t)
		run := func() {
			defer wg.Done()
			errs[i] = workers[i].build(a, context.Background(), plan.Sample{Episode: key, Unit: tt}, ep, b, i, &metas[i])
		}
		wg.Add(1)
		if parallel {
			go run()
		} else {
			run()
		}
	}
	wg.Wait()
	var decoded int64
	for i, err := range errs {
		if err != nil {
			t.Fatalf("sample %d (t=%d): %v", i, ts[i], err)
		}
		decoded += workers[i].Decoded()
	}
	return b, metas, decoded
}

func TestWindowsClampAndPad(t *testing.T) {
	ds := openFixture(t, "tiny_bridge")
	ep := loadEpisode(t, ds, bridgeKey)
	rec := record(t, "tiny_bridge", bridgeKey)
	L := ep.Steps()
	if L != rec.NumSteps || L < 5 {
		t.Fatalf("episode of %d steps, manifest %d", L, rec.NumSteps)
	}
	for _, c := range []struct {
		name                string
		slot, state, action []int
	}{
		{"act-like", []int{0}, []int{0}, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}},
		{"diffusion", []int{-1, 0}, []int{-1, 0}, []int{-1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14}},
		{"both ends", []int{-12, -3, 0, 3, 12}, []int{-20, 0, 20}, []int{-9, 9}},
		{"backwards", []int{2, -2}, []int{1, -1}, []int{3, 0, -3}},
	} {
		t.Run(c.name, func(t *testing.T) {
			spec := bridgeSpec(L, config.BFHWC, c.slot, c.state, c.action)
			l, err := NewLayout(spec)
			if err != nil {
				t.Fatal(err)
			}
			a, err := New(ds.Info(), spec, l, bridgeConfig(c.slot, c.state, c.action))
			if err != nil {
				t.Fatal(err)
			}
			ts := make([]int, L)
			for i := range ts {
				ts[i] = i
			}
			b, metas, _ := build(t, a, spec, ep, bridgeKey, ts, true)
			ref := testWorker(t)
			for i, tt := range ts {
				// state from TensorFlow's read of the record
				st := f32(t, b, "observation.state", i)
				pad := sampleBytes(t, b, "observation.state_is_pad", i)
				for j, d := range c.state {
					x := min(max(tt+d, 0), L-1)
					want := rec.State["steps/observation/state"][x]
					for k := range 9 {
						w := float32(0)
						if k < len(want) {
							w = float32(want[k])
						}
						if st[j*9+k] != w {
							t.Fatalf("t=%d delta %d: state[%d] = %v, want %v", tt, d, k, st[j*9+k], w)
						}
					}
					if p := tt+d < 0 || tt+d >= L; pad[j] != b2u(p) {
						t.Fatalf("t=%d delta %d: state_is_pad %d", tt, d, pad[j])
					}
				}
				act := f32(t, b, "action", i)
				apad := sampleBytes(t, b, "action_is_pad", i)
				for j, d := range c.action {
					x := min(max(tt+d, 0), L-1)
					var want []float64
					for _, k := range bridgeConfig(nil, nil, nil).ActionKeys {
						want = append(want, rec.Action[k][x]...)
					}
					for k := range 8 {
						w := float32(0)
						if k < len(want) {
							w = float32(want[k])
						}
						if act[j*8+k] != w {
							t.Fatalf("t=%d delta %d: action[%d] = %v, want %v", tt, d, k, act[j*8+k], w)
						}
					}
					if p := tt+d < 0 || tt+d >= L; apad[j] != b2u(p) {
						t.Fatalf("t=%d delta %d: action_is_pad %d", tt, d, apad[j])
					}
				}
				if m := sampleBytes(t, b, "action_mask", i); !bytes.Equal(m, []byte{1, 1, 1, 1, 1, 1, 1, 0}) {
					t.Fatalf("action_mask %v", m)
				}
				if m := sampleBytes(t, b, "state_mask", i); !bytes.Equal(m, []byte{1, 1, 1, 1, 1, 1, 1, 0, 0}) {
					t.Fatalf("state_mask %v", m)
				}
				if m := sampleBytes(t, b, "image_mask", i); !bytes.Equal(m, []byte{1, 1, 0}) {
					t.Fatalf("image_mask %v", m)
				}
				if d := binary.LittleEndian.Uint64(sampleBytes(t, b, "dataset_index", i)); d != 3 {
					t.Fatalf("dataset_index %d", d)
				}
				if f := binary.LittleEndian.Uint64(sampleBytes(t, b, "frame_index", i)); f != uint64(tt) {
					t.Fatalf("frame_index %d, want %d", f, tt)
				}
				if metas[i].Task != rec.Language || metas[i].Robot != "widowx" || metas[i].DatasetName != "tiny_bridge" || metas[i].EpisodeID != ep.ID() || metas[i].Index != -1 {
					t.Fatalf("meta %+v (language %q)", metas[i], rec.Language)
				}
				// frames: each position is the clamped step's frame, decoded alone
				for k, name := range []string{"primary", "wrist"} {
					sl := spec.Slots[k]
					got := sampleBytes(t, b, "observation.images."+name, i)
					fpad := sampleBytes(t, b, "observation.images."+name+"_is_pad", i)
					for p, d := range c.slot {
						x := min(max(tt+d, 0), L-1)
						one := decodeOne(t, a, ref, ep, k, x)
						n := sl.H * sl.W * 3
						if !bytes.Equal(got[p*n:(p+1)*n], one) {
							t.Fatalf("t=%d %s delta %d: not the frame of step %d", tt, name, d, x)
						}
						if want := b2u(tt+d < 0 || tt+d >= L); fpad[p] != want {
							t.Fatalf("t=%d %s delta %d: _is_pad %d", tt, name, d, fpad[p])
						}
					}
				}
				if left := sampleBytes(t, b, "observation.images.left", i); bytes.ContainsFunc(left, func(r rune) bool { return r != 0 }) {
					t.Fatal("the unmapped slot's frames are not zero")
				}
				if p := sampleBytes(t, b, "observation.images.left_is_pad", i); !bytes.Equal(p, []byte{1}) {
					t.Fatalf("the unmapped slot's _is_pad %v", p)
				}
			}
		})
	}
}

func TestDecodeOnce(t *testing.T) {
	ds := openFixture(t, "tiny_bridge")
	ep := loadEpisode(t, ds, bridgeKey)
	slot := []int{-2, -1, 0}
	spec := bridgeSpec(6, config.BCFHW, slot, []int{0}, []int{0})
	l, err := NewLayout(spec)
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(ds.Info(), spec, l, bridgeConfig(slot, []int{0}, []int{0}))
	if err != nil {
		t.Fatal(err)
	}
	// Steps used per slot: t=0 → {0}; 1 → {0,1}; 3 → {1,2,3}; 3 again;
	// 4 → {2,3,4}; 0 again: {0..4} = 5 distinct frames per slot, 10 in all,
	// against 6·3·2 = 36 positions.
	ts := []int{0, 1, 3, 3, 4, 0}
	for range 5 {
		shared, _, decoded := build(t, a, spec, ep, bridgeKey, ts, true)
		if decoded != 10 {
			t.Fatalf("%d frames decoded, want 10 (5 distinct steps in each of 2 slots)", decoded)
		}
		// The same bytes as samples built each in a batch of its own.
		for i, tt := range ts {
			lone := newTestBatch(l, make([]byte, l.Total))
			w := testWorker(t)
			if err := w.build(a, context.Background(), plan.Sample{Episode: bridgeKey, Unit: tt}, ep, lone, i, nil); err != nil {
				t.Fatal(err)
			}
			for _, name := range []string{"observation.images.primary", "observation.images.wrist"} {
				if !bytes.Equal(sampleBytes(t, shared, name, i), sampleBytes(t, lone, name, i)) {
					t.Fatalf("sample %d (t=%d) %s differs from the sample built alone", i, tt, name)
				}
			}
		}
	}
}

func TestNormalisationKeepsPaddingZero(t *testing.T) {
	ds := openFixture(t, "tiny_bridge")
	ep := loadEpisode(t, ds, bridgeKey)
	rec := record(t, "tiny_bridge", bridgeKey)
	action, state := []int{-1, 0, 1}, []int{0}
	spec := bridgeSpec(1, config.BFHWC, []int{0}, state, action)
	l, _ := NewLayout(spec)
	cfg := bridgeConfig([]int{0}, state, action)
	cfg.ActionNorm = &sample.Affine{Scale: slices.Repeat([]float64{2}, 7), Shift: slices.Repeat([]float64{5}, 7)}
	cfg.StateNorm = &sample.Affine{Scale: slices.Repeat([]float64{-1}, 7), Shift: slices.Repeat([]float64{1}, 7)}
	a, err := New(ds.Info(), spec, l, cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, _, _ := build(t, a, spec, ep, bridgeKey, []int{0}, false)
	act := f32(t, b, "action", 0)
	for j, d := range action {
		x := max(d, 0)
		var raw []float64
		for _, k := range cfg.ActionKeys {
			raw = append(raw, rec.Action[k][x]...)
		}
		for k := range 8 {
			want := float32(0)
			if k < 7 {
				want = float32(raw[k]*2 + 5)
			}
			if act[j*8+k] != want {
				t.Fatalf("delta %d dim %d: %v, want %v", d, k, act[j*8+k], want)
			}
		}
	}
	st := f32(t, b, "observation.state", 0)
	for k := range 9 {
		want := float32(0)
		if k < 7 {
			want = float32(-rec.State["steps/observation/state"][0][k] + 1)
		}
		if st[k] != want {
			t.Fatalf("state dim %d: %v, want %v", k, st[k], want)
		}
	}
}

func TestShortEpisode(t *testing.T) {
	ds := openFixture(t, "tiny_bridge")
	ep := loadEpisode(t, ds, bridgeKey)
	spec := bridgeSpec(1, config.BFHWC, []int{0}, []int{0}, []int{0})
	spec.DropLast = ep.Steps()
	spec.SamplesPerEpisode = 1
	l, _ := NewLayout(spec)
	a, err := New(ds.Info(), spec, l, bridgeConfig([]int{0}, []int{0}, []int{0}))
	if err != nil {
		t.Fatal(err)
	}
	err = testWorker(t).build(a, context.Background(), plan.Sample{Episode: bridgeKey}, ep, newTestBatch(l, make([]byte, l.Total)), 0, nil)
	var se *sample.ShortEpisodeError
	if !errors.As(err, &se) || !errors.Is(err, sample.ErrShortEpisode) || se.Dataset != "tiny_bridge" || se.Need != ep.Steps()+1 {
		t.Fatalf("drop_last = steps: %v, want a ShortEpisodeError naming the dataset", err)
	}
	// samples_per_episode ≥ 1 draws t in [0, steps−drop_last).
	seen := map[int]bool{}
	spec.DropLast, spec.SamplesPerEpisode = 3, 2
	for key := range uint64(200) {
		tt, err := SelectT(spec, key, 0, 8)
		if err != nil || tt < 0 || tt >= 5 {
			t.Fatalf("t = %d, %v; want t in [0, 5)", tt, err)
		}
		seen[tt] = true
	}
	if len(seen) != 5 {
		t.Fatalf("t drawn from %v, want all of [0, 5)", seen)
	}
}

func TestResolve(t *testing.T) {
	spec := &config.StepSpec{
		Cameras: []config.CameraSlot{{Name: "primary", Deltas: config.Deltas{Seconds: []float64{-0.1, 0}}}, {Name: "wrist"}},
		State:   config.Deltas{Steps: []int{-1, 0}},
		Action:  config.Deltas{Seconds: []float64{0, 0.1, 0.2, 0.25}},
	}
	cfg := &config.Config{Steps: spec}
	dc := &config.DatasetConfig{Name: "d"}
	d, fps, err := Resolve(cfg, dc, 20)
	if err != nil || fps != 20 {
		t.Fatal(err, fps)
	}
	// 0.25 s at 20 fps is 5 frames; -0.1 s is -2.
	if !slices.Equal(d.Slots[0], []int{-2, 0}) || !slices.Equal(d.Slots[1], []int{0}) || !slices.Equal(d.State, []int{-1, 0}) || !slices.Equal(d.Action, []int{0, 2, 4, 5}) {
		t.Fatalf("resolved %+v", d)
	}
	if _, _, err := Resolve(cfg, dc, 0); err == nil || !strings.Contains(err.Error(), "fps") || !strings.Contains(err.Error(), "sample.cameras.primary") {
		t.Fatalf("seconds without fps: %v", err)
	}
	dc.FPS = 10
	if d, fps, err := Resolve(cfg, dc, 0); err == nil {
		t.Fatalf("0.25 s at 10 fps is not a whole frame, resolved %v at %g", d, fps)
	} else if !strings.Contains(err.Error(), "sample.action") {
		t.Fatalf("error does not name the field: %v", err)
	}
	spec.Action = config.Deltas{Seconds: []float64{0, 0.1}}
	if d, fps, err := Resolve(cfg, dc, 0); err != nil || fps != 10 || !slices.Equal(d.Action, []int{0, 1}) || !slices.Equal(d.Slots[0], []int{-1, 0}) {
		t.Fatalf("fps from the config: %v %g %v", d, fps, err)
	}
	if _, _, err := Resolve(cfg, dc, 30); err == nil || !strings.Contains(err.Error(), "fps") {
		t.Fatalf("config fps 10 against metadata 30: %v", err)
	}
}

// numbered is an episode numbered across its dataset from first, as a
// LeRobot episode is.
type numbered struct {
	episode.Episode
	first int64
}

func (n numbered) FirstIndex() int64 { return n.first }

// TestMetaIndex: a sample's meta index is the episode's first frame index
// plus t for a numbered episode, −1 for one that is not (RLDS).
func TestMetaIndex(t *testing.T) {
	ds := openFixture(t, "tiny_bridge")
	ep := loadEpisode(t, ds, bridgeKey)
	spec := bridgeSpec(3, config.BFHWC, []int{0}, []int{0}, []int{0})
	l, err := NewLayout(spec)
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(ds.Info(), spec, l, bridgeConfig([]int{0}, []int{0}, []int{0}))
	if err != nil {
		t.Fatal(err)
	}
	ts := []int{0, 2, ep.Steps() - 1}
	for _, c := range []struct {
		name string
		ep   episode.Episode
		want func(t int) int64
	}{
		{"rlds", ep, func(int) int64 { return -1 }},
		{"numbered", numbered{ep, 1000}, func(t int) int64 { return 1000 + int64(t) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, metas, _ := build(t, a, spec, c.ep, bridgeKey, ts, false)
			for i, tt := range ts {
				if metas[i].Index != c.want(tt) {
					t.Errorf("t=%d: index %d, want %d", tt, metas[i].Index, c.want(tt))
				}
			}
		})
	}
}

func TestMetaJSON(t *testing.T) {
	metas := []Meta{{DatasetName: "a", EpisodeID: "a/train/0/1", Task: "pick", Robot: "r1", Index: 7}, {DatasetName: "b", EpisodeID: "b/train/2/3", Index: -1}}
	for _, c := range []struct {
		mode config.MetaMode
		want string
	}{
		{config.MetaFull, `{"dataset_name":["a","b"],"episode_id":["a/train/0/1","b/train/2/3"],"task":["pick",""],"robot":["r1",""],"index":[7,-1]}`},
		{config.MetaDataset, `{"dataset_name":["a","b"]}`},
		{config.MetaNone, ``},
	} {
		got, err := MetaJSON(c.mode, metas)
		if err != nil || string(got) != c.want {
			t.Errorf("%v: %s, %v; want %s", c.mode, got, err, c.want)
		}
	}
}
