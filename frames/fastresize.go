package frames

import "math"

// The fast resize of DecodeFast: a separable filter in 12-bit fixed
// point, horizontal pass first into a ring of filtered rows, then
// vertical. A pixel's three channels travel together in one uint64, 21
// bits apart (see lanes), so one multiply weighs all three.
// Downscaling uses area weights (each output pixel is the mean of the
// source area it covers, partial pixels weighted by their coverage), so
// nothing aliases; upscaling, and a side kept at its size, use bilinear
// weights with half-pixel centres, which is what every common resize
// computes there. Integer arithmetic makes it deterministic on every
// machine.

const (
	fixBits = 12
	fixOne  = 1 << fixBits
	fixHalf = 1 << (fixBits - 1)

	// A pixel as lanes: R in bits 0–20, G in 21–41, B in 42–62. A lane
	// holds an 8-bit value times a weight sum of fixOne plus the rounding
	// (at most 255·4096 + 2048 < 2²¹), so lanes never carry into each
	// other.
	laneBits  = 21
	laneHalf  = fixHalf | fixHalf<<laneBits | fixHalf<<(2*laneBits)
	laneBytes = 0xFF | 0xFF<<laneBits | 0xFF<<(2*laneBits)
)

// lanes packs an RGB pixel.
func lanes(r, g, b byte) uint64 {
	return uint64(r) | uint64(g)<<laneBits | uint64(b)<<(2*laneBits)
}

// filter is one side's weights: output i reads k source pixels from
// start[i], with weights w[i·k : i·k+k] summing to fixOne.
type filter struct {
	in, out, k int
	start      []int32
	w          []uint64
}

// set computes the weights for in → out pixels, reusing f's tables.
func (f *filter) set(in, out int) {
	if f.in == in && f.out == out && f.start != nil {
		return
	}
	f.in, f.out = in, out
	scale := float64(in) / float64(out)
	// The widest footprint: an area of scale pixels can touch ⌈scale⌉+1 of
	// them; a bilinear tap two.
	k := 2
	switch {
	case in == out:
		k = 1
	case scale > 1:
		k = int(math.Ceil(scale)) + 1
	}
	k = min(k, in)
	f.k = k
	f.start = f.start[:0]
	f.w = f.w[:0]
	wt := make([]float64, k)
	for i := range out {
		clear(wt)
		var lo int
		switch {
		case k == 1:
			lo = min(i, in-1)
			wt[0] = 1
		case scale > 1:
			a, b := float64(i)*scale, float64(i+1)*scale
			lo = min(int(math.Floor(a)), in-k)
			for j := range k {
				s := float64(lo + j)
				if c := min(b, s+1) - max(a, s); c > 0 {
					wt[j] = c / scale
				}
			}
		default:
			src := (float64(i)+0.5)*scale - 0.5
			fl := math.Floor(src)
			l, h := max(int(fl), 0), min(int(fl)+1, in-1)
			frac := src - fl
			lo = min(l, in-k)
			wt[l-lo] += 1 - frac
			wt[h-lo] += frac
		}
		f.start = append(f.start, int32(lo))
		f.w = appendFixed(f.w, wt)
	}
}

// appendFixed appends wt (summing to 1) in fixed point, each weight
// within 1/fixOne of its value and the integers summing to exactly
// fixOne: every weight is rounded down, then the units left over go one
// each to the weights that lost the most (largest remainders).
func appendFixed(dst []uint64, wt []float64) []uint64 {
	n := len(dst)
	left := fixOne
	for _, v := range wt {
		q := uint64(v * fixOne)
		dst = append(dst, q)
		left -= int(q)
	}
	for ; left > 0; left-- {
		best, rem := n, -1.0
		for j, v := range wt {
			if r := v*fixOne - float64(dst[n+j]); r > rem {
				best, rem = n+j, r
			}
		}
		dst[best]++
	}
	return dst
}

// fastResizer resizes with two filters and a ring of horizontally
// filtered rows (one per vertical tap), reused from frame to frame.
type fastResizer struct {
	fx, fy filter
	src    []uint64   // one source row as lanes
	ring   []uint64   // fy.k rows of fx.out pixels as lanes
	rowOf  []int      // source row held by each ring slot; -1: none
	taps   [][]uint64 // the ring's rows in the order one output row reads them
}

// footprint is the bytes its tables and buffers hold.
func (r *fastResizer) footprint() int {
	return 8*(cap(r.src)+cap(r.ring)+cap(r.fx.w)+cap(r.fy.w)+cap(r.rowOf)) +
		4*(cap(r.fx.start)+cap(r.fy.start)) + 24*cap(r.taps)
}

// write puts src into d under mode (see writeFrame), as resizer.write does
// with TensorFlow's bilinear rule.
func (r *fastResizer) write(d frameDst, mode ResizeMode, src rgbImage) { writeFrame(d, mode, src, r) }

func (r *fastResizer) resize(d frameDst, src rgbImage, sb, db box) {
	r.fx.set(sb.W, db.W)
	r.fy.set(sb.H, db.H)
	n, k := db.W, r.fy.k
	r.ring = grow(r.ring, k*n)
	r.src = grow(r.src, max(sb.W, n)) // a source row, then vertical's output
	r.rowOf = r.rowOf[:0]
	r.taps = r.taps[:0]
	for range k {
		r.rowOf = append(r.rowOf, -1)
		r.taps = append(r.taps, nil)
	}
	for y := range db.H {
		start := int(r.fy.start[y])
		for j := range k {
			sy := start + j
			slot := sy % k
			if r.rowOf[slot] != sy {
				line := src.Pix[(sb.Y+sy)*src.Stride+sb.X*3:]
				r.horizontal(r.ring[slot*n:(slot+1)*n], line[:sb.W*3])
				r.rowOf[slot] = sy
			}
			r.taps[j] = r.ring[slot*n : (slot+1)*n : (slot+1)*n]
		}
		acc := r.vertical(r.fy.w[y*k:y*k+k], n)
		if d.layout == BFHWC {
			o := d.base + ((db.Y+y)*d.W+db.X)*3
			out := d.buf[o : o+3*n : o+3*n]
			for x, v := range acc {
				p := out[3*x : 3*x+3 : 3*x+3]
				p[0], p[1], p[2] = uint8(v), uint8(v>>laneBits), uint8(v>>(2*laneBits))
			}
			continue
		}
		o := d.base + (db.Y+y)*d.W + db.X
		p0 := d.buf[o : o+n : o+n]
		p1 := d.buf[o+d.planeStep : o+d.planeStep+n : o+d.planeStep+n]
		p2 := d.buf[o+2*d.planeStep : o+2*d.planeStep+n : o+2*d.planeStep+n]
		for x, v := range acc[:n] {
			p0[x], p1[x], p2[x] = uint8(v), uint8(v>>laneBits), uint8(v>>(2*laneBits))
		}
	}
}

func grow(b []uint64, n int) []uint64 {
	if cap(b) < n {
		return make([]uint64, n)
	}
	return b[:n]
}

// horizontal filters one source row (packed RGB) into out, as lanes
// holding 8-bit values.
func (r *fastResizer) horizontal(out []uint64, line []byte) {
	px := r.src[: len(line)/3 : len(line)/3]
	for i := range px {
		p := line[3*i : 3*i+3 : 3*i+3]
		px[i] = lanes(p[0], p[1], p[2])
	}
	f := &r.fx
	out = out[:f.out:f.out]
	switch k := f.k; k {
	case 1:
		for x := range out {
			out[x] = px[f.start[x]]
		}
	case 2:
		for x := range out {
			s := int(f.start[x])
			p := px[s : s+2 : s+2]
			w := f.w[2*x : 2*x+2 : 2*x+2]
			out[x] = (w[0]*p[0] + w[1]*p[1] + laneHalf) >> fixBits & laneBytes
		}
	case 3:
		for x := range out {
			s := int(f.start[x])
			p := px[s : s+3 : s+3]
			w := f.w[3*x : 3*x+3 : 3*x+3]
			out[x] = (w[0]*p[0] + w[1]*p[1] + w[2]*p[2] + laneHalf) >> fixBits & laneBytes
		}
	case 4:
		for x := range out {
			s := int(f.start[x])
			p := px[s : s+4 : s+4]
			w := f.w[4*x : 4*x+4 : 4*x+4]
			out[x] = (w[0]*p[0] + w[1]*p[1] + w[2]*p[2] + w[3]*p[3] + laneHalf) >> fixBits & laneBytes
		}
	default:
		for x := range out {
			s := int(f.start[x])
			p := px[s : s+k : s+k]
			acc := uint64(laneHalf)
			for j, wj := range f.w[k*x : k*x+k : k*x+k] {
				acc += wj * p[j]
			}
			out[x] = acc >> fixBits & laneBytes
		}
	}
}

// vertical combines the rows in r.taps with weights wy into n pixels of
// lanes whose low 8 bits hold the result (higher bits are not cleared):
// the first ring row's storage is reused for it when there is one tap,
// else r.src.
func (r *fastResizer) vertical(wy []uint64, n int) []uint64 {
	rows := r.taps
	if len(rows) == 1 {
		return rows[0][:n:n]
	}
	acc := r.src[:n:n]
	switch len(rows) {
	case 2:
		a, b := rows[0][:n:n], rows[1][:n:n]
		w0, w1 := wy[0], wy[1]
		for i := range acc {
			acc[i] = (w0*a[i] + w1*b[i] + laneHalf) >> fixBits
		}
	case 3:
		a, b, c := rows[0][:n:n], rows[1][:n:n], rows[2][:n:n]
		w0, w1, w2 := wy[0], wy[1], wy[2]
		for i := range acc {
			acc[i] = (w0*a[i] + w1*b[i] + w2*c[i] + laneHalf) >> fixBits
		}
	default:
		for i := range acc {
			acc[i] = laneHalf
		}
		for j, row := range rows {
			row = row[:n:n]
			wj := wy[j]
			for i := range acc {
				acc[i] += wj * row[i]
			}
		}
		for i := range acc {
			acc[i] >>= fixBits
		}
	}
	return acc
}
