package frames

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// pngInfo is what a PNG's IHDR chunk says about the image.
type pngInfo struct {
	w, h       int
	depth      int  // bits per sample
	colorType  int  // 0 gray, 2 RGB, 3 paletted, 4 gray+alpha, 6 RGBA
	interlaced bool // Adam7
}

// pngHeader reads a PNG's IHDR chunk, which must come first.
func pngHeader(b []byte) (pngInfo, error) {
	// signature (8), length (4), "IHDR" (4), width (4), height (4),
	// bit depth, colour type, compression, filter, interlace
	if len(b) < 29 || string(b[12:16]) != "IHDR" {
		return pngInfo{}, errors.New("png: no IHDR chunk")
	}
	w, h := binary.BigEndian.Uint32(b[16:20]), binary.BigEndian.Uint32(b[20:24])
	if w > 1<<31-1 || h > 1<<31-1 {
		return pngInfo{}, fmt.Errorf("png: %dx%d (WxH) image", w, h)
	}
	return pngInfo{w: int(w), h: int(h), depth: int(b[24]), colorType: int(b[25]), interlaced: b[28] == 1}, nil
}

// goBytes bounds what image/png allocates to decode the image: its pixels
// in the type it returns (8 bytes a pixel for 16-bit samples, 1 for a
// palette, 4 otherwise: RGBA, or NRGBA when a tRNS chunk makes gray or RGB
// transparent), twice that for an interlaced image, whose passes are
// decoded apart.
func (p pngInfo) goBytes() int64 {
	bpp := int64(4)
	switch {
	case p.depth == 16:
		bpp = 8
	case p.colorType == 3:
		bpp = 1
	}
	n := int64(p.w) * int64(p.h) * bpp
	if p.interlaced {
		n *= 2
	}
	return n
}

// jpegInfo is what a JPEG's frame header (SOFn) says about the image.
type jpegInfo struct {
	w, h        int
	comps       int // colour components: 1 gray, 3 YCbCr, 4 CMYK/YCCK
	progressive bool
}

// jpegHeader reads a JPEG's frame header (SOFn), walking the marker
// segments that precede it.
func jpegHeader(b []byte) (jpegInfo, error) {
	if len(b) < 4 || b[0] != 0xFF || b[1] != 0xD8 {
		return jpegInfo{}, errors.New("jpeg: no SOI marker")
	}
	for i := 2; ; {
		for i < len(b) && b[i] == 0xFF { // fill bytes, then the marker
			i++
		}
		if i >= len(b) {
			return jpegInfo{}, errors.New("jpeg: no frame header")
		}
		m := b[i]
		i++
		switch {
		case m == 0xD8 || m == 0x01 || (m >= 0xD0 && m <= 0xD7): // no length
			continue
		case m == 0xD9 || m == 0xDA:
			return jpegInfo{}, fmt.Errorf("jpeg: marker %#x before the frame header", m)
		}
		if i+2 > len(b) {
			return jpegInfo{}, errors.New("jpeg: header cut short")
		}
		n := int(binary.BigEndian.Uint16(b[i:]))
		if n < 2 || i+n > len(b) {
			return jpegInfo{}, errors.New("jpeg: header cut short")
		}
		if m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC { // SOF0..SOF15
			// length (2), precision (1), height (2), width (2), components (1)
			if n < 8 {
				return jpegInfo{}, errors.New("jpeg: frame header too short")
			}
			return jpegInfo{
				w:           int(binary.BigEndian.Uint16(b[i+5:])),
				h:           int(binary.BigEndian.Uint16(b[i+3:])),
				comps:       max(int(b[i+7]), 1),
				progressive: m == 0xC2 || m == 0xC6 || m == 0xCA || m == 0xCE,
			}, nil
		}
		i += n
	}
}

// area is the pixels a decoder works on: the image padded to whole 16×16
// MCUs.
func (j jpegInfo) area() int64 { return int64(j.w+15) * int64(j.h+15) }

// goBytes bounds what image/jpeg allocates: one plane of at most a byte a
// pixel per component, plus, for a progressive JPEG, every component's
// coefficients (64 int32s per 8×8 block).
func (j jpegInfo) goBytes() int64 {
	per := int64(j.comps)
	if j.progressive {
		per += 4 * int64(j.comps)
	}
	return j.area() * per
}

// turboBytes bounds what libjpeg-turbo allocates beyond the output frame:
// for a progressive JPEG, every component's coefficients (64 int16s per
// 8×8 block); a baseline JPEG is decoded a few rows at a time.
func (j jpegInfo) turboBytes() int64 {
	if !j.progressive {
		return 0
	}
	return j.area() * 2 * int64(j.comps)
}
