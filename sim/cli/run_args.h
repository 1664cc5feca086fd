/* run_args.h: the flags shared by the simulating commands (run, compare, sweep): the model,
 * data and optimiser flags (train_args.h), the cluster flags (cluster_args.h), the run's own
 * (compressor, policy, collectives, network model, target, stragglers, output), and SimGrid's
 * --cfg=/--log= options passed through. One parser, one scenario builder. */
#ifndef BELLOWS_RUN_ARGS_H
#define BELLOWS_RUN_ARGS_H

#include "dataset.h"
#include "spec.h"
#include "cli.h"
#include "io_check.h"
#include "cluster_args.h"
#include "driver.h"
#include "train_args.h"

#define RUN_MAX_OPTS         128
#define RUN_MAX_SIMGRID_ARGS 32

/* RUN_MODE_SWEEP_RUN: one run of a sweep: run's flag table (--policy, --seed) with compare's
 * and sweep's defaults, so that a sweep's runs are what its header says. */
typedef enum { RUN_MODE_RUN, RUN_MODE_COMPARE, RUN_MODE_SWEEP, RUN_MODE_SWEEP_RUN } RunMode;

/* out_args.c: --out, --force, --quiet (their table, RunOpts offsets, after run_args.c's). */
extern const CliOpt out_cli_opts[];
extern const int out_cli_n_opts;

/* --record-trace PATH or --timeline PATH (flag): its folder must take new files and PATH must
 * not be a folder (out_args.c); example, a file name to suggest. BW_EUSAGE naming the flag. */
int run_check_out_file(const char *flag, const char *path, const char *example, BwError *err);

/* compare's and sweep's default --eval-every: this many evaluations an epoch */
#define RUN_EVALS_PER_EPOCH 20
/* The global batch the defaults (--lr 0.02) were tuned for: 8 workers x 64. Above it,
 * --lr-scale auto applies the linear scaling rule (run_setup). */
#define RUN_TUNED_GLOBAL_BATCH 512
/* --lr-scale auto's warm-up, a fixed count of training samples, whatever --epochs plans (so one
 * scenario's time to a target does not depend on the run's planned length): 240,000 samples,
 * four passes over Fashion-MNIST's 60,000, which is the fifth of the default 20 epochs the rule
 * used to take; at most RUN_AUTO_WARMUP_MAX_EPOCHS epochs, Goyal et al.'s 5 (Section 2.2: a
 * gradual warm-up over 5 epochs), which a slice of the set (--train-samples) reaches first. */
#define RUN_AUTO_WARMUP_SAMPLES    240000.0
#define RUN_AUTO_WARMUP_MAX_EPOCHS 5.0
#define RUN_FASHION_MNIST_TRAIN    60000 /* the training set's size without --train-samples */

/* The most runs a sweep plans, and the most points of bellows cluster --set */
#define RUN_MAX_RUNS 1000000

/* compare's and sweep's default seeds (--seeds) */
#define RUN_DEFAULT_SEEDS "1,2,3"

/* The values of the run's own flags, filled by run_parse_flags. */
typedef struct {
    const char *compressor, *policy, *policies, *algorithm, *collectives, *network_model, *out;
    const char *shard, *record_trace, *trace, *replay_engine;
    const char *traces;    /* compare --traces: each policy's own trace */
    const char *cost_band; /* compare --cost-band: off or K draws (cost_band.h) */
    double target, jitter, straggler_cv;
    CliDoubleList slowdown;
    CliIntList seeds;
    int eval_every, stop_at_target, quiet, jobs, no_plots, resume, force;
    int compute_threads; /* 0: not given (run_setup picks) */
    const char *workload, *overlap, *sharding, *timeline, *timeline_steps, *costs, *transport;
    const char *schedule, *ps_hosts;
    const char *zeropp; /* --zeropp: NULL when not given */
    int servers;        /* 0: not given (one a worker) */
    double bucket_mb;
    int price_batch;   /* 0: not given (--batch) */
    int price_workers; /* 0: not given (--workers) */
    int free_compression;
    int average_momentum;
    int record_traces; /* sweep: every run writes DIR/runs/.../trace.jsonl.gz */
    int train_each;    /* sweep: train every run, price none (--train-each) */
    /* ZeRO-3's schedule (fsdp_args.c) */
    const char *fsdp_unit, *backward_prefetch, *forward_prefetch, *reshard_after_forward;
    const char *rs_comm;
    int limit_all_gathers;
    /* Horovod over the cost profile (hvd_args.c) */
    const char *horovod;
    long horovod_fusion;
    double horovod_cycle_ms;
} RunOpts;

extern const char *const RUN_ABOUT;

/* A simulating command's flags: the values of the three groups (the tables address them by
 * offset, so any number of Flags can be parsed and live at once), the table they were parsed
 * with and which flags were given. */
typedef struct {
    TrainFlags train;
    ClusterFlags cluster;
    RunOpts run;
    CliOpt opts[RUN_MAX_OPTS];
    int n, set[RUN_MAX_OPTS];
    int train_at, cluster_at, run_at;
    char *simgrid_args[RUN_MAX_SIMGRID_ARGS];
    int n_simgrid;
    char jobs_default[16]; /* a sweep's --jobs default, the cores: the table points here */
    RunMode mode;
    int bench;          /* bellows bench: run's table, and --cost-band's step band (cmd_bench.c) */
    Workload *workload; /* --workload, loaded by run_setup (run_flags_release frees it) */
    CostProfile *costs; /* --costs, loaded by run_setup for the cluster's GPU (freed there too) */
    int costs_noted;    /* the note of a measured profile with --gpu-flops was printed */
    /* a replay's trace's workers (set by the caller after run_parse_flags, before run_setup):
     * the cluster's --workers unless given (or --platform), so that a replay keeps the
     * trace's cluster and per-worker batch; 0: none */
    int trace_workers;
} Flags;

/* Separates --cfg=/--log= from bellows' flags and parses the latter with the mode's table
 * (run: --policy; compare: --policies, --jobs, --no-plots; sweep: those and --seeds, --resume,
 * --shard). Returns BW_OK, CLI_HELP or BW_EUSAGE. */
int run_parse_flags(const char *cmd, RunMode mode, int argc, char **argv, Flags *f, BwError *err);

/* The seeds of a compare or sweep: --seeds, or --seed S alone (just S), or the default
 * RUN_DEFAULT_SEEDS (a replay, --trace: just --seed, the trace fixing losses and accuracies);
 * both flags at once is a usage error. seeds holds CLI_LIST_MAX. */
int run_seeds(const Flags *f, int *seeds, int *n, BwError *err);

/* --out DIR must be new or empty unless --force (which overwrites files of the same names and
 * removes nothing). A path that is not a folder is left to outdir_create to report. */
int run_check_out(const char *out, int force, BwError *err);

/* compare's and sweep's default --eval-every (not given, live training), and that of a run
 * that records a trace (cfg->record_trace): steps per epoch / RUN_EVALS_PER_EPOCH, at least 1;
 * a trace keeps the evaluations after the target too (its replays may ask for any target).
 * Call once cfg->train is loaded (and cfg->record_trace set). */
void run_default_eval_every(const Flags *f, RunConfig *cfg);
/* The same default whatever the mode (a job of bellows cluster, whose table is compare's). */
void run_compare_eval_every(const Flags *f, RunConfig *cfg);

/* Frees what the flags hold (a --platform's host names); the configurations made from them
 * are then invalid. A Flags that run_parse_flags filled, or zeroed, is fine. */
void run_flags_release(Flags *f);

/* The files the flags read and write, and a run's own files in --out, into io (io_check.h);
 * run_setup checks them (a sweep adds its axes' values first). */
void run_io_files(const Flags *f, IoFiles *io);

/* The scenario from the parsed flags (everything but the data). slowdown holds
 * DRIVER_MAX_WORKERS values. */
int run_setup(const char *cmd, Flags *f, TrainArgs *ta, RunConfig *cfg, double *slowdown,
              BwError *err);
int run_load_data(const TrainArgs *ta, RunConfig *cfg, Dataset *train, Dataset *test, BwError *err);

/* --allreduce ps with --servers and --ps-hosts into cfg->cluster (checked there); either flag
 * without ps is a usage error (ps_args.c). */
int run_ps_setup(const Flags *f, RunConfig *cfg, BwError *err);

/* --trace: the run replays trace (model, data, optimiser and lr-schedule flags are refused;
 * the per-worker batch is the trace's global batch over the workers, which must divide it),
 * with the replay engine of --replay-engine. */
int run_apply_trace(const Flags *f, RunConfig *cfg, const Trace *trace, BwError *err);
/* Whether a replay refuses flag f->opts[i]: 1 for the model, data and optimiser flags (the
 * trace's), 2 for those of a live run only (--eval-every, --compute-threads), else 0; replay's
 * --help leaves the refused ones out. */
int run_replay_refuses(const Flags *f, int i);

/* fsdp_args.c: ZeRO-3's schedule flags into cfg->fsdp (--fsdp-unit checked: BW_EUSAGE naming
 * it). */
int fsdp_args_setup(const Flags *f, RunConfig *cfg, BwError *err);

/* hvd_args.c: --horovod, --horovod-fusion, --horovod-cycle (their table, RunOpts offsets) on the
 * cost profile p as loaded (once: the release replaces p's "horovod", the knobs then set its
 * fusion and cycle). Bad values, or a profile they cannot apply to (ideal, one with a cycle of
 * its own, knobs without Horovod): BW_EUSAGE naming the flag. */
extern const CliOpt hvd_cli_opts[];
extern const int hvd_cli_n_opts;
int hvd_args_apply(const Flags *f, CostProfile *p, BwError *err);

/* Flags given that do nothing in this scenario (flag_effect.c: --bucket-mb without an overlap,
 * --transport with --costs ideal, --compressor where every policy of policies[0..n) is sync or
 * names its own, --timeline-steps without --timeline): a note on stderr for each, or a usage
 * error for one that can only be a mistake. Call once the scenario is set up (run_setup). */
int run_note_idle_flags(const Flags *f, const RunConfig *cfg, char (*policies)[SPEC_MAX_TEXT],
                        int n, BwError *err);
/* The same in two halves, for a command of several scenarios (bellows sweep: a flag idle at
 * every point): the rows of flag_effect.c's table given and idle here, as bits; their notes
 * (or the usage error). */
unsigned run_idle_flags(const Flags *f, const RunConfig *cfg, char (*policies)[SPEC_MAX_TEXT],
                        int n);
int run_note_idle(unsigned idle, BwError *err);

/* The compatibility table (compat.def) against the flags given: the topology, allreduce,
 * collectives level, network model, overlap, schedule, workload, --price-workers, --platform, a
 * replay, and cmd "cluster" (a job of bellows cluster); with policies[0..n), each policy's kind
 * too (created only when a line's other side matches). BW_EUSAGE naming both flags of the first
 * line that matches. run_setup checks without the policies; run, compare, replay and each sweep
 * point with them, before driver_check. */
int run_check_compat(const char *cmd, const Flags *f, const RunConfig *cfg,
                     char (*policies)[SPEC_MAX_TEXT], int n, BwError *err);

/* Whether policy spec POLICY[:k=v]... sends --compressor's output: 0 for sync (dense gradients),
 * a built-in periodic policy (dense parameters averaged) and a POLICY@COMPRESSOR, which names its
 * own (flag_effect.c; the driver's run_uses_compressor, for a trace's header). */
int run_policy_uses_compressor(const char *spec);

void run_print_scenario(const Flags *f, const RunConfig *cfg, const TrainArgs *ta);
/* "# policy P, compressor C" before a run or a bench starts; for sync "# policy sync (dense
 * gradients, no compressor)": --compressor's default would name one it never runs. */
void run_print_policy(const RunConfig *cfg);
/* When cfg's runs evaluate, for the resolution of a time to accuracy: "evaluation every 5
 * steps (23.4 an epoch of 117 steps)", "evaluation at the end of every epoch (117 steps)", or
 * a replay's "evaluation by the trace: 21 evaluations, at most 64 steps apart". */
void run_describe_evals(const RunConfig *cfg, char *buf, size_t n);
/* "# replay engine: ..." for a replay: of cfg (points 1), or how many of a sweep's points
 * replay fast. */
void run_print_replay_engine(const RunConfig *cfg, long fast_points, long points);

#endif
