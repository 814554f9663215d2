//go:build cgo

package av

/*
#cgo linux LDFLAGS: -ldl
#include "ffmpeg.h"

static struct {
	const void *(*find_encoder_by_name)(const char *);
	void *(*alloc_context3)(const void *);
	void (*free_context)(void **);
	int (*open2)(void *, const void *, void **);
	int (*send_frame)(void *, const void *);
	int (*receive_packet)(void *, void *);
	void *(*packet_alloc)(void);
	void (*packet_free)(void **);
	void (*packet_unref)(void *);
	void *(*parameters_alloc)(void);
	void (*parameters_free)(void **);
	int (*parameters_from_context)(void *, const void *);
	void *(*frame_alloc)(void);
	void (*frame_free)(void **);
	int (*frame_get_buffer)(void *, int);
	int (*frame_make_writable)(void *);
	int (*opt_set)(void *, const char *, const char *, int);
	int (*strerror)(int, char *, size_t);
} oxefs_enc;

// oxefs_enc_load resolves the encoder's symbols in libavcodec.so.<codec>
// and libavutil.so.<util>, which the decoder's loader has already opened
// and checked (dlopen of an open library takes another reference).
static const char *oxefs_enc_load(int codec, int util, char *msg, int msglen) {
	void *c, *u;
	const char *err = oxefs_av_dlopen(codec, util, &c, &u, msg, msglen);
	if (err != NULL) return err;
	OXEFS_SYM(oxefs_enc, c, "libavcodec", find_encoder_by_name, "avcodec_find_encoder_by_name")
	OXEFS_SYM(oxefs_enc, c, "libavcodec", alloc_context3, "avcodec_alloc_context3")
	OXEFS_SYM(oxefs_enc, c, "libavcodec", free_context, "avcodec_free_context")
	OXEFS_SYM(oxefs_enc, c, "libavcodec", open2, "avcodec_open2")
	OXEFS_SYM(oxefs_enc, c, "libavcodec", send_frame, "avcodec_send_frame")
	OXEFS_SYM(oxefs_enc, c, "libavcodec", receive_packet, "avcodec_receive_packet")
	OXEFS_SYM(oxefs_enc, c, "libavcodec", packet_alloc, "av_packet_alloc")
	OXEFS_SYM(oxefs_enc, c, "libavcodec", packet_free, "av_packet_free")
	OXEFS_SYM(oxefs_enc, c, "libavcodec", packet_unref, "av_packet_unref")
	OXEFS_SYM(oxefs_enc, c, "libavcodec", parameters_alloc, "avcodec_parameters_alloc")
	OXEFS_SYM(oxefs_enc, c, "libavcodec", parameters_free, "avcodec_parameters_free")
	OXEFS_SYM(oxefs_enc, c, "libavcodec", parameters_from_context, "avcodec_parameters_from_context")
	OXEFS_SYM(oxefs_enc, u, "libavutil", frame_alloc, "av_frame_alloc")
	OXEFS_SYM(oxefs_enc, u, "libavutil", frame_free, "av_frame_free")
	OXEFS_SYM(oxefs_enc, u, "libavutil", frame_get_buffer, "av_frame_get_buffer")
	OXEFS_SYM(oxefs_enc, u, "libavutil", frame_make_writable, "av_frame_make_writable")
	OXEFS_SYM(oxefs_enc, u, "libavutil", opt_set, "av_opt_set")
	OXEFS_SYM(oxefs_enc, u, "libavutil", strerror, "av_strerror")
	return NULL;
}

static void oxefs_enc_strerror(int err, char *buf, int n) {
	if (oxefs_enc.strerror(err, buf, n) < 0) snprintf(buf, n, "error %d", err);
}

typedef struct {
	const void *codec; // AVCodec
	void *ctx;         // AVCodecContext
	void *pkt;         // AVPacket
	void *frame;       // AVFrame
} oxefs_av_enc;

static void oxefs_enc_close(oxefs_av_enc *e) {
	if (e->ctx) oxefs_enc.free_context(&e->ctx);
	if (e->pkt) oxefs_enc.packet_free(&e->pkt);
	if (e->frame) oxefs_enc.frame_free(&e->frame);
}

// oxefs_enc_alloc finds the encoder by name and allocates its context (with
// the encoder's private options at their defaults). 0, or -1: no such
// encoder, or out of memory.
static int oxefs_enc_alloc(oxefs_av_enc *e, const char *name) {
	memset(e, 0, sizeof *e);
	e->codec = oxefs_enc.find_encoder_by_name(name);
	if (e->codec == NULL) return -1;
	e->ctx = oxefs_enc.alloc_context3(e->codec);
	if (e->ctx == NULL) return -1;
	return 0;
}

static int oxefs_enc_set(oxefs_av_enc *e, const char *key, const char *value) {
	return oxefs_enc.opt_set(e->ctx, key, value, OXEFS_AV_OPT_SEARCH_CHILDREN);
}

// oxefs_enc_open opens the encoder and allocates its yuv420p frame.
static int oxefs_enc_open(oxefs_av_enc *e, int width, int height, const char **stage) {
	*stage = "avcodec_open2";
	int ret = oxefs_enc.open2(e->ctx, e->codec, NULL);
	if (ret < 0) return ret;
	*stage = "av_packet_alloc";
	e->pkt = oxefs_enc.packet_alloc();
	e->frame = oxefs_enc.frame_alloc();
	if (e->pkt == NULL || e->frame == NULL) return -1;
	oxefs_avframe *f = e->frame;
	f->width = width;
	f->height = height;
	f->format = OXEFS_AV_PIX_FMT_YUV420P;
	*stage = "av_frame_get_buffer";
	return oxefs_enc.frame_get_buffer(e->frame, 0);
}

// oxefs_enc_extradata copies the context's extradata out through
// avcodec_parameters_from_context. *out is malloc'ed; the caller frees it.
static int oxefs_enc_extradata(oxefs_av_enc *e, uint8_t **out, int *n) {
	*out = NULL;
	*n = 0;
	oxefs_avcodecpar *par = oxefs_enc.parameters_alloc();
	if (par == NULL) return -1;
	int ret = oxefs_enc.parameters_from_context(par, e->ctx);
	if (ret >= 0 && par->extradata_size > 0) {
		*out = malloc(par->extradata_size);
		if (*out == NULL) ret = -1;
		else {
			memcpy(*out, par->extradata, par->extradata_size);
			*n = par->extradata_size;
		}
	}
	oxefs_enc.parameters_free((void **)&par);
	return ret;
}

typedef struct {
	uint8_t *data[3];
	int linesize[3];
} oxefs_enc_planes;

// oxefs_enc_frame makes the frame writable (the encoder may still hold the
// previous one) and returns its planes.
static int oxefs_enc_frame(oxefs_av_enc *e, oxefs_enc_planes *p) {
	int ret = oxefs_enc.frame_make_writable(e->frame);
	if (ret < 0) return ret;
	oxefs_avframe *f = e->frame;
	for (int i = 0; i < 3; i++) {
		p->data[i] = f->data[i];
		p->linesize[i] = f->linesize[i];
	}
	return 0;
}

// oxefs_enc_send sends the filled frame with its pts, or NULL (drain).
static int oxefs_enc_send(oxefs_av_enc *e, int64_t pts, int drain) {
	if (drain) return oxefs_enc.send_frame(e->ctx, NULL);
	oxefs_avframe *f = e->frame;
	f->pts = pts;
	return oxefs_enc.send_frame(e->ctx, e->frame);
}

typedef struct {
	const uint8_t *data;
	int size;
	int64_t pts, dts;
	int key;
} oxefs_enc_pktinfo;

// oxefs_enc_receive takes the next packet; it stays valid until the next
// call.
static int oxefs_enc_receive(oxefs_av_enc *e, oxefs_enc_pktinfo *out) {
	oxefs_enc.packet_unref(e->pkt);
	int ret = oxefs_enc.receive_packet(e->ctx, e->pkt);
	if (ret < 0) return ret;
	const oxefs_avpacket *p = e->pkt;
	out->data = p->data;
	out->size = p->size;
	out->pts = p->pts;
	out->dts = p->dts;
	out->key = (p->flags & OXEFS_AV_PKT_FLAG_KEY) != 0;
	return 0;
}
*/
import "C"

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"unsafe"
)

// loadEncoder resolves the encoder's symbols in the libraries load found.
var loadEncoder = sync.OnceValue(func() error {
	if err := load(); err != nil {
		return err
	}
	// SVT-AV1 prints its configuration on stderr for every encoder it
	// opens unless SVT_LOG says otherwise: keep only its errors.
	if _, set := os.LookupEnv("SVT_LOG"); !set {
		os.Setenv("SVT_LOG", "1")
	}
	var msg [512]C.char
	var tried []string
	for _, v := range sonames {
		e := C.oxefs_enc_load(C.int(v[0]), C.int(v[1]), &msg[0], C.int(len(msg)))
		if e == nil {
			return nil
		}
		tried = append(tried, C.GoString(e))
	}
	return fmt.Errorf("%w: encoder symbols: %s; %s", ErrUnavailable, strings.Join(tried, "; "), install)
})

func encError(op string, ret C.int) error {
	var buf [128]C.char
	C.oxefs_enc_strerror(ret, &buf[0], C.int(len(buf)))
	return fmt.Errorf("av: %s: %s (AVERROR %d)", op, C.GoString(&buf[0]), int(ret))
}

// Encoder is one libavcodec video encoder: packed RGB24 frames in, the
// compressed samples of an MP4 track out. It is not safe for concurrent
// use.
type Encoder struct {
	h       C.oxefs_av_enc
	cleanup runtime.Cleanup
	name    string
	codec   string
	w, h2   int
	next    int64 // pts of the next frame
	extra   []byte
	packets []Packet
	drained bool
	svt     bool // holds svtav1
}

// svtav1 admits one open libsvtav1 encoder per process: with two open at
// once, `oxefs synth --format lerobot --workers 2` died of SIGSEGV inside
// the library's own threads (SVT-AV1 1.4, Debian 12), where Go cannot
// recover. Other encoders run in parallel.
var svtav1 = make(chan struct{}, 1)

func releaseSVT(held bool) {
	if held {
		<-svtav1
	}
}

// NewEncoder opens an encoder for codec "av1" (libsvtav1, else libaom-av1)
// or "h264" (libx264) for frames of width×height at fps frames per second.
// Its time base is 1/fps: frame i has pts i. Close releases it; one never
// closed is released when garbage collected.
func NewEncoder(codec string, width, height, fps int, opts EncoderOptions) (*Encoder, error) {
	names, ok := encoderNames[codec]
	if !ok {
		return nil, fmt.Errorf("av: unknown codec %q to encode (want av1 or h264)", codec)
	}
	if width <= 0 || height <= 0 || width%2 != 0 || height%2 != 0 || fps <= 0 {
		return nil, fmt.Errorf("av: encoder for %dx%d at %d fps: width and height must be positive and even (4:2:0), fps positive", width, height, fps)
	}
	if err := loadEncoder(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	e := &Encoder{codec: codec, w: width, h2: height}
	var tried []string
	for _, name := range names {
		e.svt = name == "libsvtav1"
		if e.svt {
			svtav1 <- struct{}{}
		}
		cname := C.CString(name)
		ret := C.oxefs_enc_alloc(&e.h, cname)
		C.free(unsafe.Pointer(cname))
		if ret == 0 {
			e.name = name
			break
		}
		C.oxefs_enc_close(&e.h)
		releaseSVT(e.svt)
		e.svt = false
		tried = append(tried, name)
	}
	if e.name == "" {
		return nil, fmt.Errorf("%w: no %s encoder in this libavcodec (tried %s); %s", ErrUnavailable, codec, strings.Join(tried, ", "), encoderInstall)
	}
	fail := func(err error) (*Encoder, error) {
		C.oxefs_enc_close(&e.h)
		releaseSVT(e.svt)
		return nil, err
	}
	for _, o := range e.options(width, height, fps, opts) {
		k, v := C.CString(o[0]), C.CString(o[1])
		ret := C.oxefs_enc_set(&e.h, k, v)
		C.free(unsafe.Pointer(k))
		C.free(unsafe.Pointer(v))
		if ret < 0 {
			return fail(encError(fmt.Sprintf("%s: option %s=%s", e.name, o[0], o[1]), ret))
		}
	}
	var stage *C.char
	if ret := C.oxefs_enc_open(&e.h, C.int(width), C.int(height), &stage); ret != 0 {
		if ret == -1 {
			return fail(fmt.Errorf("av: %s: %s: out of memory", e.name, C.GoString(stage)))
		}
		return fail(encError(fmt.Sprintf("%s %dx%d: %s", e.name, width, height, C.GoString(stage)), ret))
	}
	var raw *C.uint8_t
	var n C.int
	if ret := C.oxefs_enc_extradata(&e.h, &raw, &n); ret < 0 {
		return fail(encError(e.name+": avcodec_parameters_from_context", ret))
	}
	extra := C.GoBytes(unsafe.Pointer(raw), n)
	C.free(unsafe.Pointer(raw))
	cfg, err := configRecord(codec, extra)
	if err != nil {
		return fail(fmt.Errorf("av: %s: %w", e.name, err))
	}
	e.extra = cfg
	type owned struct {
		h   C.oxefs_av_enc
		svt bool
	}
	e.cleanup = runtime.AddCleanup(e, func(o owned) { C.oxefs_enc_close(&o.h); releaseSVT(o.svt) }, owned{e.h, e.svt})
	return e, nil
}

// options are the AVOptions set before avcodec_open2: the context's own
// and, through AV_OPT_SEARCH_CHILDREN, the encoder's private ones.
func (e *Encoder) options(width, height, fps int, o EncoderOptions) [][2]string {
	opts := [][2]string{
		{"video_size", fmt.Sprintf("%dx%d", width, height)},
		{"pixel_format", "yuv420p"},
		{"time_base", fmt.Sprintf("1/%d", fps)},
		{"g", strconv.Itoa(o.GOP)},
		{"bf", "0"},
		{"threads", strconv.Itoa(o.Threads)},
		{"flags", "+global_header"},
		{"crf", strconv.Itoa(o.CRF)},
	}
	switch e.name {
	case "libaom-av1":
		// libaom's rate control is average bitrate unless told otherwise;
		// cpu-used 8 is its fastest preset.
		opts = append(opts, [2]string{"b", "0"}, [2]string{"cpu-used", "8"}, [2]string{"row-mt", "0"})
		if o.Preset != "" {
			opts[len(opts)-2][1] = o.Preset
		}
	default:
		if o.Preset != "" {
			opts = append(opts, [2]string{"preset", o.Preset})
		}
	}
	return opts
}

// Name is the libavcodec encoder in use: "libsvtav1", "libaom-av1" or
// "libx264".
func (e *Encoder) Name() string { return e.name }

// Extradata is the track's codec configuration record, the payload of the
// MP4 sample entry's av1C or avcC box, as NewDecoder takes it.
func (e *Encoder) Extradata() []byte { return bytes.Clone(e.extra) }

// Encode converts one packed RGB24 frame of the encoder's size (rows
// 3·width bytes apart) to yuv420p and sends it; the packets it yields are
// collected for Packets.
func (e *Encoder) Encode(rgb []byte) error {
	if e.h.ctx == nil {
		return errors.New("av: encoder closed")
	}
	if e.drained {
		return errors.New("av: encoder flushed: open another for more frames")
	}
	if len(rgb) < e.w*e.h2*3 {
		return fmt.Errorf("av: Encode: %d bytes of RGB, need %d for %dx%d", len(rgb), e.w*e.h2*3, e.w, e.h2)
	}
	var p C.oxefs_enc_planes
	if ret := C.oxefs_enc_frame(&e.h, &p); ret < 0 {
		return encError(e.name+": av_frame_make_writable", ret)
	}
	var planes [3][]byte
	var strides [3]int
	for i := range 3 {
		h := e.h2
		if i > 0 {
			h /= 2
		}
		strides[i] = int(p.linesize[i])
		planes[i] = unsafe.Slice((*byte)(unsafe.Pointer(p.data[i])), strides[i]*h)
	}
	RGBToYUV420(planes, strides, rgb, e.w, e.h2)
	if ret := C.oxefs_enc_send(&e.h, C.int64_t(e.next), 0); ret < 0 {
		return encError(e.name+": avcodec_send_frame", ret)
	}
	e.next++
	return e.receive()
}

// Flush drains the encoder: the packets of the frames it held back join
// Packets. Encode may not be called afterwards.
func (e *Encoder) Flush() error {
	if e.h.ctx == nil {
		return errors.New("av: encoder closed")
	}
	if e.drained {
		return nil
	}
	e.drained = true
	if ret := C.oxefs_enc_send(&e.h, 0, 1); ret < 0 {
		return encError(e.name+": avcodec_send_frame (drain)", ret)
	}
	return e.receive()
}

// receive moves every packet the encoder has ready into e.packets.
func (e *Encoder) receive() error {
	for {
		var info C.oxefs_enc_pktinfo
		ret := C.oxefs_enc_receive(&e.h, &info)
		switch {
		case ret == averrorEAGAIN || ret == averrorEOF:
			return nil
		case ret < 0:
			return encError(e.name+": avcodec_receive_packet", ret)
		}
		raw := unsafe.Slice((*byte)(unsafe.Pointer(info.data)), int(info.size))
		data, err := sampleOf(e.codec, raw)
		if err != nil {
			return fmt.Errorf("av: %s packet %d: %w", e.name, len(e.packets), err)
		}
		e.packets = append(e.packets, Packet{Data: data, PTS: int64(info.pts), DTS: int64(info.dts), Key: info.key != 0})
	}
}

// Packets returns the packets encoded since the last call, in decode
// order, and forgets them.
func (e *Encoder) Packets() []Packet {
	p := e.packets
	e.packets = nil
	return p
}

// Close releases the encoder, draining it first if frames were sent and
// Flush was not called (libsvtav1 complains on stderr when closed
// mid-stream, and hangs when drained before any frame).
func (e *Encoder) Close() {
	if e.h.ctx == nil {
		return
	}
	if !e.drained && e.next > 0 {
		_ = e.Flush()
		e.packets = nil
	}
	e.cleanup.Stop()
	C.oxefs_enc_close(&e.h)
	releaseSVT(e.svt)
	e.svt = false
}
