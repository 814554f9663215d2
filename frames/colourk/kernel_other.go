//go:build !cgo || !amd64 || purego

package colourk

func pass(l Level, _ *Frame, _ []Stage, _, _ bool) int64 {
	panic("colourk: kernel " + l.String() + " is not built (no cgo, not amd64, or purego)")
}
