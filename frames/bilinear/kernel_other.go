//go:build !cgo || !amd64 || purego

package bilinear

// Levels returns the levels this build and machine run: none here (no
// cgo, not amd64, or the purego build tag).
func Levels() []Level { return nil }

func resize(l Level, _ *Scratch, _ *Frame) {
	panic("bilinear: kernel " + l.String() + " is not built (no cgo, not amd64, or purego)")
}
