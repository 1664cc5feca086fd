/* compare_impl.h: what cmd_run.c's compare shares with compare_table.c: its runs (policy k
 * with seed i is run i * n_pol + k, in folder seed-S/<k>-<policy>), each policy's statistics
 * over the seeds, the table it prints and the files it writes (compare.csv,
 * time_breakdown.csv), and the cost band's intervals. Private to sim/cli. */
#ifndef BELLOWS_COMPARE_IMPL_H
#define BELLOWS_COMPARE_IMPL_H

#include "cli.h"
#include "costs.h"
#include "own_traces.h"
#include "runner.h"
#include "spec.h"
#include "status.h"

#define MAX_POLICIES 16

/* compare's runs: policy k with seed i is run i * n_pol + k, in folder seed-S/<k>-<policy>. */
typedef struct {
    char (*specs)[SPEC_MAX_TEXT];      /* as given: POLICY or POLICY@COMPRESSOR (the labels) */
    char (*policy)[SPEC_MAX_TEXT];     /* each spec's policy */
    char (*compressor)[SPEC_MAX_TEXT]; /* and its compressor ("": --compressor) */
    int n_pol, n_seeds, seeds[CLI_LIST_MAX];
    RunRow *rows;
    int out_existed;    /* --out was there before: an interruption leaves it */
    int stop_at_target; /* runs that reached the target stopped there: their bytes are to it */
    int islands;        /* --topology islands: the rows' bytes are the WAN's (runner.h) */
    OwnTraces *own;     /* compare --traces: each run's own trace; NULL otherwise */
    int band_k;         /* --cost-band's draws; 0: off, or the profile states no uncertainty */
} Runs;

/* One policy over the seeds. */
typedef struct {
    RunRow mean;   /* means over the seeds (tta: NAN unless every seed reached the target);
                      failed if any seed failed; status "mixed" if the seeds' differ */
    int reached;   /* seeds that reached the target */
    double tta_sd; /* over those seeds (NAN below 2) */
    double speedup, ci_lo, ci_hi; /* mean of the per-seed speedups against the first policy,
                                     and its 95% interval (NAN unless every pair reached) */
    double res_s, res_frac;       /* the worst tta resolution over the seeds, in seconds and as a
                                     fraction of the first policy's tta for that seed */
    double band_lo, band_hi;      /* the speedup's band over seeds and costs (cost_band.h) */
} PolicyStats;

/* Policy k's means over the seeds, its speedup against policy 0 and its interval. */
void policy_stats(const Runs *r, int k, PolicyStats *st);
/* compare.csv in dir: one row per policy (see compare_table.c). */
int write_compare_csv(const char *dir, const Runs *r, const PolicyStats *st, BwError *err);
/* The table on stdout, its footer and the notes under it. */
void print_compare_table(const Runs *r, const PolicyStats *st, double target, const char *evals,
                         const char *sharpen);
/* time_breakdown.csv in out: each policy's books to its time to accuracy, means over seeds. */
int write_breakdown(const char *out, const Runs *r, BwError *err);
/* --cost-band: each policy's band (cost_band.h) from its runs' folders below out. */
void compute_bands(const char *out, const Runs *r, const CostProfile *prof, PolicyStats *st);

#endif
