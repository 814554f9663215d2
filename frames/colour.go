package frames

import "github.com/oxefs/oxefs/frames/colourk"

// The colour ops, as torchvision computes them on uint8 tensors
// (torchvision/transforms/functional_tensor.py, _functional_tensor.py in
// newer versions):
//
//	blend(a, b, f)  = uint8(clamp(f·a + (1−f)·b, 0, 255))     truncated
//	gray(r, g, b)   = uint8(0.2989·r + 0.587·g + 0.114·b)        truncated
//	brightness f    = blend(x, 0, f)
//	contrast f      = blend(x, mean(gray), f), the mean of the whole frame's gray
//	saturation f    = blend(x, gray(pixel), f)
//	hue f           = RGB/255 → HSV, h = (h + f) mod 1, → RGB, uint8(255·x) truncated
//	                  (torchvision 0.14; newer versions scale by 255.999)
//	sharpness f     = blend(x, round(conv3×3(x, [1 1 1; 1 5 1; 1 1 1]/13)), f),
//	                  the blurred border rows and columns replaced by x; frames
//	                  of 2 pixels or fewer on a side are left as they are
//
// Each op's output is uint8, as torchvision's is, so a chain of ops is
// torchvision's ops called one after the other, each clamped and
// truncated. The blends are torchvision's float32 arithmetic through
// 256-entry tables of f·x and (1−f)·x, and the gray and the blur are
// exact, so brightness, contrast, saturation and sharpness equal
// torchvision's. Hue is computed in fixed point: a hue shift keeps each
// pixel's largest and smallest channel, and the middle one is
// min + (max−min)·frac of the shifted hue's position in its sixth of the
// circle, the position found with a table of 2³²/(max−min) instead of a
// division; it differs from torchvision's float32 HSV round trip by at
// most one level where that one lands within rounding of an integer.
//
// Brightness, contrast, saturation and hue are functions of a pixel alone
// (given the frame's mean): the ops between two that need the whole frame
// run in one pass over the frame, each pixel going through all of them in
// turn, consecutive per-channel ops composed into one 256-entry table
// (a table, saturation and hue in that order, Octo's pass after contrast,
// go through one loop with hue written out and the table composed into
// saturation's, fusedPlan).
// Contrast needs the grayscale mean of the frame as the ops before it
// leave it: after a table (brightness) or nothing, a read-only pass adds
// up the gray of the table's output and contrast's table is composed with
// it; after saturation or hue, the pass that applies them adds up the gray
// of what it writes. So brightness → contrast → saturation → hue is one
// read-only pass and one read-write pass. Sharpness reads each pixel's
// neighbours as the ops before it left them: those are applied first, and
// it keeps the two rows above the one it writes as they were.
//
// Where package colourk's vectorised kernel is built (cgo on amd64, see
// there) and the CPU has AVX2, the passes and the contrast's mean run in
// it instead: it takes
// the same ops as a list of stages (each table as the blends it was
// composed of, applied in turn, which is the composed table exactly),
// computes what the tables here hold with the same float32 operations and
// equals this code on every value. The Go code is the portable path and
// the reference the kernel is tested against (colour_kernel_test.go).

// colourer applies colour ops to a frame in place, with buffers reused
// from frame to frame.
type colourer struct {
	// kernel picks the implementation: 0 is defaultColourKernel,
	// goColour the Go code, else a colourk.Level.
	kernel colourk.Level
	// kst is stages as the kernel's: the same ops since the last pass.
	kst    []colourk.Stage
	stages []colourStage
	rows   []byte   // sharpness: the rows above and at the one written, as they were
	vsum   []uint16 // sharpness: a row's vertical sums of three
	// chunk holds pixels of a planar frame packed, for the per-pixel pass.
	chunk [3 * colourChunk]byte
	plan  fusedPlan
	// grayLut: the gray's three tables of products composed with a
	// table stage, for meanGray
	grayLut [3][256]float32
}

const colourChunk = 512

// goColour, as colourer.kernel, forces the Go code.
const goColour = goCode

// defaultColourKernel is what a colourer uses unless told otherwise: the
// kernel's best level from AVX2 up where the machine runs it (AVX512,
// which looks the leading blends up by table, else AVX2), else the Go code (no cgo,
// not amd64, built with the purego tag, or a CPU without AVX2). The SSE2
// level equals the Go code too but is slower than it (BenchmarkColour:
// Octo's chain at about 0.4× the Go code's frames per CPU-second, AVX2 at
// 2.5×), so it only runs when asked for.
var defaultColourKernel = func() colourk.Level {
	if l := colourk.Best(); l >= colourk.AVX2 {
		return l
	}
	return goColour
}()

// level is the kernel level c runs, or goColour.
func (c *colourer) level() colourk.Level {
	if c.kernel == 0 {
		return defaultColourKernel
	}
	return c.kernel
}

// colourStage is one per-pixel step of a pass: a table applied to each
// channel (brightness, contrast, composed), saturation or hue.
type colourStage struct {
	op  ColourOp // Brightness stands for any table
	lut [256]uint8
	// saturation: f·x and (1−f)·x in float32 for every x
	fx, fg [256]float32
	hue    int32 // hue: the shift in sixths of a turn, 24 fraction bits, plus 6
}

func (c *colourer) footprint() int {
	return cap(c.rows) + 2*cap(c.vsum) + cap(c.stages)*int(sizeofStage) + len(c.chunk) + sizeofPlan + 3*256*4 + 16*cap(c.kst)
}

const sizeofStage = 8 + 256 + 2*256*4 + 4

// apply runs ops over frame d in order.
func (c *colourer) apply(d frameDst, ops []Colour) {
	if c.level() != goColour && len(ops) <= colourk.MaxStages {
		c.applyKernel(d, ops)
		return
	}
	st, kst := c.stages[:0], c.kst[:0]
	for _, op := range ops {
		switch op.Op {
		case Brightness:
			st = addTable(st, blendTable(op.Factor, 0))
			kst = append(kst, blendStage(op.Factor, 0))
		case Contrast:
			var mean float32
			if len(st) == 0 || len(st) == 1 && st[0].op == Brightness {
				mean = c.meanGray(d, st, kst)
			} else {
				mean = c.pass(d, st, kst, true)
				st, kst = st[:0], kst[:0]
			}
			st = addTable(st, blendTable(op.Factor, mean))
			kst = append(kst, blendStage(op.Factor, mean))
		case Saturation:
			st = append(st, colourStage{op: Saturation})
			s := &st[len(st)-1]
			one := float32(1 - float64(op.Factor))
			for x := range 256 {
				s.fx[x], s.fg[x] = float32(op.Factor*u8f[x]), float32(one*u8f[x])
			}
			kst = append(kst, colourk.Stage{Op: colourk.Saturation, F: op.Factor, G: one})
		case Hue:
			st = append(st, colourStage{op: Hue, hue: hueShiftFixed(op.Factor)})
			kst = append(kst, colourk.Stage{Op: colourk.Hue, Shift: hueShiftFixed(op.Factor)})
		case Sharpness:
			if len(st) > 0 {
				c.pass(d, st, kst, false)
				st, kst = st[:0], kst[:0]
			}
			c.sharpen(d, op.Factor)
		}
	}
	if len(st) > 0 {
		c.pass(d, st, kst, false)
	}
	c.stages, c.kst = st[:0], kst[:0]
}

// applyKernel is apply where the kernel runs every pass (no pass has more
// stages than ops): the same passes over d, in the same places, without
// the Go code's tables. kst holds the stages since the last pass; while
// they are all blends (what the Go code composes into one table), the
// contrast's mean is a read-only pass, else the pass that applies them.
func (c *colourer) applyKernel(d frameDst, ops []Colour) {
	kst := c.kst[:0]
	blends := true
	run := func(write, mean bool) float32 {
		sum, _ := c.kernelPass(d, kst, write, mean)
		return float32(float64(sum)) / float32(d.W*d.H)
	}
	for _, op := range ops {
		switch op.Op {
		case Brightness:
			kst = append(kst, blendStage(op.Factor, 0))
		case Contrast:
			mean := run(!blends, true)
			if !blends {
				kst, blends = kst[:0], true
			}
			kst = append(kst, blendStage(op.Factor, mean))
		case Saturation:
			kst = append(kst, colourk.Stage{Op: colourk.Saturation, F: op.Factor, G: float32(1 - float64(op.Factor))})
			blends = false
		case Hue:
			kst = append(kst, colourk.Stage{Op: colourk.Hue, Shift: hueShiftFixed(op.Factor)})
			blends = false
		case Sharpness:
			if len(kst) > 0 {
				run(true, false)
				kst, blends = kst[:0], true
			}
			c.sharpen(d, op.Factor)
		}
	}
	if len(kst) > 0 {
		run(true, false)
	}
	c.kst = kst[:0]
}

// blendStage is blendTable(f, b) as the kernel's stage: f·x + (1−f)·b
// with the same float32 values.
func blendStage(f, b float32) colourk.Stage {
	one := float32(1 - float64(f))
	return colourk.Stage{Op: colourk.Blend, F: f, G: float32(one * b)}
}

// kernelPass runs the kernel stages kst over d (see colourk.Pass) and
// reports whether it did: not when c runs the Go code.
func (c *colourer) kernelPass(d frameDst, kst []colourk.Stage, write, mean bool) (int64, bool) {
	l := c.level()
	if l == goColour || len(kst) > colourk.MaxStages {
		return 0, false
	}
	n := d.W * d.H
	f := colourk.Frame{N: n}
	if d.layout == BFHWC {
		f.R = d.buf[d.base : d.base+3*n]
	} else {
		f.R, f.G, f.B = d.planes(0, n)
	}
	return colourk.Pass(l, &f, kst, write, mean), true
}

// addTable appends a per-channel table, composed with the last stage when
// that is one too.
func addTable(st []colourStage, t [256]uint8) []colourStage {
	if n := len(st); n > 0 && st[n-1].op == Brightness {
		for i, v := range st[n-1].lut {
			st[n-1].lut[i] = t[v]
		}
		return st
	}
	return append(st, colourStage{op: Brightness, lut: t})
}

// blendTable is blend(x, b, f) for every x: torchvision's
// f·x + (1−f)·b with f and 1−f (computed in float64, as Python does)
// rounded to float32.
func blendTable(f, b float32) (t [256]uint8) {
	one := float32(1 - float64(f))
	ob := float32(one * b)
	for x := range t {
		t[x] = clampTrunc(float32(f*u8f[x]) + ob)
	}
	return t
}

// clampTrunc is torchvision's .clamp(0, 255).to(torch.uint8).
func clampTrunc(v float32) uint8 {
	if !(v > 0) { // NaN too
		return 0
	}
	if v >= 255 {
		return 255
	}
	return uint8(int32(v))
}

// grayTables holds 0.2989·x, 0.587·x and 0.114·x in float32, as
// rgb_to_grayscale computes them.
var grayTables = func() (t [3][256]float32) {
	w := [3]float32{0.2989, 0.587, 0.114}
	for c := range t {
		for x := range t[c] {
			t[c][x] = float32(w[c] * float32(x))
		}
	}
	return t
}()

// gray is rgb_to_grayscale of one uint8 pixel.
func gray(r, g, b uint8) uint8 {
	return uint8(int32(float32(grayTables[0][r]+grayTables[1][g]) + grayTables[2][b]))
}

// meanGray is the mean of the grayscale of d with the table stage st (at
// most one) applied, as torch.mean computes it: the sum, exact as an
// integer, rounded to float32 and divided by the count in float32. d is
// left as it is. kst is st as the kernel's stages.
func (c *colourer) meanGray(d frameDst, st []colourStage, kst []colourk.Stage) float32 {
	if sum, ok := c.kernelPass(d, kst, false, true); ok {
		return float32(float64(sum)) / float32(d.W*d.H)
	}
	lut := &identityTable
	if len(st) == 1 {
		lut = &st[0].lut
	}
	gt := &c.grayLut
	for ch := range gt {
		for x := range gt[ch] {
			gt[ch][x] = grayTables[ch][lut[x]]
		}
	}
	g0, g1, g2 := &gt[0], &gt[1], &gt[2]
	n := d.W * d.H
	var sum int64
	if d.layout == BFHWC {
		fr := d.buf[d.base : d.base+3*n]
		for i := 0; i+2 < len(fr); i += 3 {
			p := fr[i : i+3 : i+3]
			sum += int64(uint8(int32(float32(g0[p[0]]+g1[p[1]]) + g2[p[2]])))
		}
	} else {
		o := d.base
		r, g, b := d.buf[o:o+n], d.buf[o+d.planeStep:o+d.planeStep+n], d.buf[o+2*d.planeStep:o+2*d.planeStep+n]
		g, b = g[:len(r)], b[:len(r)]
		for i := range r {
			sum += int64(uint8(int32(float32(g0[r[i]]+g1[g[i]]) + g2[b[i]])))
		}
	}
	return float32(float64(sum)) / float32(n)
}

var identityTable = func() (t [256]uint8) {
	for i := range t {
		t[i] = uint8(i)
	}
	return t
}()

// pass applies the stages to every pixel of d; with mean, it returns the
// mean of the result's grayscale as meanGray does. A planar frame goes
// through in chunks packed into c.chunk. kst is st as the kernel's
// stages.
func (c *colourer) pass(d frameDst, st []colourStage, kst []colourk.Stage, mean bool) float32 {
	if sum, ok := c.kernelPass(d, kst, true, mean); ok {
		if !mean {
			return 0
		}
		return float32(float64(sum)) / float32(d.W*d.H)
	}
	if !mean && len(st) == 1 && st[0].op == Brightness {
		c.table(d, &st[0].lut)
		return 0
	}
	n := d.W * d.H
	var sum int64
	run := func(px []byte) int64 { return runStages(px, st, mean) }
	if fusable(st) {
		c.plan.build(st)
		run = func(px []byte) int64 { return c.plan.run(px, mean) }
	}
	if d.layout == BFHWC {
		sum = run(d.buf[d.base : d.base+3*n])
	} else {
		for i := 0; i < n; i += colourChunk {
			k := min(colourChunk, n-i)
			px := c.chunk[:3*k]
			r, g, b := d.planes(i, k)
			for j := range k {
				px[3*j], px[3*j+1], px[3*j+2] = r[j], g[j], b[j]
			}
			sum += run(px)
			for j := range k {
				r[j], g[j], b[j] = px[3*j], px[3*j+1], px[3*j+2]
			}
		}
	}
	if !mean {
		return 0
	}
	return float32(float64(sum)) / float32(n)
}

// planes returns the three channels of k pixels of planar d from pixel i.
func (d frameDst) planes(i, k int) (r, g, b []byte) {
	o := d.base + i
	s := d.planeStep
	return d.buf[o : o+k], d.buf[o+s : o+s+k], d.buf[o+2*s : o+2*s+k]
}

// runStages applies the stages to packed RGB pixels px in place and
// returns the sum of the result's grayscale when mean is set. The stages
// are pure functions of a pixel, so a pixel equal to the one before it
// (flat areas, frequent in simulated scenes) takes its result.
func runStages(px []byte, st []colourStage, mean bool) int64 {
	var sum int64
	prevIn, prevOut := uint32(1<<31), [3]uint8{}
	for i := 0; i+2 < len(px); i += 3 {
		p := px[i : i+3 : i+3]
		r, g, b := p[0], p[1], p[2]
		in := uint32(r) | uint32(g)<<8 | uint32(b)<<16
		if in == prevIn {
			r, g, b = prevOut[0], prevOut[1], prevOut[2]
		} else {
			prevIn = in
			for k := range st {
				s := &st[k]
				switch s.op {
				case Brightness:
					r, g, b = s.lut[r], s.lut[g], s.lut[b]
				case Saturation:
					gb := s.fg[gray(r, g, b)]
					r, g, b = clampTrunc(s.fx[r]+gb), clampTrunc(s.fx[g]+gb), clampTrunc(s.fx[b]+gb)
				case Hue:
					r, g, b = hueShift(r, g, b, s.hue)
				}
			}
			prevOut = [3]uint8{r, g, b}
		}
		p[0], p[1], p[2] = r, g, b
		if mean {
			sum += int64(gray(r, g, b))
		}
	}
	return sum
}

// fusable reports whether st is at most a table, then saturation, then
// hue, each at most once and in that order (Octo's, and every chain's
// after contrast): runFused's one loop.
func fusable(st []colourStage) bool {
	next := ColourOp(0)
	for i := range st {
		switch op := st[i].op; {
		case op == Brightness && next < Brightness,
			op == Saturation && next < Saturation,
			op == Hue && next < Hue:
			next = op
		default:
			return false
		}
	}
	return true
}

// fusedPlan is a pass fusable accepts, ready for run: a table, then
// saturation through tables composed with it, then hue.
type fusedPlan struct {
	lut    *[256]uint8 // nil: none, or composed into the saturation's tables
	sat    bool
	fx, fg [256]float32    // saturation: f·lut(x), (1−f)·x
	gray   [3][256]float32 // saturation: the gray's products of lut(x)
	hue    int32
	doHue  bool
}

const sizeofPlan = 8 + 8 + 5*256*4 + 8

// build sets p up for the stages st.
func (p *fusedPlan) build(st []colourStage) {
	p.lut, p.sat, p.doHue = nil, false, false
	var sat *colourStage
	for i := range st {
		switch s := &st[i]; s.op {
		case Brightness:
			p.lut = &s.lut
		case Saturation:
			sat = s
		case Hue:
			p.hue, p.doHue = s.hue, true
		}
	}
	if sat == nil {
		return
	}
	lut := &identityTable
	if p.lut != nil {
		lut = p.lut
	}
	p.sat, p.lut, p.fg = true, nil, sat.fg
	for x, v := range lut {
		p.fx[x] = sat.fx[v]
		for ch := range 3 {
			p.gray[ch][x] = grayTables[ch][v]
		}
	}
}

// run is runStages for the plan's stages, each pixel through all of them
// in one loop with nothing called.
func (pl *fusedPlan) run(px []byte, mean bool) int64 {
	lut, g0, g1, g2 := pl.lut, &pl.gray[0], &pl.gray[1], &pl.gray[2]
	hue, doHue := pl.hue, pl.doHue
	var sum int64
	prevIn, prevOut := uint32(1<<31), uint32(0)
	for i := 0; i+2 < len(px); i += 3 {
		p := px[i : i+3 : i+3]
		in := uint32(p[0]) | uint32(p[1])<<8 | uint32(p[2])<<16
		if in == prevIn {
			p[0], p[1], p[2] = uint8(prevOut), uint8(prevOut>>8), uint8(prevOut>>16)
			if mean {
				sum += int64(prevOut >> 24)
			}
			continue
		}
		prevIn = in
		r, g, b := p[0], p[1], p[2]
		if lut != nil {
			r, g, b = lut[r], lut[g], lut[b]
		}
		if pl.sat {
			gb := pl.fg[uint8(int32(float32(g0[r]+g1[g])+g2[b]))]
			r, g, b = clampTrunc(pl.fx[r]+gb), clampTrunc(pl.fx[g]+gb), clampTrunc(pl.fx[b]+gb)
		}
		if doHue {
			// hueShift, written out.
			mx, mn := max(r, g, b), min(r, g, b)
			if mx == mn {
				v := hueScale[mx]
				r, g, b = v, v, v
			} else {
				cr := int32(mx) - int32(mn)
				num, h := int32(r)-int32(g), int32(4*hueOne)
				if g == mx {
					num, h = int32(b)-int32(r), 2*hueOne
				}
				if r == mx {
					num, h = int32(g)-int32(b), 0
				}
				h += int32(int64(num)*hueRecip[cr]>>8) + hue
				sec := hueSector[h>>hueBits]
				d := int64(cr) * int64(h&hueMask)
				mid := mn + uint8(d>>hueBits)
				if sec&1 != 0 {
					mid = mx - uint8((d+hueMask)>>hueBits)
				}
				v := uint32(hueScale[mx]) | uint32(hueMin[mx][mn])<<8 | uint32(mid)<<16
				sh := &hueShifts[sec&7]
				r, g, b = uint8(v>>(sh[0]&31)), uint8(v>>(sh[1]&31)), uint8(v>>(sh[2]&31))
			}
		}
		p[0], p[1], p[2] = r, g, b
		prevOut = uint32(r) | uint32(g)<<8 | uint32(b)<<16
		if mean {
			gy := gray(r, g, b)
			sum += int64(gy)
			prevOut |= uint32(gy) << 24
		}
	}
	return sum
}

// table maps every value of d through t.
func (c *colourer) table(d frameDst, t *[256]uint8) {
	n := d.W * d.H
	if d.layout == BFHWC {
		fr := d.buf[d.base : d.base+3*n]
		for i, v := range fr {
			fr[i] = t[v]
		}
		return
	}
	for ch := range 3 {
		o := d.base + ch*d.planeStep
		p := d.buf[o : o+n]
		for i, v := range p {
			p[i] = t[v]
		}
	}
}

// Hue in fixed point: the hue as a position on [0, 6), a sixth of a turn
// per unit, with hueBits fraction bits.
const (
	hueBits = 24
	hueOne  = 1 << hueBits
	hueMask = hueOne - 1
)

// hueShiftFixed is a hue factor (a fraction of a turn in [−0.5, 0.5]) as
// the fixed-point shift hueShift adds: in [6, 12) sixths, so that a
// position in [−1, 5] plus it is positive.
func hueShiftFixed(f float32) int32 {
	s := int64(float64(f)*6*hueOne + 0.5)
	if f < 0 {
		s = int64(float64(f)*6*hueOne - 0.5)
	}
	s %= 6 * hueOne
	if s < 0 {
		s += 6 * hueOne
	}
	return int32(s + 6*hueOne)
}

// hueRecip is ⌈2³²/d⌉ for d in 1..255: n·hueRecip[d] >> 8 is n/d with
// hueBits fraction bits, exact when n/d is, otherwise at most one unit
// above.
var hueRecip = func() (t [256]int64) {
	for d := 1; d < 256; d++ {
		t[d] = (1<<32 + int64(d) - 1) / int64(d)
	}
	return t
}()

// hueSector is the sixth of the circle a shifted position's integer part
// (in 5..16) falls in.
var hueSector = [18]uint8{0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5}

// hueScale is torchvision 0.14's way back from x/255 in float32: uint8(x/255·255)
// truncated, which is x or, for some x, x−1; the largest channel, unchanged
// by a hue shift, goes through it.
var hueScale = func() (t [256]uint8) {
	for x := range t {
		t[x] = uint8(int32(float32(float32(float32(x)/255) * 255)))
	}
	return t
}()

// hueMin is torchvision 0.14's smallest channel after a hue shift,
// uint8(v·(1−s)·255) truncated in float32 for v = max/255 and
// s = (max−min)/max, which is min or, for some pairs, min−1.
var hueMin = func() (t [256][256]uint8) {
	for mx := 1; mx < 256; mx++ {
		v := float32(mx) / 255
		for mn := range mx {
			s := float32(float32(v-float32(mn)/255) / v)
			t[mx][mn] = uint8(int32(float32(float32(v*float32(1-s)) * 255)))
		}
	}
	return t
}()

// hueShifts is _hsv2rgb's choice for each sector: for red, green and
// blue, the shift that brings the largest (0), smallest (8) or middle
// (16) channel down from the three packed in a word.
var hueShifts = [8][3]uint8{{0, 16, 8}, {16, 0, 8}, {8, 0, 16}, {8, 16, 0}, {16, 8, 0}, {0, 8, 16}}

// hueShift is adjust_hue of one pixel, shift from hueShiftFixed. The
// largest and smallest channels keep their values; the middle one is the
// shifted position's fraction of the way between them, up in the even
// sectors, down in the odd ones, truncated as torchvision's is.
func hueShift(r, g, b uint8, shift int32) (uint8, uint8, uint8) {
	mx, mn := max(r, g, b), min(r, g, b)
	if mx == mn {
		v := hueScale[mx]
		return v, v, v
	}
	cr := int32(mx) - int32(mn)
	// torchvision's ties: red first, then green. Selects, not branches:
	// which channel is largest follows the picture, not a pattern.
	num, h := int32(r)-int32(g), int32(4*hueOne)
	if g == mx {
		num, h = int32(b)-int32(r), 2*hueOne
	}
	if r == mx {
		num, h = int32(g)-int32(b), 0
	}
	h += int32(int64(num)*hueRecip[cr]>>8) + shift
	sec := hueSector[h>>hueBits]
	d := int64(cr) * int64(h&hueMask)
	mid := mn + uint8(d>>hueBits)
	if sec&1 != 0 {
		mid = mx - uint8((d+hueMask)>>hueBits)
	}
	v := uint32(hueScale[mx]) | uint32(hueMin[mx][mn])<<8 | uint32(mid)<<16
	sh := &hueShifts[sec&7]
	return uint8(v >> (sh[0] & 31)), uint8(v >> (sh[1] & 31)), uint8(v >> (sh[2] & 31))
}

// sharpen is adjust_sharpness over d in place: each inner value blends
// with round(conv3×3)/13 of its neighbours as they were, border values
// blend with themselves. Each channel plane is a grid of values with
// neighbours step apart: the packed frame one of 3W values a row, step 3.
func (c *colourer) sharpen(d frameDst, f float32) {
	W, H := d.W, d.H
	if W <= 2 || H <= 2 {
		return
	}
	var t sharpTables
	one := float32(1 - float64(f))
	for x := range 256 {
		t.fx[x], t.fg[x] = float32(f*u8f[x]), float32(one*u8f[x])
		t.self[x] = clampTrunc(t.fx[x] + t.fg[x])
	}
	if d.layout == BFHWC {
		c.sharpenPlane(d.buf[d.base:d.base+3*W*H], 3*W, H, 3, &t)
		return
	}
	for ch := range 3 {
		o := d.base + ch*d.planeStep
		c.sharpenPlane(d.buf[o:o+W*H], W, H, 1, &t)
	}
}

// sharpTables: f·x and (1−f)·x in float32, and blend(x, x, f), for every x.
type sharpTables struct {
	fx, fg [256]float32
	self   [256]uint8
}

// sharpBlur is round(n/13) for the kernel's sums n: no n/13 is halfway
// between two integers, so rounding half to even (torchvision's) and
// half up agree.
var sharpBlur = func() (t [13*255 + 1]uint8) {
	for n := range t {
		t[n] = uint8((2*n + 13) / 26)
	}
	return t
}()

// sharpenPlane sharpens the H rows of L values in p, neighbours step
// apart, keeping the rows above and at the one being written as they were.
func (c *colourer) sharpenPlane(p []byte, L, H, step int, t *sharpTables) {
	if cap(c.rows) < 2*L {
		c.rows = make([]byte, 2*L)
	}
	if cap(c.vsum) < L {
		c.vsum = make([]uint16, L)
	}
	up, cur := c.rows[:L], c.rows[L:2*L]
	vs := c.vsum[:L]
	copy(up, p[:L])
	row := p[:L]
	for i, v := range row {
		row[i] = t.self[v]
	}
	for y := 1; y < H-1; y++ {
		row = p[y*L : (y+1)*L]
		down := p[(y+1)*L : (y+2)*L]
		copy(cur, row)
		down, up = down[:len(cur)], up[:len(cur)]
		vs = vs[:len(cur)]
		for i, v := range cur {
			vs[i] = uint16(up[i]) + uint16(v) + uint16(down[i])
		}
		for i := range step {
			row[i] = t.self[cur[i]]
			row[L-step+i] = t.self[cur[L-step+i]]
		}
		inner := row[step : L-step]
		left, mid, right, centre := vs[:len(inner)], vs[step:][:len(inner)], vs[2*step:][:len(inner)], cur[step:][:len(inner)]
		for i := range inner {
			x := centre[i]
			n := int(left[i]) + int(mid[i]) + int(right[i]) + 4*int(x)
			inner[i] = clampTrunc(t.fx[x] + t.fg[sharpBlur[n]])
		}
		up, cur = cur, up
	}
	row = p[(H-1)*L : H*L]
	for i, v := range row {
		row[i] = t.self[v]
	}
}
