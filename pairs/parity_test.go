package pairs

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/oxefs/oxefs/cache"
)

// TestResizeMatchesTensorFlowExactly resizes TensorFlow's own decoded
// frames and compares with TensorFlow's resized ones: with the decode taken
// out of the picture, the resize must be bit-exact.
func TestResizeMatchesTensorFlowExactly(t *testing.T) {
	idx := loadFrameIndex(t)
	var rz resizer
	for _, fr := range idx.Frames {
		dir := filepath.Join(fixtureDir, "expected_frames")
		shape, decoded := readNPY(t, filepath.Join(dir, fr.Files[0].File))
		src := rgbImage{Pix: decoded, H: shape[0], W: shape[1], Stride: 3 * shape[1]}
		for _, f := range fr.Files[1:] {
			_, want := readNPY(t, filepath.Join(dir, f.File))
			dst := single(f.Size[0], f.Size[1])
			rz.write(dst, Squash, src)
			if !bytes.Equal(dst.buf, want) {
				t.Errorf("%s: resize of TensorFlow's decoded frame differs from TensorFlow's: %v", f.File, diff(dst.buf, want))
			}
		}
	}
}

// TestPixelParity decodes the fixture frames from their episodes with each
// decoder and compares decode and both resizes with TensorFlow. Bounds:
// libjpeg-turbo mean ≤ 0.5, max ≤ 2 (it is in fact exact: TensorFlow uses
// libjpeg-turbo with the same settings); image/jpeg mean ≤ 2.0; PNG exact
// decode, resize within ±1.
func TestPixelParity(t *testing.T) {
	idx := loadFrameIndex(t)
	s := newStore(t)
	datasets := map[string]*cache.Dataset{}
	for _, choice := range []string{JPEGTurbo, JPEGGo} {
		t.Run(choice, func(t *testing.T) {
			d := testDecoder(t, choice)
			t.Logf("decoder: %s", d.Name())
			for _, fr := range idx.Frames {
				ds := datasets[fr.Dataset]
				if ds == nil {
					ds = openFixture(t, s, fr.Dataset)
					datasets[fr.Dataset] = ds
				}
				ep := loadEpisode(t, ds, cache.Ref{Split: fr.Split, Shard: shardIndex(t, fr.ShardFile), Record: fr.RecordIndex})
				v, err := ep.Feature(fr.ImageKey)
				if err != nil {
					t.Fatal(err)
				}
				img, err := d.decode(v.Bytes(fr.Step), size{}, "", nil, 0, 0)
				if err != nil {
					t.Fatalf("%s: %v", fr.Files[0].File, err)
				}
				for _, f := range fr.Files {
					_, want := readNPY(t, filepath.Join(fixtureDir, "expected_frames", f.File))
					got := img.Pix
					if f.Kind == "resized" {
						dst := single(f.Size[0], f.Size[1])
						d.rz.write(dst, Squash, img)
						got = dst.buf
					} else if img.W != f.Shape[1] || img.H != f.Shape[0] {
						t.Fatalf("%s: decoded %dx%d, TensorFlow %dx%d", f.File, img.W, img.H, f.Shape[1], f.Shape[0])
					}
					st := diff(got, want)
					t.Logf("%-55s %s", f.File, st)
					switch {
					case fr.Format == "png" && f.Kind == "decoded":
						if st.max != 0 {
							t.Errorf("%s: PNG decode differs from TensorFlow: %v", f.File, st)
						}
					case fr.Format == "png":
						if st.max > 1 {
							t.Errorf("%s: PNG resize differs from TensorFlow by more than 1: %v", f.File, st)
						}
					case d.Turbo():
						if st.mean > 0.5 || st.max > 2 {
							t.Errorf("%s: libjpeg-turbo differs from TensorFlow: %v (bound mean 0.5, max 2)", f.File, st)
						}
					default:
						if st.mean > 2.0 {
							t.Errorf("%s: image/jpeg differs from TensorFlow: %v (bound mean 2.0)", f.File, st)
						}
					}
				}
			}
		})
	}
}
