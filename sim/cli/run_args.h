/* run_args.h: the flags shared by the simulating commands (run, compare, sweep): the model,
 * data and optimiser flags (train_args.h), the cluster flags (cluster_args.h), the run's own
 * (compressor, policy, collectives, network model, target, stragglers, output), and SimGrid's
 * --cfg=/--log= options passed through. One parser, one scenario builder. */
#ifndef BELLOWS_RUN_ARGS_H
#define BELLOWS_RUN_ARGS_H

#include "dataset.h"
#include "cli.h"
#include "cluster_args.h"
#include "driver.h"
#include "train_args.h"

#define RUN_MAX_OPTS         128
#define RUN_MAX_SIMGRID_ARGS 32

typedef enum { RUN_MODE_RUN, RUN_MODE_COMPARE, RUN_MODE_SWEEP } RunMode;

/* The values of the run's own flags, filled by run_parse_flags. */
typedef struct {
    const char *compressor, *policy, *policies, *algorithm, *collectives, *network_model, *out;
    const char *shard, *record_trace, *trace, *replay_engine;
    double target, jitter;
    CliDoubleList slowdown;
    CliIntList seeds;
    int eval_every, stop_at_target, quiet, jobs, no_plots, resume;
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
} Flags;

/* Separates --cfg=/--log= from bellows' flags and parses the latter with the mode's table
 * (run: --policy; compare: --policies, --jobs, --no-plots; sweep: those and --seeds, --resume,
 * --shard). Returns BW_OK, CLI_HELP or BW_EUSAGE. */
int run_parse_flags(const char *cmd, RunMode mode, int argc, char **argv, Flags *f, BwError *err);

/* Frees what the flags hold (a --platform's host names); the configurations made from them
 * are then invalid. A Flags that run_parse_flags filled, or zeroed, is fine. */
void run_flags_release(Flags *f);

/* The scenario from the parsed flags (everything but the data). slowdown holds
 * DRIVER_MAX_WORKERS values. */
int run_setup(const char *cmd, Flags *f, TrainArgs *ta, RunConfig *cfg, double *slowdown,
              BwError *err);
int run_load_data(const TrainArgs *ta, RunConfig *cfg, Dataset *train, Dataset *test, BwError *err);

/* --trace: the run replays trace (model, data and schedule flags are refused; the per-worker
 * batch is the trace's global batch over the workers, which must divide it), with the replay
 * engine of --replay-engine. */
int run_apply_trace(const Flags *f, RunConfig *cfg, const Trace *trace, BwError *err);

void run_print_scenario(const Flags *f, const RunConfig *cfg, const TrainArgs *ta);
/* "# replay engine: ..." for a replay: of cfg (points 1), or how many of a sweep's points
 * replay fast. */
void run_print_replay_engine(const RunConfig *cfg, long fast_points, long points);

#endif
