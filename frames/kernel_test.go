package frames

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/oxefs/oxefs/frames/bilinear"
	"github.com/oxefs/oxefs/frames/simd"
)

// kernels returns every resize implementation this build and machine run:
// the Go loop, then each level of package bilinear's kernel.
func kernels() []bilinear.Level { return withGo(bilinear.Levels()) }

// withGo is goCode, the Go code, followed by a kernel's levels ls.
func withGo(ls []simd.Level) []simd.Level { return append([]simd.Level{goCode}, ls...) }

// kernelName names an implementation of withGo's list in test names.
func kernelName(k simd.Level) string {
	if k == goCode {
		return "go"
	}
	return k.String()
}

// randomImage is an h×w image of random bytes, rows stride bytes apart
// (stride ≥ 3·w; the gap holds random bytes too, which no output may
// depend on).
func randomImage(rng *rand.Rand, h, w, stride int) rgbImage {
	pix := make([]byte, (h-1)*stride+3*w)
	for i := range pix {
		pix[i] = byte(rng.Uint32())
	}
	return rgbImage{Pix: pix, W: w, H: h, Stride: stride}
}

// checkKernels resizes src's box sb into box db of frame f of an F-frame
// slot with every kernel, in both layouts, and fails unless each leaves the
// slot exactly as the Go loop does (old data around the box included).
func checkKernels(t *testing.T, rng *rand.Rand, src rgbImage, sb box, F, f, H, W int, db box) {
	t.Helper()
	old := make([]byte, F*H*W*3)
	for i := range old {
		old[i] = byte(rng.Uint32())
	}
	for _, layout := range []Layout{BFHWC, BCFHW} {
		var want []byte
		for _, k := range kernels() {
			buf := bytes.Clone(old)
			rz := resizer{kernel: k}
			rz.resize(newFrameDst(buf, layout, f, F, H, W), src, sb, db)
			if want == nil {
				want = buf
				continue
			}
			if !bytes.Equal(buf, want) {
				i := 0
				for buf[i] == want[i] {
					i++
				}
				t.Fatalf("%v, %dx%d (WxH) box at (%d,%d) of a %dx%d image (stride %d) -> %dx%d box at (%d,%d) of frame %d/%d %dx%d: %s kernel differs from the Go loop at byte %d: %d, want %d",
					layout, sb.W, sb.H, sb.X, sb.Y, src.W, src.H, src.Stride, db.W, db.H, db.X, db.Y, f, F, W, H, kernelName(k), i, buf[i], want[i])
			}
		}
	}
}

// TestResizeKernelsSmallSizes: every source and destination size from 1×1
// to 9×9, random pixels, equal to the Go loop bit for bit.
func TestResizeKernelsSmallSizes(t *testing.T) {
	if len(kernels()) == 1 {
		t.Skip("SKIPPING: no vectorised resize kernel in this build (no cgo, not amd64, or purego): nothing to compare the Go loop with")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for sh := 1; sh <= 9; sh++ {
		for sw := 1; sw <= 9; sw++ {
			src := randomImage(rng, sh, sw, 3*sw)
			for dh := 1; dh <= 9; dh++ {
				for dw := 1; dw <= 9; dw++ {
					checkKernels(t, rng, src, box{0, 0, sw, sh}, 1, 0, dh, dw, box{0, 0, dw, dh})
				}
			}
		}
	}
}

// TestResizeKernelsRandomSizes: random sizes from 1 to 700 each way,
// upscaling and downscaling, random boxes of random-stride images into
// random boxes of a frame of a multi-frame slot, in both layouts: every
// kernel equals the Go loop bit for bit.
func TestResizeKernelsRandomSizes(t *testing.T) {
	if len(kernels()) == 1 {
		t.Skip("SKIPPING: no vectorised resize kernel in this build (no cgo, not amd64, or purego): nothing to compare the Go loop with")
	}
	n := 400
	if raceEnabled || testing.Short() {
		n = 40 // the Go loop is about 10× slower under the race detector
	}
	rng := rand.New(rand.NewPCG(3, 4))
	side := func() int {
		if rng.IntN(4) == 0 {
			return 1 + rng.IntN(16)
		}
		return 1 + rng.IntN(700)
	}
	for i := range n {
		h, w := side(), side()
		src := randomImage(rng, h, w, 3*w+3*rng.IntN(3))
		sb := box{W: 1 + rng.IntN(w), H: 1 + rng.IntN(h)}
		sb.X, sb.Y = rng.IntN(w-sb.W+1), rng.IntN(h-sb.H+1)
		H, W := side(), side()
		db := box{W: 1 + rng.IntN(W), H: 1 + rng.IntN(H)}
		db.X, db.Y = rng.IntN(W-db.W+1), rng.IntN(H-db.H+1)
		if i%2 == 0 {
			db = box{0, 0, W, H}
		}
		F := 1 + rng.IntN(3)
		t.Run(fmt.Sprintf("%d", i), func(t *testing.T) {
			checkKernels(t, rng, src, sb, F, rng.IntN(F), H, W, db)
		})
	}
}

// TestResizeKernelsModes: the three resize modes on camera sizes into
// the slot sizes configs use, through resizer.write (pad borders, crop
// boxes, copies), every kernel against the Go loop.
func TestResizeKernelsModes(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, in := range []Size{{640, 480}, {640, 360}, {320, 256}, {256, 320}, {128, 128}, {333, 97}} {
		src := randomImage(rng, in.H, in.W, 3*in.W)
		for _, out := range []Size{{256, 256}, {224, 224}, {128, 96}, {700, 500}} {
			for _, mode := range []ResizeMode{Squash, Crop, Pad} {
				for _, layout := range []Layout{BFHWC, BCFHW} {
					var want []byte
					for _, k := range kernels() {
						buf := bytes.Repeat([]byte{0xEE}, 2*out.W*out.H*3)
						rz := resizer{kernel: k}
						rz.write(newFrameDst(buf, layout, 1, 2, out.H, out.W), mode, src)
						if want == nil {
							want = buf
						} else if !bytes.Equal(buf, want) {
							t.Errorf("%v %v %dx%d -> %dx%d: %s kernel differs from the Go loop", mode, layout, in.W, in.H, out.W, out.H, kernelName(k))
						}
					}
				}
			}
		}
	}
}
