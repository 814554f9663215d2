//go:build !cgo || !amd64 || purego

package colourk

// Levels returns the levels this build and machine run: none here (no
// cgo, not amd64, or the purego build tag).
func Levels() []Level { return nil }

func pass(l Level, _ *Frame, _ []Stage, _, _ bool) int64 {
	panic("colourk: kernel " + l.String() + " is not built (no cgo, not amd64, or purego)")
}
