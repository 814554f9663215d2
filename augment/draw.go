package augment

import (
	"math"

	"github.com/oxefs/oxefs/frames"
	"github.com/oxefs/oxefs/keyed"
)

// Camera is one camera slot of a sample, as Draw sees it.
type Camera struct {
	// Slot is the camera slot's index in the mix: the key of its draws.
	Slot int
	// Name is the slot's name (for Spec.DropoutKeep).
	Name string
	// Wrist marks a wrist camera (Spec.WristColourOnly).
	Wrist bool
	// Absent: the sample's dataset has no such camera (its frames are
	// zeros anyway); never chosen as the camera dropout keeps.
	Absent bool
}

// domain separates augmentation's draws from every other keyed choice.
var domain = keyed.String("augment")

// sharedSlot stands for the slot in the key when Spec.Shared.
const sharedSlot = math.MaxUint64

// Streams of a camera's key: one per parameter, so that adding one never
// changes another.
const (
	streamScale uint64 = iota + 1
	streamRatio
	streamX
	streamY
	streamAngle
	streamTX
	streamTY
	streamFactor // + the colour op's index
	streamSubset = streamFactor + NumColour
	streamOrder  = streamSubset + uint64(numUnits)
	streamDrop   = streamOrder + NumColour
	streamKeep   = streamDrop + 1
)

// cameraKey is the key of one camera's draws.
func cameraKey(s Spec, seed uint64, batch int64, sample, slot int) uint64 {
	k := uint64(slot)
	if s.Shared {
		k = sharedSlot
	}
	return keyed.Hash(seed, domain, uint64(batch), uint64(sample), k)
}

// uniform draws from [lo, hi] for one stream of key.
func uniform(key, stream uint64, lo, hi float64) float64 {
	return lo + (hi-lo)*keyed.Float(key, stream)
}

// Draw returns the parameters of one camera of sample `sample` of batch
// `batch`: a pure function of (s, seed, batch, sample, cam.Slot) — and of
// nothing else, so a batch is a function of (config, seed, index). Every
// frame of the camera in the sample (its history, both frames of a pair)
// takes the same Params. Dropout is DrawSample's: it looks at every
// camera of the sample.
func Draw(s Spec, seed uint64, batch int64, sample int, cam Camera) Params {
	p := Identity()
	key := cameraKey(s, seed, batch, sample, cam.Slot)
	var ubuf [numUnits]unit
	units := s.units(ubuf[:0])
	if s.Subset > 0 && s.Subset < len(units) {
		// A uniform subset: the first Subset of a Fisher–Yates shuffle.
		for i := range s.Subset {
			j := i + keyed.Draw(key, streamSubset+uint64(i), len(units)-i)
			units[i], units[j] = units[j], units[i]
		}
		units = units[:s.Subset]
	}
	geometry := !(cam.Wrist && s.WristColourOnly)
	var cbuf [NumColour]int
	colour := cbuf[:0]
	for _, u := range units {
		switch u {
		case unitResizedCrop:
			if geometry {
				p.Crop = resizedCrop(s.ResizedCrop, key)
			}
		case unitCrop:
			if geometry {
				side := float32(math.Sqrt(s.Crop))
				p.Crop = frameCrop(side, side, key)
			}
		case unitAffine:
			if geometry {
				p.Affine.Angle = float32(uniform(key, streamAngle, s.Rotate.Lo, s.Rotate.Hi))
				p.Affine.TX = float32(uniform(key, streamTX, -s.Translate[0], s.Translate[0]))
				p.Affine.TY = float32(uniform(key, streamTY, -s.Translate[1], s.Translate[1]))
			}
		default:
			i := int(u - unitBrightness)
			r := [NumColour]Range{s.Brightness, s.Contrast, s.Saturation, s.Hue, s.Sharpness}[i]
			p.Factor[i] = float32(uniform(key, streamFactor+uint64(i), r.Lo, r.Hi))
			colour = append(colour, i)
		}
	}
	// colour is in the canonical order; a random order is a shuffle of it.
	if s.RandomOrder {
		for i := len(colour) - 1; i > 0; i-- {
			j := keyed.Draw(key, streamOrder+uint64(i), i+1)
			colour[i], colour[j] = colour[j], colour[i]
		}
	}
	for pos, i := range colour {
		p.Place[i] = uint8(pos + 1)
	}
	s.drawOps(&p, key, geometry)
	return p
}

// resizedCrop draws a random resized crop in fractions of the source's
// sides: √(scale·ratio) wide, √(scale/ratio) high, each at most 1.
func resizedCrop(c ResizedCrop, key uint64) frames.CropBox {
	scale := uniform(key, streamScale, c.Scale.Lo, c.Scale.Hi)
	ratio := math.Exp(uniform(key, streamRatio, math.Log(c.Ratio.Lo), math.Log(c.Ratio.Hi)))
	w := float32(min(math.Sqrt(scale*ratio), 1))
	h := float32(min(math.Sqrt(scale/ratio), 1))
	return frameCrop(w, h, key)
}

// frameCrop places a w×h crop (fractions) uniformly.
func frameCrop(w, h float32, key uint64) frames.CropBox {
	return frames.CropBox{W: w, H: h, X: float32(keyed.Float(key, streamX)), Y: float32(keyed.Float(key, streamY))}
}

// DrawSample returns the Params of every camera of a sample (Draw for
// each) with dropout: each camera that is present is dropped with
// probability s.Dropout, except s.DropoutKeep; when that would drop every
// present camera, one of them, chosen uniformly, is kept. It appends to
// dst.
func DrawSample(dst []Params, s Spec, seed uint64, batch int64, sample int, cams []Camera) []Params {
	start := len(dst)
	for _, c := range cams {
		dst = append(dst, Draw(s, seed, batch, sample, c))
	}
	if s.Dropout <= 0 {
		return dst
	}
	ps := dst[start:]
	present, kept := 0, 0
	for i, c := range cams {
		if c.Absent {
			continue
		}
		present++
		// Dropout is per camera even when the other draws are shared.
		key := keyed.Hash(seed, domain, uint64(batch), uint64(sample), uint64(c.Slot))
		ps[i].Drop = c.Name != s.DropoutKeep && keyed.Float(key, streamDrop) < s.Dropout
		if !ps[i].Drop {
			kept++
		}
	}
	if present > 0 && kept == 0 {
		keep := keyed.Draw(keyed.Hash(seed, domain, uint64(batch), uint64(sample)), streamKeep, present)
		for i, c := range cams {
			if c.Absent {
				continue
			}
			if keep == 0 {
				ps[i].Drop = false
				break
			}
			keep--
		}
	}
	return dst
}

// Eval returns the Params of a val frame: no augmentation but the centre
// twin of the configured crop (see Spec.EvalCrop); wrist cameras under
// WristColourOnly get none.
func Eval(s Spec, cam Camera) Params {
	p := Identity()
	if cam.Wrist && s.WristColourOnly {
		return p
	}
	area := s.EvalCrop
	if area == 0 {
		switch {
		case s.Crop > 0:
			area = s.Crop
		case s.ResizedCrop.on():
			area = (s.ResizedCrop.Scale.Lo + s.ResizedCrop.Scale.Hi) / 2
		default:
			area = 1
		}
	}
	side := float32(math.Sqrt(area))
	p.Crop.W, p.Crop.H = side, side
	return p
}
