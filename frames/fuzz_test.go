package frames

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzDecode feeds arbitrary bytes, as a corrupt dataset would, to both
// decoders: they must return an image of the size the header announced or
// an error, never panic or hand out a partial image, and never reserve more
// than their decode budget or keep it after the frame.
func FuzzDecode(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.[jp][pn]g"))
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("\xff\xd8\xff"))
	f.Add([]byte("\x89PNG\r\n\x1a\n"))
	decoders := []*Decoder{}
	mem := NewDecodeMemory(4 << 20)
	for _, choice := range []string{JPEGTurbo, JPEGGo} {
		if d, err := NewDecoder(DecoderOptions{JPEG: choice, Memory: mem}); err == nil {
			decoders = append(decoders, d)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, d := range decoders {
			img, err := d.decode(b, Size{}, "", nil, 0, 0, fit{})
			if held, peak, _ := mem.Stats(); peak > mem.Limit() || (err != nil && held != 0) {
				t.Fatalf("%s: decode memory %d held (%d at peak) of %d, error %v", d.Name(), held, peak, mem.Limit(), err)
			}
			d.release()
			if err != nil {
				continue
			}
			var w, h int
			switch sniff(b) {
			case formatJPEG:
				var j jpegInfo
				j, err = jpegHeader(b)
				w, h = j.w, j.h
			case formatPNG:
				var p pngInfo
				p, err = pngHeader(b)
				w, h = p.w, p.h
			}
			if err != nil || img.W != w || img.H != h || len(img.Pix) != w*h*3 {
				t.Fatalf("%s: decoded %dx%d (%d bytes), header says %dx%d (%v)", d.Name(), img.W, img.H, len(img.Pix), w, h, err)
			}
		}
	})
}
