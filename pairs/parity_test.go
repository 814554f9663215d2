package pairs

import (
	"path/filepath"
	"testing"

	"github.com/oxefs/oxefs/format"
	"github.com/oxefs/oxefs/frames"
	"github.com/oxefs/oxefs/internal/testkit"
)

// TestPixelParity decodes the fixture frames from their episodes with each
// decoder, through the camera's frames.Source as Build does, into a
// one-frame slot of the size TensorFlow decoded (copied) or resized to, and
// compares with TensorFlow. Bounds:
// libjpeg-turbo mean ≤ 0.5, max ≤ 2 (it is in fact exact: TensorFlow uses
// libjpeg-turbo with the same settings); image/jpeg mean ≤ 2.0; PNG exact
// decode, resize within ±1.
func TestPixelParity(t *testing.T) {
	idx := testkit.LoadFrameIndex(t, filepath.Join(fixtureDir, "expected_frames"))
	s := newStore(t)
	datasets := map[string]format.Dataset{}
	for _, choice := range []string{frames.JPEGTurbo, frames.JPEGGo} {
		t.Run(choice, func(t *testing.T) {
			w := testWorker(t, choice)
			d := w.Decoder()
			t.Logf("decoder: %s", d.Name())
			for _, fr := range idx.Frames {
				ds := datasets[fr.Dataset]
				if ds == nil {
					ds = openFixture(t, s, fr.Dataset)
					datasets[fr.Dataset] = ds
				}
				ep := loadEpisode(t, ds, fixtureKey(t, ds, fr.Split, shardIndex(t, fr.ShardFile), fr.RecordIndex))
				v, err := ep.Feature(fr.ImageKey)
				if err != nil {
					t.Fatal(err)
				}
				src := &frames.Images{Key: fr.ImageKey, Steps: ep.Steps(), Encoded: v}
				for _, f := range fr.Files {
					shape, want := testkit.ReadNPY(t, filepath.Join(fixtureDir, "expected_frames", f.File))
					dst := frames.Slot{Buf: make([]byte, len(want)), Frames: 1, H: shape[0], W: shape[1], Resize: frames.Squash}
					if f.Kind == "decoded" {
						// A frame of another size than TensorFlow's is an error
						// here, not a resize.
						src.Size, src.SizeFrom = frames.Size{W: shape[1], H: shape[0]}, "TensorFlow decodes"
					} else {
						src.Size = frames.Size{}
					}
					if err := src.Decode(t.Context(), d, []int{fr.Step}, dst); err != nil {
						t.Fatalf("%s: %v", f.File, err)
					}
					got := dst.Buf
					st := testkit.Diff(got, want)
					t.Logf("%-55s %s", f.File, st)
					switch {
					case fr.Format == "png" && f.Kind == "decoded":
						if st.Max != 0 {
							t.Errorf("%s: PNG decode differs from TensorFlow: %v", f.File, st)
						}
					case fr.Format == "png":
						if st.Max > 1 {
							t.Errorf("%s: PNG resize differs from TensorFlow by more than 1: %v", f.File, st)
						}
					case d.Turbo():
						if st.Mean > 0.5 || st.Max > 2 {
							t.Errorf("%s: libjpeg-turbo differs from TensorFlow: %v (bound mean 0.5, max 2)", f.File, st)
						}
					default:
						if st.Mean > 2.0 {
							t.Errorf("%s: image/jpeg differs from TensorFlow: %v (bound mean 2.0)", f.File, st)
						}
					}
				}
			}
		})
	}
}
