/* results_impl.h: what results.c shares with results_band.c. Private to sim/driver. */
#ifndef BELLOWS_RESULTS_IMPL_H
#define BELLOWS_RESULTS_IMPL_H

#include "outfile.h"
#include "results.h"

/* summary.json's cost_band_* keys when meta->cost_band asks for K >= 2 draws and the run's
 * profile states an uncertainty (results_band.c); nothing otherwise. */
void results_band_keys(JsonW *w, const RunConfig *cfg, const RunMeta *meta, const RunResult *res);

#endif
