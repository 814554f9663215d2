package pairs

import (
	"fmt"

	"github.com/oxefs/oxefs/keyed"
)

// Selection is the frames chosen for one sample.
type Selection struct {
	T, Offset int
	// Indices are the F frame indices, ascending, from T to at most
	// T+Offset.
	Indices []int
}

// Select chooses t, the offset and the frame indices of a sample with the
// given key and unit in an episode of steps steps (see Frames for the
// rules), appending the indices to dst[:0]. An episode too short for the
// offset is a *ShortEpisodeError without Dataset and Episode (Build fills
// them in). The Frames must be valid.
func (f Frames) Select(key uint64, unit, steps int, dst []int) (Selection, error) {
	starts := f.Offset.ValidStarts(steps)
	if starts <= 0 {
		return Selection{}, &ShortEpisodeError{Steps: steps, Need: f.Offset.Min + 1}
	}
	var t int
	if f.SamplesPerEpisode >= 1 {
		t = keyed.Draw(key, keyed.StreamT, starts)
	} else {
		if unit < 0 || unit >= starts {
			return Selection{}, fmt.Errorf("unit %d is not a valid start: the episode has %d steps, so t ∈ [0, %d] for offset %v",
				unit, steps, starts-1, f.Offset)
		}
		t = unit
	}
	off := f.Offset.Min
	if !f.Offset.Fixed() {
		hi := min(f.Offset.Max, steps-1-t)
		off += keyed.Draw(key, keyed.StreamOffset, hi-f.Offset.Min+1)
	}
	idx := dst[:0]
	switch f.Mode {
	case FramesEndpoints:
		idx = append(idx, t, t+off)
	case FramesAll:
		for i := 0; i <= off; i++ {
			idx = append(idx, t+i)
		}
	case FramesStride:
		for i := 0; i <= off; i += f.Stride {
			idx = append(idx, t+i)
		}
	case FramesFixedN:
		// t + round_half_up(i·off/(n−1)) = t + ⌊(2·i·off + n−1) / (2·(n−1))⌋.
		d := f.N - 1
		for i := range f.N {
			idx = append(idx, t+(2*i*off+d)/(2*d))
		}
	}
	return Selection{T: t, Offset: off, Indices: idx}, nil
}
