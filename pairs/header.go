package pairs

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// pngSize reads a PNG's size from its IHDR chunk, which must come first.
func pngSize(b []byte) (w, h int, err error) {
	// signature (8), length (4), "IHDR" (4), width (4), height (4)
	if len(b) < 24 || string(b[12:16]) != "IHDR" {
		return 0, 0, errors.New("png: no IHDR chunk")
	}
	return int(binary.BigEndian.Uint32(b[16:20])), int(binary.BigEndian.Uint32(b[20:24])), nil
}

// jpegSize reads a JPEG's size from its frame header (SOFn), walking the
// marker segments that precede it.
func jpegSize(b []byte) (w, h int, err error) {
	if len(b) < 4 || b[0] != 0xFF || b[1] != 0xD8 {
		return 0, 0, errors.New("jpeg: no SOI marker")
	}
	for i := 2; ; {
		for i < len(b) && b[i] == 0xFF { // fill bytes, then the marker
			i++
		}
		if i >= len(b) {
			return 0, 0, errors.New("jpeg: no frame header")
		}
		m := b[i]
		i++
		switch {
		case m == 0xD8 || m == 0x01 || (m >= 0xD0 && m <= 0xD7): // no length
			continue
		case m == 0xD9 || m == 0xDA:
			return 0, 0, fmt.Errorf("jpeg: marker %#x before the frame header", m)
		}
		if i+2 > len(b) {
			return 0, 0, errors.New("jpeg: header cut short")
		}
		n := int(binary.BigEndian.Uint16(b[i:]))
		if n < 2 || i+n > len(b) {
			return 0, 0, errors.New("jpeg: header cut short")
		}
		if m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC { // SOF0..SOF15
			if n < 7 {
				return 0, 0, errors.New("jpeg: frame header too short")
			}
			return int(binary.BigEndian.Uint16(b[i+5:])), int(binary.BigEndian.Uint16(b[i+3:])), nil
		}
		i += n
	}
}
