package steps

import (
	"github.com/oxefs/oxefs/config"
	"github.com/oxefs/oxefs/sample"
)

// Deltas are one dataset's deltas, resolved to steps.
type Deltas struct {
	// Slots holds the deltas of each camera slot, in the Spec's order.
	Slots  [][]int
	State  []int
	Action []int
}

// Resolve returns dataset dc's deltas in steps, slots in the sample
// block's order, and the frame rate they were resolved with: its
// metadata's (infoFPS), else its config's `fps`, else 0
// (config.DatasetConfig.FrameRate, config.Config.StepDeltas). Errors are
// config.ConfigErrors naming the dataset and the field.
func Resolve(c *config.Config, dc *config.DatasetConfig, infoFPS float64) (Deltas, float64, error) {
	fps, err := dc.FrameRate(infoFPS)
	if err != nil {
		return Deltas{}, 0, err
	}
	sd, err := c.StepDeltas(dc, infoFPS)
	if err != nil {
		return Deltas{}, 0, err
	}
	// A config built in code may leave deltas out, where Parse fills [0].
	orZero := func(d []int) []int {
		if len(d) == 0 {
			return []int{0}
		}
		return d
	}
	out := Deltas{State: orZero(sd.State), Action: orZero(sd.Action)}
	for _, slot := range c.Steps.Cameras {
		out.Slots = append(out.Slots, orZero(sd.Slots[slot.Name]))
	}
	return out, fps, nil
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
	ActionNorm, StateNorm *sample.Affine
}
