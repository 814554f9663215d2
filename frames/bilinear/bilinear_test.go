package bilinear

import (
	"strings"
	"testing"
)

// TestResizeChecksBounds: a frame whose taps or slices reach outside its
// buffers is refused before the C code runs (which trusts them).
func TestResizeChecksBounds(t *testing.T) {
	l := Best()
	if l == 0 {
		t.Skip("SKIPPING: no kernel in this build (no cgo, not amd64, or purego)")
	}
	good := func() Frame {
		return Frame{
			Src: make([]byte, 2*6), SrcStride: 6, SW: 2, SH: 2,
			XS:  []Tap{{0, 3, 0.5}, {3, 3, 0}, {0, 0, 0}},
			YS:  []Tap{{0, 1, 0.25}},
			Dst: make([]byte, 9), DstStride: 9,
		}
	}
	var s Scratch
	f := good()
	Resize(l, &s, &f) // in bounds: no panic
	cases := map[string]func(*Frame){
		"column tap past the row": func(f *Frame) { f.XS[1].Hi = 6 },
		"row tap past the image":  func(f *Frame) { f.YS[0].Hi = 2 },
		"source too short":        func(f *Frame) { f.Src = f.Src[:11] },
		"destination too short":   func(f *Frame) { f.Dst = f.Dst[:8] },
		"planes past the end":     func(f *Frame) { f.PlaneStep, f.DstStride = 4, 3 },
		"stride below a row":      func(f *Frame) { f.SrcStride = 5 },
	}
	for name, spoil := range cases {
		t.Run(name, func(t *testing.T) {
			f := good()
			spoil(&f)
			defer func() {
				r := recover()
				if r == nil || !strings.Contains(r.(string), "out of bounds") {
					t.Fatalf("Resize did not refuse the frame (recovered %v)", r)
				}
			}()
			Resize(l, &s, &f)
		})
	}
}

// TestLevels: SSE2 is always there where the kernel is built, and Best is
// the last level.
func TestLevels(t *testing.T) {
	ls := Levels()
	if len(ls) == 0 {
		t.Skip("SKIPPING: no kernel in this build (no cgo, not amd64, or purego)")
	}
	if ls[0] != SSE2 || Best() != ls[len(ls)-1] {
		t.Fatalf("Levels %v, Best %v", ls, Best())
	}
}
