/* testutil.h: helpers shared by the CMocka suites: seeded random fills, error measures,
 * scratch folders, and running the bellows binary with its output captured. Header-only;
 * every function is static so each test executable takes what it uses. */
#ifndef BELLOWS_TESTUTIL_H
#define BELLOWS_TESTUTIL_H

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* A small deterministic generator (xorshift64*), independent of GSL, so test inputs do not
 * share a stream with the code under test. */
typedef struct {
    uint64_t s;
} TestRng;

static inline double trng_uniform(TestRng *r)
{
    r->s ^= r->s >> 12;
    r->s ^= r->s << 25;
    r->s ^= r->s >> 27;
    return (double)((r->s * 2685821657736338717ULL) >> 11) * (1.0 / 9007199254740992.0);
}

static inline void fill_uniform(float *x, size_t n, double lo, double hi, uint64_t seed)
{
    TestRng r = {seed * 0x9E3779B97F4A7C15ULL + 1};
    for (size_t i = 0; i < n; i++) x[i] = (float)(lo + (hi - lo) * trng_uniform(&r));
}

/* ||a - b|| / max(||a||, ||b||, tiny) */
static inline double rel_err(const float *a, const float *b, size_t n)
{
    double d = 0, na = 0, nb = 0;
    for (size_t i = 0; i < n; i++) {
        d += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
        na += (double)a[i] * a[i];
        nb += (double)b[i] * b[i];
    }
    double den = sqrt(na > nb ? na : nb);
    return sqrt(d) / (den > 1e-30 ? den : 1e-30);
}

static inline double max_abs_diff(const float *a, const float *b, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]);
        m = d > m ? d : m;
    }
    return m;
}

/* A fresh scratch folder under /tmp; the caller removes it with rm_tree. */
static inline void make_tmpdir(char *buf, size_t len)
{
    snprintf(buf, len, "/tmp/bellows-test-XXXXXX");
    assert_non_null(mkdtemp(buf));
}

static inline void rm_tree(const char *dir)
{
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

static inline int file_exists(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f) fclose(f);
    return f != NULL;
}

/* The number of newlines in s. */
static inline int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++) n += *s == '\n';
    return n;
}

/* Reads a whole file into a malloc'd NUL-terminated buffer (NULL if absent). */
static inline char *slurp(const char *path, size_t *len_out)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    size_t got;
    while ((got = fread(buf + len, 1, cap - len - 1, f)) > 0) {
        len += got;
        if (cap - len - 1 == 0) buf = realloc(buf, cap *= 2);
    }
    fclose(f);
    buf[len] = '\0';
    if (len_out) *len_out = len;
    return buf;
}

#endif
