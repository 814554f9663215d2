package av

import (
	"fmt"
	"sync"
)

// matrix is one row of libswscale's ff_yuv2rgb_coeffs: crv, cbu, cgu, cgv
// in 16.16 fixed point (R = Y + crv·V, B = Y + cbu·U, G = Y − cgu·U − cgv·V
// for full-scale Y, U, V).
type matrix [4]int64

var (
	bt601    = matrix{104597, 132201, 25675, 53279}
	bt709    = matrix{117489, 138438, 13975, 34925}
	fcc      = matrix{104448, 132798, 24759, 53109}
	smpte240 = matrix{117579, 136230, 16907, 35559}
	bt2020   = matrix{110013, 140363, 12277, 42626}
)

// matrixOf is sws_getCoefficients for the colour spaces swscale converts;
// the others (reserved, YCgCo, BT.2020 CL, ICtCp...) fail in PyAV too.
func matrixOf(cs ColorSpace) (matrix, bool) {
	switch cs {
	case ColorSpaceRGB, ColorSpaceUnspecified, ColorSpaceBT470BG, ColorSpaceSMPTE170M:
		return bt601, true
	case ColorSpaceBT709:
		return bt709, true
	case ColorSpaceFCC:
		return fcc, true
	case ColorSpaceSMPTE240M:
		return smpte240, true
	case ColorSpaceBT2020NCL:
		return bt2020, true
	}
	return matrix{}, false
}

// rgbTables holds each term of the conversion for every sample value, as
// the SIMD converter computes it.
type rgbTables struct {
	y, vr, ub, ug, vg [256]int32
}

type tableKey struct {
	m    matrix
	full bool
}

var tableCache sync.Map // tableKey → *rgbTables

// roundToInt16 is libswscale's: a 16.16 value rounded to an int16.
func roundToInt16(f int64) int64 {
	r := (f + 1<<15) >> 16
	return min(max(r, -0x8000), 0x7FFF)
}

// tablesFor derives the SIMD converter's int16 coefficients as
// ff_yuv2rgb_c_init_tables does (default brightness, contrast and
// saturation) and tabulates each product term.
func tablesFor(m matrix, full bool) *rgbTables {
	k := tableKey{m, full}
	if t, ok := tableCache.Load(k); ok {
		return t.(*rgbTables)
	}
	crv, cbu, cgu, cgv := m[0], m[1], -m[2], -m[3]
	cy, oy := int64(1<<16), int64(0)
	if full {
		// C integer division, truncating towards zero.
		crv, cbu, cgu, cgv = crv*224/255, cbu*224/255, cgu*224/255, cgv*224/255
	} else {
		cy = cy * 255 / 219
		oy = 16 << 16
	}
	// contrast = saturation = 1<<16: (c·contrast)>>16 and
	// (c·contrast·saturation)>>32 leave every coefficient as it is.
	yc, yo := roundToInt16(cy<<13), roundToInt16(oy<<3)
	vr, ub := roundToInt16(crv<<13), roundToInt16(cbu<<13)
	vg, ug := roundToInt16(cgv<<13), roundToInt16(cgu<<13)

	t := new(rgbTables)
	for i := range 256 {
		v := int64(i)
		// pmulhw keeps the high 16 bits of the 32-bit product: an
		// arithmetic shift, rounding towards −∞. psubw wraps and psubsw
		// saturates, but neither can for 8-bit input.
		t.y[i] = int32((int64(int16(v<<3-yo)) * yc) >> 16)
		c := v<<3 - 1024
		t.vr[i] = int32((c * vr) >> 16)
		t.ub[i] = int32((c * ub) >> 16)
		t.ug[i] = int32((c * ug) >> 16)
		t.vg[i] = int32((c * vg) >> 16)
	}
	v, _ := tableCache.LoadOrStore(k, t)
	return v.(*rgbTables)
}

// clampOffset shifts a channel sum into clampTable's index range: the sums
// lie in [−293, 552] for every matrix and range (Y term −19 to 278, chroma
// terms at most ±274).
const clampOffset = 384

// clampTable[v+clampOffset] is v clamped to [0, 255] (packuswb).
var clampTable = func() (t [1024]byte) {
	for i := range t {
		t[i] = byte(min(max(i-clampOffset, 0), 255))
	}
	return t
}()

// RGB converts the frame into dst as packed RGB24, Width·Height·3 bytes,
// rows 3·Width bytes apart, with the arithmetic of PyAV's
// to_ndarray(format="rgb24") on x86-64 (see the package documentation). It
// handles 8-bit 4:2:0 and 4:2:2 frames of even height, in any colour space
// swscale converts; other frames are an error.
func (f *Frame) RGB(dst []byte) error {
	w, h := f.Width, f.Height
	if len(dst) < w*h*3 {
		return fmt.Errorf("av: RGB destination of %d bytes, need %d for %dx%d", len(dst), w*h*3, w, h)
	}
	var yshift int
	switch f.Format {
	case YUV420P, YUVJ420P:
		yshift = 1
	case YUV422P, YUVJ422P:
	default:
		name := f.formatName
		if name == "" {
			name = f.Format.String()
		}
		return fmt.Errorf("av: RGB of a %s frame is not supported (only yuv420p, yuvj420p, yuv422p, yuvj422p)", name)
	}
	if h%2 != 0 {
		return fmt.Errorf("av: RGB of a frame of odd height %d is not supported: swscale converts it on its scaling path, which this package does not reproduce", h)
	}
	m, ok := matrixOf(f.ColorSpace)
	if !ok {
		return fmt.Errorf("av: RGB of colour space %d is not supported (swscale refuses it too)", int(f.ColorSpace))
	}
	cw, ch := (w+1)/2, h>>yshift
	for i, wh := range [3][2]int{{w, h}, {cw, ch}, {cw, ch}} {
		if f.Strides[i] < wh[0] || len(f.Planes[i]) < f.Strides[i]*(wh[1]-1)+wh[0] {
			return fmt.Errorf("av: RGB: plane %d of %d bytes, stride %d, too small for %dx%d", i, len(f.Planes[i]), f.Strides[i], wh[0], wh[1])
		}
	}
	full := f.FullRange || f.Format == YUVJ420P || f.Format == YUVJ422P
	t := tablesFor(m, full)
	ct := &clampTable
	for row := range h {
		py := f.Planes[0][row*f.Strides[0]:][:w]
		cr := row >> yshift
		pu := f.Planes[1][cr*f.Strides[1]:][:cw]
		pv := f.Planes[2][cr*f.Strides[2]:][:cw]
		out := dst[row*w*3:][: w*3 : w*3]
		for x := 0; x+1 < w; x += 2 {
			u, v := pu[x>>1], pv[x>>1]
			vr := t.vr[v] + clampOffset
			ub := t.ub[u] + clampOffset
			g := t.ug[u] + t.vg[v] + clampOffset
			y0, y1 := t.y[py[x]], t.y[py[x+1]]
			o := out[x*3 : x*3+6 : x*3+6]
			o[0] = ct[(y0+vr)&1023]
			o[1] = ct[(y0+g)&1023]
			o[2] = ct[(y0+ub)&1023]
			o[3] = ct[(y1+vr)&1023]
			o[4] = ct[(y1+g)&1023]
			o[5] = ct[(y1+ub)&1023]
		}
		if w%2 == 1 {
			x := w - 1
			u, v := pu[x>>1], pv[x>>1]
			y0 := t.y[py[x]]
			o := out[x*3 : x*3+3]
			o[0] = ct[(y0+t.vr[v]+clampOffset)&1023]
			o[1] = ct[(y0+t.ug[u]+t.vg[v]+clampOffset)&1023]
			o[2] = ct[(y0+t.ub[u]+clampOffset)&1023]
		}
	}
	return nil
}
