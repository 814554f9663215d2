package config

import (
	"fmt"
	"regexp"
	"slices"
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

// AddFunc reports one problem of a config: its line (0: none), the
// dataset ("": the mix), the field and what is wrong, with the valid
// choices.
type AddFunc func(line int, dataset, field, format string, args ...any)

// SlotNames are the mix's camera slots, in order; none in pair mode.
func (c *Config) SlotNames() []string { return c.rules().SlotNames() }

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

// checkDeltas applies the rules of one key's deltas.
func (c *Config) checkDeltas(add AddFunc, prefix string, d Deltas) {
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
	s, ok := c.rules().(stepSpecer)
	if !ok {
		return StepDeltas{}, fmt.Errorf("config: StepDeltas of a config without a sample block (%s samples)", c.Kind())
	}
	spec, err := s.stepSpec()
	if err != nil {
		return StepDeltas{}, err
	}
	fps, err := d.FrameRate(meta)
	if err != nil {
		return StepDeltas{}, err
	}
	names, deltas := spec.deltaFields()
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
