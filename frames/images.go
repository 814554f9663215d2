package frames

import "context"

// Encoded is one encoded image (JPEG or PNG) per step, as a format stores a
// camera: Bytes(step) is that step's image, shared and never modified.
type Encoded interface {
	Bytes(step int) []byte
}

// Images is a Source of one encoded image per step, each decoded by the
// Decoder (libjpeg-turbo or image/jpeg for JPEG, image/png for PNG) and
// written into the slot: straight into it when the layout is BFHWC and the
// image already has the slot's size, else copied or resized there (see
// ResizeMode), then augmented as the slot's Augment says (a dropped
// camera's frames are zeros, not decoded). It reads nothing and ignores ctx. The frames of one sample
// must all have one size: Size where it is set, else the first frame's; any
// other size is ErrImageSize.
type Images struct {
	// Key names the camera in errors: the image feature's key.
	Key string
	// Steps is the number of frames.
	Steps int
	// Encoded gives each step's image.
	Encoded Encoded
	// Size is the size every frame must have; a zero field is not checked.
	Size Size
	// SizeFrom says where Size comes from, for errors: "features.json
	// declares". Empty: "expected".
	SizeFrom string
}

var _ Source = (*Images)(nil)

// Len returns Steps.
func (s *Images) Len() int { return s.Steps }

// Decode decodes and writes the frames idx into dst; see Source.
func (s *Images) Decode(_ context.Context, d *Decoder, idx []int, dst Slot) error {
	want, what, err := checkRequest(s.Key, s.Steps, idx, dst, s.Size, s.SizeFrom)
	if err != nil {
		return err
	}
	if dst.Augment.Drop {
		clear(dst.Buf)
		return nil
	}
	f := dst.fitOf()
	for k, step := range idx {
		fd := dst.frame(k)
		var direct []byte
		if !dst.Augment.geometric() {
			direct, _ = fd.interleaved()
		}
		img, err := d.decode(s.Encoded.Bytes(step), want, what, direct, dst.W, dst.H, f)
		if err != nil {
			return &ImageError{Key: s.Key, Step: step, Err: err}
		}
		if k == 0 && (want.W == 0 || want.H == 0) {
			want, what = img.Encoded, "the sample's first frame is"
		}
		if direct != nil && &img.Pix[0] == &direct[0] {
			// decoded in place, already the slot's size
			if c := dst.Augment.Colour; len(c) > 0 {
				d.colour.apply(fd, c)
			}
			applyOps(fd, dst.Augment.Ops)
			continue
		}
		d.write(fd, dst, img)
	}
	d.release() // the last frame is written: its decode memory goes back
	return nil
}
