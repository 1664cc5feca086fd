/* sweep_impl.h: what the files of sim/sweep/ share: the Sweep (one invocation of `bellows sweep`,
 * created and freed by cmd_sweep and passed to every step), its axes and runs, and the steps
 * each file provides. Not for use outside sim/sweep/; sweep.h is the public interface. */
#ifndef BELLOWS_SWEEP_IMPL_H
#define BELLOWS_SWEEP_IMPL_H

#include <signal.h>
#include <stdio.h>

#include "costs.h"
#include "spec.h"
#include "own_traces.h"
#include "trace.h"
#include "run_args.h"
#include "runner.h"

#define SWEEP_MAX_AXES     8
#define SWEEP_MAX_VALUES   64
#define SWEEP_MAX_ARGS     256
#define SWEEP_MAX_POLICIES 16
/* sweep.csv: the swept flags' columns, then these (seed ... run_index) */
#define SWEEP_CSV_COLUMNS 17
/* "--" NAME "=" VALUE of one swept flag */
#define SWEEP_FIRST_ARG (2 + 64 + 1 + SPEC_MAX_TEXT)

/* One swept flag and its values, in the order given. */
typedef struct {
    char name[64];
    int n;
    char value[SWEEP_MAX_VALUES][SPEC_MAX_TEXT];
} Axis;

/* One run: a point (an index into the cross product of the axes), a seed and a policy. Runs
 * are numbered point-major, then seed, then policy; the number is sweep.csv's run_index. */
typedef struct {
    int done; /* finished, by this invocation or an earlier one (--resume) */
    long point;
    int seed_i, policy_i;
    RunRow row;
} Run;

/* Runs of the same dynamics (groups.c): the first trains, the others are priced by replaying
 * its trace. */
typedef struct {
    long trainer; /* its first run in the sweep's order */
    long members; /* its runs, the trainer's included */
    /* this invocation */
    int record;      /* the training records the group's trace */
    int trace_only;  /* the training is not a result of this invocation, only its trace is */
    int priced;      /* trace loaded: its other runs are priced (else they train) */
    int load_failed; /* no usable trace: the training failed, diverged or stopped early */
    Trace *trace;    /* when priced: the trace its other runs replay */
} Group;

/* driver_sum_order's text, "hierarchical/1024" at most */
#define SWEEP_SUM_ORDER 32

typedef struct {
    /* the command line, with -j N and -jN spelt --jobs; base and the flags point into it */
    char *argv[SWEEP_MAX_ARGS];
    int argc;
    char jobs_arg[64];

    Axis axes[SWEEP_MAX_AXES];
    int n_axes;
    char *base[SWEEP_MAX_ARGS]; /* the command line of every run, without the swept flags */
    int n_base;
    int seeds[CLI_LIST_MAX], n_seeds;
    char policies[SWEEP_MAX_POLICIES][SPEC_MAX_TEXT];
    int n_policies, baseline;

    long n_points, n_runs;
    Run *runs;
    long *todo; /* the run indices of this invocation (its shard, not done yet), in order */
    long n_todo, n_already;
    long fast_points; /* points a --trace replays with the fast engine */
    int islands;      /* every point on --topology islands: the rows' bytes are the WAN's */
    /* --cost-band (band.c): K draws (0: off); each point's profile's stated ranges, band_on[p]
     * 0 where its profile states none (ideal, grace-tf): no band there */
    int band_k;
    double (*band_r)[COST_GROUP_COUNT]; /* [n_points], or NULL (off, or a merged sweep) */
    int *band_on;                       /* [n_points] */

    const char *out;
    int jobs, shard_k, shard_n, progress, no_plots, resume;
    int merged;              /* made by bellows merge from shards (sweep.json says "merged") */
    char *base_text;         /* merge: the common flags read back from sweep.json (owned) */
    const char *traces_list; /* --traces as given (sweep.json's "traces"); merge: owned */
    double target;           /* --target-accuracy, or its first value when swept */

    /* while the runs go on */
    long done_now;
    int failed;
    double t0, t_trained; /* wall clock at the start, and at the end of the trainings */
    struct sigaction old_sigpipe;

    Flags f; /* the first point's flags: the sweep's own and the shared scenario */
    char first_args[SWEEP_MAX_AXES][SWEEP_FIRST_ARG]; /* "--NAME=VALUE" of the first point: a
                                                        swept string flag's value in f is here */
    TrainArgs ta;
    RunConfig cfg;
    double slowdown[DRIVER_MAX_WORKERS];
    Dataset train, test;             /* loaded once; every run uses them */
    Dataset train_shape, test_shape; /* their sizes without samples, for the priced runs */
    Trace trace;                     /* --trace: every run replays it */
    int replay;                      /* --trace or --traces: every run replays a trace */
    /* --traces (own.c): policy k with seed i replays its own trace, own.run[i * n_pol + k],
     * following its decisions; the policies (s->policies) and seeds are the traces' */
    OwnTraces own;
    char own_policy[SWEEP_MAX_POLICIES][SPEC_MAX_TEXT];     /* each one's stand-in policy */
    char own_compressor[SWEEP_MAX_POLICIES][SPEC_MAX_TEXT]; /* and its compressor */
    ReplayEngine replay_engine;

    /* train once, price the rest (groups.c) */
    int train_each; /* every run trains: --train-each, a replay (--trace), --record-traces */
    int sees_price[SWEEP_MAX_POLICIES]; /* the policy may decide on the price: never priced */
    int overlaps[SWEEP_MAX_POLICIES];   /* its outer steps overlap (!driver_replay_exact): never
                                           priced */
    char (*sum_order)[SWEEP_SUM_ORDER]; /* [n_points] */
    char (*price_why)[160];             /* [n_points]: why a priced run there takes the actors,
                                           "" when it takes the fast replay */
    int *group_of;                      /* [n_runs] */
    Group *groups;                      /* [n_groups] */
    long n_groups;
    /* this invocation, in two phases: the trainings (those of its runs, then those done only for
     * a trace its priced runs need), then the priced runs */
    long *phase_runs; /* [n_train + n_price], at most 2 n_runs (a trainer priced too) */
    long n_train, n_price;
    long n_after;   /* runs of the second phase trained after all (sweep_load_traces) */
    int phase;      /* 0: trainings, 1: priced runs */
    long n_results; /* runs of this invocation finished (not the trace-only trainings) */
} Sweep;

/* axes.c */
int sweep_find_axes(Sweep *s, const Flags *table, BwError *err);
int sweep_parse_first_point(Sweep *s, BwError *err);
int sweep_check_values(const Sweep *s, BwError *err);
int sweep_check_folders(const Sweep *s, BwError *err);
int sweep_plan_runs(Sweep *s, BwError *err);
int sweep_run_argv(const Sweep *s, long point, int seed_i, int policy_i, char **out,
                   char store[][SPEC_MAX_TEXT]);
int sweep_axis_index(const Sweep *s, const char *name);
const char *sweep_point_value(const Sweep *s, long point, int a);
void sweep_point_label(const Sweep *s, long point, char *buf, size_t n);
double sweep_point_target(const Sweep *s, long point);
void sweep_run_folder(const Sweep *s, long r, char *buf, size_t n);
const Run *sweep_baseline_of(const Sweep *s, const Run *run);

/* own.c: sweep --traces */
int sweep_own_load(Sweep *s, BwError *err); /* in own_flags: the traces, policies and seeds */
/* The trace run (point, seed_i, policy_i) replays: its own under --traces, else --trace's. */
const Trace *sweep_trace_of(const Sweep *s, int seed_i, int policy_i);
/* Under --traces, cfg set up as compare --traces sets its run up: its trace applied, the
 * policy's stand-in and compressor, its label, its decisions followed. */
int sweep_own_config(const Sweep *s, int seed_i, int policy_i, const Flags *f, RunConfig *cfg,
                     BwError *err);

/* groups.c */
int sweep_groups_create(Sweep *s, BwError *err); /* after sweep_plan_runs */
void sweep_groups_free(Sweep *s);
/* What the groups need of point p, from its configuration (check_points). */
void sweep_note_point(Sweep *s, long p, const RunConfig *cfg);
int sweep_plan_groups(Sweep *s, BwError *err); /* after check_points */
/* Whether run r is priced by replaying its group's trace (the trainer's own too under
 * --stop-at-target, groups.c). */
int sweep_priced_run(const Sweep *s, long r);
int sweep_is_trainer(const Sweep *s, long r);
/* DIR/traces/run-R-HASH.jsonl.gz: the trace run r's training records for its group. */
void sweep_trace_path(const Sweep *s, long r, char *buf, size_t n);
void sweep_plan_phases(Sweep *s); /* after prepare_out: this invocation's two phases */
/* Between them: the traces the priced runs replay. Returns how many of those runs will train
 * instead (their group's training failed, diverged or stopped at the target). */
long sweep_load_traces(Sweep *s);
/* The header's lines on them: "# 4 trainings, 32 scenarios priced ...". */
void sweep_print_groups(const Sweep *s);

/* sweep_csv.c */
void sweep_read_figures(RunRow *row, char *const *figures);
/* A row of a sweep.csv (split in fld, n fields), checked before it is trusted: its run
 * (run_index, swept values, seed, policy) is one of s's, into *run, and its figures are each in
 * their range (an edited row: a policy not in the sweep, a negative time). where: "FILE line N"
 * for the usage error. */
int sweep_check_row(const Sweep *s, char **fld, int n, const char *where, long *run, BwError *err);
void sweep_csv_num(FILE *f, double x, const char *fmt);
int sweep_write_csv(const Sweep *s, BwError *err);
int sweep_write_json(const Sweep *s, BwError *err);
int sweep_resume(Sweep *s, BwError *err);
char *sweep_json_scenario(const char *dir);

/* table.c */
void sweep_print_table(const Sweep *s);
/* The heatmap and curves (unless --no-plots; the grid's data even then); 1 if any failed (said
 * on stderr: the results stand, and the sweep fails at its end), -1 if a Ctrl-C came while it
 * looked for gnuplot. */
int sweep_plots(const Sweep *s);
/* speedup_grid.dat when bandwidth and latency are both swept (else nothing, BW_OK). */
int sweep_write_grid(const Sweep *s, BwError *err);

/* band.c: --cost-band */
/* In check_points, point p's configuration: its profile's ranges (allocating at p = 0). */
void sweep_band_note(Sweep *s, long p, const RunConfig *cfg);
/* Policy k at point p under the band, from the runs' steps.csv: band[0..1] its speedup's band
 * over seeds and costs against the baseline (cost_band.h; NAN for the baseline), band[2..3] the
 * band of its mean time to accuracy over the seeds (2.5th and 97.5th percentiles over the
 * draws); NAN when off, no band at p, a run is missing or a seed did not reach the target. */
#define SWEEP_BAND_FIGURES 4
void sweep_band_of(const Sweep *s, long p, int k, double band[SWEEP_BAND_FIGURES]);
/* DIR/sweep_band.csv when the band is on: each point and policy's speedup and its bands. */
int sweep_write_band(const Sweep *s, BwError *err);

/* merged.c: a merged run, as merge read it: its run_index, its fields from status on, and the
 * folder it came from. */
typedef struct {
    long index;
    char *const *figures;
    const char *dir;
} MergedRun;
/* The sweep first_dir/sweep.json describes, its runs planned (for sweep_check_row); NULL with
 * err set if it cannot be read. sweep_merged_free frees it. */
Sweep *sweep_merged_open(const char *first_dir, BwError *err);
void sweep_merged_free(Sweep *s); /* NULL is a no-op */
/* Makes out (holding the merged sweep.csv) a sweep of its own: the runs marked finished with
 * their figures, sweep.json with shard "merged", and the heatmap's grid. */
int sweep_merged_write(Sweep *s, const char *out, const MergedRun *runs, long n, BwError *err);

#endif
