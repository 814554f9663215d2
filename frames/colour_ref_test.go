package frames

// The colour ops as torchvision 0.14 computes them on uint8 tensors
// (torchvision/transforms/functional_tensor.py), recomputed in float32
// operation for operation: the reference the fast ops of colour.go are
// held to (within one level, TestColourMatchesFloat32), checked bit for
// bit against torchvision itself by augment's TestTorchvisionParity when
// it was the implementation.
//
//	blend(a, b, f)  = uint8(clamp(f·a + (1−f)·b, 0, 255))     truncated
//	gray(r, g, b)   = uint8(0.2989·r + 0.587·g + 0.114·b)        truncated
//	brightness f    = blend(x, 0, f)
//	contrast f      = blend(x, mean(gray), f)
//	saturation f    = blend(x, gray(pixel), f)
//	hue f           = RGB/255 → HSV, h = (h + f) mod 1, → RGB, uint8(255·x)
//	sharpness f     = blend(x, round(conv3×3(x, [1 1 1; 1 5 1; 1 1 1]/13)), f)

// refColourer applies colour ops to a frame in place, with buffers reused
// from frame to frame.
type refColourer struct {
	stages []refStage
	prev   []byte // sharpness: the frame before it, packed RGB
}

// refStage is one per-pixel step of a pass: a table applied to each
// channel (brightness, contrast, composed), saturation or hue.
type refStage struct {
	op     ColourOp // Brightness stands for any table
	lut    [256]uint8
	f, one float32 // saturation: f and 1−f; hue: f
}

// apply runs ops over frame d in order.
func (c *refColourer) apply(d frameDst, ops []Colour) {
	st := c.stages[:0]
	for _, op := range ops {
		switch op.Op {
		case Brightness:
			st = refAddTable(st, refBlendTable(op.Factor, 0))
		case Contrast:
			mean := c.pass(d, st, true)
			st = refAddTable(st[:0], refBlendTable(op.Factor, mean))
		case Saturation:
			st = append(st, refStage{op: Saturation, f: op.Factor, one: float32(1 - float64(op.Factor))})
		case Hue:
			st = append(st, refStage{op: Hue, f: op.Factor})
		case Sharpness:
			if len(st) > 0 {
				c.pass(d, st, false)
				st = st[:0]
			}
			c.sharpen(d, op.Factor)
		}
	}
	if len(st) > 0 {
		c.pass(d, st, false)
	}
	c.stages = st[:0]
}

// refAddTable appends a per-channel table, composed with the last stage when
// that is one too.
func refAddTable(st []refStage, t [256]uint8) []refStage {
	if n := len(st); n > 0 && st[n-1].op == Brightness {
		for i, v := range st[n-1].lut {
			st[n-1].lut[i] = t[v]
		}
		return st
	}
	return append(st, refStage{op: Brightness, lut: t})
}

// refBlendTable is blend(x, b, f) for every x: torchvision's
// f·x + (1−f)·b with f and 1−f (computed in float64, as Python does)
// rounded to float32.
func refBlendTable(f, b float32) (t [256]uint8) {
	one := float32(1 - float64(f))
	ob := float32(one * b)
	for x := range t {
		t[x] = refClampTrunc(float32(f*u8f[x]) + ob)
	}
	return t
}

// refClampTrunc is torchvision's .clamp(0, 255).to(torch.uint8).
func refClampTrunc(v float32) uint8 {
	if !(v > 0) { // NaN too
		return 0
	}
	if v >= 255 {
		return 255
	}
	return uint8(int32(v))
}

// refGrayTables holds 0.2989·x, 0.587·x and 0.114·x in float32, as
// rgb_to_grayscale computes them.
var refGrayTables = func() (t [3][256]float32) {
	w := [3]float32{0.2989, 0.587, 0.114}
	for c := range t {
		for x := range t[c] {
			t[c][x] = float32(w[c] * float32(x))
		}
	}
	return t
}()

// gray is rgb_to_grayscale of one uint8 pixel.
func refGray(r, g, b uint8) uint8 {
	return uint8(int32(float32(refGrayTables[0][r]+refGrayTables[1][g]) + refGrayTables[2][b]))
}

// access returns the index of the first pixel's red value and the strides
// between pixels and between channels of d's layout.
func refAccess(d frameDst) (base, pix, ch int) {
	if d.layout == BFHWC {
		return d.base, 3, 1
	}
	return d.base, 1, d.planeStep
}

// pass applies the stages to every pixel of d; with mean, it returns the
// mean of the result's grayscale as torch.mean computes it (the sum, exact
// as an integer, rounded to float32 and divided by the count in float32).
// The stages are pure functions of a pixel, so a pixel equal to the one
// before it (flat areas, frequent in simulated scenes) takes its result.
func (c *refColourer) pass(d frameDst, st []refStage, mean bool) float32 {
	if !mean && len(st) == 1 && st[0].op == Brightness {
		c.table(d, &st[0].lut)
		return 0
	}
	base, ps, cs := refAccess(d)
	buf := d.buf
	n := d.W * d.H
	var sum int64
	prevIn, prevOut := uint32(1<<31), [3]uint8{}
	for i := range n {
		o := base + i*ps
		r, g, b := buf[o], buf[o+cs], buf[o+2*cs]
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
					gb := float32(s.one * u8f[refGray(r, g, b)])
					r = refClampTrunc(float32(s.f*u8f[r]) + gb)
					g = refClampTrunc(float32(s.f*u8f[g]) + gb)
					b = refClampTrunc(float32(s.f*u8f[b]) + gb)
				case Hue:
					r, g, b = refHueShift(r, g, b, s.f)
				}
			}
			prevOut = [3]uint8{r, g, b}
		}
		if len(st) > 0 {
			buf[o], buf[o+cs], buf[o+2*cs] = r, g, b
		}
		if mean {
			sum += int64(refGray(r, g, b))
		}
	}
	if !mean {
		return 0
	}
	return float32(float64(sum)) / float32(n)
}

// table maps every value of d through t.
func (c *refColourer) table(d frameDst, t *[256]uint8) {
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

// refHueShift is adjust_hue of one pixel: _rgb2hsv, the shift, _hsv2rgb, in
// float32 and in torchvision's order of operations. fmod(x, 1) of a
// positive x is x − trunc(x), exactly.
func refHueShift(r8, g8, b8 uint8, shift float32) (uint8, uint8, uint8) {
	r, g, b := refUnit[r8], refUnit[g8], refUnit[b8]
	maxc, minc := r, r
	if g > maxc {
		maxc = g
	} else if g < minc {
		minc = g
	}
	if b > maxc {
		maxc = b
	} else if b < minc {
		minc = b
	}
	cr := maxc - minc
	s, div := cr, cr
	if maxc == minc {
		div = 1
	} else {
		s = cr / maxc
	}
	var h float32
	switch {
	case maxc == r:
		h = (maxc-b)/div - (maxc-g)/div
	case maxc == g:
		h = float32(2+(maxc-r)/div) - (maxc-b)/div
	default:
		h = float32(4+(maxc-g)/div) - (maxc-r)/div
	}
	h = float32(float32(h/6) + 1) // in (0, 2): fmod by 1 is subtracting the integer part
	h -= float32(int32(h))
	// (h + shift) % 1.0: Python's remainder, the sign of the divisor.
	h = float32(h + shift)
	h -= float32(int32(h))
	if h < 0 {
		h = float32(h + 1)
	}
	v := maxc
	h6 := float32(h * 6)
	i := int32(h6) // h6 ≥ 0: truncation is floor
	fr := h6 - float32(i)
	i %= 6
	// v, s and fr are in [0, 1], so are these products: torchvision's
	// clamp to [0, 1] changes nothing.
	vals := [4]float32{v, float32(v * float32(1-s)), float32(v * float32(1-float32(s*fr))), float32(v * float32(1-float32(s*float32(1-fr))))}
	pm := &refHSVPick[i]
	return refToU8(vals[pm[0]]), refToU8(vals[pm[1]]), refToU8(vals[pm[2]])
}

// refHSVPick is _hsv2rgb's choice for each sector i: indices into
// (v, p, q, t) for red, green and blue.
var refHSVPick = [6][3]uint8{{0, 3, 1}, {2, 0, 1}, {1, 0, 3}, {1, 2, 0}, {3, 1, 0}, {0, 1, 2}}

// unit is x/255 in float32 for every byte: convert_image_dtype to float.
var refUnit = func() (t [256]float32) {
	for x := range t {
		t[x] = float32(x) / 255
	}
	return t
}()

// refToU8 is adjust_hue's way back to uint8 in torchvision 0.14 (Debian's,
// the tests' reference): x·255, truncated. Newer torchvision goes through
// convert_image_dtype, x·255.999: up to one level higher.
func refToU8(v float32) uint8 { return uint8(int32(float32(v * 255))) }

// The sharpness kernel as torchvision builds it: ones, 5 in the middle,
// divided by their float32 sum; refSharpTab holds its two weights times
// every byte value, the products conv2d adds up.
var refSharpTab = func() (t [2][256]float32) {
	side, centre := float32(1)/float32(13), float32(5)/float32(13)
	for x := range 256 {
		t[0][x], t[1][x] = float32(side*float32(x)), float32(centre*float32(x))
	}
	return t
}()

// sharpen is adjust_sharpness over d in place: the blur of each inner
// pixel adds its nine products row by row, in float32, and rounds half to
// even; border pixels blend with themselves.
func (c *refColourer) sharpen(d frameDst, f float32) {
	W, H := d.W, d.H
	if W <= 2 || H <= 2 {
		return
	}
	base, ps, cs := refAccess(d)
	buf := d.buf
	if cap(c.prev) < W*H*3 {
		c.prev = make([]byte, W*H*3)
	}
	prev := c.prev[:W*H*3]
	for i := range W * H {
		o := base + i*ps
		prev[i*3], prev[i*3+1], prev[i*3+2] = buf[o], buf[o+cs], buf[o+2*cs]
	}
	one := float32(1 - float64(f))
	side, centre := &refSharpTab[0], &refSharpTab[1]
	stride := 3 * W
	// blend(x, x, f) for the border; inner values blend with the blur.
	var self [256]uint8
	for x := range self {
		self[x] = refClampTrunc(float32(f*u8f[x]) + float32(one*u8f[x]))
	}
	for y := range H {
		cur := prev[y*stride : (y+1)*stride]
		if y == 0 || y == H-1 {
			for x := range W {
				o := base + (y*W+x)*ps
				buf[o], buf[o+cs], buf[o+2*cs] = self[cur[3*x]], self[cur[3*x+1]], self[cur[3*x+2]]
			}
			continue
		}
		up, down := prev[(y-1)*stride:y*stride], prev[(y+1)*stride:(y+2)*stride]
		o := base + y*W*ps
		buf[o], buf[o+cs], buf[o+2*cs] = self[cur[0]], self[cur[1]], self[cur[2]]
		for i := 3; i < stride-3; i++ {
			acc := side[up[i-3]] + side[up[i]]
			acc += side[up[i+3]]
			acc += side[cur[i-3]]
			acc += centre[cur[i]]
			acc += side[cur[i+3]]
			acc += side[down[i-3]]
			acc += side[down[i]]
			acc += side[down[i+3]]
			// Round half to even: adding and taking away 1.5·2²³ rounds
			// a float32 below 2²² to an integer that way.
			deg := float32(float32(acc+12582912) - 12582912)
			x, ch := i/3, i%3
			buf[base+(y*W+x)*ps+ch*cs] = refClampTrunc(float32(f*u8f[cur[i]]) + float32(one*deg))
		}
		o = base + (y*W+W-1)*ps
		buf[o], buf[o+cs], buf[o+2*cs] = self[cur[stride-3]], self[cur[stride-2]], self[cur[stride-1]]
	}
}
