package window

import (
	"fmt"
	"math"

	"github.com/oxefs/oxefs/config"
	"github.com/oxefs/oxefs/pairs"
)

// Deltas are one dataset's deltas, resolved to steps.
type Deltas struct {
	// Slots holds the deltas of each camera slot, in the Spec's order.
	Slots  [][]int
	State  []int
	Action []int
}

// Resolve returns a dataset's deltas in steps and the fps they were
// resolved with: the dataset's metadata's (infoFPS), else its config's
// `fps`, else 0. Deltas in seconds need an fps; a config fps that
// disagrees with the metadata's is an error; each error names the field.
func Resolve(s *config.SampleSpec, dc *config.DatasetConfig, infoFPS float64) (Deltas, float64, error) {
	fps := infoFPS
	if dc.FPS > 0 {
		if infoFPS > 0 && math.Abs(dc.FPS-infoFPS) > 1e-9 {
			return Deltas{}, 0, fmt.Errorf("dataset %s: fps: %g, but its metadata says %g (leave fps out)", dc.Name, dc.FPS, infoFPS)
		}
		fps = dc.FPS
	}
	var out Deltas
	resolve := func(field string, d config.Deltas) ([]int, error) {
		if d.Len() == 0 {
			return []int{0}, nil
		}
		if len(d.Steps) > 0 && len(d.Seconds) > 0 {
			return nil, fmt.Errorf("dataset %s: %s: give steps or seconds, not both", dc.Name, field)
		}
		steps, err := d.Resolve(fps)
		if err != nil {
			return nil, fmt.Errorf("dataset %s: %s: %w", dc.Name, field, err)
		}
		return steps, nil
	}
	for _, c := range s.Cameras {
		d, err := resolve("sample.cameras."+c.Name, c.Deltas)
		if err != nil {
			return Deltas{}, 0, err
		}
		out.Slots = append(out.Slots, d)
	}
	var err error
	if out.State, err = resolve("sample.state", s.State); err != nil {
		return Deltas{}, 0, err
	}
	if out.Action, err = resolve("sample.action", s.Action); err != nil {
		return Deltas{}, 0, err
	}
	return out, fps, nil
}

// Span is the steps the deltas reach over: max − min + 1 (1 for none).
func Span(d []int) int {
	if len(d) == 0 {
		return 1
	}
	lo, hi := d[0], d[0]
	for _, x := range d {
		lo, hi = min(lo, x), max(hi, x)
	}
	return hi - lo + 1
}

// Config is one dataset's side of step samples.
type Config struct {
	// Index is the dataset's dataset_index: its position in the config's
	// datasets list, counting those with weight ≤ 0.
	Index int
	// Cameras maps slot names to the dataset's image keys; a slot left
	// out is zeros with image_mask 0.
	Cameras map[string]string
	Deltas  Deltas
	// ActionKeys are concatenated per step; StateKey is the state;
	// LanguageKey the task (read at t); Robot is written as is.
	ActionKeys  []string
	StateKey    string
	LanguageKey string
	Robot       string
	// ActionNorm and StateNorm normalise each step's vector with the
	// dataset's per-step statistics; padding stays 0.
	ActionNorm, StateNorm *pairs.Affine
}
