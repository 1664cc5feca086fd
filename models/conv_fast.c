/* conv_fast.c: see conv_fast.h. The inner loops of the direct kernels are in conv_simd.c; the gemm
 * kernels run im2col + sgemm (Chellapilla, Puri, Simard 2006, as layers.c) a few images at a
 * time, so that the patch matrix (12544 x 144 floats, 7.2 MB, for a batch of 64 in the cnn's
 * second layer) and its gradient never leave the cache. Fusing ReLU into the pooling uses
 * relu(max(a)) = max(relu(a)): the backward needs only the pooled value (its sign is the ReLU's
 * mask at the maximum) and the window position. */
#include "conv_fast.h"

#include "conv_simd.h"

#include <cblas.h>
#include <string.h>

#define CB CONV_SIMD_LANES

/* Images per block in the gemm kernels: about this many rows of the patch matrix (for the
 * cnn's second layer, 2 images of 14x14: 392 rows of 144 floats, 226 KB, well inside a 2 MB
 * L2; measured here, 256 to 1024 rows gave the same step time within 3%, 2048 and more were
 * slower). A constant, so that the sums' order, and with it the results, depend on the shape
 * only. */
enum { GEMM_BLOCK_ROWS = 512 };

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

static void direct_forward(float *out, uint8_t *arg, const float *inp, const float *w,
                           const float *b, const ConvShape *s, float *scratch, int avx2)
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
        conv_simd_direct_forward(out + i * pooled, arg + i * pooled, xp, wt, bp, s, avx2);
    }
}

static void direct_backward(float *dw, float *db, const float *dout, const float *out,
                            const uint8_t *arg, const float *inp, const ConvShape *s,
                            float *scratch, int avx2)
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
        conv_simd_direct_backward(img_sum, img_sum + (size_t)taps * coutp, dout + i * pooled,
                                  out + i * pooled, arg + i * pooled, xp, s, avx2);
        for (size_t j = 0; j < part; j++) sum[j] += img_sum[j];
    }
    for (int co = 0; co < s->cout; co++) {
        for (int t = 0; t < taps; t++) dw[(size_t)co * taps + t] = sum[(size_t)t * coutp + co];
        db[co] = sum[(size_t)taps * coutp + co];
    }
}

void convpool_direct_forward(float *out, uint8_t *arg, const float *inp, const float *w,
                             const float *b, const ConvShape *s, float *scratch)
{
    direct_forward(out, arg, inp, w, b, s, scratch, conv_simd_have_avx2());
}

void convpool_direct_backward(float *dw, float *db, const float *dout, const float *out,
                              const uint8_t *arg, const float *inp, const ConvShape *s,
                              float *scratch)
{
    direct_backward(dw, db, dout, out, arg, inp, s, scratch, conv_simd_have_avx2());
}

void convpool_direct_forward_portable(float *out, uint8_t *arg, const float *inp, const float *w,
                                      const float *b, const ConvShape *s, float *scratch)
{
    direct_forward(out, arg, inp, w, b, s, scratch, 0);
}

void convpool_direct_backward_portable(float *dw, float *db, const float *dout, const float *out,
                                       const uint8_t *arg, const float *inp, const ConvShape *s,
                                       float *scratch)
{
    direct_backward(dw, db, dout, out, arg, inp, s, scratch, 0);
}

/* ---- ReLU + max pooling, fused ---- */

void relu_maxpool2_forward(float *out, uint8_t *arg, const float *inp, int n, int h, int w, int c)
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
    conv_simd_unpool(dinp, dout, out, arg, n, h, w, c, conv_simd_have_avx2());
}

/* ---- im2col + sgemm, a block of images at a time ---- */

int convpool_gemm_block_images(const ConvShape *s)
{
    int per = conv_out_h(s) * conv_out_w(s);
    int b = per > 0 ? GEMM_BLOCK_ROWS / per : 1;
    return b < 1 ? 1 : b;
}

size_t convpool_gemm_scratch(const ConvShape *s)
{
    size_t rows = (size_t)convpool_gemm_block_images(s) * conv_out_h(s) * conv_out_w(s);
    size_t taps = (size_t)s->k * s->k * s->cin;
    /* patches, activations (or their gradient), patch gradients */
    return rows * (2 * taps + (size_t)s->cout);
}

void convpool_gemm_forward(float *out, uint8_t *arg, const float *inp, const float *w,
                           const float *b, const ConvShape *s, float *scratch)
{
    const int oh = conv_out_h(s), ow = conv_out_w(s), taps = s->k * s->k * s->cin;
    const int per = convpool_gemm_block_images(s), avx2 = conv_simd_have_avx2();
    const size_t img = (size_t)s->h * s->w * s->cin;
    const size_t pooled = (size_t)(oh / 2) * (ow / 2) * s->cout;
    float *col = scratch, *act = col + (size_t)per * oh * ow * taps;
    for (int i = 0; i < s->n; i += per) {
        ConvShape sb = *s;
        sb.n = s->n - i < per ? s->n - i : per;
        conv_simd_im2col(col, inp + i * img, &sb, avx2);
        linear_forward(act, col, w, b, sb.n * oh * ow, taps, s->cout);
        relu_maxpool2_forward(out + i * pooled, arg + i * pooled, act, sb.n, oh, ow, s->cout);
    }
}

void convpool_gemm_backward(float *dinp, float *dw, float *db, const float *dout, const float *out,
                            const uint8_t *arg, const float *inp, const float *w,
                            const ConvShape *s, float *scratch)
{
    const int oh = conv_out_h(s), ow = conv_out_w(s), taps = s->k * s->k * s->cin;
    const int per = convpool_gemm_block_images(s), cout = s->cout;
    const size_t img = (size_t)s->h * s->w * s->cin;
    const size_t pooled = (size_t)(oh / 2) * (ow / 2) * cout;
    float *col = scratch, *dact = col + (size_t)per * oh * ow * taps;
    float *dcol = dact + (size_t)per * oh * ow * cout;
    const int avx2 = conv_simd_have_avx2();
    memset(db, 0, (size_t)cout * sizeof(float));
    for (int i = 0; i < s->n; i += per) {
        ConvShape sb = *s;
        sb.n = s->n - i < per ? s->n - i : per;
        const int rows = sb.n * oh * ow;
        conv_simd_unpool(dact, dout + i * pooled, out + i * pooled, arg + i * pooled, sb.n, oh, ow,
                         cout, avx2);
        for (int r = 0; r < rows; r++) /* in row order, as linear_backward */
            for (int j = 0; j < cout; j++) db[j] += dact[(size_t)r * cout + j];
        /* again: cheaper than keeping the forward's */
        conv_simd_im2col(col, inp + i * img, &sb, avx2);
        /* dw [cout, taps] (+)= dact^T [cout, rows] col [rows, taps] */
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, cout, taps, rows, 1.0f, dact, cout,
                    col, taps, i ? 1.0f : 0.0f, dw, taps);
        if (!dinp) continue;
        /* dcol [rows, taps] = dact [rows, cout] w [cout, taps] */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, taps, cout, 1.0f, dact, cout,
                    w, taps, 0.0f, dcol, taps);
        conv_simd_col2im(dinp + i * img, dcol, &sb, avx2);
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
