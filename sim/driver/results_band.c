/* results_band.c: a run's cost band in its summary.json (issue 48; results.h RunMeta.cost_band):
 * its time to accuracy, its whole simulated time and (bench) its timed steps' mean, each
 * re-priced first-order under the cost profile's K seeded draws (costs_band.h) from rank 0's
 * books in its steps, as the 2.5th and 97.5th percentiles of the draws. Scalar keys, one a line
 * (cost_band_*), so that a reader of the old keys reads the file as before. */
#include <math.h>

#include "costs_band.h"
#include "results_impl.h"

/* Rank 0's books of steps [from, to): compute, compression and communication seconds. */
static void books_of(const RunResult *res, long from, long to, double books[COSTS_BOOKS])
{
    for (int b = 0; b < COSTS_BOOKS; b++) books[b] = 0;
    for (long i = from; i < to; i++) {
        books[COSTS_BOOK_COMPUTE] += res->steps[i].compute_s;
        books[COSTS_BOOK_COMPRESSION] += res->steps[i].compress_s;
        books[COSTS_BOOK_COMMUNICATION] += res->steps[i].comm_s;
    }
}

void results_band_keys(JsonW *w, const RunConfig *cfg, const RunMeta *meta, const RunResult *res)
{
    const CostProfile *p = cfg->costs;
    const int K = meta->cost_band;
    if (K < 2 || !p || p->ideal || !p->has_uncertainty || res->n_steps < 1) return;
    double books[COSTS_BOOKS], lo, hi, tta = res->time_to_accuracy_s;
    long to = 0; /* the steps that end by the time to accuracy */
    while (isfinite(tta) && to < res->n_steps && res->steps[to].end_s <= tta) to++;
    jsonw_long(w, "cost_band_draws", K);
    books_of(res, 0, to, books);
    costs_band_range(p->uncertainty, K, tta, books, &lo, &hi);
    jsonw_double(w, "cost_band_tta_low_s", lo);
    jsonw_double(w, "cost_band_tta_high_s", hi);
    books_of(res, 0, res->n_steps, books);
    costs_band_range(p->uncertainty, K, res->sim_time_s, books, &lo, &hi);
    jsonw_double(w, "cost_band_sim_time_low_s", lo);
    jsonw_double(w, "cost_band_sim_time_high_s", hi);
    const long after = meta->band_after_step, n = res->n_steps - after;
    if (after > 0 && n > 0) { /* bench: the mean of its timed steps */
        books_of(res, after, res->n_steps, books);
        const double t = res->steps[res->n_steps - 1].end_s - res->steps[after - 1].end_s;
        costs_band_range(p->uncertainty, K, t, books, &lo, &hi);
        jsonw_double(w, "cost_band_step_low_s", lo / (double)n);
        jsonw_double(w, "cost_band_step_high_s", hi / (double)n);
    }
}
