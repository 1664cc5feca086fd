/* half.h: IEEE 754 binary16 ("fp16", half precision) stored in a uint16_t, converted to and
 * from binary32 in portable C (no F16C, so results are the same on every x86-64 and any other
 * machine). float -> half rounds to nearest, ties to even, as IEEE 754-2008 Section 4.3.1
 * prescribes and as CUDA's __float2half_rn does; overflow gives infinity, NaN stays NaN. */
#ifndef BELLOWS_HALF_H
#define BELLOWS_HALF_H

#include <stddef.h>
#include <stdint.h>

uint16_t half_from_float(float f);
float half_to_float(uint16_t h); /* exact: every half is a float */

/* Array forms: out[i] = conversion of in[i], i < n. */
void half_encode(const float *in, uint16_t *out, size_t n);
void half_decode(const uint16_t *in, float *out, size_t n);

#endif
