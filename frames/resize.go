package frames

import (
	"math"

	"github.com/oxefs/oxefs/frames/bilinear"
	"github.com/oxefs/oxefs/frames/simd"
)

// rgbImage is a decoded frame: packed 8-bit RGB, Stride bytes per row.
// Encoded is the size the encoded image declares, larger than W×H when it
// was decoded at a DCT scale (DecodeFast).
type rgbImage struct {
	Pix     []byte
	W, H    int
	Stride  int
	Encoded Size
}

// box is a rectangle: columns [X, X+W), rows [Y, Y+H).
type box struct{ X, Y, W, H int }

// place returns which part of a w×h image is resized into which part of an
// outW×outH frame under mode (see ResizeMode).
func place(mode ResizeMode, w, h, outW, outH int) (src, dst box) {
	src = box{0, 0, w, h}
	dst = box{0, 0, outW, outH}
	switch mode {
	case Crop:
		// keras.utils.smart_resize: int(w·outH/outW) is integer division
		// for the sizes that occur (the float quotient of two integers
		// below 2^24 never rounds up to the next integer).
		ch := min(max(w*outH/outW, 1), h)
		cw := min(max(h*outW/outH, 1), w)
		src = box{(w - cw) / 2, (h - ch) / 2, cw, ch}
	case Pad:
		// tf.image.resize_with_pad, in float32 as TensorFlow computes it.
		fw, fh := float32(w), float32(h)
		ftw, fth := float32(outW), float32(outH)
		ratio := max(fw/ftw, fh/fth)
		rh, rw := fh/ratio, fw/ratio
		dh := min(max(int(math.Floor(float64(rh))), 1), outH)
		dw := min(max(int(math.Floor(float64(rw))), 1), outW)
		py := max(int(math.Floor(float64((fth-rh)/2))), 0)
		px := max(int(math.Floor(float64((ftw-rw)/2))), 0)
		py, px = min(py, outH-dh), min(px, outW-dw)
		dst = box{px, py, dw, dh}
	}
	return src, dst
}

// frameDst is frame f of a sample's slot of F frames of H×W in a layout:
// BFHWC [F][H][W][3] or BCFHW [3][F][H][W].
type frameDst struct {
	buf       []byte
	layout    Layout
	f, F      int
	H, W      int
	base      int // offset of the frame (BFHWC) or of its channel-0 plane (BCFHW)
	planeStep int // BCFHW: distance between channel planes
}

func newFrameDst(buf []byte, layout Layout, f, F, H, W int) frameDst {
	d := frameDst{buf: buf, layout: layout, f: f, F: F, H: H, W: W}
	if layout == BCFHW {
		d.base = f * H * W
		d.planeStep = F * H * W
	} else {
		d.base = f * H * W * 3
	}
	return d
}

// interleaved returns the frame's bytes when the layout is BFHWC, so that
// a decoder can write the frame there directly.
func (d frameDst) interleaved() ([]byte, bool) {
	if d.layout != BFHWC {
		return nil, false
	}
	return d.buf[d.base : d.base+d.H*d.W*3], true
}

// zeroOutside clears every pixel of the frame outside b (pad mode's
// borders; the batch buffer holds old data).
func (d frameDst) zeroOutside(b box) {
	if b == (box{0, 0, d.W, d.H}) {
		return
	}
	if d.layout == BFHWC {
		fr := d.buf[d.base : d.base+d.H*d.W*3]
		clear(fr[:b.Y*d.W*3])
		clear(fr[(b.Y+b.H)*d.W*3:])
		for y := b.Y; y < b.Y+b.H; y++ {
			row := fr[y*d.W*3 : (y+1)*d.W*3]
			clear(row[:b.X*3])
			clear(row[(b.X+b.W)*3:])
		}
		return
	}
	for c := range 3 {
		p := d.buf[d.base+c*d.planeStep : d.base+c*d.planeStep+d.H*d.W]
		clear(p[:b.Y*d.W])
		clear(p[(b.Y+b.H)*d.W:])
		for y := b.Y; y < b.Y+b.H; y++ {
			row := p[y*d.W : (y+1)*d.W]
			clear(row[:b.X])
			clear(row[b.X+b.W:])
		}
	}
}

// copyFrom copies src's box sb into the frame's box db of the same size.
func (d frameDst) copyFrom(src rgbImage, sb, db box) {
	for y := range db.H {
		line := src.Pix[(sb.Y+y)*src.Stride+sb.X*3:]
		line = line[: db.W*3 : db.W*3]
		if d.layout == BFHWC {
			o := d.base + ((db.Y+y)*d.W+db.X)*3
			copy(d.buf[o:o+db.W*3], line)
			continue
		}
		o := d.base + (db.Y+y)*d.W + db.X
		p0 := d.buf[o : o+db.W]
		p1 := d.buf[o+d.planeStep : o+d.planeStep+db.W]
		p2 := d.buf[o+2*d.planeStep : o+2*d.planeStep+db.W]
		for x := range p0 {
			px := line[x*3 : x*3+3 : x*3+3]
			p0[x], p1[x], p2[x] = px[0], px[1], px[2]
		}
	}
}

// tap is TensorFlow's CachedInterpolation for one output coordinate: the
// two source coordinates (for columns, premultiplied by 3: byte offsets)
// and the weight of the upper one. The vectorised kernel reads the same
// table.
type tap = bilinear.Tap

// taps computes TensorFlow's compute_interpolation_weights with its
// HalfPixelScaler, in float32: scale = in/out, src = (i+0.5)·scale − 0.5,
// lo = max(⌊src⌋, 0), hi = min(⌈src⌉, in−1), lerp = src − ⌊src⌋. The
// explicit float32 conversions keep Go from fusing the multiply and the
// subtraction, which TensorFlow (built without FMA) rounds separately.
func taps(dst []tap, in, out int, mul uint32) []tap {
	scale := float32(in) / float32(out)
	dst = dst[:0]
	for i := range out {
		src := float32((float32(i)+0.5)*scale) - 0.5
		fl := float32(math.Floor(float64(src)))
		lo := min(max(int(fl), 0), in-1)
		hi := min(int(math.Ceil(float64(src))), in-1)
		hi = max(hi, 0)
		dst = append(dst, tap{Lo: uint32(lo) * mul, Hi: uint32(hi) * mul, Lerp: src - fl})
	}
	return dst
}

// resizer is TensorFlow's bilinear resize (ResizeBilinear,
// half_pixel_centers=True, float32) followed by tf.cast to uint8, with
// reusable tables. TensorFlow computes each output value as
//
//	top    = tl + (tr − tl)·xlerp
//	bottom = bl + (br − bl)·xlerp
//	out    = top + (bottom − top)·ylerp
//
// in float32. top depends only on the upper source row and bottom only on
// the lower one, so the resizer interpolates each source row horizontally
// once (into rows, a two-row cache) and then combines two of them: the
// same operations in the same order, bit for bit TensorFlow's values, with
// less work when rows are shared.
//
// Where package bilinear's vectorised kernel is built (cgo on amd64, see
// there) the resizer hands it the taps and the boxes, and the kernel runs
// this same algorithm several values at a time; the Go loop below is the
// portable path and the reference the kernel is tested against.
type resizer struct {
	// kernel picks the implementation: 0 is defaultKernel, goLoop the Go
	// loop, else a bilinear.Level.
	kernel bilinear.Level

	sw, sh, dw, dh int // the geometry xs and ys were computed for
	xs, ys         []tap
	rows           [2][]float32     // the Go loop's row cache
	rowOf          [2]int           // source row held by rows[i]; -1: none
	scratch        bilinear.Scratch // the kernel's

	// The affine's (affine.go): its sampling grid, each output row's band
	// of resized rows and the ring of those rows; pointwise forces the
	// pointwise way (tests).
	grid           grid
	bandLo, bandHi []int32
	band           []byte
	pointwise      bool
}

// goCode, as a kernel choice (resizer.kernel, colourer.kernel), forces
// the portable Go code over a C kernel; it is no simd.Level.
const goCode simd.Level = 255

// goLoop, as resizer.kernel, forces the portable Go loop.
const goLoop = goCode

// defaultKernel is what a resizer uses unless told otherwise: the fastest
// kernel this machine runs, else the Go loop (no cgo, not amd64, or built
// with the purego tag).
var defaultKernel = func() bilinear.Level {
	if l := bilinear.Best(); l != 0 {
		return l
	}
	return goLoop
}()

// footprint is the bytes the resizer's tables and buffers hold.
func (r *resizer) footprint() int {
	n := 4*(cap(r.rows[0])+cap(r.rows[1])) + 12*(cap(r.xs)+cap(r.ys)) + r.scratch.Footprint()
	return n + 4*(cap(r.grid.colX)+cap(r.grid.colY)+cap(r.bandLo)+cap(r.bandHi)) + cap(r.band)
}

func (r *resizer) prepare(sw, sh, dw, dh int) {
	r.rowOf = [2]int{-1, -1}
	if r.sw == sw && r.sh == sh && r.dw == dw && r.dh == dh && r.xs != nil {
		return
	}
	r.sw, r.sh, r.dw, r.dh = sw, sh, dw, dh
	r.xs = taps(r.xs, sw, dw, 3)
	r.ys = taps(r.ys, sh, dh, 1)
}

// prepareRows sizes the Go loop's row cache.
func (r *resizer) prepareRows(dw int) {
	for i := range r.rows {
		if cap(r.rows[i]) < dw*3 {
			r.rows[i] = make([]float32, dw*3)
		}
		r.rows[i] = r.rows[i][:dw*3]
	}
}

// row returns source row i (of the box) interpolated horizontally, keeping
// row keep in the cache.
func (r *resizer) row(src rgbImage, sb box, i, keep int) []float32 {
	if r.rowOf[0] == i {
		return r.rows[0]
	}
	if r.rowOf[1] == i {
		return r.rows[1]
	}
	slot := 0
	if r.rowOf[0] == keep {
		slot = 1
	}
	line := src.Pix[(sb.Y+i)*src.Stride+sb.X*3:]
	line = line[: sb.W*3 : sb.W*3]
	out := r.rows[slot][: len(r.xs)*3 : len(r.xs)*3]
	f := &u8f
	for x, t := range r.xs {
		lo, hi := int(t.Lo), int(t.Hi)
		_, _ = line[lo+2], line[hi+2] // one bounds check each for the three channels
		o := out[x*3 : x*3+3 : x*3+3]
		l := t.Lerp
		a0, a1, a2 := f[line[lo]], f[line[lo+1]], f[line[lo+2]]
		o[0] = a0 + float32((f[line[hi]]-a0)*l)
		o[1] = a1 + float32((f[line[hi+1]]-a1)*l)
		o[2] = a2 + float32((f[line[hi+2]]-a2)*l)
	}
	r.rowOf[slot] = i
	return out
}

// u8f converts a byte to float32 by table: a load is cheaper than the
// integer conversion on the resizer's hottest line.
var u8f = func() (t [256]float32) {
	for i := range t {
		t[i] = float32(i)
	}
	return t
}()

// resize writes src's box sb, resized, into the frame's box db.
func (r *resizer) resize(d frameDst, src rgbImage, sb, db box) {
	r.prepare(sb.W, sb.H, db.W, db.H)
	k := r.kernel
	if k == 0 {
		k = defaultKernel
	}
	if k != goLoop {
		r.resizeKernel(k, d, src, sb, db)
		return
	}
	r.prepareRows(db.W)
	n := db.W * 3
	for y, t := range r.ys {
		top := r.row(src, sb, int(t.Lo), int(t.Hi))
		bot := top
		if t.Hi != t.Lo && t.Lerp != 0 {
			bot = r.row(src, sb, int(t.Hi), int(t.Lo))
		}
		top, bot = top[:n:n], bot[:n:n]
		l := t.Lerp
		if d.layout == BFHWC {
			o := d.base + ((db.Y+y)*d.W+db.X)*3
			out := d.buf[o : o+n : o+n]
			if &bot[0] == &top[0] {
				// bottom = top: top + (top−top)·l = top exactly.
				for k, v := range top {
					out[k] = uint8(int32(v))
				}
				continue
			}
			for k, v := range top {
				out[k] = uint8(int32(v + float32((bot[k]-v)*l)))
			}
			continue
		}
		o := d.base + (db.Y+y)*d.W + db.X
		p0 := d.buf[o : o+db.W : o+db.W]
		p1 := d.buf[o+d.planeStep : o+d.planeStep+db.W : o+d.planeStep+db.W]
		p2 := d.buf[o+2*d.planeStep : o+2*d.planeStep+db.W : o+2*d.planeStep+db.W]
		for x := range p0 {
			tv := top[x*3 : x*3+3 : x*3+3]
			bv := bot[x*3 : x*3+3 : x*3+3]
			p0[x] = uint8(int32(tv[0] + float32((bv[0]-tv[0])*l)))
			p1[x] = uint8(int32(tv[1] + float32((bv[1]-tv[1])*l)))
			p2[x] = uint8(int32(tv[2] + float32((bv[2]-tv[2])*l)))
		}
	}
}

// resizeKernel is resize by package bilinear's kernel at level k.
func (r *resizer) resizeKernel(k bilinear.Level, d frameDst, src rgbImage, sb, db box) {
	f := bilinear.Frame{
		Src:       src.Pix[sb.Y*src.Stride+sb.X*3:],
		SrcStride: src.Stride,
		SW:        sb.W,
		SH:        sb.H,
		XS:        r.xs,
		YS:        r.ys,
	}
	if d.layout == BFHWC {
		f.Dst = d.buf[d.base+(db.Y*d.W+db.X)*3:]
		f.DstStride = d.W * 3
	} else {
		f.Dst = d.buf[d.base+db.Y*d.W+db.X:]
		f.DstStride = d.W
		f.PlaneStep = d.planeStep
	}
	bilinear.Resize(k, &r.scratch, &f)
}

// write puts a decoded frame into d under mode (see writeFrame).
func (r *resizer) write(d frameDst, mode ResizeMode, src rgbImage) { writeFrame(d, mode, src, r) }

// writeFrame puts a decoded frame into d under mode: copied when the part
// that is kept is already the size it goes to, resized by rz otherwise;
// pad mode clears the borders.
func writeFrame(d frameDst, mode ResizeMode, src rgbImage, rz interface {
	resize(d frameDst, src rgbImage, sb, db box)
}) {
	sb, db := place(mode, src.W, src.H, d.W, d.H)
	d.zeroOutside(db)
	if sb.W == db.W && sb.H == db.H {
		d.copyFrom(src, sb, db)
		return
	}
	rz.resize(d, src, sb, db)
}
