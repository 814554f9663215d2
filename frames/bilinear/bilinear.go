// Package bilinear is the vectorised kernel of frames' TensorFlow-exact
// bilinear resize: ResizeBilinear with half_pixel_centers=True in float32,
// then tf.cast to uint8, written in C with SSE2 and AVX2 intrinsics and
// chosen at run time by what the CPU has. Package frames computes the taps
// (which source pixels and weight each output reads) and keeps the
// portable Go loop that this kernel must equal bit for bit; this package
// only runs the arithmetic.
//
// Every output value is computed with the operations TensorFlow uses, in
// its order, each rounded to float32 on its own:
//
//	top    = tl + (tr − tl)·xlerp
//	bottom = bl + (br − bl)·xlerp
//	out    = uint8(int32(top + (bottom − top)·ylerp))
//
// The C is compiled with floating-point contraction off and for no FMA target, so no
// multiply and add are ever fused into one rounding (TensorFlow's CPU
// kernels round them separately). The lanes of one vector are independent
// outputs: vectorising changes how many values are computed at once, never
// how any one of them is.
//
// The kernel exists where cgo does, on amd64, unless the build tag purego
// is set; elsewhere Levels is empty and frames uses its Go loop.
package bilinear

import (
	"fmt"

	"github.com/oxefs/oxefs/frames/simd"
)

// Tap is one output coordinate's source coordinates and weight, as
// TensorFlow's CachedInterpolation: for columns, Lo and Hi are byte
// offsets in a packed RGB row (3 × the pixel); for rows, row numbers. Lerp
// is the weight of Hi.
type Tap struct {
	Lo, Hi uint32
	Lerp   float32
}

// Level is an instruction set the kernel is compiled for; package simd
// says which this build and machine run.
type Level = simd.Level

// The levels the kernel is built for (see simd).
const (
	SSE2   = simd.SSE2
	AVX2   = simd.AVX2
	AVX512 = simd.AVX512 // the AVX2 code: the kernel has none of its own for it
)

// Levels returns the levels this build and machine run, slowest first;
// none without cgo, off amd64 or with the purego build tag.
func Levels() []Level { return simd.Levels() }

// Best returns the fastest level this build and machine run, or 0 when
// the kernel is not built.
func Best() Level { return simd.Best() }

// Scratch is a kernel's working memory, reused from frame to frame: two
// rows of horizontally interpolated floats, one source row as floats and
// one output row of bytes (for planar destinations). It is not safe for
// concurrent use.
type Scratch struct {
	rows []float32
	srcf []float32
	tmp  []byte
}

// Footprint is the bytes the scratch holds.
func (s *Scratch) Footprint() int { return 4*(cap(s.rows)+cap(s.srcf)) + cap(s.tmp) }

// grow sizes the scratch for sw-pixel source rows and dw-pixel output
// rows.
func (s *Scratch) grow(sw, dw int) {
	if n := 2 * (3*dw + rowPad); cap(s.rows) < n {
		s.rows = make([]float32, n)
	}
	if n := 3*sw + rowPad; cap(s.srcf) < n {
		s.srcf = make([]float32, n)
	}
	if n := 3 * dw; cap(s.tmp) < n {
		s.tmp = make([]byte, n)
	}
	s.rows, s.srcf, s.tmp = s.rows[:cap(s.rows)], s.srcf[:cap(s.srcf)], s.tmp[:cap(s.tmp)]
	clear(s.srcf[3*sw : 3*sw+rowPad]) // read, never used, by the last pixel's 4-lane load
}

// rowPad is the floats past each row that a pixel's 4-lane load or store
// may touch.
const rowPad = 4

// Frame describes one resize: a box of the source and a box of the
// destination.
type Frame struct {
	// Src holds the source box: row i starts at Src[i·SrcStride] and
	// holds SW packed RGB pixels.
	Src       []byte
	SrcStride int
	SW, SH    int
	// XS has one tap per output column (Lo, Hi byte offsets below 3·SW),
	// YS one per output row (Lo, Hi below SH).
	XS, YS []Tap
	// Dst holds the destination box: output row y starts at
	// Dst[y·DstStride]. PlaneStep 0: packed RGB (3·len(XS) bytes a row);
	// else three planes PlaneStep apart, len(XS) bytes a row in each.
	Dst       []byte
	DstStride int
	PlaneStep int
}

// check panics unless every byte the kernel reads or writes is inside
// f's slices: the C code trusts them.
func (f *Frame) check() {
	dw, dh := len(f.XS), len(f.YS)
	bad := f.SW < 1 || f.SH < 1 || dw < 1 || dh < 1 || f.SrcStride < 3*f.SW ||
		len(f.Src) < (f.SH-1)*f.SrcStride+3*f.SW || f.PlaneStep < 0
	if !bad {
		row := 3 * dw
		if f.PlaneStep > 0 {
			row = 2*f.PlaneStep + dw
		}
		bad = f.DstStride < 1 || len(f.Dst) < (dh-1)*f.DstStride+row ||
			(f.PlaneStep == 0 && f.DstStride < 3*dw) || (f.PlaneStep > 0 && f.DstStride < dw)
	}
	for _, t := range f.XS {
		bad = bad || t.Lo > uint32(3*f.SW-3) || t.Hi > uint32(3*f.SW-3)
	}
	for _, t := range f.YS {
		bad = bad || t.Lo >= uint32(f.SH) || t.Hi >= uint32(f.SH)
	}
	if bad {
		panic(fmt.Sprintf("bilinear: frame out of bounds: src %d bytes, stride %d, %dx%d; %dx%d out, dst %d bytes, stride %d, plane step %d",
			len(f.Src), f.SrcStride, f.SW, f.SH, dw, dh, len(f.Dst), f.DstStride, f.PlaneStep))
	}
}

// Resize runs the kernel at level l (one of Levels) over f, using s. It
// panics if l is not available or f's taps or slices are out of bounds.
func Resize(l Level, s *Scratch, f *Frame) {
	f.check()
	s.grow(f.SW, len(f.XS))
	resize(l, s, f)
}
