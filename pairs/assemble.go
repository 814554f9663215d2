package pairs

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/oxefs/oxefs/episode"
	"github.com/oxefs/oxefs/frames"
	"github.com/oxefs/oxefs/plan"
	"github.com/oxefs/oxefs/sample"
)

// Assembler builds the samples of one dataset. It is immutable after New
// and shared by every worker; each worker brings its own Worker.
type Assembler struct {
	// dependencies
	ds *episode.Info

	// constants
	cfg      Config
	frames   int         // F
	declared frames.Size // image size features.json declares; zero fields: unknown
	keys     sample.Keys
}

// New returns the Assembler of cfg over the dataset's features. The mix
// config and the keys passed package config's rules when the mix was
// opened (config.Parse, config.DatasetConfig.CheckFeatures), and New does
// not apply them again: it only refuses, as a caller's mistake, what would
// make Build misbehave — frames config.Frames.Validate refuses, a size,
// layout or resize mode out of range, a key the dataset lacks (a
// *episode.UnknownFeatureError), dimensions wider than the mix's.
func New(ds *episode.Info, cfg Config) (*Assembler, error) {
	if err := cfg.Frames.Validate(); err != nil {
		return nil, fmt.Errorf("dataset %s: %w", ds.Name, err)
	}
	if cfg.Height < 1 || cfg.Width < 1 || !cfg.Layout.Valid() || !cfg.Resize.Valid() || !cfg.Decode.Valid() {
		return nil, fmt.Errorf("dataset %s: %dx%d frames, layout %v, resize %v: out of range", ds.Name, cfg.Height, cfg.Width, cfg.Layout, cfg.Resize)
	}
	a := &Assembler{ds: ds, cfg: cfg, frames: cfg.Frames.Count()}

	img, err := sample.LookupFeature(ds, "image_key", cfg.ImageKey)
	if err != nil {
		return nil, err
	}
	if len(img.Shape) == 3 {
		a.declared = frames.Size{W: max(img.Shape[1], 0), H: max(img.Shape[0], 0)}
	}

	widest := func(n int) int {
		if n == 0 {
			return math.MaxInt // the dataset's own
		}
		return n
	}
	if a.keys, err = sample.ResolveKeys(ds, cfg.ActionKeys, cfg.StateKey, cfg.LanguageKey, widest(cfg.MaxActionDim), widest(cfg.MaxStateDim)); err != nil {
		return nil, err
	}
	if a.cfg.MaxActionDim == 0 {
		a.cfg.MaxActionDim = a.keys.ActionDim
	}
	if a.cfg.MaxStateDim == 0 {
		a.cfg.MaxStateDim = a.keys.State.Dim
	}
	return a, nil
}

// Config returns the configuration, with MaxActionDim and MaxStateDim
// resolved.
func (a *Assembler) Config() Config { return a.cfg }

// FramesPerSample is F.
func (a *Assembler) FramesPerSample() int { return a.frames }

// SampleBytes is the size of one sample's slot: F·H·W·3.
func (a *Assembler) SampleBytes() int { return a.frames * a.cfg.Height * a.cfg.Width * 3 }

// Build writes sample s of episode ep into dst, the sample's slot of the
// batch (SampleBytes long: [F][H][W][3] for BFHWC, [3][F][H][W] for BCFHW),
// and fills m when it is not nil. The frames come through f, the batch's
// frame stage (each frame decoded once per batch, with the transform
// parameters f draws for slot 0); ctx bounds what the camera's source
// reads (nothing, for images stored per step). Errors: a
// *sample.ShortEpisodeError when the episode is too short for the offset;
// a *episode.CorruptError (wrapping a *frames.ImageError for a bad image)
// for bad data. After an error dst holds partial data and must be
// rewritten.
func (a *Assembler) Build(ctx context.Context, w *Worker, f sample.Frames, s plan.Sample, ep episode.Episode, dst []byte, compressed []int32, m *Meta) error {
	if len(dst) != a.SampleBytes() {
		return fmt.Errorf("sample slot of %d bytes, want %d (%d frames of %dx%d)", len(dst), a.SampleBytes(), a.frames, a.cfg.Height, a.cfg.Width)
	}
	if ep.Dataset() != a.ds.Name || ep.Key() != s.Episode {
		return fmt.Errorf("dataset %s: asked to build sample of %s/%v from episode %s", a.ds.Name, a.ds.Name, s.Episode, ep.ID())
	}
	sel, err := Select(a.cfg.Frames, s.Key, s.Unit, ep.Steps(), w.idx)
	if err != nil {
		var se *sample.ShortEpisodeError
		if errors.As(err, &se) {
			se.Dataset, se.Episode = a.ds.Name, ep.ID()
			return se
		}
		return fmt.Errorf("dataset %s episode %s: %w", a.ds.Name, ep.ID(), err)
	}
	w.idx = sel.Indices
	w.req[0] = sample.Request{
		Image:    a.cfg.ImageKey,
		Declared: a.declared,
		Params:   f.Params(0),
		Steps:    sel.Indices,
		Dst: frames.Slot{
			Buf:    dst,
			Frames: a.frames,
			H:      a.cfg.Height,
			W:      a.cfg.Width,
			Layout: frames.Layout(a.cfg.Layout),              // same values: TestEnumsMatchFrames
			Resize: frames.ResizeMode(a.cfg.Resize),          // same values: TestEnumsMatchFrames
			Decode: frames.DecodeMode(a.cfg.Decode.Pixels()), // same values: TestEnumsMatchFrames
		},
		Compressed: compressed,
	}
	if err := f.Place(ctx, s.Dataset, ep, w.req[:]); err != nil {
		return err
	}
	if m == nil {
		return nil
	}
	return a.meta(w, ep, sel, m)
}

func (a *Assembler) meta(w *Worker, ep episode.Episode, sel Selection, m *Meta) error {
	m.DatasetName = a.ds.Name
	m.EpisodeID = ep.ID()
	m.FrameIdx = sel.T
	m.FrameIndices = append(m.FrameIndices[:0], sel.Indices...)
	m.Offset = sel.Offset
	m.Robot = a.cfg.Robot

	m.Action = m.Action[:0]
	for _, k := range a.keys.Actions {
		vals, err := a.vectors(w, ep, k)
		if err != nil {
			return err
		}
		for j := range k.Dim {
			var sum float64
			for s := sel.T; s < sel.T+sel.Offset; s++ {
				sum += vals[s*k.Dim+j]
			}
			m.Action = append(m.Action, sum)
		}
	}
	a.cfg.ActionNorm.Apply(m.Action)
	m.Action = padZeros(m.Action, a.cfg.MaxActionDim)

	m.InitialState = m.InitialState[:0]
	if a.keys.State.Key != "" {
		vals, err := a.vectors(w, ep, a.keys.State)
		if err != nil {
			return err
		}
		m.InitialState = append(m.InitialState, vals[sel.T*a.keys.State.Dim:(sel.T+1)*a.keys.State.Dim]...)
		a.cfg.StateNorm.Apply(m.InitialState)
	}
	m.InitialState = padZeros(m.InitialState, a.cfg.MaxStateDim)

	return a.language(w, ep, sel.T, m)
}

func padZeros(v []float64, n int) []float64 {
	for len(v) < n {
		v = append(v, 0)
	}
	return v
}

// vectors reads every step of a numeric feature into the worker's
// scratch and checks that there is one vector per step.
func (a *Assembler) vectors(w *Worker, ep episode.Episode, k sample.Vector) ([]float64, error) {
	vals, err := sample.StepVectors(ep, k.Key, k.Dim, w.floats)
	w.floats = vals[:0]
	return vals, err
}

// language sets m.Language, allocating only when it changes.
func (a *Assembler) language(w *Worker, ep episode.Episode, t int, m *Meta) error {
	text, err := a.keys.Language.At(ep, t, &w.floats, &w.text)
	if err != nil {
		return err
	}
	if string(text) != m.Language {
		m.Language = string(text)
	}
	return nil
}
