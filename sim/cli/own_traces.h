/* own_traces.h: `bellows compare --traces A,B,...`, each policy priced on its own trace (a
 * version-2 trace that records the policy's decisions, traces/pytorch/train_policy.py). The
 * traces are read and checked to describe one experiment (the same model, data, workers,
 * batch, layers and samples), grouped into policies (the header's policy spec and compressor)
 * and seeds (the header's seed), every policy with the same seeds so that speedups pair by
 * seed. */
#ifndef BELLOWS_OWN_TRACES_H
#define BELLOWS_OWN_TRACES_H

#include "spec.h"
#include "status.h"
#include "driver.h" /* trace.h, through the driver's public header (the map) */

#define OWN_TRACES_MAX 256

typedef struct {
    Trace *t; /* [n], as listed */
    int n;
    /* the policies (labels "SPEC" or "SPEC@COMPRESSOR" when the compressors differ), the
     * stand-in policy of each one's mode that sets a replay up ("sync" or "cpsgd"), its
     * compressor, and the seeds, ascending */
    int n_pol, n_seeds;
    int seeds[OWN_TRACES_MAX];
    /* [n_seeds * n_pol]: the trace of seed i and policy k at i * n_pol + k */
    const Trace **run;
} OwnTraces;

/* Reads and checks the traces of list (comma-separated paths); fills o and, for each policy k
 * (at most max_pol), specs[k], policy[k] and compressor[k]. Usage errors (exit 2) name the file
 * and the field. */
int own_traces_load(const char *list, OwnTraces *o, char (*specs)[SPEC_MAX_TEXT],
                    char (*policy)[SPEC_MAX_TEXT], char (*compressor)[SPEC_MAX_TEXT], int max_pol,
                    BwError *err);
void own_traces_free(OwnTraces *o); /* safe on a zeroed one */

#endif
