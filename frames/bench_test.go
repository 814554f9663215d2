package frames

import (
	"bytes"
	"fmt"
	"image"
	"image/jpeg"
	"math"
	"runtime"
	"testing"
	"time"

	"github.com/oxefs/oxefs/frames/turbojpeg"
	"github.com/oxefs/oxefs/internal/missing"
)

// photoJPEG encodes a w×h photo-like image at quality 90 (4:2:0, as
// image/jpeg writes): smooth shading, textures of several frequencies and
// per-pixel noise, so that the entropy-coded data is as dense as a camera
// frame's rather than a flat test card's.
func photoJPEG(tb testing.TB, w, h int) []byte {
	tb.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	seed := uint32(2463534242)
	noise := func() float64 { // xorshift32, uniform in [-1, 1)
		seed ^= seed << 13
		seed ^= seed >> 17
		seed ^= seed << 5
		return float64(seed)/float64(1<<31) - 1
	}
	for y := range h {
		for x := range w {
			fx, fy := float64(x), float64(y)
			shade := 90 * (fx/float64(w) + fy/float64(h))
			texture := 30*math.Sin(fx/3.1)*math.Cos(fy/4.7) + 18*math.Sin((fx+2*fy)/1.3) + 12*math.Cos(fx*fy/97)
			for c := range 3 {
				v := 40 + shade + texture*float64(c+1)/2 + 14*noise() + 25*float64(c)
				img.Pix[y*img.Stride+4*x+c] = uint8(min(max(v, 0), 255))
			}
			img.Pix[y*img.Stride+4*x+3] = 255
		}
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 90}); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

var benchSizes = []struct{ w, h int }{{256, 256}, {320, 256}, {640, 360}, {640, 480}}

// loop runs op b.N times and reports frames/s by wall clock and, where the
// thread's CPU time can be read, frames per CPU-second ("cpu-frames/s"):
// the cost on one core even when other processes share the machine.
func loop(b *testing.B, op func()) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cpu0 := threadCPU()
	for b.Loop() {
		op()
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "frames/s")
	if cpu := threadCPU() - cpu0; cpu > 0 {
		b.ReportMetric(float64(b.N)/cpu.Seconds(), "cpu-frames/s")
	}
}

// oneFrame returns an op that decodes data through an Images source into a
// one-frame 256×256 BFHWC slot, as the assembler does: decoded at full size
// and resized, or decoded in place when already 256×256.
func oneFrame(b *testing.B, d *Decoder, data []byte) func() {
	return oneFrameMode(b, d, data, Exact, 256)
}

// oneFrameMode is oneFrame with a decode mode and a side for the square
// slot.
func oneFrameMode(b *testing.B, d *Decoder, data []byte, mode DecodeMode, side int) func() {
	var src Source = &Images{Key: "bench", Steps: 1, Encoded: steps{data}}
	slot := Slot{Buf: make([]byte, side*side*3), Frames: 1, H: side, W: side, Decode: mode}
	idx := []int{0}
	ctx := b.Context()
	return func() {
		if err := src.Decode(ctx, d, idx, slot); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeResize: one frame per op through the Source and the
// Decoder (see oneFrame).
func BenchmarkDecodeResize(b *testing.B) {
	for _, choice := range []string{JPEGTurbo, JPEGGo} {
		for _, sz := range benchSizes {
			b.Run(fmt.Sprintf("%s/%dx%d", choice, sz.w, sz.h), func(b *testing.B) {
				d := testDecoder(b, choice)
				frame := oneFrame(b, d, photoJPEG(b, sz.w, sz.h))
				frame()
				b.ReportAllocs()
				loop(b, frame)
			})
		}
	}
}

// BenchmarkDecodeModes: one frame per op through the Source with
// libjpeg-turbo, exact against fast, into 256×256 and 128×128 slots.
func BenchmarkDecodeModes(b *testing.B) {
	for _, side := range []int{256, 128} {
		for _, sz := range benchSizes {
			for _, mode := range []DecodeMode{Exact, Fast} {
				b.Run(fmt.Sprintf("%d/%dx%d/%v", side, sz.w, sz.h, mode), func(b *testing.B) {
					d := testDecoder(b, JPEGTurbo)
					frame := oneFrameMode(b, d, photoJPEG(b, sz.w, sz.h), mode, side)
					frame()
					b.ReportAllocs()
					loop(b, frame)
				})
			}
		}
	}
}

// BenchmarkCeiling is the bare baseline: tjDecompress2 into a buffer,
// then the bilinear loop, nothing else.
func BenchmarkCeiling(b *testing.B) {
	for _, sz := range benchSizes {
		b.Run(fmt.Sprintf("%dx%d", sz.w, sz.h), func(b *testing.B) {
			tj, err := turbojpeg.NewDecompressor()
			if err != nil {
				missing.Skip(b, missing.TurboJPEG, err)
			}
			defer tj.Close()
			data := photoJPEG(b, sz.w, sz.h)
			full := make([]byte, sz.w*sz.h*3)
			out := newFrameDst(make([]byte, 256*256*3), BFHWC, 0, 1, 256, 256)
			var rz resizer
			src := rgbImage{Pix: full, W: sz.w, H: sz.h, Stride: 3 * sz.w}
			hdr := turbojpeg.Header{Width: sz.w, Height: sz.h}
			loop(b, func() {
				if err := tj.DecodeRGB(data, hdr, full, 3*sz.w); err != nil {
					b.Fatal(err)
				}
				if sz.w != 256 || sz.h != 256 {
					rz.resize(out, src, box{0, 0, sz.w, sz.h}, box{0, 0, 256, 256})
				}
			})
		})
	}
}

// BenchmarkResize is TensorFlow's bilinear resize alone, camera sizes to
// 256×256, each implementation side by side: the portable Go loop ("go")
// and each level of the vectorised kernel this machine runs. Run it per
// core: go test -run '^$' -bench Resize -cpu 1 ./frames/
func BenchmarkResize(b *testing.B) {
	for _, sz := range benchSizes[1:] {
		for _, layout := range []Layout{BFHWC, BCFHW} {
			for _, k := range kernels() {
				b.Run(fmt.Sprintf("%dx%d/%v/%s", sz.w, sz.h, layout, kernelName(k)), func(b *testing.B) {
					src := testImage(sz.h, sz.w)
					out := newFrameDst(make([]byte, 256*256*3), layout, 0, 1, 256, 256)
					rz := resizer{kernel: k}
					sb, db := box{0, 0, sz.w, sz.h}, box{0, 0, 256, 256}
					rz.resize(out, src, sb, db)
					b.ReportAllocs()
					loop(b, func() { rz.resize(out, src, sb, db) })
				})
			}
		}
	}
}

// BenchmarkImageJPEG is image/jpeg.Decode alone, for the fallback's
// overhead (conversion to RGB with fancy upsampling, resize).
func BenchmarkImageJPEG(b *testing.B) {
	for _, sz := range benchSizes {
		b.Run(fmt.Sprintf("%dx%d", sz.w, sz.h), func(b *testing.B) {
			data := photoJPEG(b, sz.w, sz.h)
			b.ReportAllocs()
			loop(b, func() {
				if _, err := jpeg.Decode(bytes.NewReader(data)); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}

// BenchmarkVsCeiling alternates, frame by frame, the Source path and the
// bare baseline of BenchmarkCeiling, and reports the path's speed as a
// fraction of the baseline's ("of-ceiling", by thread CPU time, or by wall
// time where that cannot be read): pairing the two cancels the drift of a
// machine shared with other work, which separate benchmarks do not.
func BenchmarkVsCeiling(b *testing.B) {
	for _, sz := range benchSizes {
		b.Run(fmt.Sprintf("%dx%d", sz.w, sz.h), func(b *testing.B) {
			d := testDecoder(b, JPEGTurbo)
			tj, err := turbojpeg.NewDecompressor()
			if err != nil {
				b.Fatal(err)
			}
			defer tj.Close()
			data := photoJPEG(b, sz.w, sz.h)
			path := oneFrame(b, d, data)
			full := make([]byte, sz.w*sz.h*3)
			out := newFrameDst(make([]byte, 256*256*3), BFHWC, 0, 1, 256, 256)
			var rz resizer
			src := rgbImage{Pix: full, W: sz.w, H: sz.h, Stride: 3 * sz.w}
			hdr := turbojpeg.Header{Width: sz.w, Height: sz.h}
			bare := func() {
				if err := tj.DecodeRGB(data, hdr, full, 3*sz.w); err != nil {
					b.Fatal(err)
				}
				if sz.w != 256 || sz.h != 256 {
					rz.resize(out, src, box{0, 0, sz.w, sz.h}, box{0, 0, 256, 256})
				}
			}
			path()
			bare()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			clock := threadCPU
			if clock() == 0 {
				clock = func() time.Duration { return time.Duration(time.Now().UnixNano()) }
			}
			var tPath, tBare time.Duration
			for b.Loop() {
				t0 := clock()
				path()
				t1 := clock()
				bare()
				t2 := clock()
				tPath += t1 - t0
				tBare += t2 - t1
			}
			b.ReportMetric(float64(b.N)/tPath.Seconds(), "path-frames/s")
			b.ReportMetric(float64(b.N)/tBare.Seconds(), "bare-frames/s")
			b.ReportMetric(tBare.Seconds()/tPath.Seconds(), "of-ceiling")
		})
	}
}

// BenchmarkScaledDecode is tjDecompress2 alone at eighths/8 of the size,
// the DCT-domain scaling `decode: fast` picks from.
func BenchmarkScaledDecode(b *testing.B) {
	for _, sz := range []struct{ w, h int }{{640, 480}, {640, 360}, {320, 256}} {
		for _, n := range []int{8, 7, 6, 5, 4, 2} {
			b.Run(fmt.Sprintf("%dx%d/%d-8", sz.w, sz.h, n), func(b *testing.B) {
				tj, err := turbojpeg.NewDecompressor()
				if err != nil {
					missing.Skip(b, missing.TurboJPEG, err)
				}
				defer tj.Close()
				data := photoJPEG(b, sz.w, sz.h)
				w, h := turbojpeg.Scaled(sz.w, n), turbojpeg.Scaled(sz.h, n)
				full := make([]byte, w*h*3)
				hdr := turbojpeg.Header{Width: sz.w, Height: sz.h}
				loop(b, func() {
					if err := tj.DecodeScaledRGB(data, hdr, n, full, 3*w); err != nil {
						b.Fatal(err)
					}
				})
			})
		}
	}
}
