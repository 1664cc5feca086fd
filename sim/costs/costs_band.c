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

void costs_band_scaled(const CostProfile *p, const double f[COST_GROUP_COUNT], CostProfile *out)
{
    *out = *p;
    const double fc = f[COST_GROUP_COMPUTE], ff = f[COST_GROUP_FIXED], fo = f[COST_GROUP_OPS],
                 fn = f[COST_GROUP_NETWORKS];
    for (int i = 0; i < 3; i++) out->efficiency[i] /= fc;
    for (int w = 0; w < out->n_workload_eff; w++)
        for (int i = 0; i < 3; i++) out->workload_eff[w].efficiency[i] /= fc;
    out->tensor_s *= ff;
    out->kernel_s *= ff;
    out->collective_s *= ff;
    /* a background thread's cycle is a fixed cost (README.md: "that thread's cycle"): the
     * profile's and Horovod's, which costs_horovod.c keeps equal and plans the fused calls by */
    out->cycle_s *= ff;
    out->horovod.cycle_s *= ff;
    for (int s = 0; s < out->n_sched_cost; s++) out->sched_cost[s].partition_s *= ff;
    for (int op = 0; op < COST_OP_COUNT; op++)
        for (int i = 0; i < out->ops[op].n_points; i++) out->ops[op].points[i].rate /= fo;
    for (int n = 0; n < COST_NET_COUNT; n++) {
        CostNetShare *x = &out->net[n];
        x->allreduce /= fn;
        x->allgather /= fn;
        x->socket_cap_Bps /= fn;
        x->cap_Bps /= fn;
        for (int t = 0; t < 2; t++)
            for (int k = 0; k < x->n_tables[t]; k++)
                for (int i = 0; i < x->tables[t][k].n; i++) x->tables[t][k].busbw_Bps[i] /= fn;
    }
}
