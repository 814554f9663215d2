package frames

import (
	"testing"

	"github.com/oxefs/oxefs/internal/missing"
)

// expectedFrames is TensorFlow's decode and resizes of fixture frames
// (testdata/generate.py at the repository root).
const expectedFrames = "../testdata/expected_frames"

// testDecoder returns a decoder closed at the end of the test. When
// libjpeg-turbo is asked for and cannot be had, the test is skipped with a
// message saying so.
func testDecoder(t testing.TB, choice string) *Decoder {
	t.Helper()
	d, err := NewDecoder(DecoderOptions{JPEG: choice})
	if err != nil {
		missing.Skip(t, missing.TurboJPEG, err)
	}
	t.Cleanup(d.Close)
	return d
}

// single returns a one-frame BFHWC destination of h×w.
func single(h, w int) frameDst {
	return newFrameDst(make([]byte, h*w*3), BFHWC, 0, 1, h, w)
}
