package pairs

import (
	"fmt"

	"github.com/oxefs/oxefs/config"
	"github.com/oxefs/oxefs/keyed"
	"github.com/oxefs/oxefs/sample"
)

// Selection is the frames chosen for one sample.
type Selection struct {
	T, Offset int
	// Indices are the F frame indices, ascending, from T to at most
	// T+Offset.
	Indices []int
}

// Select chooses t, the offset and the frame indices of a sample with the
// given key and unit in an episode of steps steps, appending the indices
// to dst[:0]. The Frames must be valid (config.Frames.Validate).
//
// t and the offset are chosen in this order:
//
//  1. t. With SamplesPerEpisode ≥ 1, t = keyed.Draw(key, keyed.StreamT, n) with
//     n = Offset.ValidStarts(steps): uniform over every t for which the
//     smallest offset fits. With SamplesPerEpisode = 0, t is the sample's
//     Unit, which the plan enumerates over the same n starts.
//  2. The offset. A fixed offset is used as is. A range is drawn after t,
//     over the offsets that fit: offset = Min + keyed.Draw(key,
//     keyed.StreamOffset, hi−Min+1) with hi = min(Max, steps−1−t). Near the
//     end of an episode the range is thus narrowed, never clamped to its
//     edge, and every t keeps the same chance whatever the range.
//
// Then the mode picks the frames in [t, t+offset] (config.FrameMode). An
// episode with fewer than Min+1 steps has no valid t: a
// *sample.ShortEpisodeError without Dataset and Episode (Build fills them in).
func Select(f config.Frames, key uint64, unit, steps int, dst []int) (Selection, error) {
	starts := f.Offset.ValidStarts(steps)
	if starts <= 0 {
		return Selection{}, &sample.ShortEpisodeError{Steps: steps, Need: f.Offset.Min + 1}
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
	case config.FramesEndpoints:
		idx = append(idx, t, t+off)
	case config.FramesAll:
		for i := 0; i <= off; i++ {
			idx = append(idx, t+i)
		}
	case config.FramesStride:
		for i := 0; i <= off; i += f.Stride {
			idx = append(idx, t+i)
		}
	case config.FramesFixedN:
		// t + round_half_up(i·off/(n−1)) = t + ⌊(2·i·off + n−1) / (2·(n−1))⌋.
		d := f.N - 1
		for i := range f.N {
			idx = append(idx, t+(2*i*off+d)/(2*d))
		}
	}
	return Selection{T: t, Offset: off, Indices: idx}, nil
}
