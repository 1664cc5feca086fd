/* blockq.c: symmetric block quantization (blockq.h; ZeRO++, Wang et al. 2023, arXiv:2306.10209: qwZ
 * and qgZ). */
#include "blockq.h"

#include <assert.h>
#include <math.h>

float blockq_scale(const float *x, size_t n, int bits)
{
    assert(bits >= 2 && bits <= 8);
    float m = 0;
    for (size_t i = 0; i < n; i++) m = fmaxf(m, fabsf(x[i]));
    return m / (float)((1 << (bits - 1)) - 1);
}

void blockq_roundtrip(const float *x, float *y, size_t n, size_t block, int bits)
{
    assert(block > 0);
    const float qmax = (float)((1 << (bits - 1)) - 1);
    for (size_t lo = 0; lo < n; lo += block) {
        const size_t len = n - lo < block ? n - lo : block;
        const float s = blockq_scale(x + lo, len, bits);
        for (size_t i = lo; i < lo + len; i++) {
            if (!(s > 0)) {
                y[i] = 0.0f;
                continue;
            }
            /* round to nearest (DeepSpeed's __float2int_rn), within [-qmax, qmax] by the step */
            const float q = fminf(fmaxf(rintf(x[i] / s), -qmax), qmax);
            y[i] = q * s;
        }
    }
}

size_t blockq_qwz_block(size_t n)
{
    if (n == 0) return 1;
    const size_t groups = (n + BLOCKQ_QWZ_TARGET - 1) / BLOCKQ_QWZ_TARGET;
    return (n + groups - 1) / groups;
}

double blockq_bytes(size_t n, size_t block, int bits)
{
    const size_t blocks = (n + block - 1) / block;
    return (double)((n * (size_t)bits + 7) / 8) + 4.0 * (double)blocks;
}
