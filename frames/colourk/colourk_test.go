package colourk

import (
	"strings"
	"testing"
)

// TestPassChecksBounds: a frame whose slices are shorter than its pixel
// count, or a stage the kernel does not know, is refused before the C
// code runs (which trusts them).
func TestPassChecksBounds(t *testing.T) {
	l := Best()
	if l == 0 {
		t.Skip("SKIPPING: no kernel in this build (no cgo, not amd64, or purego)")
	}
	hue := []Stage{{Op: Hue, Shift: 7 << 24}}
	good := func() (Frame, []Stage) {
		return Frame{R: make([]byte, 3*9), N: 9}, append([]Stage(nil), hue...)
	}
	f, st := good()
	Pass(l, &f, st, true, true) // in bounds: no panic
	cases := map[string]func(*Frame, *[]Stage){
		"packed too short":    func(f *Frame, _ *[]Stage) { f.R = f.R[:26] },
		"plane too short":     func(f *Frame, _ *[]Stage) { f.R, f.G, f.B = make([]byte, 9), make([]byte, 8), make([]byte, 9) },
		"negative count":      func(f *Frame, _ *[]Stage) { f.N = -1 },
		"unknown op":          func(_ *Frame, st *[]Stage) { (*st)[0].Op = 9 },
		"hue shift too small": func(_ *Frame, st *[]Stage) { (*st)[0].Shift = 6<<24 - 1 },
		"hue shift too large": func(_ *Frame, st *[]Stage) { (*st)[0].Shift = 12 << 24 },
		"too many stages":     func(_ *Frame, st *[]Stage) { *st = make([]Stage, MaxStages+1) },
	}
	for name, spoil := range cases {
		t.Run(name, func(t *testing.T) {
			f, st := good()
			spoil(&f, &st)
			defer func() {
				r := recover()
				if r == nil || !strings.Contains(r.(string), "out of bounds") {
					t.Fatalf("Pass did not refuse the frame (recovered %v)", r)
				}
			}()
			Pass(l, &f, st, true, false)
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
