package pairs

import (
	"bytes"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"os"

	"github.com/oxefs/oxefs/pairs/turbojpeg"
)

// DecoderEnv is the environment variable that picks the JPEG decoder when
// DecoderOptions.JPEG is empty: "go" forces image/jpeg, "turbo" requires
// libjpeg-turbo, "auto" or unset uses libjpeg-turbo when it loads.
const DecoderEnv = "OXEFS_DECODER"

// JPEG decoder choices (DecoderOptions.JPEG, OXEFS_DECODER).
const (
	JPEGAuto  = "auto"  // libjpeg-turbo when libturbojpeg.so.0 loads, else image/jpeg
	JPEGTurbo = "turbo" // libjpeg-turbo, or NewDecoder fails
	JPEGGo    = "go"    // image/jpeg
)

// GoJPEGName is Decoder.Name for the image/jpeg fallback.
const GoJPEGName = "image/jpeg (Go standard library)"

// DecoderOptions configures a Decoder.
type DecoderOptions struct {
	// JPEG picks the JPEG decoder: JPEGAuto, JPEGTurbo or JPEGGo. Empty
	// means the value of OXEFS_DECODER, read here, at construction, or
	// JPEGAuto when that is unset.
	JPEG string
}

// Decoder decodes and resizes frames for one worker. It owns every buffer
// that is reused from frame to frame, so that the libjpeg-turbo path
// allocates nothing in steady state: one full-size RGB frame (3·w·h bytes
// of the largest frame that could not be decoded straight into the batch)
// and two rows of float32s (Footprint). The image/jpeg and image/png paths
// also allocate their decoder's image per frame (about 1.5·w·h bytes for a
// 4:2:0 JPEG, 4·w·h for an RGBA PNG), garbage the next GC reclaims. It is
// not safe for concurrent use: make one per worker goroutine, and Close it
// when the worker ends.
type Decoder struct {
	tj   *turbojpeg.Decompressor // nil: image/jpeg
	name string

	full   []byte // a full-size decoded frame, when it cannot go straight into the batch
	chroma []byte // image/jpeg path: upsampled chroma rows
	rz     resizer
	rd     bytes.Reader

	// metadata scratch
	floats []float64
	text   []byte
	idx    []int
}

// NewDecoder returns a decoder. With JPEGAuto it uses libjpeg-turbo when
// libturbojpeg.so.0 can be loaded and image/jpeg otherwise; Name says which.
func NewDecoder(opts DecoderOptions) (*Decoder, error) {
	choice := opts.JPEG
	if choice == "" {
		choice = os.Getenv(DecoderEnv)
	}
	switch choice {
	case "", JPEGAuto, JPEGTurbo:
		tj, err := turbojpeg.NewDecompressor()
		if err == nil {
			desc, _ := turbojpeg.Available()
			return &Decoder{tj: tj, name: desc}, nil
		}
		if choice == JPEGTurbo {
			return nil, fmt.Errorf("JPEG decoder %q: %w", choice, err)
		}
		return &Decoder{name: GoJPEGName}, nil
	case JPEGGo:
		return &Decoder{name: GoJPEGName}, nil
	}
	return nil, fmt.Errorf("JPEG decoder %q (%s) is not valid (valid: %s, %s, %s)", choice, DecoderEnv, JPEGAuto, JPEGTurbo, JPEGGo)
}

// Name says which JPEG decoder is in use, for info.json and logs: a
// description of the libjpeg-turbo library that was loaded, or GoJPEGName.
func (d *Decoder) Name() string { return d.name }

// Turbo reports whether JPEG images go through libjpeg-turbo.
func (d *Decoder) Turbo() bool { return d.tj != nil }

// Footprint is the bytes the decoder's reusable buffers hold, for the
// daemon's memory budget.
func (d *Decoder) Footprint() int {
	n := cap(d.full) + cap(d.chroma) + cap(d.text) + 8*cap(d.floats) + 8*cap(d.idx)
	n += 4 * (cap(d.rz.rows[0]) + cap(d.rz.rows[1]))
	n += 12 * (cap(d.rz.xs) + cap(d.rz.ys))
	return n
}

// Close releases the libjpeg-turbo handle.
func (d *Decoder) Close() {
	if d.tj != nil {
		d.tj.Close()
		d.tj = nil
	}
}

type imageFormat uint8

const (
	formatUnknown imageFormat = iota
	formatJPEG
	formatPNG
)

func sniff(b []byte) imageFormat {
	switch {
	case len(b) >= 3 && b[0] == 0xFF && b[1] == 0xD8 && b[2] == 0xFF:
		return formatJPEG
	case len(b) >= 8 && string(b[:8]) == "\x89PNG\r\n\x1a\n":
		return formatPNG
	}
	return formatUnknown
}

// MaxPixels bounds the images a Decoder accepts (32 MP: 96 MiB decoded), so
// that a corrupt or hostile header cannot make a worker allocate gigabytes.
// Camera frames of robot datasets are far smaller.
const MaxPixels = 1 << 25

// size is an expected image size; zero fields are not checked.
type size struct{ W, H int }

// check compares the size an image's header gives with the one expected,
// before anything is decoded or allocated.
func (s size) check(w, h int, what string) error {
	if w <= 0 || h <= 0 || w > MaxPixels/h {
		return fmt.Errorf("%w: %dx%d (WxH) image (at most %d pixels)", ErrUndecodable, w, h, MaxPixels)
	}
	if (s.W != 0 && w != s.W) || (s.H != 0 && h != s.H) {
		return fmt.Errorf("%w: decoded %dx%d (WxH), %s %dx%d", ErrImageSize, w, h, what, s.W, s.H)
	}
	return nil
}

// decode decodes one encoded image. When the image is direct's size (and
// direct is not nil) libjpeg-turbo writes it straight into direct and
// decode returns an image over direct; otherwise the image is in d.full.
// want is checked before anything is written to direct.
func (d *Decoder) decode(b []byte, want size, what string, direct []byte, dw, dh int) (rgbImage, error) {
	if len(b) == 0 {
		return rgbImage{}, ErrEmptyImage
	}
	switch sniff(b) {
	case formatJPEG:
		if d.tj != nil {
			return d.decodeTurbo(b, want, what, direct, dw, dh)
		}
		w, h, err := jpegSize(b)
		if err != nil {
			return rgbImage{}, fmt.Errorf("%w: %w", ErrUndecodable, err)
		}
		if err := want.check(w, h, what); err != nil {
			return rgbImage{}, err
		}
		img, err := jpeg.Decode(d.reader(b))
		if err != nil {
			return rgbImage{}, fmt.Errorf("%w: image/jpeg: %w", ErrUndecodable, err)
		}
		return d.fromImage(img, want, what)
	case formatPNG:
		w, h, err := pngSize(b)
		if err != nil {
			return rgbImage{}, fmt.Errorf("%w: %w", ErrUndecodable, err)
		}
		if err := want.check(w, h, what); err != nil {
			return rgbImage{}, err
		}
		img, err := png.Decode(d.reader(b))
		if err != nil {
			return rgbImage{}, fmt.Errorf("%w: image/png: %w", ErrUndecodable, err)
		}
		return d.fromImage(img, want, what)
	}
	n := min(len(b), 8)
	return rgbImage{}, fmt.Errorf("%w: first bytes % x", ErrImageFormat, b[:n])
}

func (d *Decoder) reader(b []byte) *bytes.Reader {
	d.rd.Reset(b)
	return &d.rd
}

func (d *Decoder) decodeTurbo(b []byte, want size, what string, direct []byte, dw, dh int) (rgbImage, error) {
	h, err := d.tj.Header(b)
	if err != nil {
		return rgbImage{}, fmt.Errorf("%w: %w", ErrUndecodable, err)
	}
	if err := want.check(h.Width, h.Height, what); err != nil {
		return rgbImage{}, err
	}
	if h.Colorspace == turbojpeg.CMYK || h.Colorspace == turbojpeg.YCCK {
		// libjpeg cannot convert CMYK to RGB; image/jpeg can.
		img, err := jpeg.Decode(d.reader(b))
		if err != nil {
			return rgbImage{}, fmt.Errorf("%w: image/jpeg (CMYK): %w", ErrUndecodable, err)
		}
		return d.fromImage(img, want, what)
	}
	out := rgbImage{W: h.Width, H: h.Height, Stride: 3 * h.Width}
	if direct != nil && h.Width == dw && h.Height == dh {
		out.Pix = direct
	} else {
		out.Pix = d.fullBuffer(h.Width * h.Height * 3)
	}
	if err := d.tj.DecodeRGB(b, h, out.Pix, out.Stride); err != nil {
		// A warning (non-fatal for libjpeg) leaves an image that may be
		// partly made up, such as grey rows after data that ends early:
		// never hand that out as data.
		return rgbImage{}, fmt.Errorf("%w: %w", ErrUndecodable, err)
	}
	return out, nil
}

func (d *Decoder) fullBuffer(n int) []byte {
	if cap(d.full) < n {
		d.full = make([]byte, n)
	}
	return d.full[:n]
}

// fromImage converts an image from image/jpeg or image/png to packed RGB in
// d.full, as tf.io.decode_image(…, channels=3) does: gray is replicated,
// alpha dropped without compositing, 16-bit samples keep their high byte.
func (d *Decoder) fromImage(img image.Image, want size, what string) (rgbImage, error) {
	r := img.Bounds()
	w, h := r.Dx(), r.Dy()
	if err := want.check(w, h, what); err != nil {
		return rgbImage{}, err
	}
	out := rgbImage{Pix: d.fullBuffer(w * h * 3), W: w, H: h, Stride: 3 * w}
	if err := toRGB(out.Pix, img, &d.chroma); err != nil {
		return rgbImage{}, err
	}
	return out, nil
}
