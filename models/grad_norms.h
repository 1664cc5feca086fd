/* grad_norms.h: the per-layer L2 norms of a model's gradient that Accordion reads (its
 * critical-regime signal), and the epoch's running sum of the gradients, in one pass. A layer's
 * squares g[i]^2 are summed in float over blocks of GRAD_NORM_BLOCK elements, each block one
 * chain of additions in order, and the blocks' sums added in double in block order; so the
 * rounding stays near 1e-7 relative whatever the layer's size. */
#ifndef BELLOWS_GRAD_NORMS_H
#define BELLOWS_GRAD_NORMS_H

#include "model.h"

enum { GRAD_NORM_BLOCK = 1024 };

/* norms[l] = ||grads of layer l|| and gsum += grads, for every layer of m. Several blocks' chains
 * at once (SSE2 lanes where there are any), each with its own bits: the naive twin's. */
void grad_norms_and_sum(const Model *m, double *norms, float *gsum);

/* The same, one block after another, one element at a time (tests/test_models.c). */
void grad_norms_and_sum_naive(const Model *m, double *norms, float *gsum);

#endif
