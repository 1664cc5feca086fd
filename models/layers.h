/* layers.h: forward/backward kernels for the models, in pairs, with a naive reference kernel
 * beside each fast one (the tests compare them). Activations are row-major with channels last
 * (NHWC). Backward kernels overwrite their outputs (they do not accumulate). A NULL dinp in a
 * backward kernel means "input gradient not needed" (the first layer of a model).
 * Shapes are written next to each pointer. */
#ifndef BELLOWS_LAYERS_H
#define BELLOWS_LAYERS_H

#include <stddef.h>
#include <stdint.h>

/* Fully connected: out = inp W^T + b. A NULL b (and db) means no bias, here and in the
 * convolutions. */
void linear_forward(float *out /* [n, o] */, const float *inp /* [n, i] */,
                    const float *w /* [o, i] */, const float *b /* [o] */, int n, int i, int o);
void linear_backward(float *dinp /* [n, i] or NULL */, float *dw /* [o, i] */, float *db /* [o] */,
                     const float *dout /* [n, o] */, const float *inp /* [n, i] */,
                     const float *w /* [o, i] */, int n, int i, int o);
void linear_forward_naive(float *out, const float *inp, const float *w, const float *b, int n,
                          int i, int o);
void linear_backward_naive(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                           const float *w, int n, int i, int o);

/* In place; the backward uses the forward's output as the mask. */
void relu_forward(float *x, size_t count);
void relu_backward(float *dx /* in: dout, out: dinp */, const float *out, size_t count);

/* 2-D convolution, stride conv_stride, zero padding pad, square kernel k, NHWC. The weight is
 * a matrix [cout, k*k*cin] whose columns are ordered (kh, kw, cin). The fast version is im2col +
 * sgemm: col [n*oh*ow, k*k*cin], out = col W^T + b (that is, linear_forward on the patches).
 * Output pixel (y, x) reads input rows y*stride - pad + [0, k). */
typedef struct {
    int n, h, w, cin, cout, k, pad; /* output is [n, oh, ow, cout] */
    int stride;                     /* 0 or 1: stride 1 (what a shape written without it means) */
} ConvShape;
static inline int conv_stride(const ConvShape *s)
{
    return s->stride > 1 ? s->stride : 1;
}
static inline int conv_out_h(const ConvShape *s)
{
    return (s->h + 2 * s->pad - s->k) / conv_stride(s) + 1;
}
static inline int conv_out_w(const ConvShape *s)
{
    return (s->w + 2 * s->pad - s->k) / conv_stride(s) + 1;
}
static inline size_t conv_col_size(const ConvShape *s)
{
    return (size_t)s->n * (size_t)conv_out_h(s) * (size_t)conv_out_w(s) * (size_t)(s->k * s->k) *
           (size_t)s->cin;
}
void im2col(float *col, const float *inp /* [n, h, w, cin] */, const ConvShape *s);
/* Adds the patch gradients back into dinp (which it zeroes first). */
void col2im(float *dinp /* [n, h, w, cin] */, const float *dcol, const ConvShape *s);
void conv2d_forward(float *out, float *col /* scratch, conv_col_size */, const float *inp,
                    const float *w, const float *b, const ConvShape *s);
/* col must still hold the forward's im2col of inp; dcol is scratch of the same size, unused
 * when dinp is NULL. */
void conv2d_backward(float *dinp, float *dw, float *db, float *dcol, const float *dout,
                     const float *col, const float *w, const ConvShape *s);
void conv2d_forward_naive(float *out, const float *inp, const float *w, const float *b,
                          const ConvShape *s);
void conv2d_backward_naive(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                           const float *w, const ConvShape *s);

/* 2x2 max pooling with stride 2, NHWC; odd trailing rows/columns are dropped. argmax records,
 * per output, the flat input index of the maximum (first one on ties). */
void maxpool2_forward(float *out /* [n, h/2, w/2, c] */, int32_t *argmax, const float *inp, int n,
                      int h, int w, int c);
void maxpool2_backward(float *dinp /* [n, h, w, c], zeroed here */, const float *dout,
                       const int32_t *argmax, int n, int h, int w, int c);

/* Batch normalisation (Ioffe & Szegedy, ICML 2015, Algorithms 1 and 2) of x [rows, c], per
 * channel over the rows (NHWC: rows = n*h*w). Train mode normalises with the batch's mean and
 * biased variance, keeps xhat and rstd = 1/sqrt(var + eps) for the backward, and moves the
 * running statistics as PyTorch's BatchNorm2d does: run = (1 - momentum) run + momentum batch,
 * with the batch's unbiased variance (rows / (rows - 1) times the biased one; the biased one when
 * rows == 1). xhat may be x (in place); out may not alias either. */
void batchnorm_forward(float *out /* [rows, c] */, float *xhat /* [rows, c] */,
                       float *rstd /* [c] */, float *run_mean /* [c] */, float *run_var /* [c] */,
                       const float *x, const float *gamma /* [c] */, const float *beta /* [c] */,
                       int rows, int c, float momentum, float eps);
/* Eval mode: normalises with the running statistics (out may be x). */
void batchnorm_forward_eval(float *out, const float *x, const float *gamma, const float *beta,
                            const float *run_mean, const float *run_var, int rows, int c,
                            float eps);
/* The train mode's backward: dgamma = sum dout*xhat, dbeta = sum dout, and
 * dx = gamma*rstd/rows * (rows*dout - sum dout - xhat * sum dout*xhat). dx may be dout. */
void batchnorm_backward(float *dx /* [rows, c] */, float *dgamma /* [c] */, float *dbeta /* [c] */,
                        const float *dout, const float *xhat, const float *rstd, const float *gamma,
                        int rows, int c);
void batchnorm_forward_naive(float *out, float *xhat, float *rstd, float *run_mean, float *run_var,
                             const float *x, const float *gamma, const float *beta, int rows, int c,
                             float momentum, float eps);
void batchnorm_backward_naive(float *dx, float *dgamma, float *dbeta, const float *dout,
                              const float *xhat, const float *rstd, const float *gamma, int rows,
                              int c);

/* Global average pooling, NHWC: out[b, ch] = mean over the hw pixels of inp[b, :, ch]. */
void avgpool_forward(float *out /* [n, c] */, const float *inp /* [n, hw, c] */, int n, int hw,
                     int c);
void avgpool_backward(float *dinp /* [n, hw, c] */, const float *dout /* [n, c] */, int n, int hw,
                      int c);

/* Mean softmax cross-entropy over n rows; writes dlogits = (softmax - onehot) / n.
 * The sum is kept and returned in double. */
double softmax_xent(float *dlogits /* [n, c] */, const float *logits /* [n, c] */,
                    const uint8_t *labels, int n, int c);

#endif
