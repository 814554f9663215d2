package config

import (
	"fmt"
	"math"
)

// StepSpec is the `sample` block of a mix config: when present, a sample
// is (dataset, episode, t) with every quantity taken at deltas relative to
// t — frames per camera slot, state, actions — instead of a frame pair.
// Indices outside the episode are clamped to it and flagged as padding.
type StepSpec struct {
	// Cameras are the mix's camera slots, in config order (the order of
	// image_mask's columns). Each dataset maps its own image keys to them
	// (DatasetConfig.Cameras).
	Cameras []CameraSlot `json:"cameras"`
	// State and Action are the deltas of observation.state and action.
	State  Deltas `json:"state"`
	Action Deltas `json:"action"`
	// DropLast is the number of steps at the end of each episode that are
	// never t (Diffusion Policy's drop_n_last_frames): t ∈ [0, steps−DropLast).
	DropLast int `json:"drop_last"`
}

// CameraSlot is one camera slot of the mix: a name (the array is
// observation.images.<Name>), its frame size and its deltas.
type CameraSlot struct {
	Name   string `json:"name"`
	Size   [2]int `json:"size"` // [height, width]
	Deltas Deltas `json:"deltas"`
	// Augment is the slot's own augment block, over the mix's; nil:
	// the mix's.
	Augment *Augment `json:"augment,omitempty"`
	// Decode is the slot's own decode mode, over the mix's; nil: the
	// mix's.
	Decode *DecodeMode `json:"decode,omitempty"`
}

// Deltas are offsets from t, in steps or in seconds (LeRobot's
// delta_timestamps, turned into steps through the dataset's fps). Exactly
// one of Steps and Seconds is set in a parsed config; Parse fills [0]
// where the config gives none.
type Deltas struct {
	Steps   []int     `json:"steps,omitempty"`
	Seconds []float64 `json:"seconds,omitempty"`
}

// Len is the number of deltas, T.
func (d Deltas) Len() int { return max(len(d.Steps), len(d.Seconds)) }

// SecondsTolerance is how far from a whole number of frames a delta in
// seconds may be, in seconds; LeRobot refuses the same deltas (its
// tolerance_s default).
const SecondsTolerance = 1e-4

// Resolve returns the deltas in steps. Deltas in seconds are turned into
// steps as LeRobot does — round(d·fps), rounding half to even — and each
// must lie within SecondsTolerance of a whole frame; fps ≤ 0 (unknown) is
// an error for them.
func (d Deltas) Resolve(fps float64) ([]int, error) {
	if len(d.Seconds) == 0 {
		return d.Steps, nil
	}
	if !(fps > 0) || math.IsInf(fps, 0) {
		return nil, fmt.Errorf("deltas in seconds need the dataset's fps, and it has none (set `fps` for the dataset, or give the deltas in steps)")
	}
	steps := make([]int, len(d.Seconds))
	for i, s := range d.Seconds {
		x := s * fps
		r := math.RoundToEven(x)
		if math.Abs(x-r)/fps > SecondsTolerance {
			return nil, fmt.Errorf("delta %gs is %g frames at %g fps, not a whole frame (within %gs)", s, x, fps, SecondsTolerance)
		}
		if math.Abs(r) > maxSmall {
			return nil, fmt.Errorf("delta %gs is %g frames at %g fps, beyond ±%d", s, r, fps, maxSmall)
		}
		steps[i] = int(r)
	}
	return steps, nil
}

// SlotKeys is the dataset's camera per slot of s: its `cameras`, or, when
// it gives none, its only per-step image (imageKeys, the dataset's image
// features) in the first slot. A dataset with several image keys and no
// `cameras` is an error listing them and the slots. Slots it leaves out
// are absent from the map (zeros, image_mask 0).
func (d *DatasetConfig) SlotKeys(s *StepSpec, imageKeys []string) (map[string]string, error) {
	if d.Cameras != nil {
		return d.Cameras, nil
	}
	if len(s.Cameras) == 0 || len(imageKeys) == 0 {
		return map[string]string{}, nil
	}
	if len(imageKeys) > 1 {
		slots := make([]string, len(s.Cameras))
		for i, c := range s.Cameras {
			slots[i] = c.Name
		}
		return nil, fmt.Errorf("dataset %s has image keys %v: say which goes to which of the slots %v with `cameras`", d.Name, imageKeys, slots)
	}
	return map[string]string{s.Cameras[0].Name: imageKeys[0]}, nil
}

// DecodeOf is camera slot's decode mode: its own, else the mix's (slot ""
// in pair mode: the mix's).
func (c *Config) DecodeOf(slot string) DecodeMode {
	if r, ok := c.rules().(slotDecoder); ok {
		if m := r.slotDecode(slot); m != nil {
			return *m
		}
	}
	return c.Decode
}

// checkGPUDecode refuses decode: gpu (the mix's or a slot's) with the
// BCFHW layout: a compressed frame is served in its frame's place, which
// BCFHW spreads over three planes.
func (c *Config) checkGPUDecode(add AddFunc) {
	if c.Layout != BCFHW {
		return
	}
	const why = "decode: gpu serves each compressed frame in the place of its pixels, which layout BCFHW splits into planes; use layout: BFHWC"
	if c.Decode == DecodeGPU {
		add(c.lines["decode"], "", "decode", "%s", why)
	}
	for _, name := range c.rules().SlotNames() {
		key := "sample.cameras." + name + ".decode"
		if _, own := c.lines[key]; own && c.DecodeOf(name) == DecodeGPU {
			add(c.lines[key], "", key, "%s", why)
		}
	}
}
