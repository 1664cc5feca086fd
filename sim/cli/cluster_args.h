/* cluster_args.h: the command-line flags that describe a cluster, shared by every command that
 * simulates one (platform, and later run, compare, sweep, replay). */
#ifndef BELLOWS_CLUSTER_ARGS_H
#define BELLOWS_CLUSTER_ARGS_H

#include "cli.h"
#include "cluster.h"

extern const CliOpt cluster_cli_opts[];
extern const int cluster_cli_n_opts;

/* Builds the Cluster from the parsed flags; `set` is the part of cli_parse's set[] that
 * belongs to cluster_cli_opts. Checks every combination (cluster_resolve). */
int cluster_from_cli(Cluster *c, const int *set, BwError *err);

/* Frees what a --platform's host list holds; the clusters made from it are then invalid. */
void cluster_args_release(void);

#endif
