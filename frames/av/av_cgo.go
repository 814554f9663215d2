//go:build cgo

package av

/*
#cgo linux LDFLAGS: -ldl
#include "ffmpeg.h"

static struct {
	unsigned (*avcodec_version)(void);
	unsigned (*avutil_version)(void);
	const void *(*find_decoder)(int);
	void *(*alloc_context3)(const void *);
	void (*free_context)(void **);
	void *(*parameters_alloc)(void);
	void (*parameters_free)(void **);
	int (*parameters_to_context)(void *, const void *);
	int (*open2)(void *, const void *, void **);
	int (*send_packet)(void *, const void *);
	int (*receive_frame)(void *, void *);
	void (*flush_buffers)(void *);
	void *(*packet_alloc)(void);
	void (*packet_free)(void **);
	int (*new_packet)(void *, int);
	void (*packet_unref)(void *);
	void *(*frame_alloc)(void);
	void (*frame_free)(void **);
	void *(*mallocz)(size_t);
	int (*strerror)(int, char *, size_t);
	int (*opt_set_int)(void *, const char *, int64_t, int);
	int (*opt_get_int)(void *, const char *, int, int64_t *);
	const char *(*pix_fmt_name)(int);
	void (*log_set_level)(int);
} oxefs_av;

// oxefs_av_load opens libavcodec.so.<codec> and libavutil.so.<util> and
// resolves every symbol. It returns NULL on success, else a message (static,
// or written into msg).
static const char *oxefs_av_load(int codec, int util, char *msg, int msglen) {
	void *c, *u;
	const char *err = oxefs_av_dlopen(codec, util, &c, &u, msg, msglen);
	if (err != NULL) return err;
	OXEFS_SYM(oxefs_av, c, "libavcodec", avcodec_version, "avcodec_version")
	OXEFS_SYM(oxefs_av, c, "libavcodec", find_decoder, "avcodec_find_decoder")
	OXEFS_SYM(oxefs_av, c, "libavcodec", alloc_context3, "avcodec_alloc_context3")
	OXEFS_SYM(oxefs_av, c, "libavcodec", free_context, "avcodec_free_context")
	OXEFS_SYM(oxefs_av, c, "libavcodec", parameters_alloc, "avcodec_parameters_alloc")
	OXEFS_SYM(oxefs_av, c, "libavcodec", parameters_free, "avcodec_parameters_free")
	OXEFS_SYM(oxefs_av, c, "libavcodec", parameters_to_context, "avcodec_parameters_to_context")
	OXEFS_SYM(oxefs_av, c, "libavcodec", open2, "avcodec_open2")
	OXEFS_SYM(oxefs_av, c, "libavcodec", send_packet, "avcodec_send_packet")
	OXEFS_SYM(oxefs_av, c, "libavcodec", receive_frame, "avcodec_receive_frame")
	OXEFS_SYM(oxefs_av, c, "libavcodec", flush_buffers, "avcodec_flush_buffers")
	OXEFS_SYM(oxefs_av, c, "libavcodec", packet_alloc, "av_packet_alloc")
	OXEFS_SYM(oxefs_av, c, "libavcodec", packet_free, "av_packet_free")
	OXEFS_SYM(oxefs_av, c, "libavcodec", new_packet, "av_new_packet")
	OXEFS_SYM(oxefs_av, c, "libavcodec", packet_unref, "av_packet_unref")
	OXEFS_SYM(oxefs_av, u, "libavutil", avutil_version, "avutil_version")
	OXEFS_SYM(oxefs_av, u, "libavutil", frame_alloc, "av_frame_alloc")
	OXEFS_SYM(oxefs_av, u, "libavutil", frame_free, "av_frame_free")
	OXEFS_SYM(oxefs_av, u, "libavutil", mallocz, "av_mallocz")
	OXEFS_SYM(oxefs_av, u, "libavutil", strerror, "av_strerror")
	OXEFS_SYM(oxefs_av, u, "libavutil", opt_set_int, "av_opt_set_int")
	OXEFS_SYM(oxefs_av, u, "libavutil", opt_get_int, "av_opt_get_int")
	OXEFS_SYM(oxefs_av, u, "libavutil", pix_fmt_name, "av_get_pix_fmt_name")
	OXEFS_SYM(oxefs_av, u, "libavutil", log_set_level, "av_log_set_level")
	unsigned cv = oxefs_av.avcodec_version(), uv = oxefs_av.avutil_version();
	if ((int)(cv >> 16) != codec || (int)(uv >> 16) != util) {
		snprintf(msg, msglen, "libavcodec.so.%d reports version %u.%u.%u and libavutil.so.%d %u.%u.%u",
			codec, cv >> 16, (cv >> 8) & 0xff, cv & 0xff, util, uv >> 16, (uv >> 8) & 0xff, uv & 0xff);
		dlclose(c); dlclose(u);
		return msg;
	}
	oxefs_av.log_set_level(OXEFS_AV_LOG_FATAL);
	return NULL;
}

static unsigned oxefs_av_codec_version(void) { return oxefs_av.avcodec_version(); }
static unsigned oxefs_av_util_version(void) { return oxefs_av.avutil_version(); }

static void oxefs_av_strerror(int err, char *buf, int n) {
	if (oxefs_av.strerror(err, buf, n) < 0) snprintf(buf, n, "error %d", err);
}

typedef struct {
	void *ctx;     // AVCodecContext
	void *pkt;     // AVPacket
	void *frame;   // AVFrame
} oxefs_av_dec;

static void oxefs_av_close(oxefs_av_dec *d) {
	if (d->ctx) oxefs_av.free_context(&d->ctx);
	if (d->pkt) oxefs_av.packet_free(&d->pkt);
	if (d->frame) oxefs_av.frame_free(&d->frame);
}

// oxefs_av_open opens a single-threaded decoder for codec id with the given
// extradata. It returns 0, or an AVERROR with *stage naming the failed call
// (a stage with a zero return means a decoder was not found or memory ran
// out).
static int oxefs_av_open(oxefs_av_dec *d, int id, const uint8_t *extra, int n,
	const char **name, const char **stage) {
	memset(d, 0, sizeof *d);
	*stage = "avcodec_find_decoder";
	const oxefs_avcodec *codec = oxefs_av.find_decoder(id);
	if (codec == NULL) return -1;
	*name = codec->name;
	*stage = "avcodec_alloc_context3";
	d->ctx = oxefs_av.alloc_context3(codec);
	if (d->ctx == NULL) return -1;
	*stage = "avcodec_parameters_alloc";
	oxefs_avcodecpar *par = oxefs_av.parameters_alloc();
	if (par == NULL) { oxefs_av_close(d); return -1; }
	par->codec_type = OXEFS_AVMEDIA_TYPE_VIDEO;
	par->codec_id = id;
	if (n > 0) {
		par->extradata = oxefs_av.mallocz((size_t)n + OXEFS_AV_INPUT_BUFFER_PADDING_SIZE);
		if (par->extradata == NULL) {
			oxefs_av.parameters_free((void **)&par);
			oxefs_av_close(d);
			return -1;
		}
		memcpy(par->extradata, extra, n);
		par->extradata_size = n;
	}
	*stage = "avcodec_parameters_to_context";
	int ret = oxefs_av.parameters_to_context(d->ctx, par);
	oxefs_av.parameters_free((void **)&par);
	if (ret < 0) { oxefs_av_close(d); return ret; }
	*stage = "av_opt_set_int threads";
	if ((ret = oxefs_av.opt_set_int(d->ctx, "threads", 1, 0)) < 0) { oxefs_av_close(d); return ret; }
	// 8192x8192: a header claiming more is corrupt, not a robot camera.
	*stage = "av_opt_set_int max_pixels";
	if ((ret = oxefs_av.opt_set_int(d->ctx, "max_pixels", 8192 * 8192, 0)) < 0) { oxefs_av_close(d); return ret; }
	*stage = "avcodec_open2";
	if ((ret = oxefs_av.open2(d->ctx, codec, NULL)) < 0) { oxefs_av_close(d); return ret; }
	*stage = "av_packet_alloc";
	d->pkt = oxefs_av.packet_alloc();
	d->frame = oxefs_av.frame_alloc();
	if (d->pkt == NULL || d->frame == NULL) { oxefs_av_close(d); return -1; }
	return 0;
}

// oxefs_av_fill copies one sample into the decoder's packet, with zeroed
// padding (av_new_packet).
static int oxefs_av_fill(oxefs_av_dec *d, const uint8_t *buf, int n, int64_t pts) {
	oxefs_av.packet_unref(d->pkt);
	int ret = oxefs_av.new_packet(d->pkt, n);
	if (ret < 0) return ret;
	oxefs_avpacket *p = d->pkt;
	memcpy(p->data, buf, n);
	p->pts = pts;
	return 0;
}

// oxefs_av_send sends the filled packet, or NULL (drain). The packet is
// released once the decoder has taken it.
static int oxefs_av_send(oxefs_av_dec *d, int drain) {
	int ret = oxefs_av.send_packet(d->ctx, drain ? NULL : d->pkt);
	if (ret >= 0 && !drain) oxefs_av.packet_unref(d->pkt);
	return ret;
}

static void oxefs_av_flush(oxefs_av_dec *d) {
	oxefs_av.flush_buffers(d->ctx);
	oxefs_av.packet_unref(d->pkt);
}

typedef struct {
	uint8_t *data[3];
	int linesize[3];
	int width, height, format;
	int64_t pts;
	int64_t color_range, colorspace;
	const char *format_name;
} oxefs_av_frameinfo;

static int oxefs_av_receive(oxefs_av_dec *d, oxefs_av_frameinfo *out) {
	int ret = oxefs_av.receive_frame(d->ctx, d->frame);
	if (ret < 0) return ret;
	const oxefs_avframe *f = d->frame;
	for (int i = 0; i < 3; i++) {
		out->data[i] = f->data[i];
		out->linesize[i] = f->linesize[i];
	}
	out->width = f->width;
	out->height = f->height;
	out->format = f->format;
	out->pts = f->pts;
	out->color_range = 0;
	out->colorspace = 2;
	oxefs_av.opt_get_int(d->ctx, "color_range", 0, &out->color_range);
	oxefs_av.opt_get_int(d->ctx, "colorspace", 0, &out->colorspace);
	out->format_name = oxefs_av.pix_fmt_name(f->format);
	return 0;
}
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"unsafe"
)

// Error codes of libavcodec that the decoder handles: AVERROR(EAGAIN) on
// Linux and AVERROR_EOF (-MKTAG('E','O','F',' ')).
const (
	averrorEAGAIN = -11
	averrorEOF    = -0x20464F45
)

// sonames pairs each libavcodec major tried with its libavutil, newest
// first.
var sonames = [][2]int{{61, 59}, {60, 58}, {59, 57}, {58, 56}}

var load = sync.OnceValue(func() error {
	var msg [512]C.char
	var tried []string
	for _, v := range sonames {
		e := C.oxefs_av_load(C.int(v[0]), C.int(v[1]), &msg[0], C.int(len(msg)))
		if e == nil {
			return nil
		}
		tried = append(tried, C.GoString(e))
	}
	return fmt.Errorf("%w: tried libavcodec.so.61, .60, .59 and .58 (%s); %s",
		ErrUnavailable, strings.Join(tried, "; "), install)
})

// Available loads libavcodec on first use and reports whether it can be
// used: nil, or an error matching ErrUnavailable that names the libraries
// tried and the package to install.
func Available() error { return load() }

// averror is a libavcodec error with the call that returned it.
func averror(op string, ret C.int) error {
	var buf [128]C.char
	C.oxefs_av_strerror(ret, &buf[0], C.int(len(buf)))
	return fmt.Errorf("av: %s: %s (AVERROR %d)", op, C.GoString(&buf[0]), int(ret))
}

// Decoder is one libavcodec decoder, single-threaded. It is not safe for
// concurrent use: give each goroutine its own.
type Decoder struct {
	h       C.oxefs_av_dec
	cleanup runtime.Cleanup
	name    string
	codec   string

	// pending is set while a packet (or the drain request, if drain) that
	// libavcodec refused with EAGAIN waits in h.pkt for Receive to send.
	pending, drain bool
	info           C.oxefs_av_frameinfo
	frame          Frame
}

// NewDecoder opens a decoder for codec "av1", "h264" or "hevc" with the
// track's codec configuration record as extradata: the payload of the av1C,
// avcC or hvcC box of the MP4 sample entry, or nil when the parameter sets
// travel in the samples. It loads libavcodec on first use. Close releases
// the decoder; one never closed is released when garbage collected.
func NewDecoder(codec string, extradata []byte) (*Decoder, error) {
	id, err := codecID(codec)
	if err != nil {
		return nil, err
	}
	if err := load(); err != nil {
		return nil, err
	}
	d := &Decoder{codec: codec}
	var extra *C.uint8_t
	if len(extradata) > 0 {
		extra = (*C.uint8_t)(unsafe.Pointer(&extradata[0]))
	}
	var name, stage *C.char
	if ret := C.oxefs_av_open(&d.h, C.int(id), extra, C.int(len(extradata)), &name, &stage); ret != 0 {
		if ret == -1 {
			return nil, fmt.Errorf("%w: %s for %s failed (no decoder, or out of memory)", ErrUnavailable, C.GoString(stage), codec)
		}
		return nil, averror(codec+" decoder: "+C.GoString(stage), ret)
	}
	d.name = C.GoString(name)
	d.cleanup = runtime.AddCleanup(d, func(h C.oxefs_av_dec) { C.oxefs_av_close(&h) }, d.h)
	return d, nil
}

// Name is the libavcodec decoder in use, such as "libdav1d", "h264" or
// "hevc".
func (d *Decoder) Name() string { return d.name }

// Close releases the decoder. Frames it returned are invalid afterwards.
func (d *Decoder) Close() {
	if d.h.ctx == nil {
		return
	}
	d.cleanup.Stop()
	C.oxefs_av_close(&d.h)
	d.frame = Frame{}
}

func (d *Decoder) closed() error {
	if d.h.ctx == nil {
		return errors.New("av: decoder closed")
	}
	return nil
}

// Send gives the decoder one compressed sample (an access unit as stored
// in the MP4: length-prefixed NAL units for H.264 and HEVC, OBUs for AV1),
// copied into a padded packet. A nil or empty pkt ends the stream: Receive
// then returns the frames still held back, and after them (nil, nil);
// Reset before sending again.
//
// The contract is FFmpeg's send/receive loop: after each Send, call
// Receive until it returns no frame. When libavcodec has output pending
// and cannot take the packet yet (EAGAIN), Send keeps it and returns nil,
// and the next Receive that empties the output sends it; a Send while one
// is kept returns ErrPending. A corrupt sample gives an error (from Send or
// a later Receive), never a crash; the decoder goes on with the next one.
func (d *Decoder) Send(pkt []byte) error { return d.SendPTS(pkt, NoPTS) }

// SendPTS is Send with the sample's presentation timestamp, which the
// frame decoded from it carries as Frame.PTS (after B-frame reordering).
func (d *Decoder) SendPTS(pkt []byte, pts int64) error {
	if err := d.closed(); err != nil {
		return err
	}
	if d.pending {
		return ErrPending
	}
	drain := len(pkt) == 0
	if !drain {
		if ret := C.oxefs_av_fill(&d.h, (*C.uint8_t)(unsafe.Pointer(&pkt[0])), C.int(len(pkt)), C.int64_t(pts)); ret < 0 {
			return averror(d.codec+" av_new_packet", ret)
		}
	}
	switch ret := C.oxefs_av_send(&d.h, boolInt(drain)); {
	case ret >= 0:
		return nil
	case ret == averrorEAGAIN:
		d.pending, d.drain = true, drain
		return nil
	case ret == averrorEOF:
		return fmt.Errorf("av: %s decoder: packet after the end of the stream: Reset first", d.codec)
	default:
		return averror(d.codec+" avcodec_send_packet", ret)
	}
}

func boolInt(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

// Receive returns the next decoded frame in presentation order, or (nil,
// nil) when the decoder needs another packet or, after Send(nil), is
// drained. The frame is valid until the next Receive, Reset or Close.
func (d *Decoder) Receive() (*Frame, error) {
	if err := d.closed(); err != nil {
		return nil, err
	}
	d.frame = Frame{}
	for {
		ret := C.oxefs_av_receive(&d.h, &d.info)
		switch {
		case ret >= 0:
			d.fill()
			return &d.frame, nil
		case ret == averrorEAGAIN && d.pending:
			d.pending = false
			sret := C.oxefs_av_send(&d.h, boolInt(d.drain))
			if sret == averrorEAGAIN {
				// The decoder wants output taken and input given at
				// once: a libavcodec bug, reported rather than spun on.
				return nil, averror(d.codec+" avcodec_send_packet after receiving all output", sret)
			}
			if sret < 0 && sret != averrorEOF {
				return nil, averror(d.codec+" avcodec_send_packet", sret)
			}
		case ret == averrorEAGAIN || ret == averrorEOF:
			return nil, nil
		default:
			return nil, averror(d.codec+" avcodec_receive_frame", ret)
		}
	}
}

// fill describes the received AVFrame in d.frame.
func (d *Decoder) fill() {
	in := &d.info
	f := &d.frame
	f.Width, f.Height = int(in.width), int(in.height)
	f.Format = PixelFormat(in.format)
	f.PTS = int64(in.pts)
	f.ColorSpace = ColorSpace(in.colorspace)
	f.FullRange = in.color_range == 2 || f.Format == YUVJ420P || f.Format == YUVJ422P || f.Format == YUVJ444P // AVCOL_RANGE_JPEG
	if in.format_name != nil {
		f.formatName = C.GoString(in.format_name)
	}
	xs, ys, n, ok := f.Format.chroma()
	if !ok || f.Width <= 0 || f.Height <= 0 {
		return
	}
	for i := range n {
		w, h := f.Width, f.Height
		if i > 0 {
			w, h = (w+(1<<xs)-1)>>xs, (h+(1<<ys)-1)>>ys
		}
		stride := int(in.linesize[i])
		if in.data[i] == nil || stride < w {
			f.Planes, f.Strides = [3][]byte{}, [3]int{}
			return
		}
		f.Strides[i] = stride
		f.Planes[i] = unsafe.Slice((*byte)(unsafe.Pointer(in.data[i])), stride*(h-1)+w)
	}
}

// Reset discards the decoder's state and every frame it holds
// (avcodec_flush_buffers), including a kept packet and the end of a drain:
// the next Send should start at a keyframe.
func (d *Decoder) Reset() {
	if d.h.ctx == nil {
		return
	}
	C.oxefs_av_flush(&d.h)
	d.pending, d.drain = false, false
	d.frame = Frame{}
}
