package synthetic

import (
	"bytes"
	"fmt"
	"image"
	"image/jpeg"
	"math"
	"testing"
)

func TestJPEGLooksLikeCamera(t *testing.T) {
	for _, tc := range []struct {
		h, w  int
		wrist bool
	}{
		{256, 256, false}, {256, 256, true}, {480, 640, false}, {480, 640, true},
		{360, 640, false}, {128, 128, false}, {180, 320, true},
	} {
		t.Run(fmt.Sprintf("%dx%d_wrist=%v", tc.h, tc.w, tc.wrist), func(t *testing.T) {
			const steps, episodes = 6, 2
			var bits, diffs, sds float64
			for ep := range episodes {
				r := newRNG(42, uint64(ep))
				m := newMotion(r, 30)
				c := newCamera(r, tc.h, tc.w, tc.wrist)
				img := image.NewRGBA(image.Rect(0, 0, tc.w, tc.h))
				var prev *image.YCbCr
				for s := range steps {
					c.render(img, m, 10+s)
					var buf bytes.Buffer
					if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: JPEGQuality}); err != nil {
						t.Fatal(err)
					}
					bits += float64(8 * buf.Len())
					dec, err := jpeg.Decode(&buf)
					if err != nil {
						t.Fatal(err)
					}
					y, ok := dec.(*image.YCbCr)
					if !ok {
						t.Fatalf("decoded a %T, want a colour JPEG", dec)
					}
					sds += stdDev(y.Y)
					if prev != nil {
						diffs += meanAbsDiff(prev.Y, y.Y)
					}
					prev = y
				}
			}
			bpp := bits / float64(episodes*steps*tc.h*tc.w)
			diff := diffs / float64(episodes*(steps-1))
			sd := sds / float64(episodes*steps)
			t.Logf("%.2f bits/pixel, luma stddev %.1f, consecutive frames differ by %.2f levels", bpp, sd, diff)
			if bpp < 1.5 || bpp > 3.5 {
				t.Errorf("%.2f bits per pixel, want 1.5..3.5", bpp)
			}
			if sd < 10 {
				t.Errorf("luma stddev %.1f: frames nearly flat", sd)
			}
			if diff < 1 || diff > 30 {
				t.Errorf("consecutive frames differ by %.2f levels on average, want 1..30", diff)
			}
		})
	}
}

// stdDev is the standard deviation of a plane of 8-bit samples.
func stdDev(p []uint8) float64 {
	var sum, sq float64
	for _, v := range p {
		sum += float64(v)
		sq += float64(v) * float64(v)
	}
	n := float64(len(p))
	mean := sum / n
	return math.Sqrt(sq/n - mean*mean)
}

// meanAbsDiff is the mean absolute difference of two planes of the same
// size, in 8-bit levels.
func meanAbsDiff(a, b []uint8) float64 {
	var sum int
	for i := range a {
		d := int(a[i]) - int(b[i])
		sum += max(d, -d)
	}
	return float64(sum) / float64(len(a))
}
