// Package av decodes compressed video samples (AV1, H.264, HEVC) into YUV
// frames with FFmpeg's libavcodec, loaded at run time with dlopen, and
// converts a frame to packed RGB24 exactly as PyAV's
// frame.to_ndarray(format="rgb24") does on x86-64 (LeRobot's "pyav" decoding
// path). It owns nothing else: demuxing (finding the samples and the codec
// configuration record in an MP4) belongs to its caller.
//
// # Loading
//
// Nothing links against FFmpeg. A build with cgo carries a small C shim
// that opens libavcodec.so.N with dlopen, trying N = 61, 60, 59, 58 (FFmpeg
// 7, 6, 5, 4) in that order, then the libavutil.so of the same release (59,
// 58, 57, 56), checks that avcodec_version and avutil_version report those
// majors, and resolves the functions it calls with dlsym: from libavcodec
// avcodec_find_decoder, avcodec_alloc_context3, avcodec_free_context,
// avcodec_parameters_alloc, avcodec_parameters_free,
// avcodec_parameters_to_context, avcodec_open2, avcodec_send_packet,
// avcodec_receive_frame, avcodec_flush_buffers, av_packet_alloc,
// av_packet_free, av_new_packet and av_packet_unref; from libavutil
// av_frame_alloc, av_frame_free, av_mallocz, av_strerror, av_opt_set_int,
// av_opt_get_int, av_get_pix_fmt_name and av_log_set_level. Building needs
// neither FFmpeg nor its headers, only libc's dlfcn.h. A build without cgo,
// or a machine without the library, reports ErrUnavailable (Debian 12:
// apt-get install libavcodec59; Debian 13: libavcodec61). The library is
// loaded once per process, which also sets FFmpeg's process-wide log level
// to AV_LOG_FATAL, so that corrupt samples are reported as errors and not
// also printed on stderr.
//
// # Struct offsets
//
// Without headers the shim declares the heads of four public structs
// itself, and reads or writes only fields in those heads, whose layout has
// not changed from FFmpeg 4 to FFmpeg 7 (every change to these structs in
// that time appended fields or removed fields further down):
//
//   - AVFrame: data[8], linesize[8], extended_data, width, height,
//     nb_samples, format, key_frame, pict_type, sample_aspect_ratio, pts.
//     key_frame, deprecated in FFmpeg 6.1, is still there in libavutil 59
//     and goes only with libavutil 60 (FFmpeg 8), which is not loaded. The
//     tests prove the pts offset: every decoded frame must carry the pts
//     its packet was sent with.
//   - AVPacket: buf, pts, dts, data, size.
//   - AVCodecParameters: codec_type, codec_id, codec_tag, extradata,
//     extradata_size; the parameters go to the decoder with
//     avcodec_parameters_to_context.
//   - AVCodec: name.
//
// AVCodecContext is never read or written through an offset: threads and
// max_pixels are set, and color_range and colorspace read, through the
// AVOptions API. A frame's colour range and colour space come from the
// decoder context after each frame (the AVFrame fields move between
// releases); libavcodec gives a frame the context's values unless the
// bitstream says otherwise, and the decoders used here set both together.
//
// # Decoding
//
// A Decoder is one AVCodecContext with threads=1: it is not safe for
// concurrent use, and the caller runs one per worker goroutine. For AV1 it
// uses the decoder FFmpeg picks for AV_CODEC_ID_AV1 (libdav1d on Debian);
// Decoder.Name says which. Send takes one compressed sample, Receive
// returns decoded frames in presentation order (B-frames reordered), and
// Send(nil) drains the decoder at the end of the stream. A Frame's planes
// are views into libavcodec's buffers, valid until the next Receive, Reset
// or Close.
//
// # RGB
//
// PyAV converts with libswscale (sws_scale_frame, SWS_BILINEAR, no
// SWS_ACCURATE_RND). For 8-bit 4:2:0 or 4:2:2 input of even height at the
// same size, swscale takes its unscaled fast path, which on x86-64 is the
// SSSE3 converter (yuv420_rgb24_ssse3): chroma is replicated, not
// interpolated (each chroma sample covers two pixels across, and two rows
// down for 4:2:0), and each channel is a sum of 16-bit fixed-point
// products truncated by pmulhw:
//
//	Y' = 8·Y − 8·16 (limited range) or 8·Y (full range); U' = 8·U − 1024; V' = 8·V − 1024
//	y = (Y'·cy) >> 16
//	R = clamp(y + (V'·cvr) >> 16)
//	G = clamp(y + (U'·cug) >> 16 + (V'·cvg) >> 16)
//	B = clamp(y + (U'·cub) >> 16)
//
// with the coefficients ff_yuv2rgb_c_init_tables derives from the frame's
// colour space (sws_getCoefficients: BT.601 when unspecified, BT.709,
// FCC, SMPTE 240M or BT.2020) and range. Frame.RGB computes exactly that,
// from 256-entry tables built once per (matrix, range); it matches PyAV
// 18.1 (FFmpeg 8.0) byte for byte on the test clips. Frames of odd height
// (swscale's scaling path) and other pixel formats are refused with an
// error. Non-x86 builds of FFmpeg use a C converter with different
// rounding; PyAV on those machines differs from this package by a level
// or two.
package av

import (
	"errors"
	"fmt"
)

// ErrUnavailable matches every error saying libavcodec cannot be used: the
// binary was built without cgo, or no supported libavcodec (or one of its
// symbols) could be loaded. The wrapped error names the libraries tried and
// the package to install.
var ErrUnavailable = errors.New("libavcodec unavailable")

// ErrPending is returned by Send when the decoder has not yet accepted the
// previous packet: call Receive until it returns no frame, then Send again.
var ErrPending = errors.New("av: decoder has output pending: Receive before sending another packet")

// NoPTS is the PTS of a packet sent without one, and of a frame whose
// presentation time the decoder does not know (FFmpeg's AV_NOPTS_VALUE).
const NoPTS int64 = -1 << 63

// install names the packages that provide a supported libavcodec.
const install = "apt-get install libavcodec59 (Debian 12) or libavcodec61 (Debian 13)"

// codecIDs maps the codec names NewDecoder accepts to FFmpeg's AVCodecID
// (values fixed by FFmpeg's ABI).
var codecIDs = map[string]int{
	"av1":  226, // AV_CODEC_ID_AV1
	"h264": 27,  // AV_CODEC_ID_H264
	"hevc": 173, // AV_CODEC_ID_HEVC
}

func codecID(name string) (int, error) {
	id, ok := codecIDs[name]
	if !ok {
		return 0, fmt.Errorf("av: unknown codec %q (want av1, h264 or hevc)", name)
	}
	return id, nil
}

// PixelFormat is a frame's pixel format, FFmpeg's AVPixelFormat. Only the
// formats named below have the same value in every FFmpeg release loaded.
type PixelFormat int

// Pixel formats whose planes a Frame exposes.
const (
	YUV420P  PixelFormat = 0  // 8-bit 4:2:0, limited range unless the frame says otherwise
	YUV422P  PixelFormat = 4  // 8-bit 4:2:2
	YUV444P  PixelFormat = 5  // 8-bit 4:4:4
	Gray8    PixelFormat = 8  // 8-bit luma only
	YUVJ420P PixelFormat = 12 // 8-bit 4:2:0, full range (JPEG)
	YUVJ422P PixelFormat = 13 // 8-bit 4:2:2, full range
	YUVJ444P PixelFormat = 14 // 8-bit 4:4:4, full range
)

func (p PixelFormat) String() string {
	switch p {
	case YUV420P:
		return "yuv420p"
	case YUV422P:
		return "yuv422p"
	case YUV444P:
		return "yuv444p"
	case Gray8:
		return "gray"
	case YUVJ420P:
		return "yuvj420p"
	case YUVJ422P:
		return "yuvj422p"
	case YUVJ444P:
		return "yuvj444p"
	}
	return fmt.Sprintf("pix_fmt(%d)", int(p))
}

// chroma returns the chroma subsampling shifts of the planar 8-bit formats,
// and ok false for the others.
func (p PixelFormat) chroma() (xshift, yshift int, planes int, ok bool) {
	switch p {
	case YUV420P, YUVJ420P:
		return 1, 1, 3, true
	case YUV422P, YUVJ422P:
		return 1, 0, 3, true
	case YUV444P, YUVJ444P:
		return 0, 0, 3, true
	case Gray8:
		return 0, 0, 1, true
	}
	return 0, 0, 0, false
}

// ColorSpace is the YUV matrix a frame is tagged with, FFmpeg's
// AVColorSpace (the values of ISO/IEC 23091-4 MatrixCoefficients).
type ColorSpace int

// The colour spaces the RGB conversion knows; the rest are refused, as
// swscale refuses them.
const (
	ColorSpaceRGB         ColorSpace = 0 // treated as BT.601, as swscale does
	ColorSpaceBT709       ColorSpace = 1
	ColorSpaceUnspecified ColorSpace = 2 // BT.601
	ColorSpaceFCC         ColorSpace = 4
	ColorSpaceBT470BG     ColorSpace = 5 // BT.601 625
	ColorSpaceSMPTE170M   ColorSpace = 6 // BT.601 525
	ColorSpaceSMPTE240M   ColorSpace = 7
	ColorSpaceBT2020NCL   ColorSpace = 9
)

// Frame is one decoded picture. Its planes are views into libavcodec's
// buffers: valid until the next Receive, Reset or Close of the Decoder that
// returned it, and not to be modified.
type Frame struct {
	Width, Height int
	Format        PixelFormat
	// Planes are Y, U and V (only Y for Gray8; none for formats this
	// package does not know), rows Strides bytes apart; each holds
	// Strides[i]·(rows−1) + width bytes.
	Planes  [3][]byte
	Strides [3]int
	// FullRange is true for full-range (JPEG) samples: AVCOL_RANGE_JPEG or
	// a yuvj format.
	FullRange  bool
	ColorSpace ColorSpace
	// PTS is the pts of the packet the frame was decoded from, or NoPTS.
	PTS int64

	formatName string // av_get_pix_fmt_name, for errors about formats not handled here
}
