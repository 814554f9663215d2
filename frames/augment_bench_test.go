package frames

import (
	"fmt"
	"testing"
)

// octoColour is a draw of Octo's colour ops (brightness, contrast,
// saturation, hue, in that order). The hue is no round number: a drawn
// one almost never is, and round ones (−0.03) take the kernel's slower
// hue (see colourk's hue_split_ok).
var octoColour = []Colour{{Brightness, 1.06}, {Contrast, 0.93}, {Saturation, 1.08}, {Hue, -0.0317}}

// augmentCases are the benchmarks' augmentations, the plain resize first,
// so that each op's cost reads as a ratio to it.
var augmentCases = []struct {
	name string
	a    Augment
}{
	{"resize", Augment{}},
	{"crop+resize", Augment{Crop: CropBox{W: 0.9, H: 0.85, X: 0.3, Y: 0.6}}},
	{"affine+resize", Augment{Affine: Affine{Angle: 4.2, TX: 0.03, TY: -0.02}}},
	{"crop+affine+resize", Augment{Crop: CropBox{W: 0.9, H: 0.85, X: 0.3, Y: 0.6}, Affine: Affine{Angle: 4.2}}},
	{"resize+colour(octo)", Augment{Colour: octoColour}},
	{"resize+sharpness", Augment{Colour: []Colour{{Sharpness, 1.3}}}},
}

// BenchmarkAugment is each augmentation of a 640×360 frame into a 256×256
// slot, the decoded frame given (the resize and the ops alone), then
// through the Source with libjpeg-turbo's decode (what a frame costs the
// pipeline). Run it per core: go test -run '^$' -bench Augment -cpu 1
// ./frames/
func BenchmarkAugment(b *testing.B) {
	const w, h, side = 640, 360, 256
	for _, tc := range augmentCases {
		b.Run("ops/"+tc.name, func(b *testing.B) {
			src := randomImageFor(b, h, w)
			var d Decoder
			slot := Slot{Buf: make([]byte, side*side*3), Frames: 1, H: side, W: side, Augment: tc.a}
			fd := slot.frame(0)
			op := func() { d.write(fd, slot, src) }
			op()
			b.ReportAllocs()
			loop(b, op)
		})
	}
	for _, tc := range augmentCases {
		b.Run(fmt.Sprintf("decode/%s", tc.name), func(b *testing.B) {
			d := testDecoder(b, JPEGTurbo)
			var src Source = &Images{Key: "bench", Steps: 1, Encoded: steps{photoJPEG(b, w, h)}}
			slot := Slot{Buf: make([]byte, side*side*3), Frames: 1, H: side, W: side, Augment: tc.a}
			idx := []int{0}
			op := func() {
				if err := src.Decode(b.Context(), d, idx, slot); err != nil {
					b.Fatal(err)
				}
			}
			op()
			b.ReportAllocs()
			loop(b, op)
		})
	}
	// Octo's colour ops through colour.go's Go code, as where the kernel
	// is not built.
	b.Run("ops/resize+colour(octo,go)", func(b *testing.B) {
		src := randomImageFor(b, h, w)
		d := Decoder{colour: colourer{kernel: goColour}}
		slot := Slot{Buf: make([]byte, side*side*3), Frames: 1, H: side, W: side, Augment: Augment{Colour: octoColour}}
		fd := slot.frame(0)
		op := func() { d.write(fd, slot, src) }
		op()
		b.ReportAllocs()
		loop(b, op)
	})
	// Octo's colour ops as torchvision's float32 arithmetic recomputed
	// operation for operation (colour_ref_test.go, the implementation
	// before the fast ops), after the plain resize: the same frames'
	// cost before, in the same run.
	b.Run("ops/resize+colour(octo,float32)", func(b *testing.B) {
		src := randomImageFor(b, h, w)
		var d Decoder
		var ref refColourer
		slot := Slot{Buf: make([]byte, side*side*3), Frames: 1, H: side, W: side}
		fd := slot.frame(0)
		op := func() { d.write(fd, slot, src); ref.apply(fd, octoColour) }
		op()
		b.ReportAllocs()
		loop(b, op)
	})
	b.Run("decode/resize+colour(octo,float32)", func(b *testing.B) {
		d := testDecoder(b, JPEGTurbo)
		var ref refColourer
		var src Source = &Images{Key: "bench", Steps: 1, Encoded: steps{photoJPEG(b, w, h)}}
		slot := Slot{Buf: make([]byte, side*side*3), Frames: 1, H: side, W: side}
		fd := slot.frame(0)
		idx := []int{0}
		op := func() {
			if err := src.Decode(b.Context(), d, idx, slot); err != nil {
				b.Fatal(err)
			}
			ref.apply(fd, octoColour)
		}
		op()
		b.ReportAllocs()
		loop(b, op)
	})
}

// randomImageFor is a photo-like decoded h×w frame.
func randomImageFor(b *testing.B, h, w int) rgbImage {
	d := testDecoder(b, JPEGAuto)
	img, err := d.decode(photoJPEG(b, w, h), Size{}, "", nil, 0, 0, fit{})
	if err != nil {
		b.Fatal(err)
	}
	pix := append([]byte(nil), img.Pix...)
	return rgbImage{Pix: pix, W: w, H: h, Stride: 3 * w}
}

// BenchmarkColour is each colour op, and Octo's chain, on a photo-like
// 256×256 frame: torchvision's float32 arithmetic recomputed operation
// for operation (colour_ref_test.go, "float32"), colour.go's Go code
// ("go") and each level of the colourk kernel, side by side. go test -run '^$' -bench Colour -cpu 1
// ./frames/
func BenchmarkColour(b *testing.B) {
	const side = 256
	src := randomImageFor(b, side, side)
	chains := []struct {
		name  string
		chain []Colour
	}{
		{"brightness", octoColour[:1]},
		{"brightness+contrast", octoColour[:2]},
		{"saturation", octoColour[2:3]},
		{"hue", octoColour[3:]},
		{"octo", octoColour},
		{"sharpness", []Colour{{Sharpness, 1.3}}},
	}
	for _, c := range chains {
		impls := []string{"float32"}
		for _, k := range colourKernels() {
			impls = append(impls, kernelName(k))
		}
		for _, impl := range impls {
			b.Run(c.name+"/"+impl, func(b *testing.B) {
				buf := make([]byte, len(src.Pix))
				d := newFrameDst(buf, BFHWC, 0, 1, side, side)
				var ref refColourer
				var fast colourer
				for _, k := range colourKernels() {
					if kernelName(k) == impl {
						fast.kernel = k
					}
				}
				op := func() {
					copy(buf, src.Pix)
					if impl == "float32" {
						ref.apply(d, c.chain)
					} else {
						fast.apply(d, c.chain)
					}
				}
				op()
				b.ReportAllocs()
				loop(b, op)
			})
		}
	}
}
