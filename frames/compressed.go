package frames

// Compressed returns step's image as the JPEG the source stores, for a
// reader that decodes it itself, with the size its header declares, when
// that is safe to hand over: a JPEG of one or three components (gray or
// YCbCr: what a decoder turns into RGB as this package does) whose frame
// header parses, whose size is within the bounds and is want's (a zero
// field is not checked; Size, where the source sets it, is checked too),
// whose data ends in an EOI marker (a whole image), and which fits in room
// bytes. Otherwise ok is false and the frame is to be decoded by Decode,
// which reports whatever is wrong with it as it always does.
func (s *Images) Compressed(step int, want Size, room int) (b []byte, size Size, ok bool) {
	if step < 0 || step >= s.Steps {
		return nil, Size{}, false
	}
	b = s.Encoded.Bytes(step)
	if len(b) == 0 || len(b) > room || sniff(b) != formatJPEG || !endsWithEOI(b) {
		return nil, Size{}, false
	}
	h, err := jpegHeader(b)
	if err != nil || (h.comps != 1 && h.comps != 3) {
		return nil, Size{}, false
	}
	if want.check(h.w, h.h, "") != nil || s.Size.check(h.w, h.h, "") != nil {
		return nil, Size{}, false
	}
	return b, Size{W: h.w, H: h.h}, true
}

// endsWithEOI reports whether a JPEG's last marker is its end of image
// (FF D9), allowing the zero padding some writers leave after it.
func endsWithEOI(b []byte) bool {
	i := len(b) - 1
	for i > 0 && b[i] == 0 && len(b)-i <= 16 {
		i--
	}
	return i >= 1 && b[i] == 0xD9 && b[i-1] == 0xFF
}
