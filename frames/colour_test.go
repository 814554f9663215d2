package frames

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// colourFrames are varied packed frames: noise (every value next to every
// other), smooth shading and flat blocks of grays, primaries and near
// grays (hue's equal-channel and extreme cases).
func colourFrames(rng *rand.Rand) map[string][]byte {
	const h, w = 47, 61
	noise, smooth, blocks := make([]byte, h*w*3), make([]byte, h*w*3), make([]byte, h*w*3)
	for i := range noise {
		noise[i] = byte(rng.Uint32())
	}
	palette := [][3]byte{{0, 0, 0}, {255, 255, 255}, {128, 128, 128}, {255, 0, 0}, {0, 255, 0}, {0, 0, 255}, {255, 255, 0}, {3, 2, 1}, {254, 255, 253}, {200, 200, 10}, {10, 200, 200}}
	for y := range h {
		for x := range w {
			for c := range 3 {
				v := 30 + 60*float64(x+y)/float64(w+h)*2 + 40*math.Sin(float64(x)/5+float64(c))*math.Cos(float64(y)/7) + 25*float64(c)
				smooth[(y*w+x)*3+c] = uint8(min(max(v, 0), 255))
			}
			copy(blocks[(y*w+x)*3:], palette[((y/6)*13+(x/6)*7)%len(palette)][:])
		}
	}
	return map[string][]byte{"noise": noise, "smooth": smooth, "blocks": blocks}
}

// TestColourMatchesFloat32: every op over its range, alone and in
// chains, against torchvision's float32 arithmetic recomputed operation
// for operation (colour_ref_test.go): at least 99.9% of the values within
// one level, as augment's TestTorchvisionParity requires of torchvision
// itself. Brightness, contrast, saturation and sharpness are exact.
func TestColourMatchesFloat32(t *testing.T) {
	const h, w = 47, 61
	rng := rand.New(rand.NewPCG(7, 11))
	frames := colourFrames(rng)
	type tc struct {
		name  string
		chain []Colour
		exact bool
	}
	var cases []tc
	for _, f := range []float32{0, 0.3, 0.77, 1, 1.25, 2, 3.5} {
		for _, op := range []ColourOp{Brightness, Contrast, Saturation, Sharpness} {
			cases = append(cases, tc{fmt.Sprintf("%v %v", op, f), []Colour{{op, f}}, true})
		}
	}
	for _, f := range []float32{-0.5, -0.37, -0.1666667, -0.03, 0, 0.001, 0.1, 1.0 / 3, 0.49, 0.5} {
		cases = append(cases, tc{fmt.Sprintf("hue %v", f), []Colour{{Hue, f}}, false})
	}
	cases = append(cases,
		tc{"octo", octoColour, false},
		tc{"all", []Colour{{Hue, 0.0731}, {Sharpness, 1.213}, {Saturation, 0.817}, {Contrast, 1.137}, {Brightness, 0.913}}, false},
		tc{"tables", []Colour{{Brightness, 1.3}, {Contrast, 0.6}, {Saturation, 1.7}, {Contrast, 1.4}, {Sharpness, 0.2}}, true})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var fast colourer
			var ref refColourer
			for name, src := range frames {
				got := append([]byte(nil), src...)
				want := append([]byte(nil), src...)
				fast.apply(newFrameDst(got, BFHWC, 0, 1, h, w), c.chain)
				ref.apply(newFrameDst(want, BFHWC, 0, 1, h, w), c.chain)
				equal, within, worst := compareLevels(got, want)
				if c.exact && equal < len(got) {
					t.Errorf("%s: %d of %d values differ from float32's (max %d)", name, len(got)-equal, len(got), worst)
				}
				if float64(within) < 0.999*float64(len(got)) || worst > 2 {
					t.Errorf("%s: %d of %d values within one level of float32's, max diff %d", name, within, len(got), worst)
				}
			}
		})
	}
}

// compareLevels counts the values of got equal to want's and within one
// level, and returns the largest difference.
func compareLevels(got, want []byte) (equal, within, worst int) {
	for i, v := range got {
		d := int(v) - int(want[i])
		d = max(d, -d)
		if d == 0 {
			equal++
		}
		if d <= 1 {
			within++
		}
		worst = max(worst, d)
	}
	return equal, within, worst
}

// TestHueAllColours: the fixed-point hue shift against float32's for a
// spread of shifts over a sample of a million colours, every gray and
// every colour with a zero or full channel: at least 99.9% within one
// level, never more than one level off, the largest channel always exact.
func TestHueAllColours(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	var cols [][3]uint8
	for range 1 << 20 {
		v := rng.Uint32()
		cols = append(cols, [3]uint8{uint8(v), uint8(v >> 8), uint8(v >> 16)})
	}
	for a := range 256 {
		for b := range 256 {
			cols = append(cols, [3]uint8{uint8(a), uint8(a), uint8(a)}, [3]uint8{0, uint8(a), uint8(b)}, [3]uint8{uint8(a), 255, uint8(b)})
		}
	}
	for _, f := range []float32{-0.5, -0.25, -1.0 / 6, -0.01, 0, 1e-6, 0.05, 1.0 / 3, 0.4999, 0.5} {
		t.Run(fmt.Sprint(f), func(t *testing.T) {
			shift := hueShiftFixed(f)
			var equal, within, worst, maxOff int
			for _, c := range cols {
				r, g, b := hueShift(c[0], c[1], c[2], shift)
				wr, wg, wb := refHueShift(c[0], c[1], c[2], f)
				e, w, m := compareLevels([]byte{r, g, b}, []byte{wr, wg, wb})
				equal, within, worst = equal+e, within+w, max(worst, m)
				if max(r, g, b) != max(wr, wg, wb) {
					maxOff++
				}
			}
			n := 3 * len(cols)
			t.Logf("%d values: %.5f equal, %.5f within 1, max diff %d", n, float64(equal)/float64(n), float64(within)/float64(n), worst)
			if float64(within) < 0.999*float64(n) || worst > 1 {
				t.Errorf("%d of %d values within one level, max diff %d", within, n, worst)
			}
			if maxOff > 0 {
				t.Errorf("%d colours' largest channel differs", maxOff)
			}
		})
	}
}
