/* half.c: binary16 <-> binary32 conversions (see half.h). Bit layouts (IEEE 754-2008, Section
 * 3.6): binary32 is 1 sign, 8 exponent (bias 127), 23 fraction bits; binary16 is 1 sign, 5
 * exponent (bias 15), 10 fraction bits, so a normal half has float exponent 113..142 and the
 * subnormal halves are the multiples of 2^-24 below 2^-14. */
#include "half.h"

#include <string.h>

/* Shifts m right by s (1 <= s <= 31), rounding to nearest, ties to even. */
static uint32_t shift_round_even(uint32_t m, int s)
{
    uint32_t q = m >> s, rem = m & ((1u << s) - 1), halfway = 1u << (s - 1);
    if (rem > halfway || (rem == halfway && (q & 1))) q++;
    return q;
}

uint16_t half_from_float(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
    uint32_t a = x & 0x7fffffff;
    if (a >= 0x7f800000) /* inf, or NaN kept quiet with its top fraction bits */
        return (uint16_t)(sign | 0x7c00 | (a > 0x7f800000 ? 0x200 | ((a >> 13) & 0x3ff) : 0));
    if (a >= 0x477ff000) /* >= 65520 = 65504 + half an ulp: rounds (to even) up to infinity */
        return (uint16_t)(sign | 0x7c00);
    if (a >= 0x38800000) { /* normal half: rebias the exponent, round the fraction to 10 bits */
        uint32_t h = ((a >> 23) - 112) << 10 | ((a >> 13) & 0x3ff);
        uint32_t rem = a & 0x1fff;
        if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) h++; /* a carry bumps the exponent */
        return (uint16_t)(sign | h);
    }
    if (a <= 0x33000000) /* <= 2^-25, half the smallest subnormal: rounds (to even) to zero */
        return sign;
    /* subnormal half: the value in units of 2^-24, i.e. the 24-bit significand shifted by
     * 126 - exponent (14..24 for exponents 102..112) */
    uint32_t m = (a & 0x7fffff) | 0x800000;
    int e = (int)(a >> 23);
    return (uint16_t)(sign | shift_round_even(m, 126 - e)); /* may round up to 0x400, 2^-14 */
}

float half_to_float(uint16_t h)
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

void half_encode(const float *in, uint16_t *out, size_t n)
{
    for (size_t i = 0; i < n; i++) out[i] = half_from_float(in[i]);
}

void half_decode(const uint16_t *in, float *out, size_t n)
{
    for (size_t i = 0; i < n; i++) out[i] = half_to_float(in[i]);
}
