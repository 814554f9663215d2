package frames

import "image"

// ycbcrFancy converts image/jpeg's 4:2:0, 4:2:2 and 4:4:0 planes to RGB
// with libjpeg's "fancy" chroma upsampling, which TensorFlow's decoder uses,
// instead of the nearest-neighbour chroma of image.YCbCr.At: a triangle
// filter in which each chroma sample weighs 3/4 at its own position and 1/4
// at its neighbour's, edges replicated, rounding biased alternately down
// and up. On the fixtures this brings the largest difference from
// TensorFlow from 33 levels to 9; what remains comes from image/jpeg's
// accurate IDCT where TensorFlow uses libjpeg's fast one. The colour
// conversion is libjpeg's (yccToRGB). rows is scratch. It converts nothing and reports false for other
// ratios and for chroma planes 2 samples wide or less (where libjpeg
// replicates instead).
func ycbcrFancy(dst []byte, m *image.YCbCr, rows *[]byte) bool {
	r := m.Rect
	w, h := r.Dx(), r.Dy()
	var horiz, vert bool
	switch m.SubsampleRatio {
	case image.YCbCrSubsampleRatio420:
		horiz, vert = true, true
	case image.YCbCrSubsampleRatio422:
		horiz = true
	case image.YCbCrSubsampleRatio440:
		vert = true
	default:
		return false
	}
	cw, ch := w, h // chroma plane size
	if horiz {
		cw = (w + 1) / 2
	}
	if vert {
		ch = (h + 1) / 2
	}
	if r.Min != (image.Point{}) || cw <= 2 {
		return false
	}
	if cap(*rows) < 4*cw {
		*rows = make([]byte, 4*cw)
	}
	cb, cr := (*rows)[:2*cw], (*rows)[2*cw:4*cw]
	for y := range h {
		cy, ny := y, y // the chroma row and its vertical neighbour
		if vert {
			cy = y / 2
			if y%2 == 0 {
				ny = max(cy-1, 0)
			} else {
				ny = min(cy+1, ch-1)
			}
		}
		cbRow, cbNbr := m.Cb[cy*m.CStride:cy*m.CStride+cw], m.Cb[ny*m.CStride:ny*m.CStride+cw]
		crRow, crNbr := m.Cr[cy*m.CStride:cy*m.CStride+cw], m.Cr[ny*m.CStride:ny*m.CStride+cw]
		switch {
		case horiz:
			widen(cb, cbRow, cbNbr, vert)
			widen(cr, crRow, crNbr, vert)
		default:
			bias := int32(1 + y%2)
			blend(cb, cbRow, cbNbr, bias)
			blend(cr, crRow, crNbr, bias)
		}
		ys := m.Y[y*m.YStride : y*m.YStride+w]
		out := dst[y*w*3 : (y+1)*w*3]
		for x, yv := range ys {
			out[3*x], out[3*x+1], out[3*x+2] = yccToRGB(yv, cb[x], cr[x])
		}
	}
	return true
}

// widen doubles one chroma row horizontally, as libjpeg's h2v1 fancy
// upsampler does; with vert it first blends the row 3:1 with its vertical
// neighbour, keeping the sums unrounded, and rounds once at the end, as
// the h2v2 upsampler does.
func widen(out, row, nbr []byte, vert bool) {
	n := len(row)
	if vert {
		col := func(i int) int32 { return 3*int32(row[i]) + int32(nbr[i]) }
		out[0] = byte((col(0)*4 + 8) >> 4)
		out[1] = byte((col(0)*3 + col(1) + 7) >> 4)
		for i := 1; i < n-1; i++ {
			c := col(i)
			out[2*i] = byte((c*3 + col(i-1) + 8) >> 4)
			out[2*i+1] = byte((c*3 + col(i+1) + 7) >> 4)
		}
		c := col(n - 1)
		out[2*n-2] = byte((c*3 + col(n-2) + 8) >> 4)
		out[2*n-1] = byte((c*4 + 7) >> 4)
		return
	}
	col := func(i int) int32 { return int32(row[i]) }
	out[0] = row[0]
	out[1] = byte((col(0)*3 + col(1) + 2) >> 2)
	for i := 1; i < n-1; i++ {
		c := col(i)
		out[2*i] = byte((c*3 + col(i-1) + 1) >> 2)
		out[2*i+1] = byte((c*3 + col(i+1) + 2) >> 2)
	}
	out[2*n-2] = byte((col(n-1)*3 + col(n-2) + 1) >> 2)
	out[2*n-1] = row[n-1]
}

// blend is libjpeg's h1v2 fancy upsampling of one output row: 3:1 with the
// vertical neighbour, bias 1 on even rows and 2 on odd ones.
func blend(out, row, nbr []byte, bias int32) {
	for i, v := range row {
		out[i] = byte((3*int32(v) + int32(nbr[i]) + bias) >> 2)
	}
}

// yccToRGB is libjpeg's JFIF YCbCr → RGB conversion, in 16-bit fixed point
// with its rounding: R = Y + 1.402·Cr', G = Y − 0.34414·Cb' − 0.71414·Cr',
// B = Y + 1.772·Cb' (Cb' = Cb−128, Cr' = Cr−128), the R and B terms and the
// G sum rounded by adding ½ before the shift, then clamped; by table, as
// libjpeg does. Go's color.YCbCrToRGB rounds with a term that grows with Y
// instead, and is one level off for some values.
func yccToRGB(y, cb, cr uint8) (uint8, uint8, uint8) {
	t := &ycc
	yy := int(y) + 384
	r := (yy + int(t.crR[cr])) & 1023 // the mask only proves the index in range
	g := (yy + int((t.cbG[cb]+t.crG[cr])>>16)) & 1023
	b := (yy + int(t.cbB[cb])) & 1023
	return t.limit[r], t.limit[g], t.limit[b]
}

var ycc = func() (t struct {
	crR, cbB, cbG, crG [256]int32
	limit              [1024]uint8 // v+384 → v clamped to [0, 255]
}) {
	const half = 1 << 15
	for i := range 256 {
		x := int32(i) - 128
		t.crR[i] = (91881*x + half) >> 16  // FIX(1.40200) = 91881
		t.cbB[i] = (116130*x + half) >> 16 // FIX(1.77200) = 116130
		t.cbG[i] = -22554*x + half         // FIX(0.34414) = 22554
		t.crG[i] = -46802 * x              // FIX(0.71414) = 46802
	}
	for i := range t.limit {
		t.limit[i] = uint8(min(max(i-384, 0), 255))
	}
	return t
}()
