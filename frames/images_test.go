package frames

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// steps is an Encoded camera held in memory.
type steps [][]byte

func (s steps) Bytes(i int) []byte { return s[i] }

func readTestImage(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestImagesSource: frames written through the Source are the frames
// decoded and written one by one, in either layout, resized or at their
// own size (decoded in place), in the order asked; the decode memory is
// given back afterwards.
func TestImagesSource(t *testing.T) {
	jpg := readTestImage(t, "jpeg420.jpg") // 37x29
	png := readTestImage(t, "pngrgba.png") // 37x29
	cam := steps{jpg, png, jpg, png}
	for _, choice := range []string{JPEGTurbo, JPEGGo} {
		t.Run(choice, func(t *testing.T) {
			d := testDecoder(t, choice)
			src := &Images{Key: "cam", Steps: len(cam), Encoded: cam, Size: Size{W: 37, H: 29}, SizeFrom: "declared"}
			idx := []int{0, 1, 3}
			for _, tc := range []struct {
				name   string
				h, w   int
				layout Layout
				resize ResizeMode
			}{
				{"squash BFHWC", 16, 20, BFHWC, Squash},
				{"crop BCFHW", 16, 16, BCFHW, Crop},
				{"pad BFHWC", 16, 16, BFHWC, Pad},
				{"own size BFHWC", 29, 37, BFHWC, Squash},
				{"own size BCFHW", 29, 37, BCFHW, Squash},
			} {
				slot := Slot{Buf: bytes.Repeat([]byte{0xEE}, len(idx)*tc.h*tc.w*3), Frames: len(idx), H: tc.h, W: tc.w, Layout: tc.layout, Resize: tc.resize}
				if err := src.Decode(t.Context(), d, idx, slot); err != nil {
					t.Fatalf("%s: %v", tc.name, err)
				}
				if held, _, _ := d.mem.Stats(); held != 0 {
					t.Errorf("%s: %d bytes of decode memory still held", tc.name, held)
				}
				for k, step := range idx {
					img, err := d.decode(cam[step], Size{}, "", nil, 0, 0, fit{})
					if err != nil {
						t.Fatal(err)
					}
					want := single(tc.h, tc.w)
					d.rz.write(want, tc.resize, img)
					d.release()
					if got := frameHWC(slot.Buf, tc.layout, k, len(idx), tc.h, tc.w); !bytes.Equal(got, want.buf) {
						t.Errorf("%s: frame %d (step %d) differs from the step decoded alone", tc.name, k, step)
					}
				}
			}
		})
	}
}

// TestImagesSourceErrors: bad frame data is an *ImageError naming the
// camera and step, wrapping the cause; a frame whose size differs from the
// expected one, or from the first frame's when none is expected, is
// ErrImageSize; a malformed request is not an *ImageError.
func TestImagesSourceErrors(t *testing.T) {
	jpg := readTestImage(t, "jpeg420.jpg")         // 37x29
	small := readTestImage(t, "jpeg420blocks.jpg") // 48x32
	cam := steps{jpg, small, nil, []byte("GIF89a")}
	d := testDecoder(t, JPEGGo)
	slot := func(f int) Slot { return Slot{Buf: make([]byte, f*8*8*3), Frames: f, H: 8, W: 8} }
	for _, tc := range []struct {
		name  string
		size  Size
		idx   []int
		cause error
		text  string
	}{
		{"expected size", Size{W: 37, H: 29}, []int{0, 1}, ErrImageSize, "cam step 1: unexpected image size: decoded 48x32 (WxH), declared 37x29"},
		{"first frame's size", Size{}, []int{0, 1}, ErrImageSize, "the sample's first frame is 37x29"},
		{"empty", Size{}, []int{0, 2}, ErrEmptyImage, "cam step 2"},
		{"not an image", Size{}, []int{3, 0}, ErrImageFormat, "cam step 3"},
	} {
		src := &Images{Key: "cam", Steps: len(cam), Encoded: cam, Size: tc.size, SizeFrom: "declared"}
		err := src.Decode(t.Context(), d, tc.idx, slot(len(tc.idx)))
		var ie *ImageError
		if !errors.As(err, &ie) || !errors.Is(err, tc.cause) || !strings.Contains(err.Error(), tc.text) {
			t.Errorf("%s: %v, want an *ImageError wrapping %v saying %q", tc.name, err, tc.cause, tc.text)
		}
		if held, _, _ := d.mem.Stats(); held != 0 {
			t.Errorf("%s: %d bytes of decode memory still held", tc.name, held)
		}
	}
	src := &Images{Key: "cam", Steps: len(cam), Encoded: cam}
	for name, call := range map[string]func() error{
		"index past the end":        func() error { return src.Decode(t.Context(), d, []int{0, 4}, slot(2)) },
		"negative index":            func() error { return src.Decode(t.Context(), d, []int{-1, 0}, slot(2)) },
		"more frames than the slot": func() error { return src.Decode(t.Context(), d, []int{0, 0, 0}, slot(2)) },
		"slot too small": func() error {
			s := slot(2)
			s.Buf = s.Buf[:10]
			return src.Decode(t.Context(), d, []int{0, 0}, s)
		},
		"unknown layout": func() error {
			s := slot(2)
			s.Layout = 7
			return src.Decode(t.Context(), d, []int{0, 0}, s)
		},
	} {
		err := call()
		var ie *ImageError
		if err == nil || errors.As(err, &ie) {
			t.Errorf("%s: %v, want an error that is not an *ImageError", name, err)
		}
	}
}

// TestImagesDecodeAllocs: through the Source interface, the libjpeg-turbo
// path allocates nothing per frame in steady state, resized or decoded in
// place.
func TestImagesDecodeAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	d := testDecoder(t, JPEGTurbo)
	cam := steps{photoJPEG(t, 64, 48), photoJPEG(t, 64, 48)}
	var src Source = &Images{Key: "cam", Steps: len(cam), Encoded: cam, Size: Size{W: 64, H: 48}}
	idx := []int{0, 1}
	for _, tc := range []struct {
		name   string
		h, w   int
		layout Layout
	}{{"resize BFHWC", 32, 32, BFHWC}, {"resize BCFHW", 32, 32, BCFHW}, {"in place BFHWC", 48, 64, BFHWC}} {
		slot := Slot{Buf: make([]byte, 2*tc.h*tc.w*3), Frames: 2, H: tc.h, W: tc.w, Layout: tc.layout}
		ctx := t.Context()
		decode := func() {
			if err := src.Decode(ctx, d, idx, slot); err != nil {
				t.Fatal(err)
			}
		}
		decode()
		if n := testing.AllocsPerRun(20, decode); n != 0 {
			t.Errorf("%s: %.1f allocations per 2 frames, want 0", tc.name, n)
		}
	}
}
