package frames

import (
	"bytes"
	"errors"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oxefs/oxefs/frames/turbojpeg"
	"github.com/oxefs/oxefs/internal/testkit"
)

// TestDecodeColourLayouts decodes the images of frames/testdata (JPEG 4:4:4,
// 4:2:2, 4:2:0, 4:4:0 and grayscale; PNG gray, 16-bit gray, RGBA, 16-bit
// RGB; 37x29 so that chroma planes end half-filled) and compares with
// tf.io.decode_image(…, channels=3) (frames/testdata/generate.py):
// libjpeg-turbo and PNG exactly, image/jpeg within a mean of 2 levels (its
// IDCT is not libjpeg's fast one) and exactly on flat blocks.
func TestDecodeColourLayouts(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.npy"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no test images: %v", err)
	}
	for _, choice := range []string{JPEGTurbo, JPEGGo} {
		t.Run(choice, func(t *testing.T) {
			d := testDecoder(t, choice)
			for _, npy := range files {
				name := strings.TrimSuffix(filepath.Base(npy), ".npy")
				ext := ".png"
				if strings.HasPrefix(name, "jpeg") {
					ext = ".jpg"
				}
				b, err := os.ReadFile(strings.TrimSuffix(npy, ".npy") + ext)
				if err != nil {
					t.Fatal(err)
				}
				shape, want := testkit.ReadNPY(t, npy)
				img, err := d.decode(b, Size{W: shape[1], H: shape[0]}, "TensorFlow decodes", nil, 0, 0, fit{})
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				st := testkit.Diff(img.Pix, want)
				t.Logf("%-10s %s", name, st)
				switch {
				case ext == ".png" || d.Turbo() || strings.HasSuffix(name, "blocks"):
					// *blocks: flat 8x8 blocks, which every IDCT decodes
					// alike, so image/jpeg's path (fancy upsampling, libjpeg's
					// colour conversion) must match exactly too.
					if st.Max != 0 {
						t.Errorf("%s: differs from TensorFlow: %v", name, st)
					}
				case st.Mean > 2.0:
					t.Errorf("%s: image/jpeg differs from TensorFlow: %v (bound mean 2.0)", name, st)
				}
			}
		})
	}
}

// TestDecodePalettedPNG: a palette with transparency decodes to the
// palette's colours, alpha dropped and not composited (libpng expands the
// palette and TensorFlow strips the alpha channel).
func TestDecodePalettedPNG(t *testing.T) {
	pal := color.Palette{
		color.NRGBA{10, 20, 30, 255},
		color.NRGBA{200, 100, 50, 0},
		color.NRGBA{1, 2, 3, 128},
	}
	m := image.NewPaletted(image.Rect(0, 0, 5, 3), pal)
	for i := range m.Pix {
		m.Pix[i] = uint8(i % 3)
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, m); err != nil {
		t.Fatal(err)
	}
	d := testDecoder(t, JPEGGo)
	img, err := d.decode(buf.Bytes(), Size{}, "", nil, 0, 0, fit{})
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range m.Pix {
		c := pal[v].(color.NRGBA)
		if got := img.Pix[3*i : 3*i+3]; !bytes.Equal(got, []byte{c.R, c.G, c.B}) {
			t.Fatalf("pixel %d: %v, want %v", i, got, c)
		}
	}
}

// TestDecodeCMYKJPEG: libjpeg cannot turn CMYK into RGB; such a JPEG goes
// through image/jpeg with either decoder instead of failing.
func TestDecodeCMYKJPEG(t *testing.T) {
	src := image.NewCMYK(image.Rect(0, 0, 16, 16))
	for i := range src.Pix {
		src.Pix[i] = uint8(i * 13)
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, src, &jpeg.Options{Quality: 95}); err != nil {
		t.Fatal(err)
	}
	for _, choice := range []string{JPEGTurbo, JPEGGo} {
		t.Run(choice, func(t *testing.T) {
			d := testDecoder(t, choice)
			img, err := d.decode(buf.Bytes(), Size{W: 16, H: 16}, "expected", nil, 0, 0, fit{})
			if err != nil {
				t.Fatal(err)
			}
			if img.W != 16 || img.H != 16 {
				t.Fatalf("%dx%d", img.W, img.H)
			}
		})
	}
}

func TestDecoderChoice(t *testing.T) {
	d, err := NewDecoder(DecoderOptions{JPEG: JPEGGo})
	if err != nil {
		t.Fatal(err)
	}
	if d.Turbo() || d.Name() != GoJPEGName {
		t.Errorf("JPEGGo gave %q", d.Name())
	}
	// The environment picks nothing: only the composition root reads it.
	t.Setenv("OXEFS_DECODER", "go")
	for _, choice := range []string{"", JPEGAuto} {
		d, err := NewDecoder(DecoderOptions{JPEG: choice})
		if err != nil {
			t.Fatal(err)
		}
		_, terr := turbojpeg.Available()
		if d.Turbo() != (terr == nil) {
			t.Errorf("%q: turbo %v, library available: %v", choice, d.Turbo(), terr)
		}
		t.Logf("%q: %s", choice, d.Name())
		d.Close()
		d.Close() // twice is harmless
	}
	if _, err := NewDecoder(DecoderOptions{JPEG: "libjpeg"}); err == nil || !strings.Contains(err.Error(), "valid: auto, turbo, go") {
		t.Errorf("libjpeg: %v", err)
	}
	if _, terr := turbojpeg.Available(); terr != nil {
		_, err := NewDecoder(DecoderOptions{JPEG: JPEGTurbo})
		if !errors.Is(err, turbojpeg.ErrUnavailable) {
			t.Errorf("turbo without the library: %v, want ErrUnavailable", err)
		}
		t.Logf("libjpeg-turbo unavailable here: %v", terr)
	}
}

// TestDecodeErrors: each kind of bad image bytes gives its typed error,
// with both decoders.
func TestDecodeErrors(t *testing.T) {
	good, err := os.ReadFile(filepath.Join("testdata", "jpeg420.jpg"))
	if err != nil {
		t.Fatal(err)
	}
	pngGood, err := os.ReadFile(filepath.Join("testdata", "pngrgba.png"))
	if err != nil {
		t.Fatal(err)
	}
	garbled := bytes.Clone(good)
	for i := len(garbled) / 3; i < len(garbled)-2; i++ {
		garbled[i] = 0xFF // marker prefixes everywhere: no valid scan data
	}
	pngBadCRC := bytes.Clone(pngGood)
	pngBadCRC[len(pngBadCRC)/2] ^= 0x5A
	cases := []struct {
		name string
		b    []byte
		want error
	}{
		{"empty", nil, ErrEmptyImage},
		{"not an image", []byte("GIF89a not supported"), ErrImageFormat},
		{"jpeg header only", good[:20], ErrUndecodable},
		{"jpeg truncated", good[:len(good)/2], ErrUndecodable},
		{"jpeg garbled", garbled, ErrUndecodable},
		{"png truncated", pngGood[:len(pngGood)/2], ErrUndecodable},
		{"png bad crc", pngBadCRC, ErrUndecodable},
	}
	for _, choice := range []string{JPEGTurbo, JPEGGo} {
		t.Run(choice, func(t *testing.T) {
			d := testDecoder(t, choice)
			for _, tc := range cases {
				_, err := d.decode(tc.b, Size{}, "", nil, 0, 0, fit{})
				if !errors.Is(err, tc.want) {
					t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
				}
			}
			_, err := d.decode(good, Size{W: 36, H: 29}, "expected", nil, 0, 0, fit{})
			if !errors.Is(err, ErrImageSize) {
				t.Errorf("wrong size: %v", err)
			}
		})
	}
}
