package pairs

import (
	"fmt"

	"github.com/oxefs/oxefs/episode"
)

// Language reads a dataset's instruction (language_key): a Text feature or
// string tensor, or an integer tensor of code points (language_table), per
// step or per episode. The zero Language reads none. Package window reads
// step samples' task through it too.
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
