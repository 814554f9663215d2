// Package turbojpeg decodes JPEG images with libjpeg-turbo's TurboJPEG
// library, loaded at run time with dlopen("libturbojpeg.so.0"), so that
// oxefs builds, links and runs on a machine without it. Nothing links
// against the library: a build with cgo carries a small C shim that finds
// the six TurboJPEG 2.x functions it calls with dlsym (so building needs
// neither the library nor turbojpeg.h, only libc's dlfcn.h); a build
// without cgo, or a machine without the library, reports ErrUnavailable and
// the caller falls back to image/jpeg. The library is loaded once per
// process; each Decompressor holds one TurboJPEG handle.
//
// The TurboJPEG 2.x functions used here (tjInitDecompress,
// tjDecompressHeader3, tjDecompress2, tjGetErrorStr2, tjGetErrorCode,
// tjDestroy) exist in libturbojpeg.so.0 from libjpeg-turbo 2.0 on, and
// libjpeg-turbo 3.x keeps them next to its tj3* API for compatibility, so
// one binding serves Debian 12 (2.1.5) and newer distributions alike.
//
// Decoding uses the fast integer IDCT (TJFLAG_FASTDCT) and libjpeg's
// default "fancy" chroma upsampling: the settings of TensorFlow's
// tf.io.decode_jpeg / decode_image with their defaults (dct_method "" means
// JDCT_IFAST in TensorFlow), so the pixels are TensorFlow's. It also sets
// TJFLAG_LIMITSCANS, so that a progressive JPEG with an absurd number of
// scans (a known way to make a decoder spin) is an error, not a stall.
//
// turbojpeg imports nothing else of oxefs; only package frames uses it.
package turbojpeg

import "errors"

// ErrUnavailable matches every error saying libturbojpeg cannot be used:
// the binary was built without cgo, or libturbojpeg.so.0 (or one of its
// symbols) could not be loaded.
var ErrUnavailable = errors.New("libturbojpeg unavailable")

// Colorspace is the JPEG colour space of an image (TurboJPEG's TJCS).
type Colorspace int

// TurboJPEG's JPEG colour spaces.
const (
	RGB   Colorspace = 0
	YCbCr Colorspace = 1
	Gray  Colorspace = 2
	CMYK  Colorspace = 3
	YCCK  Colorspace = 4
)

func (c Colorspace) String() string {
	switch c {
	case RGB:
		return "RGB"
	case YCbCr:
		return "YCbCr"
	case Gray:
		return "gray"
	case CMYK:
		return "CMYK"
	case YCCK:
		return "YCCK"
	}
	return "unknown"
}

// Header is what a JPEG's headers say about the image.
type Header struct {
	Width, Height int
	Colorspace    Colorspace
}

// Error is a failure reported by libturbojpeg for one image.
type Error struct {
	Op  string // "header" or "decompress"
	Msg string // tjGetErrorStr2
	// Warning is true when libjpeg reported a non-fatal problem (TurboJPEG's
	// TJERR_WARNING), such as data ending before the image does.
	Warning bool
}

func (e *Error) Error() string {
	if e.Warning {
		return "libjpeg-turbo " + e.Op + ": " + e.Msg + " (warning)"
	}
	return "libjpeg-turbo " + e.Op + ": " + e.Msg
}

// Scaled is the size of one side of dim pixels decoded at eighths/8 of its
// size: ⌈dim·eighths/8⌉, libjpeg's rounding (TJSCALED).
func Scaled(dim, eighths int) int { return (dim*eighths + 7) / 8 }
