package steps

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/oxefs/oxefs/episode"
	"github.com/oxefs/oxefs/frames"
	"github.com/oxefs/oxefs/keyed"
	"github.com/oxefs/oxefs/plan"
	"github.com/oxefs/oxefs/sample"
)

// Assembler builds the step samples of one dataset. It is immutable after
// New and shared by every worker; each worker brings its own Worker.
type Assembler struct {
	ds   *episode.Info
	spec Spec
	lay  *Layout
	cfg  Config
	cams []camera // by slot
	keys sample.Keys
}

// camera is a slot's camera in the dataset: its image key ("" for none)
// and the size the dataset declares (zero: unknown).
type camera struct {
	key      string
	declared frames.Size
}

// New returns the Assembler of a dataset whose config passed package
// config's rules; it refuses, as a caller's mistake, what would make Build
// misbehave: a slot or key the dataset lacks, a delta list whose length is
// not the Spec's, dimensions wider than the mix's.
func New(ds *episode.Info, spec Spec, lay *Layout, cfg Config) (*Assembler, error) {
	a := &Assembler{ds: ds, spec: spec, lay: lay, cfg: cfg}
	if !spec.Resize.Valid() || !spec.Decode.Valid() {
		return nil, fmt.Errorf("dataset %s: resize %v, decode %v: out of range", ds.Name, spec.Resize, spec.Decode)
	}
	if len(cfg.Deltas.Slots) != len(spec.Slots) || len(cfg.Deltas.State) != spec.StateSteps || len(cfg.Deltas.Action) != spec.ActionSteps {
		return nil, fmt.Errorf("dataset %s: deltas %v do not fit the mix's %d slots, %d state and %d action steps", ds.Name, cfg.Deltas, len(spec.Slots), spec.StateSteps, spec.ActionSteps)
	}
	slots := map[string]bool{}
	for i, s := range spec.Slots {
		slots[s.Name] = true
		if len(cfg.Deltas.Slots[i]) != s.Steps {
			return nil, fmt.Errorf("dataset %s: slot %s has %d deltas, the mix %d", ds.Name, s.Name, len(cfg.Deltas.Slots[i]), s.Steps)
		}
		var c camera
		if key, ok := cfg.Cameras[s.Name]; ok {
			f, err := sample.LookupFeature(ds, "cameras."+s.Name, key)
			if err != nil {
				return nil, err
			}
			c.key = key
			if len(f.Shape) == 3 {
				c.declared = frames.Size{W: max(f.Shape[1], 0), H: max(f.Shape[0], 0)}
			}
		}
		a.cams = append(a.cams, c)
	}
	for slot := range cfg.Cameras {
		if !slots[slot] {
			return nil, fmt.Errorf("dataset %s: cameras: no slot %q in the mix", ds.Name, slot)
		}
	}
	var err error
	if a.keys, err = sample.ResolveKeys(ds, cfg.ActionKeys, cfg.StateKey, cfg.LanguageKey, spec.MaxActionDim, spec.MaxStateDim); err != nil {
		return nil, err
	}
	return a, nil
}

// Config returns the dataset's config.
func (a *Assembler) Config() Config { return a.cfg }

// ActionDim and StateDim are the dataset's own dimensions.
func (a *Assembler) ActionDim() int { return a.keys.ActionDim }

// StateDim is the state key's values per step (0 without one).
func (a *Assembler) StateDim() int { return a.keys.State.Dim }

// SelectT chooses t for a sample of an episode of steps steps: the
// sample's unit when samples_per_episode is 0, else keyed.Draw(key,
// keyed.StreamT, steps−drop_last). An episode of at most drop_last steps
// has no t: a *sample.ShortEpisodeError without dataset and episode.
func SelectT(spec Spec, key uint64, unit, steps int) (int, error) {
	starts := steps - spec.DropLast
	if starts <= 0 {
		return 0, &sample.ShortEpisodeError{Steps: steps, Need: spec.DropLast + 1}
	}
	if spec.SamplesPerEpisode >= 1 {
		return keyed.Draw(key, keyed.StreamT, starts), nil
	}
	if unit < 0 || unit >= starts {
		return 0, fmt.Errorf("unit %d is not a t of an episode of %d steps with drop_last %d", unit, steps, spec.DropLast)
	}
	return unit, nil
}

// Build writes sample i of batch b from episode ep: every array's part of
// sample i, and m when it is not nil, its frames through the batch's frame
// stage f. Errors are those of pairs' Build: a
// *sample.ShortEpisodeError, a *episode.CorruptError for bad data, or a
// read's error naming the episode. After an error sample i holds partial
// data and must be rewritten.
func (a *Assembler) Build(ctx context.Context, w *Worker, f sample.Frames, s plan.Sample, ep episode.Episode, b *Batch, i int, m *Meta) error {
	if ep.Dataset() != a.ds.Name || ep.Key() != s.Episode {
		return fmt.Errorf("dataset %s: asked to build sample of %s/%v from episode %s", a.ds.Name, a.ds.Name, s.Episode, ep.ID())
	}
	if b.Layout != a.lay || i < 0 || i >= b.Layout.Arrays[0].Shape[0] {
		return fmt.Errorf("sample %d of a batch of another layout", i)
	}
	steps := ep.Steps()
	t, err := SelectT(a.spec, s.Key, s.Unit, steps)
	if err != nil {
		var se *sample.ShortEpisodeError
		if errors.As(err, &se) {
			se.Dataset, se.Episode = a.ds.Name, ep.ID()
			return se
		}
		return fmt.Errorf("dataset %s episode %s: %w", a.ds.Name, ep.ID(), err)
	}
	l := b.Layout
	if l.state >= 0 {
		if err := a.writeState(w, ep, t, b, i); err != nil {
			return err
		}
	}
	if l.action >= 0 {
		if err := a.writeAction(w, ep, t, b, i); err != nil {
			return err
		}
	}
	if m != nil {
		m.DatasetName, m.EpisodeID, m.Robot = a.ds.Name, ep.ID(), a.cfg.Robot
		m.Index = -1
		if n, ok := ep.(episode.Numbered); ok {
			m.Index = n.FirstIndex() + int64(t)
		}
		if err := a.language(w, ep, t, m); err != nil {
			return err
		}
	}
	binary.LittleEndian.PutUint64(l.sample(b.Buf, l.datasetIndex, i), uint64(a.cfg.Index))
	binary.LittleEndian.PutUint64(l.sample(b.Buf, l.frameIndex, i), uint64(t))
	return a.writeFrames(ctx, w, f, s, ep, t, b, i)
}

// clamped fills idx with clamp(t+d, 0, steps−1) per delta and pad with
// whether t+d is outside the episode.
func clamped(deltas []int, t, steps int, idx []int, pad []byte) []int {
	idx = idx[:0]
	for j, d := range deltas {
		x := t + d
		p := byte(0)
		if x < 0 || x >= steps {
			p = 1
		}
		pad[j] = p
		idx = append(idx, min(max(x, 0), steps-1))
	}
	return idx
}

func putF32(dst []byte, v float64) { binary.LittleEndian.PutUint32(dst, math.Float32bits(float32(v))) }

// writeState writes observation.state, its _is_pad and state_mask.
func (a *Assembler) writeState(w *Worker, ep episode.Episode, t int, b *Batch, i int) error {
	l := b.Layout
	dst := l.sample(b.Buf, l.state, i)
	pad := l.sample(b.Buf, l.statePad, i)
	mask := l.sample(b.Buf, l.stateMask, i)
	S := a.spec.MaxStateDim
	for j := range mask {
		mask[j] = b2u(j < a.keys.State.Dim)
	}
	w.state = clamped(a.cfg.Deltas.State, t, ep.Steps(), w.state, pad)
	clear(dst)
	if a.keys.State.Dim == 0 {
		return nil
	}
	vals, err := a.vectors(w, ep, a.keys.State)
	if err != nil {
		return err
	}
	row := w.row[:0]
	for j, step := range w.state {
		row = append(row[:0], vals[step*a.keys.State.Dim:(step+1)*a.keys.State.Dim]...)
		a.cfg.StateNorm.Apply(row)
		for k, x := range row {
			putF32(dst[4*(j*S+k):], x)
		}
	}
	w.row = row
	return nil
}

// writeAction writes action, action_is_pad and action_mask: the action
// keys concatenated per step, normalised per step.
func (a *Assembler) writeAction(w *Worker, ep episode.Episode, t int, b *Batch, i int) error {
	l := b.Layout
	dst := l.sample(b.Buf, l.action, i)
	pad := l.sample(b.Buf, l.actPad, i)
	mask := l.sample(b.Buf, l.actionMask, i)
	A := a.spec.MaxActionDim
	for j := range mask {
		mask[j] = b2u(j < a.keys.ActionDim)
	}
	w.state = clamped(a.cfg.Deltas.Action, t, ep.Steps(), w.state, pad)
	clear(dst)
	if a.keys.ActionDim == 0 {
		return nil
	}
	H := len(w.state)
	w.chunk = append(w.chunk[:0], make([]float64, H*a.keys.ActionDim)...)
	at := 0
	for _, k := range a.keys.Actions {
		vals, err := a.vectors(w, ep, k)
		if err != nil {
			return err
		}
		for j, step := range w.state {
			copy(w.chunk[j*a.keys.ActionDim+at:], vals[step*k.Dim:(step+1)*k.Dim])
		}
		at += k.Dim
	}
	for j := range H {
		row := w.chunk[j*a.keys.ActionDim : (j+1)*a.keys.ActionDim]
		a.cfg.ActionNorm.Apply(row)
		for k, x := range row {
			putF32(dst[4*(j*A+k):], x)
		}
	}
	return nil
}

func b2u(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// vectors reads every step of a numeric feature into the worker's
// scratch and checks that there is one vector per step.
func (a *Assembler) vectors(w *Worker, ep episode.Episode, k sample.Vector) ([]float64, error) {
	vals, err := sample.StepVectors(ep, k.Key, k.Dim, w.floats)
	w.floats = vals[:0]
	return vals, err
}

// language sets m.Task, the instruction at t (or the episode's),
// allocating only when it changes.
func (a *Assembler) language(w *Worker, ep episode.Episode, t int, m *Meta) error {
	text, err := a.keys.Language.At(ep, t, &w.floats, &w.text)
	if err != nil {
		return err
	}
	if string(text) != m.Task {
		m.Task = string(text)
	}
	return nil
}

// DropLast is the mix's drop_last.
func (a *Assembler) DropLast() int { return a.spec.DropLast }
