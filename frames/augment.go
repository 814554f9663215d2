package frames

import (
	"fmt"
	"math"
)

// Augment is what happens to a frame on its way into a slot beyond the
// resize: the functional half of augmentation (package augment draws the
// parameters; this applies them, as torchvision's functional ops do). The
// zero Augment changes nothing: the slot receives exactly what it would
// without one.
//
// The order is fixed: the crop box is cut from the part of the source the
// slot's ResizeMode keeps, resized into the slot with the TensorFlow-exact
// bilinear resize, the affine moves the resized frame, and the colour ops
// run over the result in their order, then Ops, each over the whole
// frame, in their order. Crop and affine are fused into the resize: no
// intermediate frame is made.
type Augment struct {
	// Crop is the part of the source that is resized.
	Crop CropBox
	// Affine rotates and translates the resized frame.
	Affine Affine
	// Colour ops run in this order over the frame.
	Colour []Colour
	// Ops run in this order over the frame after the colour ops: the ops
	// that are not one of the fused stages (package augment's registered
	// ops).
	Ops []FrameOp
	// Drop: the frames are zeros; nothing is decoded.
	Drop bool
}

// FrameOpValues is the most values a FrameOp is given.
const FrameOpValues = 4

// FrameOp is an op over a whole frame that is none of the fused stages:
// Apply changes the frame in place, given Values (what augment drew for
// the op).
type FrameOp struct {
	Apply  func(f Frame, v *[FrameOpValues]float32)
	Values [FrameOpValues]float32
}

// Frame is one frame of a slot, at the slot's size, as a FrameOp sees it:
// W×H RGB pixels, whatever the slot's layout.
type Frame struct{ d frameDst }

// W is the frame's width.
func (f Frame) W() int { return f.d.W }

// H is the frame's height.
func (f Frame) H() int { return f.d.H }

// At returns the pixel at column x, row y.
func (f Frame) At(x, y int) (r, g, b uint8) {
	d := f.d
	if d.layout == BFHWC {
		o := d.base + (y*d.W+x)*3
		return d.buf[o], d.buf[o+1], d.buf[o+2]
	}
	o := d.base + y*d.W + x
	return d.buf[o], d.buf[o+d.planeStep], d.buf[o+2*d.planeStep]
}

// Set writes the pixel at column x, row y.
func (f Frame) Set(x, y int, r, g, b uint8) { f.d.put(x, y, r, g, b) }

// applyOps runs ops over the frame d.
func applyOps(d frameDst, ops []FrameOp) {
	for i := range ops {
		ops[i].Apply(Frame{d}, &ops[i].Values)
	}
}

// Identity reports whether a changes nothing.
func (a Augment) Identity() bool {
	return !a.Drop && a.Crop.Identity() && a.Affine.Identity() && len(a.Colour) == 0 && len(a.Ops) == 0
}

// geometric reports whether a moves pixels.
func (a Augment) geometric() bool { return !a.Crop.Identity() || !a.Affine.Identity() }

// Check reports an Augment whose values are outside their domain.
func (a Augment) Check() error {
	c := a.Crop
	for _, f := range []struct {
		name   string
		v      float32
		lo, hi float32
	}{{"W", c.W, 0, 1}, {"H", c.H, 0, 1}, {"X", c.X, 0, 1}, {"Y", c.Y, 0, 1}} {
		if !(f.v >= f.lo && f.v <= f.hi) {
			return fmt.Errorf("crop %s %v is outside [%v, %v]", f.name, f.v, f.lo, f.hi)
		}
	}
	af := a.Affine
	if !(math.Abs(float64(af.Angle)) <= 360) || !(math.Abs(float64(af.TX)) <= 1) || !(math.Abs(float64(af.TY)) <= 1) {
		return fmt.Errorf("affine angle %v, translate %v, %v: outside ±360° and ±1", af.Angle, af.TX, af.TY)
	}
	for _, op := range a.Colour {
		if err := op.check(); err != nil {
			return err
		}
	}
	for i, op := range a.Ops {
		if op.Apply == nil {
			return fmt.Errorf("frame op %d has no Apply", i)
		}
	}
	return nil
}

// CropBox is a box of the source in whole pixels, given as fractions so that
// one Crop fits every frame size. On a w×h source (the part the slot's
// ResizeMode keeps) the box is
//
//	bw = clamp(round(W·w), 1, w)    bh = clamp(round(H·h), 1, h)
//	x0 = min(⌊X·(w − bw + 1)⌋, w − bw)    y0 = min(⌊Y·(h − bh + 1)⌋, h − bh)
//
// (round: half away from zero), so X uniform in [0, 1) places the box
// uniformly over the w − bw + 1 whole-pixel positions, as torchvision's
// RandomCrop does, and X = 0.5 centres it, ⌈(w − bw)/2⌉ from the left.
// A zero W or H means the whole side (1).
type CropBox struct {
	W, H float32
	X, Y float32
}

// Identity reports whether c keeps the whole source.
func (c CropBox) Identity() bool { return (c.W == 0 || c.W == 1) && (c.H == 0 || c.H == 1) }

// Box returns the crop box of a w×h source: its left column, top row,
// width and height.
func (c CropBox) Box(w, h int) (x, y, bw, bh int) {
	x, bw = cropSide(c.W, c.X, w)
	y, bh = cropSide(c.H, c.Y, h)
	return x, y, bw, bh
}

func cropSide(frac, pos float32, n int) (off, size int) {
	if frac == 0 {
		frac = 1
	}
	size = min(max(int(math.Round(float64(frac)*float64(n))), 1), n)
	free := n - size
	off = min(int(math.Floor(float64(pos)*float64(free+1))), free)
	return max(off, 0), size
}

// box is Box of the part sb of a source, in the source's coordinates.
func (c CropBox) box(sb box) box {
	x, y, w, h := c.Box(sb.W, sb.H)
	return box{sb.X + x, sb.Y + y, w, h}
}

// Affine moves the resized frame as torchvision's
//
//	F.affine(img, angle=−Angle, translate=[tx, ty], scale=1, shear=[0, 0],
//	         interpolation=NEAREST, fill=None)
//
// does (the same as F.rotate(img, Angle) when there is no translation):
// a rotation of Angle degrees counter-clockwise about the frame's centre,
// then a shift of tx = round(TX·W), ty = round(TY·H) whole pixels (round:
// half to even, as RandomAffine rounds its draw) for an output frame of
// W×H. Every output pixel takes the value of the resized frame's pixel
// nearest to where the inverse transform sends it (torchvision's sampling
// grid, computed in float32 as torchvision computes it); where that falls
// outside the frame the pixel is 0 (grid_sample's zero padding: the fill).
type Affine struct {
	Angle  float32
	TX, TY float32
}

// Identity reports whether a moves nothing.
func (a Affine) Identity() bool { return a.Angle == 0 && a.TX == 0 && a.TY == 0 }

// Pixels returns the translation in whole pixels of a w×h frame.
func (a Affine) Pixels(w, h int) (tx, ty int) {
	return int(math.RoundToEven(float64(a.TX) * float64(w))), int(math.RoundToEven(float64(a.TY) * float64(h)))
}

// Matrix returns torchvision's inverse affine matrix for a w×h frame
// (_get_inverse_affine_matrix with centre 0, the frame's centre, scale 1
// and no shear, in float64 as Python computes it): the output pixel at
// (x, y), relative to the frame's centre, samples the input at
// (m[0]·x + m[1]·y + m[2], m[3]·x + m[4]·y + m[5]).
func (a Affine) Matrix(w, h int) [6]float64 {
	tx, ty := a.Pixels(w, h)
	rot := -float64(a.Angle) * radPerDeg // F.affine's clockwise angle, in radians
	cos, sin := math.Cos(rot), math.Sin(rot)
	// The rotation [[a, b], [c, d]] = [[cos, −sin], [sin, cos]] inverted
	// (its determinant is 1), then the translation: RSS⁻¹ · T⁻¹.
	m := [6]float64{cos, sin, 0, -sin, cos, 0}
	m[2] += m[0]*-float64(tx) + m[1]*-float64(ty)
	m[5] += m[3]*-float64(tx) + m[4]*-float64(ty)
	return m
}

// radPerDeg is Python's math.radians factor: float64 π / 180, rounded
// once (a Go constant expression would be exact first, then rounded).
var radPerDeg = func() float64 {
	pi := math.Pi
	return pi / 180
}()

// ColourOp is one of torchvision's colour adjustments.
type ColourOp uint8

const (
	// Brightness: F.adjust_brightness(img, Factor): Factor·x.
	Brightness ColourOp = iota + 1
	// Contrast: F.adjust_contrast(img, Factor): Factor·x + (1−Factor)·m,
	// m the mean of the frame's grayscale.
	Contrast
	// Saturation: F.adjust_saturation(img, Factor): Factor·x +
	// (1−Factor)·gray(pixel).
	Saturation
	// Hue: F.adjust_hue(img, Factor): the hue turned by Factor of a full
	// turn, Factor in [−0.5, 0.5].
	Hue
	// Sharpness: F.adjust_sharpness(img, Factor): Factor·x +
	// (1−Factor)·blur(x), blur the 3×3 kernel [1 1 1; 1 5 1; 1 1 1]/13,
	// the border kept.
	Sharpness
)

var colourNames = [...]string{Brightness: "brightness", Contrast: "contrast", Saturation: "saturation", Hue: "hue", Sharpness: "sharpness"}

func (o ColourOp) String() string {
	if int(o) < len(colourNames) && colourNames[o] != "" {
		return colourNames[o]
	}
	return fmt.Sprintf("ColourOp(%d)", uint8(o))
}

// Colour is one colour op with its factor.
type Colour struct {
	Op     ColourOp
	Factor float32
}

func (c Colour) check() error {
	switch c.Op {
	case Brightness, Contrast, Saturation, Sharpness:
		if !(c.Factor >= 0) || math.IsInf(float64(c.Factor), 0) {
			return fmt.Errorf("%v factor %v is not a finite number ≥ 0", c.Op, c.Factor)
		}
	case Hue:
		if !(c.Factor >= -0.5 && c.Factor <= 0.5) {
			return fmt.Errorf("hue factor %v is outside [-0.5, 0.5]", c.Factor)
		}
	default:
		return fmt.Errorf("colour op %v is not valid (valid: brightness, contrast, saturation, hue, sharpness)", c.Op)
	}
	return nil
}

// write puts a decoded frame into d as the slot's mode and augmentation
// say: unaugmented frames take the usual path (the fast resizer under
// DecodeFast); a crop or an affine always goes through the exact one.
func (dec *Decoder) write(d frameDst, s Slot, img rgbImage) {
	a := &s.Augment
	switch {
	case !a.geometric() && s.Decode == Fast:
		dec.fz.write(d, s.Resize, img)
	case !a.geometric():
		dec.rz.write(d, s.Resize, img)
	default:
		dec.rz.writeAugmented(d, s.Resize, img, a)
	}
	if len(a.Colour) > 0 {
		dec.colour.apply(d, a.Colour)
	}
	applyOps(d, a.Ops)
}

// writeAugmented is writeFrame with a crop box cut from the part mode
// keeps and an affine over the resized frame.
func (r *resizer) writeAugmented(d frameDst, mode ResizeMode, src rgbImage, a *Augment) {
	sb, db := place(mode, src.W, src.H, d.W, d.H)
	cb := a.Crop.box(sb)
	if mode == Pad {
		_, db = place(Pad, cb.W, cb.H, d.W, d.H)
	}
	if !a.Affine.Identity() {
		r.resizeAffine(d, src, cb, db, a.Affine)
		return
	}
	d.zeroOutside(db)
	if cb.W == db.W && cb.H == db.H {
		d.copyFrom(src, cb, db)
		return
	}
	r.resize(d, src, cb, db)
}
