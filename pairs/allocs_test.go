package pairs

import (
	"testing"

	"github.com/oxefs/oxefs/config"
	"github.com/oxefs/oxefs/frames"
	"github.com/oxefs/oxefs/plan"
)

// TestBuildAllocs: in steady state the libjpeg-turbo path allocates
// nothing per frame, whether frames are resized or decoded straight into
// the batch, in either layout, and nothing per sample for its metadata
// (actions and state are read into the worker's scratch, the language
// string is kept while it does not change); image/jpeg allocates its
// image per frame, logged here.
func TestBuildAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	s := newStore(t)
	ds := openFixture(t, s, "tiny_bridge")
	ep := loadEpisode(t, ds, fixtureKey(t, ds, "train", 0, 1))
	smp := plan.Sample{Episode: ep.Key(), Unit: 2, Key: 77}
	for _, choice := range []string{frames.JPEGTurbo, frames.JPEGGo} {
		t.Run(choice, func(t *testing.T) {
			w := testWorker(t, choice)
			for _, tc := range []struct {
				name   string
				h, w   int
				layout Layout
				resize ResizeMode
			}{
				{"resize BFHWC", 48, 80, BFHWC, Squash},
				{"resize BCFHW", 64, 64, BCFHW, Crop},
				{"pad BFHWC", 64, 64, BFHWC, Pad},
				{"native size BFHWC (decoded in place)", 96, 128, BFHWC, Squash},
				{"native size BCFHW", 96, 128, BCFHW, Squash},
			} {
				cfg := fixtureConfig("tiny_bridge")
				cfg.Frames = config.Frames{Mode: config.FramesAll, Offset: config.FixedOffset(3), SamplesPerEpisode: 1}
				cfg.Height, cfg.Width, cfg.Layout, cfg.Resize = tc.h, tc.w, tc.layout, tc.resize
				a := mustNew(t, ds, cfg)
				slot := make([]byte, a.SampleBytes())
				var m Meta
				build := func(meta *Meta) func() {
					return func() {
						if err := w.build(a, t.Context(), smp, ep, slot, meta); err != nil {
							t.Fatal(err)
						}
					}
				}
				build(&m)() // warm: buffers grown, language set
				perFrame := testing.AllocsPerRun(20, build(nil)) / float64(a.FramesPerSample())
				withMeta := testing.AllocsPerRun(20, build(&m)) - perFrame*float64(a.FramesPerSample())
				t.Logf("%-38s %.1f allocs/frame, metadata %.1f allocs/sample, worker buffers %d bytes", tc.name, perFrame, withMeta, w.Footprint())
				if w.Decoder().Turbo() && perFrame != 0 {
					t.Errorf("%s: libjpeg-turbo path allocates %.1f times per frame, want 0", tc.name, perFrame)
				}
				if withMeta != 0 {
					t.Errorf("%s: metadata allocates %.1f times per sample, want 0", tc.name, withMeta)
				}
			}
		})
	}
}
