/* costs_band.h: a profile's cost band drawn (issue 48): draw d's factor of each constant group,
 * uniform within the relative range the profile states ("uncertainty", sim/costs/README.md),
 * from a stream of its own, so that every run, seed and policy is priced under the same K
 * draws; and a recorded time re-priced first-order under them: its compute, compression and
 * communication seconds each scaled by its group's factor, waiting and the overlap held as the
 * run priced them. compare's, sweep's and bench's bands (sim/cli/cost_band.c) and a run's
 * summary.json (results.c) draw from here. */
#ifndef BELLOWS_COSTS_BAND_H
#define BELLOWS_COSTS_BAND_H

#include "costs.h"
#include "status.h"

#define COSTS_BAND_DEFAULT "32" /* --cost-band's draws when not given */
#define COSTS_BAND_MAX     1024

/* --cost-band: "off" (0) or K draws, 2..COSTS_BAND_MAX; else a usage error naming the flag. */
int costs_band_parse(const char *text, int *k, BwError *err);

/* A time's books: the seconds of it spent on compute, compression and communication (rank
 * 0's, as steps.csv's columns; waiting is not re-priced). */
enum { COSTS_BOOK_COMPUTE, COSTS_BOOK_COMPRESSION, COSTS_BOOK_COMMUNICATION, COSTS_BOOKS };

/* Draw d's factor of group g: uniform on [1 - r[g], 1 + r[g]], r a profile's stated ranges
 * (CostProfile.uncertainty). */
double costs_band_factor(const double r[COST_GROUP_COUNT], int d, CostGroup g);

/* Time t of these books under draw d: t + sum of each book times (its group's factor - 1);
 * compute by the compute group's, compression by the operations', communication by the
 * networks'. NAN stays NAN. */
double costs_band_draw(const double r[COST_GROUP_COUNT], int d, double t,
                       const double books[COSTS_BOOKS]);

/* The band of t over draws 0..K-1 (K >= 2): the 2.5th and 97.5th percentiles of the re-priced
 * times (linear between order statistics, as gsl_stats_quantile_from_sorted_data). NAN when t
 * is NAN. */
void costs_band_range(const double r[COST_GROUP_COUNT], int K, double t,
                      const double books[COSTS_BOOKS], double *lo, double *hi);

/* A true re-pricing's profile (issue 48): *out, p with each group's constants scaled so that
 * what they price takes f[g] times as long: the compute's efficiencies (every precision's and
 * every workload's) and the operations' rates divided by f, the networks' shares, caps and
 * bus-bandwidth tables divided by f, the fixed costs (per tensor, kernel, collective call,
 * Horovod's cycle, a schedule's partition) times f. A run's flop rate is resolved from the
 * efficiency at setup (cluster.gpu_flops, sim/net/cluster.c): the caller divides it by f too.
 * What a replay under *out prices is the run's time under draw f, which the first-order band
 * (costs_band_draw) estimates from its books. */
void costs_band_scaled(const CostProfile *p, const double f[COST_GROUP_COUNT], CostProfile *out);

/* The q-th quantile (0..1) of the n sorted values x, linear between order statistics:
 * x[i] + (delta - i) (x[i + 1] - x[i]) at delta = q (n - 1), i = floor(delta) (GSL's
 * gsl_stats_quantile_from_sorted_data, its manual's "Median and Percentiles"). */
double costs_band_quantile(const double *x, int n, double q);

#endif
