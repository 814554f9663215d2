package config

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
)

// The config rules of step samples (the mix's `sample` block): its
// definition in kind.go (StepSamples), and here what its keys mean; the block's
// own parsing and checks are sample_parse.go and sample_check.go.

// stepRules are step samples': c has a sample block.
type stepRules struct{ c *Config }

// CheckImages is the rule of cameras (checkCameras).
func (stepRules) CheckImages(d *DatasetConfig, images []string, byKey map[string]Feature, add AddFunc, use *FeatureUse, _ string) {
	use.Cameras = d.checkCameras(images, byKey, add)
}

// marshal leaves out pair_frames, a pair-mode key.
func (stepRules) marshal(c Config) ([]byte, error) {
	return json.Marshal(struct {
		plainConfig
		PairFrames *FrameMode `json:"pair_frames,omitempty"` // hides plain's
	}{plainConfig: plainConfig(c)})
}

// PlanOffset is a fixed offset of sample.drop_last, so that t ∈ [0,
// L−drop_last): 0 when nothing is dropped, and every t of the episode is
// a unit.
func (r stepRules) PlanOffset(*DatasetConfig) Offset { return FixedOffset(r.c.Steps.DropLast) }

func (r stepRules) withoutAugment() *StepSpec {
	s := *r.c.Steps
	s.Cameras = slices.Clone(s.Cameras)
	for i := range s.Cameras {
		s.Cameras[i].Augment = nil
	}
	return &s
}

func (r stepRules) SlotAugment(name string) *Augment {
	for i := range r.c.Steps.Cameras {
		if s := &r.c.Steps.Cameras[i]; s.Name == name {
			return s.Augment
		}
	}
	return nil
}

func (r stepRules) slotDecode(name string) *DecodeMode {
	for i := range r.c.Steps.Cameras {
		if s := &r.c.Steps.Cameras[i]; s.Name == name {
			return s.Decode
		}
	}
	return nil
}

func (r stepRules) SlotNames() []string {
	out := make([]string, len(r.c.Steps.Cameras))
	for i, s := range r.c.Steps.Cameras {
		out[i] = s.Name
	}
	return out
}

// ValidateMix checks the sample block, and the top-level keys that step
// mode has no use for.
func (r stepRules) ValidateMix(add AddFunc, top Report) {
	c := r.c
	s := c.Steps
	if hasKey(c.lines, "pair_frames") || c.PairFrames != FramesEndpoints {
		top("pair_frames", "is for frame pairs; with `sample` the frames of a camera slot are its steps (sample.cameras.<slot>.steps, such as \"-3:1\" for t−3 … t)")
	}
	if hasKey(c.lines, "stride") || c.Stride != 0 {
		top("stride", "is for frame pairs; with `sample` give a slot's steps with a step (steps: \"-8:1:4\" is t−8, t−4, t)")
	}
	if hasKey(c.lines, "num_frames") || c.NumFrames != 0 {
		top("num_frames", "is for frame pairs; with `sample` list a slot's steps (sample.cameras.<slot>.steps)")
	}
	if c.SamplesPerEpisode < 0 || c.SamplesPerEpisode > maxSmall {
		top("samples_per_episode", "must be in 0..%d (0 = every t of every episode), got %d", maxSmall, c.SamplesPerEpisode)
	}
	if s.DropLast < 0 || s.DropLast > maxSmall {
		add(c.sampleLine("sample.drop_last"), "", "sample.drop_last", "must be in 0..%d (the steps at the end of each episode that are never t), got %d", maxSmall, s.DropLast)
	}
	if len(s.Cameras) > maxSlots {
		add(c.sampleLine("sample.cameras"), "", "sample.cameras", "at most %d camera slots, got %d", maxSlots, len(s.Cameras))
	}
	seen := make(map[string]bool, len(s.Cameras))
	for _, sl := range s.Cameras {
		prefix := "sample.cameras." + sl.Name
		line := c.sampleLine(prefix)
		switch {
		case len(sl.Name) > maxSlotName || !slotName.MatchString(sl.Name):
			add(line, "", "sample.cameras", "slot name %q must be 1 to %d letters, digits or _ (it names the files NNNNNN.observation.images.<slot>.npy)", sl.Name, maxSlotName)
		case seen[sl.Name]:
			add(line, "", "sample.cameras", "slot %q given twice", sl.Name)
		}
		seen[sl.Name] = true
		// A slot without a size has image_size's, which is checked above.
		if sl.Size != c.ImageSize && (sl.Size[0] <= 0 || sl.Size[0] > maxImageSide || sl.Size[1] <= 0 || sl.Size[1] > maxImageSide) {
			l := line
			if x, ok := c.lines[prefix+".size"]; ok {
				l = x
			}
			add(l, "", prefix+".size", "must be [height, width], each in 1..%d, got %v", maxImageSide, sl.Size)
		}
	}
	names, deltas := s.deltaFields()
	for i, d := range deltas {
		c.checkDeltas(add, names[i], d)
	}
}

// ValidateDataset applies step mode's rules to one dataset: no pair-mode
// keys, cameras that name the mix's slots, and an fps that turns every
// delta in seconds into whole steps.
func (r stepRules) ValidateDataset(d *DatasetConfig, id string, _ Frames, add AddFunc, field Report) {
	c := r.c
	slots := c.SlotNames()
	mapping := "cameras: {<slot>: <image key>}"
	if len(slots) > 0 {
		mapping = fmt.Sprintf("cameras: {%s: <image key>, …}", slots[0])
	}
	if hasKey(d.lines, "image_key") || d.ImageKey != "" {
		field("image_key", "is for frame pairs; with `sample` map the dataset's image keys to the camera slots (%s) with %s", listOr(slots, "none"), mapping)
	}
	if hasKey(d.lines, "offset") || d.Offset != (Offset{}) {
		field("offset", "is for frame pairs; with `sample` a sample's steps are the deltas of sample.cameras, sample.state and sample.action around t (sample.drop_last keeps t away from an episode's end)")
	}
	given := make([]string, 0, len(d.Cameras))
	for slot := range d.Cameras {
		given = append(given, slot)
	}
	sort.Slice(given, func(i, j int) bool {
		li, lj := d.Line("cameras."+given[i]), d.Line("cameras."+given[j])
		return li < lj || li == lj && given[i] < given[j]
	})
	for _, slot := range given {
		line := d.Line("cameras." + slot)
		switch {
		case !slices.Contains(slots, slot):
			msg := fmt.Sprintf("no camera slot %q in sample.cameras", slot)
			if s := closest(slot, slots, 3); s != "" {
				msg += fmt.Sprintf(" (did you mean %s?)", s)
			}
			add(line, id, "cameras", "%s; the slots: %s", msg, listOr(slots, "none (sample.cameras is empty)"))
		case d.Cameras[slot] == "":
			add(line, id, "cameras", "slot %s: the image key is empty (leave the slot out for zeros with image_mask 0)", slot)
		}
	}
	switch {
	case d.FPS == 0 && !hasKey(d.lines, "fps"):
	case !(d.FPS > 0) || d.FPS > maxFPS:
		field("fps", "must be a number of frames per second in (0, %d], got %g", maxFPS, d.FPS)
	default:
		names, deltas := c.Steps.deltaFields()
		for i, ds := range deltas {
			if len(ds.Seconds) == 0 {
				continue
			}
			if _, err := ds.Resolve(d.FPS); err != nil {
				add(c.sampleLine(names[i]), id, names[i], "%v (the dataset's fps is %g)", err, d.FPS)
			}
		}
	}
}

// ValidateSampled: step samples have no frame count to agree on.
func (stepRules) ValidateSampled(_, first *DatasetConfig, _ Frames, _ Report) *DatasetConfig {
	return first
}

func (r stepRules) stepSpec() (*StepSpec, error) { return r.c.Steps, nil }
