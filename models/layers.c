/* layers.c: the kernels. Fast paths call OpenBLAS's cblas_sgemm; the _naive twins are plain
 * loops written for obviousness, used only by the tests. Convolution is lowered to a matrix
 * product with im2col (Chellapilla, Puri, Simard, "High performance convolutional neural
 * networks for document processing", 2006). Batch normalisation: Ioffe & Szegedy, "Batch
 * normalization", ICML 2015; its running statistics follow PyTorch's BatchNorm2d. */
#include "layers.h"

#include <cblas.h>
#include <float.h>
#include <math.h>
#include <string.h>

void linear_forward(float *out, const float *inp, const float *w, const float *b, int n, int i,
                    int o)
{
    /* Seed each row with the bias, then accumulate the product into it (beta = 1). A plain
     * loop, not memcpy: convolutions have many short rows. */
    if (b)
        for (int r = 0; r < n; r++) {
            float *row = out + (size_t)r * o;
            for (int j = 0; j < o; j++) row[j] = b[j];
        }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, o, i, 1.0f, inp, i, w, i,
                b ? 1.0f : 0.0f, out, o);
}

void linear_backward(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                     const float *w, int n, int i, int o)
{
    /* dw [o, i] = dout^T [o, n] inp [n, i] */
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, o, i, n, 1.0f, dout, o, inp, i, 0.0f, dw,
                i);
    if (db) {
        memset(db, 0, (size_t)o * sizeof(float));
        for (int r = 0; r < n; r++) {
            const float *d = dout + (size_t)r * o;
            for (int j = 0; j < o; j++) db[j] += d[j];
        }
    }
    /* dinp [n, i] = dout [n, o] w [o, i] */
    if (dinp)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, i, o, 1.0f, dout, o, w, i, 0.0f,
                    dinp, i);
}

void linear_forward_naive(float *out, const float *inp, const float *w, const float *b, int n,
                          int i, int o)
{
    for (int r = 0; r < n; r++)
        for (int j = 0; j < o; j++) {
            double s = b ? b[j] : 0.0;
            for (int k = 0; k < i; k++) s += (double)inp[(size_t)r * i + k] * w[(size_t)j * i + k];
            out[(size_t)r * o + j] = (float)s;
        }
}

void linear_backward_naive(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                           const float *w, int n, int i, int o)
{
    for (int j = 0; j < o; j++) {
        double sb = 0;
        for (int r = 0; r < n; r++) sb += dout[(size_t)r * o + j];
        if (db) db[j] = (float)sb;
        for (int k = 0; k < i; k++) {
            double s = 0;
            for (int r = 0; r < n; r++)
                s += (double)dout[(size_t)r * o + j] * inp[(size_t)r * i + k];
            dw[(size_t)j * i + k] = (float)s;
        }
    }
    if (!dinp) return;
    for (int r = 0; r < n; r++)
        for (int k = 0; k < i; k++) {
            double s = 0;
            for (int j = 0; j < o; j++) s += (double)dout[(size_t)r * o + j] * w[(size_t)j * i + k];
            dinp[(size_t)r * i + k] = (float)s;
        }
}

void relu_forward(float *x, size_t count)
{
    for (size_t i = 0; i < count; i++) x[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

void relu_backward(float *dx, const float *out, size_t count)
{
    for (size_t i = 0; i < count; i++) dx[i] = out[i] > 0.0f ? dx[i] : 0.0f;
}

void im2col(float *col, const float *inp, const ConvShape *s)
{
    const int oh = conv_out_h(s), ow = conv_out_w(s), k = s->k, c = s->cin, st = conv_stride(s);
    const size_t patch = (size_t)k * k * c;
    for (int b = 0; b < s->n; b++)
        for (int y = 0; y < oh; y++)
            for (int x = 0; x < ow; x++) {
                float *dst = col + (((size_t)b * oh + y) * ow + x) * patch;
                for (int ky = 0; ky < k; ky++) {
                    int iy = y * st + ky - s->pad;
                    for (int kx = 0; kx < k; kx++) {
                        int ix = x * st + kx - s->pad;
                        float *d = dst + ((size_t)ky * k + kx) * c;
                        /* plain loops: c is small (1 for the first layer), and a libc call
                         * per tap cost more than the copy */
                        if (iy < 0 || iy >= s->h || ix < 0 || ix >= s->w) {
                            for (int ci = 0; ci < c; ci++) d[ci] = 0.0f;
                        } else {
                            const float *src = inp + (((size_t)b * s->h + iy) * s->w + ix) * c;
                            for (int ci = 0; ci < c; ci++) d[ci] = src[ci];
                        }
                    }
                }
            }
}

void col2im(float *dinp, const float *dcol, const ConvShape *s)
{
    const int oh = conv_out_h(s), ow = conv_out_w(s), k = s->k, c = s->cin, st = conv_stride(s);
    const size_t patch = (size_t)k * k * c;
    memset(dinp, 0, (size_t)s->n * s->h * s->w * c * sizeof(float));
    for (int b = 0; b < s->n; b++)
        for (int y = 0; y < oh; y++)
            for (int x = 0; x < ow; x++) {
                const float *src = dcol + (((size_t)b * oh + y) * ow + x) * patch;
                for (int ky = 0; ky < k; ky++) {
                    int iy = y * st + ky - s->pad;
                    if (iy < 0 || iy >= s->h) continue;
                    for (int kx = 0; kx < k; kx++) {
                        int ix = x * st + kx - s->pad;
                        if (ix < 0 || ix >= s->w) continue;
                        const float *sp = src + ((size_t)ky * k + kx) * c;
                        float *d = dinp + (((size_t)b * s->h + iy) * s->w + ix) * c;
                        for (int ci = 0; ci < c; ci++) d[ci] += sp[ci];
                    }
                }
            }
}

void conv2d_forward(float *out, float *col, const float *inp, const float *w, const float *b,
                    const ConvShape *s)
{
    im2col(col, inp, s);
    int rows = s->n * conv_out_h(s) * conv_out_w(s);
    linear_forward(out, col, w, b, rows, s->k * s->k * s->cin, s->cout);
}

void conv2d_backward(float *dinp, float *dw, float *db, float *dcol, const float *dout,
                     const float *col, const float *w, const ConvShape *s)
{
    int rows = s->n * conv_out_h(s) * conv_out_w(s);
    linear_backward(dinp ? dcol : NULL, dw, db, dout, col, w, rows, s->k * s->k * s->cin, s->cout);
    if (dinp) col2im(dinp, dcol, s);
}

void conv2d_forward_naive(float *out, const float *inp, const float *w, const float *b,
                          const ConvShape *s)
{
    const int oh = conv_out_h(s), ow = conv_out_w(s), k = s->k, st = conv_stride(s);
    for (int n = 0; n < s->n; n++)
        for (int y = 0; y < oh; y++)
            for (int x = 0; x < ow; x++)
                for (int co = 0; co < s->cout; co++) {
                    double acc = b ? b[co] : 0.0;
                    for (int ky = 0; ky < k; ky++)
                        for (int kx = 0; kx < k; kx++)
                            for (int ci = 0; ci < s->cin; ci++) {
                                int iy = y * st + ky - s->pad, ix = x * st + kx - s->pad;
                                if (iy < 0 || iy >= s->h || ix < 0 || ix >= s->w) continue;
                                acc +=
                                    (double)
                                        inp[(((size_t)n * s->h + iy) * s->w + ix) * s->cin + ci] *
                                    w[(size_t)co * k * k * s->cin + ((size_t)ky * k + kx) * s->cin +
                                      ci];
                            }
                    out[(((size_t)n * oh + y) * ow + x) * s->cout + co] = (float)acc;
                }
}

void conv2d_backward_naive(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                           const float *w, const ConvShape *s)
{
    const int oh = conv_out_h(s), ow = conv_out_w(s), k = s->k, cin = s->cin, st = conv_stride(s);
    const size_t wsize = (size_t)s->cout * k * k * cin;
    memset(dw, 0, wsize * sizeof(float));
    if (db) memset(db, 0, (size_t)s->cout * sizeof(float));
    if (dinp) memset(dinp, 0, (size_t)s->n * s->h * s->w * cin * sizeof(float));
    for (int n = 0; n < s->n; n++)
        for (int y = 0; y < oh; y++)
            for (int x = 0; x < ow; x++)
                for (int co = 0; co < s->cout; co++) {
                    float g = dout[(((size_t)n * oh + y) * ow + x) * s->cout + co];
                    if (db) db[co] += g;
                    for (int ky = 0; ky < k; ky++)
                        for (int kx = 0; kx < k; kx++) {
                            int iy = y * st + ky - s->pad, ix = x * st + kx - s->pad;
                            if (iy < 0 || iy >= s->h || ix < 0 || ix >= s->w) continue;
                            for (int ci = 0; ci < cin; ci++) {
                                size_t ii = (((size_t)n * s->h + iy) * s->w + ix) * cin + ci;
                                size_t wi =
                                    (size_t)co * k * k * cin + ((size_t)ky * k + kx) * cin + ci;
                                dw[wi] += g * inp[ii];
                                if (dinp) dinp[ii] += g * w[wi];
                            }
                        }
                }
}

void maxpool2_forward(float *out, int32_t *argmax, const float *inp, int n, int h, int w, int c)
{
    const int oh = h / 2, ow = w / 2;
    for (int b = 0; b < n; b++)
        for (int y = 0; y < oh; y++)
            for (int x = 0; x < ow; x++) {
                /* the window's four pixels, channels contiguous in each (NHWC) */
                int32_t i00 = (int32_t)((((size_t)b * h + 2 * y) * w + 2 * x) * c);
                int32_t i01 = i00 + c, i10 = i00 + w * c, i11 = i10 + c;
                size_t o = (((size_t)b * oh + y) * ow + x) * c;
                for (int ch = 0; ch < c; ch++) {
                    float best = inp[i00 + ch];
                    int32_t at = i00 + ch;
                    if (inp[i01 + ch] > best) best = inp[i01 + ch], at = i01 + ch;
                    if (inp[i10 + ch] > best) best = inp[i10 + ch], at = i10 + ch;
                    if (inp[i11 + ch] > best) best = inp[i11 + ch], at = i11 + ch;
                    out[o + ch] = best;
                    argmax[o + ch] = at;
                }
            }
}

void maxpool2_backward(float *dinp, const float *dout, const int32_t *argmax, int n, int h, int w,
                       int c)
{
    memset(dinp, 0, (size_t)n * h * w * c * sizeof(float));
    size_t count = (size_t)n * (h / 2) * (w / 2) * c;
    for (size_t o = 0; o < count; o++) dinp[argmax[o]] += dout[o];
}

/* ---- batch normalisation ----
 * The fast kernels walk the rows once per pass with the channels innermost (contiguous in NHWC)
 * and sum in double, BN_BLOCK channels at a time so the sums fit on the stack; the naive twins
 * walk one channel at a time down the rows. */
enum { BN_BLOCK = 64 };

/* The batch's mean and biased variance of channels [c0, c0 + nb), two passes. */
static void bn_moments(double *mean, double *var, const float *x, int rows, int c, int c0, int nb)
{
    for (int j = 0; j < nb; j++) mean[j] = var[j] = 0.0;
    for (int r = 0; r < rows; r++) {
        const float *row = x + (size_t)r * c + c0;
        for (int j = 0; j < nb; j++) mean[j] += row[j];
    }
    for (int j = 0; j < nb; j++) mean[j] /= rows;
    for (int r = 0; r < rows; r++) {
        const float *row = x + (size_t)r * c + c0;
        for (int j = 0; j < nb; j++) {
            double d = row[j] - mean[j];
            var[j] += d * d;
        }
    }
    for (int j = 0; j < nb; j++) var[j] /= rows;
}

/* PyTorch's update of the running statistics (unbiased variance). */
static void bn_update_running(float *run_mean, float *run_var, double mean, double var, int rows,
                              float momentum)
{
    double unbiased = rows > 1 ? var * rows / (rows - 1) : var;
    *run_mean = (float)((1.0 - momentum) * *run_mean + momentum * mean);
    *run_var = (float)((1.0 - momentum) * *run_var + momentum * unbiased);
}

void batchnorm_forward(float *out, float *xhat, float *rstd, float *run_mean, float *run_var,
                       const float *x, const float *gamma, const float *beta, int rows, int c,
                       float momentum, float eps)
{
    for (int c0 = 0; c0 < c; c0 += BN_BLOCK) {
        int nb = c - c0 < BN_BLOCK ? c - c0 : BN_BLOCK;
        double mean[BN_BLOCK], var[BN_BLOCK];
        float mu[BN_BLOCK], rs[BN_BLOCK];
        bn_moments(mean, var, x, rows, c, c0, nb);
        for (int j = 0; j < nb; j++) {
            mu[j] = (float)mean[j];
            rs[j] = rstd[c0 + j] = (float)(1.0 / sqrt(var[j] + eps));
            bn_update_running(run_mean + c0 + j, run_var + c0 + j, mean[j], var[j], rows, momentum);
        }
        const float *g = gamma + c0, *b = beta + c0;
        for (int r = 0; r < rows; r++) {
            size_t at = (size_t)r * c + c0;
            for (int j = 0; j < nb; j++) {
                float h = (x[at + j] - mu[j]) * rs[j];
                xhat[at + j] = h;
                out[at + j] = g[j] * h + b[j];
            }
        }
    }
}

void batchnorm_forward_eval(float *out, const float *x, const float *gamma, const float *beta,
                            const float *run_mean, const float *run_var, int rows, int c, float eps)
{
    for (int c0 = 0; c0 < c; c0 += BN_BLOCK) {
        int nb = c - c0 < BN_BLOCK ? c - c0 : BN_BLOCK;
        float scale[BN_BLOCK], shift[BN_BLOCK];
        for (int j = 0; j < nb; j++) {
            int ch = c0 + j;
            scale[j] = (float)(gamma[ch] / sqrt((double)run_var[ch] + eps));
            shift[j] = beta[ch] - scale[j] * run_mean[ch];
        }
        for (int r = 0; r < rows; r++) {
            size_t at = (size_t)r * c + c0;
            for (int j = 0; j < nb; j++) out[at + j] = scale[j] * x[at + j] + shift[j];
        }
    }
}

void batchnorm_backward(float *dx, float *dgamma, float *dbeta, const float *dout,
                        const float *xhat, const float *rstd, const float *gamma, int rows, int c)
{
    for (int c0 = 0; c0 < c; c0 += BN_BLOCK) {
        int nb = c - c0 < BN_BLOCK ? c - c0 : BN_BLOCK;
        double sd[BN_BLOCK] = {0}, sdh[BN_BLOCK] = {0};
        for (int r = 0; r < rows; r++) {
            size_t at = (size_t)r * c + c0;
            for (int j = 0; j < nb; j++) {
                sd[j] += dout[at + j];
                sdh[j] += (double)dout[at + j] * xhat[at + j];
            }
        }
        float k[BN_BLOCK], md[BN_BLOCK], mdh[BN_BLOCK];
        for (int j = 0; j < nb; j++) {
            int ch = c0 + j;
            dgamma[ch] = (float)sdh[j];
            dbeta[ch] = (float)sd[j];
            k[j] = gamma[ch] * rstd[ch];
            md[j] = (float)(sd[j] / rows);
            mdh[j] = (float)(sdh[j] / rows);
        }
        for (int r = 0; r < rows; r++) {
            size_t at = (size_t)r * c + c0;
            for (int j = 0; j < nb; j++)
                dx[at + j] = k[j] * (dout[at + j] - md[j] - xhat[at + j] * mdh[j]);
        }
    }
}

void batchnorm_forward_naive(float *out, float *xhat, float *rstd, float *run_mean, float *run_var,
                             const float *x, const float *gamma, const float *beta, int rows, int c,
                             float momentum, float eps)
{
    for (int ch = 0; ch < c; ch++) {
        double mean = 0, var = 0;
        for (int r = 0; r < rows; r++) mean += x[(size_t)r * c + ch];
        mean /= rows;
        for (int r = 0; r < rows; r++) {
            double d = x[(size_t)r * c + ch] - mean;
            var += d * d;
        }
        var /= rows;
        double rs = 1.0 / sqrt(var + eps);
        rstd[ch] = (float)rs;
        for (int r = 0; r < rows; r++) {
            size_t i = (size_t)r * c + ch;
            double h = (x[i] - mean) * rs;
            out[i] = (float)(gamma[ch] * h + beta[ch]);
            xhat[i] = (float)h;
        }
        bn_update_running(run_mean + ch, run_var + ch, mean, var, rows, momentum);
    }
}

void batchnorm_backward_naive(float *dx, float *dgamma, float *dbeta, const float *dout,
                              const float *xhat, const float *rstd, const float *gamma, int rows,
                              int c)
{
    for (int ch = 0; ch < c; ch++) {
        double sd = 0, sdh = 0;
        for (int r = 0; r < rows; r++) {
            size_t i = (size_t)r * c + ch;
            sd += dout[i];
            sdh += (double)dout[i] * xhat[i];
        }
        dgamma[ch] = (float)sdh;
        dbeta[ch] = (float)sd;
        for (int r = 0; r < rows; r++) {
            size_t i = (size_t)r * c + ch;
            dx[i] = (float)((double)gamma[ch] * rstd[ch] / rows *
                            ((double)rows * dout[i] - sd - xhat[i] * sdh));
        }
    }
}

void avgpool_forward(float *out, const float *inp, int n, int hw, int c)
{
    for (int b = 0; b < n; b++) {
        float *o = out + (size_t)b * c;
        for (int ch = 0; ch < c; ch++) o[ch] = 0.0f;
        for (int p = 0; p < hw; p++) {
            const float *row = inp + ((size_t)b * hw + p) * c;
            for (int ch = 0; ch < c; ch++) o[ch] += row[ch];
        }
        for (int ch = 0; ch < c; ch++) o[ch] /= (float)hw;
    }
}

void avgpool_backward(float *dinp, const float *dout, int n, int hw, int c)
{
    const float inv = 1.0f / (float)hw;
    for (int b = 0; b < n; b++)
        for (int p = 0; p < hw; p++) {
            float *row = dinp + ((size_t)b * hw + p) * c;
            for (int ch = 0; ch < c; ch++) row[ch] = dout[(size_t)b * c + ch] * inv;
        }
}

double softmax_xent(float *dlogits, const float *logits, const uint8_t *labels, int n, int c)
{
    double loss = 0.0;
    const float inv_n = 1.0f / (float)n;
    for (int r = 0; r < n; r++) {
        const float *z = logits + (size_t)r * c;
        float *d = dlogits + (size_t)r * c;
        float mx = z[0];
        for (int j = 1; j < c; j++) mx = z[j] > mx ? z[j] : mx;
        double sum = 0.0;
        for (int j = 0; j < c; j++) sum += exp((double)(z[j] - mx));
        double logsum = log(sum) + mx;
        loss += logsum - z[labels[r]];
        for (int j = 0; j < c; j++) d[j] = (float)exp((double)z[j] - logsum) * inv_n;
        d[labels[r]] -= inv_n;
    }
    return loss / n;
}
