//go:build !cgo || !amd64 || purego

package simd

// Levels returns the levels this build and machine run: none here (no
// cgo, not amd64, or the purego build tag).
func Levels() []Level { return nil }
