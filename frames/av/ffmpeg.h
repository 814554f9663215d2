// What the decoder's and the encoder's cgo shims share: the heads of
// FFmpeg's public structs they touch, declared here so that building needs
// no FFmpeg headers (only these leading fields are used; their layout is
// the same in FFmpeg 4 to 7, see doc.go), FFmpeg's constants, and opening
// the two libraries.

#ifndef OXEFS_FFMPEG_H
#define OXEFS_FFMPEG_H

#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
	uint8_t *data[8];
	int linesize[8];
	uint8_t **extended_data;
	int width, height;
	int nb_samples;
	int format;
	int key_frame;  // removed only in libavutil 60
	int pict_type;
	int sar_num, sar_den;
	int64_t pts;
} oxefs_avframe;

typedef struct {
	void *buf;
	int64_t pts;
	int64_t dts;
	uint8_t *data;
	int size;
	int stream_index;
	int flags;
} oxefs_avpacket;

typedef struct {
	int codec_type;  // enum AVMediaType
	int codec_id;    // enum AVCodecID
	uint32_t codec_tag;
	uint8_t *extradata;
	int extradata_size;
} oxefs_avcodecpar;

typedef struct {
	const char *name;
} oxefs_avcodec;

enum {
	OXEFS_AVMEDIA_TYPE_VIDEO = 0,
	OXEFS_AV_INPUT_BUFFER_PADDING_SIZE = 64,
	OXEFS_AV_LOG_FATAL = 8,
	OXEFS_AV_OPT_SEARCH_CHILDREN = 1,
	OXEFS_AV_PKT_FLAG_KEY = 1,
	OXEFS_AV_PIX_FMT_YUV420P = 0,
};

// oxefs_av_dlopen opens libavutil.so.<util> and libavcodec.so.<codec>
// into *u and *c. It returns NULL on success, else a message written into
// msg; nothing stays open after a failure.
static const char *oxefs_av_dlopen(int codec, int util, void **c, void **u, char *msg, int msglen) {
	char name[64];
	snprintf(name, sizeof name, "libavutil.so.%d", util);
	*u = dlopen(name, RTLD_NOW | RTLD_LOCAL);
	if (*u == NULL) {
		const char *e = dlerror();
		snprintf(msg, msglen, "%s", e ? e : "dlopen libavutil failed");
		return msg;
	}
	snprintf(name, sizeof name, "libavcodec.so.%d", codec);
	*c = dlopen(name, RTLD_NOW | RTLD_LOCAL);
	if (*c == NULL) {
		const char *e = dlerror();
		snprintf(msg, msglen, "%s", e ? e : "dlopen libavcodec failed");
		dlclose(*u);
		return msg;
	}
	return NULL;
}

// OXEFS_SYM resolves sym in lib (named libname in the message) into the
// function pointer table.field; when it is missing, it closes both
// libraries (c and u, in scope) and returns the message written into msg.
#define OXEFS_SYM(table, lib, libname, field, sym) \
	*(void **)(&(table).field) = dlsym(lib, sym); \
	if ((table).field == NULL) { \
		snprintf(msg, msglen, "%s: symbol %s missing", libname, sym); \
		dlclose(c); dlclose(u); return msg; \
	}

#endif
