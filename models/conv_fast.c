/* conv_fast.c: see conv_fast.h. The direct kernels keep the four outputs of one pooling
 * window and 16 output channels in vector registers (GCC vector extensions), so the first
 * layer's activation is never stored; the gemm kernels run im2col + sgemm (Chellapilla, Puri,
 * Simard 2006, as layers.c) a few images at a time, so that the patch matrix (12544 x 144
 * floats, 7.2 MB, for a batch of 64 in the cnn's second layer) never leaves the cache. Fusing
 * ReLU into the pooling uses relu(max(a)) = max(relu(a)): the backward needs only the pooled
 * value (its sign is the ReLU's mask at the maximum) and the window position.
 * Results do not depend on the CPU: the hot loops are compiled twice, for AVX2 and for any
 * x86-64, and picked at load time (target_clones), but both do the same float operations in
 * the same order (no FMA: the AVX2 clone does not enable it), so they agree to the bit. */
#include "conv_fast.h"

#include <cblas.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define BW_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define BW_CLONES
#endif

/* Output channels per block: CB floats, NV vectors of 8 (two AVX2 registers; GCC's vector
 * extensions, which the default clone lowers to SSE pairs). */
#define CB 16
#define NV (CB / 8)
typedef float vf __attribute__((vector_size(8 * sizeof(float))));
typedef int32_t vi __attribute__((vector_size(8 * sizeof(int32_t))));
typedef uint8_t vu8 __attribute__((vector_size(8)));
/* Unaligned loads and stores (memcpy compiles to one move each). */
#define VLOAD(v, p)  memcpy(&(v), (p), sizeof(v))
#define VSTORE(p, v) memcpy((p), &(v), sizeof(v))

/* Images per block in the gemm kernels: about this many rows of the patch matrix (for the
 * cnn's second layer, 5 images of 14x14: 980 rows of 144 floats, 564 KB, in a 2 MB L2). A
 * constant, so that the sums' order, and with it the results, depend on the shape only. */
enum { GEMM_BLOCK_ROWS = 1024 };

static int round_up(int x, int m)
{
    return (x + m - 1) / m * m;
}

size_t convpool_out_size(const ConvShape *s)
{
    return (size_t)s->n * (size_t)(conv_out_h(s) / 2) * (size_t)(conv_out_w(s) / 2) *
           (size_t)s->cout;
}

/* ---- direct kernels ---- */

static size_t padded_image_size(const ConvShape *s)
{
    return (size_t)(s->h + 2 * s->pad) * (size_t)(s->w + 2 * s->pad) * (size_t)s->cin;
}

size_t convpool_direct_scratch(const ConvShape *s)
{
    size_t taps = (size_t)s->k * s->k * s->cin, coutp = (size_t)round_up(s->cout, CB);
    /* padded image; weights [taps, coutp] and bias (forward) or an image's gradient sums
     * and the batch's (backward) */
    return padded_image_size(s) + 2 * (taps + 1) * coutp;
}

/* The interior of the padded image xp; its border stays zero from the first call. */
static void pad_image(float *xp, const float *img, const ConvShape *s)
{
    const size_t prow = (size_t)(s->w + 2 * s->pad) * s->cin, row = (size_t)s->w * s->cin;
    for (int y = 0; y < s->h; y++)
        memcpy(xp + (size_t)(y + s->pad) * prow + (size_t)s->pad * s->cin, img + (size_t)y * row,
               row * sizeof(float));
}

/* Max over the window's four outputs (first on ties), then ReLU; stores nl <= 8 lanes. */
static inline void pool_store(float *out, uint8_t *arg, vf a0, vf a1, vf a2, vf a3, int nl)
{
    vf best = a0;
    vi q = {0};
    vi m = a1 > best;
    best = (vf)(((vi)a1 & m) | ((vi)best & ~m));
    q = (q & ~m) | (m & 1);
    m = a2 > best;
    best = (vf)(((vi)a2 & m) | ((vi)best & ~m));
    q = (q & ~m) | (m & 2);
    m = a3 > best;
    best = (vf)(((vi)a3 & m) | ((vi)best & ~m));
    q = (q & ~m) | (m & 3);
    best = (vf)((vi)best & (best > 0)); /* ReLU: +0 where best <= 0 (or NaN), as relu_forward */
    if (nl >= 8) {
        VSTORE(out, best);
        vu8 q8 = __builtin_convertvector(q, vu8);
        VSTORE(arg, q8);
    } else {
        for (int j = 0; j < nl; j++) out[j] = best[j], arg[j] = (uint8_t)q[j];
    }
}

/* One image: xp its padded copy, wt [taps, coutp] the weights transposed, bp [coutp]. */
BW_CLONES static void direct_forward_image(float *out, uint8_t *arg, const float *xp,
                                           const float *wt, const float *bp, const ConvShape *s)
{
    const int k = s->k, cin = s->cin, cout = s->cout, coutp = round_up(cout, CB);
    const size_t row = (size_t)(s->w + 2 * s->pad) * cin; /* padded row, floats */
    const int ph = conv_out_h(s) / 2, pw = conv_out_w(s) / 2;
    for (int py = 0; py < ph; py++)
        for (int px = 0; px < pw; px++) {
            const float *x0 = xp + (size_t)(2 * py) * row + (size_t)(2 * px) * cin;
            size_t o = ((size_t)py * pw + px) * cout;
            for (int cb = 0; cb < coutp; cb += CB) {
                vf a0[NV], a1[NV], a2[NV], a3[NV];
                for (int v = 0; v < NV; v++) {
                    VLOAD(a0[v], bp + cb + 8 * v);
                    a1[v] = a2[v] = a3[v] = a0[v];
                }
                const float *wv = wt + cb;
                for (int ky = 0; ky < k; ky++)
                    for (int kx = 0; kx < k; kx++) {
                        const float *xs = x0 + (size_t)ky * row + (size_t)kx * cin;
                        for (int ci = 0; ci < cin; ci++, wv += coutp) {
                            float x00 = xs[ci], x01 = xs[ci + cin], x10 = xs[ci + row],
                                  x11 = xs[ci + row + cin];
                            for (int v = 0; v < NV; v++) {
                                vf wq;
                                VLOAD(wq, wv + 8 * v);
                                a0[v] += x00 * wq;
                                a1[v] += x01 * wq;
                                a2[v] += x10 * wq;
                                a3[v] += x11 * wq;
                            }
                        }
                    }
                for (int v = 0; v < NV; v++) {
                    int nl = cout - cb - 8 * v;
                    if (nl > 0)
                        pool_store(out + o + cb + 8 * v, arg + o + cb + 8 * v, a0[v], a1[v], a2[v],
                                   a3[v], nl);
                }
            }
        }
}

void convpool_direct_forward(float *out, uint8_t *arg, const float *inp, const float *w,
                             const float *b, const ConvShape *s, float *scratch)
{
    const int taps = s->k * s->k * s->cin, coutp = round_up(s->cout, CB);
    float *xp = scratch, *wt = xp + padded_image_size(s), *bp = wt + (size_t)taps * coutp;
    memset(xp, 0, padded_image_size(s) * sizeof(float));
    memset(wt, 0, (size_t)(taps + 1) * coutp * sizeof(float));
    for (int co = 0; co < s->cout; co++) {
        for (int t = 0; t < taps; t++) wt[(size_t)t * coutp + co] = w[(size_t)co * taps + t];
        bp[co] = b[co];
    }
    const size_t img = (size_t)s->h * s->w * s->cin;
    const size_t pooled = (size_t)(conv_out_h(s) / 2) * (conv_out_w(s) / 2) * s->cout;
    for (int i = 0; i < s->n; i++) {
        pad_image(xp, inp + i * img, s);
        direct_forward_image(out + i * pooled, arg + i * pooled, xp, wt, bp, s);
    }
}

/* One image's weight and bias gradients, added to dwt [taps, coutp] and dbp [coutp]. Of the
 * four products per tap only the one at the window's maximum is not zero. */
BW_CLONES static void direct_backward_image(float *dwt, float *dbp, const float *dout,
                                            const float *out, const uint8_t *arg, const float *xp,
                                            const ConvShape *s)
{
    const int k = s->k, cin = s->cin, cout = s->cout, coutp = round_up(cout, CB);
    const size_t row = (size_t)(s->w + 2 * s->pad) * cin;
    const int ph = conv_out_h(s) / 2, pw = conv_out_w(s) / 2;
    for (int py = 0; py < ph; py++)
        for (int px = 0; px < pw; px++) {
            const float *x0 = xp + (size_t)(2 * py) * row + (size_t)(2 * px) * cin;
            size_t o = ((size_t)py * pw + px) * cout;
            for (int cb = 0; cb < coutp; cb += 8) {
                vf d, v;
                vi q;
                if (cout - cb >= 8) {
                    vu8 q8;
                    VLOAD(d, dout + o + cb);
                    VLOAD(v, out + o + cb);
                    VLOAD(q8, arg + o + cb);
                    q = __builtin_convertvector(q8, vi);
                } else {
                    d = v = (vf){0};
                    q = (vi){0};
                    for (int j = 0; j < cout - cb; j++)
                        d[j] = dout[o + cb + j], v[j] = out[o + cb + j], q[j] = arg[o + cb + j];
                }
                vf g = (vf)((vi)d & (v > 0)); /* the ReLU passed the maximum */
                vf g0 = (vf)((vi)g & (q == 0)), g1 = (vf)((vi)g & (q == 1));
                vf g2 = (vf)((vi)g & (q == 2)), g3 = (vf)((vi)g & (q == 3));
                vf acc;
                VLOAD(acc, dbp + cb);
                acc += g;
                VSTORE(dbp + cb, acc);
                float *dw = dwt + cb;
                for (int ky = 0; ky < k; ky++)
                    for (int kx = 0; kx < k; kx++) {
                        const float *xs = x0 + (size_t)ky * row + (size_t)kx * cin;
                        for (int ci = 0; ci < cin; ci++, dw += coutp) {
                            VLOAD(acc, dw);
                            acc += g0 * xs[ci] + g1 * xs[ci + cin] + g2 * xs[ci + row] +
                                   g3 * xs[ci + row + cin];
                            VSTORE(dw, acc);
                        }
                    }
            }
        }
}

void convpool_direct_backward(float *dw, float *db, const float *dout, const float *out,
                              const uint8_t *arg, const float *inp, const ConvShape *s,
                              float *scratch)
{
    const int taps = s->k * s->k * s->cin, coutp = round_up(s->cout, CB);
    const size_t part = (size_t)(taps + 1) * coutp; /* [taps, coutp] then [coutp] */
    float *xp = scratch, *img_sum = xp + padded_image_size(s), *sum = img_sum + part;
    memset(xp, 0, padded_image_size(s) * sizeof(float));
    memset(sum, 0, part * sizeof(float));
    const size_t img = (size_t)s->h * s->w * s->cin;
    const size_t pooled = (size_t)(conv_out_h(s) / 2) * (conv_out_w(s) / 2) * s->cout;
    /* per image, then image after image: shorter sums than one over the whole batch */
    for (int i = 0; i < s->n; i++) {
        pad_image(xp, inp + i * img, s);
        memset(img_sum, 0, part * sizeof(float));
        direct_backward_image(img_sum, img_sum + (size_t)taps * coutp, dout + i * pooled,
                              out + i * pooled, arg + i * pooled, xp, s);
        for (size_t j = 0; j < part; j++) sum[j] += img_sum[j];
    }
    for (int co = 0; co < s->cout; co++) {
        for (int t = 0; t < taps; t++) dw[(size_t)co * taps + t] = sum[(size_t)t * coutp + co];
        db[co] = sum[(size_t)taps * coutp + co];
    }
}

/* ---- ReLU + max pooling, fused ---- */

BW_CLONES void relu_maxpool2_forward(float *out, uint8_t *arg, const float *inp, int n, int h,
                                     int w, int c)
{
    const int oh = h / 2, ow = w / 2;
    for (int b = 0; b < n; b++)
        for (int y = 0; y < oh; y++)
            for (int x = 0; x < ow; x++) {
                const float *p0 = inp + (((size_t)b * h + 2 * y) * w + 2 * x) * c;
                const float *p1 = p0 + c, *p2 = p0 + (size_t)w * c, *p3 = p2 + c;
                size_t o = (((size_t)b * oh + y) * ow + x) * c;
                for (int ch = 0; ch < c; ch++) {
                    float best = p0[ch];
                    uint8_t q = 0;
                    if (p1[ch] > best) best = p1[ch], q = 1;
                    if (p2[ch] > best) best = p2[ch], q = 2;
                    if (p3[ch] > best) best = p3[ch], q = 3;
                    out[o + ch] = best > 0.0f ? best : 0.0f;
                    arg[o + ch] = q;
                }
            }
}

void relu_maxpool2_backward(float *dinp, const float *dout, const float *out, const uint8_t *arg,
                            int n, int h, int w, int c)
{
    const int oh = h / 2, ow = w / 2;
    memset(dinp, 0, (size_t)n * h * w * c * sizeof(float));
    for (int b = 0; b < n; b++)
        for (int y = 0; y < oh; y++)
            for (int x = 0; x < ow; x++) {
                float *p0 = dinp + (((size_t)b * h + 2 * y) * w + 2 * x) * c;
                size_t o = (((size_t)b * oh + y) * ow + x) * c;
                for (int ch = 0; ch < c; ch++) {
                    if (!(out[o + ch] > 0.0f)) continue;
                    int q = arg[o + ch];
                    /* += on the zero, as maxpool2_backward: the sign of a zero is kept */
                    p0[(size_t)(q >> 1) * w * c + (size_t)(q & 1) * c + ch] += dout[o + ch];
                }
            }
}

/* ---- im2col + sgemm, a block of images at a time ---- */

static int gemm_block_images(const ConvShape *s)
{
    int per = conv_out_h(s) * conv_out_w(s);
    int b = per > 0 ? GEMM_BLOCK_ROWS / per : 1;
    return b < 1 ? 1 : b;
}

size_t convpool_gemm_scratch(const ConvShape *s)
{
    size_t rows = (size_t)gemm_block_images(s) * conv_out_h(s) * conv_out_w(s);
    size_t taps = (size_t)s->k * s->k * s->cin;
    /* patches, activations (or their gradient), patch gradients */
    return rows * (2 * taps + (size_t)s->cout);
}

/* layers.c's im2col, with each in-bounds run of k pixels copied in one go (NHWC keeps a
 * patch row's k * cin floats contiguous). Same output. */
static void im2col_fast(float *col, const float *inp, const ConvShape *s)
{
    const int oh = conv_out_h(s), ow = conv_out_w(s), k = s->k, c = s->cin;
    const size_t patch = (size_t)k * k * c, run = (size_t)k * c;
    for (int b = 0; b < s->n; b++)
        for (int y = 0; y < oh; y++)
            for (int x = 0; x < ow; x++) {
                float *dst = col + (((size_t)b * oh + y) * ow + x) * patch;
                const int x0 = x - s->pad;
                for (int ky = 0; ky < k; ky++, dst += run) {
                    int iy = y + ky - s->pad;
                    if (iy < 0 || iy >= s->h) {
                        memset(dst, 0, run * sizeof(float));
                        continue;
                    }
                    const float *src = inp + ((size_t)b * s->h + iy) * s->w * c;
                    if (x0 >= 0 && x0 + k <= s->w) {
                        memcpy(dst, src + (size_t)x0 * c, run * sizeof(float));
                        continue;
                    }
                    for (int kx = 0; kx < k; kx++) {
                        int ix = x0 + kx;
                        if (ix < 0 || ix >= s->w)
                            memset(dst + (size_t)kx * c, 0, (size_t)c * sizeof(float));
                        else
                            memcpy(dst + (size_t)kx * c, src + (size_t)ix * c,
                                   (size_t)c * sizeof(float));
                    }
                }
            }
}

/* layers.c's col2im as a gather: each input pixel sums the patch entries that read it, in
 * the order col2im adds them (output pixels in raster order, so taps in reverse), which makes
 * it equal to the bit. Each pixel is written once, with no zeroing pass. */
BW_CLONES static void col2im_gather(float *dinp, const float *dcol, const ConvShape *s)
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
                        for (int ci = 0; ci < c; ci++) d[ci] += sp[ci];
                    }
                }
            }
}

void convpool_gemm_forward(float *out, uint8_t *arg, const float *inp, const float *w,
                           const float *b, const ConvShape *s, float *scratch)
{
    const int oh = conv_out_h(s), ow = conv_out_w(s), taps = s->k * s->k * s->cin;
    const int per = gemm_block_images(s);
    const size_t img = (size_t)s->h * s->w * s->cin;
    const size_t pooled = (size_t)(oh / 2) * (ow / 2) * s->cout;
    float *col = scratch, *act = col + (size_t)per * oh * ow * taps;
    for (int i = 0; i < s->n; i += per) {
        ConvShape sb = *s;
        sb.n = s->n - i < per ? s->n - i : per;
        im2col_fast(col, inp + i * img, &sb);
        linear_forward(act, col, w, b, sb.n * oh * ow, taps, s->cout);
        relu_maxpool2_forward(out + i * pooled, arg + i * pooled, act, sb.n, oh, ow, s->cout);
    }
}

void convpool_gemm_backward(float *dinp, float *dw, float *db, const float *dout, const float *out,
                            const uint8_t *arg, const float *inp, const float *w,
                            const ConvShape *s, float *scratch)
{
    const int oh = conv_out_h(s), ow = conv_out_w(s), taps = s->k * s->k * s->cin;
    const int per = gemm_block_images(s), cout = s->cout;
    const size_t img = (size_t)s->h * s->w * s->cin;
    const size_t pooled = (size_t)(oh / 2) * (ow / 2) * cout;
    float *col = scratch, *dact = col + (size_t)per * oh * ow * taps;
    float *dcol = dact + (size_t)per * oh * ow * cout;
    memset(db, 0, (size_t)cout * sizeof(float));
    for (int i = 0; i < s->n; i += per) {
        ConvShape sb = *s;
        sb.n = s->n - i < per ? s->n - i : per;
        const int rows = sb.n * oh * ow;
        relu_maxpool2_backward(dact, dout + i * pooled, out + i * pooled, arg + i * pooled, sb.n,
                               oh, ow, cout);
        for (int r = 0; r < rows; r++) /* in row order, as linear_backward */
            for (int j = 0; j < cout; j++) db[j] += dact[(size_t)r * cout + j];
        im2col_fast(col, inp + i * img, &sb); /* again: cheaper than keeping the forward's */
        /* dw [cout, taps] (+)= dact^T [cout, rows] col [rows, taps] */
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, cout, taps, rows, 1.0f, dact, cout,
                    col, taps, i ? 1.0f : 0.0f, dw, taps);
        if (!dinp) continue;
        /* dcol [rows, taps] = dact [rows, cout] w [cout, taps] */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, taps, cout, 1.0f, dact, cout,
                    w, taps, 0.0f, dcol, taps);
        col2im_gather(dinp + i * img, dcol, &sb);
    }
    if (s->n == 0) memset(dw, 0, (size_t)cout * taps * sizeof(float));
}

/* ---- naive twins ---- */

void convpool_forward_naive(float *out, const float *inp, const float *w, const float *b,
                            const ConvShape *s, float *act, int32_t *at)
{
    const int oh = conv_out_h(s), ow = conv_out_w(s);
    conv2d_forward_naive(act, inp, w, b, s);
    relu_forward(act, (size_t)s->n * oh * ow * s->cout);
    maxpool2_forward(out, at, act, s->n, oh, ow, s->cout);
}

void convpool_backward_naive(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                             const float *w, const float *b, const ConvShape *s, float *act,
                             int32_t *at)
{
    const int oh = conv_out_h(s), ow = conv_out_w(s);
    const size_t count = (size_t)s->n * oh * ow * s->cout;
    float *dact = act + count; /* first the pooled output, which is not needed */
    convpool_forward_naive(dact, inp, w, b, s, act, at);
    maxpool2_backward(dact, dout, at, s->n, oh, ow, s->cout);
    relu_backward(dact, act, count);
    conv2d_backward_naive(dinp, dw, db, dact, inp, w, s);
}
