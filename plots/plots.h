/* plots.h: runs the gnuplot scripts of plots/ on result files. Plotting is optional: without
 * gnuplot a run still succeeds and says that no plots were made. */
#ifndef BELLOWS_PLOTS_H
#define BELLOWS_PLOTS_H

#include "../common/status.h"

/* Whether gnuplot can be run. */
int plots_available(void);

/* The plots of a compare folder: runs[i] is the folder of the run labelled labels[i]. */
int plots_compare(const char *dir, const char *const *runs, const char *const *labels, int n,
                  BwError *err);

/* The speedup heatmap of a sweep folder (from its speedup_grid.dat), one panel per policy. */
int plots_sweep(const char *dir, const char *const *labels, int n, BwError *err);

#endif
