/* results.h: a simulated run's output files, each written atomically (outfile.h):
 *   summary.json  the resolved scenario and the headline figures (time to accuracy, bytes,
 *                 the compute / communication / wait split, wall time)
 *   evals.csv     one row per evaluation on the test set
 *   steps.csv     one row per step: time, loss, bytes, the decision */
#ifndef BELLOWS_RESULTS_H
#define BELLOWS_RESULTS_H

#include "driver.h"

typedef struct {
    const char *command; /* "run", "compare", "replay" or "sweep" */
    const char *model;
    const char *network_model; /* exact | tcp */
    const char *collectives;   /* transfer | analytic */
    double wall_s;
    double target_accuracy; /* for the time to accuracy's resolution */
    /* --cost-band's draws (issue 48): K >= 2 adds the run's band to summary.json, its
     * cost_band_* keys (results_band.c), when its profile states an uncertainty; 0: none */
    int cost_band;
    long band_after_step; /* > 0 (bench): also the mean of the steps after this many */
} RunMeta;

int results_write(const char *dir, const RunConfig *cfg, const RunMeta *meta, const RunResult *res,
                  BwError *err);

/* The one-screen summary printed by `bellows run`; evals says when the run evaluated ("every
 * 5 steps"), for the time to accuracy's resolution. */
void results_print(FILE *out, const RunConfig *cfg, const RunResult *res, const char *evals);

/* The resolution of res's time to accuracy: simulated seconds from the evaluation before the
 * one that first reached target to that one (the crossing lies in between); 0 when the
 * untrained model reached it; NAN when it was never reached. */
double results_tta_resolution(const RunResult *res, double target);

#endif
