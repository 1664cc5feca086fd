/* reproduce.h: `bellows reproduce accordion|adpsgd|all`, the source papers' headline
 * experiments as fixed lists of sweeps, and the report that sets them beside the claims. */
#ifndef BELLOWS_REPRODUCE_H
#define BELLOWS_REPRODUCE_H

#include "status.h"

int cmd_reproduce(int argc, char **argv, BwError *err);
/* `bellows reproduce diloco` (diloco.c): argv after "diloco". */
int reproduce_diloco(int argc, char **argv, BwError *err);
/* its --workload W (diloco_wl.c): the runs into out/runs (unless report_only; resume: those
 * not done yet) and the report; self: this executable */
int reproduce_diloco_workload(const char *out, const char *wl, int quick, int report_only,
                              int resume, const char *self, BwError *err);

#endif
