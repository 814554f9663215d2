//go:build cgo && amd64 && !purego

package simd

import "golang.org/x/sys/cpu"

// Levels returns the levels this machine runs, slowest first: SSE2, and
// AVX2 where the CPU has it.
func Levels() []Level {
	if cpu.X86.HasAVX2 {
		return []Level{SSE2, AVX2}
	}
	return []Level{SSE2}
}
