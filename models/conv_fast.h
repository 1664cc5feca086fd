/* conv_fast.h: a convolution block fused with its ReLU and 2x2 max pooling (conv -> ReLU ->
 * maxpool2, the cnn's two blocks), computed without materialising the full-resolution
 * activation, its im2col matrix or their gradients. Two ways, same interface:
 *   direct: a loop over the taps, vectorised over the output channels, for small patches
 *           (k*k*cin of 9 in the cnn's first layer, where im2col + sgemm is a product with
 *           K = 9); its backward gives the weight and bias gradients only (a first layer);
 *   gemm:   im2col + OpenBLAS sgemm, a few images at a time so that the patches, the
 *           activations and their gradients stay in cache.
 * Activations are NHWC, weights [cout, k*k*cin] as in layers.h. The pooled output is
 * out [n, oh/2, ow/2, cout] (after the ReLU); arg, per pooled value, is the window position of
 * the maximum, 0..3 for (0,0), (0,1), (1,0), (1,1), first on ties. Same values as layers.h's
 * conv2d_forward, relu_forward and maxpool2_forward in turn (convpool_forward_naive), up to
 * the order of the sums. Scratch is the caller's, of the size the _scratch functions give;
 * every kernel overwrites its outputs. The inner loops are in AVX2 where the CPU has it and in
 * portable C elsewhere (conv_simd.h), with the same bits: results do not depend on the CPU
 * beyond what OpenBLAS's sgemm does (blas_cpu.h). */
#ifndef BELLOWS_CONV_FAST_H
#define BELLOWS_CONV_FAST_H

#include <stddef.h>
#include <stdint.h>

#include "layers.h"

/* Pooled values of one block: n * (oh/2) * (ow/2) * cout. */
size_t convpool_out_size(const ConvShape *s);

/* The largest patch (k*k*cin) for which the cnn uses the direct kernels. */
enum { CONVPOOL_DIRECT_MAX_PATCH = 32 };

/* Images per block of the gemm kernels for shape s (a constant of the shape). */
int convpool_gemm_block_images(const ConvShape *s);

/* Floats of scratch each kernel needs for shape s (any n). */
size_t convpool_direct_scratch(const ConvShape *s);
size_t convpool_gemm_scratch(const ConvShape *s);

void convpool_direct_forward(float *out, uint8_t *arg, const float *inp /* [n, h, w, cin] */,
                             const float *w, const float *b, const ConvShape *s, float *scratch);
/* dw [cout, k*k*cin], db [cout] from dout (the gradient of out) and the forward's out, arg. */
void convpool_direct_backward(float *dw, float *db, const float *dout, const float *out,
                              const uint8_t *arg, const float *inp, const ConvShape *s,
                              float *scratch);

/* The same in portable C whatever the CPU (the above use AVX2 where there is): same bits. */
void convpool_direct_forward_portable(float *out, uint8_t *arg, const float *inp, const float *w,
                                      const float *b, const ConvShape *s, float *scratch);
void convpool_direct_backward_portable(float *dw, float *db, const float *dout, const float *out,
                                       const uint8_t *arg, const float *inp, const ConvShape *s,
                                       float *scratch);

void convpool_gemm_forward(float *out, uint8_t *arg, const float *inp, const float *w,
                           const float *b, const ConvShape *s, float *scratch);
/* As above, and dinp [n, h, w, cin] unless NULL. */
void convpool_gemm_backward(float *dinp, float *dw, float *db, const float *dout, const float *out,
                            const uint8_t *arg, const float *inp, const float *w,
                            const ConvShape *s, float *scratch);

/* ReLU then 2x2 max pooling of inp [n, h, w, c] (odd trailing rows and columns dropped), and
 * its backward: dinp [n, h, w, c] is zeroed, then each window's maximum receives dout where
 * out > 0 (where the ReLU passed it). */
void relu_maxpool2_forward(float *out, uint8_t *arg, const float *inp, int n, int h, int w, int c);
void relu_maxpool2_backward(float *dinp, const float *dout, const float *out, const uint8_t *arg,
                            int n, int h, int w, int c);

/* Naive twins: layers.h's unfused kernels in turn (conv2d_*_naive, relu, maxpool2). Scratch:
 * act, n * oh * ow * cout floats for the forward and twice that for the backward, and at, as
 * many int32. The backward recomputes the forward; dinp may be NULL. */
void convpool_forward_naive(float *out, const float *inp, const float *w, const float *b,
                            const ConvShape *s, float *act, int32_t *at);
void convpool_backward_naive(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                             const float *w, const float *b, const ConvShape *s, float *act,
                             int32_t *at);

#endif
