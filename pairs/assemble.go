package pairs

import (
	"errors"
	"fmt"

	"github.com/oxefs/oxefs/cache"
	"github.com/oxefs/oxefs/cache/tfds"
	"github.com/oxefs/oxefs/episode"
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
	langStep bool // the language is per step (else per episode)
}

// vector is one numeric feature read per step.
type vector struct {
	key string
	dim int
}

// New checks cfg against the dataset's features and returns its
// Assembler. Errors name the field, the dataset and the valid choices (an
// unknown key is a *cache.UnknownFeatureError listing the keys that fit).
func New(ds *cache.Dataset, cfg Config) (*Assembler, error) {
	if err := cfg.Frames.Validate(); err != nil {
		return nil, fmt.Errorf("dataset %s: %w", ds.Name, err)
	}
	if cfg.Height < 1 || cfg.Width < 1 {
		return nil, fmt.Errorf("image_size [%d, %d]: both must be at least 1", cfg.Height, cfg.Width)
	}
	if int(cfg.Layout) >= len(layoutNames) {
		return nil, fmt.Errorf("layout %v is not valid (valid: BFHWC, BCFHW)", cfg.Layout)
	}
	if int(cfg.Resize) >= len(resizeNames) {
		return nil, fmt.Errorf("resize %v is not valid (valid: squash, crop, pad)", cfg.Resize)
	}
	a := &Assembler{ds: ds, cfg: cfg, frames: cfg.Frames.Count()}

	isCamera := func(f tfds.Feature) bool { return f.Kind == tfds.KindImage && f.PerStep && !f.Ragged() }
	img, ok := ds.Features.Lookup(cfg.ImageKey)
	if !ok || !isCamera(img) {
		return nil, keyError(ds, "image_key", cfg.ImageKey, "a per-step image", isCamera)
	}
	if len(img.Shape) == 3 {
		a.declared = size{W: max(img.Shape[1], 0), H: max(img.Shape[0], 0)}
	}

	var own int
	for _, k := range cfg.ActionKeys {
		n, err := vectorDim(ds, "action_keys", k)
		if err != nil {
			return nil, err
		}
		a.actions = append(a.actions, vector{k, n})
		own += n
	}
	if a.cfg.MaxActionDim == 0 {
		a.cfg.MaxActionDim = own
	}
	if a.cfg.MaxActionDim < own {
		return nil, fmt.Errorf("action_keys: dataset %s: %v have %d values per step, more than the mix's action dimension %d", ds.Name, cfg.ActionKeys, own, a.cfg.MaxActionDim)
	}
	if cfg.StateKey != "" {
		n, err := vectorDim(ds, "state_key", cfg.StateKey)
		if err != nil {
			return nil, err
		}
		a.state = vector{cfg.StateKey, n}
	}
	if a.cfg.MaxStateDim == 0 {
		a.cfg.MaxStateDim = a.state.dim
	}
	if a.cfg.MaxStateDim < a.state.dim {
		return nil, fmt.Errorf("state_key: dataset %s: %q has %d values per step, more than the mix's state dimension %d", ds.Name, cfg.StateKey, a.state.dim, a.cfg.MaxStateDim)
	}

	if cfg.LanguageKey != "" {
		isText := func(f tfds.Feature) bool { return languageOf(f) != languageNone }
		f, ok := ds.Features.Lookup(cfg.LanguageKey)
		if !ok || !isText(f) {
			return nil, keyError(ds, "language_key", cfg.LanguageKey, "a text, string or code-point feature", isText)
		}
		a.langKey, a.lang, a.langStep = f.Key, languageOf(f), f.PerStep
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
// and fills m when it is not nil. Errors: a *ShortEpisodeError when the
// episode is too short for the offset; a *cache.CorruptError (wrapping an
// *ImageError for a bad image) for bad data. After an error dst holds
// partial data and must be rewritten.
func (a *Assembler) Build(d *Decoder, s mix.Sample, ep episode.Episode, dst []byte, m *Meta) error {
	if len(dst) != a.SampleBytes() {
		return fmt.Errorf("sample slot of %d bytes, want %d (%d frames of %dx%d)", len(dst), a.SampleBytes(), a.frames, a.cfg.Height, a.cfg.Width)
	}
	if ep.Dataset() != a.ds.Name || ep.Key() != s.Episode {
		return fmt.Errorf("dataset %s: asked to build sample of %s/%v from episode %s", a.ds.Name, a.ds.Name, s.Episode, ep.ID())
	}
	sel, err := a.cfg.Frames.Select(s.Key, s.Unit, ep.Steps(), d.idx)
	if err != nil {
		var se *ShortEpisodeError
		if errors.As(err, &se) {
			se.Dataset, se.Episode = a.ds.Name, ep.ID()
			return se
		}
		return fmt.Errorf("dataset %s episode %s: %w", a.ds.Name, ep.ID(), err)
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

func (a *Assembler) writeFrames(d *Decoder, ep episode.Episode, steps []int, dst []byte) error {
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
			return ep.Corrupt(&ImageError{Key: a.cfg.ImageKey, Step: step, Err: err})
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

func (a *Assembler) meta(d *Decoder, ep episode.Episode, sel Selection, m *Meta) error {
	m.DatasetName = a.ds.Name
	m.EpisodeID = ep.ID()
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
func (a *Assembler) vectors(d *Decoder, ep episode.Episode, k vector) ([]float64, error) {
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
		return nil, ep.Corrupt(fmt.Errorf("feature %q has %d values, want %d steps of %d", k.key, len(vals), ep.Steps(), k.dim))
	}
	return vals, nil
}

// language sets m.Language, allocating only when it changes.
func (a *Assembler) language(d *Decoder, ep episode.Episode, t int, m *Meta) error {
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
		per := v.Spec().Shape[0]
		if len(vals) < (step+1)*per {
			return ep.Corrupt(fmt.Errorf("feature %q has %d values, want %d per step", a.langKey, len(vals), per))
		}
		d.text = decodeCodes(d.text[:0], vals[step*per:(step+1)*per])
		text = d.text
	}
	if string(text) != m.Language {
		m.Language = string(text)
	}
	return nil
}
