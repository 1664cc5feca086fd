/* grad_norms.c: see grad_norms.h. The chains of additions are latency-bound one at a time, so
 * blocks are taken GROUP at a time: with SSE2 each lane of a vector is one block's chain (four
 * consecutive elements of four blocks loaded and transposed, so that lane k adds block k's
 * squares in order); a vector multiply then add is the scalar float multiply then add in every
 * lane (no fused multiply-add: C11 does not contract across statements, nor intrinsics without
 * FMA), so every block's sum has the bits of its naive chain. The running sum is added from the
 * same loads, so the gradient is read once. */
#include "grad_norms.h"

#include <math.h>
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

enum { GROUP = 8 }; /* blocks at a time: two vectors of four chains */

/* Block sums of GROUP whole blocks from g into s[GROUP], and acc += g over them (NULL: none),
 * in the same pass. */
static void group_sums(const float *g, float *acc, float *s)
{
#if defined(__SSE2__)
    __m128 v[GROUP / 4];
    for (int q = 0; q < GROUP / 4; q++) v[q] = _mm_setzero_ps();
    for (size_t i = 0; i < GRAD_NORM_BLOCK; i += 4)
        for (int q = 0; q < GROUP / 4; q++) {
            const size_t at = (size_t)q * 4 * GRAD_NORM_BLOCK + i;
            __m128 a[4];
            for (int k = 0; k < 4; k++) {
                a[k] = _mm_loadu_ps(g + at + (size_t)k * GRAD_NORM_BLOCK);
                float *to = acc ? acc + at + (size_t)k * GRAD_NORM_BLOCK : NULL;
                if (to) _mm_storeu_ps(to, _mm_add_ps(_mm_loadu_ps(to), a[k]));
            }
            _MM_TRANSPOSE4_PS(a[0], a[1], a[2], a[3]); /* a[j]: element i + j of the 4 blocks */
            for (int j = 0; j < 4; j++) v[q] = _mm_add_ps(v[q], _mm_mul_ps(a[j], a[j]));
        }
    for (int q = 0; q < GROUP / 4; q++) _mm_storeu_ps(s + 4 * q, v[q]);
#else
    memset(s, 0, sizeof(float) * GROUP);
    for (size_t i = 0; i < GRAD_NORM_BLOCK; i++)
        for (int k = 0; k < GROUP; k++) {
            const size_t at = (size_t)k * GRAD_NORM_BLOCK + i;
            s[k] += g[at] * g[at];
            if (acc) acc[at] += g[at];
        }
#endif
}

/* One block's sum of squares, element after element. */
static float block_sum(const float *g, size_t n)
{
    float s = 0;
    for (size_t i = 0; i < n; i++) s += g[i] * g[i];
    return s;
}

static void add_into(float *restrict acc, const float *restrict g, size_t n)
{
    for (size_t i = 0; i < n; i++) acc[i] += g[i];
}

void grad_norms_and_sum(const Model *m, double *norms, float *gsum)
{
    for (int l = 0; l < m->n_layers; l++) {
        const LayerView *v = &m->layers[l];
        const float *g = m->grads + v->offset;
        const size_t n = layer_size(v);
        float *acc = gsum ? gsum + v->offset : NULL;
        double total = 0;
        size_t lo = 0;
        for (; lo + GROUP * GRAD_NORM_BLOCK <= n; lo += GROUP * GRAD_NORM_BLOCK) {
            float s[GROUP];
            group_sums(g + lo, acc ? acc + lo : NULL, s);
            for (int k = 0; k < GROUP; k++) total += s[k];
        }
        if (acc) add_into(acc + lo, g + lo, n - lo);
        for (; lo < n; lo += GRAD_NORM_BLOCK)
            total += block_sum(g + lo, n - lo < GRAD_NORM_BLOCK ? n - lo : GRAD_NORM_BLOCK);
        norms[l] = sqrt(total);
    }
}

void grad_norms_and_sum_naive(const Model *m, double *norms, float *gsum)
{
    for (int l = 0; l < m->n_layers; l++) {
        const LayerView *v = &m->layers[l];
        const float *g = m->grads + v->offset;
        const size_t n = layer_size(v);
        double total = 0;
        for (size_t lo = 0; lo < n; lo += GRAD_NORM_BLOCK) {
            float s = 0;
            for (size_t i = lo; i < n && i < lo + GRAD_NORM_BLOCK; i++) s += g[i] * g[i];
            total += s;
        }
        norms[l] = sqrt(total);
        if (gsum)
            for (size_t i = 0; i < n; i++) gsum[v->offset + i] += g[i];
    }
}
