package pairs

import (
	"errors"
	"slices"
	"testing"

	"github.com/oxefs/oxefs/config"
	"github.com/oxefs/oxefs/keyed"
	"github.com/oxefs/oxefs/sample"
)

// TestSelectIndices: the frames of each mode for a known t and offset
// (samples_per_episode 0, so t is the unit).
func TestSelectIndices(t *testing.T) {
	cases := []struct {
		name string
		f    config.Frames
		unit int
		want []int
	}{
		{"endpoints", config.Frames{Mode: config.FramesEndpoints, Offset: config.FixedOffset(5)}, 2, []int{2, 7}},
		{"all", config.Frames{Mode: config.FramesAll, Offset: config.FixedOffset(3)}, 4, []int{4, 5, 6, 7}},
		{"stride 2 of 6", config.Frames{Mode: config.FramesStride, Offset: config.FixedOffset(6), Stride: 2}, 1, []int{1, 3, 5, 7}},
		{"stride 3 of 9", config.Frames{Mode: config.FramesStride, Offset: config.FixedOffset(9), Stride: 3}, 0, []int{0, 3, 6, 9}},
		{"stride 1", config.Frames{Mode: config.FramesStride, Offset: config.FixedOffset(2), Stride: 1}, 0, []int{0, 1, 2}},
		// i·5/2 = 0, 2.5, 5: the half rounds up.
		{"fixed_n 3 of 5", config.Frames{Mode: config.FramesFixedN, Offset: config.FixedOffset(5), N: 3}, 10, []int{10, 13, 15}},
		// i·5/3 = 0, 1.67, 3.33, 5.
		{"fixed_n 4 of 5", config.Frames{Mode: config.FramesFixedN, Offset: config.FixedOffset(5), N: 4}, 0, []int{0, 2, 3, 5}},
		// i·7/3 = 0, 2.33, 4.67, 7.
		{"fixed_n 4 of 7", config.Frames{Mode: config.FramesFixedN, Offset: config.FixedOffset(7), N: 4}, 1, []int{1, 3, 6, 8}},
		{"fixed_n n = offset+1", config.Frames{Mode: config.FramesFixedN, Offset: config.FixedOffset(3), N: 4}, 0, []int{0, 1, 2, 3}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.f.Validate(); err != nil {
				t.Fatal(err)
			}
			sel, err := Select(tc.f, 12345, tc.unit, 20, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(sel.Indices, tc.want) {
				t.Errorf("indices %v, want %v", sel.Indices, tc.want)
			}
			if sel.T != tc.unit || len(sel.Indices) != tc.f.Count() {
				t.Errorf("t %d (want %d), %d frames (Count %d)", sel.T, tc.unit, len(sel.Indices), tc.f.Count())
			}
		})
	}
}

// TestSelectDraws: with samples_per_episode ≥ 1, t is
// keyed.Draw(key, StreamT, steps−min), uniform over the valid starts; a range
// offset is drawn after t over the offsets that fit, every one of them
// reachable, none beyond the episode.
func TestSelectDraws(t *testing.T) {
	const steps, keys = 12, 20000
	cases := []struct {
		name string
		off  config.Offset
	}{
		{"fixed", config.FixedOffset(4)},
		{"range", config.Offset{Min: 3, Max: 7}},
		{"range wider than some episodes' tails", config.Offset{Min: 1, Max: 11}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := config.Frames{Mode: config.FramesEndpoints, Offset: tc.off, SamplesPerEpisode: 1}
			starts := steps - tc.off.Min
			tCount := make([]int, starts)
			seen := map[[2]int]bool{}
			for k := range uint64(keys) {
				key := keyed.Hash(7, k)
				sel, err := Select(f, key, 0, steps, nil)
				if err != nil {
					t.Fatal(err)
				}
				if want := keyed.Draw(key, keyed.StreamT, starts); sel.T != want {
					t.Fatalf("t = %d, keyed.Draw gives %d", sel.T, want)
				}
				hi := min(tc.off.Max, steps-1-sel.T)
				if sel.Offset < tc.off.Min || sel.Offset > hi {
					t.Fatalf("t %d: offset %d outside [%d, %d]", sel.T, sel.Offset, tc.off.Min, hi)
				}
				if !tc.off.Fixed() {
					if want := tc.off.Min + keyed.Draw(key, keyed.StreamOffset, hi-tc.off.Min+1); sel.Offset != want {
						t.Fatalf("offset %d, keyed.Draw gives %d", sel.Offset, want)
					}
				}
				if !slices.Equal(sel.Indices, []int{sel.T, sel.T + sel.Offset}) {
					t.Fatalf("indices %v for t %d offset %d", sel.Indices, sel.T, sel.Offset)
				}
				tCount[sel.T]++
				seen[[2]int{sel.T, sel.Offset}] = true
			}
			// Uniform over the starts: each within 15% of keys/starts.
			for ti, n := range tCount {
				if exp := float64(keys) / float64(starts); float64(n) < 0.85*exp || float64(n) > 1.15*exp {
					t.Errorf("t = %d drawn %d times, expected about %.0f", ti, n, exp)
				}
			}
			for ti := range starts {
				for o := tc.off.Min; o <= min(tc.off.Max, steps-1-ti); o++ {
					if !seen[[2]int{ti, o}] {
						t.Errorf("(t %d, offset %d) never drawn", ti, o)
					}
				}
			}
		})
	}
}

func TestSelectUnitsAndShortEpisodes(t *testing.T) {
	f := config.Frames{Mode: config.FramesEndpoints, Offset: config.Offset{Min: 3, Max: 5}}
	// samples_per_episode 0: t is the unit, over [0, steps−1−min].
	for unit := range 7 {
		sel, err := Select(f, 99, unit, 10, nil)
		if err != nil {
			t.Fatal(err)
		}
		if sel.T != unit || sel.T+sel.Offset > 9 {
			t.Errorf("unit %d: t %d offset %d", unit, sel.T, sel.Offset)
		}
	}
	if _, err := Select(f, 99, 7, 10, nil); err == nil || errors.Is(err, sample.ErrShortEpisode) {
		t.Errorf("unit past the last valid start: %v, want a plain error", err)
	}
	if _, err := Select(f, 99, -1, 10, nil); err == nil {
		t.Error("negative unit accepted")
	}
	for _, spe := range []int{0, 1} {
		f.SamplesPerEpisode = spe
		for _, steps := range []int{0, 1, 3} {
			_, err := Select(f, 99, 0, steps, nil)
			var se *sample.ShortEpisodeError
			if !errors.Is(err, sample.ErrShortEpisode) || !errors.As(err, &se) || se.Steps != steps || se.Need != 4 {
				t.Errorf("spe %d, %d steps: %v, want a *sample.ShortEpisodeError needing 4", spe, steps, err)
			}
		}
		// Exactly min+1 steps: one valid start, offset min.
		sel, err := Select(f, 99, 0, 4, nil)
		if err != nil || sel.T != 0 || sel.Offset != 3 {
			t.Errorf("spe %d, 4 steps: %+v, %v", spe, sel, err)
		}
	}
}

// TestSelectReusesDst: the indices are appended to dst[:0].
func TestSelectReusesDst(t *testing.T) {
	f := config.Frames{Mode: config.FramesAll, Offset: config.FixedOffset(3)}
	dst := make([]int, 0, 8)
	sel, err := Select(f, 1, 2, 10, dst)
	if err != nil {
		t.Fatal(err)
	}
	if &sel.Indices[0] != &dst[:1][0] {
		t.Error("Select did not reuse dst")
	}
}
