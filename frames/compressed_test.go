package frames

import (
	"bytes"
	"image"
	"image/color"
	"image/jpeg"
	"os"
	"testing"
)

// bytesOf is an Encoded of fixed images.
type bytesOf [][]byte

func (b bytesOf) Bytes(step int) []byte { return b[step] }

// TestCompressed: a whole JPEG of the expected size is handed over as
// stored, with its size; anything the daemon must decode itself is not.
func TestCompressed(t *testing.T) {
	real, err := os.ReadFile("testdata/jpeg420.jpg")
	if err != nil {
		t.Fatal(err)
	}
	h, err := jpegHeader(real)
	if err != nil {
		t.Fatal(err)
	}
	size := Size{W: h.w, H: h.h}
	var gray bytes.Buffer
	img := image.NewGray(image.Rect(0, 0, 16, 8))
	img.Set(3, 3, color.Gray{Y: 200})
	if err := jpeg.Encode(&gray, img, nil); err != nil {
		t.Fatal(err)
	}
	padded := append(append([]byte{}, real...), 0, 0, 0)
	for _, tc := range []struct {
		name       string
		b          []byte
		want, decl Size
		room       int
		ok         bool
		wantSize   Size
	}{
		{"a whole JPEG", real, Size{}, Size{}, len(real), true, size},
		{"the size expected", real, size, size, 1 << 20, true, size},
		{"zero padding after the end", padded, Size{}, Size{}, 1 << 20, true, size},
		{"gray", gray.Bytes(), Size{}, Size{W: 16, H: 8}, 1 << 20, true, Size{W: 16, H: 8}},
		{"no room", real, Size{}, Size{}, len(real) - 1, false, Size{}},
		{"another size than the first frame's", real, Size{W: h.w + 1}, Size{}, 1 << 20, false, Size{}},
		{"another size than declared", real, Size{}, Size{H: h.h + 1}, 1 << 20, false, Size{}},
		{"cut short", real[:len(real)/2], Size{}, Size{}, 1 << 20, false, Size{}},
		{"empty", nil, Size{}, Size{}, 1 << 20, false, Size{}},
		{"PNG", []byte("\x89PNG\r\n\x1a\nrest"), Size{}, Size{}, 1 << 20, false, Size{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &Images{Key: "cam", Steps: 1, Encoded: bytesOf{tc.b}, Size: tc.decl}
			b, got, ok := s.Compressed(0, tc.want, tc.room)
			if ok != tc.ok || got != tc.wantSize {
				t.Fatalf("ok %v size %v, want ok %v size %v", ok, got, tc.ok, tc.wantSize)
			}
			if ok && !bytes.Equal(b, tc.b) {
				t.Fatal("the bytes handed over are not the stored image's")
			}
		})
	}
	if _, _, ok := (&Images{Steps: 1, Encoded: bytesOf{real}}).Compressed(1, Size{}, 1<<20); ok {
		t.Error("a step past the end was handed over")
	}
}
