/* sweep.h: `bellows sweep` (the cross product of scenario flags given as lists, times seeds,
 * times policies, each run in its own child process and folder) and `bellows merge` (joins the
 * sweep.csv files of a sweep's shards). */
#ifndef BELLOWS_SWEEP_H
#define BELLOWS_SWEEP_H

#include "status.h"

int cmd_sweep(int argc, char **argv, BwError *err);
int cmd_merge(int argc, char **argv, BwError *err);

#endif
