package frames

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"sync/atomic"

	"golang.org/x/sync/semaphore"

	"github.com/oxefs/oxefs/frames/turbojpeg"
)

// JPEG decoder choices (DecoderOptions.JPEG). The composition root picks
// one (oxefs's --decoder flag, or OXEFS_DECODER); this package reads no
// environment.
const (
	JPEGAuto  = "auto"  // libjpeg-turbo when libturbojpeg.so.0 loads, else image/jpeg
	JPEGTurbo = "turbo" // libjpeg-turbo, or NewDecoder fails
	JPEGGo    = "go"    // image/jpeg
)

// GoJPEGName is Decoder.Name for the image/jpeg fallback.
const GoJPEGName = "image/jpeg (Go standard library)"

// DecoderOptions configures a Decoder.
//
// A new decoder goes here, in package frames: a file of frames (and, for a
// C library, a subpackage such as frames/turbojpeg that binds it) whose
// choice is registered as a field or a value of DecoderOptions, which
// NewDecoder turns into the decoder's per-worker state inside Decoder. A
// new JPEG backend adds a JPEG value; a video decoder adds its own field
// and keeps its stream state in the Decoder, from frame to frame of a
// Source (see Source).
type DecoderOptions struct {
	// JPEG picks the JPEG decoder: JPEGAuto, JPEGTurbo or JPEGGo. Empty
	// means JPEGAuto.
	JPEG string
	// Memory is the decode budget shared by the decoders of one pool (see
	// DecodeMemory). Nil gives the decoder a budget of its own of
	// DefaultDecodeMemory.
	Memory *DecodeMemory
}

// Decoder decodes and resizes frames for one worker. It owns every buffer
// that is reused from frame to frame, so that the libjpeg-turbo path
// allocates nothing in steady state: one full-size RGB frame (3·w·h bytes
// of the largest frame that could not be decoded straight into the batch,
// kept only up to RetainedFrameBytes) and the resize's tables and rows of
// float32s (Footprint). Everything else one image needs — image/jpeg's and
// image/png's decoded image (about 1.5·w·h bytes for a 4:2:0 JPEG, 8·w·h for
// a 16-bit RGBA PNG), libjpeg's coefficients for a progressive JPEG, a frame
// larger than RetainedFrameBytes — is reserved from the shared DecodeMemory
// before it is allocated, from the image's header, and given back when the
// frame is written. It is not safe for concurrent use: make one per worker
// goroutine, and Close it when the worker ends.
type Decoder struct {
	tj   *turbojpeg.Decompressor // nil: image/jpeg
	name string
	mem  *DecodeMemory
	held int64 // bytes of mem reserved for the frame being decoded

	full   []byte      // a full-size decoded frame, when it cannot go straight into the batch
	chroma []byte      // image/jpeg path: upsampled chroma rows
	rz     resizer     // TensorFlow's bilinear (Exact)
	fz     fastResizer // area and fixed-point bilinear (Fast)
	colour colourer    // the colour ops of an Augment
	rd     bytes.Reader
	video  *videoState // the position in the last video file decoded from
}

// NewDecoder returns a decoder. With JPEGAuto it uses libjpeg-turbo when
// libturbojpeg.so.0 can be loaded and image/jpeg otherwise; Name says which.
func NewDecoder(opts DecoderOptions) (*Decoder, error) {
	choice := opts.JPEG
	mem := opts.Memory
	if mem == nil {
		mem = NewDecodeMemory(DefaultDecodeMemory)
	}
	switch choice {
	case "", JPEGAuto, JPEGTurbo:
		tj, err := turbojpeg.NewDecompressor()
		if err == nil {
			desc, _ := turbojpeg.Available()
			return &Decoder{tj: tj, name: desc, mem: mem}, nil
		}
		if choice == JPEGTurbo {
			return nil, fmt.Errorf("JPEG decoder %q: %w", choice, err)
		}
		return &Decoder{name: GoJPEGName, mem: mem}, nil
	case JPEGGo:
		return &Decoder{name: GoJPEGName, mem: mem}, nil
	}
	return nil, fmt.Errorf("JPEG decoder %q is not valid (valid: %s, %s, %s)", choice, JPEGAuto, JPEGTurbo, JPEGGo)
}

// Name says which JPEG decoder is in use, for info.json and logs: a
// description of the libjpeg-turbo library that was loaded, or GoJPEGName.
func (d *Decoder) Name() string { return d.name }

// Turbo reports whether JPEG images go through libjpeg-turbo.
func (d *Decoder) Turbo() bool { return d.tj != nil }

// Footprint is the bytes the decoder's reusable buffers hold, for the
// daemon's memory budget.
func (d *Decoder) Footprint() int {
	n := cap(d.full) + cap(d.chroma)
	n += d.rz.footprint() + d.colour.footprint()
	return n + d.fz.footprint() + d.videoFootprint()
}

// Close releases the libjpeg-turbo handle.
func (d *Decoder) Close() {
	d.release()
	d.closeVideo()
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

// Bounds on any one image, checked from its header before anything is
// decoded or allocated, whatever size the Source expects: a corrupt or
// hostile header cannot make a worker allocate gigabytes. Camera frames of
// robot datasets are far smaller (4K UHD is 8.3 MP).
const (
	MaxSide   = 8192    // pixels, either side (image_size's bound too)
	MaxPixels = 1 << 24 // 16 MP
)

// Size is an image size in pixels. As the size a frame must have, a zero
// field is not checked.
type Size struct{ W, H int }

// check compares the size an image's header gives with the one expected,
// before anything is decoded or allocated.
func (s Size) check(w, h int, what string) error {
	if w <= 0 || h <= 0 || w > MaxSide || h > MaxSide || w > MaxPixels/h {
		return fmt.Errorf("%w: %dx%d (WxH) image (at most %dx%d and %d pixels)", ErrUndecodable, w, h, MaxSide, MaxSide, MaxPixels)
	}
	if (s.W != 0 && w != s.W) || (s.H != 0 && h != s.H) {
		return fmt.Errorf("%w: decoded %dx%d (WxH), %s %dx%d", ErrImageSize, w, h, what, s.W, s.H)
	}
	return nil
}

// RetainedFrameBytes bounds the full-size frame buffer a Decoder keeps from
// frame to frame (a 1080p RGB frame is 6.2 MB); a larger frame gets a buffer
// of its own, reserved from the DecodeMemory and dropped after use.
const RetainedFrameBytes = 8 << 20

// DefaultDecodeMemory is the decode budget of a Decoder made without a
// shared one.
const DefaultDecodeMemory = 64 << 20

// DecodeMemory is a budget in bytes for the buffers that decoding one image
// needs beyond what a Decoder keeps (see Decoder), shared by the decoders
// of a pool. A decode reserves what the image's header says it will need
// before allocating it, waiting while other decodes hold the budget; an
// image that needs more than the whole budget is undecodable (corrupt data
// for its episode), never an allocation. A decode holds its reservation
// only while it decodes and writes one frame and never waits for anything
// else meanwhile, so waiting cannot deadlock. It is safe for concurrent
// use.
type DecodeMemory struct {
	limit   int64
	sem     *semaphore.Weighted
	held    atomic.Int64
	peak    atomic.Int64
	refused atomic.Int64
}

// NewDecodeMemory returns a budget of limit bytes (at least 1 MiB).
func NewDecodeMemory(limit int64) *DecodeMemory {
	limit = max(limit, 1<<20)
	return &DecodeMemory{limit: limit, sem: semaphore.NewWeighted(limit)}
}

// Limit returns the budget in bytes.
func (m *DecodeMemory) Limit() int64 { return m.limit }

// Stats returns the bytes reserved now, the most ever reserved at once,
// and the number of images refused as too large for the budget.
func (m *DecodeMemory) Stats() (held, peak, refused int64) {
	return m.held.Load(), m.peak.Load(), m.refused.Load()
}

// reserve takes n bytes of the budget for d's current frame, waiting for
// them; release gives them back.
func (d *Decoder) reserve(n int64, w, h int) error {
	if n <= 0 {
		return nil
	}
	m := d.mem
	if n > m.limit {
		m.refused.Add(1)
		return fmt.Errorf("%w: a %dx%d (WxH) image needs %d MiB to decode, more than the decode budget of %d MiB",
			ErrUndecodable, w, h, (n+1<<20-1)>>20, m.limit>>20)
	}
	if err := m.sem.Acquire(context.Background(), n); err != nil {
		return err // not reached: the context is never done
	}
	d.held += n
	held := m.held.Add(n)
	for {
		p := m.peak.Load()
		if held <= p || m.peak.CompareAndSwap(p, held) {
			break
		}
	}
	return nil
}

// release gives back what the current frame reserved.
func (d *Decoder) release() {
	if d.held == 0 {
		return
	}
	d.mem.held.Add(-d.held)
	d.mem.sem.Release(d.held)
	d.held = 0
}

// frameCost is what a full-size RGB frame of w×h costs the budget: nothing
// when the retained buffer may hold it, else its size.
func frameCost(w, h int) int64 {
	if n := int64(w) * int64(h) * 3; n > RetainedFrameBytes {
		return n
	}
	return 0
}

// decode decodes one encoded image. When the image is direct's size (and
// direct is not nil) libjpeg-turbo writes it straight into direct and
// decode returns an image over direct; otherwise the image is in d.full.
// want is checked before anything is written to direct. What the image
// needs beyond the Decoder's own buffers is reserved from d.mem until the
// next decode or d.release. A JPEG that libjpeg-turbo decodes is decoded
// at the scale f picks (see fit.eighths): the image returned may be
// smaller than the header's size.
func (d *Decoder) decode(b []byte, want Size, what string, direct []byte, dw, dh int, f fit) (rgbImage, error) {
	d.release()
	img, err := d.decodeImage(b, want, what, direct, dw, dh, f)
	if err != nil {
		d.release()
	}
	return img, err
}

func (d *Decoder) decodeImage(b []byte, want Size, what string, direct []byte, dw, dh int, f fit) (rgbImage, error) {
	if len(b) == 0 {
		return rgbImage{}, ErrEmptyImage
	}
	switch sniff(b) {
	case formatJPEG:
		if d.tj != nil {
			return d.decodeTurbo(b, want, what, direct, dw, dh, f)
		}
		h, err := jpegHeader(b)
		if err != nil {
			return rgbImage{}, fmt.Errorf("%w: %w", ErrUndecodable, err)
		}
		if err := want.check(h.w, h.h, what); err != nil {
			return rgbImage{}, err
		}
		if err := d.reserve(h.goBytes()+frameCost(h.w, h.h), h.w, h.h); err != nil {
			return rgbImage{}, err
		}
		img, err := jpeg.Decode(d.reader(b))
		if err != nil {
			return rgbImage{}, fmt.Errorf("%w: image/jpeg: %w", ErrUndecodable, err)
		}
		return d.fromImage(img, want, what)
	case formatPNG:
		h, err := pngHeader(b)
		if err != nil {
			return rgbImage{}, fmt.Errorf("%w: %w", ErrUndecodable, err)
		}
		if err := want.check(h.w, h.h, what); err != nil {
			return rgbImage{}, err
		}
		if err := d.reserve(h.goBytes()+frameCost(h.w, h.h), h.w, h.h); err != nil {
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

func (d *Decoder) decodeTurbo(b []byte, want Size, what string, direct []byte, dw, dh int, f fit) (rgbImage, error) {
	h, err := d.tj.Header(b)
	if err != nil {
		return rgbImage{}, fmt.Errorf("%w: %w", ErrUndecodable, err)
	}
	if err := want.check(h.Width, h.Height, what); err != nil {
		return rgbImage{}, err
	}
	jh, err := jpegHeader(b)
	if err != nil || jh.w != h.Width || jh.h != h.Height {
		// libjpeg found a frame header where jpegHeader did not: assume
		// the most it could need.
		jh = jpegInfo{w: h.Width, h: h.Height, comps: 4, progressive: true}
	}
	if h.Colorspace == turbojpeg.CMYK || h.Colorspace == turbojpeg.YCCK {
		// libjpeg cannot convert CMYK to RGB; image/jpeg can.
		if err := d.reserve(jh.goBytes()+frameCost(h.Width, h.Height), h.Width, h.Height); err != nil {
			return rgbImage{}, err
		}
		img, err := jpeg.Decode(d.reader(b))
		if err != nil {
			return rgbImage{}, fmt.Errorf("%w: image/jpeg (CMYK): %w", ErrUndecodable, err)
		}
		return d.fromImage(img, want, what)
	}
	n := f.eighths(h.Width, h.Height)
	w, hh := turbojpeg.Scaled(h.Width, n), turbojpeg.Scaled(h.Height, n)
	out := rgbImage{W: w, H: hh, Stride: 3 * w, Encoded: Size{W: h.Width, H: h.Height}}
	need := jh.turboBytes()
	toDirect := direct != nil && w == dw && hh == dh
	if !toDirect {
		need += frameCost(w, hh)
	}
	if err := d.reserve(need, h.Width, h.Height); err != nil {
		return rgbImage{}, err
	}
	if toDirect {
		out.Pix = direct
	} else {
		out.Pix = d.fullBuffer(w * hh * 3)
	}
	if err := d.tj.DecodeScaledRGB(b, h, n, out.Pix, out.Stride); err != nil {
		// A warning (non-fatal for libjpeg) leaves an image that may be
		// partly made up, such as grey rows after data that ends early:
		// never hand that out as data.
		return rgbImage{}, fmt.Errorf("%w: %w", ErrUndecodable, err)
	}
	return out, nil
}

// fullBuffer returns a buffer for a full-size frame of n bytes: d.full,
// grown as needed, up to RetainedFrameBytes; a larger frame gets a buffer
// of its own, which the caller has reserved (frameCost).
func (d *Decoder) fullBuffer(n int) []byte {
	if n > RetainedFrameBytes {
		if cap(d.full) >= n {
			return d.full[:n]
		}
		return make([]byte, n)
	}
	if cap(d.full) < n {
		d.full = make([]byte, n)
	}
	return d.full[:n]
}

// fromImage converts an image from image/jpeg or image/png to packed RGB in
// d.full, as tf.io.decode_image(…, channels=3) does: gray is replicated,
// alpha dropped without compositing, 16-bit samples keep their high byte.
func (d *Decoder) fromImage(img image.Image, want Size, what string) (rgbImage, error) {
	r := img.Bounds()
	w, h := r.Dx(), r.Dy()
	if err := want.check(w, h, what); err != nil {
		return rgbImage{}, err
	}
	out := rgbImage{Pix: d.fullBuffer(w * h * 3), W: w, H: h, Stride: 3 * w, Encoded: Size{W: w, H: h}}
	if err := toRGB(out.Pix, img, &d.chroma); err != nil {
		return rgbImage{}, err
	}
	return out, nil
}
