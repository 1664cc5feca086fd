/* cost_band.h: compare's cost band (issue 48): each run's time to accuracy priced again under K
 * seeded draws of its cost profile's constants, each group within the relative range the
 * profile states ("uncertainty", sim/costs/README.md), and the speedup's interval over seeds
 * and draws together. A first-order re-pricing of the recorded run: its steps' books up to the
 * target, each scaled by its group's factor (compute by the compute group's, compression by
 * the operations', communication by the networks'; waiting as it was), the split between
 * overlapped and exposed time held as the run priced it. */
#ifndef BELLOWS_COST_BAND_H
#define BELLOWS_COST_BAND_H

#include "costs.h"
#include "status.h"

#include "costs_band.h" /* costs_band_parse: --cost-band's K */

/* The run in dir (its steps.csv), of time to accuracy tta (NAN: not reached, all NAN), under
 * draws 0..K-1 of a profile's stated ranges r (CostProfile.uncertainty): out[K]. -1 if its steps
 * cannot be read. */
int cost_band_ttas(const char *dir, double tta, const double r[COST_GROUP_COUNT], int K,
                   double *out);

/* The speedup's 95% band over seeds and costs: for each draw d, the Student's t interval over
 * the seeds of base[i*K+d] / tta[i*K+d] (its geometric mean with one seed); lo the 2.5th
 * percentile of the draws' lower ends, hi the 97.5th of their upper ends. NAN when a pair is
 * missing. */
void cost_band_interval(const double *base, const double *tta, int n_seeds, int K, double *lo,
                        double *hi);

/* compare's bands: run j = i * n_pol + k (seed seeds[i], policy specs[k]) in its folder below
 * out (runner_folder_name), of time to accuracy tta[j] (NAN: none); lo[k], hi[k] against policy
 * 0 (NAN for k = 0). -1 if a run's steps.csv cannot be read. */
int cost_band_compare(const CostProfile *prof, int K, const char *out, int n_pol, int n_seeds,
                      const int *seeds, const char *const *specs, const double *tta, double *lo,
                      double *hi);

#endif
