/* half.h: IEEE 754 binary16 ("fp16", half precision) stored in a uint16_t, converted to and
 * from binary32 in portable C (no F16C, so results are the same on every x86-64 and any other
 * machine). float -> half rounds to nearest, ties to even, as IEEE 754-2008 Section 4.3.1
 * prescribes and as CUDA's __float2half_rn does; overflow gives infinity, NaN stays NaN. */
#ifndef BELLOWS_HALF_H
#define BELLOWS_HALF_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Bit layouts (IEEE 754-2008, Section 3.6): binary32 is 1 sign, 8 exponent (bias 127), 23
 * fraction bits; binary16 is 1 sign, 5 exponent (bias 15), 10 fraction bits, so a normal half
 * has float exponent 113..142 and the subnormal halves are the multiples of 2^-24 below 2^-14.
 * half_to_float is exact: every half is a float. */
/* Shifts m right by s (1 <= s <= 31), rounding to nearest, ties to even. */
static inline uint32_t half_shift_round_even_(uint32_t m, int s)
{
    uint32_t q = m >> s, rem = m & ((1u << s) - 1), halfway = 1u << (s - 1);
    if (rem > halfway || (rem == halfway && (q & 1))) q++;
    return q;
}

static inline uint16_t half_from_float(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
    uint32_t a = x & 0x7fffffff;
    if (a >= 0x7f800000) /* inf, or NaN kept quiet with its top fraction bits */
        return (uint16_t)(sign | 0x7c00 | (a > 0x7f800000 ? 0x200 | ((a >> 13) & 0x3ff) : 0));
    if (a >= 0x477ff000) /* >= 65520 = 65504 + half an ulp: rounds (to even) up to infinity */
        return (uint16_t)(sign | 0x7c00);
    if (a >= 0x38800000) { /* normal half: rebias the exponent (127 -> 15), then round the 13
                            * dropped bits to nearest even without a branch: adding 0xfff plus
                            * the kept lowest bit carries exactly when they exceed half, or equal
                            * it with an odd kept part; a carry may bump the exponent */
        uint32_t r = a - (112u << 23);
        return (uint16_t)(sign | ((r + 0xfff + ((r >> 13) & 1)) >> 13));
    }
    if (a <= 0x33000000) /* <= 2^-25, half the smallest subnormal: rounds (to even) to zero */
        return sign;
    /* subnormal half: the value in units of 2^-24, i.e. the 24-bit significand shifted by
     * 126 - exponent (14..24 for exponents 102..112) */
    uint32_t m = (a & 0x7fffff) | 0x800000;
    int e = (int)(a >> 23);
    return (uint16_t)(sign | half_shift_round_even_(m, 126 - e)); /* may round up to 0x400, 2^-14 */
}

static inline float half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff, x;
    if (e == 0) {
        float v = (float)m * 0x1p-24f; /* zero or subnormal, exact */
        return sign ? -v : v;
    }
    if (e == 31)
        x = sign | 0x7f800000 | (m << 13);
    else
        x = sign | ((e + 112) << 23) | (m << 13);
    float f;
    memcpy(&f, &x, sizeof f);
    return f;
}

/* Array forms: out[i] = conversion of in[i], i < n. */
void half_encode(const float *in, uint16_t *out, size_t n);
void half_decode(const uint16_t *in, float *out, size_t n);

#endif
