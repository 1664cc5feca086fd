/* breakdown.h: compare's time_breakdown.csv (breakdown.c), what its time_breakdown plot draws:
 * one row per policy, "policy,seeds_to_target,seeds,compute_s,compression_s,communication_s,
 * wait_s", rank 0's seconds of each kind summed over the steps up to the run's time to accuracy
 * (a run that did not reach the target: its whole run), the mean over the seeds whose runs
 * finished (seeds; seeds_to_target of them reached it). */
#ifndef BELLOWS_BREAKDOWN_H
#define BELLOWS_BREAKDOWN_H

#include "status.h"

typedef struct {
    int n_pol, n_seeds;
    const char *const *labels;  /* [n_pol]: the policies as the table names them */
    const char *const *folders; /* [seed * n_pol + k]: run folders, below the compare folder */
    const double *tta;          /* [seed * n_pol + k]: time to accuracy (NAN: not reached) */
    const int *failed;          /* [seed * n_pol + k]: 1 for a run without results */
} Breakdown;

/* Rank 0's compute, compression, communication and waiting seconds (in that order) summed over
 * dir/steps.csv's steps that end by until_s (NAN: every step); -1 if it cannot be read. */
int breakdown_books(const char *dir, double until_s, double books[4]);

/* Writes out/time_breakdown.csv (whole, or not at all). */
int breakdown_write(const char *out, const Breakdown *b, BwError *err);

#endif
