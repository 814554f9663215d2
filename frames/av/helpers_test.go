package av

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"github.com/oxefs/oxefs/internal/missing"
)

// clip is one generated test clip (testdata/gen.py).
type clip struct {
	Name       string
	Codec      string `json:"codec"`
	Decoder    string `json:"decoder"`
	Width      int    `json:"width"`
	Height     int    `json:"height"`
	PixFmt     string `json:"pix_fmt"`
	ColorRange int    `json:"color_range"`
	ColorSpace int    `json:"colorspace"`
	Extradata  string `json:"extradata"`
	Frames     int    `json:"frames"`
	FramePTS   []int64
	Packets    []struct {
		PTS int64 `json:"pts"`
		Key bool  `json:"key"`
	} `json:"packets"`

	extra   []byte
	samples [][]byte
	yuv     [][]byte // per frame: the Y, U and V planes, tightly packed
	rgb     [][]byte // per frame: PyAV's rgb24
}

var clipNames = []string{"av1_48x32", "h264_48x32", "h264_34x18_full", "hevc_64x32"}

func loadClip(t testing.TB, name string) *clip {
	t.Helper()
	c := &clip{Name: name}
	var raw struct {
		FramePTS []int64 `json:"frame_pts"`
	}
	b := readFile(t, name+".json")
	if err := json.Unmarshal(b, c); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	c.FramePTS = raw.FramePTS
	var err error
	if c.extra, err = hex.DecodeString(c.Extradata); err != nil {
		t.Fatal(err)
	}
	for p := readFile(t, name+".pkts"); len(p) > 0; {
		n := int(binary.LittleEndian.Uint32(p))
		c.samples = append(c.samples, p[4:4+n])
		p = p[4+n:]
	}
	if len(c.samples) != len(c.Packets) {
		t.Fatalf("%s: %d samples, %d packets in the sidecar", name, len(c.samples), len(c.Packets))
	}
	cw, ch := (c.Width+1)/2, (c.Height+1)/2
	c.yuv = splitYUV(t, readPNG(t, name+".yuv.png"), c.Frames, c.Width, c.Height, cw, ch)
	c.rgb = splitRGB(t, readPNG(t, name+".rgb.png"), c.Frames, c.Width, c.Height)
	return c
}

func readFile(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func readPNG(t testing.TB, name string) image.Image {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(readFile(t, name)))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return img
}

// splitYUV cuts gen.py's stacked grey image into frames of tightly packed
// Y, U and V planes.
func splitYUV(t testing.TB, img image.Image, frames, w, h, cw, ch int) [][]byte {
	t.Helper()
	g, ok := img.(*image.Gray)
	if !ok || g.Rect.Dx() != w || g.Rect.Dy() != frames*(h+2*ch) {
		t.Fatalf("YUV image %T %v, want %dx%d grey", img, img.Bounds(), w, frames*(h+2*ch))
	}
	var out [][]byte
	row := 0
	for range frames {
		var f []byte
		for _, p := range [][2]int{{w, h}, {cw, ch}, {cw, ch}} {
			for range p[1] {
				f = append(f, g.Pix[row*g.Stride:][:p[0]]...)
				row++
			}
		}
		out = append(out, f)
	}
	return out
}

// splitRGB cuts gen.py's stacked RGB image into packed RGB24 frames.
func splitRGB(t testing.TB, img image.Image, frames, w, h int) [][]byte {
	t.Helper()
	m, ok := img.(*image.RGBA)
	if !ok || m.Rect.Dx() != w || m.Rect.Dy() != frames*h {
		t.Fatalf("RGB image %T %v, want %dx%d RGB", img, img.Bounds(), w, frames*h)
	}
	out := make([][]byte, frames)
	for i := range out {
		f := make([]byte, 0, w*h*3)
		for y := i * h; y < (i+1)*h; y++ {
			for x := range w {
				p := m.Pix[y*m.Stride+4*x:]
				f = append(f, p[0], p[1], p[2])
			}
		}
		out[i] = f
	}
	return out
}

// decoder opens a decoder for c, or skips the test, loudly, when libavcodec
// cannot be loaded.
func decoder(t testing.TB, c *clip) *Decoder {
	t.Helper()
	d, err := NewDecoder(c.Codec, c.extra)
	if err != nil {
		if !errors.Is(err, ErrUnavailable) {
			t.Fatalf("error %v does not match ErrUnavailable", err)
		}
		missing.Skip(t, missing.AVCodec, err)
	}
	t.Cleanup(d.Close)
	return d
}

// decoded is a frame copied out of the decoder.
type decoded struct {
	pts    int64
	format PixelFormat
	full   bool
	cs     ColorSpace
	yuv    []byte // tightly packed planes
	rgb    []byte
	rgbErr error
}

// copyFrame copies f's planes, tightly packed, and converts it to RGB.
func copyFrame(f *Frame) decoded {
	out := decoded{pts: f.PTS, format: f.Format, full: f.FullRange, cs: f.ColorSpace}
	cw, ch := (f.Width+1)/2, (f.Height+1)/2
	for i, wh := range [][2]int{{f.Width, f.Height}, {cw, ch}, {cw, ch}} {
		for y := range wh[1] {
			out.yuv = append(out.yuv, f.Planes[i][y*f.Strides[i]:][:wh[0]]...)
		}
	}
	out.rgb = make([]byte, f.Width*f.Height*3)
	out.rgbErr = f.RGB(out.rgb)
	return out
}

// decodeAll sends samples[from:] with their pts, drains, and returns every
// frame and the errors met on the way.
func decodeAll(d *Decoder, c *clip, from int) ([]decoded, error) {
	var out []decoded
	receive := func() error { return receiveAll(d, func(f *Frame) { out = append(out, copyFrame(f)) }) }
	for i := from; i < len(c.samples); i++ {
		if err := d.SendPTS(c.samples[i], c.Packets[i].PTS); err != nil {
			return out, fmt.Errorf("send %d: %w", i, err)
		}
		if err := receive(); err != nil {
			return out, fmt.Errorf("receive after %d: %w", i, err)
		}
	}
	if err := d.Send(nil); err != nil {
		return out, fmt.Errorf("drain: %w", err)
	}
	return out, receive()
}

// receiveAll passes every frame the decoder has ready to visit, until it
// needs another packet or is drained.
func receiveAll(d *Decoder, visit func(*Frame)) error {
	for {
		f, err := d.Receive()
		if err != nil || f == nil {
			return err
		}
		visit(f)
	}
}
