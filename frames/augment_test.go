package frames

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestCropBoxPixels pins how a CropBox's fractions become whole pixels.
func TestCropBoxPixels(t *testing.T) {
	for _, tc := range []struct {
		name         string
		c            CropBox
		w, h         int
		x, y, bw, bh int
	}{
		{"whole", CropBox{}, 640, 360, 0, 0, 640, 360},
		{"whole explicit", CropBox{W: 1, H: 1, X: 0.7, Y: 0.2}, 640, 360, 0, 0, 640, 360},
		{"diffusion policy sim, left", CropBox{W: 0.9, H: 0.9}, 84, 84, 0, 0, 76, 76},
		{"diffusion policy sim, right", CropBox{W: 0.9, H: 0.9, X: 0.99999, Y: 0.99999}, 84, 84, 8, 8, 76, 76},
		{"diffusion policy real, centre", CropBox{W: 0.9, H: 0.9, X: 0.5, Y: 0.5}, 320, 240, 16, 12, 288, 216},
		{"centre of an odd free room", CropBox{W: 0.95, H: 0.95, X: 0.5, Y: 0.5}, 224, 224, 6, 6, 213, 213},
		{"position 1 clamps", CropBox{W: 0.5, H: 0.5, X: 1, Y: 1}, 10, 10, 5, 5, 5, 5},
		{"at least one pixel", CropBox{W: 0.01, H: 0.01, X: 0.5, Y: 0.5}, 20, 20, 10, 10, 1, 1},
		{"uniform positions", CropBox{W: 0.5, H: 0.5, X: 0.34, Y: 0.66}, 4, 4, 1, 1, 2, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x, y, bw, bh := tc.c.Box(tc.w, tc.h)
			if x != tc.x || y != tc.y || bw != tc.bw || bh != tc.bh {
				t.Errorf("Box(%d, %d) = %d,%d %dx%d; want %d,%d %dx%d", tc.w, tc.h, x, y, bw, bh, tc.x, tc.y, tc.bw, tc.bh)
			}
		})
	}
}

// cut copies box b of src into an image of its own.
func cut(src rgbImage, b box) rgbImage {
	out := rgbImage{Pix: make([]byte, b.W*b.H*3), W: b.W, H: b.H, Stride: 3 * b.W}
	for y := range b.H {
		copy(out.Pix[y*out.Stride:(y+1)*out.Stride], src.Pix[(b.Y+y)*src.Stride+b.X*3:])
	}
	return out
}

// TestCropIsResizeOfCut: a crop box resized into the slot equals the
// TensorFlow-exact resize (TestResizeTensorFlowValues) of the box cut out
// as an image of its own, bit for bit — tf.image.resize(frame[y0:y1,
// x0:x1]) — for every kernel, layout and resize mode, over old data.
func TestCropIsResizeOfCut(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for _, k := range kernels() {
		for _, mode := range []ResizeMode{Squash, Crop, Pad} {
			for _, layout := range []Layout{BFHWC, BCFHW} {
				t.Run(fmt.Sprintf("%s/%v/%v", kernelName(k), mode, layout), func(t *testing.T) {
					for range 40 {
						h, w := 1+rng.IntN(90), 1+rng.IntN(120)
						outH, outW := 1+rng.IntN(70), 1+rng.IntN(70)
						src := randomImage(rng, h, w, 3*w+3*rng.IntN(3))
						c := CropBox{W: rng.Float32(), H: rng.Float32(), X: rng.Float32(), Y: rng.Float32()}
						a := Augment{Crop: c}
						sb, _ := place(mode, w, h, outW, outH)
						cb := c.box(sb)
						rz := resizer{kernel: k}
						got := bytes.Repeat([]byte{0xEE}, 2*outH*outW*3)
						rz.writeAugmented(newFrameDst(got, layout, 1, 2, outH, outW), mode, src, &a)
						want := bytes.Repeat([]byte{0xEE}, 2*outH*outW*3)
						wantMode := Squash
						if mode == Pad {
							wantMode = Pad
						}
						rz.write(newFrameDst(want, layout, 1, 2, outH, outW), wantMode, cut(src, cb))
						if !bytes.Equal(got, want) {
							t.Fatalf("%dx%d source, box %+v into %dx%d: the crop differs from the resize of the cut box", w, h, cb, outW, outH)
						}
					}
				})
			}
		}
	}
}

// resized returns the slot frame the plain resize of src makes (BFHWC).
func resized(src rgbImage, mode ResizeMode, h, w int) []byte {
	var rz resizer
	out := make([]byte, h*w*3)
	rz.write(newFrameDst(out, BFHWC, 0, 1, h, w), mode, src)
	return out
}

// TestAffineExactMoves checks the fused affine where torchvision's result
// is known without torchvision: a translation moves the resized frame by
// whole pixels (zeros uncovered), a quarter turn of a square frame is
// numpy's rot90, a half turn flips both ways; in both layouts and every
// resize mode (pad's borders move with the frame).
func TestAffineExactMoves(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	src := randomImage(rng, 45, 61, 3*61)
	const n = 32
	for _, mode := range []ResizeMode{Squash, Crop, Pad} {
		t.Run(mode.String(), func(t *testing.T) { testAffineMoves(t, src, mode, n) })
	}
}

func testAffineMoves(t *testing.T, src rgbImage, mode ResizeMode, n int) {
	base := resized(src, mode, n, n)
	at := func(x, y int) [3]byte {
		if x < 0 || y < 0 || x >= n || y >= n {
			return [3]byte{}
		}
		o := (y*n + x) * 3
		return [3]byte{base[o], base[o+1], base[o+2]}
	}
	for _, tc := range []struct {
		name string
		a    Affine
		from func(x, y int) (int, int)
	}{
		{"shift right 3 down 5", Affine{TX: 3.0 / float32(n), TY: 5.0 / float32(n)}, func(x, y int) (int, int) { return x - 3, y - 5 }},
		{"shift left 7", Affine{TX: -7.0 / float32(n)}, func(x, y int) (int, int) { return x + 7, y }},
		{"quarter turn", Affine{Angle: 90}, func(x, y int) (int, int) { return n - 1 - y, x }},
		{"three quarter turn", Affine{Angle: -90}, func(x, y int) (int, int) { return y, n - 1 - x }},
		{"half turn", Affine{Angle: 180}, func(x, y int) (int, int) { return n - 1 - x, n - 1 - y }},
	} {
		for _, layout := range []Layout{BFHWC, BCFHW} {
			t.Run(tc.name+"/"+layout.String(), func(t *testing.T) {
				var rz resizer
				buf := bytes.Repeat([]byte{0xEE}, n*n*3)
				rz.writeAugmented(newFrameDst(buf, layout, 0, 1, n, n), mode, src, &Augment{Affine: tc.a})
				got := frameHWC(buf, layout, 0, 1, n, n)
				bad := 0
				for y := range n {
					for x := range n {
						want := at(tc.from(x, y))
						o := (y*n + x) * 3
						if [3]byte{got[o], got[o+1], got[o+2]} != want {
							bad++
						}
					}
				}
				if bad > 0 {
					t.Errorf("%d of %d pixels are not the moved resized frame's", bad, n*n)
				}
			})
		}
	}
}

// TestColourIdentityAndLayouts: factors that change nothing leave the
// frame as it is (contrast 1 keeps x + 0·mean, sharpness 1 keeps x), and
// every chain of ops gives the same pixels in both layouts.
func TestColourIdentityAndLayouts(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const h, w = 23, 31
	src := randomImage(rng, h, w, 3*w)
	ident := []Colour{{Brightness, 1}, {Contrast, 1}, {Saturation, 1}, {Sharpness, 1}}
	var c colourer
	buf := append([]byte(nil), src.Pix...)
	c.apply(newFrameDst(buf, BFHWC, 0, 1, h, w), ident)
	if !bytes.Equal(buf, src.Pix) {
		t.Errorf("identity factors changed the frame")
	}
	ops := []ColourOp{Brightness, Contrast, Saturation, Hue, Sharpness}
	for i := range 30 {
		var chain []Colour
		for _, j := range rng.Perm(len(ops))[:1+rng.IntN(len(ops))] {
			f := 0.3 + 1.4*rng.Float32()
			if ops[j] == Hue {
				f = rng.Float32() - 0.5
			}
			chain = append(chain, Colour{ops[j], f})
		}
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			hwc := append([]byte(nil), src.Pix...)
			c.apply(newFrameDst(hwc, BFHWC, 0, 1, h, w), chain)
			planar := make([]byte, 2*h*w*3)
			d := newFrameDst(planar, BCFHW, 1, 2, h, w)
			d.copyFrom(src, box{0, 0, w, h}, box{0, 0, w, h})
			c.apply(d, chain)
			if got := frameHWC(planar, BCFHW, 1, 2, h, w); !bytes.Equal(got, hwc) {
				t.Errorf("%v: BCFHW differs from BFHWC", chain)
			}
			if bytes.Equal(hwc, src.Pix) {
				t.Errorf("%v changed nothing", chain)
			}
		})
	}
}

// TestAugmentThroughImages: a slot's Augment is applied by the Source to
// every frame of the slot; a dropped camera is zeros and is not decoded
// (its bytes are not even an image); a bad Augment is refused.
func TestAugmentThroughImages(t *testing.T) {
	d := testDecoder(t, JPEGAuto)
	jpg := readTestImage(t, "jpeg420.jpg") // 37x29
	ctx := context.Background()
	a := Augment{Crop: CropBox{W: 0.8, H: 0.7, X: 0.3, Y: 0.9}, Affine: Affine{Angle: 7, TX: 0.1}, Colour: []Colour{{Saturation, 1.4}, {Contrast, 0.7}}}
	const H, W = 20, 24
	got := Slot{Buf: make([]byte, 2*H*W*3), Frames: 2, H: H, W: W, Augment: a}
	if err := (&Images{Key: "cam", Steps: 1, Encoded: steps{jpg}}).Decode(ctx, d, []int{0, 0}, got); err != nil {
		t.Fatal(err)
	}
	full := Slot{Buf: make([]byte, 29*37*3), Frames: 1, H: 29, W: 37}
	if err := (&Images{Key: "cam", Steps: 1, Encoded: steps{jpg}}).Decode(ctx, d, []int{0}, full); err != nil {
		t.Fatal(err)
	}
	src := rgbImage{Pix: full.Buf, W: 37, H: 29, Stride: 37 * 3}
	var rz resizer
	var c colourer
	want := make([]byte, H*W*3)
	rz.writeAugmented(newFrameDst(want, BFHWC, 0, 1, H, W), Squash, src, &a)
	c.apply(newFrameDst(want, BFHWC, 0, 1, H, W), a.Colour)
	for f := range 2 {
		if !bytes.Equal(got.Buf[f*H*W*3:(f+1)*H*W*3], want) {
			t.Errorf("frame %d is not the augmented frame", f)
		}
	}

	drop := Slot{Buf: bytes.Repeat([]byte{9}, H*W*3), Frames: 1, H: H, W: W, Augment: Augment{Drop: true}}
	if err := (&Images{Key: "cam", Steps: 1, Encoded: steps{[]byte("not an image")}}).Decode(ctx, d, []int{0}, drop); err != nil {
		t.Fatalf("dropped camera: %v", err)
	}
	if !bytes.Equal(drop.Buf, make([]byte, H*W*3)) {
		t.Errorf("a dropped camera's frame is not zeros")
	}

	for _, tc := range []struct {
		name string
		a    Augment
		want string
	}{
		{"crop width above 1", Augment{Crop: CropBox{W: 1.5}}, "crop W"},
		{"crop place negative", Augment{Crop: CropBox{W: 0.5, X: -0.1}}, "crop X"},
		{"hue beyond half a turn", Augment{Colour: []Colour{{Hue, 0.6}}}, "hue factor"},
		{"negative brightness", Augment{Colour: []Colour{{Brightness, -1}}}, "brightness factor"},
		{"unknown op", Augment{Colour: []Colour{{ColourOp(9), 1}}}, "valid: brightness"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Slot{Buf: make([]byte, H*W*3), Frames: 1, H: H, W: W, Augment: tc.a}
			err := (&Images{Key: "cam", Steps: 1, Encoded: steps{jpg}}).Decode(ctx, d, []int{0}, s)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error naming %q", err, tc.want)
			}
		})
	}
}

// TestAugmentedDecodeAllocs: augmenting allocates nothing per frame once
// the Decoder's buffers have grown (the affine's grid columns, the
// sharpness copy).
func TestAugmentedDecodeAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	d := testDecoder(t, JPEGTurbo)
	cam := steps{photoJPEG(t, 64, 48)}
	var src Source = &Images{Key: "cam", Steps: 1, Encoded: cam}
	a := Augment{
		Crop:   CropBox{W: 0.8, H: 0.9, X: 0.2, Y: 0.7},
		Affine: Affine{Angle: 3, TX: 0.02},
		Colour: []Colour{{Brightness, 1.1}, {Contrast, 0.9}, {Saturation, 1.2}, {Hue, 0.02}, {Sharpness, 1.3}},
	}
	slot := Slot{Buf: make([]byte, 2*32*32*3), Frames: 2, H: 32, W: 32, Augment: a}
	ctx := context.Background()
	decode := func() {
		if err := src.Decode(ctx, d, []int{0, 0}, slot); err != nil {
			t.Fatal(err)
		}
	}
	decode()
	if n := testing.AllocsPerRun(20, decode); n != 0 {
		t.Errorf("%v allocations per augmented sample", n)
	}
}

// TestAffineBandedIsPointwise: the banded affine (resized rows in a ring)
// writes exactly what the pointwise one (the resize evaluated per output
// pixel) writes, for every kernel, resize mode and layout, small angles
// (banded) and large ones (which fall back), over old data.
func TestAffineBandedIsPointwise(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 19))
	for _, k := range kernels() {
		for _, mode := range []ResizeMode{Squash, Crop, Pad} {
			for _, layout := range []Layout{BFHWC, BCFHW} {
				t.Run(fmt.Sprintf("%s/%v/%v", kernelName(k), mode, layout), func(t *testing.T) {
					banded := 0
					for i := range 40 {
						h, w := 1+rng.IntN(120), 1+rng.IntN(160)
						outH, outW := 1+rng.IntN(90), 1+rng.IntN(90)
						src := randomImage(rng, h, w, 3*w)
						angle := 12 * (rng.Float32() - 0.5)
						if i%5 == 0 {
							angle = 360 * (rng.Float32() - 0.5)
						}
						a := Augment{
							Crop:   CropBox{W: 0.5 + rng.Float32()/2, H: 0.5 + rng.Float32()/2, X: rng.Float32(), Y: rng.Float32()},
							Affine: Affine{Angle: angle, TX: 0.2 * (rng.Float32() - 0.5), TY: 0.2 * (rng.Float32() - 0.5)},
						}
						got := bytes.Repeat([]byte{0xEE}, 2*outH*outW*3)
						want := bytes.Repeat([]byte{0xEE}, 2*outH*outW*3)
						rz := resizer{kernel: k}
						rz.writeAugmented(newFrameDst(got, layout, 1, 2, outH, outW), mode, src, &a)
						if rz.bandLo != nil && len(rz.band) > 0 {
							banded++
						}
						ref := resizer{kernel: k, pointwise: true}
						ref.writeAugmented(newFrameDst(want, layout, 1, 2, outH, outW), mode, src, &a)
						if !bytes.Equal(got, want) {
							t.Fatalf("%dx%d into %dx%d, %+v: banded and pointwise differ", w, h, outW, outH, a)
						}
					}
					if banded == 0 {
						t.Errorf("no case took the banded way")
					}
				})
			}
		}
	}
}
