/* costs_band.c: a profile's cost band drawn (costs_band.h). */
#include "costs_band.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "splitmix.h"
#include "xalloc.h"

int costs_band_parse(const char *text, int *k, BwError *err)
{
    if (strcmp(text, "off") == 0) {
        *k = 0;
        return BW_OK;
    }
    char *end;
    long v = strtol(text, &end, 10);
    if (*text == '\0' || *end != '\0' || v < 2 || v > COSTS_BAND_MAX)
        return bw_fail(err, BW_EUSAGE,
                       "--cost-band: expected off or a number of draws from 2 to %d, got \"%s\"",
                       COSTS_BAND_MAX, text);
    *k = (int)v;
    return BW_OK;
}

double costs_band_factor(const double r[COST_GROUP_COUNT], int d, CostGroup g)
{
    /* its own stream: "costband" + d, then the group (splitmix.h) */
    uint64_t z = splitmix64(splitmix64(0x636f737462616e64ULL + (uint64_t)d) + (uint64_t)g);
    double u = (double)(z >> 11) * 0x1p-53; /* 53 bits: uniform on [0, 1) */
    return 1 + r[g] * (2 * u - 1);
}

double costs_band_draw(const double r[COST_GROUP_COUNT], int d, double t,
                       const double books[COSTS_BOOKS])
{
    return t + books[COSTS_BOOK_COMPUTE] * (costs_band_factor(r, d, COST_GROUP_COMPUTE) - 1) +
           books[COSTS_BOOK_COMPRESSION] * (costs_band_factor(r, d, COST_GROUP_OPS) - 1) +
           books[COSTS_BOOK_COMMUNICATION] * (costs_band_factor(r, d, COST_GROUP_NETWORKS) - 1);
}

static int by_value(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double costs_band_quantile(const double *x, int n, double q)
{
    const double delta = q * (n - 1);
    const int i = (int)floor(delta);
    if (i >= n - 1) return x[n - 1];
    return x[i] + (delta - i) * (x[i + 1] - x[i]);
}

void costs_band_range(const double r[COST_GROUP_COUNT], int K, double t,
                      const double books[COSTS_BOOKS], double *lo, double *hi)
{
    *lo = *hi = NAN;
    if (!isfinite(t) || K < 2) return;
    double *x = bw_xcalloc((size_t)K, sizeof *x, "costs_band.c: draws");
    for (int d = 0; d < K; d++) x[d] = costs_band_draw(r, d, t, books);
    qsort(x, (size_t)K, sizeof *x, by_value);
    *lo = costs_band_quantile(x, K, 0.025);
    *hi = costs_band_quantile(x, K, 0.975);
    free(x);
}
