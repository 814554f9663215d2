package view

import (
	"encoding/json"
	"fmt"
	"strings"
)

// batchView is what /api/batch returns: one batch as the trainer receives
// it, per sample, without its pixels (each frame is its own request to
// /api/frame).
type batchView struct {
	Mode       string      `json:"mode"` // "steps" or "pairs"
	View       string      `json:"view"`
	N          int64       `json:"n"`
	Rank       int         `json:"rank"`
	NumBatches int64       `json:"num_batches"`
	Layout     string      `json:"layout"`
	Slots      []slotInfo  `json:"slots"`
	Action     *seriesInfo `json:"action"`
	State      *seriesInfo `json:"state"`
	// Extra lists the arrays of the batch that the viewer knows no
	// meaning of (augmentation parameters, say): each sample's row of
	// them is in its Extra.
	Extra   []arrayInfo  `json:"extra"`
	Samples []sampleView `json:"samples"`
}

// slotInfo is a camera slot: its frame size and deltas (steps from t; in
// pair mode the frames' positions 0..F-1).
type slotInfo struct {
	Name   string `json:"name"`
	Size   []int  `json:"size"`
	Deltas []int  `json:"deltas"`
}

// seriesInfo describes the action or state array: the deltas of its steps
// and its width (the mix's widest).
type seriesInfo struct {
	Deltas []int `json:"deltas"`
	Dim    int   `json:"dim"`
	Summed bool  `json:"summed"` // pair mode: the actions over [t, t+offset) summed
}

// sampleView is one sample: where it came from and what it holds.
type sampleView struct {
	Index        int                `json:"index"`
	Dataset      string             `json:"dataset"`
	DatasetIndex *int64             `json:"dataset_index,omitempty"`
	Episode      string             `json:"episode,omitempty"`
	T            *int64             `json:"t,omitempty"`
	FrameIndices []int64            `json:"frame_indices,omitempty"`
	Offset       *int64             `json:"offset,omitempty"`
	Task         string             `json:"task"`
	Robot        string             `json:"robot,omitempty"`
	Repeat       bool               `json:"repeat"` // the val view's top-up (sample_is_pad, is_repeat)
	Slots        []sampleSlot       `json:"slots"`
	Action       *sampleSeries      `json:"action,omitempty"`
	State        *sampleSeries      `json:"state,omitempty"`
	Extra        map[string]numbers `json:"extra,omitempty"`
}

// sampleSlot is a slot of a sample: which of its steps are padding
// (_is_pad) and whether the dataset has the camera at all (image_mask).
type sampleSlot struct {
	IsPad []bool `json:"is_pad"`
	Mask  bool   `json:"mask"`
}

// sampleSeries is a sample's action chunk or state history: one vector
// per step, which steps are padding, which dimensions are the dataset's.
type sampleSeries struct {
	Values []numbers `json:"values"`
	IsPad  []bool    `json:"is_pad,omitempty"`
	Mask   []bool    `json:"mask,omitempty"`
}

// batchMeta is a batch's .json, both modes' fields.
type batchMeta struct {
	DatasetName  []string    `json:"dataset_name"`
	EpisodeID    []string    `json:"episode_id"`
	Task         []string    `json:"task"`
	Language     []string    `json:"language"`
	Robot        []string    `json:"robot"`
	FrameIdx     []int64     `json:"frame_idx"`
	FrameIndices [][]int64   `json:"frame_indices"`
	Offset       []int64     `json:"offset"`
	Action       [][]float64 `json:"action"`
	ActionMask   [][]float64 `json:"action_mask"`
	InitialState [][]float64 `json:"initial_state"`
	StateMask    [][]float64 `json:"state_mask"`
	IsRepeat     []bool      `json:"is_repeat"`
}

func at[T any](s []T, i int) (T, bool) {
	var zero T
	if i < 0 || i >= len(s) {
		return zero, false
	}
	return s[i], true
}

// readBatch describes batch n of a view of rank r.
func (m *Mount) readBatch(r rankDir, view string, n int64) (*batchView, error) {
	dir, vi, err := r.batchDir(view)
	if err != nil {
		return nil, err
	}
	if vi == nil {
		return nil, fmt.Errorf("info.json has no %s view", view)
	}
	if n < 0 || n >= vi.NumBatches {
		return nil, badRequest("batch %d: the %s view lists batches 0 to %d", n, viewName(view), vi.NumBatches-1)
	}
	bv := &batchView{View: viewName(view), N: n, Rank: r.Rank, NumBatches: vi.NumBatches, Layout: r.info.Config.Layout}
	var meta batchMeta
	if b, err := m.readFile(dir + batchName(n) + ".json"); err == nil {
		if err := json.Unmarshal(b, &meta); err != nil {
			return nil, fmt.Errorf("%s%s.json: %w", dir, batchName(n), err)
		}
	} else if !isNotExist(err) { // meta: none writes no .json
		return nil, err
	}
	if _, steps := r.info.steps(); steps {
		bv.Mode = "steps"
		err = m.stepBatch(r, dir, n, &meta, bv)
	} else {
		bv.Mode = "pairs"
		err = m.pairBatch(r, dir, n, &meta, bv)
	}
	if err != nil {
		return nil, err
	}
	return bv, nil
}

func viewName(v string) string {
	if v == "" {
		return "train"
	}
	return v
}

// datasetNames are the config's datasets in order: dataset_index's
// meaning.
func (r rankDir) datasetNames() []string {
	names := make([]string, len(r.info.Config.Datasets))
	for i, d := range r.info.Config.Datasets {
		names[i] = d.Name
	}
	return names
}

// stepBatch fills bv from a step-mode batch's arrays.
func (m *Mount) stepBatch(r rankDir, dir string, n int64, meta *batchMeta, bv *batchView) error {
	s := r.info.Sample
	for _, sl := range s.Slots {
		bv.Slots = append(bv.Slots, slotInfo{Name: sl.Name, Size: sl.Size, Deltas: sl.Deltas})
	}
	arrays := map[string][]numbers{}
	for _, a := range s.Arrays {
		if !safeArrayFile.MatchString(a.File) {
			return fmt.Errorf("info.json names an array file %q the viewer does not read", a.File)
		}
		if strings.HasPrefix(a.Name, "observation.images.") && !strings.HasSuffix(a.Name, "_is_pad") {
			continue // pixels: /api/frame, one frame at a time
		}
		f, h, err := m.openArray(dir + batchName(n) + "." + a.File)
		if err != nil {
			return err
		}
		rows, err := h.rows(f)
		f.Close()
		if err != nil {
			return fmt.Errorf("%s%s.%s: %w", dir, batchName(n), a.File, err)
		}
		arrays[a.Name] = rows
		if !knownArray(a.Name, s) {
			bv.Extra = append(bv.Extra, a)
		}
	}
	B := r.info.BatchSize
	if a, ok := arrays["action"]; ok && len(a) > 0 {
		bv.Action = &seriesInfo{Deltas: s.ActionDeltas, Dim: r.info.ActionDim}
	}
	if a, ok := arrays["observation.state"]; ok && len(a) > 0 {
		bv.State = &seriesInfo{Deltas: s.StateDeltas, Dim: r.info.StateDim}
	}
	names := r.datasetNames()
	for i := range B {
		sv := sampleView{Index: i}
		if v, ok := at(arrays["dataset_index"], i); ok && len(v.V) == 1 {
			di := int64(v.V[0])
			sv.DatasetIndex = &di
			if name, ok := at(names, int(di)); ok {
				sv.Dataset = name
			}
		}
		if name, ok := at(meta.DatasetName, i); ok {
			sv.Dataset = name
		}
		sv.Episode, _ = at(meta.EpisodeID, i)
		sv.Task, _ = at(meta.Task, i)
		sv.Robot, _ = at(meta.Robot, i)
		if v, ok := at(arrays["frame_index"], i); ok && len(v.V) == 1 {
			t := int64(v.V[0])
			sv.T = &t
		}
		if v, ok := at(arrays["sample_is_pad"], i); ok && len(v.V) == 1 {
			sv.Repeat = v.V[0] != 0
		}
		for k, sl := range s.Slots {
			ss := sampleSlot{Mask: true}
			if v, ok := at(arrays["observation.images."+sl.Name+"_is_pad"], i); ok {
				ss.IsPad = bools(v)
			}
			if v, ok := at(arrays["image_mask"], i); ok && k < len(v.V) {
				ss.Mask = v.V[k] != 0
			}
			sv.Slots = append(sv.Slots, ss)
		}
		sv.Action = series(arrays, "action", "action_is_pad", "action_mask", i)
		sv.State = series(arrays, "observation.state", "observation.state_is_pad", "state_mask", i)
		for _, a := range bv.Extra {
			if v, ok := at(arrays[a.Name], i); ok {
				if sv.Extra == nil {
					sv.Extra = map[string]numbers{}
				}
				sv.Extra[a.Name] = v
			}
		}
		bv.Samples = append(bv.Samples, sv)
	}
	return nil
}

// knownArray reports an array whose meaning the page draws itself.
func knownArray(name string, s *sampleInfo) bool {
	switch name {
	case "image_mask", "observation.state", "observation.state_is_pad", "state_mask",
		"action", "action_is_pad", "action_mask", "dataset_index", "frame_index", "sample_is_pad":
		return true
	}
	for _, sl := range s.Slots {
		if name == "observation.images."+sl.Name || name == "observation.images."+sl.Name+"_is_pad" {
			return true
		}
	}
	return false
}

func bools(v numbers) []bool {
	out := make([]bool, len(v.V))
	for i, x := range v.V {
		out[i] = x != 0
	}
	return out
}

// series is sample i's rows of a [B, T, D] array with its [B, T] pad and
// [B, D] mask arrays.
func series(arrays map[string][]numbers, name, pad, mask string, i int) *sampleSeries {
	row, ok := at(arrays[name], i)
	if !ok {
		return nil
	}
	ss := &sampleSeries{}
	p, hasPad := at(arrays[pad], i)
	steps := 1
	if hasPad && len(p.V) > 0 {
		steps = len(p.V)
		ss.IsPad = bools(p)
	}
	d := len(row.V) / steps
	for k := range steps {
		ss.Values = append(ss.Values, numbers{V: row.V[k*d : (k+1)*d], Bits: row.Bits})
	}
	if mk, ok := at(arrays[mask], i); ok {
		ss.Mask = bools(mk)
	}
	return ss
}

// pairBatch fills bv from a pair-mode batch: its .npy's shape and its
// .json.
func (m *Mount) pairBatch(r rankDir, dir string, n int64, meta *batchMeta, bv *batchView) error {
	fr := r.info.Frames
	if fr == nil || len(fr.Shape) != 5 {
		return fmt.Errorf("info.json: no frames shape")
	}
	F, H, W := fr.Shape[1], fr.Shape[2], fr.Shape[3]
	if fr.Layout == "BCFHW" {
		F, H, W = fr.Shape[2], fr.Shape[3], fr.Shape[4]
	}
	deltas := make([]int, F)
	for k := range deltas {
		deltas[k] = k
	}
	bv.Layout = fr.Layout
	bv.Slots = []slotInfo{{Name: "frames", Size: []int{H, W}, Deltas: deltas}}
	if len(meta.Action) > 0 {
		bv.Action = &seriesInfo{Deltas: []int{0}, Dim: r.info.ActionDim, Summed: true}
	}
	if len(meta.InitialState) > 0 {
		bv.State = &seriesInfo{Deltas: []int{0}, Dim: r.info.StateDim}
	}
	// The batch's other files (an augmented mix's augment.npy): extras,
	// a row per sample.
	arrays := map[string][]numbers{}
	for _, file := range r.info.Files {
		if file == "npy" || !strings.HasSuffix(file, ".npy") {
			continue
		}
		if !safeArrayFile.MatchString(file) {
			return fmt.Errorf("info.json names a batch file %q the viewer does not read", file)
		}
		f, h, err := m.openArray(dir + batchName(n) + "." + file)
		if err != nil {
			return err
		}
		rows, err := h.rows(f)
		f.Close()
		if err != nil {
			return fmt.Errorf("%s%s.%s: %w", dir, batchName(n), file, err)
		}
		name := strings.TrimSuffix(file, ".npy")
		arrays[name] = rows
		bv.Extra = append(bv.Extra, arrayInfo{Name: name, File: file, DType: h.DType, Shape: h.Shape})
	}
	names := r.datasetNames()
	for i := range fr.Shape[0] {
		sv := sampleView{Index: i, Slots: []sampleSlot{{Mask: true}}}
		for _, a := range bv.Extra {
			if v, ok := at(arrays[a.Name], i); ok {
				if sv.Extra == nil {
					sv.Extra = map[string]numbers{}
				}
				sv.Extra[a.Name] = v
			}
		}
		sv.Dataset, _ = at(meta.DatasetName, i)
		if sv.Dataset == "" && len(names) == 1 {
			sv.Dataset = names[0]
		}
		sv.Episode, _ = at(meta.EpisodeID, i)
		sv.Task, _ = at(meta.Language, i)
		sv.Robot, _ = at(meta.Robot, i)
		sv.Repeat, _ = at(meta.IsRepeat, i)
		if t, ok := at(meta.FrameIdx, i); ok {
			sv.T = &t
		}
		if o, ok := at(meta.Offset, i); ok {
			sv.Offset = &o
		}
		sv.FrameIndices, _ = at(meta.FrameIndices, i)
		if a, ok := at(meta.Action, i); ok {
			sv.Action = &sampleSeries{Values: []numbers{{V: a, Bits: 64}}}
			if mk, ok := at(meta.ActionMask, i); ok {
				sv.Action.Mask = floatBools(mk)
			}
		}
		if st, ok := at(meta.InitialState, i); ok {
			sv.State = &sampleSeries{Values: []numbers{{V: st, Bits: 64}}}
			if mk, ok := at(meta.StateMask, i); ok {
				sv.State.Mask = floatBools(mk)
			}
		}
		bv.Samples = append(bv.Samples, sv)
	}
	return nil
}

func floatBools(v []float64) []bool {
	out := make([]bool, len(v))
	for i, x := range v {
		out[i] = x != 0
	}
	return out
}
