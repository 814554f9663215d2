package synthetic

import "image"

// episodeKey identifies one episode, whose content is a pure function of
// it: neither the shard layout, nor the number of episodes or datasets,
// nor the scheduling changes it.
type episodeKey struct {
	seed    uint64
	dataset string
	split   string
	index   int // within the split
	steps   int
}

func (k episodeKey) rng(parts ...uint64) *rng {
	return newRNG(append([]uint64{k.seed, hashString(k.dataset), hashString(k.split), uint64(k.index)}, parts...)...)
}

// Content is one synthetic episode's content, apart from any file
// format: its frames, actions, state and instruction, drawn from streams
// keyed by (seed, dataset, split, episode), so that every format's writer
// (format/rlds/synth, format/lerobot/synth) gives the same scenes and
// numbers for the same seed. It is not safe for concurrent use.
type Content struct {
	Dataset Dataset
	Split   string
	Index   int // within the split
	Steps   int

	// Instruction is the episode's language instruction.
	Instruction string
	// Actions holds, per step, the values of Dataset.Actions concatenated
	// in order.
	Actions [][]float32
	// State holds, per step, Dataset.State's values; nil when the dataset
	// has no state.
	State [][]float32

	key     episodeKey
	motion  *motion
	cameras []*camera
}

// EpisodeContent draws episode index of a split of d with the given number
// of steps (at least 2; EpisodeSteps gives the default).
func EpisodeContent(d Dataset, seed uint64, split string, index, steps int) *Content {
	k := episodeKey{seed: seed, dataset: d.Name, split: split, index: index, steps: steps}
	m := newMotion(k.rng(0), steps)
	c := &Content{Dataset: d, Split: split, Index: index, Steps: steps, key: k, motion: m,
		cameras: make([]*camera, len(d.Cameras))}
	var full [maxActionDim]float32
	for s := range steps {
		m.action(s, full[:])
		var a []float32
		for _, t := range d.Actions {
			a = append(a, actionPart(t, full[:])...)
		}
		c.Actions = append(c.Actions, a)
		if d.State.Key != "" {
			st := make([]float32, d.State.Dim)
			m.state(s, st)
			c.State = append(c.State, st)
		}
	}
	c.Instruction = instruction(m, k.rng(2))
	return c
}

// EpisodeSteps is the default length of episode index of a split of d,
// drawn from [d.MinSteps, d.MaxSteps] by a stream keyed by the episode
// alone: the length a writer uses unless told one.
func EpisodeSteps(d Dataset, seed uint64, split string, index int) int {
	return newRNG(seed, hashString(d.Name), hashString(split), uint64(index), 3).span(d.MinSteps, d.MaxSteps)
}

// SplitEpisodes returns the train and val episode counts the writers write
// for d: train episodes (d.Episodes when 0), and a tenth as many val, at
// least 2.
func SplitEpisodes(d Dataset, train int) (int, int) {
	if train <= 0 {
		train = d.Episodes
	}
	return train, max(2, train/10)
}

// ActionDim is the width of the concatenated action.
func (d Dataset) ActionDim() int {
	n := 0
	for _, a := range d.Actions {
		n += a.Dim
	}
	return n
}

// Render draws step s of camera cam (an index into Dataset.Cameras) into
// img, which must be that camera's size: the frame a writer encodes (as
// JPEG at JPEGQuality, PNG, or video).
func (c *Content) Render(cam, s int, img *image.RGBA) {
	if c.cameras[cam] == nil {
		d := c.Dataset.Cameras[cam]
		c.cameras[cam] = newCamera(c.key.rng(1, uint64(cam)), d.Height, d.Width, d.Wrist)
	}
	c.cameras[cam].render(img, c.motion, s)
}
