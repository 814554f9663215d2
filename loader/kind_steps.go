package loader

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"

	"github.com/oxefs/oxefs/config"
	"github.com/oxefs/oxefs/episode"
	"github.com/oxefs/oxefs/frames/av"
	"github.com/oxefs/oxefs/sample"
	"github.com/oxefs/oxefs/steps"
	"github.com/oxefs/oxefs/storage"
)

// stepKind is step samples (package steps): the mix has a `sample` block.
type stepKind struct{ cfg *config.Config }

// openDataset resolves a dataset's side of step samples: its camera per
// slot (use.Cameras, which config.DatasetConfig.CheckFeatures checked
// against its image features; image_key is not theirs), whether oxefs
// can decode those stored as video, and its deltas in steps, through its
// metadata's fps or its config's. Problems name the field and the valid
// choices.
func (k stepKind) openDataset(d *Dataset, use config.FeatureUse, ferrs config.ConfigErrors, bad func(key, format string, args ...any) *config.ConfigError) config.ConfigErrors {
	var errs config.ConfigErrors
	add := func(key, format string, args ...any) { errs = append(errs, bad(key, format, args...)) }
	ferrs = slices.DeleteFunc(ferrs, func(e *config.ConfigError) bool { return e.Field == "image_key" })
	d.Config.ImageKey = ""
	errs = append(errs, ferrs...)
	return append(errs, k.openSteps(d, use.Cameras, add)...)
}

// openSteps is openDataset's part for the cameras and the deltas:
// problems go to add, or are returned.
func (k stepKind) openSteps(d *Dataset, cams map[string]string, add func(key, format string, args ...any)) config.ConfigErrors {
	c := k.cfg
	s := c.Steps
	info := d.Data.Info()
	slots := make([]string, len(s.Cameras))
	for i, c := range s.Cameras {
		slots[i] = c.Name
	}
	dc := &d.Config
	for _, slot := range slices.Sorted(maps.Keys(cams)) {
		f, ok := info.Features.Lookup(cams[slot])
		if ok && strings.HasPrefix(f.Encoding, "video") {
			if err := av.Available(); err != nil {
				add("cameras", "%s is stored as video (%s), which oxefs decodes with libavcodec: %v", f.Key, f.Encoding, err)
			}
		}
	}
	d.Cameras = cams
	// The first slot the dataset maps is its camera where one is asked
	// for (the bare decode loop).
	for _, slot := range slots {
		if key, ok := cams[slot]; ok {
			d.Image, _ = info.Features.Lookup(key)
			break
		}
	}
	deltas, fps, err := steps.Resolve(c, dc, info.FPS)
	d.Deltas, d.FPS = deltas, fps
	var ce config.ConfigErrors
	if errors.As(err, &ce) {
		return ce
	}
	if err != nil {
		add("sample", "%v", err)
	}
	return nil
}

// minOffset is drop_last.
func (k stepKind) minOffset(*config.DatasetConfig) int { return k.cfg.Steps.DropLast }

// summedActions: a step sample holds each step's action, none summed.
func (k stepKind) summedActions() bool { return false }

// cameraSlots are the sample block's.
func (k stepKind) cameraSlots() []config.CameraSlot { return k.cfg.Steps.Cameras }

// checkLength: an episode must be longer than drop_last, and where the
// lengths are known, the longest must hold the action chunk.
func (k stepKind) checkLength(ctx context.Context, m *Mix, d *Dataset, field, split string, ranges []episode.Range, lengths []int32, log *slog.Logger) (errs config.ConfigErrors, chunk lengthFit) {
	s := m.Config.Steps
	dc := &d.Config
	var c lengthCheck
	local := storage.IsFiler(d.Data.Backend())
	switch {
	case lengths != nil:
		c = checkLengthsOf(lengths, s.DropLast)
	case local:
		var err error
		if c, err = probeLengths(ctx, d, ranges, s.DropLast); err != nil {
			log.Warn("could not check episode lengths against drop_last", "dataset", dc.Name, "split", split, "err", err)
			return nil, chunk
		}
	}
	bad := func(key, format string, args ...any) {
		errs = append(errs, &config.ConfigError{Line: m.Config.Line("sample"), Dataset: dc.Name, Field: key, Msg: fmt.Sprintf(format, args...)})
	}
	switch {
	case !c.known:
	case c.longest == 0:
		bad("sample.drop_last", "no episode of %s %q can be read (%d episodes, all corrupt)", field, split, c.seen)
	case !c.ok:
		bad("sample.drop_last", "drop_last %d: no episode of %s %q is longer (the longest of its %d episodes has %d steps); lower drop_last to at most %d, or leave the dataset out",
			s.DropLast, field, split, c.seen, c.longest, c.longest-1)
	}
	if lengths == nil || c.longest == 0 {
		return errs, chunk
	}
	chunk.known = true
	if span := config.Span(d.Deltas.Action); span > c.longest {
		at := slices.Index(lengths, int32(c.longest))
		chunk.short = &shortChunk{line: m.Config.Line("sample"), dataset: dc.Name, field: field, split: split,
			span: span, deltas: d.Deltas.Action, longestID: episodeAt(d, ranges, at), longest: c.longest}
	}
	return errs, chunk
}

// lengthFit is what the lengths of one split say of the action chunk:
// known when they are known, and short when the chunk is longer than
// every episode of the split.
type lengthFit struct {
	known bool
	short *shortChunk
}

// shortChunk is a split whose every episode is shorter than the action
// chunk: the chunk (its deltas in steps and their span) and the split's
// longest episode.
type shortChunk struct {
	line                  int // of the sample block
	dataset, field, split string
	span                  int
	deltas                []int
	longestID             string
	longest               int
}

// checkChunk judges the action chunk against every split whose lengths
// are known. A chunk longer than every episode of the whole mix is a
// config error (no sample could fill it: a chunk in the wrong unit, say),
// reported once for the mix with its longest episode; a chunk longer than
// one dataset's episodes only pads each of its samples, as LeRobot does,
// and is logged as a warning per split.
func checkChunk(fits []lengthFit, log *slog.Logger) config.ConfigErrors {
	var (
		short         []*shortChunk
		fitsSomewhere bool
		longest       *shortChunk // the split with the mix's longest episode
	)
	for _, f := range fits {
		switch {
		case f.short != nil:
			short = append(short, f.short)
			if longest == nil || f.short.longest > longest.longest {
				longest = f.short
			}
		case f.known:
			fitsSomewhere = true
		}
	}
	if len(short) == 0 {
		return nil
	}
	if fitsSomewhere {
		for _, s := range short {
			log.Warn("every sample of this dataset pads the end of its action chunk (action_is_pad): the chunk is longer than its every episode",
				"dataset", s.dataset, s.field, s.split, "chunk_steps", s.span, "longest_episode", s.longestID, "longest_steps", s.longest)
		}
		return nil
	}
	l := longest
	return config.ConfigErrors{{Line: l.line, Field: "sample.action",
		Msg: fmt.Sprintf("the action chunk spans %d steps (steps %s), longer than every episode of the mix: the longest, %s (dataset %q, %s %q), has %d steps; shorten the chunk to at most %d steps",
			l.span, config.StepsText(l.deltas), l.longestID, l.dataset, l.field, l.split, l.longest, l.longest)}}
}

// episodeAt is the id of the at-th episode of ranges.
func episodeAt(d *Dataset, ranges []episode.Range, at int) string {
	for _, r := range ranges {
		if int64(at) < r.Len() {
			si, _ := d.Data.Info().Split(r.Split)
			shard, rec := si.Locate(r.From + int64(at))
			return d.Data.EpisodeID(episode.Key{Split: r.Split, Shard: shard, Record: int(rec)})
		}
		at -= int(r.Len())
	}
	return "?"
}

// batchShape is the buffer of the frames, masks and indices; the state
// and action arrays, whose widths the datasets give, are left out of
// this bound.
func (k stepKind) batchShape() []int {
	l, err := steps.NewLayout(steps.SpecOf(k.cfg, 0, 0))
	if err != nil {
		return []int{0} // the config's rules refused it already
	}
	return []int{int(l.Total)}
}

// assemble makes the layout of the mix's step samples and one
// steps.Assembler per dataset.
func (k stepKind) assemble(m *Mix) (sample.Kind, error) {
	cfg := m.Config
	spec := steps.SpecOf(cfg, m.MaxStateDim, m.MaxActionDim)
	lay, err := steps.NewLayout(spec)
	if err != nil {
		return nil, err
	}
	out := make([]*steps.Assembler, len(m.Datasets))
	for i, d := range m.Datasets {
		dc := d.Config
		wc := steps.Config{
			Index:       m.datasetIndex(dc.Name),
			Cameras:     d.Cameras,
			Deltas:      d.Deltas,
			ActionKeys:  dc.ActionKeys,
			StateKey:    dc.StateKey,
			LanguageKey: dc.LanguageKey,
			Robot:       dc.Robot,
		}
		if d.Norm != nil {
			wc.ActionNorm = affine(cfg.Normalize.Action, d.Norm.Action)
			wc.StateNorm = affine(cfg.Normalize.State, d.Norm.State)
		}
		if out[i], err = steps.New(d.Data.Info(), spec, lay, wc); err != nil {
			return nil, err
		}
	}
	return steps.NewKind(lay, out, cfg.Meta)
}

// datasetIndex is a dataset's dataset_index: its position in the config's
// datasets, those with weight ≤ 0 counted, so that an id survives a weight
// change.
func (m *Mix) datasetIndex(name string) int {
	return slices.IndexFunc(m.Config.Datasets, func(d config.DatasetConfig) bool { return d.Name == name })
}

// sampleInfo is info.json's "sample" section in step mode.
type sampleInfo struct {
	Mode     string     `json:"mode"`
	DropLast int        `json:"drop_last"`
	Slots    []slotInfo `json:"slots"`
	// StateDeltas and ActionDeltas are the config's deltas in steps (null
	// when given in seconds: then *Seconds, and each dataset's entry has
	// them in steps).
	StateDeltas   []int         `json:"state_deltas"`
	StateSeconds  []float64     `json:"state_seconds,omitempty"`
	ActionDeltas  []int         `json:"action_deltas"`
	ActionSeconds []float64     `json:"action_seconds,omitempty"`
	Arrays        []steps.Array `json:"arrays"`
}

// slotInfo is one camera slot in info.json.
type slotInfo struct {
	Name    string    `json:"name"`
	Size    [2]int    `json:"size"`
	Deltas  []int     `json:"deltas"`
	Seconds []float64 `json:"seconds,omitempty"`
	// Decode is the slot's decode mode; with gpu, JPEGSize names the
	// array of its frames' JPEG sizes.
	Decode   config.DecodeMode `json:"decode"`
	JPEGSize string            `json:"jpeg_size,omitempty"`
}

// partedServing says how step-mode batches are served, in info.json's
// serving section.
const partedServing = "step-mode batches are several .npy files, each a range of one buffer and, with passthrough, each a memfd of its own served by the kernel"

// describe: the batch's arrays are info.json's "sample", and its
// serving section says they are served as several files.
func (k stepKind) describe(p *Pipeline, in *info) {
	s := p.Mix.Config.Steps
	out := &sampleInfo{
		Mode: "steps", DropLast: s.DropLast, Arrays: p.kind.(*steps.Kind).Layout().Arrays,
		StateDeltas: s.State.Steps, StateSeconds: s.State.Seconds,
		ActionDeltas: s.Action.Steps, ActionSeconds: s.Action.Seconds,
	}
	spec := steps.SpecOf(p.Mix.Config, 0, 0)
	for i, c := range s.Cameras {
		sl := slotInfo{Name: c.Name, Size: [2]int{spec.Slots[i].H, spec.Slots[i].W}, Deltas: c.Deltas.Steps, Seconds: c.Deltas.Seconds, Decode: spec.Slots[i].Decode}
		if sl.Decode == config.DecodeGPU {
			sl.JPEGSize = steps.JPEGSizeArray(c.Name)
		}
		out.Slots = append(out.Slots, sl)
	}
	in.Sample = out
	recorded := map[string]string{}
	for _, sl := range spec.Slots {
		if sl.Augmented {
			recorded[sl.Name] = steps.AugmentArray(sl.Name)
		}
	}
	if in.Augment = newAugmentInfo(recorded); in.Augment != nil {
		in.Augment.In = "NNNNNN.<array>.npy, float32 [B, 18]"
	}
	for _, a := range out.Arrays {
		in.Files = append(in.Files, a.File)
	}
	in.BatchSize = p.Mix.Config.BatchSize
	if in.Serving != nil {
		s := *in.Serving
		s.Parted = partedServing
		in.Serving = &s
	}
}

// describeDataset fills a dataset's step-sample entries of info.json.
func (k stepKind) describeDataset(p *Pipeline, d *Dataset, di *datasetInfo) {
	idx := p.Mix.datasetIndex(d.Config.Name)
	di.DatasetIndex = &idx
	di.Cameras = d.Cameras
	if di.Cameras == nil {
		di.Cameras = map[string]string{}
	}
	di.FPS = d.FPS
	sd := &config.StepDeltas{Slots: map[string][]int{}, State: d.Deltas.State, Action: d.Deltas.Action}
	for i, c := range p.Mix.Config.Steps.Cameras {
		sd.Slots[c.Name] = d.Deltas.Slots[i]
	}
	di.Deltas = sd
}
