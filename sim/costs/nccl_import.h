/* nccl_import.h: `bellows costs import-nccl-tests` (nccl_import.c): nccl-tests' logs into a cost
 * profile's "busbw" tables for one kind of network (sim/costs/README.md). */
#ifndef BELLOWS_NCCL_IMPORT_H
#define BELLOWS_NCCL_IMPORT_H

#include "costs.h"

typedef struct {
    const char *const *logs; /* [n_logs] nccl-tests outputs (all_reduce_perf, all_gather_perf,
                                reduce_scatter_perf; the last two give the allgather tables) */
    int n_logs;
    CostNet net;       /* --transport: the network the logs measured */
    double link_Bps;   /* --link-gbps: the rate of one NIC they ran on, bytes/s */
    int gpus_per_node; /* --gpus-per-node; 0: from the logs' "#  Rank N ... on HOST" lines */
    int nics_per_node; /* --nics-per-node, >= 1: the tables are for GPUs per node over it */
    int collective;    /* --collective: 0 allreduce, 1 allgather; -1: from each log */
    const char *base;  /* --base NAME|FILE: a whole profile with its network replaced; NULL: a
                          fragment {"networks": {KIND: {"busbw": ...}}} */
    const char *name;  /* --name: the written profile's name (with base); NULL: base's */
    const char *out;   /* --out FILE */
} NcclImport;

/* Reads every log and writes out (complete or not at all). A bad log is a usage error naming the
 * file and the line; nothing is written then. */
int costs_import_nccl_tests(const NcclImport *a, BwError *err);

#endif
