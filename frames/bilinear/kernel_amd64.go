//go:build cgo && amd64 && !purego

package bilinear

/*
#cgo CFLAGS: -O2

// No contraction of a*b+c into an FMA: cgo refuses -ffp-contract=off as a
// flag, so it is a pragma (and no function here targets FMA anyway).
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include <stdint.h>
#include <immintrin.h>

// Tap's layout in Go: two uint32 and a float32, 12 bytes.
typedef struct { uint32_t lo, hi; float lerp; } oxefs_tap;

// Each function exists in an SSE2 build (the x86-64 baseline) and an AVX2
// one (target attribute); neither enables FMA, and the pragma above keeps
// the compiler from fusing a multiply and an add anyway.

// u8f converts n bytes to floats (exact).
static void oxefs_u8f_sse2(float *out, const uint8_t *in, int n) {
	const __m128i z = _mm_setzero_si128();
	int i = 0;
	for (; i + 16 <= n; i += 16) {
		__m128i b = _mm_loadu_si128((const __m128i *)(in + i));
		__m128i lo = _mm_unpacklo_epi8(b, z), hi = _mm_unpackhi_epi8(b, z);
		_mm_storeu_ps(out + i, _mm_cvtepi32_ps(_mm_unpacklo_epi16(lo, z)));
		_mm_storeu_ps(out + i + 4, _mm_cvtepi32_ps(_mm_unpackhi_epi16(lo, z)));
		_mm_storeu_ps(out + i + 8, _mm_cvtepi32_ps(_mm_unpacklo_epi16(hi, z)));
		_mm_storeu_ps(out + i + 12, _mm_cvtepi32_ps(_mm_unpackhi_epi16(hi, z)));
	}
	for (; i < n; i++) out[i] = (float)in[i];
}

__attribute__((target("avx2")))
static void oxefs_u8f_avx2(float *out, const uint8_t *in, int n) {
	int i = 0;
	for (; i + 16 <= n; i += 16) {
		__m128i b = _mm_loadu_si128((const __m128i *)(in + i));
		_mm256_storeu_ps(out + i, _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(b)));
		_mm256_storeu_ps(out + i + 8, _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(b, 8))));
	}
	for (; i < n; i++) out[i] = (float)in[i];
}

// hrow interpolates a source row (as floats, 4 readable past its end)
// horizontally: out[3x+c] = a + (b − a)·lerp with a = src[lo+c], b =
// src[hi+c]. One pixel is one 4-lane vector; its fourth lane is
// overwritten by the next pixel (out has 4 floats of room past 3·dw).
static void oxefs_hrow_sse2(float *out, const float *src, const oxefs_tap *xs, int dw) {
	for (int x = 0; x < dw; x++) {
		__m128 a = _mm_loadu_ps(src + xs[x].lo);
		__m128 b = _mm_loadu_ps(src + xs[x].hi);
		__m128 l = _mm_set1_ps(xs[x].lerp);
		_mm_storeu_ps(out + 3 * x, _mm_add_ps(a, _mm_mul_ps(_mm_sub_ps(b, a), l)));
	}
}

// The AVX2 hrow does two pixels per vector, stored low half first.
__attribute__((target("avx2")))
static void oxefs_hrow_avx2(float *out, const float *src, const oxefs_tap *xs, int dw) {
	int x = 0;
	for (; x + 2 <= dw; x += 2) {
		const oxefs_tap *t = xs + x;
		__m256 a = _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(src + t[0].lo)), _mm_loadu_ps(src + t[1].lo), 1);
		__m256 b = _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(src + t[0].hi)), _mm_loadu_ps(src + t[1].hi), 1);
		__m256 l = _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_set1_ps(t[0].lerp)), _mm_set1_ps(t[1].lerp), 1);
		__m256 r = _mm256_add_ps(a, _mm256_mul_ps(_mm256_sub_ps(b, a), l));
		_mm_storeu_ps(out + 3 * x, _mm256_castps256_ps128(r));
		_mm_storeu_ps(out + 3 * x + 3, _mm256_extractf128_ps(r, 1));
	}
	if (x < dw) oxefs_hrow_sse2(out + 3 * x, src, xs + x, dw - x);
}

// vrow combines two interpolated rows: out[k] = uint8(int32(t + (b − t)·l)).
// Every value lies in [0, 255], so the saturating packs are the cast.
static void oxefs_vrow_sse2(uint8_t *out, const float *top, const float *bot, float l, int n) {
	const __m128 lv = _mm_set1_ps(l);
	int k = 0;
	for (; k + 16 <= n; k += 16) {
		__m128i v[4];
		for (int j = 0; j < 4; j++) {
			__m128 t = _mm_loadu_ps(top + k + 4 * j), b = _mm_loadu_ps(bot + k + 4 * j);
			v[j] = _mm_cvttps_epi32(_mm_add_ps(t, _mm_mul_ps(_mm_sub_ps(b, t), lv)));
		}
		__m128i p = _mm_packus_epi16(_mm_packs_epi32(v[0], v[1]), _mm_packs_epi32(v[2], v[3]));
		_mm_storeu_si128((__m128i *)(out + k), p);
	}
	for (; k < n; k++) out[k] = (uint8_t)(int32_t)(top[k] + (bot[k] - top[k]) * l);
}

__attribute__((target("avx2")))
static void oxefs_vrow_avx2(uint8_t *out, const float *top, const float *bot, float l, int n) {
	const __m256 lv = _mm256_set1_ps(l);
	int k = 0;
	for (; k + 16 <= n; k += 16) {
		__m256 t0 = _mm256_loadu_ps(top + k), b0 = _mm256_loadu_ps(bot + k);
		__m256 t1 = _mm256_loadu_ps(top + k + 8), b1 = _mm256_loadu_ps(bot + k + 8);
		__m256i v0 = _mm256_cvttps_epi32(_mm256_add_ps(t0, _mm256_mul_ps(_mm256_sub_ps(b0, t0), lv)));
		__m256i v1 = _mm256_cvttps_epi32(_mm256_add_ps(t1, _mm256_mul_ps(_mm256_sub_ps(b1, t1), lv)));
		// packs works within 128-bit lanes: [v0 lo, v1 lo, v0 hi, v1 hi]
		__m256i p = _mm256_packs_epi32(v0, v1);
		__m128i q = _mm_packus_epi16(_mm256_castsi256_si128(p), _mm256_extracti128_si256(p, 1));
		// q holds v0[0:4] v1[0:4] v0[4:8] v1[4:8]: put the dwords in order
		_mm_storeu_si128((__m128i *)(out + k), _mm_shuffle_epi32(q, _MM_SHUFFLE(3, 1, 2, 0)));
	}
	for (; k < n; k++) out[k] = (uint8_t)(int32_t)(top[k] + (bot[k] - top[k]) * l);
}

// vcopy is vrow where bottom is top: t + (t − t)·l is t exactly.
static void oxefs_vcopy_sse2(uint8_t *out, const float *top, int n) {
	int k = 0;
	for (; k + 8 <= n; k += 8) {
		__m128i a = _mm_cvttps_epi32(_mm_loadu_ps(top + k)), b = _mm_cvttps_epi32(_mm_loadu_ps(top + k + 4));
		__m128i p = _mm_packs_epi32(a, b);
		_mm_storel_epi64((__m128i *)(out + k), _mm_packus_epi16(p, p));
	}
	for (; k < n; k++) out[k] = (uint8_t)(int32_t)top[k];
}

// planar splits a row of packed RGB into three planes.
static void oxefs_planar_sse2(uint8_t *p0, uint8_t *p1, uint8_t *p2, const uint8_t *rgb, int dw) {
	for (int x = 0; x < dw; x++) {
		p0[x] = rgb[3 * x];
		p1[x] = rgb[3 * x + 1];
		p2[x] = rgb[3 * x + 2];
	}
}

// The AVX2 level (which has SSSE3) splits 16 pixels at a time with byte
// shuffles: each plane's 16 bytes gathered from the three 16-byte loads.
__attribute__((target("avx2")))
static void oxefs_planar_avx2(uint8_t *p0, uint8_t *p1, uint8_t *p2, const uint8_t *rgb, int dw) {
	const __m128i ra = _mm_setr_epi8(0, 3, 6, 9, 12, 15, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
	const __m128i rb = _mm_setr_epi8(-1, -1, -1, -1, -1, -1, 2, 5, 8, 11, 14, -1, -1, -1, -1, -1);
	const __m128i rc = _mm_setr_epi8(-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 1, 4, 7, 10, 13);
	const __m128i ga = _mm_setr_epi8(1, 4, 7, 10, 13, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
	const __m128i gb = _mm_setr_epi8(-1, -1, -1, -1, -1, 0, 3, 6, 9, 12, 15, -1, -1, -1, -1, -1);
	const __m128i gc = _mm_setr_epi8(-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 2, 5, 8, 11, 14);
	const __m128i ba = _mm_setr_epi8(2, 5, 8, 11, 14, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
	const __m128i bb = _mm_setr_epi8(-1, -1, -1, -1, -1, 1, 4, 7, 10, 13, -1, -1, -1, -1, -1, -1);
	const __m128i bc = _mm_setr_epi8(-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 0, 3, 6, 9, 12, 15);
	int x = 0;
	for (; x + 16 <= dw; x += 16) {
		const uint8_t *in = rgb + 3 * x;
		__m128i a = _mm_loadu_si128((const __m128i *)in);
		__m128i b = _mm_loadu_si128((const __m128i *)(in + 16));
		__m128i c = _mm_loadu_si128((const __m128i *)(in + 32));
		_mm_storeu_si128((__m128i *)(p0 + x), _mm_or_si128(_mm_or_si128(_mm_shuffle_epi8(a, ra), _mm_shuffle_epi8(b, rb)), _mm_shuffle_epi8(c, rc)));
		_mm_storeu_si128((__m128i *)(p1 + x), _mm_or_si128(_mm_or_si128(_mm_shuffle_epi8(a, ga), _mm_shuffle_epi8(b, gb)), _mm_shuffle_epi8(c, gc)));
		_mm_storeu_si128((__m128i *)(p2 + x), _mm_or_si128(_mm_or_si128(_mm_shuffle_epi8(a, ba), _mm_shuffle_epi8(b, bb)), _mm_shuffle_epi8(c, bc)));
	}
	oxefs_planar_sse2(p0 + x, p1 + x, p2 + x, rgb + 3 * x, dw - x);
}

typedef struct {
	void (*u8f)(float *, const uint8_t *, int);
	void (*hrow)(float *, const float *, const oxefs_tap *, int);
	void (*vrow)(uint8_t *, const float *, const float *, float, int);
	void (*planar)(uint8_t *, uint8_t *, uint8_t *, const uint8_t *, int);
} oxefs_ops;

// By level (simd's numbering); AVX512 has no code of its own here and
// runs the AVX2 functions.
static const oxefs_ops oxefs_levels[4] = {
	{0, 0, 0, 0},
	{oxefs_u8f_sse2, oxefs_hrow_sse2, oxefs_vrow_sse2, oxefs_planar_sse2},
	{oxefs_u8f_avx2, oxefs_hrow_avx2, oxefs_vrow_avx2, oxefs_planar_avx2},
	{oxefs_u8f_avx2, oxefs_hrow_avx2, oxefs_vrow_avx2, oxefs_planar_avx2},
};

// oxefs_resize is frames' resizer.resize: each output row combines two
// source rows interpolated horizontally, kept in a two-row cache (the same
// values, computed once per source row). rows has two rows of 3·dw+4
// floats, srcf 3·sw+4 floats (the last 4 zero), tmp 3·dw bytes.
static void oxefs_resize(int level, const uint8_t *src, long sstride, int sw,
		const oxefs_tap *xs, int dw, const oxefs_tap *ys, int dh,
		float *rows, float *srcf, uint8_t *tmp,
		uint8_t *dst, long dstride, long plane) {
	const oxefs_ops *op = &oxefs_levels[level];
	const int n = 3 * dw;
	float *row[2] = {rows, rows + n + 4};
	long of[2] = {-1, -1};
	for (int y = 0; y < dh; y++) {
		const oxefs_tap t = ys[y];
		const float *rr[2];
		for (int j = 0; j < 2; j++) {
			long i = j == 0 ? t.lo : t.hi, keep = j == 0 ? t.hi : t.lo;
			if (j == 1 && (t.hi == t.lo || t.lerp == 0)) {
				rr[1] = rr[0];
				break;
			}
			if (of[0] == i) { rr[j] = row[0]; continue; }
			if (of[1] == i) { rr[j] = row[1]; continue; }
			int slot = of[0] == keep ? 1 : 0;
			op->u8f(srcf, src + i * sstride, 3 * sw);
			op->hrow(row[slot], srcf, xs, dw);
			of[slot] = i;
			rr[j] = row[slot];
		}
		uint8_t *o = plane ? tmp : dst + y * dstride;
		if (rr[0] == rr[1]) {
			oxefs_vcopy_sse2(o, rr[0], n);
		} else {
			op->vrow(o, rr[0], rr[1], t.lerp, n);
		}
		if (plane) {
			uint8_t *p0 = dst + y * dstride;
			op->planar(p0, p0 + plane, p0 + 2 * plane, tmp, dw);
		}
	}
}
*/
import "C"

import (
	"unsafe"

	"github.com/oxefs/oxefs/frames/simd"
)

func resize(l Level, s *Scratch, f *Frame) {
	if !simd.Runs(l) {
		panic("bilinear: kernel " + l.String() + " is not available on this machine")
	}
	C.oxefs_resize(C.int(l),
		(*C.uint8_t)(unsafe.Pointer(&f.Src[0])), C.long(f.SrcStride), C.int(f.SW),
		(*C.oxefs_tap)(unsafe.Pointer(&f.XS[0])), C.int(len(f.XS)),
		(*C.oxefs_tap)(unsafe.Pointer(&f.YS[0])), C.int(len(f.YS)),
		(*C.float)(unsafe.Pointer(&s.rows[0])), (*C.float)(unsafe.Pointer(&s.srcf[0])), (*C.uint8_t)(unsafe.Pointer(&s.tmp[0])),
		(*C.uint8_t)(unsafe.Pointer(&f.Dst[0])), C.long(f.DstStride), C.long(f.PlaneStep))
}
