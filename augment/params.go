package augment

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"

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
	// Op holds the values of the registered ops (Ops), by their place in
	// the table, as many as the op has columns; an op not drawn holds
	// zeros (and records its Identity).
	Op [MaxOps][frames.FrameOpValues]float32
	// opOn has bit i set when Op[i] was drawn and changes something.
	opOn uint8
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

// Dropped reports whether p drops the camera (its frames are zeros).
func (p Params) Dropped() bool { return p.Drop }

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
	a.Ops = a.Ops[:0]
	for i, op := range ops {
		if p.opOn&(1<<i) != 0 {
			a.Ops = append(a.Ops, frames.FrameOp{Apply: op.Apply, Values: p.Op[i]})
		}
	}
}

// NumColumns is the width of Vector: the fused stages' columns. A
// batch's row (Row) is Width wide: these, then the registered ops'.
const NumColumns = 18

// columns names Vector's columns, with what each holds.
var columns = [NumColumns]Column{
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

// Width is the width of a recorded row (Row): the fused stages'
// NumColumns, then each registered op's columns, in the table's order.
func Width() int {
	n := NumColumns
	for _, op := range ops {
		n += len(op.Columns)
	}
	return n
}

// Columns returns the names of a row's columns, in order.
func Columns() []string { return columnField(func(c Column) string { return c.Name }) }

// ColumnDoc returns what each of a row's columns holds, in order, for
// info.json.
func ColumnDoc() []string { return columnField(func(c Column) string { return c.Meaning }) }

// columnField returns field of each of a row's columns: the fused
// stages', then each registered op's, in the table's order.
func columnField(field func(Column) string) []string {
	out := make([]string, 0, Width())
	for _, c := range columns {
		out = append(out, field(c))
	}
	for _, op := range ops {
		for _, c := range op.Columns {
			out = append(out, field(c))
		}
	}
	return out
}

// Row appends p as one row of a [B, Width] float32 array to dst: Vector,
// then each registered op's values (its Identity where it was not drawn).
func (p Params) Row(dst []float32) []float32 {
	v := p.Vector()
	dst = append(dst, v[:]...)
	for i, op := range ops {
		if p.opOn&(1<<i) != 0 {
			dst = append(dst, p.Op[i][:len(op.Columns)]...)
		} else {
			dst = append(dst, op.Identity...)
		}
	}
	return dst
}

// MaxWidth bounds Width: the fused stages' columns and as many as MaxOps
// ops may add.
const MaxWidth = NumColumns + MaxOps*frames.FrameOpValues

// PutRow writes p's Row into dst as Width little-endian float32s.
func (p Params) PutRow(dst []byte) {
	var buf [MaxWidth]float32
	for j, v := range p.Row(buf[:0]) {
		binary.LittleEndian.PutUint32(dst[4*j:], math.Float32bits(v))
	}
}

// FromRow returns the Params that Row recorded as v.
func FromRow(v []float32) (Params, error) {
	if len(v) != Width() {
		return Params{}, fmt.Errorf("augment row: %d values, want %d", len(v), Width())
	}
	p, err := FromVector([NumColumns]float32(v[:NumColumns]))
	if err != nil {
		return Params{}, err
	}
	v = v[NumColumns:]
	for i, op := range ops {
		n := len(op.Columns)
		if !slices.Equal(v[:n], op.Identity) {
			copy(p.Op[i][:], v[:n])
			p.opOn |= 1 << i
		}
		v = v[n:]
	}
	return p, nil
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
			return Params{}, fmt.Errorf("augment vector: %s %v is not a place in the chain (-1 to %d)", columns[12+i].Name, o, NumColour-1)
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
