/* cost_band.c: compare's cost band (cost_band.h). */
#include "cost_band.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>

#include "breakdown.h"
#include "costs_band.h"
#include "runner.h"
#include "spec.h"
#include "xalloc.h"

int cost_band_ttas(const char *dir, double tta, const double r[COST_GROUP_COUNT], int K,
                   double *out)
{
    double books[4];
    if (!isfinite(tta)) {
        for (int d = 0; d < K; d++) out[d] = NAN;
        return 0;
    }
    if (breakdown_books(dir, tta, books)) return -1;
    for (int d = 0; d < K; d++) out[d] = costs_band_draw(r, d, tta, books);
    return 0;
}

void cost_band_interval(const double *base, const double *tta, int n_seeds, int K, double *lo,
                        double *hi)
{
    double *los = bw_xcalloc((size_t)K, sizeof *los, "cost band: lower ends"),
           *his = bw_xcalloc((size_t)K, sizeof *his, "cost band: upper ends");
    double b[64], t[64], sp[64];
    *lo = *hi = NAN;
    for (int d = 0; d < K; d++) {
        for (int i = 0; i < n_seeds && i < 64; i++) {
            b[i] = base[i * K + d];
            t[i] = tta[i * K + d];
        }
        if (runner_paired_speedups(b, t, n_seeds, sp) != n_seeds) goto done;
        double g, l, h;
        runner_speedup_ci(sp, n_seeds, &g, &l, &h);
        los[d] = n_seeds > 1 ? l : g;
        his[d] = n_seeds > 1 ? h : g;
    }
    gsl_sort(los, 1, (size_t)K);
    gsl_sort(his, 1, (size_t)K);
    *lo = gsl_stats_quantile_from_sorted_data(los, 1, (size_t)K, 0.025);
    *hi = gsl_stats_quantile_from_sorted_data(his, 1, (size_t)K, 0.975);
done:
    free(los);
    free(his);
}

/* The run of seed i and policy k's folder below out, as compare names it. */
static void run_dir(const char *out, int seed, int k, const char *spec, char *dir, size_t n)
{
    char folder[SPEC_MAX_TEXT + 8];
    runner_folder_name(k, spec, folder, sizeof folder);
    snprintf(dir, n, "%.4000s/seed-%d/%.300s", out, seed, folder);
}

int cost_band_compare(const CostProfile *prof, int K, const char *out, int n_pol, int n_seeds,
                      const int *seeds, const char *const *specs, const double *tta, double *lo,
                      double *hi)
{
    const int n = n_pol * n_seeds;
    double *t = bw_xcalloc((size_t)n * (size_t)K, sizeof *t, "cost band: times");
    int rc = 0;
    char dir[4400];
    for (int j = 0; j < n && !rc; j++) {
        run_dir(out, seeds[j / n_pol], j % n_pol, specs[j % n_pol], dir, sizeof dir);
        rc = cost_band_ttas(dir, tta[j], prof->uncertainty, K, t + (size_t)j * K);
    }
    double *b = bw_xcalloc((size_t)n_seeds * (size_t)K, sizeof *b, "cost band: a policy's"),
           *x = bw_xcalloc((size_t)n_seeds * (size_t)K, sizeof *x, "cost band: a policy's");
    for (int k = 0; k < n_pol; k++) {
        lo[k] = hi[k] = NAN;
        if (rc || k == 0) continue;
        for (int i = 0; i < n_seeds; i++)
            for (int d = 0; d < K; d++) {
                b[i * K + d] = t[(size_t)(i * n_pol) * K + d];
                x[i * K + d] = t[(size_t)(i * n_pol + k) * K + d];
            }
        cost_band_interval(b, x, n_seeds, K, &lo[k], &hi[k]);
    }
    free(t);
    free(b);
    free(x);
    return rc;
}
