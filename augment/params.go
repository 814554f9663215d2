package augment

import (
	"fmt"
	"math"

	"github.com/oxefs/oxefs/frames"
)

// Params is one (sample, camera)'s drawn augmentation: what Draw returns
// and frames applies. Every value is a float32, so that Vector records it
// exactly and FromVector gives back the same Params. The zero Params
// changes nothing, as Identity does (Identity also holds the identity
// factors, for the record).
type Params struct {
	// Crop is the box of the source that is resized (see frames.CropBox
	// for how fractions become whole pixels).
	Crop frames.CropBox
	// Affine moves the resized frame (see frames.Affine).
	Affine frames.Affine
	// Factors of the colour ops (1 changes nothing; Hue: 0 changes
	// nothing), indexed by ColourBrightness...ColourSharpness.
	Factor [NumColour]float32
	// Place is each colour op's place in the chain, 1 first; 0: not
	// applied.
	Place [NumColour]uint8
	// Drop: this camera's frames are zeros.
	Drop bool
}

// Indices of Params.Factor and Params.Place.
const (
	ColourBrightness = iota
	ColourContrast
	ColourSaturation
	ColourHue
	ColourSharpness
	NumColour
)

var colourOps = [NumColour]frames.ColourOp{frames.Brightness, frames.Contrast, frames.Saturation, frames.Hue, frames.Sharpness}

// Identity is the Params that change nothing.
func Identity() Params {
	return Params{
		Crop:   frames.CropBox{W: 1, H: 1, X: 0.5, Y: 0.5},
		Factor: [NumColour]float32{1, 1, 1, 0, 1},
	}
}

// Augment returns what frames applies for p: the slot's frames.Augment.
func (p Params) Augment() frames.Augment {
	var a frames.Augment
	p.SetAugment(&a)
	return a
}

// SetAugment writes what frames applies for p into a, reusing the array
// of a.Colour: a frame stage that keeps one Augment per worker allocates
// nothing per frame.
func (p *Params) SetAugment(a *frames.Augment) {
	a.Crop, a.Affine, a.Drop = p.Crop, p.Affine, p.Drop
	a.Colour = a.Colour[:0]
	for place := uint8(1); place <= NumColour; place++ {
		for i, o := range p.Place {
			if o == place {
				a.Colour = append(a.Colour, frames.Colour{Op: colourOps[i], Factor: p.Factor[i]})
			}
		}
	}
}

// NumColumns is the width of Vector.
const NumColumns = 18

// columns names Vector's columns, with what each holds.
var columns = [NumColumns][2]string{
	{"crop_w", "crop box width, fraction of the source width (round(crop_w·W) pixels, at least 1); 1: no crop"},
	{"crop_h", "crop box height, fraction of the source height"},
	{"crop_x", "crop box place in [0, 1]: left column min(⌊crop_x·(W − w + 1)⌋, W − w); 0.5 centres it"},
	{"crop_y", "crop box place in [0, 1]: top row min(⌊crop_y·(H − h + 1)⌋, H − h)"},
	{"rotate", "degrees counter-clockwise about the centre (F.rotate's angle; F.affine's is −rotate); nearest, fill 0"},
	{"translate_x", "shift right, fraction of the output width: round_half_even(translate_x·W) pixels"},
	{"translate_y", "shift down, fraction of the output height"},
	{"brightness", "F.adjust_brightness factor; 1: none"},
	{"contrast", "F.adjust_contrast factor; 1: none"},
	{"saturation", "F.adjust_saturation factor; 1: none"},
	{"hue", "F.adjust_hue factor in [-0.5, 0.5]; 0: none"},
	{"sharpness", "F.adjust_sharpness factor; 1: none"},
	{"order_brightness", "place of brightness among the colour ops, 0 first; -1: not applied"},
	{"order_contrast", "place of contrast; -1: not applied"},
	{"order_saturation", "place of saturation; -1: not applied"},
	{"order_hue", "place of hue; -1: not applied"},
	{"order_sharpness", "place of sharpness; -1: not applied"},
	{"drop", "1: the camera is dropped, its frames are zeros"},
}

// Columns returns the names of Vector's columns, in order.
func Columns() []string {
	out := make([]string, NumColumns)
	for i, c := range columns {
		out[i] = c[0]
	}
	return out
}

// ColumnDoc returns what each of Vector's columns holds, in order, for
// info.json.
func ColumnDoc() []string {
	out := make([]string, NumColumns)
	for i, c := range columns {
		out[i] = c[1]
	}
	return out
}

// Vector records p as one row of a [B, NumColumns] float32 array.
func (p Params) Vector() [NumColumns]float32 {
	v := [NumColumns]float32{
		p.Crop.W, p.Crop.H, p.Crop.X, p.Crop.Y,
		p.Affine.Angle, p.Affine.TX, p.Affine.TY,
	}
	copy(v[7:12], p.Factor[:])
	for i, o := range p.Place {
		v[12+i] = float32(o) - 1
	}
	if p.Drop {
		v[17] = 1
	}
	return v
}

// FromVector returns the Params that Vector recorded as v: the replay of a
// batch's parameters.
func FromVector(v [NumColumns]float32) (Params, error) {
	p := Params{
		Crop:   frames.CropBox{W: v[0], H: v[1], X: v[2], Y: v[3]},
		Affine: frames.Affine{Angle: v[4], TX: v[5], TY: v[6]},
		Drop:   v[17] == 1,
	}
	copy(p.Factor[:], v[7:12])
	seen := 0
	for i := range NumColour {
		o := v[12+i]
		if o != float32(math.Trunc(float64(o))) || o < -1 || o >= NumColour {
			return Params{}, fmt.Errorf("augment vector: %s %v is not a place in the chain (-1 to %d)", columns[12+i][0], o, NumColour-1)
		}
		p.Place[i] = uint8(o + 1)
		if o >= 0 {
			seen |= 1 << int(o)
		}
	}
	if d := v[17]; d != 0 && d != 1 {
		return Params{}, fmt.Errorf("augment vector: drop %v is not 0 or 1", d)
	}
	n := 0
	for _, o := range p.Place {
		if o > 0 {
			n++
		}
	}
	if seen != 1<<n-1 {
		return Params{}, fmt.Errorf("augment vector: colour order %v is not 0..%d, each once", v[12:17], n-1)
	}
	if err := p.Augment().Check(); err != nil {
		return Params{}, fmt.Errorf("augment vector: %w", err)
	}
	return p, nil
}
