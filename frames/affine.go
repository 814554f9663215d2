package frames

// resizeAffine writes what resize(d, src, sb, db) would write into the
// frame (zeros outside db), moved by a: torchvision's F.affine with
// nearest sampling over the resized frame, fused with the resize.
//
// torchvision builds a sampling grid (_gen_affine_grid): output pixel
// (x, y) has base coordinates (x − W/2 + 0.5, y − H/2 + 0.5), multiplied
// by the inverse matrix over (W/2, H/2) into [−1, 1] coordinates, which
// grid_sample (align_corners=False) maps back to ix = (gx + 1)·W/2 − 0.5
// and rounds half to even. All of it is float32, recomputed here in the
// same order. The output pixel then takes the resized frame's pixel
// (round(ix), round(iy)), which is one evaluation of the bilinear resize
// at that point: its two taps, four source pixels, the same float32
// operations as the resize (so the value equals the resized frame's bit
// for bit). No resized frame is made; where the point falls outside the
// frame the output is 0.
func (r *resizer) resizeAffine(d frameDst, src rgbImage, sb, db box, a Affine) {
	r.prepare(sb.W, sb.H, db.W, db.H)
	W, H := d.W, d.H
	m := a.Matrix(W, H)
	var th [6]float32
	for i, v := range m {
		th[i] = float32(v)
	}
	hw, hh := float32(0.5*float64(W)), float32(0.5*float64(H))
	// rescaled_theta = thetaᵀ / [W/2, H/2]: gx = x·rx[0] + y·rx[1] + rx[2].
	rx := [3]float32{th[0] / hw, th[1] / hw, th[2] / hw}
	ry := [3]float32{th[3] / hh, th[4] / hh, th[5] / hh}
	// grid_sample's unnormalize: (g + 1)·(size/2) − 0.5.
	ux, uy := float32(W)/2, float32(H)/2

	if cap(r.colX) < W {
		r.colX = make([]float32, W)
		r.colY = make([]float32, W)
	}
	colX, colY := r.colX[:W], r.colY[:W]
	for x := range W {
		xb := float32(x) - float32(W)*0.5 + 0.5
		colX[x], colY[x] = float32(xb*rx[0]), float32(xb*ry[0])
	}
	f := &u8f
	pix := src.Pix
	for y := range H {
		yb := float32(y) - float32(H)*0.5 + 0.5
		rowX, rowY := float32(yb*rx[1]), float32(yb*ry[1])
		for x := range W {
			gx := float32(colX[x]+rowX) + rx[2]
			gy := float32(colY[x]+rowY) + ry[2]
			ix := float32(float32(gx+1)*ux) - 0.5
			iy := float32(float32(gy+1)*uy) - 0.5
			// Round half to even (grid_sample's nearbyint): adding and
			// taking away 1.5·2²³ rounds a float32 below 2²² that way.
			qx := int(float32(float32(ix+12582912)-12582912)) - db.X
			qy := int(float32(float32(iy+12582912)-12582912)) - db.Y
			var v0, v1, v2 uint8
			if qx >= 0 && qx < db.W && qy >= 0 && qy < db.H {
				tx, ty := r.xs[qx], r.ys[qy]
				lo := pix[(sb.Y+int(ty.Lo))*src.Stride+sb.X*3:]
				hi := pix[(sb.Y+int(ty.Hi))*src.Stride+sb.X*3:]
				a, b := int(tx.Lo), int(tx.Hi)
				l0, l1 := lo[a:a+3:a+3], lo[b:b+3:b+3]
				h0, h1 := hi[a:a+3:a+3], hi[b:b+3:b+3]
				xl, yl := tx.Lerp, ty.Lerp
				top := f[l0[0]] + float32((f[l1[0]]-f[l0[0]])*xl)
				bot := f[h0[0]] + float32((f[h1[0]]-f[h0[0]])*xl)
				v0 = uint8(int32(top + float32((bot-top)*yl)))
				top = f[l0[1]] + float32((f[l1[1]]-f[l0[1]])*xl)
				bot = f[h0[1]] + float32((f[h1[1]]-f[h0[1]])*xl)
				v1 = uint8(int32(top + float32((bot-top)*yl)))
				top = f[l0[2]] + float32((f[l1[2]]-f[l0[2]])*xl)
				bot = f[h0[2]] + float32((f[h1[2]]-f[h0[2]])*xl)
				v2 = uint8(int32(top + float32((bot-top)*yl)))
			}
			if d.layout == BFHWC {
				o := d.base + (y*W+x)*3
				px := d.buf[o : o+3 : o+3]
				px[0], px[1], px[2] = v0, v1, v2
				continue
			}
			o := d.base + y*W + x
			d.buf[o], d.buf[o+d.planeStep], d.buf[o+2*d.planeStep] = v0, v1, v2
		}
	}
}
