/* conv_simd.h (internal to models/, used by conv_fast.c): the inner loops of conv_fast.c's
 * kernels, each in portable C and in AVX2 intrinsics. Both versions do the same float
 * operations in the same order (a multiply, then an add: no FMA), so they give the same bits;
 * conv_fast.c uses the AVX2 ones where the CPU has AVX2 (avx2 != 0).
 * The direct kernels, over one image:
 *   xp  [h + 2 pad, w + 2 pad, cin]  the image with its zero border
 *   wt  [k*k*cin, coutp]             the weights transposed, output channels padded with
 *                                    zeros to coutp, a multiple of CONV_SIMD_LANES
 *   bp  [coutp]                      the bias, padded likewise
 * out and arg as in conv_fast.h, for this image. The backward adds this image's weight and
 * bias gradients to dwt [k*k*cin, coutp] and dbp [coutp]. */
#ifndef BELLOWS_CONV_SIMD_H
#define BELLOWS_CONV_SIMD_H

#include <stdint.h>

#include "layers.h"

/* Output channels per block of the direct kernels: two AVX2 registers of 8 floats. */
enum { CONV_SIMD_LANES = 16 };

/* Whether this CPU runs the AVX2 versions. */
int conv_simd_have_avx2(void);

void conv_simd_direct_forward(float *out, uint8_t *arg, const float *xp, const float *wt,
                              const float *bp, const ConvShape *s, int avx2);
void conv_simd_direct_backward(float *dwt, float *dbp, const float *dout, const float *out,
                               const uint8_t *arg, const float *xp, const ConvShape *s, int avx2);

/* relu_maxpool2_backward (conv_fast.h). */
void conv_simd_unpool(float *dinp, const float *dout, const float *out, const uint8_t *arg, int n,
                      int h, int w, int c, int avx2);

/* layers.c's im2col: col [n*oh*ow, k*k*cin] (the same bits: copies). */
void conv_simd_im2col(float *col, const float *inp, const ConvShape *s, int avx2);

/* layers.c's col2im, as a gather: each input pixel of dinp [n, h, w, cin] sums the entries of
 * dcol [n*oh*ow, k*k*cin] that read it, in the order col2im adds them (output pixels in
 * raster order, so taps in reverse), which makes it equal to the bit. */
void conv_simd_col2im(float *dinp, const float *dcol, const ConvShape *s, int avx2);

#endif
