package frames

import (
	"fmt"

	"github.com/oxefs/oxefs/frames/turbojpeg"
)

// Layout is the order of a sample's frame dimensions in its Slot.
type Layout uint8

const (
	// BFHWC: a slot is [F][H][W][3], frames interleaved RGB.
	BFHWC Layout = iota
	// BCFHW: a slot is [3][F][H][W], one plane per channel.
	BCFHW
)

func (l Layout) String() string {
	switch l {
	case BFHWC:
		return "BFHWC"
	case BCFHW:
		return "BCFHW"
	}
	return fmt.Sprintf("Layout(%d)", uint8(l))
}

// ResizeMode says how a frame of another aspect ratio reaches the slot's
// size. Each is a TensorFlow expression, reproduced exactly (then truncated
// to uint8 like everything else). The names a config uses for them are
// parsed elsewhere; the values here are what the resize computes.
type ResizeMode uint8

const (
	// Squash: straight to the target size, aspect ratio not kept:
	// tf.image.resize(img, [H, W], "bilinear").
	Squash ResizeMode = iota
	// Crop: cut the largest centred box of the target's aspect ratio, then
	// resize it: Keras's smart_resize(img, [H, W]) (bilinear). With an
	// input of h×w, the box is ch = clamp(⌊w·H/W⌋, 1, h) rows by
	// cw = clamp(⌊h·W/H⌋, 1, w) columns, starting at row ⌊(h−ch)/2⌋ and
	// column ⌊(w−cw)/2⌋.
	Crop
	// Pad: resize to fit inside the target keeping the aspect ratio, and
	// fill the rest with zeros, the image centred:
	// tf.image.resize_with_pad(img, H, W, "bilinear"), whose float32
	// arithmetic is kept: ratio = max(w/W, h/H), the image becomes
	// ⌊h/ratio⌋×⌊w/ratio⌋ (at least 1), placed at row ⌊(H−h/ratio)/2⌋ and
	// column ⌊(W−w/ratio)/2⌋.
	Pad
)

func (m ResizeMode) String() string {
	switch m {
	case Squash:
		return "squash"
	case Crop:
		return "crop"
	case Pad:
		return "pad"
	}
	return fmt.Sprintf("ResizeMode(%d)", uint8(m))
}

// DecodeMode says whether frames are TensorFlow's pixels or a faster
// approximation of them.
type DecodeMode uint8

const (
	// Exact: TensorFlow's pixels bit for bit (see the package doc). The
	// default.
	Exact DecodeMode = iota
	// Fast: a JPEG much larger than the slot is decoded by libjpeg-turbo at
	// 1/8, 1/4 or 1/2 of its size in the DCT domain — the smallest whose
	// part kept under the slot's ResizeMode still covers the slot — and
	// every frame is then resized with area weights (each output pixel
	// the mean of the source area it covers) when shrinking and bilinear
	// weights when enlarging, in fixed point: no aliasing, deterministic,
	// and cheaper than TensorFlow's float32 bilinear. Libjpeg-turbo's other
	// scales (3/8, 5/8, 3/4, 7/8) are not used: their scalar IDCTs make a
	// decode slower than a full-size one.
	Fast
)

func (m DecodeMode) String() string {
	switch m {
	case Exact:
		return "exact"
	case Fast:
		return "fast"
	}
	return fmt.Sprintf("DecodeMode(%d)", uint8(m))
}

// Slot is where one sample's frames go: Frames frames of H×W RGB in Buf
// (Frames·H·W·3 bytes) in Layout, each brought to H×W by Resize, decoded
// as Decode says, then augmented as Augment says (the same for every frame
// of the slot). Frame k of the slot is the k-th frame a Source is asked
// for.
type Slot struct {
	Buf     []byte
	Frames  int
	H, W    int
	Layout  Layout
	Resize  ResizeMode
	Decode  DecodeMode
	Augment Augment
}

// check reports a slot whose buffer does not hold its frames or whose
// layout or mode is unknown.
func (s Slot) check() error {
	if s.Frames < 1 || s.H < 1 || s.W < 1 || len(s.Buf) != s.Frames*s.H*s.W*3 {
		return fmt.Errorf("frame slot of %d bytes for %d frames of %dx%d (HxW)", len(s.Buf), s.Frames, s.H, s.W)
	}
	if s.Layout > BCFHW {
		return fmt.Errorf("frame slot layout %v is not valid (valid: %v, %v)", s.Layout, BFHWC, BCFHW)
	}
	if s.Resize > Pad {
		return fmt.Errorf("frame slot resize %v is not valid (valid: %v, %v, %v)", s.Resize, Squash, Crop, Pad)
	}
	if s.Decode > Fast {
		return fmt.Errorf("frame slot decode %v is not valid (valid: %v, %v)", s.Decode, Exact, Fast)
	}
	if err := s.Augment.Check(); err != nil {
		return fmt.Errorf("frame slot augment: %w", err)
	}
	return nil
}

// frame returns frame k of the slot.
func (s Slot) frame(k int) frameDst {
	return newFrameDst(s.Buf, s.Layout, k, s.Frames, s.H, s.W)
}

// fit is what a frame is decoded for under DecodeFast: the slot's size and
// resize mode. The zero fit (exact decoding) never scales.
type fit struct {
	W, H int
	Mode ResizeMode
}

// fitOf returns the fit of the slot's frames: zero unless Decode is Fast.
func (s Slot) fitOf() fit {
	if s.Decode != Fast || s.Augment.geometric() {
		return fit{}
	}
	return fit{W: s.W, H: s.H, Mode: s.Resize}
}

// eighths returns the scale, in eighths, at which a w×h JPEG is decoded
// for f: the smallest of 1/8, 1/4 and 1/2 whose part kept under f.Mode
// still covers the part of the slot it goes to, else 8 (full size).
func (f fit) eighths(w, h int) int {
	if f.W == 0 {
		return 8
	}
	for _, n := range [...]int{1, 2, 4} {
		sb, db := place(f.Mode, turbojpeg.Scaled(w, n), turbojpeg.Scaled(h, n), f.W, f.H)
		if sb.W >= db.W && sb.H >= db.H {
			return n
		}
	}
	return 8
}
