package steps

import (
	"fmt"
	"github.com/oxefs/oxefs/internal/npy"

	"github.com/oxefs/oxefs/augment"
	"github.com/oxefs/oxefs/config"
)

// Spec is the mix's side of step samples: what every dataset's samples
// share. It fixes the batch's Layout.
type Spec struct {
	BatchSize int
	// Slots are the camera slots, in config order.
	Slots []SlotSpec
	// StateSteps and ActionSteps are the lengths of the state and action
	// deltas (Ts, H).
	StateSteps, ActionSteps int
	// MaxStateDim and MaxActionDim are the mix's widest state and action
	// (S, A); a dimension of 0 leaves the state (or action) arrays out.
	MaxStateDim, MaxActionDim int
	Layout                    config.Layout
	Resize                    config.ResizeMode
	Decode                    config.DecodeMode
	// DropLast: t ∈ [0, steps−DropLast).
	DropLast int
	// SamplesPerEpisode is the mix's: 0, t is the sample's unit; n ≥ 1, t
	// is drawn.
	SamplesPerEpisode int
}

// SlotSpec is one camera slot: its name, frame size and number of deltas.
type SlotSpec struct {
	Name  string
	H, W  int
	Steps int // T
	// Augmented: the slot's augmentation parameters are recorded, one
	// row of augment.Width() float32 per sample
	// (observation.images.<Name>.augment).
	Augmented bool
	// Decode is the slot's decode mode (the slot's own, else the mix's).
	// With config.DecodeGPU, JPEG frames are served compressed and their
	// sizes recorded (observation.images.<Name>.jpeg_size).
	Decode config.DecodeMode
}

// SpecOf is the Spec of a config in step mode, with the mix's widest state
// and action.
func SpecOf(c *config.Config, maxStateDim, maxActionDim int) Spec {
	s := c.Steps
	sp := Spec{
		BatchSize:         c.BatchSize,
		StateSteps:        max(s.State.Len(), 1),
		ActionSteps:       max(s.Action.Len(), 1),
		MaxStateDim:       maxStateDim,
		MaxActionDim:      maxActionDim,
		Layout:            c.Layout,
		Resize:            c.Resize,
		Decode:            c.Decode,
		DropLast:          s.DropLast,
		SamplesPerEpisode: c.SamplesPerEpisode,
	}
	for _, cs := range s.Cameras {
		h, w := cs.Size[0], cs.Size[1]
		if h == 0 || w == 0 {
			h, w = c.ImageSize[0], c.ImageSize[1]
		}
		sp.Slots = append(sp.Slots, SlotSpec{Name: cs.Name, H: h, W: w, Steps: max(cs.Deltas.Len(), 1), Augmented: c.Augmented(cs.Name), Decode: c.DecodeOf(cs.Name)})
	}
	return sp
}

// The dtypes of the arrays.
const (
	DTypeU8   = "|u1"
	DTypeBool = "|b1"
	DTypeF32  = "<f4"
	DTypeI32  = "<i4"
	DTypeI64  = "<i8"
)

// FileAlign is where every file of a batch starts in its buffer: a page,
// so that each file can be a memfd of its own mapped at its place in the
// buffer and served from that memfd's offset 0 (FUSE passthrough; see
// batch.Config.Parts). It changes no file's bytes, only the padding
// between files in the buffer (a few KiB a batch).
const FileAlign = 4096

// Array is one array of a batch: one .npy file, a range of the batch's
// buffer.
type Array struct {
	// Name is the array's key (observation.images.primary, action, …);
	// File the file name after "NNNNNN." (Name + ".npy").
	Name  string `json:"name"`
	File  string `json:"file"`
	DType string `json:"dtype"`
	Shape []int  `json:"shape"`
	// Off is where the file starts in the batch's buffer, a multiple of
	// FileAlign; Size the file's bytes, its header included; Header the header's.
	Off    int64 `json:"-"`
	Size   int64 `json:"-"`
	Header int   `json:"-"`

	header []byte
	elem   int // bytes per element
}

// Data is where the array's values start in the batch's buffer.
func (a *Array) Data() int64 { return a.Off + int64(a.Header) }

// PerSample is the bytes of one sample's part: the array's values are
// [B][…], one sample after the other.
func (a *Array) PerSample() int {
	n := a.elem
	for _, d := range a.Shape[1:] {
		n *= d
	}
	return n
}

// Layout is the batch of step samples: its arrays, in the contract's
// order, and the size of the buffer that holds them all.
type Layout struct {
	Arrays []Array
	// Total is the buffer's size in bytes.
	Total int64

	// indices into Arrays; -1 when absent
	frames, framePad []int // by slot
	augment          []int // by slot; -1: not augmented
	jpegSize         []int // by slot; -1: not decode: gpu
	imageMask        int
	state, statePad  int
	stateMask        int
	action, actPad   int
	actionMask       int
	datasetIndex     int
	frameIndex       int
	samplePad        int
}

// NewLayout lays out the arrays of spec's batches.
func NewLayout(spec Spec) (*Layout, error) {
	if spec.BatchSize < 1 {
		return nil, fmt.Errorf("batch size %d", spec.BatchSize)
	}
	if !spec.Layout.Valid() {
		return nil, fmt.Errorf("layout %v is not valid", spec.Layout)
	}
	l := &Layout{state: -1, statePad: -1, stateMask: -1, action: -1, actPad: -1, actionMask: -1}
	b := spec.BatchSize
	add := func(name, dtype string, elem int, shape ...int) int {
		l.Arrays = append(l.Arrays, Array{Name: name, File: name + ".npy", DType: dtype, Shape: append([]int{b}, shape...), elem: elem})
		return len(l.Arrays) - 1
	}
	for _, s := range spec.Slots {
		if s.H < 1 || s.W < 1 || s.Steps < 1 {
			return nil, fmt.Errorf("camera slot %s: %d frames of %dx%d", s.Name, s.Steps, s.H, s.W)
		}
		name := "observation.images." + s.Name
		if spec.Layout == config.BCFHW {
			l.frames = append(l.frames, add(name, DTypeU8, 1, 3, s.Steps, s.H, s.W))
		} else {
			l.frames = append(l.frames, add(name, DTypeU8, 1, s.Steps, s.H, s.W, 3))
		}
	}
	for _, s := range spec.Slots {
		l.framePad = append(l.framePad, add("observation.images."+s.Name+"_is_pad", DTypeBool, 1, s.Steps))
	}
	for _, s := range spec.Slots {
		k := -1
		if s.Augmented {
			k = add(AugmentArray(s.Name), DTypeF32, 4, augment.Width())
		}
		l.augment = append(l.augment, k)
	}
	for _, s := range spec.Slots {
		k := -1
		if s.Decode == config.DecodeGPU {
			if spec.Layout != config.BFHWC {
				return nil, fmt.Errorf("camera slot %s: decode gpu needs layout BFHWC, not %v", s.Name, spec.Layout)
			}
			k = add(JPEGSizeArray(s.Name), DTypeI32, 4, s.Steps)
		}
		l.jpegSize = append(l.jpegSize, k)
	}
	l.imageMask = add("image_mask", DTypeBool, 1, len(spec.Slots))
	if spec.MaxStateDim > 0 {
		l.state = add("observation.state", DTypeF32, 4, spec.StateSteps, spec.MaxStateDim)
		l.statePad = add("observation.state_is_pad", DTypeBool, 1, spec.StateSteps)
		l.stateMask = add("state_mask", DTypeBool, 1, spec.MaxStateDim)
	}
	if spec.MaxActionDim > 0 {
		l.action = add("action", DTypeF32, 4, spec.ActionSteps, spec.MaxActionDim)
		l.actPad = add("action_is_pad", DTypeBool, 1, spec.ActionSteps)
		l.actionMask = add("action_mask", DTypeBool, 1, spec.MaxActionDim)
	}
	l.datasetIndex = add("dataset_index", DTypeI64, 8)
	l.frameIndex = add("frame_index", DTypeI64, 8)
	l.samplePad = add("sample_is_pad", DTypeBool, 1)

	var off int64
	for i := range l.Arrays {
		a := &l.Arrays[i]
		a.header = npy.Header(a.DType, a.Shape)
		a.Header = len(a.header)
		a.Off = off
		a.Size = int64(a.Header) + int64(b)*int64(a.PerSample())
		off = (off + a.Size + FileAlign - 1) / FileAlign * FileAlign
	}
	l.Total = off
	return l, nil
}

// AugmentArray is the name of the array that records slot's augmentation
// parameters: [B, augment.Width()] float32, augment.Columns.
func AugmentArray(slot string) string { return "observation.images." + slot + ".augment" }

// JPEGSizeArray is the name of the array that gives, for a slot whose
// frames may be served compressed (decode: gpu), each frame's JPEG size
// in bytes, 0 where the frame holds pixels: int32 [B, T]. A compressed
// frame's bytes start at the frame's own place in the slot's array.
func JPEGSizeArray(slot string) string { return "observation.images." + slot + ".jpeg_size" }

// Array returns the array of that name, nil if the layout has none.
func (l *Layout) Array(name string) *Array {
	for i := range l.Arrays {
		if l.Arrays[i].Name == name {
			return &l.Arrays[i]
		}
	}
	return nil
}

// WriteHeaders writes every array's .npy header into buf, a batch buffer
// of Total bytes, and zeroes the padding between files, so that every
// byte of the buffer is the builder's.
func (l *Layout) WriteHeaders(buf []byte) {
	for i := range l.Arrays {
		a := &l.Arrays[i]
		copy(buf[a.Off:], a.header)
		end := a.Off + a.Size
		next := l.Total
		if i+1 < len(l.Arrays) {
			next = l.Arrays[i+1].Off
		}
		clear(buf[end:next])
	}
}

// SetSamplePad writes sample i's sample_is_pad in buf, a batch buffer:
// true for a sample that only fills the batch (the val view's repeats).
// Every sample's is written by the builder, since buffers are reused.
func (l *Layout) SetSamplePad(buf []byte, i int, pad bool) {
	var v byte
	if pad {
		v = 1
	}
	l.sample(buf, l.samplePad, i)[0] = v
}

// sample returns sample i's part of array k in buf.
func (l *Layout) sample(buf []byte, k, i int) []byte {
	a := &l.Arrays[k]
	n := a.PerSample()
	at := a.Data() + int64(i*n)
	return buf[at : at+int64(n)]
}
