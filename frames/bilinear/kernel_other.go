//go:build !cgo || !amd64 || purego

package bilinear

func resize(l Level, _ *Scratch, _ *Frame) {
	panic("bilinear: kernel " + l.String() + " is not built (no cgo, not amd64, or purego)")
}
