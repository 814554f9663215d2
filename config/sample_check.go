package config

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Bounds of the sample block.
const (
	maxSlots    = 16
	maxSlotName = 64
	maxDeltas   = 4096 // per key
	maxFPS      = 100000
)

// slotName is what a slot may be called: it names the batch files
// NNNNNN.observation.images.<slot>.npy.
var slotName = regexp.MustCompile(`^[A-Za-z0-9_]+$`)

// addFunc reports one problem of a config.
type addFunc func(line int, dataset, field, format string, args ...any)

// SlotNames are the mix's camera slots, in order; none in pair mode.
func (c *Config) SlotNames() []string { return c.rules().slotNames() }

// sampleLine is the line of a key of the sample block (sample.drop_last,
// sample.action, sample.cameras.wrist): for deltas, their steps or seconds
// key; else the key itself; else the sample block's.
func (c *Config) sampleLine(prefix string) int {
	for _, k := range []string{prefix + ".steps", prefix + ".seconds", prefix, "sample"} {
		if l, ok := c.lines[k]; ok {
			return l
		}
	}
	return 0
}

// deltaFields are the deltas of the sample block, each with its field
// name: every slot's, then state's and action's.
func (s *StepSpec) deltaFields() (names []string, deltas []Deltas) {
	for _, sl := range s.Cameras {
		names = append(names, "sample.cameras."+sl.Name)
		deltas = append(deltas, sl.Deltas)
	}
	return append(names, "sample.state", "sample.action"), append(deltas, s.State, s.Action)
}

// validateMix checks the sample block, and the top-level keys that step
// mode has no use for.
func (r stepRules) validateMix(add addFunc, top report) {
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

// checkDeltas applies the rules of one key's deltas.
func (c *Config) checkDeltas(add addFunc, prefix string, d Deltas) {
	bad := func(format string, args ...any) { add(c.sampleLine(prefix), "", prefix, format, args...) }
	switch {
	case len(d.Steps) > 0 && len(d.Seconds) > 0:
		bad("give its deltas as steps or as seconds, not both")
		return
	case d.Len() == 0:
		bad("has no deltas: give at least one (steps: [0] is t alone, the default)")
		return
	case d.Len() > maxDeltas:
		bad("at most %d deltas, got %d", maxDeltas, d.Len())
		return
	}
	for _, x := range d.Steps {
		if x < -maxSmall || x > maxSmall {
			bad("step %d is beyond ±%d", x, maxSmall)
			return
		}
	}
	for _, x := range d.Seconds {
		if !finite(x) || x < -maxSmall || x > maxSmall {
			bad("%g seconds is not a number within ±%d", x, maxSmall)
			return
		}
	}
}

// checkStepDataset applies step mode's rules to one dataset: no pair-mode
// keys, cameras that name the mix's slots, and an fps that turns every
// delta in seconds into whole steps.
func (r stepRules) validateDataset(d *DatasetConfig, id string, _ Frames, add addFunc, field report) {
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

// validateSampled: step samples have no frame count to agree on.
func (stepRules) validateSampled(_, first *DatasetConfig, _ Frames, _ report) *DatasetConfig {
	return first
}

// validateDataset checks the dataset's offset, and refuses the keys of
// step mode in a pair-mode dataset.
func (pairRules) validateDataset(d *DatasetConfig, id string, f Frames, add addFunc, field report) {
	f.checkOffset(field)
	if hasKey(d.lines, "cameras") || d.Cameras != nil {
		add(d.Line("cameras"), id, "cameras", "is for step samples: add a `sample` block with camera slots (see the README's Step samples), or name the pair's camera with image_key")
	}
	if hasKey(d.lines, "fps") || d.FPS != 0 {
		add(d.Line("fps"), id, "fps", "is for step samples, whose deltas may be in seconds (a `sample` block); frame pairs count in steps")
	}
}

// listOr joins names with commas, or says none.
func listOr(names []string, none string) string {
	if len(names) == 0 {
		return none
	}
	return strings.Join(names, ", ")
}

// FrameRate is dataset d's frame rate for deltas in seconds: its
// metadata's (meta, episode.Info.FPS, 0 when it has none), else the
// config's fps (0 when neither gives one). An fps in the config that
// differs from the metadata's is a ConfigError.
func (d *DatasetConfig) FrameRate(meta float64) (float64, error) {
	switch {
	case meta > 0 && d.FPS > 0 && meta != d.FPS:
		return 0, ConfigErrors{{Line: d.Line("fps"), Dataset: d.Name, Field: "fps",
			Msg: fmt.Sprintf("is %g, but the dataset's metadata says %g frames per second: leave fps out (the metadata's is used)", d.FPS, meta)}}
	case meta > 0:
		return meta, nil
	}
	return d.FPS, nil
}

// StepDeltas are one dataset's deltas in steps: the sample block's, with
// those in seconds turned into steps through the dataset's frame rate
// (Deltas.Resolve). info.json writes them per dataset.
type StepDeltas struct {
	Slots  map[string][]int `json:"slots"` // by slot name
	State  []int            `json:"state"`
	Action []int            `json:"action"`
}

// StepDeltas resolves the sample block's deltas for dataset d, whose
// metadata gives meta frames per second (episode.Info.FPS; 0 when it gives
// none, as RLDS). The frame rate is FrameRate's. Problems are ConfigErrors
// naming the dataset and the field: deltas in seconds without a frame
// rate, a delta that is no whole frame, an fps that contradicts the
// metadata.
func (c *Config) StepDeltas(d *DatasetConfig, meta float64) (StepDeltas, error) {
	notSteps := Pick(c, Kinds[error]{
		Pairs: func() error { return errors.New("config: StepDeltas of a config without a sample block (pair mode)") },
		Steps: func(*StepSpec) error { return nil },
	})
	if notSteps != nil {
		return StepDeltas{}, notSteps
	}
	fps, err := d.FrameRate(meta)
	if err != nil {
		return StepDeltas{}, err
	}
	names, deltas := c.Steps.deltaFields()
	var inSeconds []string
	for i, ds := range deltas {
		if len(ds.Seconds) > 0 {
			inSeconds = append(inSeconds, names[i])
		}
	}
	var p problems
	if len(inSeconds) > 0 && !(fps > 0) {
		p.add(d.Line("fps"), d.Name, "fps", "deltas in seconds (%s) need a frame rate, and the dataset's metadata has none: set fps (frames per second) for this dataset, or give the deltas in steps",
			strings.Join(inSeconds, ", "))
		return StepDeltas{}, p.err()
	}
	steps := make([][]int, len(deltas))
	for i, ds := range deltas {
		s, err := ds.Resolve(fps)
		if err != nil {
			p.add(c.sampleLine(names[i]), d.Name, names[i], "%v", err)
		}
		steps[i] = slices.Clone(s)
	}
	if err := p.err(); err != nil {
		return StepDeltas{}, err
	}
	k := len(c.Steps.Cameras)
	out := StepDeltas{Slots: make(map[string][]int, k), State: steps[k], Action: steps[k+1]}
	for i, sl := range c.Steps.Cameras {
		out.Slots[sl.Name] = steps[i]
	}
	return out, nil
}

// Span is the number of steps the deltas cover, from the smallest to the
// largest (a chunk 0…49 spans 50); 0 without deltas.
func Span(steps []int) int {
	if len(steps) == 0 {
		return 0
	}
	return slices.Max(steps) - slices.Min(steps) + 1
}

// StepsText writes deltas in steps short, as a config may write them: a
// run at a fixed positive stride as a Python slice in quotes ("0:50",
// "-4:5:2"), up to 8 others as a list, more as the first three, the last
// and their number. An error message names a chunk of 100 deltas so
// without listing them.
func StepsText(steps []int) string {
	if n := len(steps); n >= 2 {
		stride := steps[1] - steps[0]
		regular := stride > 0
		for i := 2; i < n && regular; i++ {
			regular = steps[i]-steps[i-1] == stride
		}
		switch {
		case regular && stride == 1:
			return fmt.Sprintf("%q", fmt.Sprintf("%d:%d", steps[0], steps[n-1]+1))
		case regular:
			return fmt.Sprintf("%q", fmt.Sprintf("%d:%d:%d", steps[0], steps[n-1]+1, stride))
		}
	}
	parts := make([]string, 0, 5)
	if len(steps) <= 8 {
		for _, d := range steps {
			parts = append(parts, strconv.Itoa(d))
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	for _, d := range steps[:3] {
		parts = append(parts, strconv.Itoa(d))
	}
	return fmt.Sprintf("[%s, …, %d] (%d deltas)", strings.Join(parts, ", "), steps[len(steps)-1], len(steps))
}
