// The colour kernel's level-dependent part, included by kernel_amd64.go
// once per level with OXEFS_AVX2 0 or 1, OXEFS_AVX512 0 or 1, NL the
// lanes of a vector (8, or 16 at AVX512, whose vi, vf, vu and helpers are
// the 16-lane ones) and LV the level's name suffix (L(run) is run_sse2,
// run_avx2 or run_avx512). The baseline level has only the generic
// vector operations; the AVX2 and AVX512 levels take the minima and
// maxima with the instructions for them, which GCC does not make of a
// comparison and a select (a select has no NaN rule to match).

#define L(x) OXEFS_CAT(x, LV)

#if OXEFS_AVX512
INLINE vi L(vmax)(vi a, vi b) { return (vi)_mm512_max_epi32((__m512i)a, (__m512i)b); }
INLINE vi L(vmin)(vi a, vi b) { return (vi)_mm512_min_epi32((__m512i)a, (__m512i)b); }

// clampTrunc as at the AVX2 level below: AVX-512's maxps and minps have
// the same rule for NaN.
INLINE vi L(clampTrunc)(vf v) {
	v = (vf)_mm512_max_ps((__m512)v, (__m512)splatf(0));
	v = (vf)_mm512_min_ps((__m512)v, (__m512)splatf(255));
	return vtrunc(v);
}
#elif OXEFS_AVX2
INLINE vi L(vmax)(vi a, vi b) { return (vi)_mm256_max_epi32((__m256i)a, (__m256i)b); }
INLINE vi L(vmin)(vi a, vi b) { return (vi)_mm256_min_epi32((__m256i)a, (__m256i)b); }

// clampTrunc is frames' clampTrunc: 0 unless v > 0 (NaN too), 255 from
// 255 up, else v truncated. maxps(v, 0) is v > 0 ? v : 0 (its second
// operand when either is NaN) and minps(v, 255) is v < 255 ? v : 255,
// the selects below.
INLINE vi L(clampTrunc)(vf v) {
	v = (vf)_mm256_max_ps((__m256)v, (__m256)splatf(0));
	v = (vf)_mm256_min_ps((__m256)v, (__m256)splatf(255));
	return vtrunc(v);
}
#else
INLINE vi L(vmax)(vi a, vi b) { return sel(a > b, a, b); }
INLINE vi L(vmin)(vi a, vi b) { return sel(a < b, a, b); }

// clampTrunc is frames' clampTrunc: 0 unless v > 0 (NaN too), 255 from
// 255 up, else v truncated.
INLINE vi L(clampTrunc)(vf v) {
	v = self(v > splatf(0), v, splatf(0));
	v = self(v < splatf(255), v, splatf(255));
	return vtrunc(v);
}
#endif

#if OXEFS_AVX2
// recipMul is num·hueRecip[cr] >> 8 (cr 0: 0, num is 0 there), with
// hueRecip[cr] = 2⁸·hi + lo read from oxefs_hue_recip: |num| ≤ cr, so
// num·hi (about num/cr·2²⁴) and num·lo fit 32 bits, and num·hi +
// (num·lo >> 8) is the floor of num·hueRecip[cr]/2⁸ exactly.
INLINE vi L(recipMul)(vi num, vi cr) {
#if OXEFS_AVX512
	const vi t = (vi)_mm512_i32gather_epi32((__m512i)cr, (const void *)oxefs_hue_recip, 4);
#else
	const vi t = (vi)_mm256_i32gather_epi32((const int *)oxefs_hue_recip, (__m256i)cr, 4);
#endif
	const vi hi = (t & splat(0xffffff)) + splat(1), lo = (vi)((vu)t >> 24);
	return num * hi + ((num * lo) >> 8);
}
#else
// recipMul is num·hueRecip[cr] >> 8 (cr 0: 0, num is 0 there).
INLINE vi L(recipMul)(vi num, vi cr) {
	// ⌈2³²/cr⌉ in two parts
	const vf crf = tof(L(vmax)(cr, splat(1))); // cr 0 as 1
	const vf q1 = splatf(65536.0f) / crf;
	const vf a = tof(vtrunc(q1));
	const vf rem = splatf(65536.0f) - a * crf;
	vf lo = tof(vtrunc(rem * q1 + splatf(0.5f)));
	const vf e = rem * splatf(65536.0f) - lo * crf;
	lo = self(e > splatf(0), lo + splatf(1), lo);
	const vf numf = tof(num);
	const vi p = (vtrunc(numf * a) << 8) + (vtrunc(numf * lo) >> 8);
	return p;
}
#endif

// hue is frames' hueShift of each lane's pixel (colour.go), with its
// tables computed:
//   - hueRecip (recipMul): read from a table at the AVX2 level (its
//     gathers), computed at the baseline's: ⌈2³²/cr⌉ as a·2¹⁶ + lo,
//     a = ⌊2¹⁶/cr⌋ (the float32 quotient is never within rounding of an
//     integer it is not), lo the ceiling of rem·2¹⁶/cr from an estimate
//     within one and an exact float32 check; num·hueRecip[cr] >> 8 is then
//     num·a·2⁸ + (num·lo >> 8), every product exact in float32;
//   - hueScale[x] is x (x/255·255 truncated is x for every byte);
//   - hueMin's x/255 as x/256 + (x/256)·(1/255), which rounds to the
//     quotient for every byte, then its float32 steps as written; at the
//     AVX512 level, mn less its bit in oxefs_hue_min, which those steps
//     filled (kernel_amd64.go).
// With split (a shift hue_split_ok accepts), the sector and the middle
// channel come from num + ⌊cr·Sf/2²⁴⌋ instead (see hue_split_ok), no
// reciprocal and one product, and what the sector decides from the rows
// of sector (oxefs_hue_sector's for the shift's whole sixths). With out
// (the AVX512 level, the pass's last stage) the pixel is left packed in
// *pr's lane, red, green and blue in bytes 0, 1 and 2, for
// put_packed_avx512, instead of a channel in each of *pr, *pg and *pb.
INLINE void L(hue)(vi *pr, vi *pg, vi *pb, int32_t shift, const int split, const vi *sector, const int out) {
	const vi r = *pr, g = *pg, b = *pb;
	const vi mx = L(vmax)(L(vmax)(r, g), b), mn = L(vmin)(L(vmin)(r, g), b);
	const vi cr = mx - mn;
	const vi rmax = r == mx, gmax = g == mx;
	const vi num = sel(rmax, g - b, sel(gmax, b - r, r - g));
	vi mid, sr, sg, sb, bytes;
	if (split) {
		// t = num + Q, Q = ⌊cr·Sf/2²⁴⌋ in [0, cr); the carry c = ⌊t/cr⌋
		// in {−1, 0, 1} moves the sector, and the middle channel is
		// k = t − c·cr from the smallest (even sectors) or k + 1 from the
		// largest (odd ones). A gray (cr 0) has k 0 and stays even.
		const vi t = num + (vi)(((vu)cr * (vu)splat(shift & 0xffffff)) >> 24);
		// the sector is j − 1 + Sk reduced, j = 1, 3 or 5 (by the
		// largest channel) + c in 0..6: its oddness and the channels'
		// bytes come from the tables of Sk (oxefs_hue_sector)
		const vi ge = t >= cr, lt = t < splat(0); // c = 1, c = −1
		const vi k = t - (ge & cr) + (lt & cr);
		const vi j = sel(rmax, splat(1), sel(gmax, splat(3), splat(5))) - ge + lt;
		const vi odd = pickv(sector[0], j) & ~(cr == splat(0));
		mid = sel(odd, mx - k - splat(1), mn + k);
		if (out) bytes = pickv(sector[4], j);
		else sr = pickv(sector[1], j), sg = pickv(sector[2], j), sb = pickv(sector[3], j);
	} else {
		const vi h0 = sel(rmax, splat(0), sel(gmax, splat(2 << 24), splat(4 << 24)));
		const vi p = L(recipMul)(num, cr);
		const vi h = h0 + p + splat(shift);
		vi sec = h >> 24; // in 5..16
		sec -= splat(6) & (sec >= splat(6));
		sec -= splat(6) & (sec >= splat(6));
		const vu d = (vu)cr * (vu)(h & splat(0xffffff));
		const vi odd = -(sec & splat(1));
		mid = sel(odd, mx - (vi)((d + 0xffffff) >> 24), mn + (vi)(d >> 24));
		if (out) bytes = pick6(sec, 0x020100, 0x020001, 0x010002, 0x000102, 0x000201, 0x010200);
		else sr = pick6(sec, 0, 8, 16, 16, 8, 0), sg = pick6(sec, 8, 0, 0, 8, 16, 16), sb = pick6(sec, 16, 16, 8, 0, 0, 8);
	}
	// hueMin[mx][mn]
#if OXEFS_AVX512
	// mn, less the bit of (mx, mn) in oxefs_hue_min: the same values as
	// the float32 steps below, which that table was made with
	const vi ix = (mx << 8) | mn;
	const vi bits = (vi)_mm512_i32gather_epi32((__m512i)(ix >> 5), (const void *)oxefs_hue_min, 4);
	const vi pm = mn - ((vi)((vu)bits >> (vu)(ix & splat(31))) & splat(1));
#else
	const vf tm = tof(mx) * splatf(1.0f / 256), tn = tof(mn) * splatf(1.0f / 256);
	const vf v = tm + tm * splatf(1.0f / 255), m = tn + tn * splatf(1.0f / 255);
	const vf s = (v - m) / self(mx == 0, splatf(1), v);
	const vi pm = vtrunc((v * (splatf(1) - s)) * splatf(255));
#endif
	// hueShifts: per sector, red, green and blue each take the largest
	// channel, the middle one or the smallest: byte 0, 1 or 2 of
	// mx | mid << 8 | pm << 16. A gray (mx = mn) has cr 0, so p is 0,
	// mid is mn or mx and pm is mx: every choice is mx, as hueShift's.
	const vu packed = (vu)(mx | (mid << 8) | (pm << 16));
#if OXEFS_AVX512
	if (out) {
		// the pixel as put_packed_avx512 takes it: red, green and blue
		// in bytes 0, 1 and 2 of its lane (byte 3 is not read), each
		// picked from packed by its byte (bytes: the byte of red, green
		// and blue in bytes 0, 1 and 2) plus 4 per lane
		const vi base = {0, 0x04040404, 0x08080808, 0x0c0c0c0c, 0x10101010, 0x14141414, 0x18181818, 0x1c1c1c1c,
			0x20202020, 0x24242424, 0x28282828, 0x2c2c2c2c, 0x30303030, 0x34343434, 0x38383838, 0x3c3c3c3c};
		*pr = (vi)_mm512_permutexvar_epi8((__m512i)(base + bytes), (__m512i)packed);
		return;
	}
#endif
	*pr = (vi)(packed >> (vu)sr) & splat(255);
	*pg = (vi)(packed >> (vu)sg) & splat(255);
	*pb = (vi)(packed >> (vu)sb) & splat(255);
}

// run takes n pixels of the three channel arrays (aligned to a vector,
// the lanes up to a multiple of NL readable) through the stages, one stage at
// a time over all of them, and returns the sum of the result's gray when
// mean is set.
INLINE int64_t L(run)(int32_t *pr, int32_t *pg, int32_t *pb, int n,
		const oxefs_stage *st, int ns, int mean, const int packed) {
	vi *r = (vi *)pr, *g = (vi *)pg, *b = (vi *)pb;
	const int nv = (n + NL - 1) / NL;
	for (int k = 0; k < ns; k++) {
		const oxefs_stage s = st[k];
		switch (s.op) {
		case OP_BLEND: {
			// consecutive blends in one loop
			int j = k + 1;
			while (j < ns && st[j].op == OP_BLEND) j++;
			vf fs[MAX_STAGES], os[MAX_STAGES];
			for (int q = k; q < j; q++) fs[q - k] = splatf(st[q].f), os[q - k] = splatf(st[q].g);
			for (int i = 0; i < nv; i++) {
				vi x = r[i], y = g[i], z = b[i];
				for (int q = 0; q < j - k; q++) {
					const vf f = fs[q], o = os[q];
					x = L(clampTrunc)(tof(x) * f + o);
					y = L(clampTrunc)(tof(y) * f + o);
					z = L(clampTrunc)(tof(z) * f + o);
				}
				r[i] = x, g[i] = y, b[i] = z;
			}
			k = j - 1;
			break;
		}
		case OP_SATURATION: {
			const vf f = splatf(s.f), one = splatf(s.g);
			for (int i = 0; i < nv; i++) {
				const vf rf = tof(r[i]), gf = tof(g[i]), bf = tof(b[i]);
				const vf gb = tof(gray(rf, gf, bf)) * one;
				r[i] = L(clampTrunc)(rf * f + gb);
				g[i] = L(clampTrunc)(gf * f + gb);
				b[i] = L(clampTrunc)(bf * f + gb);
			}
			break;
		}
		case OP_HUE:
			if (packed && k == ns - 1) {
				for (int i = 0; i < nv; i++) L(hue)(&r[i], &g[i], &b[i], s.shift, 0, 0, 1);
			} else {
				for (int i = 0; i < nv; i++) L(hue)(&r[i], &g[i], &b[i], s.shift, 0, 0, 0);
			}
			break;
		case OP_HUE_SPLIT: {
			vi sector[5];
			for (int q = 0; q < 5; q++) __builtin_memcpy(&sector[q], oxefs_hue_sector[(s.shift >> 24) & 15][q], sizeof(vi));
			if (packed && k == ns - 1) {
				int i = 0;
#if OXEFS_AVX512
				// 32 pixels at a time (hue_words), the odd vector last
				const __m512i oddw = _mm512_zextsi256_si512(_mm512_cvtepi32_epi16((__m512i)sector[0]));
				for (; i + 2 <= nv; i += 2) hue_words(&r[i], &g[i], &b[i], s.shift, oddw, (__m512i)sector[4]);
#endif
				for (; i < nv; i++) L(hue)(&r[i], &g[i], &b[i], s.shift, 1, sector, 1);
			} else {
				for (int i = 0; i < nv; i++) L(hue)(&r[i], &g[i], &b[i], s.shift, 1, sector, 0);
			}
			break;
		}
		}
	}
	if (!mean) return 0;
	vi sum = splat(0); // at most chunk/NL · 255 per lane
	vi lane;
	for (int j = 0; j < NL; j++) lane[j] = j;
	for (int i = 0; i < nv; i++) sum += gray(tof(r[i]), tof(g[i]), tof(b[i])) & (lane < splat(n - NL * i));
	int64_t total = 0;
	for (int j = 0; j < NL; j++) total += sum[j];
	return total;
}

#undef L
