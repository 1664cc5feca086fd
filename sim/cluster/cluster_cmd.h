/* cluster_cmd.h: `bellows cluster`, several training jobs on one simulated cluster (the folder's
 * map is in cl_impl.h, the file format in sim/cluster/README.md). */
#ifndef BELLOWS_CLUSTER_CMD_H
#define BELLOWS_CLUSTER_CMD_H

#include "status.h"

int cmd_cluster(int argc, char **argv, BwError *err);

#endif
