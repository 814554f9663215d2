//go:build cgo && amd64 && !purego

package colourk

/*
#cgo CFLAGS: -O2 -Wno-psabi

// -Wno-psabi: the eight- and sixteen-lane helpers below are always
// inlined, so no vector crosses a call and the AVX calling convention GCC
// notes about never applies.

// No contraction of a*b+c into an FMA: cgo refuses -ffp-contract=off as a
// flag, so it is a pragma (and no function here targets FMA anyway).
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include <stdint.h>
#include <string.h>
#include <immintrin.h>

// The kernel is written once with the compilers' vector extensions over
// eight 32-bit lanes (vi, vf) and inlined into two entry points: one for
// the x86-64 baseline, where each eight-lane operation becomes two SSE2
// ones, and one with the AVX2 target attribute, where it becomes one;
// the AVX512 level's entry point has the same code over sixteen lanes
// (vi16, vf16, below). None targets FMA, and the pragma above keeps the
// compiler from fusing a multiply and an add anyway.
typedef int32_t vi __attribute__((vector_size(32)));
typedef uint32_t vu __attribute__((vector_size(32)));
typedef float vf __attribute__((vector_size(32)));
typedef uint8_t v8b __attribute__((vector_size(8)));
typedef uint8_t v16b __attribute__((vector_size(16)));
typedef uint8_t v32b __attribute__((vector_size(32)));

#define INLINE static inline __attribute__((always_inline))

// Stage's layout in Go: a uint32, two float32 and an int32, 16 bytes.
typedef struct { uint32_t op; float f, g; int32_t shift; } oxefs_stage;
enum { OP_BLEND = 1, OP_SATURATION = 2, OP_HUE = 3 };
enum { OP_HUE_SPLIT = 4 }; // OP_HUE where hue_split_ok: set here, never by Go

// hue_split_ok reports whether frames' fixed-point hue shift by shift
// (sixths of a turn, 24 fraction bits: Sk whole sixths and a fraction Sf)
// equals, for every pixel, the same shift split into the middle channel's
// offset num (r − g, g − b or b − r, |num| ≤ cr = max − min) and
// Q = ⌊cr·Sf/2²⁴⌋ (kernel.h's hue with split). frames computes the
// position p = ⌊num·⌈2³²/cr⌉/2⁸⌋, which is num·2²⁴/cr + δ/cr with the
// integer δ in (−2cr, cr); the sector is that of h0 + Sk + ⌊(p + Sf)/2²⁴⌋
// and the middle channel cr·((p + Sf) mod 2²⁴) over 2²⁴, rounded down
// (even sectors) or up (odd ones). With cr·Sf = Q·2²⁴ + R,
// cr·(p + Sf) = (num + Q)·2²⁴ + R + δ: where every cr in 1..255 has R in
// [512, 2²⁴ − 512], R + δ lies strictly between 0 and 2²⁴, so the carry
// is ⌊(num + Q)/cr⌋ and the middle channel num + Q − carry·cr (down) or
// that plus one (up), exactly. Other shifts (a few in a thousand, and
// whole sixths) take the reciprocal's way.
static int hue_split_ok(int32_t shift) {
	const uint32_t sf = (uint32_t)shift & 0xffffff;
	for (uint32_t cr = 1; cr < 256; cr++) {
		const uint32_t rem = (cr * sf) & 0xffffff;
		if (rem < 512 || rem > (1u << 24) - 512) return 0;
	}
	return 1;
}
enum { MAX_STAGES = 64 }; // MaxStages

// splat and splatf broadcast x to every lane.
INLINE vi splat(int32_t x) {
	const vi v = {x};
	return __builtin_shufflevector(v, v, 0, 0, 0, 0, 0, 0, 0, 0);
}
INLINE vf splatf(float x) {
	const vf v = {x};
	return __builtin_shufflevector(v, v, 0, 0, 0, 0, 0, 0, 0, 0);
}

// sel is m ? a : b per lane, m all ones or all zeros.
INLINE vi sel(vi m, vi a, vi b) { return (a & m) | (b & ~m); }
INLINE vf self(vi m, vf a, vf b) { return (vf)sel(m, (vi)a, (vi)b); }
INLINE vf tof(vi x) { return __builtin_convertvector(x, vf); }
// vtrunc is the C cast: truncation toward zero (cvttps2dq).
INLINE vi vtrunc(vf x) { return __builtin_convertvector(x, vi); }


// gray is frames' gray of each lane's pixel: 0.2989·r + 0.587·g, rounded,
// plus 0.114·b, each product rounded, truncated.
INLINE vi gray(vf r, vf g, vf b) {
	vf s = r * splatf(0.2989f) + g * splatf(0.587f);
	return vtrunc(s + b * splatf(0.114f));
}

// pick6 is (t0, …, t5)[i] per lane, i in 0..5.
INLINE vi pick6(vi i, int32_t t0, int32_t t1, int32_t t2, int32_t t3, int32_t t4, int32_t t5) {
#if defined(__clang__)
	return sel(i == 0, splat(t0), sel(i == 1, splat(t1), sel(i == 2, splat(t2),
		sel(i == 3, splat(t3), sel(i == 4, splat(t4), splat(t5))))));
#else
	return __builtin_shuffle((vi){t0, t1, t2, t3, t4, t5, 0, 0}, i);
#endif
}

// pickv is t[i] per lane, i in 0..6.
INLINE vi pickv(vi t, vi i) {
#if defined(__clang__)
	return sel(i == 0, splat(t[0]), sel(i == 1, splat(t[1]), sel(i == 2, splat(t[2]),
		sel(i == 3, splat(t[3]), sel(i == 4, splat(t[4]), sel(i == 5, splat(t[5]), splat(t[6])))))));
#else
	return __builtin_shuffle(t, i);
#endif
}

// oxefs_hue_sector[Sk] holds the split hue's tables for a shift of Sk
// whole sixths (kernel.h's hue with split), Sk in 6..11: for
// j = b + 1 + c (b = 0, 2 or 4 by the largest channel, c the carry in
// −1..1: j in 0..6), with the sector s = j − 1 + Sk less 6 where it is
// 6 or more, twice (it is in 5..16 before): [0][j] s's oddness (all ones
// or 0), [1..3][j] the shift of the byte that red, green and blue each
// take from mx | mid << 8 | pm << 16 (hueShifts), and [4][j] those three
// bytes' numbers in bytes 0, 1 and 2 (kernel.h's hue at the AVX512 level
// with out: the pixel packed as a lane). Filled once when
// the program loads; 16 entries a row, so that a row loads as 8 or 16
// lanes.
static int32_t oxefs_hue_sector[16][5][16] __attribute__((aligned(64)));

__attribute__((constructor)) static void oxefs_hue_sector_init(void) {
	static const int32_t shifts[3][6] = {{0, 8, 16, 16, 8, 0}, {8, 0, 0, 8, 16, 16}, {16, 16, 8, 0, 0, 8}};
	for (int sk = 6; sk < 12; sk++) {
		for (int j = 0; j < 7; j++) {
			int32_t s = j - 1 + sk;
			s -= s >= 6 ? 6 : 0;
			s -= s >= 6 ? 6 : 0;
			oxefs_hue_sector[sk][0][j] = -(s & 1);
			for (int c = 0; c < 3; c++) {
				oxefs_hue_sector[sk][1 + c][j] = shifts[c][s];
				oxefs_hue_sector[sk][4][j] |= shifts[c][s] / 8 << (8 * c);
			}
		}
	}
}

// oxefs_hue_recip[cr] is frames' hueRecip[cr] = ⌈2³²/cr⌉ = 2⁸·hi + lo
// as (hi − 1) | lo << 24 (hi − 1 < 2²⁴, lo < 2⁸), for the AVX2 level's
// gathers; entry 0 is 0 (a gray's, whose num is 0). Filled once when the
// program loads.
static uint32_t oxefs_hue_recip[256];

__attribute__((constructor)) static void oxefs_hue_recip_init(void) {
	for (uint64_t cr = 1; cr < 256; cr++) {
		const uint64_t r = ((1ull << 32) + cr - 1) / cr;
		oxefs_hue_recip[cr] = (uint32_t)((r >> 8) - 1) | (uint32_t)(r & 255) << 24;
	}
}

// oxefs_hue_min holds a bit per (mx, mn), bit mx·256 + mn: set where
// hue's smallest channel (hueMin: x/255 for both as the stages compute
// it, s = (v − m)/v, then ⌊v·(1 − s)·255⌋) is mn − 1 and not mn, the only
// two values it takes; the AVX512 level reads it instead of dividing.
// Filled once when the program loads, by those float32 steps in scalar
// code (no FMA: the pragma above), for mn ≤ mx.
static uint32_t oxefs_hue_min[256 * 256 / 32];

__attribute__((constructor)) static void oxefs_hue_min_init(void) {
	for (int mx = 0; mx < 256; mx++) {
		for (int mn = 0; mn <= mx; mn++) {
			const float tm = (float)mx * (1.0f / 256), tn = (float)mn * (1.0f / 256);
			const float v = tm + tm * (1.0f / 255), m = tn + tn * (1.0f / 255);
			const float s = (v - m) / (mx == 0 ? 1.0f : v);
			const int pm = (int)((v * (1.0f - s)) * 255.0f);
			if (pm != mn) oxefs_hue_min[(mx * 256 + mn) >> 5] |= 1u << ((mx * 256 + mn) & 31);
		}
	}
}

// chunk is the pixels a pass holds at a time, as 32-bit lanes.
enum { chunk = 256 };

#define OXEFS_CAT_(a, b) a##b
#define OXEFS_CAT(a, b) OXEFS_CAT_(a, b)

// The stages' loops, once per level (kernel.h): the baseline's, then the
// AVX2 level's with every function in it compiled for AVX2.
#define OXEFS_AVX2 0
#define OXEFS_AVX512 0
#define NL 8
#define LV _sse2
#include "kernel.h"
#undef OXEFS_AVX2
#undef LV
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2")
#endif
#define OXEFS_AVX2 1
#define OXEFS_AVX512 0
#define NL 8
#define LV _avx2
#include "kernel.h"

// run_avx2 as a function of its own, for the AVX512 level's pass (which
// is not compiled for AVX2).
static __attribute__((noinline)) int64_t run_avx2_call(int32_t *r, int32_t *g, int32_t *b, int n,
		const oxefs_stage *st, int ns, int mean) {
	return run_avx2(r, g, b, n, st, ns, mean, 0);
}
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
#undef OXEFS_AVX2
#undef OXEFS_AVX512
#undef NL
#undef LV

// The AVX512 level's stages: the same code over 16 lanes (vi16 and its
// helpers, below, under the 8-lane names), compiled for AVX-512.
typedef int32_t vi16 __attribute__((vector_size(64)));
typedef uint32_t vu16 __attribute__((vector_size(64)));
typedef float vf16 __attribute__((vector_size(64)));
INLINE vi16 splat16(int32_t x) {
	const vi16 v = {x};
	return __builtin_shufflevector(v, v, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
}
INLINE vf16 splatf16(float x) {
	const vf16 v = {x};
	return __builtin_shufflevector(v, v, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
}
INLINE vi16 sel16(vi16 m, vi16 a, vi16 b) { return (a & m) | (b & ~m); }
INLINE vf16 self16(vi16 m, vf16 a, vf16 b) { return (vf16)sel16(m, (vi16)a, (vi16)b); }
INLINE vf16 tof16(vi16 x) { return __builtin_convertvector(x, vf16); }
INLINE vi16 vtrunc16(vf16 x) { return __builtin_convertvector(x, vi16); }
INLINE vi16 gray16(vf16 r, vf16 g, vf16 b) {
	vf16 s = r * splatf16(0.2989f) + g * splatf16(0.587f);
	return vtrunc16(s + b * splatf16(0.114f));
}
INLINE vi16 pick6_16(vi16 i, int32_t t0, int32_t t1, int32_t t2, int32_t t3, int32_t t4, int32_t t5) {
#if defined(__clang__)
	return sel16(i == 0, splat16(t0), sel16(i == 1, splat16(t1), sel16(i == 2, splat16(t2),
		sel16(i == 3, splat16(t3), sel16(i == 4, splat16(t4), splat16(t5))))));
#else
	return __builtin_shuffle((vi16){t0, t1, t2, t3, t4, t5}, i);
#endif
}
INLINE vi16 pickv16(vi16 t, vi16 i) {
#if defined(__clang__)
	return sel16(i == 0, splat16(t[0]), sel16(i == 1, splat16(t[1]), sel16(i == 2, splat16(t[2]),
		sel16(i == 3, splat16(t[3]), sel16(i == 4, splat16(t[4]), sel16(i == 5, splat16(t[5]), splat16(t[6])))))));
#else
	return __builtin_shuffle(t, i);
#endif
}
// hue_words is kernel.h's split hue with out, at the AVX512 level, of
// 32 pixels (two vectors of each channel: *r, *r+1 …) at once, the
// arithmetic up to the middle channel in 16-bit lanes (every value there
// is within ±2⁹): the same values, half the instructions. Q = ⌊cr·Sf/2²⁴⌋
// comes from Sf's top 16 bits (sh) and low 8 (sl): cr·Sf is cr·sh·2⁸ +
// cr·sl, so Q is the high half of cr·sh, plus one where its low half lo
// and ⌊cr·sl/2⁸⌋ add up to 2¹⁶ or more. Packing two vectors of 32-bit
// lanes into one of 16-bit ones goes by 128-bit lanes, and unpacking
// them back (low and high halves of each) restores each vector's order.
// oddw is sector[0] as 16-bit lanes.
__attribute__((target("avx2,avx512f,avx512bw,avx512vbmi")))
static inline __attribute__((always_inline)) void hue_words(vi16 *pr, const vi16 *pg, const vi16 *pb, int32_t shift,
		__m512i oddw, __m512i bytes4) {
	const __m512i R = _mm512_packus_epi32((__m512i)pr[0], (__m512i)pr[1]);
	const __m512i G = _mm512_packus_epi32((__m512i)pg[0], (__m512i)pg[1]);
	const __m512i B = _mm512_packus_epi32((__m512i)pb[0], (__m512i)pb[1]);
	const __m512i MX = _mm512_max_epi16(_mm512_max_epi16(R, G), B), MN = _mm512_min_epi16(_mm512_min_epi16(R, G), B);
	const __m512i CR = _mm512_sub_epi16(MX, MN);
	const __mmask32 rmax = _mm512_cmpeq_epi16_mask(R, MX), gmax = _mm512_cmpeq_epi16_mask(G, MX);
	__m512i num = _mm512_mask_blend_epi16(gmax, _mm512_sub_epi16(R, G), _mm512_sub_epi16(B, R));
	num = _mm512_mask_blend_epi16(rmax, num, _mm512_sub_epi16(G, B));
	const uint32_t sf = (uint32_t)shift & 0xffffff;
	const __m512i sh = _mm512_set1_epi16((short)(sf >> 8)), sl = _mm512_set1_epi16((short)(sf & 255));
	const __m512i one = _mm512_set1_epi16(1);
	const __m512i hi = _mm512_mulhi_epu16(CR, sh), lo = _mm512_mullo_epi16(CR, sh);
	const __m512i a = _mm512_srli_epi16(_mm512_mullo_epi16(CR, sl), 8);
	// lo + a ≥ 2¹⁶: lo > 0xffff − a
	const __mmask32 carry = _mm512_cmpgt_epu16_mask(lo, _mm512_xor_si512(a, _mm512_set1_epi16(-1)));
	const __m512i T = _mm512_add_epi16(num, _mm512_mask_add_epi16(hi, carry, hi, one));
	const __mmask32 ge = _mm512_cmpge_epi16_mask(T, CR), lt = _mm512_cmplt_epi16_mask(T, _mm512_setzero_si512());
	__m512i K = _mm512_mask_sub_epi16(T, ge, T, CR);
	K = _mm512_mask_add_epi16(K, lt, K, CR);
	__m512i J = _mm512_mask_blend_epi16(gmax, _mm512_set1_epi16(5), _mm512_set1_epi16(3));
	J = _mm512_mask_blend_epi16(rmax, J, one);
	J = _mm512_mask_add_epi16(J, ge, J, one);
	J = _mm512_mask_sub_epi16(J, lt, J, one);
	const __mmask32 odd = _mm512_movepi16_mask(_mm512_permutexvar_epi16(J, oddw)) & _mm512_test_epi16_mask(CR, CR);
	const __m512i MID = _mm512_mask_blend_epi16(odd, _mm512_add_epi16(MN, K), _mm512_sub_epi16(_mm512_sub_epi16(MX, K), one));
	const __m512i P01 = _mm512_or_si512(MX, _mm512_slli_epi16(MID, 8));
	const __m512i IX = _mm512_or_si512(_mm512_slli_epi16(MX, 8), MN);
	const __m512i z = _mm512_setzero_si512(), m31 = _mm512_set1_epi32(31), m1 = _mm512_set1_epi32(1);
	const vi16 base = {0, 0x04040404, 0x08080808, 0x0c0c0c0c, 0x10101010, 0x14141414, 0x18181818, 0x1c1c1c1c,
		0x20202020, 0x24242424, 0x28282828, 0x2c2c2c2c, 0x30303030, 0x34343434, 0x38383838, 0x3c3c3c3c};
	for (int h = 0; h < 2; h++) {
		const __m512i ix = h ? _mm512_unpackhi_epi16(IX, z) : _mm512_unpacklo_epi16(IX, z);
		const __m512i j = h ? _mm512_unpackhi_epi16(J, z) : _mm512_unpacklo_epi16(J, z);
		__m512i d = h ? _mm512_unpackhi_epi16(P01, MN) : _mm512_unpacklo_epi16(P01, MN); // mx | mid << 8 | mn << 16
		const __m512i bits = _mm512_i32gather_epi32(_mm512_srli_epi32(ix, 5), (const void *)oxefs_hue_min, 4);
		const __m512i bit = _mm512_and_si512(_mm512_srlv_epi32(bits, _mm512_and_si512(ix, m31)), m1);
		d = _mm512_sub_epi32(d, _mm512_slli_epi32(bit, 16)); // pm = mn less its bit
		const __m512i idx = _mm512_add_epi32((__m512i)base, _mm512_permutexvar_epi32(j, bytes4));
		pr[h] = (vi16)_mm512_permutexvar_epi8(idx, d);
	}
}

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,avx512f,avx512bw,avx512vbmi"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,avx512f,avx512bw,avx512vbmi")
#endif
#define vi vi16
#define vu vu16
#define vf vf16
#define splat splat16
#define splatf splatf16
#define sel sel16
#define self self16
#define tof tof16
#define vtrunc vtrunc16
#define gray gray16
#define pick6 pick6_16
#define pickv pickv16
#define OXEFS_AVX2 1
#define OXEFS_AVX512 1
#define NL 16
#define LV _avx512
#include "kernel.h"
#undef vi
#undef vu
#undef vf
#undef splat
#undef splatf
#undef sel
#undef self
#undef tof
#undef vtrunc
#undef gray
#undef pick6
#undef pickv

static __attribute__((noinline)) int64_t run_avx512_call(int32_t *r, int32_t *g, int32_t *b, int n,
		const oxefs_stage *st, int ns, int mean, int packed) {
	return run_avx512(r, g, b, n, st, ns, mean, packed);
}
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif


// Moving pixels between a frame and the channel arrays, per level: get
// reads n pixels (packed RGB when p1 is null, else three planes) into
// the arrays, zeros up to a multiple of 8; put writes n of them back.

static void get_sse2(int32_t *r, int32_t *g, int32_t *b, const uint8_t *p0, const uint8_t *p1, const uint8_t *p2, int n) {
	int i = 0;
	if (p1) {
		for (; i < n; i++) r[i] = p0[i], g[i] = p1[i], b[i] = p2[i];
	} else {
		for (; i < n; i++) r[i] = p0[3 * i], g[i] = p0[3 * i + 1], b[i] = p0[3 * i + 2];
	}
	for (; i % 8; i++) r[i] = g[i] = b[i] = 0;
}

static void put_sse2(uint8_t *p0, uint8_t *p1, uint8_t *p2, const int32_t *r, const int32_t *g, const int32_t *b, int n) {
	if (p1) {
		for (int i = 0; i < n; i++) p0[i] = r[i], p1[i] = g[i], p2[i] = b[i];
	} else {
		for (int i = 0; i < n; i++) p0[3 * i] = r[i], p0[3 * i + 1] = g[i], p0[3 * i + 2] = b[i];
	}
}

// The AVX2 level splits and joins 16 packed pixels at a time with byte
// shuffles (it has SSSE3), and widens and narrows 8 bytes at a time.
__attribute__((target("avx2")))
static void get_avx2(int32_t *r, int32_t *g, int32_t *b, const uint8_t *p0, const uint8_t *p1, const uint8_t *p2, int n) {
	int i = 0;
	if (p1) {
		for (; i + 8 <= n; i += 8) {
			_mm256_store_si256((__m256i *)(r + i), _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(p0 + i))));
			_mm256_store_si256((__m256i *)(g + i), _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(p1 + i))));
			_mm256_store_si256((__m256i *)(b + i), _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(p2 + i))));
		}
	} else {
		const __m128i ra = _mm_setr_epi8(0, 3, 6, 9, 12, 15, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
		const __m128i rb = _mm_setr_epi8(-1, -1, -1, -1, -1, -1, 2, 5, 8, 11, 14, -1, -1, -1, -1, -1);
		const __m128i rc = _mm_setr_epi8(-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 1, 4, 7, 10, 13);
		const __m128i ga = _mm_setr_epi8(1, 4, 7, 10, 13, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
		const __m128i gb = _mm_setr_epi8(-1, -1, -1, -1, -1, 0, 3, 6, 9, 12, 15, -1, -1, -1, -1, -1);
		const __m128i gc = _mm_setr_epi8(-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 2, 5, 8, 11, 14);
		const __m128i ba = _mm_setr_epi8(2, 5, 8, 11, 14, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
		const __m128i bb = _mm_setr_epi8(-1, -1, -1, -1, -1, 1, 4, 7, 10, 13, -1, -1, -1, -1, -1, -1);
		const __m128i bc = _mm_setr_epi8(-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 0, 3, 6, 9, 12, 15);
		for (; i + 16 <= n; i += 16) {
			const uint8_t *in = p0 + 3 * i;
			__m128i a = _mm_loadu_si128((const __m128i *)in);
			__m128i m = _mm_loadu_si128((const __m128i *)(in + 16));
			__m128i c = _mm_loadu_si128((const __m128i *)(in + 32));
			__m128i x[3] = {
				_mm_or_si128(_mm_or_si128(_mm_shuffle_epi8(a, ra), _mm_shuffle_epi8(m, rb)), _mm_shuffle_epi8(c, rc)),
				_mm_or_si128(_mm_or_si128(_mm_shuffle_epi8(a, ga), _mm_shuffle_epi8(m, gb)), _mm_shuffle_epi8(c, gc)),
				_mm_or_si128(_mm_or_si128(_mm_shuffle_epi8(a, ba), _mm_shuffle_epi8(m, bb)), _mm_shuffle_epi8(c, bc)),
			};
			int32_t *o[3] = {r, g, b};
			for (int j = 0; j < 3; j++) {
				_mm256_store_si256((__m256i *)(o[j] + i), _mm256_cvtepu8_epi32(x[j]));
				_mm256_store_si256((__m256i *)(o[j] + i + 8), _mm256_cvtepu8_epi32(_mm_srli_si128(x[j], 8)));
			}
		}
	}
	get_sse2(r + i, g + i, b + i, p1 ? p0 + i : p0 + 3 * i, p1 ? p1 + i : 0, p1 ? p2 + i : 0, n - i);
}

// narrow8 is 8 lanes of 0..255 as 8 bytes.
__attribute__((target("avx2")))
static inline __m128i narrow8(const int32_t *x) {
	__m256i v = _mm256_load_si256((const __m256i *)x);
	__m128i w = _mm_packus_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
	return _mm_packus_epi16(w, w);
}

__attribute__((target("avx2")))
static void put_avx2(uint8_t *p0, uint8_t *p1, uint8_t *p2, const int32_t *r, const int32_t *g, const int32_t *b, int n) {
	int i = 0;
	if (p1) {
		for (; i + 8 <= n; i += 8) {
			_mm_storel_epi64((__m128i *)(p0 + i), narrow8(r + i));
			_mm_storel_epi64((__m128i *)(p1 + i), narrow8(g + i));
			_mm_storel_epi64((__m128i *)(p2 + i), narrow8(b + i));
		}
	} else {
		// Output byte k of each 16-byte store takes pixel k/3's channel
		// k%3 from the r, g and b bytes of 16 pixels.
		const __m128i ar = _mm_setr_epi8(0, -1, -1, 1, -1, -1, 2, -1, -1, 3, -1, -1, 4, -1, -1, 5);
		const __m128i ag = _mm_setr_epi8(-1, 0, -1, -1, 1, -1, -1, 2, -1, -1, 3, -1, -1, 4, -1, -1);
		const __m128i ab = _mm_setr_epi8(-1, -1, 0, -1, -1, 1, -1, -1, 2, -1, -1, 3, -1, -1, 4, -1);
		const __m128i br = _mm_setr_epi8(-1, -1, 6, -1, -1, 7, -1, -1, 8, -1, -1, 9, -1, -1, 10, -1);
		const __m128i bg = _mm_setr_epi8(5, -1, -1, 6, -1, -1, 7, -1, -1, 8, -1, -1, 9, -1, -1, 10);
		const __m128i bb = _mm_setr_epi8(-1, 5, -1, -1, 6, -1, -1, 7, -1, -1, 8, -1, -1, 9, -1, -1);
		const __m128i cr = _mm_setr_epi8(-1, 11, -1, -1, 12, -1, -1, 13, -1, -1, 14, -1, -1, 15, -1, -1);
		const __m128i cg = _mm_setr_epi8(-1, -1, 11, -1, -1, 12, -1, -1, 13, -1, -1, 14, -1, -1, 15, -1);
		const __m128i cb = _mm_setr_epi8(10, -1, -1, 11, -1, -1, 12, -1, -1, 13, -1, -1, 14, -1, -1, 15);
		for (; i + 16 <= n; i += 16) {
			__m128i x = _mm_unpacklo_epi64(narrow8(r + i), narrow8(r + i + 8));
			__m128i y = _mm_unpacklo_epi64(narrow8(g + i), narrow8(g + i + 8));
			__m128i z = _mm_unpacklo_epi64(narrow8(b + i), narrow8(b + i + 8));
			uint8_t *out = p0 + 3 * i;
			_mm_storeu_si128((__m128i *)out, _mm_or_si128(_mm_or_si128(_mm_shuffle_epi8(x, ar), _mm_shuffle_epi8(y, ag)), _mm_shuffle_epi8(z, ab)));
			_mm_storeu_si128((__m128i *)(out + 16), _mm_or_si128(_mm_or_si128(_mm_shuffle_epi8(x, br), _mm_shuffle_epi8(y, bg)), _mm_shuffle_epi8(z, bb)));
			_mm_storeu_si128((__m128i *)(out + 32), _mm_or_si128(_mm_or_si128(_mm_shuffle_epi8(x, cr), _mm_shuffle_epi8(y, cg)), _mm_shuffle_epi8(z, cb)));
		}
	}
	put_sse2(p1 ? p0 + i : p0 + 3 * i, p1 ? p1 + i : 0, p1 ? p2 + i : 0, r + i, g + i, b + i, n - i);
}

// The two levels: the same chunk loop, each with its own run (inlined
// for its target) and its own get and put.
#define OXEFS_PASS(name, attr, run, get, put)                                              \
	attr static int64_t name(uint8_t *p0, uint8_t *p1, uint8_t *p2, long n,                \
			const oxefs_stage *st, int ns, int write, int mean) {                          \
		int32_t ch[3][chunk] __attribute__((aligned(32)));                                 \
		int64_t total = 0;                                                                 \
		for (long i = 0; i < n; i += chunk) {                                              \
			const int k = n - i < chunk ? (int)(n - i) : chunk;                            \
			uint8_t *q0 = p1 ? p0 + i : p0 + 3 * i, *q1 = p1 ? p1 + i : 0, *q2 = p1 ? p2 + i : 0; \
			get(ch[0], ch[1], ch[2], q0, q1, q2, k);                                       \
			total += run(ch[0], ch[1], ch[2], k, st, ns, mean, 0);                          \
			if (write) put(q0, q1, q2, ch[0], ch[1], ch[2], k);                            \
		}                                                                                  \
		return total;                                                                      \
	}

OXEFS_PASS(oxefs_colour_sse2, , run_sse2, get_sse2, put_sse2)
OXEFS_PASS(oxefs_colour_avx2, __attribute__((target("avx2"))), run_avx2, get_avx2, put_avx2)

// The AVX512 level: a pass's leading blends are one 256-entry table of
// what they make of each byte, computed by the AVX2 level's stages over
// the bytes 0..255 (so the same values), and looked up with VBMI's byte
// permutes as the pixels are unpacked; packed RGB is unpacked and packed
// again 16 pixels at a time with one byte permute each way; the stages
// after the table run over 16 lanes (run_avx512).

// lut_avx512 writes t[src[i]] to dst[i] for n bytes (dst may be src).
__attribute__((target("avx512f,avx512bw,avx512vbmi")))
static void lut_avx512(uint8_t *dst, const uint8_t *src, long n, const uint8_t *t) {
	const __m512i t0 = _mm512_loadu_si512(t), t1 = _mm512_loadu_si512(t + 64);
	const __m512i t2 = _mm512_loadu_si512(t + 128), t3 = _mm512_loadu_si512(t + 192);
	long i = 0;
	for (; i + 64 <= n; i += 64) {
		const __m512i x = _mm512_loadu_si512(src + i);
		// the index's low 7 bits pick from t0:t1 or t2:t3, its top bit between them
		const __m512i lo = _mm512_permutex2var_epi8(t0, x, t1), hi = _mm512_permutex2var_epi8(t2, x, t3);
		_mm512_storeu_si512(dst + i, _mm512_mask_blend_epi8(_mm512_movepi8_mask(x), lo, hi));
	}
	if (i < n) {
		const __mmask64 m = (1ull << (n - i)) - 1; // n − i < 64
		const __m512i x = _mm512_maskz_loadu_epi8(m, src + i);
		const __m512i lo = _mm512_permutex2var_epi8(t0, x, t1), hi = _mm512_permutex2var_epi8(t2, x, t3);
		_mm512_mask_storeu_epi8(dst + i, m, _mm512_mask_blend_epi8(_mm512_movepi8_mask(x), lo, hi));
	}
}

// LUT is t[x] for each byte of x, t's 256 bytes in t0..t3: the index's
// low 7 bits pick from t0:t1 or t2:t3, its top bit between them.
#define LUT(x) _mm512_mask_blend_epi8(_mm512_movepi8_mask(x), _mm512_permutex2var_epi8(t0, x, t1), _mm512_permutex2var_epi8(t2, x, t3))

// get_idx puts pixel j's three bytes in 32-bit lane j (the fourth byte
// masked to zero); put_idx takes them back out: output byte k is byte
// k % 3 of lane k / 3.
static const uint8_t get_idx[64] __attribute__((aligned(64))) = {
	0, 1, 2, 0, 3, 4, 5, 0, 6, 7, 8, 0, 9, 10, 11, 0, 12, 13, 14, 0, 15, 16, 17, 0, 18, 19, 20, 0, 21, 22, 23, 0,
	24, 25, 26, 0, 27, 28, 29, 0, 30, 31, 32, 0, 33, 34, 35, 0, 36, 37, 38, 0, 39, 40, 41, 0, 42, 43, 44, 0, 45, 46, 47, 0};
static const uint8_t put_idx[64] __attribute__((aligned(64))) = {
	0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, 16, 17, 18, 20, 21, 22, 24, 25, 26, 28, 29, 30,
	32, 33, 34, 36, 37, 38, 40, 41, 42, 44, 45, 46, 48, 49, 50, 52, 53, 54, 56, 57, 58, 60, 61, 62};

// get_avx512 reads n packed RGB pixels, each byte through the table t
// when there is one, into the arrays (64-byte aligned, room for n rounded
// up to 16), 16 pixels at a time: one byte permute puts each pixel in a
// 32-bit lane, shifts and masks split the channels. Lanes past n hold
// what zero bytes make: read by the stages, never written back.
__attribute__((target("avx512f,avx512bw,avx512vbmi")))
static void get_avx512(int32_t *r, int32_t *g, int32_t *b, const uint8_t *p, int n, const uint8_t *t) {
	const __m512i idx = _mm512_load_si512(get_idx), m8 = _mm512_set1_epi32(255);
	__m512i t0 = m8, t1 = m8, t2 = m8, t3 = m8;
	if (t) {
		t0 = _mm512_loadu_si512(t), t1 = _mm512_loadu_si512(t + 64);
		t2 = _mm512_loadu_si512(t + 128), t3 = _mm512_loadu_si512(t + 192);
	}
	for (int i = 0; i < n; i += 16) {
		const int k = n - i < 16 ? n - i : 16;
		__m512i x = _mm512_maskz_loadu_epi8((1ull << (3 * k)) - 1, p + 3 * i); // 3k ≤ 48 bytes
		if (t) x = LUT(x);
		const __m512i w = _mm512_maskz_permutexvar_epi8(0x7777777777777777ull, idx, x);
		_mm512_store_si512(r + i, _mm512_and_si512(w, m8));
		_mm512_store_si512(g + i, _mm512_and_si512(_mm512_srli_epi32(w, 8), m8));
		_mm512_store_si512(b + i, _mm512_srli_epi32(w, 16));
	}
}

// put_avx512 writes n pixels of the arrays (values 0..255) back as packed
// RGB, 16 at a time: the three channels of a pixel joined in a 32-bit
// lane, one byte permute packing 16 lanes into 48 bytes.
__attribute__((target("avx512f,avx512bw,avx512vbmi")))
static void put_avx512(uint8_t *p, const int32_t *r, const int32_t *g, const int32_t *b, int n) {
	const __m512i idx = _mm512_load_si512(put_idx);
	for (int i = 0; i < n; i += 16) {
		const int k = n - i < 16 ? n - i : 16;
		__m512i w = _mm512_or_si512(_mm512_load_si512(r + i), _mm512_slli_epi32(_mm512_load_si512(g + i), 8));
		w = _mm512_or_si512(w, _mm512_slli_epi32(_mm512_load_si512(b + i), 16));
		_mm512_mask_storeu_epi8(p + 3 * i, (1ull << (3 * k)) - 1, _mm512_permutexvar_epi8(idx, w));
	}
}

// mean_avx512 is a read-only pass over packed RGB with no stages after
// the table: the sum of the gray of every pixel, 16 at a time in
// registers.
__attribute__((target("avx2,avx512f,avx512bw,avx512vbmi")))
static int64_t mean_avx512(const uint8_t *p, long n, const uint8_t *t) {
	const __m512i gidx = _mm512_load_si512(get_idx), m8 = _mm512_set1_epi32(255);
	__m512i t0 = m8, t1 = m8, t2 = m8, t3 = m8;
	if (t) {
		t0 = _mm512_loadu_si512(t), t1 = _mm512_loadu_si512(t + 64);
		t2 = _mm512_loadu_si512(t + 128), t3 = _mm512_loadu_si512(t + 192);
	}
	int64_t total = 0;
	for (long i = 0; i < n; i += 4096) { // each lane's sum at most 256·255 per block
		const long e = n - i < 4096 ? n : i + 4096;
		vi16 s0 = splat16(0), s1 = splat16(0);
		long j = i;
		for (; j + 32 <= e; j += 32) {
			__m512i x = _mm512_maskz_loadu_epi8((1ull << 48) - 1, p + 3 * j);
			__m512i y = _mm512_maskz_loadu_epi8((1ull << 48) - 1, p + 3 * j + 48);
			if (t) x = LUT(x), y = LUT(y);
			const __m512i w = _mm512_maskz_permutexvar_epi8(0x7777777777777777ull, gidx, x);
			const __m512i v = _mm512_maskz_permutexvar_epi8(0x7777777777777777ull, gidx, y);
			s0 += gray16(tof16((vi16)_mm512_and_si512(w, m8)), tof16((vi16)_mm512_and_si512(_mm512_srli_epi32(w, 8), m8)),
				tof16((vi16)_mm512_srli_epi32(w, 16)));
			s1 += gray16(tof16((vi16)_mm512_and_si512(v, m8)), tof16((vi16)_mm512_and_si512(_mm512_srli_epi32(v, 8), m8)),
				tof16((vi16)_mm512_srli_epi32(v, 16)));
		}
		for (; j < e; j += 16) {
			const int k = e - j < 16 ? (int)(e - j) : 16;
			__m512i x = _mm512_maskz_loadu_epi8((1ull << (3 * k)) - 1, p + 3 * j);
			if (t) x = LUT(x);
			const __m512i w = _mm512_maskz_permutexvar_epi8(0x7777777777777777ull, gidx, x);
			const vi16 g = gray16(tof16((vi16)_mm512_and_si512(w, m8)), tof16((vi16)_mm512_and_si512(_mm512_srli_epi32(w, 8), m8)),
				tof16((vi16)_mm512_srli_epi32(w, 16)));
			s0 += (vi16)_mm512_maskz_mov_epi32((__mmask16)((1u << k) - 1), (__m512i)g);
		}
		s0 += s1;
		for (int q = 0; q < 16; q++) total += s0[q];
	}
	return total;
}

// put_packed_avx512 is put_avx512 of pixels already packed in their
// lanes (red, green and blue in bytes 0, 1 and 2).
__attribute__((target("avx512f,avx512bw,avx512vbmi")))
static void put_packed_avx512(uint8_t *p, const int32_t *px, int n) {
	const __m512i idx = _mm512_load_si512(put_idx);
	for (int i = 0; i < n; i += 16) {
		const int k = n - i < 16 ? n - i : 16;
		_mm512_mask_storeu_epi8(p + 3 * i, (1ull << (3 * k)) - 1, _mm512_permutexvar_epi8(idx, _mm512_load_si512(px + i)));
	}
}

static int64_t oxefs_colour_avx512(uint8_t *p0, uint8_t *p1, uint8_t *p2, long n,
		const oxefs_stage *st, int ns, int write, int mean) {
	int k = 0;
	while (k < ns && st[k].op == OP_BLEND) k++;
	int32_t ch[3][chunk] __attribute__((aligned(64)));
	uint8_t table[256], *t = 0;
	if (k > 0) {
		for (int x = 0; x < chunk; x++) ch[0][x] = ch[1][x] = ch[2][x] = x;
		run_avx2_call(ch[0], ch[1], ch[2], chunk, st, k, 0);
		for (int x = 0; x < 256; x++) table[x] = (uint8_t)ch[0][x];
		t = table;
		st += k, ns -= k;
	}
	if (ns == 0 && !mean) { // the table alone (or nothing), in place
		if (write && t) {
			lut_avx512(p0, p0, p1 ? n : 3 * n, t);
			if (p1) lut_avx512(p1, p1, n, t), lut_avx512(p2, p2, n, t);
		}
		return 0;
	}
	if (!p1 && !write && ns == 0) return mean_avx512(p0, n, t);
	// a last hue stage leaves each pixel packed in a lane of ch[0]
	const int packed = write && !mean && ns > 0 && (st[ns - 1].op == OP_HUE || st[ns - 1].op == OP_HUE_SPLIT);
	uint8_t tmp[3 * chunk];
	int64_t total = 0;
	for (long i = 0; i < n; i += chunk) {
		const int c = n - i < chunk ? (int)(n - i) : chunk;
		if (p1) {
			uint8_t *q0 = p0 + i, *q1 = p1 + i, *q2 = p2 + i;
			if (t) {
				lut_avx512(tmp, q0, c, t), lut_avx512(tmp + chunk, q1, c, t), lut_avx512(tmp + 2 * chunk, q2, c, t);
				get_avx2(ch[0], ch[1], ch[2], tmp, tmp + chunk, tmp + 2 * chunk, c);
			} else {
				get_avx2(ch[0], ch[1], ch[2], q0, q1, q2, c);
			}
			// get zeros to a multiple of 8 lanes; the stages read 16
			for (int j = c; j % 16; j++) ch[0][j] = ch[1][j] = ch[2][j] = 0;
			total += run_avx512_call(ch[0], ch[1], ch[2], c, st, ns, mean, 0);
			if (write) put_avx2(q0, q1, q2, ch[0], ch[1], ch[2], c);
			continue;
		}
		get_avx512(ch[0], ch[1], ch[2], p0 + 3 * i, c, t);
		total += run_avx512_call(ch[0], ch[1], ch[2], c, st, ns, mean, packed);
		if (packed) put_packed_avx512(p0 + 3 * i, ch[0], c);
		else if (write) put_avx512(p0 + 3 * i, ch[0], ch[1], ch[2], c);
	}
	return total;
}

static int64_t oxefs_colour(int level, uint8_t *p0, uint8_t *p1, uint8_t *p2, long n,
		const oxefs_stage *in, int ns, int write, int mean) {
	oxefs_stage st[MAX_STAGES];
	for (int k = 0; k < ns; k++) {
		st[k] = in[k];
		const int32_t sk = st[k].shift >> 24; // 6..11 from frames: else the reciprocal's way
		if (st[k].op == OP_HUE && sk >= 6 && sk < 12 && hue_split_ok(st[k].shift)) st[k].op = OP_HUE_SPLIT;
	}
	if (level == 3) return oxefs_colour_avx512(p0, p1, p2, n, st, ns, write, mean);
	if (level == 2) return oxefs_colour_avx2(p0, p1, p2, n, st, ns, write, mean);
	return oxefs_colour_sse2(p0, p1, p2, n, st, ns, write, mean);
}
*/
import "C"

import (
	"unsafe"

	"github.com/oxefs/oxefs/frames/simd"
)

func pass(l Level, f *Frame, st []Stage, write, mean bool) int64 {
	if !simd.Runs(l) {
		panic("colourk: kernel " + l.String() + " is not available on this machine")
	}
	var p1, p2 *C.uint8_t
	if f.G != nil {
		p1, p2 = (*C.uint8_t)(unsafe.Pointer(&f.G[0])), (*C.uint8_t)(unsafe.Pointer(&f.B[0]))
	}
	var sp *C.oxefs_stage
	if len(st) > 0 {
		sp = (*C.oxefs_stage)(unsafe.Pointer(&st[0]))
	}
	return int64(C.oxefs_colour(C.int(l), (*C.uint8_t)(unsafe.Pointer(&f.R[0])), p1, p2, C.long(f.N),
		sp, C.int(len(st)), cbool(write), cbool(mean)))
}

func cbool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}
