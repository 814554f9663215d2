package frames

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/oxefs/oxefs/frames/turbojpeg"
	"github.com/oxefs/oxefs/internal/testkit"
)

// TestFilterWeights: every output's weights are within its source row,
// sum to exactly one in fixed point, and are the area (shrinking) or
// bilinear (enlarging) weights rounded.
func TestFilterWeights(t *testing.T) {
	for _, g := range [][2]int{{640, 256}, {480, 256}, {320, 256}, {256, 256}, {240, 256}, {128, 256}, {1, 7}, {7, 1}, {1000, 3}, {5, 4}, {2, 3}} {
		var f filter
		f.set(g[0], g[1])
		for i := range g[1] {
			s := int(f.start[i])
			if s < 0 || s+f.k > g[0] {
				t.Fatalf("%d→%d: output %d reads [%d, %d) of %d", g[0], g[1], i, s, s+f.k, g[0])
			}
			var sum uint64
			for j, w := range f.w[i*f.k : i*f.k+f.k] {
				sum += w
				want := refWeight(g[0], g[1], i, s+j)
				if d := math.Abs(float64(w)/fixOne - want); d > 1.0/fixOne {
					t.Errorf("%d→%d: output %d, source %d: weight %d/%d, want %.5f", g[0], g[1], i, s+j, w, fixOne, want)
				}
			}
			if sum != fixOne {
				t.Errorf("%d→%d: output %d: weights sum to %d, want %d", g[0], g[1], i, sum, fixOne)
			}
		}
	}
}

// refWeight is the weight of source pixel j in output i of an in → out
// resize, from the definitions: the share of output i's area [i·s,
// (i+1)·s) (s = in/out > 1) that pixel [j, j+1) covers; else bilinear with
// half-pixel centres, clamped at the edges.
func refWeight(in, out, i, j int) float64 {
	s := float64(in) / float64(out)
	if s > 1 {
		a, b := float64(i)*s, float64(i+1)*s
		return max(0, min(b, float64(j+1))-max(a, float64(j))) / s
	}
	src := (float64(i)+0.5)*s - 0.5
	lo := math.Floor(src)
	w := 0.0
	for _, tap := range []struct {
		at int
		w  float64
	}{{int(lo), 1 - (src - lo)}, {int(lo) + 1, src - lo}} {
		if min(max(tap.at, 0), in-1) == j {
			w += tap.w
		}
	}
	return w
}

// refResize computes the fast resize of src's box sb into an h×w frame
// straight from the definitions, in float64, two-dimensional.
func refResize(src rgbImage, sb box, h, w int) []float64 {
	out := make([]float64, h*w*3)
	for y := range h {
		for x := range w {
			for sy := range sb.H {
				wy := refWeight(sb.H, h, y, sy)
				if wy == 0 {
					continue
				}
				for sx := range sb.W {
					wx := refWeight(sb.W, w, x, sx)
					if wx == 0 {
						continue
					}
					p := src.Pix[(sb.Y+sy)*src.Stride+(sb.X+sx)*3:]
					for c := range 3 {
						out[(y*w+x)*3+c] += wx * wy * float64(p[c])
					}
				}
			}
		}
	}
	return out
}

// TestFastResizeReference: the fixed-point separable resize is within one
// level of the definition computed in float64 (its two roundings), on a
// random image, shrinking, enlarging and both at once, in either layout,
// and BCFHW holds the same values as BFHWC; a flat image stays flat.
func TestFastResizeReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, g := range []struct{ inH, inW, h, w int }{
		{48, 64, 20, 24}, {36, 100, 20, 10}, {20, 24, 48, 64}, {30, 20, 12, 50}, {33, 47, 33, 47}, {90, 120, 7, 9}, {1, 1, 3, 5}, {40, 40, 40, 13},
	} {
		t.Run(fmt.Sprintf("%dx%d→%dx%d", g.inH, g.inW, g.h, g.w), func(t *testing.T) {
			src := rgbImage{Pix: make([]byte, g.inH*g.inW*3), W: g.inW, H: g.inH, Stride: 3 * g.inW}
			for i := range src.Pix {
				src.Pix[i] = byte(rng.IntN(256))
			}
			ref := refResize(src, box{0, 0, g.inW, g.inH}, g.h, g.w)
			var fz fastResizer
			out := single(g.h, g.w)
			fz.write(out, Squash, src)
			var worst float64
			for i, v := range out.buf {
				worst = max(worst, math.Abs(float64(v)-ref[i]))
			}
			if worst > 1 {
				t.Errorf("max |fast − definition| = %.3f, want ≤ 1", worst)
			}
			planar := newFrameDst(make([]byte, g.h*g.w*3), BCFHW, 0, 1, g.h, g.w)
			fz.write(planar, Squash, src)
			if !bytes.Equal(testkit.FrameHWC(planar.buf, true, 0, 1, g.h, g.w), out.buf) {
				t.Error("BCFHW differs from BFHWC")
			}
			flat := rgbImage{Pix: bytes.Repeat([]byte{200, 7, 93}, g.inH*g.inW), W: g.inW, H: g.inH, Stride: 3 * g.inW}
			fz.write(out, Squash, flat)
			if !bytes.Equal(out.buf, bytes.Repeat([]byte{200, 7, 93}, g.h*g.w)) {
				t.Error("a flat image does not stay flat")
			}
		})
	}
}

// TestFastScale: the DCT scale fast decoding picks is the smallest of 1/8,
// 1/4 and 1/2 whose kept part still covers the slot's, under each resize
// mode; exact decoding never scales.
func TestFastScale(t *testing.T) {
	for _, tc := range []struct {
		w, h, outW, outH int
		mode             ResizeMode
		want             int
	}{
		{640, 480, 256, 256, Squash, 8}, // 1/2 is 320×240: too short
		{640, 480, 224, 224, Squash, 4},
		{640, 480, 128, 128, Squash, 4}, // 1/4 is 160×120
		{640, 480, 64, 64, Squash, 2},
		{640, 480, 32, 32, Squash, 1},
		{640, 360, 128, 128, Squash, 4},
		{640, 360, 128, 128, Crop, 4},  // the centred 180×180 of 320×180
		{640, 360, 128, 128, Pad, 2},   // 160×90 fits 128×72
		{1280, 720, 256, 256, Crop, 4}, // 360×360 of 640×360
		{256, 256, 256, 256, Squash, 8},
		{100, 80, 256, 256, Squash, 8}, // enlarged
	} {
		f := fit{W: tc.outW, H: tc.outH, Mode: tc.mode}
		if got := f.eighths(tc.w, tc.h); got != tc.want {
			t.Errorf("%dx%d → %dx%d %v: %d/8, want %d/8", tc.w, tc.h, tc.outW, tc.outH, tc.mode, got, tc.want)
		}
		if got := (fit{}).eighths(tc.w, tc.h); got != 8 {
			t.Errorf("exact %dx%d: %d/8", tc.w, tc.h, got)
		}
	}
}

// TestFastDecode runs whole frames through an Images source in both
// modes: fast is deterministic (two decoders, twice each), decodes a large
// JPEG at a DCT scale, differs from exact by no more than a PSNR floor,
// and handles PNG and image/jpeg (no DCT scaling) by the same resize.
func TestFastDecode(t *testing.T) {
	big := photoJPEG(t, 640, 480)
	png := readTestImage(t, "pngrgba.png") // 37×29
	for _, tc := range []struct {
		name    string
		data    []byte
		choice  string
		h, w    int
		eighths int     // scale decodeTurbo must pick
		floor   float64 // PSNR of fast against exact, dB
	}{
		{"jpeg 640x480 to 128x128", big, JPEGTurbo, 128, 128, 4, 25},
		{"jpeg 640x480 to 60x80", big, JPEGTurbo, 60, 80, 1, 25},
		{"jpeg 640x480 to 256x256", big, JPEGTurbo, 256, 256, 8, 25},
		{"image/jpeg 640x480 to 128x128", big, JPEGGo, 128, 128, 0, 25},
		{"png 37x29 to 16x20", png, JPEGTurbo, 16, 20, 0, 25},
	} {
		t.Run(tc.name, func(t *testing.T) {
			decode := func(d *Decoder, mode DecodeMode) []byte {
				src := &Images{Key: "cam", Steps: 2, Encoded: steps{tc.data, tc.data}}
				slot := Slot{Buf: bytes.Repeat([]byte{0xEE}, 2*tc.h*tc.w*3), Frames: 2, H: tc.h, W: tc.w, Decode: mode}
				if err := src.Decode(t.Context(), d, []int{0, 1}, slot); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(slot.Buf[:len(slot.Buf)/2], slot.Buf[len(slot.Buf)/2:]) {
					t.Fatal("the same image decoded twice in one slot differs")
				}
				return slot.Buf[:len(slot.Buf)/2]
			}
			d1, d2 := testDecoder(t, tc.choice), testDecoder(t, tc.choice)
			fast := decode(d1, Fast)
			if again := decode(d2, Fast); !bytes.Equal(fast, again) {
				t.Fatal("two decoders give different fast frames")
			}
			exact := decode(d1, Exact)
			psnr := testkit.PSNR(exact, fast)
			t.Logf("fast vs exact: PSNR %.1f dB, %v", psnr, testkit.Diff(exact, fast))
			if psnr < tc.floor {
				t.Errorf("PSNR %.1f dB, floor %.0f", psnr, tc.floor)
			}
			if tc.eighths == 0 {
				return
			}
			// The scale: decoding at it and resizing gives the same frame.
			tj, err := turbojpeg.NewDecompressor()
			if err != nil {
				t.Fatal(err)
			}
			defer tj.Close()
			hdr, err := tj.Header(tc.data)
			if err != nil {
				t.Fatal(err)
			}
			w, h := turbojpeg.Scaled(hdr.Width, tc.eighths), turbojpeg.Scaled(hdr.Height, tc.eighths)
			img := rgbImage{Pix: make([]byte, w*h*3), W: w, H: h, Stride: 3 * w}
			if err := tj.DecodeScaledRGB(tc.data, hdr, tc.eighths, img.Pix, img.Stride); err != nil {
				t.Fatal(err)
			}
			var fz fastResizer
			want := single(tc.h, tc.w)
			fz.write(want, Squash, img)
			if !bytes.Equal(fast, want.buf) {
				t.Errorf("fast frame is not the %d/8-scale decode resized", tc.eighths)
			}
		})
	}
}
