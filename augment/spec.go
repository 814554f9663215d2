package augment

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// Range is a closed interval [Lo, Hi] a parameter is drawn from,
// uniformly. The zero Range switches its op off.
type Range struct{ Lo, Hi float64 }

// Jitter is torchvision's range for a brightness, contrast or saturation
// of b: factors in [max(0, 1−b), 1+b].
func Jitter(b float64) Range { return Range{max(0, 1-b), 1 + b} }

// Symmetric is [−h, h]: torchvision's range for a hue of h, or for
// degrees d of a rotation.
func Symmetric(h float64) Range { return Range{-h, h} }

// on reports whether the op with this range is configured.
func (r Range) on() bool { return r != Range{} }

func (r Range) String() string { return fmt.Sprintf("[%g, %g]", r.Lo, r.Hi) }

// ResizedCrop is torchvision's RandomResizedCrop as Octo and OpenVLA
// compute it (dlimp's random_resized_crop): an area fraction drawn from
// Scale and an aspect ratio drawn log-uniformly from Ratio, both of the
// source's sides as fractions, so the box is √(scale·ratio) of the width
// by √(scale/ratio) of the height (each at most 1), at a uniform place.
// On a square source the ratio is torchvision's pixel ratio.
type ResizedCrop struct {
	Scale, Ratio Range
}

func (c ResizedCrop) on() bool { return c != ResizedCrop{} }

// Spec is an augmentation as a config states it: which ops, with which
// ranges, and how they are drawn. The zero Spec augments nothing. A
// preset (Preset) is a Spec; a config may start from one and change
// fields.
type Spec struct {
	// Preset names the preset the Spec started from, for info.json;
	// empty for a Spec built field by field.
	Preset string

	// ResizedCrop: a random resized crop. At most one of ResizedCrop
	// and Crop.
	ResizedCrop ResizedCrop
	// Crop: the area fraction, in (0, 1], of a crop of the source's
	// aspect ratio (√Crop of each side) at a uniform place; 0: none.
	Crop float64
	// Rotate: degrees counter-clockwise (torchvision's F.rotate), within
	// ±180.
	Rotate Range
	// Translate: the largest shift, as a fraction of the width and the
	// height, in [0, 1) (torchvision's RandomAffine translate).
	Translate [2]float64

	// Colour factors (1 leaves the frame as it is), torchvision's
	// F.adjust_*; Hue is a fraction of a turn in [−0.5, 0.5].
	Brightness, Contrast, Saturation, Hue, Sharpness Range

	// Subset: how many of the configured ops (a crop, the affine —
	// rotation and translation together — and each colour op) each
	// (sample, camera) gets, chosen at random; 0: all of them.
	Subset int
	// RandomOrder: the colour ops run in a random order per (sample,
	// camera), as torchvision's ColorJitter runs them; else in the order
	// brightness, contrast, saturation, hue, sharpness.
	RandomOrder bool
	// WristColourOnly: wrist cameras (Camera.Wrist) get no crop and no
	// affine, only colour ops (Octo, openpi).
	WristColourOnly bool
	// Shared: every camera of a sample gets the same draws; else each
	// camera slot draws its own.
	Shared bool
	// Dropout: the probability, in [0, 1), that a camera's frames of a
	// sample are dropped (zeros); at least one present camera is always
	// kept.
	Dropout float64
	// DropoutKeep names a camera slot that is never dropped (Octo's
	// always-keep key); empty: none.
	DropoutKeep string
	// EvalCrop: the area fraction of the centre crop val frames get. 0:
	// the centre twin of the configured crop (Crop's area, or the middle
	// of ResizedCrop's Scale at ratio 1; none without a crop); 1: none.
	EvalCrop float64

	// Ops are the ranges of the registered ops (Ops, the table of
	// ops.go), by their place in the table; the zero Range switches an op
	// off. They run on training frames only, after the colour ops, and
	// are not among what Subset chooses from.
	Ops [MaxOps]Range
}

// Enabled reports whether s does anything to training frames.
func (s Spec) Enabled() bool {
	var buf [numUnits]unit
	return len(s.units(buf[:0])) > 0 || s.Dropout > 0 || s.opsOn()
}

// Field names, as a config spells them, for errors.
const (
	FieldPreset      = "preset"
	FieldScale       = "random_resized_crop.scale"
	FieldRatio       = "random_resized_crop.ratio"
	FieldCrop        = "crop"
	FieldRotate      = "rotate"
	FieldTranslate   = "translate"
	FieldBrightness  = "brightness"
	FieldContrast    = "contrast"
	FieldSaturation  = "saturation"
	FieldHue         = "hue"
	FieldSharpness   = "sharpness"
	FieldSubset      = "subset"
	FieldDropout     = "dropout"
	FieldDropoutKeep = "dropout_keep"
	FieldEvalCrop    = "eval_crop"
)

// builtinKeys are the keys of an augment block that are not registered
// ops (Ops), in the order the docs list them.
var builtinKeys = []string{FieldPreset, "random_resized_crop", FieldCrop, FieldRotate,
	FieldTranslate, FieldBrightness, FieldContrast, FieldSaturation,
	FieldHue, FieldSharpness, FieldSubset, "random_order", "wrist_colour_only",
	"shared", FieldDropout, FieldDropoutKeep, FieldEvalCrop}

// Keys returns the keys an augment block may hold: the fused stages' and
// the other settings, then each registered op's name.
func Keys() []string {
	keys := slices.Clone(builtinKeys)
	for _, op := range ops {
		keys = append(keys, op.Name)
	}
	return keys
}

// FieldError is a Spec field outside its domain: Field is the config's
// name for it, Value what it holds, Valid what it may hold.
type FieldError struct {
	Field string
	Value string
	Valid string
}

func (e *FieldError) Error() string {
	return fmt.Sprintf("augment %s %s is not valid (valid: %s)", e.Field, e.Value, e.Valid)
}

func fieldErr(field string, v any, valid string) error {
	return &FieldError{Field: field, Value: fmt.Sprint(v), Valid: valid}
}

// Validate reports the first field of s outside its domain as a
// *FieldError naming the field and what it may hold. Checks that need the
// mix's camera slots are ValidateSlots'.
func (s Spec) Validate() error {
	if s.Preset != "" && !slices.Contains(PresetNames(), s.Preset) {
		return fieldErr(FieldPreset, s.Preset, strings.Join(PresetNames(), ", "))
	}
	finite := func(r Range) bool {
		return !math.IsNaN(r.Lo) && !math.IsNaN(r.Hi) && !math.IsInf(r.Lo, 0) && !math.IsInf(r.Hi, 0)
	}
	if c := s.ResizedCrop; c.on() {
		if !finite(c.Scale) || !(c.Scale.Lo > 0 && c.Scale.Lo <= c.Scale.Hi && c.Scale.Hi <= 1) {
			return fieldErr(FieldScale, c.Scale, "[lo, hi] with 0 < lo ≤ hi ≤ 1, the area fraction")
		}
		if !finite(c.Ratio) || !(c.Ratio.Lo > 0 && c.Ratio.Lo <= c.Ratio.Hi) {
			return fieldErr(FieldRatio, c.Ratio, "[lo, hi] with 0 < lo ≤ hi, the width/height ratio")
		}
		if s.Crop != 0 {
			return fieldErr(FieldCrop, s.Crop, "0 (none) when random_resized_crop is set: one crop at a time")
		}
	}
	if !(s.Crop >= 0 && s.Crop <= 1) {
		return fieldErr(FieldCrop, s.Crop, "an area fraction in (0, 1], or 0 for none")
	}
	if !finite(s.Rotate) || !(s.Rotate.Lo <= s.Rotate.Hi && s.Rotate.Lo >= -180 && s.Rotate.Hi <= 180) {
		return fieldErr(FieldRotate, s.Rotate, "degrees [lo, hi] with −180 ≤ lo ≤ hi ≤ 180")
	}
	for _, t := range s.Translate {
		if !(t >= 0 && t < 1) {
			return fieldErr(FieldTranslate, s.Translate, "fractions of the width and height in [0, 1)")
		}
	}
	for _, f := range []struct {
		name string
		r    Range
	}{{FieldBrightness, s.Brightness}, {FieldContrast, s.Contrast}, {FieldSaturation, s.Saturation}, {FieldSharpness, s.Sharpness}} {
		if !finite(f.r) || !(f.r.Lo >= 0 && f.r.Lo <= f.r.Hi) {
			return fieldErr(f.name, f.r, "factors [lo, hi] with 0 ≤ lo ≤ hi (torchvision's b is [max(0, 1−b), 1+b])")
		}
	}
	if !(s.Hue.Lo >= -0.5 && s.Hue.Lo <= s.Hue.Hi && s.Hue.Hi <= 0.5) {
		return fieldErr(FieldHue, s.Hue, "[lo, hi] with −0.5 ≤ lo ≤ hi ≤ 0.5 (torchvision's h is [−h, h], h ≤ 0.5)")
	}
	var buf [numUnits]unit
	if n := len(s.units(buf[:0])); s.Subset < 0 || s.Subset > n {
		return fieldErr(FieldSubset, s.Subset, fmt.Sprintf("0 (all) to %d, the number of ops configured", n))
	}
	if !(s.Dropout >= 0 && s.Dropout < 1) {
		return fieldErr(FieldDropout, s.Dropout, "a probability in [0, 1): 1 would drop every camera")
	}
	if !(s.EvalCrop >= 0 && s.EvalCrop <= 1) {
		return fieldErr(FieldEvalCrop, s.EvalCrop, "an area fraction in (0, 1], or 0 for the training crop's centre twin")
	}
	return s.validateOps()
}

// ValidateSlots checks s against the mix's camera slots: DropoutKeep must
// name one, and dropout needs two cameras it could choose between (with
// one, it would drop every camera it drops).
func (s Spec) ValidateSlots(slots []string) error {
	if s.DropoutKeep != "" && !slices.Contains(slots, s.DropoutKeep) {
		return fieldErr(FieldDropoutKeep, s.DropoutKeep, "one of the camera slots "+strings.Join(slots, ", "))
	}
	if s.Dropout > 0 && len(slots) < 2 {
		return fieldErr(FieldDropout, s.Dropout, fmt.Sprintf("0 with the one camera slot %s: dropping it would drop every camera", strings.Join(slots, "")))
	}
	return nil
}

// OpNames lists the ops a config may name, as it spells them: the fused
// stages', then the registered ops (Ops).
func OpNames() []string {
	names := []string{"random_resized_crop", FieldCrop, FieldRotate, FieldTranslate,
		FieldBrightness, FieldContrast, FieldSaturation, FieldHue, FieldSharpness}
	for _, op := range ops {
		names = append(names, op.Name)
	}
	return names
}

// ValidateOp reports a name that is not one of OpNames as a *FieldError
// for the field "op".
func ValidateOp(name string) error {
	if slices.Contains(OpNames(), name) {
		return nil
	}
	return fieldErr("op", name, strings.Join(OpNames(), ", "))
}

// unit is one op as Subset counts them.
type unit uint8

const (
	unitResizedCrop unit = iota
	unitCrop
	unitAffine
	unitBrightness
	unitContrast
	unitSaturation
	unitHue
	unitSharpness
	numUnits
)

// units appends the ops s configures, in the order above, to u.
func (s Spec) units(u []unit) []unit {
	if s.ResizedCrop.on() {
		u = append(u, unitResizedCrop)
	}
	if s.Crop > 0 && s.Crop < 1 {
		u = append(u, unitCrop)
	}
	if s.Rotate.on() || s.Translate != [2]float64{} {
		u = append(u, unitAffine)
	}
	for i, r := range []Range{s.Brightness, s.Contrast, s.Saturation, s.Hue, s.Sharpness} {
		if r.on() {
			u = append(u, unitBrightness+unit(i))
		}
	}
	return u
}
