/* engine.h: the SimGrid engine, once per process. bellows' defaults come first on SimGrid's
 * command line, so a user's own --cfg= and --log= options (passed through unchanged) override
 * them: the exact flow model (CM02 without cross-traffic or TCP window cap, against which
 * collective times match the closed-form costs), or SimGrid's TCP-like default model (LV08)
 * with network_model "tcp"; and a quiet log. */
#ifndef BELLOWS_ENGINE_H
#define BELLOWS_ENGINE_H

#include <simgrid/forward.h>

#include "../common/status.h"
#include "cluster.h"

/* Initialises SimGrid. argv may hold --cfg=/--log= options for SimGrid (and nothing else);
 * network_model is "exact" or "tcp". Only the first call in a process does anything. */
int engine_init(int argc, char **argv, const char *network_model, BwError *err);

/* Generates the cluster's platform into a temporary file, loads it and removes the file. */
int engine_load_cluster(const Cluster *c, BwError *err);

/* The host of rank r (gpu{r}). */
sg_host_t engine_host(int rank);

#endif
