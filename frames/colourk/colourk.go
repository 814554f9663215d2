// Package colourk is the vectorised kernel of frames' per-pixel colour
// ops (brightness, contrast, saturation, hue), written in C and built
// twice, for SSE2 (the x86-64 baseline) and for AVX2, chosen at run time
// by what the CPU has, and a third time over sixteen lanes for the AVX512
// level (AVX-512 F, BW and VBMI), where a pass's leading blends also
// become one table of what they make of each byte, looked up with byte
// permutes as the pixels are unpacked. Package frames decides what runs
// (the stages of a pass, the contrast's mean) and keeps the portable Go
// code that this kernel must equal value for value; this package only
// runs the arithmetic, eight or sixteen pixels at a time.
//
// A pass takes every pixel of a frame through a list of stages in order
// and may write the result back and add up its grayscale:
//
//	blend(f, b)      x = clamp(f·x + b, 0, 255), truncated: torchvision's
//	                 blend with a constant (brightness: b = 0; contrast:
//	                 b = (1−f)·mean), each channel on its own
//	saturation(f, g) x = clamp(f·x + g·gray, 0, 255), truncated, with
//	                 gray = int(0.2989·r + 0.587·g + 0.114·b)
//	hue(shift)       frames' fixed-point hue shift (frames/colour.go)
//
// in float32 with the operations frames' tables hold, in their order,
// each rounded on its own: the C is compiled with floating-point
// contraction off and for no FMA target, as package bilinear's. Where
// frames' hue reads a table (2³²/(max−min), a channel over 255, the
// smallest channel after the shift) the kernel computes the entry with
// float32 operations whose results equal the table's for every index
// (tested for all of them), except 2³²/(max−min) at the AVX2 level,
// which gathers it from the same table built in C (cheaper there than
// its division and the float32 steps around it), and the smallest
// channel at the AVX512 level, which is the smallest channel before the
// shift less a bit gathered from a 64 Kbit table that those float32
// steps fill when the program loads (cheaper than their division over
// sixteen lanes); where hue is a pass's last stage, that level also
// leaves each pixel packed in its lane, its bytes picked by one byte
// permute, for the pass to store without joining three channels, and
// takes 32 pixels at a time, in 16-bit lanes up to the middle channel.
// For most shifts (all but
// those within 512/2²⁴ of a whole multiple for some max−min, and whole
// sixths) the hue needs no 2³²/(max−min) at all: the sector and the
// middle channel follow from max−min times the shift's fraction, exactly
// (kernel_amd64.go's hue_split_ok says why; tested at the rule's edges
// over all colours), and what the sector decides (whether it is odd,
// where each channel comes from) is read from a row of a table made when
// the program loads, one row per whole sixths of the shift. The lanes of one
// vector are independent pixels: vectorising changes how many pixels are
// computed at once, never how any one of them is.
//
// The kernel exists where cgo does, on amd64, unless the build tag purego
// is set; elsewhere Levels is empty and frames uses its Go code. frames
// runs the AVX2 level or above only: the SSE2 build equals it but is slower than
// the Go code (GCC lowers the eight-lane comparisons to one scalar
// compare per lane for SSE2, which has no per-lane shifts or shuffles
// either), so it serves the tests and benchmarks.
package colourk

import (
	"fmt"

	"github.com/oxefs/oxefs/frames/simd"
)

// Op is a stage's operation.
type Op uint32

const (
	// Blend: x = clamp(F·x + G, 0, 255), truncated, per channel.
	Blend Op = iota + 1
	// Saturation: x = clamp(F·x + G·gray(pixel), 0, 255), truncated.
	Saturation
	// Hue: frames' fixed-point hue shift by Shift (24 fraction bits, in
	// [6, 12) sixths of a turn).
	Hue
)

// Stage is one step of a pass. Its layout is the C kernel's.
type Stage struct {
	Op    Op
	F, G  float32
	Shift int32
}

// MaxStages bounds a pass's stages.
const MaxStages = 64

// Level is an instruction set the kernel is compiled for; package simd
// says which this build and machine run.
type Level = simd.Level

// The levels the kernel is built for (see simd).
const (
	SSE2   = simd.SSE2
	AVX2   = simd.AVX2
	AVX512 = simd.AVX512
)

// Levels returns the levels this build and machine run, slowest first;
// none without cgo, off amd64 or with the purego build tag.
func Levels() []Level { return simd.Levels() }

// Best returns the fastest level this build and machine run, or 0 when
// the kernel is not built.
func Best() Level { return simd.Best() }

// Frame is the N pixels a pass runs over: packed RGB in R (G and B nil),
// or three planes, N bytes each.
type Frame struct {
	R, G, B []byte
	N       int
}

// check panics unless every byte the kernel reads or writes is inside
// f's slices and the stages are valid: the C code trusts them.
func check(f *Frame, st []Stage) {
	bad := f.N < 0 || len(st) > MaxStages
	if f.G == nil && f.B == nil {
		bad = bad || len(f.R) < 3*f.N
	} else {
		bad = bad || len(f.R) < f.N || len(f.G) < f.N || len(f.B) < f.N
	}
	for _, s := range st {
		bad = bad || s.Op < Blend || s.Op > Hue || (s.Op == Hue && (s.Shift < 6<<24 || s.Shift >= 12<<24))
	}
	if bad {
		panic(fmt.Sprintf("colourk: pass out of bounds: %d pixels, %d/%d/%d bytes, %d stages", f.N, len(f.R), len(f.G), len(f.B), len(st)))
	}
}

// Pass runs the stages over every pixel of f at level l (one of Levels).
// With write, the result replaces the pixels; with mean, Pass returns the
// sum of the result's grayscale, int(0.2989·r + 0.587·g + 0.114·b) per
// pixel, else 0. It panics if l is not available or f is out of bounds.
func Pass(l Level, f *Frame, st []Stage, write, mean bool) int64 {
	check(f, st)
	if f.N == 0 {
		return 0
	}
	return pass(l, f, st, write, mean)
}
