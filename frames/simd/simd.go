// Package simd names the instruction sets that frames' C kernels
// (frames/bilinear, frames/colourk) are compiled for, and says which of
// them this build and machine run, so that every kernel package picks
// its level by one rule.
//
// The kernels exist where cgo does, on amd64, unless the build tag
// purego is set; elsewhere Levels is empty and frames runs its Go code.
package simd

import "fmt"

// Level is an instruction set a kernel is compiled for.
type Level uint8

const (
	// SSE2 is the x86-64 baseline: 128-bit vectors.
	SSE2 Level = iota + 1
	// AVX2: 256-bit vectors, chosen at run time where the CPU has it.
	AVX2
	// AVX512: AVX2 and AVX-512's F, BW and VBMI (64-byte vectors, byte
	// permutes), chosen at run time where the CPU has them. A kernel
	// without code of its own for it runs its AVX2 code there.
	AVX512
)

func (l Level) String() string {
	switch l {
	case SSE2:
		return "sse2"
	case AVX2:
		return "avx2"
	case AVX512:
		return "avx512"
	}
	return fmt.Sprintf("Level(%d)", uint8(l))
}

// Best returns the fastest level this build and machine run, or 0 when
// the kernels are not built (see Levels).
func Best() Level {
	ls := Levels()
	if len(ls) == 0 {
		return 0
	}
	return ls[len(ls)-1]
}

// Runs reports whether this build and machine run level l.
func Runs(l Level) bool {
	for _, have := range Levels() {
		if have == l {
			return true
		}
	}
	return false
}
