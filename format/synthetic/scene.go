package synthetic

import (
	"image"
	"math"
)

// Frames are rendered to look, to a codec and to a loader, like camera
// images of a robot at work: a wall and a table with a fixed-pattern
// texture at several scales (wood grain, cloth, clutter), lit with a soft
// gradient; a few shaded toy objects with shadows; the arm reaching,
// carrying one object and putting it down; per-pixel sensor noise in every
// channel, fresh each frame; a slow flicker of the lights. A wrist camera
// rides on the gripper, so its whole view pans as the arm moves. The
// texture and the noise are what give JPEG its realistic 2–3 bits per
// pixel; the motion is what makes consecutive frames differ the way a
// video's do.

// JPEGQuality is the quality the scenes are tuned for: image/jpeg at it
// writes 2–3 bits per pixel, the rate of camera JPEGs, at every frame size
// in the table (TestJPEGLooksLikeCamera measures it). A writer that stores
// JPEG frames encodes them at it.
const JPEGQuality = 90

// Texture and noise strengths, tuned with JPEGQuality.
const (
	noiseSigma   = 3.0 // sensor noise, in 8-bit levels, per channel
	textureDepth = 70  // multiplicative texture modulation at 256×256, in 1/256
)

// texturePeriods are the value-noise octaves of the texture, in pixels,
// with their relative amplitudes: a 1/f-like mix of coarse blotches and
// fine grain.
var texturePeriods = [...]struct{ period, amp int }{
	{64, 10}, {24, 7}, {9, 6}, {4, 8}, {2, 10},
}

// camera is one camera's fixed view of one episode.
type camera struct {
	h, w  int
	wrist bool

	// world (workspace) to pixel: px = (x-panX)*sx*w + tx*w, likewise y.
	sx, sy, tx, ty float64
	horizon        int // rows above are wall; negative: no wall in view
	wallRGB        [3]int32
	tableRGB       [3]int32
	gradY          float64 // lighting slope, levels across the frame
	colGrad        []int32 // lighting slope across, per column

	// margin is how far the texture extends past the frame on each side,
	// the room a wrist camera's pan has.
	margin int
	tex    []int16 // (h+2*margin)*(w+2*margin) multipliers, 256 = 1
	texW   int

	clutter []clutter // fixed scenery above the horizon

	noiseSeed uint64
}

// clutter is a box of fixed scenery, in pixels.
type clutter struct {
	x, y, rx, ry float64
	col          [3]float64
}

// newCamera draws one camera's view of an episode.
func newCamera(r *rng, h, w int, wrist bool) *camera {
	c := &camera{h: h, w: w, wrist: wrist, noiseSeed: r.next()}
	c.wallRGB = [3]int32{int32(r.span(120, 220)), int32(r.span(120, 220)), int32(r.span(120, 220))}
	c.tableRGB = [3]int32{int32(r.span(60, 190)), int32(r.span(50, 170)), int32(r.span(40, 160))}
	gradX := r.between(-30, 30)
	c.gradY = r.between(-25, 25)
	c.colGrad = make([]int32, w)
	for x := range c.colGrad {
		c.colGrad[x] = int32(gradX * (float64(x)/float64(w) - 0.5))
	}
	if wrist {
		s := r.between(1.8, 2.6)
		c.sx, c.sy, c.tx, c.ty = s, s, 0.5, 0.6
		c.horizon = -1
		c.margin = max(w, h) / 4
	} else {
		c.sx, c.sy = r.between(0.8, 1.05), r.between(0.7, 0.95)
		if r.intn(3) == 0 {
			c.sx = -c.sx // a camera facing the other way
		}
		c.tx = r.between(0.0, 0.12)
		if c.sx < 0 {
			c.tx = 1 - c.tx
		}
		c.ty = r.between(0.1, 0.25)
		c.horizon = int(float64(h) * r.between(0.1, 0.3))
	}
	c.texW = w + 2*c.margin
	c.tex = make([]int16, (h+2*c.margin)*c.texW)
	// Bigger frames resolve finer detail of the same scene: deepen the
	// texture gently with the frame's area, which keeps the JPEG bitrate
	// per pixel about level across sizes, as it is in the real datasets.
	depth := float64(textureDepth) * math.Pow(float64(w*h)/(256*256), 0.08)
	valueNoise(c.tex, c.texW, h+2*c.margin, int32(depth), r)
	// Clutter on the wall: shelves, boxes, posters.
	if c.horizon > 0 {
		for range r.span(2, 6) {
			b := clutter{
				x: r.between(0, 1) * float64(w), y: r.between(0.1, 0.9) * float64(c.horizon),
				rx: r.between(0.03, 0.15) * float64(w), ry: r.between(0.2, 0.6) * float64(c.horizon),
			}
			for ch := range b.col {
				b.col[ch] = r.between(40, 240)
			}
			c.clutter = append(c.clutter, b)
		}
	}
	return c
}

// valueNoise fills dst (w×h, row-major) with multiplicative texture
// factors around 256: a sum of bilinearly interpolated random lattices.
func valueNoise(dst []int16, w, h int, depth int32, r *rng) {
	acc := make([]int32, len(dst))
	totalAmp := 0
	for _, oct := range texturePeriods {
		totalAmp += oct.amp
	}
	for _, oct := range texturePeriods {
		p := oct.period
		gw, gh := w/p+2, h/p+2
		grid := make([]int32, gw*gh)
		for i := range grid {
			grid[i] = int32(r.intn(256)) - 128
		}
		amp := int32(oct.amp)
		for y := 0; y < h; y++ {
			gy, fy := y/p, int32((y%p)*256/p)
			row0, row1 := grid[gy*gw:], grid[(gy+1)*gw:]
			out := acc[y*w : (y+1)*w]
			for x := range out {
				gx, fx := x/p, int32((x%p)*256/p)
				top := row0[gx]*(256-fx) + row0[gx+1]*fx
				bot := row1[gx]*(256-fx) + row1[gx+1]*fx
				out[x] += ((top*(256-fy) + bot*fy) >> 8) * amp >> 8
			}
		}
	}
	// acc is within ±128*totalAmp, rarely beyond half of that.
	for i, v := range acc {
		dst[i] = int16(256 + v*depth/int32(64*totalAmp))
	}
}

// noiseTable maps a byte to a normally distributed offset (its quantile),
// so drawing sensor noise costs one byte of a random word.
var noiseTable = func() [256]int16 {
	var t [256]int16
	for i := range t {
		p := (float64(i) + 0.5) / 256
		t[i] = int16(math.Round(noiseSigma * math.Sqrt2 * math.Erfinv(2*p-1)))
	}
	return t
}()

// render draws step s of the episode into img, which must be h×w.
func (c *camera) render(img *image.RGBA, m *motion, s int) {
	w, h := c.w, c.h
	pos := m.pos[s]
	panX, panY := 0.0, 0.0
	ox, oy := c.margin, c.margin
	if c.wrist {
		panX, panY = pos[0], pos[1]
		// The texture pans with the camera, folded back and forth within
		// the margin so that it never runs out.
		ox = fold(int(math.Round(panX*c.sx*float64(w)*0.5)), 2*c.margin)
		oy = fold(int(math.Round(panY*c.sy*float64(h)*0.5)), 2*c.margin)
	}
	toPx := func(x, y float64) (float64, float64) {
		return ((x-panX)*c.sx + c.tx) * float64(w), ((y-panY)*c.sy + c.ty) * float64(h)
	}

	// Background: wall above the horizon, table below, lit with a slope.
	pix := img.Pix
	colGrad := c.colGrad[:w]
	for y := 0; y < h; y++ {
		base := c.tableRGB
		if y < c.horizon {
			base = c.wallRGB
		}
		gy := int32(c.gradY * (float64(y)/float64(h) - 0.5))
		r0, g0, b0 := base[0]+gy, base[1]+gy, base[2]+gy
		row := pix[y*img.Stride : y*img.Stride+4*w]
		for x, g := range colGrad {
			p := row[4*x : 4*x+4 : 4*x+4]
			p[0] = clampInt(r0 + g)
			p[1] = clampInt(g0 + g)
			p[2] = clampInt(b0 + g)
			p[3] = 255
		}
	}

	for _, b := range c.clutter {
		paintObject(img, b.x, b.y, b.rx, b.ry, false, b.col)
	}

	// Objects with their shadows, then the arm on top.
	scale := math.Abs(c.sx) * float64(w)
	for i, o := range m.objects {
		x, y := m.objectAt(i, s)
		px, py := toPx(x, y)
		rx, ry := o.rx*scale, o.ry*scale*0.8
		lift := 0.0
		if i == m.carried && m.grip[s] == 1 {
			lift = pos[2] * 0.15 * float64(h)
		}
		shade(img, px+rx*0.25, py+ry*0.35+lift*0.3, rx*1.05, ry*1.05, o.round)
		paintObject(img, px, py-lift, rx, ry, o.round, o.col)
	}
	if c.wrist {
		// The gripper's fingers, fixed in the wrist camera's view.
		open := (1 - m.grip[s]) * 0.12
		fw, fh := 0.08*float64(w), 0.3*float64(h)
		for _, fx := range []float64{0.5 - 0.1 - open, 0.5 + 0.1 + open} {
			paintObject(img, fx*float64(w), float64(h)-fh*0.4, fw/2, fh/2, false, [3]float64{70, 72, 78})
		}
	} else {
		ex, ey := toPx(pos[0], pos[1])
		ey -= pos[2] * 0.25 * float64(h)
		bx, by := float64(w)*0.5, -0.1*float64(h)
		radius := (0.035 + 0.02*pos[2]) * float64(min(w, h))
		paintArm(img, bx, by, ex, ey, radius)
		open := (1 - m.grip[s]) * radius * 0.8
		for _, d := range []float64{-1, 1} {
			paintObject(img, ex+d*(radius*0.7+open), ey+radius*0.9, radius*0.3, radius*0.7, false, [3]float64{55, 55, 60})
		}
	}

	// Texture, flicker and sensor noise over everything.
	gain := int32(256 + 5*math.Sin(0.7*float64(s)+float64(c.noiseSeed%7)))
	nr := xorshift{s: mix64(c.noiseSeed^uint64(s)*0x9e3779b97f4a7c15) | 1}
	for y := 0; y < h; y++ {
		row := pix[y*img.Stride : y*img.Stride+4*w]
		tex := c.tex[(y+oy)*c.texW+ox:]
		var bits uint64
		for x := 0; x < w; x++ {
			if x&1 == 0 {
				bits = nr.next() // six noise bytes for two pixels
			}
			mul := int32(tex[x]) * gain >> 8
			p := row[4*x : 4*x+3 : 4*x+3]
			p[0] = clampInt(int32(p[0])*mul>>8 + int32(noiseTable[bits&0xff]))
			p[1] = clampInt(int32(p[1])*mul>>8 + int32(noiseTable[bits>>8&0xff]))
			p[2] = clampInt(int32(p[2])*mul>>8 + int32(noiseTable[bits>>16&0xff]))
			bits >>= 24
		}
	}
}

// fold maps v into [0, n] like a triangle wave, so a pan that keeps going
// one way turns back at the edge of the texture.
func fold(v, n int) int {
	if n <= 0 {
		return 0
	}
	v += n / 2
	p := 2 * n
	v %= p
	if v < 0 {
		v += p
	}
	if v > n {
		v = p - v
	}
	return v
}

func clampInt(v int32) uint8 {
	return uint8(min(max(v, 0), 255))
}

func clamp8(v float64) uint8 {
	return uint8(min(max(v, 0), 255))
}

// bbox clips the box around (cx, cy) ± (rx, ry) to the image.
func bbox(img *image.RGBA, cx, cy, rx, ry float64) (x0, y0, x1, y1 int) {
	b := img.Rect
	x0 = max(int(math.Floor(cx-rx)), b.Min.X)
	y0 = max(int(math.Floor(cy-ry)), b.Min.Y)
	x1 = min(int(math.Ceil(cx+rx))+1, b.Max.X)
	y1 = min(int(math.Ceil(cy+ry))+1, b.Max.Y)
	return
}

// paintObject fills an ellipse or a box, shaded brighter towards a
// highlight up and to the left of its centre.
func paintObject(img *image.RGBA, cx, cy, rx, ry float64, round bool, col [3]float64) {
	if rx < 0.5 || ry < 0.5 {
		return
	}
	x0, y0, x1, y1 := bbox(img, cx, cy, rx, ry)
	for y := y0; y < y1; y++ {
		dy := (float64(y) + 0.5 - cy) / ry
		row := img.Pix[y*img.Stride:]
		for x := x0; x < x1; x++ {
			dx := (float64(x) + 0.5 - cx) / rx
			var d float64
			if round {
				d = dx*dx + dy*dy
			} else {
				d = max(dx*dx, dy*dy)
			}
			if d > 1 {
				continue
			}
			hx, hy := dx+0.35, dy+0.35
			f := 1.15 - 0.45*(hx*hx+hy*hy)/2.4
			row[4*x] = clamp8(col[0] * f)
			row[4*x+1] = clamp8(col[1] * f)
			row[4*x+2] = clamp8(col[2] * f)
		}
	}
}

// shade darkens an ellipse or box: a soft shadow on the table.
func shade(img *image.RGBA, cx, cy, rx, ry float64, round bool) {
	if rx < 0.5 || ry < 0.5 {
		return
	}
	x0, y0, x1, y1 := bbox(img, cx, cy, rx, ry)
	for y := y0; y < y1; y++ {
		dy := (float64(y) + 0.5 - cy) / ry
		row := img.Pix[y*img.Stride:]
		for x := x0; x < x1; x++ {
			dx := (float64(x) + 0.5 - cx) / rx
			d := dx*dx + dy*dy
			if !round {
				d = max(dx*dx, dy*dy)
			}
			if d > 1 {
				continue
			}
			k := uint32(150 + 100*d) // 150/256 at the centre, fading out
			for ch := 0; ch < 3; ch++ {
				row[4*x+ch] = uint8(uint32(row[4*x+ch]) * k >> 8)
			}
		}
	}
}

// paintArm draws a grey capsule from (ax, ay) to (bx, by), shaded as a
// cylinder.
func paintArm(img *image.RGBA, ax, ay, bx, by, radius float64) {
	minX, maxX := min(ax, bx), max(ax, bx)
	minY, maxY := min(ay, by), max(ay, by)
	x0, y0, x1, y1 := bbox(img, (minX+maxX)/2, (minY+maxY)/2, (maxX-minX)/2+radius, (maxY-minY)/2+radius)
	vx, vy := bx-ax, by-ay
	l2 := vx*vx + vy*vy
	for y := y0; y < y1; y++ {
		row := img.Pix[y*img.Stride:]
		py := float64(y) + 0.5
		for x := x0; x < x1; x++ {
			px := float64(x) + 0.5
			t := 0.0
			if l2 > 0 {
				t = min(max(((px-ax)*vx+(py-ay)*vy)/l2, 0), 1)
			}
			dx, dy := px-(ax+t*vx), py-(ay+t*vy)
			d := math.Sqrt(dx*dx+dy*dy) / radius
			if d > 1 {
				continue
			}
			v := 200 - 110*d*d
			row[4*x] = clamp8(v)
			row[4*x+1] = clamp8(v + 3)
			row[4*x+2] = clamp8(v + 8)
		}
	}
}

// xorshift is the per-frame sensor noise generator: the cheapest stream
// that still looks random to a codec.
type xorshift struct{ s uint64 }

func (x *xorshift) next() uint64 {
	x.s ^= x.s << 13
	x.s ^= x.s >> 7
	x.s ^= x.s << 17
	return x.s
}
