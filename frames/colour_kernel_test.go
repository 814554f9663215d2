package frames

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/oxefs/oxefs/frames/colourk"
)

// colourKernels returns every colour implementation this build and
// machine run: the Go code, then each level of package colourk's kernel.
func colourKernels() []colourk.Level { return withGo(colourk.Levels()) }

func skipWithoutColourKernel(t *testing.T) {
	t.Helper()
	if len(colourKernels()) == 1 {
		t.Skip("SKIPPING: no vectorised colour kernel in this build (no cgo, not amd64, or purego): nothing to compare the Go code with")
	}
}

// randomChain is up to six colour ops in a random order, each with a
// random factor over its range (hue: a fraction of a turn in ±0.5), an op
// possibly twice.
func randomChain(rng *rand.Rand) []Colour {
	ops := []ColourOp{Brightness, Contrast, Saturation, Hue, Sharpness}
	chain := make([]Colour, 1+rng.IntN(6))
	for i := range chain {
		op := ops[rng.IntN(len(ops))]
		f := float32(rng.Float64() * 2.5)
		if op == Hue {
			f = float32(rng.Float64() - 0.5)
		}
		chain[i] = Colour{op, f}
	}
	return chain
}

// TestColourKernelMatchesGo: every colour chain over every kernel level
// leaves the slot exactly as the Go code does, every value of it (the
// frames around the one written included), in both layouts, on frames of
// noise, shading and flat blocks and on sizes whose last pixels do not
// fill a vector.
func TestColourKernelMatchesGo(t *testing.T) {
	skipWithoutColourKernel(t)
	rng := rand.New(rand.NewPCG(37, 1))
	type tc struct {
		name  string
		chain []Colour
	}
	cases := []tc{
		{"octo", octoColour},
		{"octo, strong", []Colour{{Brightness, 0.81}, {Contrast, 1.33}, {Saturation, 0.52}, {Hue, 0.4999}}},
		{"openpi", []Colour{{Brightness, 1.3}, {Contrast, 0.6}, {Saturation, 1.5}}},
		{"lerobot order", []Colour{{Hue, -0.05}, {Sharpness, 1.4}, {Saturation, 1.5}, {Contrast, 0.8}, {Brightness, 1.2}}},
		{"hue then saturation", []Colour{{Hue, 0.21}, {Saturation, 1.9}, {Contrast, 1.1}}},
		{"tables only", []Colour{{Brightness, 1.7}, {Contrast, 0.4}, {Brightness, 0.9}}},
		{"contrast after saturation", []Colour{{Saturation, 0.3}, {Contrast, 2.2}, {Hue, -0.5}}},
		{"factor 0", []Colour{{Brightness, 0}, {Saturation, 0}, {Contrast, 0}}},
		{"huge factors", []Colour{{Brightness, 3e9}, {Saturation, 1e30}, {Contrast, 7}}},
	}
	for _, f := range []float32{-0.5, -1.0 / 3, -0.1666667, -0.01, 0, 1e-7, 0.05, 1.0 / 6, 0.25, 0.5} {
		cases = append(cases, tc{fmt.Sprintf("hue %v", f), []Colour{{Hue, f}}})
	}
	for _, f := range []float32{0, 0.5, 0.9, 1, 1.1, 2.3} {
		for _, op := range []ColourOp{Brightness, Contrast, Saturation} {
			cases = append(cases, tc{fmt.Sprintf("%v %v", op, f), []Colour{{op, f}}})
		}
	}
	for i := range 40 {
		cases = append(cases, tc{fmt.Sprintf("random %d", i), randomChain(rng)})
	}
	const h, w = 47, 61
	frames := colourFrames(rng)
	// Odd sizes: tails of 1 to 10 pixels after the last whole vector.
	for _, n := range []int{1, 2, 5, 7, 8, 9, 10, 11, 13, 17, 19} {
		px := make([]byte, 3*n*3)
		for i := range px {
			px[i] = byte(rng.Uint32())
		}
		frames[fmt.Sprintf("3x%d noise", n)] = px
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for name, src := range frames {
				fh, fw := h, w
				if len(src) != h*w*3 {
					fh, fw = 3, len(src)/9
				}
				for _, layout := range []Layout{BFHWC, BCFHW} {
					// frame 1 of 3: the planes and frames around it hold
					// other bytes, which no kernel may touch.
					const F, f = 3, 1
					old := make([]byte, F*fh*fw*3)
					for i := range old {
						old[i] = byte(rng.Uint32())
					}
					put := func(buf []byte) frameDst {
						d := newFrameDst(buf, layout, f, F, fh, fw)
						for i := range fh * fw {
							for ch := range 3 {
								buf[d.index(i, ch)] = src[3*i+ch]
							}
						}
						return d
					}
					var want []byte
					for _, k := range colourKernels() {
						buf := bytes.Clone(old)
						d := put(buf)
						cl := colourer{kernel: k}
						cl.apply(d, c.chain)
						if want == nil {
							want = buf
							continue
						}
						if !bytes.Equal(buf, want) {
							i := 0
							for buf[i] == want[i] {
								i++
							}
							t.Fatalf("%s, %v, %dx%d: %s kernel differs from the Go code at byte %d: %d, want %d",
								name, layout, fw, fh, kernelName(k), i, buf[i], want[i])
						}
					}
				}
			}
		})
	}
}

// index is where channel ch of pixel i of the frame lies in its buffer.
func (d frameDst) index(i, ch int) int {
	if d.layout == BFHWC {
		return d.base + 3*i + ch
	}
	return d.base + ch*d.planeStep + i
}

// TestColourKernelAllColours: hue at shifts across its range and
// saturation at factors across its range over all 2²⁴ colours, kernel
// against the Go code: every (largest, smallest) channel pair and every
// (difference, range) of hue's reciprocal table, every gray of
// saturation, every value equal. The means the kernel adds up equal the
// Go code's too.
func TestColourKernelAllColours(t *testing.T) {
	skipWithoutColourKernel(t)
	const side = 4096 // 4096² = 2²⁴ pixels
	all := make([]byte, 3*side*side)
	for i := range side * side {
		all[3*i], all[3*i+1], all[3*i+2] = byte(i), byte(i>>8), byte(i>>16)
	}
	cases := []struct {
		name  string
		chain []Colour
	}{
		{"hue -0.5", []Colour{{Hue, -0.5}}},
		{"hue -0.2371", []Colour{{Hue, -0.2371}}},
		{"hue -1/6", []Colour{{Hue, -1.0 / 6}}},
		{"hue -0.03", []Colour{{Hue, -0.03}}},
		{"hue 0", []Colour{{Hue, 0}}},
		{"hue 0.0123", []Colour{{Hue, 0.0123}}},
		{"hue 1/3", []Colour{{Hue, 1.0 / 3}}},
		{"hue 0.5", []Colour{{Hue, 0.5}}},
		{"saturation 0.9", []Colour{{Saturation, 0.9}}},
		{"saturation 1.37", []Colour{{Saturation, 1.37}}},
		{"brightness 1.06", []Colour{{Brightness, 1.06}}},
		{"octo", octoColour},
	}
	if raceEnabled || testing.Short() {
		// the Go code is about 10× slower under the race detector: Octo's
		// chain (blends, saturation, a hue shift) alone
		cases = cases[len(cases)-1:]
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var want []byte
			var wantMean float32
			for _, k := range colourKernels() {
				buf := bytes.Clone(all)
				d := newFrameDst(buf, BFHWC, 0, 1, side, side)
				cl := colourer{kernel: k}
				cl.apply(d, c.chain)
				mean := cl.meanGray(d, nil, nil)
				if want == nil {
					want, wantMean = buf, mean
					continue
				}
				if mean != wantMean {
					t.Errorf("%s kernel: mean gray %v, want %v", kernelName(k), mean, wantMean)
				}
				if !bytes.Equal(buf, want) {
					n := 0
					first := -1
					for i := range buf {
						if buf[i] != want[i] {
							n++
							if first < 0 {
								first = i
							}
						}
					}
					p := first / 3
					t.Fatalf("%s kernel: %d values differ from the Go code; first: colour (%d,%d,%d) channel %d: %d, want %d",
						kernelName(k), n, all[3*p], all[3*p+1], all[3*p+2], first%3, buf[first], want[first])
				}
			}
		})
	}
}

// TestColourKernelHueSplit: the kernel's hue where it splits the shift
// (colourk's hue_split_ok: every max − min times the shift's fraction
// 512 or more from a whole 2²⁴) at the edges of that rule, and where it
// must not (closer), for the largest range (255, the widest error of
// frames' reciprocal) and the smallest, over all 2²⁴ colours: every
// value equal to hueShift's.
func TestColourKernelHueSplit(t *testing.T) {
	skipWithoutColourKernel(t)
	if raceEnabled || testing.Short() {
		t.Skip("SKIPPED under -race or -short: 12 passes of hueShift over all 2²⁴ colours take minutes under the race detector; TestColourKernelAllColours covers the kernel's hue there")
	}
	const n = 1 << 24
	all := make([]byte, 3*n)
	for i := range n {
		all[3*i], all[3*i+1], all[3*i+2] = byte(i), byte(i>>8), byte(i>>16)
	}
	// inverse is cr⁻¹ modulo 2²⁴ for an odd cr (Newton's iteration).
	inverse := func(cr uint32) uint32 {
		x := cr
		for range 5 {
			x *= 2 - cr*x
		}
		return x & hueMask
	}
	want := make([]byte, len(all))
	got := make([]byte, len(all))
	sixths := int32(6)
	for _, cr := range []uint32{255, 1} {
		rems := []uint32{1, 256, 511, 512, hueOne - 512, hueOne - 256, hueOne - 1}
		if cr == 1 {
			rems = []uint32{512, hueOne - 512}
		}
		for _, rem := range rems {
			sixths = 6 + (sixths+1)%6
			shift := sixths<<hueBits | int32(rem*inverse(cr)&hueMask)
			t.Run(fmt.Sprintf("range %d, remainder %d", cr, rem), func(t *testing.T) {
				for i := 0; i < len(all); i += 3 {
					want[i], want[i+1], want[i+2] = hueShift(all[i], all[i+1], all[i+2], shift)
				}
				for _, k := range colourk.Levels() {
					copy(got, all)
					colourk.Pass(k, &colourk.Frame{R: got, N: n}, []colourk.Stage{{Op: colourk.Hue, Shift: shift}}, true, false)
					if i := firstDiff(got, want); i >= 0 {
						t.Fatalf("%v kernel, shift %#x: colour (%d,%d,%d) channel %d: %d, want %d",
							k, shift, all[i/3*3], all[i/3*3+1], all[i/3*3+2], i%3, got[i], want[i])
					}
				}
			})
		}
	}
}

// firstDiff is the first index where a and b differ, or −1.
func firstDiff(a, b []byte) int {
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}

// TestColourKernelMeans: the grayscale mean a pass adds up, with and
// without stages, equals the Go code's, on every frame and layout.
func TestColourKernelMeans(t *testing.T) {
	skipWithoutColourKernel(t)
	rng := rand.New(rand.NewPCG(5, 37))
	const h, w = 47, 61
	for name, src := range colourFrames(rng) {
		for _, layout := range []Layout{BFHWC, BCFHW} {
			t.Run(fmt.Sprintf("%s %v", name, layout), func(t *testing.T) {
				for i := range 20 {
					bf, sf := float32(rng.Float64()*2), float32(rng.Float64()*2)
					var wantTable, wantPass float32
					for _, k := range colourKernels() {
						buf := make([]byte, len(src))
						d := newFrameDst(buf, layout, 0, 1, h, w)
						for p := range h * w {
							for ch := range 3 {
								buf[d.index(p, ch)] = src[3*p+ch]
							}
						}
						cl := colourer{kernel: k}
						st := addTable(nil, blendTable(bf, 0))
						kst := []colourk.Stage{blendStage(bf, 0)}
						table := cl.meanGray(d, st, kst)
						st = append(st, colourStage{op: Saturation})
						one := float32(1 - float64(sf))
						for x := range 256 {
							st[1].fx[x], st[1].fg[x] = float32(sf*u8f[x]), float32(one*u8f[x])
						}
						kst = append(kst, colourk.Stage{Op: colourk.Saturation, F: sf, G: one})
						pass := cl.pass(d, st, kst, true)
						if k == goColour {
							wantTable, wantPass = table, pass
							continue
						}
						if table != wantTable || pass != wantPass {
							t.Fatalf("draw %d, %s kernel: means %v (table) and %v (pass), want %v and %v",
								i, kernelName(k), table, pass, wantTable, wantPass)
						}
					}
				}
			})
		}
	}
}
