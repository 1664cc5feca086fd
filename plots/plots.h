/* plots.h: runs the gnuplot scripts of plots/ on result files. Plotting is optional: without
 * gnuplot a run still succeeds and says that no plots were made. */
#ifndef BELLOWS_PLOTS_H
#define BELLOWS_PLOTS_H

#include "status.h"

/* Whether gnuplot can be run. */
int plots_available(void);

/* The same, said for a command about to draw: 1 when gnuplot is there; 0 after printing that it
 * is not; -1 when a Ctrl-C came while it looked (the caller stops as interrupted: the search
 * runs gnuplot, whose shell took the signal, and a soft SIGINT handler only set the flag). */
int plots_find(void);

/* The plots of a compare folder (PNG and SVG): runs[i] is the folder of the run labelled
 * labels[i]; target (0: none) is marked on the accuracy plot; the time breakdown is
 * dir/time_breakdown.csv's (to the target), or without it compare.csv's (whole runs). */
int plots_compare(const char *dir, const char *const *runs, const char *const *labels, int n,
                  double target, BwError *err);

/* Accuracy and bytes against simulated time for several run folders of dir (a sweep point);
 * scenario (the point's flags, "bandwidth=1Gbps latency=1us") goes into every title. */
int plots_curves(const char *dir, const char *const *runs, const char *const *labels, int n,
                 double target, const char *scenario, BwError *err);

/* The plots of one run folder (PNG and SVG). */
int plots_run(const char *dir, double target, BwError *err);

/* The plots of a bellows cluster folder, from its cluster.json, each job's evals.csv and
 * links.csv: jobs_accuracy_vs_time (every job on the cluster's clock, and alone, dashed) and
 * links_utilisation (the busiest links' use over time; not drawn without links). */
int plots_cluster(const char *dir, BwError *err);

/* The speedup heatmap of a sweep folder, one panel per policy but the baseline, from its
 * speedup_grid.dat: comment lines ("# baseline NAME" and "# seeds N", the seeds each cell's
 * speedup is the mean over, paired by seed, once; then "# policy NAME" before each
 * policy's block; blocks end in two blank lines), rows "x_index y_index log2_speedup x_value
 * y_value label" over the swept bandwidth (x) and latency (y); a cell without a speedup has
 * "-" for log2_speedup and its label says why ("not reached", "not run", "diverged",
 * "failed", "no baseline", "baseline diverged", "baseline not reached"); labels are quoted.
 * Any folder name (but one with a newline) may be given: names reach gnuplot as strings. */
int plots_sweep(const char *dir, BwError *err);

#endif
