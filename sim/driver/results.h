/* results.h: a simulated run's output files, each written atomically (outfile.h):
 *   summary.json  the resolved scenario and the headline figures (time to accuracy, bytes,
 *                 the compute / communication / wait split, wall time)
 *   evals.csv     one row per evaluation on the test set
 *   steps.csv     one row per step: time, loss, bytes, the decision */
#ifndef BELLOWS_RESULTS_H
#define BELLOWS_RESULTS_H

#include "driver.h"

typedef struct {
    const char *command; /* "run" or "compare" */
    const char *model;
    const char *network_model; /* exact | tcp */
    const char *collectives;   /* transfer | analytic */
    double wall_s;
} RunMeta;

int results_write(const char *dir, const RunConfig *cfg, const RunMeta *meta, const RunResult *res,
                  BwError *err);

/* The one-screen summary printed by `bellows run`. */
void results_print(FILE *out, const RunConfig *cfg, const RunResult *res);

#endif
