package sample

import (
	"context"
	"fmt"

	"github.com/oxefs/oxefs/frames"
)

// FrameDecoder turns frames of a camera into pixels in a slot: the one
// place a decoder backend plugs in. Each decode worker owns one, chosen
// once when the worker pool starts (loader/kind.go).
type FrameDecoder interface {
	// Decode writes frame steps[k] of src into frame k of dst for every
	// k, with the transform parameters p applied (nil: none). steps are
	// ascending. Errors are those of frames.Source.Decode.
	Decode(ctx context.Context, src frames.Source, steps []int, dst frames.Slot, p Params) error
	// Name names the decoder for logs and info.json.
	Name() string
	// Footprint is the bytes its reusable buffers hold.
	Footprint() int
	Close()
}

// CPU decodes on the worker's core with a frames.Decoder: libjpeg-turbo or
// image/jpeg, image/png, and libavcodec for video (package frames). It
// applies no transform: a decoder that augments wraps it and is given
// the Params it draws.
type CPU struct{ d *frames.Decoder }

// NewCPU returns a CPU decoder made with opts.
func NewCPU(opts frames.DecoderOptions) (*CPU, error) {
	d, err := frames.NewDecoder(opts)
	if err != nil {
		return nil, err
	}
	return &CPU{d: d}, nil
}

// Decode decodes with the frames.Decoder; Params other than nil are a
// caller's mistake (no Transformer draws them for this decoder).
func (c *CPU) Decode(ctx context.Context, src frames.Source, steps []int, dst frames.Slot, p Params) error {
	if p != nil {
		return fmt.Errorf("the CPU decoder applies no transform, asked for %v", p)
	}
	return src.Decode(ctx, c.d, steps, dst)
}

// Frames returns the frames.Decoder it decodes with.
func (c *CPU) Frames() *frames.Decoder { return c.d }

// Name names the JPEG decoder in use.
func (c *CPU) Name() string { return c.d.Name() }

// Footprint is the decoder's buffers.
func (c *CPU) Footprint() int { return c.d.Footprint() }

// Close closes the decoder.
func (c *CPU) Close() { c.d.Close() }
