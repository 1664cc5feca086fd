/* band.c: sweep --cost-band (sweep_impl.h): each point's profile's stated ranges, noted as the
 * points are checked, and a policy's speedup band over seeds and costs at a point, from its
 * runs' and the baseline's steps.csv as compare's (sim/cli/cost_band.h): each run's time to
 * accuracy re-priced first-order under the same K seeded draws. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_sort.h>

#include "cost_band.h"
#include "costs_band.h"
#include "sweep_impl.h"
#include "xalloc.h"

void sweep_band_note(Sweep *s, long p, const RunConfig *cfg)
{
    if (!s->band_k) return;
    if (!s->band_r) {
        s->band_r = bw_xcalloc((size_t)s->n_points, sizeof *s->band_r, "sweep: the bands' ranges");
        s->band_on = bw_xcalloc((size_t)s->n_points, sizeof *s->band_on, "sweep: the bands");
    }
    const CostProfile *c = cfg->costs;
    s->band_on[p] = c && !c->ideal && c->has_uncertainty;
    if (s->band_on[p]) memcpy(s->band_r[p], c->uncertainty, sizeof s->band_r[p]);
}

/* Run r's draws into t[K] (NAN: no time to accuracy, or diverged); -1 if its steps.csv cannot
 * be read. */
static int run_draws(const Sweep *s, long p, long r, double *t)
{
    const Run *run = &s->runs[r];
    const double tta =
        run->row.rc == BW_OK && strcmp(run->row.status, "diverged") != 0 ? run->row.tta : NAN;
    char folder[4096], dir[8300];
    sweep_run_folder(s, r, folder, sizeof folder);
    snprintf(dir, sizeof dir, "%s/%s", s->out, folder);
    return cost_band_ttas(dir, tta, s->band_r[p], s->band_k, t);
}

/* The band of the mean over the seeds of x[i * K + d], over the draws d: NAN if a seed has none. */
static void mean_band(const double *x, int n, int K, double *lo, double *hi)
{
    double *m = bw_xcalloc((size_t)K, sizeof *m, "sweep: the draws' means");
    int ok = 1;
    for (int d = 0; d < K; d++) {
        for (int i = 0; i < n; i++) m[d] += x[(size_t)i * K + d] / n;
        ok &= isfinite(m[d]);
    }
    *lo = *hi = NAN;
    if (ok) {
        gsl_sort(m, 1, (size_t)K);
        *lo = costs_band_quantile(m, K, 0.025);
        *hi = costs_band_quantile(m, K, 0.975);
    }
    free(m);
}

void sweep_band_of(const Sweep *s, long p, int k, double band[SWEEP_BAND_FIGURES])
{
    for (int i = 0; i < SWEEP_BAND_FIGURES; i++) band[i] = NAN;
    if (!s->band_r || !s->band_on[p]) return;
    const int K = s->band_k, n = s->n_seeds;
    double *b = bw_xcalloc((size_t)n * (size_t)K, sizeof *b, "sweep: the baseline's draws"),
           *x = bw_xcalloc((size_t)n * (size_t)K, sizeof *x, "sweep: a policy's draws");
    int ok = 1;
    for (int i = 0; i < n && ok; i++) {
        const long first = (p * n + i) * s->n_policies;
        ok = s->runs[first + k].done && s->runs[first + s->baseline].done &&
             run_draws(s, p, first + s->baseline, b + (size_t)i * K) == 0 &&
             run_draws(s, p, first + k, x + (size_t)i * K) == 0;
    }
    if (ok && k != s->baseline) cost_band_interval(b, x, n, K, &band[0], &band[1]);
    if (ok) mean_band(x, n, K, &band[2], &band[3]);
    free(b);
    free(x);
}
