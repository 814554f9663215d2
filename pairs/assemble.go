package pairs

import (
	"errors"
	"fmt"

	"github.com/oxefs/oxefs/cache"
	"github.com/oxefs/oxefs/cache/tfds"
	"github.com/oxefs/oxefs/mix"
)

// Assembler builds the samples of one dataset. It is immutable after New
// and shared by every worker; each worker brings its own Decoder.
type Assembler struct {
	// dependencies
	ds *cache.Dataset

	// constants
	cfg      Config
	frames   int  // F
	declared size // image size features.json declares; zero fields: unknown
	actions  []vector
	state    vector
	langKey  string
	lang     languageKind
	langPer  int  // languageCodes: the code points of one instruction
	langStep bool // the language is per step (else per episode)
}

// vector is one numeric feature read per step.
type vector struct {
	key string
	dim int
}

// New returns the Assembler of cfg over the dataset's features. The mix
// config and the keys passed package config's rules when the mix was
// opened (config.Parse, config.DatasetConfig.CheckFeatures), and New does
// not apply them again: it only refuses, as a caller's mistake, what would
// make Build misbehave — frames config.Frames.Validate refuses, a size,
// layout or resize mode out of range, a key the dataset lacks (a
// *cache.UnknownFeatureError), dimensions wider than the mix's.
func New(ds *cache.Dataset, cfg Config) (*Assembler, error) {
	if err := cfg.Frames.Validate(); err != nil {
		return nil, fmt.Errorf("dataset %s: %w", ds.Name, err)
	}
	if cfg.Height < 1 || cfg.Width < 1 || !cfg.Layout.Valid() || !cfg.Resize.Valid() {
		return nil, fmt.Errorf("dataset %s: %dx%d frames, layout %v, resize %v: out of range", ds.Name, cfg.Height, cfg.Width, cfg.Layout, cfg.Resize)
	}
	a := &Assembler{ds: ds, cfg: cfg, frames: cfg.Frames.Count()}
	feature := func(field, key string) (tfds.Feature, error) {
		f, ok := ds.Features.Lookup(key)
		if !ok {
			return f, fmt.Errorf("%s: %w", field, &cache.UnknownFeatureError{Dataset: ds.Name, Key: key})
		}
		return f, nil
	}

	img, err := feature("image_key", cfg.ImageKey)
	if err != nil {
		return nil, err
	}
	if len(img.Shape) == 3 {
		a.declared = size{W: max(img.Shape[1], 0), H: max(img.Shape[0], 0)}
	}

	var own int
	for _, k := range cfg.ActionKeys {
		f, err := feature("action_keys", k)
		if err != nil {
			return nil, err
		}
		a.actions = append(a.actions, vector{k, values(f.Shape)})
		own += values(f.Shape)
	}
	if a.cfg.MaxActionDim == 0 {
		a.cfg.MaxActionDim = own
	}
	if a.cfg.MaxActionDim < own {
		return nil, fmt.Errorf("action_keys: dataset %s: %v have %d values per step, more than the mix's action dimension %d", ds.Name, cfg.ActionKeys, own, a.cfg.MaxActionDim)
	}
	if cfg.StateKey != "" {
		f, err := feature("state_key", cfg.StateKey)
		if err != nil {
			return nil, err
		}
		a.state = vector{cfg.StateKey, values(f.Shape)}
	}
	if a.cfg.MaxStateDim == 0 {
		a.cfg.MaxStateDim = a.state.dim
	}
	if a.cfg.MaxStateDim < a.state.dim {
		return nil, fmt.Errorf("state_key: dataset %s: %q has %d values per step, more than the mix's state dimension %d", ds.Name, cfg.StateKey, a.state.dim, a.cfg.MaxStateDim)
	}

	if cfg.LanguageKey != "" {
		f, err := feature("language_key", cfg.LanguageKey)
		if err != nil {
			return nil, err
		}
		// config.LanguageOf accepted text (Text, string tensor) or an
		// integer tensor of code points of shape [n].
		a.langKey, a.lang, a.langStep = f.Key, languageText, f.PerStep
		if f.Kind != tfds.KindText && f.DType != "string" {
			if len(f.Shape) != 1 {
				return nil, fmt.Errorf("language_key: dataset %s: %q has shape %v, not the [n] of code points", ds.Name, f.Key, f.Shape)
			}
			a.lang, a.langPer = languageCodes, f.Shape[0]
		}
	}
	return a, nil
}

// values is the number of values one step of a vector feature holds.
func values(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
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
// and fills m when it is not nil. Errors: a *ShortEpisodeError when the
// episode is too short for the offset; a *cache.CorruptError (wrapping an
// *ImageError for a bad image) for bad data. After an error dst holds
// partial data and must be rewritten.
func (a *Assembler) Build(d *Decoder, s mix.Sample, ep *cache.Episode, dst []byte, m *Meta) error {
	if len(dst) != a.SampleBytes() {
		return fmt.Errorf("sample slot of %d bytes, want %d (%d frames of %dx%d)", len(dst), a.SampleBytes(), a.frames, a.cfg.Height, a.cfg.Width)
	}
	if ep.Dataset != a.ds.Name || ep.Ref != s.Episode {
		return fmt.Errorf("dataset %s: asked to build sample of %s/%v from episode %s", a.ds.Name, a.ds.Name, s.Episode, ep.ID)
	}
	sel, err := Select(a.cfg.Frames, s.Key, s.Unit, ep.Steps(), d.idx)
	if err != nil {
		var se *ShortEpisodeError
		if errors.As(err, &se) {
			se.Dataset, se.Episode = a.ds.Name, ep.ID
			return se
		}
		return fmt.Errorf("dataset %s episode %s: %w", a.ds.Name, ep.ID, err)
	}
	d.idx = sel.Indices
	if err := a.writeFrames(d, ep, sel.Indices, dst); err != nil {
		return err
	}
	if m == nil {
		return nil
	}
	return a.meta(d, ep, sel, m)
}

func (a *Assembler) writeFrames(d *Decoder, ep *cache.Episode, steps []int, dst []byte) error {
	v, err := ep.Feature(a.cfg.ImageKey)
	if err != nil {
		return err
	}
	H, W := a.cfg.Height, a.cfg.Width
	want, what := a.declared, "features.json declares"
	for i, step := range steps {
		fd := newFrameDst(dst, a.cfg.Layout, i, a.frames, H, W)
		direct, _ := fd.interleaved()
		img, err := d.decode(v.Bytes(step), want, what, direct, W, H)
		if err != nil {
			return a.corrupt(ep, &ImageError{Key: a.cfg.ImageKey, Step: step, Err: err})
		}
		if i == 0 && (want.W == 0 || want.H == 0) {
			want, what = size{W: img.W, H: img.H}, "the sample's first frame is"
		}
		if direct != nil && &img.Pix[0] == &direct[0] {
			continue // decoded in place, already the target size
		}
		d.rz.write(fd, a.cfg.Resize, img)
	}
	d.release() // the last frame is written: its decode memory goes back
	return nil
}

// corrupt wraps err in a *cache.CorruptError naming the episode's record.
func (a *Assembler) corrupt(ep *cache.Episode, err error) error {
	shard, serr := a.ds.ShardName(ep.Split, ep.Shard)
	if serr != nil {
		shard = fmt.Sprintf("%s shard %d", ep.Split, ep.Shard)
	}
	return &cache.CorruptError{Dataset: ep.Dataset, Shard: shard, Record: ep.Record, Err: err}
}

func (a *Assembler) meta(d *Decoder, ep *cache.Episode, sel Selection, m *Meta) error {
	m.DatasetName = a.ds.Name
	m.EpisodeID = ep.ID
	m.FrameIdx = sel.T
	m.FrameIndices = append(m.FrameIndices[:0], sel.Indices...)
	m.Offset = sel.Offset
	m.Robot = a.cfg.Robot

	m.Action = m.Action[:0]
	for _, k := range a.actions {
		vals, err := a.vectors(d, ep, k)
		if err != nil {
			return err
		}
		for j := range k.dim {
			var sum float64
			for s := sel.T; s < sel.T+sel.Offset; s++ {
				sum += vals[s*k.dim+j]
			}
			m.Action = append(m.Action, sum)
		}
	}
	m.Action = padZeros(m.Action, a.cfg.MaxActionDim)

	m.InitialState = m.InitialState[:0]
	if a.state.key != "" {
		vals, err := a.vectors(d, ep, a.state)
		if err != nil {
			return err
		}
		m.InitialState = append(m.InitialState, vals[sel.T*a.state.dim:(sel.T+1)*a.state.dim]...)
	}
	m.InitialState = padZeros(m.InitialState, a.cfg.MaxStateDim)

	return a.language(d, ep, sel.T, m)
}

func padZeros(v []float64, n int) []float64 {
	for len(v) < n {
		v = append(v, 0)
	}
	return v
}

// vectors reads every step of a numeric feature into the decoder's
// scratch and checks that there is one vector per step.
func (a *Assembler) vectors(d *Decoder, ep *cache.Episode, k vector) ([]float64, error) {
	v, err := ep.Feature(k.key)
	if err != nil {
		return nil, err
	}
	vals, err := v.Float64s(d.floats[:0])
	if err != nil {
		return nil, err
	}
	d.floats = vals
	if len(vals) != ep.Steps()*k.dim {
		return nil, a.corrupt(ep, fmt.Errorf("feature %q has %d values, want %d steps of %d", k.key, len(vals), ep.Steps(), k.dim))
	}
	return vals, nil
}

// language sets m.Language, allocating only when it changes.
func (a *Assembler) language(d *Decoder, ep *cache.Episode, t int, m *Meta) error {
	if a.lang == languageNone {
		m.Language = ""
		return nil
	}
	v, err := ep.Feature(a.langKey)
	if err != nil {
		return err
	}
	step := 0
	if a.langStep {
		step = t
	}
	var text []byte
	switch a.lang {
	case languageText:
		text = v.Bytes(step)
	case languageCodes:
		vals, err := v.Float64s(d.floats[:0])
		if err != nil {
			return err
		}
		d.floats = vals
		per := a.langPer
		if len(vals) < (step+1)*per {
			return a.corrupt(ep, fmt.Errorf("feature %q has %d values, want %d per step", a.langKey, len(vals), per))
		}
		d.text = decodeCodes(d.text[:0], vals[step*per:(step+1)*per])
		text = d.text
	}
	if string(text) != m.Language {
		m.Language = string(text)
	}
	return nil
}
