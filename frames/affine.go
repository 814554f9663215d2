package frames

import "github.com/oxefs/oxefs/frames/bilinear"

// The affine: torchvision's F.affine with nearest sampling over the
// resized frame, fused with the resize.
//
// torchvision builds a sampling grid (_gen_affine_grid): output pixel
// (x, y) has base coordinates (x − W/2 + 0.5, y − H/2 + 0.5), multiplied
// by the inverse matrix over (W/2, H/2) into [−1, 1] coordinates, which
// grid_sample (align_corners=False) maps back to ix = (gx + 1)·W/2 − 0.5
// and rounds half to even. All of it is float32, recomputed here in the
// same order (grid.at). The output pixel then takes the resized frame's
// pixel (round(ix), round(iy)); where that is outside the frame, 0.
//
// Two ways give that pixel, with the same bytes. The banded one, for a
// translation and a small rotation (a few degrees, the augmentations'
// range): the output rows, taken in order, sample resized rows in a band
// that only moves down and is at most affineBand rows tall, so those rows
// are resized (by the vectorised kernel, each once) into a ring of
// affineBand rows and the output pixels copied from it. The pointwise
// one, for any other affine: each output pixel evaluates the bilinear
// resize at its one point (two taps, four source pixels, the resize's
// float32 operations, so the value equals the resized frame's bit for
// bit). Neither makes a resized frame.

// affineBand is the most resized rows the banded affine holds at once: a
// power of two, so that a row's place in the ring is a mask.
const affineBand = 64

// grid is torchvision's sampling grid for one W×H frame.
type grid struct {
	W, H       int
	rx, ry     [3]float32 // rescaled theta: gx = xb·rx[0] + yb·rx[1] + rx[2]
	ux, uy     float32    // grid_sample's unnormalize: (g + 1)·(size/2) − 0.5
	colX, colY []float32  // xb·rx[0], xb·ry[0] for each column
}

// setGrid computes the grid of a over a W×H frame, with the column terms
// in r's reusable buffers.
func (r *resizer) setGrid(a Affine, W, H int) *grid {
	m := a.Matrix(W, H)
	var th [6]float32
	for i, v := range m {
		th[i] = float32(v)
	}
	hw, hh := float32(0.5*float64(W)), float32(0.5*float64(H))
	g := &r.grid
	*g = grid{
		W: W, H: H,
		rx: [3]float32{th[0] / hw, th[1] / hw, th[2] / hw},
		ry: [3]float32{th[3] / hh, th[4] / hh, th[5] / hh},
		ux: float32(W) / 2, uy: float32(H) / 2,
		colX: r.grid.colX, colY: r.grid.colY,
	}
	if cap(g.colX) < W {
		g.colX = make([]float32, W)
		g.colY = make([]float32, W)
	}
	g.colX, g.colY = g.colX[:W], g.colY[:W]
	for x := range W {
		xb := float32(x) - float32(W)*0.5 + 0.5
		g.colX[x], g.colY[x] = float32(xb*g.rx[0]), float32(xb*g.ry[0])
	}
	return g
}

// row returns output row y's terms: yb·rx[1], yb·ry[1].
func (g *grid) row(y int) (float32, float32) {
	yb := float32(y) - float32(g.H)*0.5 + 0.5
	return float32(yb * g.rx[1]), float32(yb * g.ry[1])
}

// at returns the input pixel that output pixel x of the row with terms
// rowX, rowY samples, rounded half to even: adding and taking away
// 1.5·2²³ rounds a float32 below 2²² that way, as grid_sample's nearbyint
// does.
func (g *grid) at(x int, rowX, rowY float32) (int, int) {
	gx := float32(g.colX[x]+rowX) + g.rx[2]
	gy := float32(g.colY[x]+rowY) + g.ry[2]
	ix := float32(float32(gx+1)*g.ux) - 0.5
	iy := float32(float32(gy+1)*g.uy) - 0.5
	return int(float32(float32(ix+12582912) - 12582912)), int(float32(float32(iy+12582912) - 12582912))
}

// resizeAffine writes what resize(d, src, sb, db) would write into the
// frame (zeros outside db), moved by a.
func (r *resizer) resizeAffine(d frameDst, src rgbImage, sb, db box, a Affine) {
	r.prepare(sb.W, sb.H, db.W, db.H)
	g := r.setGrid(a, d.W, d.H)
	if r.pointwise || !r.affineBanded(d, src, sb, db, g) {
		r.affinePointwise(d, src, sb, db, g)
	}
}

// put writes one output pixel.
func (d frameDst) put(x, y int, v0, v1, v2 uint8) {
	if d.layout == BFHWC {
		o := d.base + (y*d.W+x)*3
		px := d.buf[o : o+3 : o+3]
		px[0], px[1], px[2] = v0, v1, v2
		return
	}
	o := d.base + y*d.W + x
	d.buf[o], d.buf[o+d.planeStep], d.buf[o+2*d.planeStep] = v0, v1, v2
}

// affinePointwise evaluates the resize at each output pixel's point.
func (r *resizer) affinePointwise(d frameDst, src rgbImage, sb, db box, g *grid) {
	for y := range d.H {
		rowX, rowY := g.row(y)
		for x := range d.W {
			qx, qy := g.at(x, rowX, rowY)
			v0, v1, v2 := r.point(src, sb, qx-db.X, qy-db.Y, db)
			d.put(x, y, v0, v1, v2)
		}
	}
}

// point is the resized frame's pixel (qx, qy) of box db (db's
// coordinates), 0 outside it: one evaluation of the bilinear resize.
func (r *resizer) point(src rgbImage, sb box, qx, qy int, db box) (uint8, uint8, uint8) {
	if qx < 0 || qx >= db.W || qy < 0 || qy >= db.H {
		return 0, 0, 0
	}
	f := &u8f
	tx, ty := r.xs[qx], r.ys[qy]
	lo := src.Pix[(sb.Y+int(ty.Lo))*src.Stride+sb.X*3:]
	hi := src.Pix[(sb.Y+int(ty.Hi))*src.Stride+sb.X*3:]
	a, b := int(tx.Lo), int(tx.Hi)
	l0, l1 := lo[a:a+3:a+3], lo[b:b+3:b+3]
	h0, h1 := hi[a:a+3:a+3], hi[b:b+3:b+3]
	xl, yl := tx.Lerp, ty.Lerp
	top := f[l0[0]] + float32((f[l1[0]]-f[l0[0]])*xl)
	bot := f[h0[0]] + float32((f[h1[0]]-f[h0[0]])*xl)
	v0 := uint8(int32(top + float32((bot-top)*yl)))
	top = f[l0[1]] + float32((f[l1[1]]-f[l0[1]])*xl)
	bot = f[h0[1]] + float32((f[h1[1]]-f[h0[1]])*xl)
	v1 := uint8(int32(top + float32((bot-top)*yl)))
	top = f[l0[2]] + float32((f[l1[2]]-f[l0[2]])*xl)
	bot = f[h0[2]] + float32((f[h1[2]]-f[h0[2]])*xl)
	v2 := uint8(int32(top + float32((bot-top)*yl)))
	return v0, v1, v2
}

// affineBanded is the banded affine; it reports false, having written
// nothing, when the affine's band is not one (rows sampled higher up as
// the output goes down, or more than affineBand rows for one output row).
func (r *resizer) affineBanded(d frameDst, src rgbImage, sb, db box, g *grid) bool {
	// Each output row's band of resized rows, from its two end pixels
	// (the sampled row is linear in x up to float32 rounding: one row of
	// margin), in db's coordinates.
	if cap(r.bandLo) < d.H {
		r.bandLo = make([]int32, d.H)
		r.bandHi = make([]int32, d.H)
	}
	lo, hi := r.bandLo[:d.H], r.bandHi[:d.H]
	for y := range d.H {
		rowX, rowY := g.row(y)
		_, a := g.at(0, rowX, rowY)
		_, b := g.at(d.W-1, rowX, rowY)
		l, h := min(a, b)-1-db.Y, max(a, b)+1-db.Y
		if h-l+1 > affineBand || (y > 0 && (l < int(lo[y-1]) || h < int(hi[y-1]))) {
			return false
		}
		lo[y], hi[y] = int32(l), int32(h)
	}
	rowBytes := db.W * 3
	if cap(r.band) < affineBand*rowBytes {
		r.band = make([]byte, affineBand*rowBytes)
	}
	band := r.band[:affineBand*rowBytes]
	next := 0 // the next resized row to compute
	for y := range d.H {
		l, h := max(int(lo[y]), 0), min(int(hi[y]), db.H-1)
		next = max(next, l)
		if next <= h {
			// Resize ahead, as far as the ring holds without overwriting
			// a row the band still needs (rows below l are done with),
			// in runs that do not wrap: few calls into the kernel.
			end := min(db.H-1, l+affineBand-1)
			for next <= end {
				s := next & (affineBand - 1)
				n := min(end-next+1, affineBand-s)
				r.resizedRows(src, sb, next, n, band[s*rowBytes:(s+n)*rowBytes])
				next += n
			}
		}
		rowX, rowY := g.row(y)
		var orow []byte // the output row, when the layout is packed
		if d.layout == BFHWC {
			o := d.base + y*d.W*3
			orow = d.buf[o : o+d.W*3 : o+d.W*3]
		}
		for x := range d.W {
			qx, qy := g.at(x, rowX, rowY)
			qx, qy = qx-db.X, qy-db.Y
			var v0, v1, v2 uint8
			switch {
			case qx < 0 || qx >= db.W || qy < 0 || qy >= db.H:
			case qy >= l && qy <= h:
				o := (qy&(affineBand-1))*rowBytes + qx*3
				px := band[o : o+3 : o+3]
				v0, v1, v2 = px[0], px[1], px[2]
			default: // outside the band its ends gave: not expected, still exact
				v0, v1, v2 = r.point(src, sb, qx, qy, db)
			}
			if orow != nil {
				px := orow[x*3 : x*3+3 : x*3+3]
				px[0], px[1], px[2] = v0, v1, v2
				continue
			}
			d.put(x, y, v0, v1, v2)
		}
	}
	return true
}

// resizedRows writes rows q to q+n−1 of the resized box (taps r.xs,
// r.ys[q:q+n]) into out, packed RGB, one after the other: the resize's
// own computation for those rows.
func (r *resizer) resizedRows(src rgbImage, sb box, q, n int, out []byte) {
	k := r.kernel
	if k == 0 {
		k = defaultKernel
	}
	if k != goLoop {
		bilinear.Resize(k, &r.scratch, &bilinear.Frame{
			Src:       src.Pix[sb.Y*src.Stride+sb.X*3:],
			SrcStride: src.Stride,
			SW:        sb.W,
			SH:        sb.H,
			XS:        r.xs,
			YS:        r.ys[q : q+n],
			Dst:       out,
			DstStride: len(out) / n,
		})
		return
	}
	r.prepareRows(len(r.xs))
	w := len(r.xs) * 3
	for j, t := range r.ys[q : q+n] {
		top := r.row(src, sb, int(t.Lo), int(t.Hi))
		bot := top
		if t.Hi != t.Lo && t.Lerp != 0 {
			bot = r.row(src, sb, int(t.Hi), int(t.Lo))
		}
		top, bot = top[:w:w], bot[:w:w]
		o := out[j*w : (j+1)*w : (j+1)*w]
		for i, v := range top {
			o[i] = uint8(int32(v + float32((bot[i]-v)*t.Lerp)))
		}
	}
}
