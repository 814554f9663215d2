package frames

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/oxefs/oxefs/frames/bilinear"
	"github.com/oxefs/oxefs/internal/testkit"
)

// The expected values below were computed with TensorFlow 2.21 (Keras 3.15)
// on this machine:
//
//	import numpy as np, tensorflow as tf
//	from keras.preprocessing.image import smart_resize
//	def img(h, w):
//	    # deterministic, non-smooth content: (37*i + 101*j + 59*c) mod 256
//	    i, j, c = np.meshgrid(np.arange(h), np.arange(w), np.arange(3), indexing="ij")
//	    return ((37 * i + 101 * j + 59 * c) % 256).astype(np.uint8)
//	def rs(a, h, w):
//	    return tf.cast(tf.image.resize(a, [h, w], method="bilinear", antialias=False), tf.uint8).numpy()
//	rs(img(2, 3), 5, 7).flatten().tolist()                  # and every squash case
//	tf.cast(smart_resize(img(6, 10), (4, 4)), tf.uint8)      # crop
//	tf.cast(tf.image.resize_with_pad(img(6, 10), 5, 5, method="bilinear", antialias=False), tf.uint8)  # pad

// testImage is img(h, w) of the Python snippet.
func testImage(h, w int) rgbImage {
	pix := make([]byte, h*w*3)
	for i := range h {
		for j := range w {
			for c := range 3 {
				pix[(i*w+j)*3+c] = byte((37*i + 101*j + 59*c) % 256)
			}
		}
	}
	return rgbImage{Pix: pix, W: w, H: h, Stride: 3 * w}
}

var resizeCases = []struct {
	name       string
	mode       ResizeMode
	inH, inW   int
	outH, outW int
	want       []byte
}{
	{"upscale", Squash, 2, 3, 5, 7, []byte{0, 59, 118, 14, 73, 132, 57, 116, 175, 101, 160, 219, 144, 93, 152, 187, 27, 86, 202, 5, 64, 3, 62, 121, 18, 77, 132, 61, 120, 164, 104, 163, 197, 147, 97, 141, 191, 30, 86, 205, 8, 67, 18, 77, 136, 32, 91, 132, 76, 135, 121, 119, 178, 109, 162, 112, 97, 206, 45, 86, 220, 23, 82, 33, 92, 151, 47, 106, 132, 91, 150, 77, 134, 193, 21, 177, 126, 54, 220, 60, 86, 235, 38, 97, 37, 96, 155, 51, 110, 132, 94, 153, 66, 138, 197, 0, 181, 130, 43, 224, 64, 86, 239, 42, 101}},
	{"downscale", Squash, 6, 8, 3, 4, []byte{69, 128, 123, 143, 74, 133, 153, 148, 79, 163, 158, 153, 143, 138, 133, 89, 148, 143, 99, 94, 153, 109, 104, 99, 153, 148, 79, 163, 158, 153, 109, 168, 99, 119, 114, 173}},
	{"non-integer scale", Squash, 5, 7, 3, 4, []byte{50, 109, 136, 194, 29, 88, 147, 206, 41, 132, 127, 186, 111, 170, 133, 32, 91, 150, 209, 44, 103, 130, 189, 88, 173, 136, 88, 94, 153, 180, 47, 106, 133, 191, 90, 85}},
	{"1xN", Squash, 1, 9, 1, 4, []byte{63, 122, 181, 66, 93, 152, 229, 64, 123, 136, 195, 94}},
	{"Nx1", Squash, 7, 1, 3, 2, []byte{24, 83, 142, 24, 83, 142, 111, 170, 229, 111, 170, 229, 197, 171, 59, 197, 171, 59}},
	{"1xN widened", Squash, 1, 3, 2, 8, []byte{0, 59, 118, 6, 65, 124, 44, 103, 162, 82, 141, 200, 119, 130, 189, 157, 72, 131, 195, 14, 73, 202, 5, 64, 0, 59, 118, 6, 65, 124, 44, 103, 162, 82, 141, 200, 119, 130, 189, 157, 72, 131, 195, 14, 73, 202, 5, 64}},
	{"identity", Squash, 3, 4, 3, 4, []byte{0, 59, 118, 101, 160, 219, 202, 5, 64, 47, 106, 165, 37, 96, 155, 138, 197, 0, 239, 42, 101, 84, 143, 202, 74, 133, 192, 175, 234, 37, 20, 79, 138, 121, 180, 239}},
	{"crop wide", Crop, 6, 10, 4, 4, []byte{172, 39, 98, 132, 191, 58, 171, 86, 145, 179, 190, 105, 84, 95, 154, 187, 102, 113, 83, 142, 153, 90, 101, 112, 91, 150, 145, 51, 110, 105, 138, 133, 144, 98, 93, 152, 147, 158, 201, 106, 117, 160, 146, 189, 56, 105, 148, 207}},
	{"crop tall", Crop, 9, 4, 3, 5, []byte{111, 170, 229, 181, 61, 120, 134, 65, 124, 87, 146, 128, 158, 217, 20, 129, 188, 119, 200, 79, 100, 153, 84, 143, 105, 164, 147, 176, 235, 38, 148, 207, 10, 218, 98, 80, 171, 102, 161, 124, 183, 165, 195, 254, 57}},
	{"pad wide", Pad, 6, 10, 5, 5, []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 69, 128, 123, 143, 74, 133, 153, 148, 79, 163, 158, 153, 109, 168, 99, 143, 138, 133, 89, 148, 143, 99, 94, 153, 109, 104, 99, 183, 114, 109, 153, 148, 79, 163, 158, 153, 109, 168, 99, 119, 114, 173, 129, 124, 119, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
	{"pad tall", Pad, 9, 4, 4, 7, []byte{0, 0, 0, 0, 0, 0, 174, 105, 84, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 129, 76, 119, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 85, 144, 187, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 168, 99, 110, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
	{"pad same size", Pad, 7, 3, 7, 3, []byte{0, 59, 118, 101, 160, 219, 202, 5, 64, 37, 96, 155, 138, 197, 0, 239, 42, 101, 74, 133, 192, 175, 234, 37, 20, 79, 138, 111, 170, 229, 212, 15, 74, 57, 116, 175, 148, 207, 10, 249, 52, 111, 94, 153, 212, 185, 244, 47, 30, 89, 148, 131, 190, 249, 222, 25, 84, 67, 126, 185, 168, 227, 30}},
}

// TestResizeTensorFlowValues checks the resize against TensorFlow's own
// output, in both layouts and over a destination full of old data (pad
// borders must be cleared).
func TestResizeTensorFlowValues(t *testing.T) {
	for _, tc := range resizeCases {
		for _, k := range kernels() {
			t.Run(tc.name+"/"+kernelName(k), func(t *testing.T) {
				if len(tc.want) != tc.outH*tc.outW*3 {
					t.Fatalf("case has %d values, want %d", len(tc.want), tc.outH*tc.outW*3)
				}
				rz := resizer{kernel: k}
				src := testImage(tc.inH, tc.inW)
				for _, layout := range []Layout{BFHWC, BCFHW} {
					// Frame 1 of a 3-frame slot, the rest filled with 0xEE.
					buf := bytes.Repeat([]byte{0xEE}, 3*tc.outH*tc.outW*3)
					d := newFrameDst(buf, layout, 1, 3, tc.outH, tc.outW)
					rz.write(d, tc.mode, src)
					got := frameHWC(buf, layout, 1, 3, tc.outH, tc.outW)
					if !bytes.Equal(got, tc.want) {
						t.Errorf("%v: got  %v\nwant %v", layout, got, tc.want)
					}
					for f := range 3 {
						if f == 1 {
							continue
						}
						for _, v := range frameHWC(buf, layout, f, 3, tc.outH, tc.outW) {
							if v != 0xEE {
								t.Fatalf("%v: frame %d was written", layout, f)
							}
						}
					}
				}
			})
		}
	}
}

// frameHWC extracts frame f of a slot as [H][W][3].
func frameHWC(buf []byte, layout Layout, f, F, H, W int) []byte {
	return testkit.FrameHWC(buf, layout == BCFHW, f, F, H, W)
}

// TestIdentityIsCopy: a frame already at the target size is copied bit for
// bit, whatever its content, in every mode.
func TestIdentityIsCopy(t *testing.T) {
	src := testImage(17, 23)
	for i := range src.Pix {
		src.Pix[i] = byte(i * 7919 % 251)
	}
	var rz resizer
	for _, mode := range []ResizeMode{Squash, Crop, Pad} {
		d := single(17, 23)
		rz.write(d, mode, src)
		if !bytes.Equal(d.buf, src.Pix) {
			t.Errorf("%v: same-size frame not copied exactly", mode)
		}
	}
}

// TestPlace checks the crop and pad geometry on the sizes of real OXE
// cameras.
func TestPlace(t *testing.T) {
	cases := []struct {
		mode       ResizeMode
		w, h       int
		outW, outH int
		src, dst   box
	}{
		{Squash, 640, 360, 256, 256, box{0, 0, 640, 360}, box{0, 0, 256, 256}},
		{Crop, 640, 360, 256, 256, box{140, 0, 360, 360}, box{0, 0, 256, 256}},
		{Crop, 320, 256, 256, 256, box{32, 0, 256, 256}, box{0, 0, 256, 256}},
		{Crop, 256, 320, 256, 256, box{0, 32, 256, 256}, box{0, 0, 256, 256}},
		{Crop, 640, 480, 160, 90, box{0, 60, 640, 360}, box{0, 0, 160, 90}},
		{Pad, 640, 360, 256, 256, box{0, 0, 640, 360}, box{0, 56, 256, 144}},
		{Pad, 320, 256, 256, 256, box{0, 0, 320, 256}, box{0, 25, 256, 204}},
		{Pad, 360, 640, 256, 256, box{0, 0, 360, 640}, box{56, 0, 144, 256}},
		{Pad, 256, 256, 256, 256, box{0, 0, 256, 256}, box{0, 0, 256, 256}},
	}
	for _, tc := range cases {
		src, dst := place(tc.mode, tc.w, tc.h, tc.outW, tc.outH)
		if src != tc.src || dst != tc.dst {
			t.Errorf("%v %dx%d -> %dx%d: src %v dst %v, want %v %v", tc.mode, tc.w, tc.h, tc.outW, tc.outH, src, dst, tc.src, tc.dst)
		}
	}
}

// TestResizeMatchesTensorFlowExactly resizes TensorFlow's own decoded
// frames and compares with TensorFlow's resized ones: with the decode taken
// out of the picture, the resize must be bit-exact.
func TestResizeMatchesTensorFlowExactly(t *testing.T) {
	for _, k := range kernels() {
		t.Run(kernelName(k), func(t *testing.T) { checkTensorFlowFrames(t, k) })
	}
}

// checkTensorFlowFrames is TestResizeMatchesTensorFlowExactly with kernel k.
func checkTensorFlowFrames(t *testing.T, k bilinear.Level) {
	idx := testkit.LoadFrameIndex(t, expectedFrames)
	rz := resizer{kernel: k}
	for _, fr := range idx.Frames {
		shape, decoded := testkit.ReadNPY(t, filepath.Join(expectedFrames, fr.Files[0].File))
		src := rgbImage{Pix: decoded, H: shape[0], W: shape[1], Stride: 3 * shape[1]}
		for _, f := range fr.Files[1:] {
			_, want := testkit.ReadNPY(t, filepath.Join(expectedFrames, f.File))
			dst := single(f.Size[0], f.Size[1])
			rz.write(dst, Squash, src)
			if !bytes.Equal(dst.buf, want) {
				t.Errorf("%s: resize of TensorFlow's decoded frame differs from TensorFlow's: %v", f.File, testkit.Diff(dst.buf, want))
			}
		}
	}
}
