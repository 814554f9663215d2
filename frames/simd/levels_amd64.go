//go:build cgo && amd64 && !purego

package simd

import "golang.org/x/sys/cpu"

// Levels returns the levels this machine runs, slowest first: SSE2, AVX2
// where the CPU has it, and AVX512 where it has AVX-512 F, BW and VBMI
// too.
func Levels() []Level { return levels[:len(levels):len(levels)] }

var levels = func() []Level {
	x := cpu.X86
	switch {
	case x.HasAVX2 && x.HasAVX512F && x.HasAVX512BW && x.HasAVX512VBMI:
		return []Level{SSE2, AVX2, AVX512}
	case x.HasAVX2:
		return []Level{SSE2, AVX2}
	}
	return []Level{SSE2}
}()
