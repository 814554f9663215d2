package sample

import (
	"fmt"
	"unicode/utf8"

	"github.com/oxefs/oxefs/episode"
)

// Language reads a dataset's instruction (language_key): a Text feature or
// string tensor, or an integer tensor of code points (language_table), per
// step or per episode. The zero Language reads none. Both kinds read
// their samples' language through it.
type Language struct {
	key  string
	kind languageKind
	per  int  // languageCodes: the code points of one instruction
	step bool // the language is per step (else per episode)
}

// NewLanguage returns the reader of feature f, which config.LanguageOf
// accepted: text, or an integer tensor of code points of shape [n]; any
// other shape is an error naming dataset.
func NewLanguage(dataset string, f episode.Feature) (Language, error) {
	l := Language{key: f.Key, kind: languageText, step: f.PerStep}
	if f.Kind != episode.KindText && f.DType != "string" {
		if len(f.Shape) != 1 {
			return Language{}, fmt.Errorf("language_key: dataset %s: %q has shape %v, not the [n] of code points", dataset, f.Key, f.Shape)
		}
		l.kind, l.per = languageCodes, f.Shape[0]
	}
	return l, nil
}

// At returns the instruction of ep at step t (the episode's, when it is
// per episode), nil for the zero Language. floats and text are the
// caller's scratch, grown as needed; the result may alias text or the
// episode's bytes and is valid until either changes.
func (l Language) At(ep episode.Episode, t int, floats *[]float64, text *[]byte) ([]byte, error) {
	if l.kind == languageNone {
		return nil, nil
	}
	v, err := ep.Feature(l.key)
	if err != nil {
		return nil, err
	}
	step := 0
	if l.step {
		step = t
	}
	if l.kind == languageText {
		return v.Bytes(step), nil
	}
	vals, err := v.Float64s((*floats)[:0])
	if err != nil {
		return nil, err
	}
	*floats = vals
	if len(vals) < (step+1)*l.per {
		return nil, ep.Corrupt(fmt.Errorf("feature %q has %d values, want %d per step", l.key, len(vals), l.per))
	}
	*text = decodeCodes((*text)[:0], vals[step*l.per:(step+1)*l.per])
	return *text, nil
}

// StepVectors reads every step of the numeric feature key, dim values per
// step, appending to dst[:0], and checks that there is one vector per
// step (else corrupt data of ep).
func StepVectors(ep episode.Episode, key string, dim int, dst []float64) ([]float64, error) {
	v, err := ep.Feature(key)
	if err != nil {
		return nil, err
	}
	vals, err := v.Float64s(dst[:0])
	if err != nil {
		return nil, err
	}
	if len(vals) != ep.Steps()*dim {
		return vals, ep.Corrupt(fmt.Errorf("feature %q has %d values, want %d steps of %d", key, len(vals), ep.Steps(), dim))
	}
	return vals, nil
}

// Vector is one numeric feature read per step: its key and its values per
// step.
type Vector struct {
	Key string
	Dim int
}

// Keys are what a sample reads of a dataset besides its frames: its
// action keys (concatenated in order), its state key and its language key,
// resolved against the dataset's features.
type Keys struct {
	Actions   []Vector
	ActionDim int    // the actions' values per step, together
	State     Vector // Key "" without a state
	Language  Language
}

// ResolveKeys resolves the keys against ds's features. A key the dataset
// lacks is a *episode.UnknownFeatureError under its field; actions or a
// state wider than maxAction or maxState (the mix's widest) are an error.
func ResolveKeys(ds *episode.Info, actionKeys []string, stateKey, languageKey string, maxAction, maxState int) (Keys, error) {
	feature := func(field, key string) (episode.Feature, error) { return LookupFeature(ds, field, key) }
	var k Keys
	for _, key := range actionKeys {
		f, err := feature("action_keys", key)
		if err != nil {
			return Keys{}, err
		}
		k.Actions = append(k.Actions, Vector{key, values(f.Shape)})
		k.ActionDim += values(f.Shape)
	}
	if k.ActionDim > maxAction {
		return Keys{}, fmt.Errorf("action_keys: dataset %s: %v have %d values per step, more than the mix's action dimension %d", ds.Name, actionKeys, k.ActionDim, maxAction)
	}
	if stateKey != "" {
		f, err := feature("state_key", stateKey)
		if err != nil {
			return Keys{}, err
		}
		k.State = Vector{stateKey, values(f.Shape)}
	}
	if k.State.Dim > maxState {
		return Keys{}, fmt.Errorf("state_key: dataset %s: %q has %d values per step, more than the mix's state dimension %d", ds.Name, stateKey, k.State.Dim, maxState)
	}
	if languageKey != "" {
		f, err := feature("language_key", languageKey)
		if err != nil {
			return Keys{}, err
		}
		if k.Language, err = NewLanguage(ds.Name, f); err != nil {
			return Keys{}, err
		}
	}
	return k, nil
}

// LookupFeature returns feature key of ds; a key ds lacks is a
// *episode.UnknownFeatureError, under the config field that named it.
func LookupFeature(ds *episode.Info, field, key string) (episode.Feature, error) {
	f, ok := ds.Features.Lookup(key)
	if !ok {
		return f, fmt.Errorf("%s: %w", field, &episode.UnknownFeatureError{Dataset: ds.Name, Key: key})
	}
	return f, nil
}

// Affine normalises a vector per dimension: x·Scale + Shift, then clipped
// to [−1, 1] when Clip. Scale and Shift hold one value per dimension of
// the dataset's own vector.
type Affine struct {
	Scale, Shift []float64
	Clip         bool
}

// Apply normalises v in place (nil: leaves it as is).
func (a *Affine) Apply(v []float64) {
	if a == nil {
		return
	}
	for j := range min(len(v), len(a.Scale)) {
		x := v[j]*a.Scale[j] + a.Shift[j]
		if a.Clip {
			x = max(-1, min(1, x))
		}
		v[j] = x
	}
}

// languageKind says how a language feature is stored (config.Language).
type languageKind uint8

const (
	languageNone  languageKind = iota
	languageText               // Text or string tensor: UTF-8 bytes
	languageCodes              // integer tensor: code points (or UTF-8 bytes)
)

// decodeCodes turns an integer instruction tensor into text, appending to
// dst. Zeros are padding and are dropped (language_table's own decoder and
// TFDS's fixture generator drop them all, trailing or not). When every
// other value is a byte and together they form valid UTF-8 with at least
// one multi-byte sequence, they are UTF-8 bytes (language_table stores its
// instructions so); otherwise each value is a Unicode code point, and one
// that is not a valid code point becomes U+FFFD.
func decodeCodes(dst []byte, vals []float64) []byte {
	start := len(dst)
	bytesOnly, high := true, false
	for _, v := range vals {
		if v == 0 {
			continue
		}
		if v < 0 || v > 255 || v != float64(int(v)) {
			bytesOnly = false
		}
		if v >= 0x80 {
			high = true
		}
		dst = append(dst, byte(int(v)))
	}
	if bytesOnly && high && utf8.Valid(dst[start:]) {
		return dst
	}
	dst = dst[:start]
	for _, v := range vals {
		if v == 0 {
			continue
		}
		r := utf8.RuneError
		if v > 0 && v <= utf8.MaxRune && v == float64(int(v)) {
			r = rune(int(v))
		}
		dst = utf8.AppendRune(dst, r)
	}
	return dst
}

// values is the number of values one step of a vector feature holds.
func values(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}
