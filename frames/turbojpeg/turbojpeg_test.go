package turbojpeg

import (
	"bytes"
	"errors"
	"os"
	"testing"

	"github.com/oxefs/oxefs/internal/missing"
)

func decompressor(t *testing.T) *Decompressor {
	t.Helper()
	d, err := NewDecompressor()
	if err != nil {
		if !errors.Is(err, ErrUnavailable) {
			t.Fatalf("error %v does not match ErrUnavailable", err)
		}
		missing.Skip(t, missing.TurboJPEG, err)
	}
	t.Cleanup(d.Close)
	return d
}

func TestDecode(t *testing.T) {
	d := decompressor(t)
	desc, err := Available()
	if err != nil || desc == "" {
		t.Fatalf("Available() = %q, %v", desc, err)
	}
	t.Log(desc)
	b, err := os.ReadFile("../testdata/jpeg420.jpg")
	if err != nil {
		t.Fatal(err)
	}
	h, err := d.Header(b)
	if err != nil || h.Width != 37 || h.Height != 29 || h.Colorspace != YCbCr {
		t.Fatalf("header %+v, %v", h, err)
	}
	// Into a region of a larger buffer, rows 200 bytes apart.
	dst := bytes.Repeat([]byte{0xEE}, 200*29)
	if err := d.DecodeRGB(b, h, dst, 200); err != nil {
		t.Fatal(err)
	}
	if dst[3*37] != 0xEE || dst[199] != 0xEE {
		t.Error("DecodeRGB wrote past each row")
	}
	if err := d.DecodeRGB(b, h, dst[:100], 200); err == nil {
		t.Error("a destination too small was accepted")
	}
}

// TestRecovers: after an error the decompressor decodes the next good
// image. (A libjpeg-turbo 2.1 handle that failed on a corrupt Huffman table
// fails every call after it; the binding replaces it.)
func TestRecovers(t *testing.T) {
	d := decompressor(t)
	good, err := os.ReadFile("../testdata/jpeg420.jpg")
	if err != nil {
		t.Fatal(err)
	}
	garbled := bytes.Clone(good)
	for i := len(garbled) / 3; i < len(garbled)-2; i++ {
		garbled[i] = 0xFF
	}
	for _, bad := range [][]byte{garbled, good[:20], good[:len(good)/2], {0xFF, 0xD8}} {
		h, err := d.Header(bad)
		if err == nil {
			err = d.DecodeRGB(bad, h, make([]byte, 3*h.Width*h.Height+1), 3*h.Width)
		}
		var te *Error
		if !errors.As(err, &te) {
			t.Fatalf("%d bad bytes: %v, want an *Error", len(bad), err)
		}
		h, err = d.Header(good)
		if err != nil {
			t.Fatalf("good image after %d bad bytes: %v", len(bad), err)
		}
		if err := d.DecodeRGB(good, h, make([]byte, 3*37*29), 3*37); err != nil {
			t.Fatalf("good image after %d bad bytes: %v", len(bad), err)
		}
	}
}

func TestClose(t *testing.T) {
	d := decompressor(t)
	d.Close()
	d.Close()
	if _, err := d.Header([]byte{0xFF, 0xD8, 0xFF}); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Header after Close: %v", err)
	}
}
