/* reproduce.h: `bellows reproduce accordion|adpsgd|all`, the source papers' headline
 * experiments as fixed lists of sweeps, and the report that sets them beside the claims. */
#ifndef BELLOWS_REPRODUCE_H
#define BELLOWS_REPRODUCE_H

#include "status.h"

int cmd_reproduce(int argc, char **argv, BwError *err);
/* `bellows reproduce diloco` (diloco.c): argv after "diloco". */
int reproduce_diloco(int argc, char **argv, BwError *err);

#endif
