/* conv_simd.c: see conv_simd.h. The direct kernels compute each pooling window's four outputs
 * together (16 output channels at a time), so the first layer's full-resolution activation is
 * never stored. The AVX2 versions are the portable loops written with intrinsics, operation for
 * operation: lane j of every vector is what the portable loop computes for channel j, and no
 * multiply-add is fused (the target is "avx2", which does not enable FMA; GCC in ISO C mode does
 * not contract expressions in the portable loops either). */
#include "conv_simd.h"

#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#define CONV_SIMD_X86 1
#include <immintrin.h>
#endif
#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif

#define LANES CONV_SIMD_LANES

static int round_lanes(int x)
{
    return (x + LANES - 1) / LANES * LANES;
}

int conv_simd_have_avx2(void)
{
#ifdef CONV_SIMD_X86
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2");
#else
    return 0;
#endif
}

/* ---- portable C ---- */

static void forward_c(float *out, uint8_t *arg, const float *xp, const float *wt, const float *bp,
                      const ConvShape *s)
{
    const int cin = s->cin, cout = s->cout, coutp = round_lanes(cout), krow = s->k * cin;
    const size_t row = (size_t)(s->w + 2 * s->pad) * cin; /* padded row, floats */
    const int ph = conv_out_h(s) / 2, pw = conv_out_w(s) / 2;
    for (int py = 0; py < ph; py++)
        for (int px = 0; px < pw; px++) {
            const float *x0 = xp + (size_t)(2 * py) * row + (size_t)(2 * px) * cin;
            const size_t o = ((size_t)py * pw + px) * cout;
            for (int cb = 0; cb < coutp; cb += LANES) {
                float a[4][LANES];
                for (int q = 0; q < 4; q++)
                    for (int j = 0; j < LANES; j++) a[q][j] = bp[cb + j];
                const float *wv = wt + cb;
                for (int ky = 0; ky < s->k; ky++) {
                    /* a patch row: k pixels of cin channels, contiguous in xp */
                    const float *xs = x0 + (size_t)ky * row;
                    for (int t = 0; t < krow; t++, wv += coutp) {
                        const float x[4] = {xs[t], xs[t + cin], xs[t + row], xs[t + row + cin]};
                        for (int q = 0; q < 4; q++)
                            for (int j = 0; j < LANES; j++) a[q][j] = a[q][j] + x[q] * wv[j];
                    }
                }
                for (int j = 0; j < LANES && cb + j < cout; j++) {
                    float best = a[0][j];
                    uint8_t q = 0;
                    if (a[1][j] > best) best = a[1][j], q = 1;
                    if (a[2][j] > best) best = a[2][j], q = 2;
                    if (a[3][j] > best) best = a[3][j], q = 3;
                    out[o + cb + j] = best > 0.0f ? best : 0.0f;
                    arg[o + cb + j] = q;
                }
            }
        }
}

static void backward_c(float *dwt, float *dbp, const float *dout, const float *out,
                       const uint8_t *arg, const float *xp, const ConvShape *s)
{
    const int cin = s->cin, cout = s->cout, coutp = round_lanes(cout), krow = s->k * cin;
    const size_t row = (size_t)(s->w + 2 * s->pad) * cin;
    const int ph = conv_out_h(s) / 2, pw = conv_out_w(s) / 2;
    for (int py = 0; py < ph; py++)
        for (int px = 0; px < pw; px++) {
            const float *x0 = xp + (size_t)(2 * py) * row + (size_t)(2 * px) * cin;
            const size_t o = ((size_t)py * pw + px) * cout;
            for (int cb = 0; cb < coutp; cb += LANES) {
                /* the gradient at each window position: zero but at the maximum, and there
                 * only if the ReLU passed it */
                float g[4][LANES] = {{0}};
                for (int j = 0; j < LANES && cb + j < cout; j++) {
                    size_t i = o + cb + j;
                    float gj = out[i] > 0.0f ? dout[i] : 0.0f;
                    for (int q = 0; q < 4; q++) g[q][j] = arg[i] == q ? gj : 0.0f;
                    dbp[cb + j] = dbp[cb + j] + gj;
                }
                float *dw = dwt + cb;
                for (int ky = 0; ky < s->k; ky++) {
                    const float *xs = x0 + (size_t)ky * row;
                    for (int t = 0; t < krow; t++, dw += coutp) {
                        const float x00 = xs[t], x01 = xs[t + cin], x10 = xs[t + row],
                                    x11 = xs[t + row + cin];
                        for (int j = 0; j < LANES; j++) {
                            float sum = g[0][j] * x00;
                            sum = sum + g[1][j] * x01;
                            sum = sum + g[2][j] * x10;
                            sum = sum + g[3][j] * x11;
                            dw[j] = dw[j] + sum;
                        }
                    }
                }
            }
        }
}

/* One pass that writes every entry (no zeroing first): the window's maximum gets 0 + dout
 * where the ReLU passed it, as maxpool2_backward's += on a zeroed buffer (which turns a -0
 * into +0), everything else +0. Channels first .. last - 1 of one pixel (all of them, or those
 * the vector version left). */
static void unpool_c(float *d, const float *dout, const float *out, const uint8_t *arg, uint8_t q,
                     int first, int last)
{
    for (int ch = first; ch < last; ch++)
        d[ch] = out[ch] > 0.0f && arg[ch] == q ? 0.0f + dout[ch] : 0.0f;
}

/* The loops over the rows of dinp [n, h, w, c], with the per-pixel kernel of either kind. */
#define UNPOOL_LOOPS(PIXEL)                                                                        \
    const int oh = h / 2, ow = w / 2;                                                              \
    for (int b = 0; b < n; b++)                                                                    \
        for (int y = 0; y < h; y++) {                                                              \
            float *row = dinp + ((size_t)b * h + y) * w * c;                                       \
            for (int x = 0; x < w; x++) {                                                          \
                float *d = row + (size_t)x * c;                                                    \
                if (y >= 2 * oh || x >= 2 * ow) { /* dropped by the pooling */                     \
                    memset(d, 0, (size_t)c * sizeof(float));                                       \
                    continue;                                                                      \
                }                                                                                  \
                const uint8_t q = (uint8_t)((y & 1) * 2 + (x & 1));                                \
                const size_t o = (((size_t)b * oh + y / 2) * ow + x / 2) * c;                      \
                PIXEL(d, dout + o, out + o, arg + o, q);                                           \
            }                                                                                      \
        }

#define UNPOOL_PIXEL_C(d, dp, vp, ap, q) unpool_c(d, dp, vp, ap, q, 0, c)

static void unpool_rows_c(float *dinp, const float *dout, const float *out, const uint8_t *arg,
                          int n, int h, int w, int c)
{
    UNPOOL_LOOPS(UNPOOL_PIXEL_C)
}

static void col2im_c(float *dinp, const float *dcol, const ConvShape *s)
{
    const int oh = conv_out_h(s), ow = conv_out_w(s), k = s->k, c = s->cin;
    const size_t patch = (size_t)k * k * c;
    for (int b = 0; b < s->n; b++)
        for (int iy = 0; iy < s->h; iy++)
            for (int ix = 0; ix < s->w; ix++) {
                float *d = dinp + (((size_t)b * s->h + iy) * s->w + ix) * c;
                for (int ci = 0; ci < c; ci++) d[ci] = 0.0f;
                for (int ky = k - 1; ky >= 0; ky--) {
                    int y = iy - ky + s->pad;
                    if (y < 0 || y >= oh) continue;
                    for (int kx = k - 1; kx >= 0; kx--) {
                        int x = ix - kx + s->pad;
                        if (x < 0 || x >= ow) continue;
                        const float *sp = dcol + (((size_t)b * oh + y) * ow + x) * patch +
                                          ((size_t)ky * k + kx) * c;
                        for (int ci = 0; ci < c; ci++) d[ci] = d[ci] + sp[ci];
                    }
                }
            }
}

/* layers.c's im2col with each in-bounds run of k pixels copied in one go (NHWC keeps a patch
 * row's k * cin floats contiguous), COPY(dst, src, count) doing the copies. Same output. */
#define IM2COL_LOOPS(COPY)                                                                         \
    const int oh = conv_out_h(s), ow = conv_out_w(s), k = s->k, c = s->cin;                        \
    const size_t patch = (size_t)k * k * c, run = (size_t)k * c;                                   \
    for (int b = 0; b < s->n; b++)                                                                 \
        for (int y = 0; y < oh; y++)                                                               \
            for (int x = 0; x < ow; x++) {                                                         \
                float *dst = col + (((size_t)b * oh + y) * ow + x) * patch;                        \
                const int x0 = x - s->pad;                                                         \
                for (int ky = 0; ky < k; ky++, dst += run) {                                       \
                    int iy = y + ky - s->pad;                                                      \
                    if (iy < 0 || iy >= s->h) {                                                    \
                        memset(dst, 0, run * sizeof(float));                                       \
                        continue;                                                                  \
                    }                                                                              \
                    const float *src = inp + ((size_t)b * s->h + iy) * s->w * c;                   \
                    if (x0 >= 0 && x0 + k <= s->w) {                                               \
                        COPY(dst, src + (size_t)x0 * c, run);                                      \
                        continue;                                                                  \
                    }                                                                              \
                    for (int kx = 0; kx < k; kx++) {                                               \
                        int ix = x0 + kx;                                                          \
                        if (ix < 0 || ix >= s->w)                                                  \
                            memset(dst + (size_t)kx * c, 0, (size_t)c * sizeof(float));            \
                        else                                                                       \
                            COPY(dst + (size_t)kx * c, src + (size_t)ix * c, (size_t)c);           \
                    }                                                                              \
                }                                                                                  \
            }

static inline void copy_c(float *dst, const float *src, size_t n)
{
    memcpy(dst, src, n * sizeof(float));
}

static void im2col_c(float *col, const float *inp, const ConvShape *s)
{
    IM2COL_LOOPS(copy_c)
}

/* ---- AVX2 ---- */

#ifdef CONV_SIMD_X86
#define AVX2 __attribute__((target("avx2")))

/* As forward_c's last loop, for 8 lanes of which nl are channels. */
AVX2 static inline void pool_store_avx2(float *out, uint8_t *arg, __m256 a0, __m256 a1, __m256 a2,
                                        __m256 a3, int nl)
{
    if (nl <= 0) return;
    const __m256 zero = _mm256_setzero_ps();
    __m256 best = a0, m;
    __m256i q = _mm256_setzero_si256();
    m = _mm256_cmp_ps(a1, best, _CMP_GT_OQ);
    best = _mm256_blendv_ps(best, a1, m);
    q = _mm256_blendv_epi8(q, _mm256_set1_epi32(1), _mm256_castps_si256(m));
    m = _mm256_cmp_ps(a2, best, _CMP_GT_OQ);
    best = _mm256_blendv_ps(best, a2, m);
    q = _mm256_blendv_epi8(q, _mm256_set1_epi32(2), _mm256_castps_si256(m));
    m = _mm256_cmp_ps(a3, best, _CMP_GT_OQ);
    best = _mm256_blendv_ps(best, a3, m);
    q = _mm256_blendv_epi8(q, _mm256_set1_epi32(3), _mm256_castps_si256(m));
    best = _mm256_and_ps(best, _mm256_cmp_ps(best, zero, _CMP_GT_OQ)); /* ReLU, +0 */
    __m128i q16 = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
    __m128i q8 = _mm_packus_epi16(q16, q16);
    if (nl >= 8) {
        _mm256_storeu_ps(out, best);
        _mm_storel_epi64((__m128i *)arg, q8);
    } else {
        float b[8];
        uint8_t a[16];
        _mm256_storeu_ps(b, best);
        _mm_storeu_si128((__m128i *)a, q8);
        memcpy(out, b, (size_t)nl * sizeof(float));
        memcpy(arg, a, (size_t)nl);
    }
}

AVX2 static void forward_avx2(float *out, uint8_t *arg, const float *xp, const float *wt,
                              const float *bp, const ConvShape *s)
{
    const int cin = s->cin, cout = s->cout, coutp = round_lanes(cout), krow = s->k * cin;
    const size_t row = (size_t)(s->w + 2 * s->pad) * cin;
    const int ph = conv_out_h(s) / 2, pw = conv_out_w(s) / 2;
    for (int py = 0; py < ph; py++)
        for (int px = 0; px < pw; px++) {
            const float *x0 = xp + (size_t)(2 * py) * row + (size_t)(2 * px) * cin;
            const size_t o = ((size_t)py * pw + px) * cout;
            for (int cb = 0; cb < coutp; cb += LANES) {
                /* a: lanes 0-7 of the four window positions, b: lanes 8-15 */
                __m256 a0 = _mm256_loadu_ps(bp + cb), b0 = _mm256_loadu_ps(bp + cb + 8);
                __m256 a1 = a0, a2 = a0, a3 = a0, b1 = b0, b2 = b0, b3 = b0;
                const float *wv = wt + cb;
                for (int ky = 0; ky < s->k; ky++) {
                    const float *xs = x0 + (size_t)ky * row;
                    for (int t = 0; t < krow; t++, wv += coutp) {
                        const __m256 w0 = _mm256_loadu_ps(wv), w1 = _mm256_loadu_ps(wv + 8);
                        __m256 x = _mm256_broadcast_ss(xs + t);
                        a0 = _mm256_add_ps(a0, _mm256_mul_ps(x, w0));
                        b0 = _mm256_add_ps(b0, _mm256_mul_ps(x, w1));
                        x = _mm256_broadcast_ss(xs + t + cin);
                        a1 = _mm256_add_ps(a1, _mm256_mul_ps(x, w0));
                        b1 = _mm256_add_ps(b1, _mm256_mul_ps(x, w1));
                        x = _mm256_broadcast_ss(xs + t + row);
                        a2 = _mm256_add_ps(a2, _mm256_mul_ps(x, w0));
                        b2 = _mm256_add_ps(b2, _mm256_mul_ps(x, w1));
                        x = _mm256_broadcast_ss(xs + t + row + cin);
                        a3 = _mm256_add_ps(a3, _mm256_mul_ps(x, w0));
                        b3 = _mm256_add_ps(b3, _mm256_mul_ps(x, w1));
                    }
                }
                pool_store_avx2(out + o + cb, arg + o + cb, a0, a1, a2, a3, cout - cb);
                pool_store_avx2(out + o + cb + 8, arg + o + cb + 8, b0, b1, b2, b3, cout - cb - 8);
            }
        }
}

/* As backward_c's first loop for 8 lanes: g[q] the gradient at window position q; adds to the
 * bias sums. */
AVX2 static inline void window_grads_avx2(__m256 g[4], float *dbp, const float *dout,
                                          const float *out, const uint8_t *arg)
{
    __m256 gj = _mm256_and_ps(_mm256_loadu_ps(dout),
                              _mm256_cmp_ps(_mm256_loadu_ps(out), _mm256_setzero_ps(), _CMP_GT_OQ));
    __m256i q = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)arg));
    for (int p = 0; p < 4; p++)
        g[p] = _mm256_and_ps(gj, _mm256_castsi256_ps(_mm256_cmpeq_epi32(q, _mm256_set1_epi32(p))));
    _mm256_storeu_ps(dbp, _mm256_add_ps(_mm256_loadu_ps(dbp), gj));
}

AVX2 static void backward_avx2(float *dwt, float *dbp, const float *dout, const float *out,
                               const uint8_t *arg, const float *xp, const ConvShape *s)
{
    const int cin = s->cin, cout = s->cout, coutp = round_lanes(cout), krow = s->k * cin;
    const size_t row = (size_t)(s->w + 2 * s->pad) * cin;
    const int ph = conv_out_h(s) / 2, pw = conv_out_w(s) / 2;
    for (int py = 0; py < ph; py++)
        for (int px = 0; px < pw; px++) {
            const float *x0 = xp + (size_t)(2 * py) * row + (size_t)(2 * px) * cin;
            const size_t o = ((size_t)py * pw + px) * cout;
            for (int cb = 0; cb < coutp; cb += LANES) {
                const float *dp = dout + o + cb, *vp = out + o + cb;
                const uint8_t *ap = arg + o + cb;
                float td[LANES] = {0}, tv[LANES] = {0};
                uint8_t tq[LANES] = {0};
                if (cout - cb < LANES) { /* the last, partial block: zeros beyond cout */
                    memcpy(td, dp, (size_t)(cout - cb) * sizeof(float));
                    memcpy(tv, vp, (size_t)(cout - cb) * sizeof(float));
                    memcpy(tq, ap, (size_t)(cout - cb));
                    dp = td, vp = tv, ap = tq;
                }
                __m256 ga[4], gb[4];
                window_grads_avx2(ga, dbp + cb, dp, vp, ap);
                window_grads_avx2(gb, dbp + cb + 8, dp + 8, vp + 8, ap + 8);
                float *dw = dwt + cb;
                for (int ky = 0; ky < s->k; ky++) {
                    const float *xs = x0 + (size_t)ky * row;
                    for (int t = 0; t < krow; t++, dw += coutp) {
                        const __m256 x00 = _mm256_broadcast_ss(xs + t);
                        const __m256 x01 = _mm256_broadcast_ss(xs + t + cin);
                        const __m256 x10 = _mm256_broadcast_ss(xs + t + row);
                        const __m256 x11 = _mm256_broadcast_ss(xs + t + row + cin);
                        __m256 sa = _mm256_mul_ps(ga[0], x00), sb = _mm256_mul_ps(gb[0], x00);
                        sa = _mm256_add_ps(sa, _mm256_mul_ps(ga[1], x01));
                        sb = _mm256_add_ps(sb, _mm256_mul_ps(gb[1], x01));
                        sa = _mm256_add_ps(sa, _mm256_mul_ps(ga[2], x10));
                        sb = _mm256_add_ps(sb, _mm256_mul_ps(gb[2], x10));
                        sa = _mm256_add_ps(sa, _mm256_mul_ps(ga[3], x11));
                        sb = _mm256_add_ps(sb, _mm256_mul_ps(gb[3], x11));
                        _mm256_storeu_ps(dw, _mm256_add_ps(_mm256_loadu_ps(dw), sa));
                        _mm256_storeu_ps(dw + 8, _mm256_add_ps(_mm256_loadu_ps(dw + 8), sb));
                    }
                }
            }
        }
}

/* unpool_c for the columns in whole vectors of 8, the rest by unpool_c. */
AVX2 static inline void unpool_avx2(float *d, const float *dout, const float *out,
                                    const uint8_t *arg, uint8_t q, int c)
{
    const __m256 zero = _mm256_setzero_ps();
    const __m256i qv = _mm256_set1_epi32(q);
    int ch = 0;
    for (; ch + 8 <= c; ch += 8) {
        __m256i a = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(arg + ch)));
        __m256 m = _mm256_and_ps(_mm256_cmp_ps(_mm256_loadu_ps(out + ch), zero, _CMP_GT_OQ),
                                 _mm256_castsi256_ps(_mm256_cmpeq_epi32(a, qv)));
        _mm256_storeu_ps(d + ch, _mm256_and_ps(_mm256_add_ps(zero, _mm256_loadu_ps(dout + ch)), m));
    }
    unpool_c(d, dout, out, arg, q, ch, c);
}

#define UNPOOL_PIXEL_AVX2(d, dp, vp, ap, q) unpool_avx2(d, dp, vp, ap, q, c)

AVX2 static void unpool_rows_avx2(float *dinp, const float *dout, const float *out,
                                  const uint8_t *arg, int n, int h, int w,
                                  int c){UNPOOL_LOOPS(UNPOOL_PIXEL_AVX2)}

/* col2im_c for one input pixel's channels c0 .. c0 + 8 nv, summed in nv registers (nv a
 * constant where this is inlined). */
AVX2 static inline
    __attribute__((always_inline)) void col2im_pixel_avx2(float *d, const float *dcol,
                                                          const ConvShape *s, int b, int iy, int ix,
                                                          int c0, int nv)
{
    const int oh = conv_out_h(s), ow = conv_out_w(s), k = s->k, c = s->cin;
    const size_t patch = (size_t)k * k * c;
    __m256 acc[4];
    for (int v = 0; v < nv; v++) acc[v] = _mm256_setzero_ps();
    for (int ky = k - 1; ky >= 0; ky--) {
        int y = iy - ky + s->pad;
        if (y < 0 || y >= oh) continue;
        for (int kx = k - 1; kx >= 0; kx--) {
            int x = ix - kx + s->pad;
            if (x < 0 || x >= ow) continue;
            const float *sp =
                dcol + (((size_t)b * oh + y) * ow + x) * patch + ((size_t)ky * k + kx) * c + c0;
            for (int v = 0; v < nv; v++)
                acc[v] = _mm256_add_ps(acc[v], _mm256_loadu_ps(sp + 8 * v));
        }
    }
    for (int v = 0; v < nv; v++) _mm256_storeu_ps(d + c0 + 8 * v, acc[v]);
}

/* col2im_c with c a multiple of 8: 32, 16 or 8 channels at a time. */
AVX2 static void col2im_avx2(float *dinp, const float *dcol, const ConvShape *s)
{
    const int c = s->cin, step = c % 32 == 0 ? 32 : c % 16 == 0 ? 16 : 8;
    for (int b = 0; b < s->n; b++)
        for (int iy = 0; iy < s->h; iy++)
            for (int ix = 0; ix < s->w; ix++) {
                float *d = dinp + (((size_t)b * s->h + iy) * s->w + ix) * c;
                for (int c0 = 0; c0 < c; c0 += step) {
                    if (step == 32)
                        col2im_pixel_avx2(d, dcol, s, b, iy, ix, c0, 4);
                    else if (step == 16)
                        col2im_pixel_avx2(d, dcol, s, b, iy, ix, c0, 2);
                    else
                        col2im_pixel_avx2(d, dcol, s, b, iy, ix, c0, 1);
                }
            }
}

/* n floats, n a multiple of 8. */
AVX2 static inline void copy_avx2(float *dst, const float *src, size_t n)
{
    for (size_t i = 0; i < n; i += 8) _mm256_storeu_ps(dst + i, _mm256_loadu_ps(src + i));
}

AVX2 static void im2col_avx2(float *col, const float *inp, const ConvShape *s)
{
    IM2COL_LOOPS(copy_avx2)
}
#endif

void conv_simd_direct_forward(float *out, uint8_t *arg, const float *xp, const float *wt,
                              const float *bp, const ConvShape *s, int avx2)
{
#ifdef CONV_SIMD_X86
    if (avx2) {
        forward_avx2(out, arg, xp, wt, bp, s);
        return;
    }
#endif
    (void)avx2;
    forward_c(out, arg, xp, wt, bp, s);
}

void conv_simd_direct_backward(float *dwt, float *dbp, const float *dout, const float *out,
                               const uint8_t *arg, const float *xp, const ConvShape *s, int avx2)
{
#ifdef CONV_SIMD_X86
    if (avx2) {
        backward_avx2(dwt, dbp, dout, out, arg, xp, s);
        return;
    }
#endif
    (void)avx2;
    backward_c(dwt, dbp, dout, out, arg, xp, s);
}

void conv_simd_unpool(float *dinp, const float *dout, const float *out, const uint8_t *arg, int n,
                      int h, int w, int c, int avx2)
{
#ifdef CONV_SIMD_X86
    if (avx2) {
        unpool_rows_avx2(dinp, dout, out, arg, n, h, w, c);
        return;
    }
#endif
    (void)avx2;
    unpool_rows_c(dinp, dout, out, arg, n, h, w, c);
}

void conv_simd_col2im(float *dinp, const float *dcol, const ConvShape *s, int avx2)
{
#ifdef CONV_SIMD_X86
    if (avx2 && s->cin % 8 == 0) {
        col2im_avx2(dinp, dcol, s);
        return;
    }
#endif
    (void)avx2;
    col2im_c(dinp, dcol, s);
}

void conv_simd_im2col(float *col, const float *inp, const ConvShape *s, int avx2)
{
#ifdef CONV_SIMD_X86
    if (avx2 && s->cin % 8 == 0) {
        im2col_avx2(col, inp, s);
        return;
    }
#endif
    (void)avx2;
    im2col_c(col, inp, s);
}
