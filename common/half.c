/* half.c: the array forms of the binary16 conversions (the scalar ones are inline in half.h,
 * so that the fp16 compressor's loops do not pay a call per element). */
#include "half.h"

void half_encode(const float *in, uint16_t *out, size_t n)
{
    for (size_t i = 0; i < n; i++) out[i] = half_from_float(in[i]);
}

void half_decode(const uint16_t *in, float *out, size_t n)
{
    for (size_t i = 0; i < n; i++) out[i] = half_to_float(in[i]);
}
