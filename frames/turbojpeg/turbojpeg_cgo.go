//go:build cgo

package turbojpeg

/*
#cgo linux LDFLAGS: -ldl
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>

// The TurboJPEG 2.x prototypes and constants this binding uses, declared
// here so that building needs no turbojpeg.h (see turbojpeg.h of
// libjpeg-turbo 2.0 and later).
typedef void *oxefs_tjhandle;
typedef oxefs_tjhandle (*oxefs_tjInitDecompress)(void);
typedef int (*oxefs_tjDecompressHeader3)(oxefs_tjhandle, const unsigned char *,
	unsigned long, int *, int *, int *, int *);
typedef int (*oxefs_tjDecompress2)(oxefs_tjhandle, const unsigned char *,
	unsigned long, unsigned char *, int, int, int, int, int);
typedef char *(*oxefs_tjGetErrorStr2)(oxefs_tjhandle);
typedef int (*oxefs_tjGetErrorCode)(oxefs_tjhandle);
typedef int (*oxefs_tjDestroy)(oxefs_tjhandle);

enum {
	OXEFS_TJPF_RGB = 0,
	OXEFS_TJFLAG_FASTDCT = 2048,
	OXEFS_TJFLAG_LIMITSCANS = 32768,
	OXEFS_TJERR_WARNING = 0,
};

static struct {
	oxefs_tjInitDecompress init;
	oxefs_tjDecompressHeader3 header;
	oxefs_tjDecompress2 decompress;
	oxefs_tjGetErrorStr2 errstr;
	oxefs_tjGetErrorCode errcode;
	oxefs_tjDestroy destroy;
	int api3; // tj3Init is exported: libjpeg-turbo 3.x
} oxefs_tj;

// oxefs_tj_load opens the library and resolves every symbol. It returns
// NULL on success, else a message (static or from dlerror).
static const char *oxefs_tj_load(const char *name, char *path, int pathlen) {
	void *lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
	if (lib == NULL) {
		const char *e = dlerror();
		return e ? e : "dlopen failed";
	}
#define OXEFS_SYM(field, sym) \
	*(void **)(&oxefs_tj.field) = dlsym(lib, sym); \
	if (oxefs_tj.field == NULL) { dlclose(lib); return "symbol " sym " missing"; }
	OXEFS_SYM(init, "tjInitDecompress")
	OXEFS_SYM(header, "tjDecompressHeader3")
	OXEFS_SYM(decompress, "tjDecompress2")
	OXEFS_SYM(errstr, "tjGetErrorStr2")
	OXEFS_SYM(errcode, "tjGetErrorCode")
	OXEFS_SYM(destroy, "tjDestroy")
#undef OXEFS_SYM
	oxefs_tj.api3 = dlsym(lib, "tj3Init") != NULL;
	Dl_info info;
	path[0] = 0;
	if (dladdr(*(void **)(&oxefs_tj.decompress), &info) != 0 && info.dli_fname != NULL) {
		int i = 0;
		for (; i < pathlen - 1 && info.dli_fname[i] != 0; i++) path[i] = info.dli_fname[i];
		path[i] = 0;
	}
	return NULL;
}

static int oxefs_tj_api3(void) { return oxefs_tj.api3; }
static oxefs_tjhandle oxefs_tj_init(void) { return oxefs_tj.init(); }
static int oxefs_tj_destroy(oxefs_tjhandle h) { return oxefs_tj.destroy(h); }
static const char *oxefs_tj_errstr(oxefs_tjhandle h) { return oxefs_tj.errstr(h); }
static int oxefs_tj_warning(oxefs_tjhandle h) { return oxefs_tj.errcode(h) == OXEFS_TJERR_WARNING; }

// out receives width, height, subsampling and colour space.
static int oxefs_tj_header(oxefs_tjhandle h, const unsigned char *buf, unsigned long n, int *out) {
	return oxefs_tj.header(h, buf, n, &out[0], &out[1], &out[2], &out[3]);
}

static int oxefs_tj_rgb(oxefs_tjhandle h, const unsigned char *buf, unsigned long n,
	unsigned char *dst, int w, int pitch, int hh) {
	return oxefs_tj.decompress(h, buf, n, dst, w, pitch, hh, OXEFS_TJPF_RGB,
		OXEFS_TJFLAG_FASTDCT | OXEFS_TJFLAG_LIMITSCANS);
}
*/
import "C"

import (
	"fmt"
	"runtime"
	"sync"
	"unsafe"
)

// Library is the name dlopen is given.
const Library = "libturbojpeg.so.0"

var load = sync.OnceValues(func() (string, error) {
	name := C.CString(Library)
	defer C.free(unsafe.Pointer(name))
	var path [512]C.char
	if msg := C.oxefs_tj_load(name, &path[0], C.int(len(path))); msg != nil {
		return "", fmt.Errorf("%w: %s", ErrUnavailable, C.GoString(msg))
	}
	api := "2.x"
	if C.oxefs_tj_api3() != 0 {
		api = "3.x"
	}
	where := C.GoString(&path[0])
	if where == "" {
		where = Library
	}
	return fmt.Sprintf("libjpeg-turbo (%s, TurboJPEG %s API)", where, api), nil
})

// Available loads the library on first use and reports whether it can be
// used. It returns a description of the library that was loaded, such as
// "libjpeg-turbo (/usr/lib/x86_64-linux-gnu/libturbojpeg.so.0, TurboJPEG 2.x
// API)", or an error matching ErrUnavailable.
func Available() (string, error) { return load() }

// Decompressor is one TurboJPEG decompressor instance. It is not safe for
// concurrent use: give each goroutine its own.
type Decompressor struct {
	h       C.oxefs_tjhandle
	cleanup runtime.Cleanup
	hdr     [4]C.int // tjDecompressHeader3's results: a field, so that passing it to C allocates nothing
}

// NewDecompressor returns a decompressor, loading the library on first use.
// Close releases it; a decompressor that is never closed is released when
// it is garbage collected.
func NewDecompressor() (*Decompressor, error) {
	if _, err := load(); err != nil {
		return nil, err
	}
	d := &Decompressor{}
	if err := d.init(); err != nil {
		return nil, err
	}
	return d, nil
}

func (d *Decompressor) init() error {
	h := C.oxefs_tj_init()
	if h == nil {
		return fmt.Errorf("%w: tjInitDecompress: %s", ErrUnavailable, C.GoString(C.oxefs_tj_errstr(nil)))
	}
	d.h = h
	d.cleanup = runtime.AddCleanup(d, func(h C.oxefs_tjhandle) { C.oxefs_tj_destroy(h) }, h)
	return nil
}

// Close releases the decompressor.
func (d *Decompressor) Close() {
	if d.h == nil {
		return
	}
	d.cleanup.Stop()
	C.oxefs_tj_destroy(d.h)
	d.h = nil
}

// fail returns the handle's error and replaces the handle: after some
// errors (a corrupt Huffman table in the header, with libjpeg-turbo 2.1)
// a TurboJPEG handle fails every later call, so one bad image would
// otherwise poison every image after it.
func (d *Decompressor) fail(op string) error {
	return d.reset(&Error{Op: op, Msg: C.GoString(C.oxefs_tj_errstr(d.h)), Warning: C.oxefs_tj_warning(d.h) != 0})
}

// reset replaces the handle and returns err.
func (d *Decompressor) reset(err error) error {
	d.Close()
	if ierr := d.init(); ierr != nil {
		return fmt.Errorf("%w (and no new handle: %w)", err, ierr)
	}
	return err
}

func (d *Decompressor) closed() error {
	if d.h == nil {
		return fmt.Errorf("%w: decompressor closed", ErrUnavailable)
	}
	return nil
}

// Header reads the size and colour space of a JPEG image.
func (d *Decompressor) Header(jpeg []byte) (Header, error) {
	if err := d.closed(); err != nil {
		return Header{}, err
	}
	if len(jpeg) == 0 {
		return Header{}, &Error{Op: "header", Msg: "empty input"}
	}
	if C.oxefs_tj_header(d.h, (*C.uchar)(unsafe.Pointer(&jpeg[0])), C.ulong(len(jpeg)), &d.hdr[0]) != 0 {
		err := d.fail("header")
		runtime.KeepAlive(d)
		return Header{}, err
	}
	runtime.KeepAlive(d)
	w, h, cs := d.hdr[0], d.hdr[1], d.hdr[3]
	if w <= 0 || h <= 0 {
		// tjDecompressHeader3 succeeds on a tables-only datastream (or a
		// header cut short after its tables) without giving a size, and
		// keeps the tables for later images: a new handle forgets them, so
		// that no image ever decodes with another one's tables.
		return Header{}, d.reset(&Error{Op: "header", Msg: "no image in the data (tables only, or the header is cut short)"})
	}
	return Header{Width: int(w), Height: int(h), Colorspace: Colorspace(cs)}, nil
}

// DecodeRGB decodes a JPEG image into dst as packed 8-bit RGB, at the size
// h, which must be the Header of the same bytes (TurboJPEG would scale the
// image down to fit a smaller one), rows pitch bytes apart (pitch ≥
// 3·width), with the fast
// integer IDCT and fancy upsampling, as TensorFlow does. Grayscale images
// come out with R = G = B. A warning (libjpeg's non-fatal errors, such as
// data that ends early) is returned as an *Error with Warning set; the
// caller decides whether the image is usable.
func (d *Decompressor) DecodeRGB(jpeg []byte, h Header, dst []byte, pitch int) error {
	return d.DecodeScaledRGB(jpeg, h, 8, dst, pitch)
}

// DecodeScaledRGB is DecodeRGB at eighths/8 of the size h (1 ≤ eighths ≤
// 8): libjpeg scales the image down in the DCT domain, doing a fraction of
// a full decode's work, to Scaled(h.Width, eighths) × Scaled(h.Height,
// eighths) pixels. Eight eighths is DecodeRGB.
func (d *Decompressor) DecodeScaledRGB(jpeg []byte, h Header, eighths int, dst []byte, pitch int) error {
	if err := d.closed(); err != nil {
		return err
	}
	if len(jpeg) == 0 {
		return &Error{Op: "decompress", Msg: "empty input"}
	}
	if eighths < 1 || eighths > 8 {
		return fmt.Errorf("turbojpeg: scale %d/8 is not valid (1/8 to 8/8)", eighths)
	}
	w, hh := Scaled(h.Width, eighths), Scaled(h.Height, eighths)
	if w <= 0 || hh <= 0 || pitch < 3*w || len(dst) < pitch*(hh-1)+3*w {
		return fmt.Errorf("turbojpeg: destination of %d bytes, pitch %d too small for %dx%d RGB", len(dst), pitch, w, hh)
	}
	if C.oxefs_tj_rgb(d.h, (*C.uchar)(unsafe.Pointer(&jpeg[0])), C.ulong(len(jpeg)),
		(*C.uchar)(unsafe.Pointer(&dst[0])), C.int(w), C.int(pitch), C.int(hh)) != 0 {
		err := d.fail("decompress")
		runtime.KeepAlive(d)
		return err
	}
	runtime.KeepAlive(d)
	return nil
}
