/* cmd_run.c: `bellows run` (one simulated training run) and `bellows compare` (several policies
 * on the identical scenario and seed, one table). SimGrid allows one simulation per process,
 * so compare runs each policy in a child process (up to --jobs at a time) that writes its own
 * run folder and sends its headline figures back through a pipe. */
#include <cblas.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../common/spec.h"
#include "../models/dataset.h"
#include "../plots/plots.h"
#include "cli.h"
#include "cluster_args.h"
#include "commands.h"
#include "driver.h"
#include "engine.h"
#include "outfile.h"
#include "results.h"
#include "train_args.h"
#include "units.h"

#define MAX_POLICIES     16
#define MAX_SIMGRID_ARGS 32

static struct {
    const char *compressor, *policy, *policies, *algorithm, *collectives, *network_model, *out;
    double target, jitter;
    CliDoubleList slowdown;
    int eval_every, stop_at_target, quiet, jobs, no_plots;
} R;

static const CliOpt run_opts[] = {
    {"compressor", CLI_STRING, &R.compressor, "powersgd", NULL,
     "gradient compressor NAME[:key=value,...] (bellows compressors)", 0, 0, NULL, 0},
    {"allreduce", CLI_CHOICE, &R.algorithm, "ring", NULL, "allreduce algorithm", 0, 0,
     "ring|halving-doubling|tree|hierarchical", 0},
    {"collectives", CLI_CHOICE, &R.collectives, "transfer", NULL,
     "transfer: every message simulated; analytic: closed-form time on the bottleneck link", 0, 0,
     "transfer|analytic", 0},
    {"network-model", CLI_CHOICE, &R.network_model, "exact", NULL,
     "exact: contention-aware flows (CM02) that match the cost formulas; tcp: SimGrid's "
     "TCP-like default (LV08)",
     0, 0, "exact|tcp", 0},
    {"target-accuracy", CLI_DOUBLE, &R.target, "0.85", NULL,
     "test accuracy for time-to-accuracy (0: none)", 0, 1, NULL, 0},
    {"stop-at-target", CLI_FLAG, &R.stop_at_target, NULL, NULL,
     "stop a run once it reaches --target-accuracy", 0, 0, NULL, 0},
    {"eval-every", CLI_INT, &R.eval_every, "0", "steps",
     "evaluate every N steps (0: at the end of every epoch); not charged simulated time", 0,
     100000000, NULL, 0},
    {"compute-jitter", CLI_DOUBLE, &R.jitter, "0", NULL,
     "sigma of lognormal per-step compute-time noise per worker (mean 1; 0: none)", 0, 5, NULL, 0},
    {"slowdown", CLI_DOUBLE_LIST, &R.slowdown, NULL, "x",
     "compute-time multipliers of GPUs 0,1,2,... (stragglers; GPUs not listed: 1)", 0.01, 1000,
     NULL, 16},
    {"out", CLI_STRING, &R.out, NULL, NULL, "output folder (none: print only)", 0, 0, NULL, 0},
    {"quiet", CLI_FLAG, &R.quiet, NULL, NULL, "no progress line on stderr", 0, 0, NULL, 0},
};
#define N_RUN_OPTS ((int)(sizeof run_opts / sizeof *run_opts))

static const CliOpt policy_opts[] = {
    {"policy", CLI_STRING, &R.policy, "sync", NULL,
     "policy NAME[:key=value,...] (bellows policies)", 0, 0, NULL, 0},
};

static const CliOpt compare_opts[] = {
    {"policies", CLI_STRING, &R.policies, "sync,static:level=1,static:level=2,accordion", NULL,
     "policies to compare, NAME[:k=v,...] separated by commas; the first is the baseline", 0, 0,
     NULL, 0},
    {"jobs", CLI_INT, &R.jobs, "2", "processes", "runs at a time", 1, 64, NULL, 0},
    {"no-plots", CLI_FLAG, &R.no_plots, NULL, NULL, "skip the gnuplot plots", 0, 0, NULL, 0},
};
#define N_COMPARE_OPTS ((int)(sizeof compare_opts / sizeof *compare_opts))

typedef struct {
    CliOpt opts[128];
    int n, set[128];
    int train_at, cluster_at, run_at;
    char *simgrid_args[MAX_SIMGRID_ARGS];
    int n_simgrid;
} Flags;

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Separates SimGrid's --cfg=/--log= options from bellows' flags, then parses the latter. */
static int parse_flags(const char *cmd, int compare, int argc, char **argv, Flags *f, BwError *err)
{
    const CliOpt *tables[] = {train_cli_opts, cluster_cli_opts, run_opts,
                              compare ? compare_opts : policy_opts};
    const int counts[] = {train_cli_n_opts, cluster_cli_n_opts, N_RUN_OPTS,
                          compare ? N_COMPARE_OPTS : 1};
    f->n = cli_concat(f->opts, 128, tables, counts, 4);
    f->train_at = 0;
    f->cluster_at = train_cli_n_opts;
    f->run_at = f->cluster_at + cluster_cli_n_opts;
    /* compare's defaults: long enough for Accordion to check its regimes several times, and
     * evaluations every 30 steps (about a quarter of an epoch) so time-to-accuracy is precise */
    if (compare)
        for (int i = 0; i < f->n; i++) {
            if (strcmp(f->opts[i].name, "epochs") == 0) f->opts[i].def = "20";
            if (strcmp(f->opts[i].name, "eval-every") == 0) f->opts[i].def = "30";
        }
    static char *rest[512];
    int n_rest = 0;
    f->n_simgrid = 0;
    for (int i = 0; i < argc; i++) {
        if (strncmp(argv[i], "--cfg=", 6) == 0 || strncmp(argv[i], "--log=", 6) == 0) {
            if (f->n_simgrid == MAX_SIMGRID_ARGS)
                return bw_fail(err, BW_EUSAGE, "%s: more than %d --cfg/--log options", cmd,
                               MAX_SIMGRID_ARGS);
            f->simgrid_args[f->n_simgrid++] = argv[i];
        } else if (n_rest < 512) {
            rest[n_rest++] = argv[i];
        }
    }
    return cli_parse(cmd, f->opts, f->n, n_rest, rest, f->set, err);
}

static const char *RUN_ABOUT =
    "Simulates data-parallel training of a model on Fashion-MNIST: one SimGrid actor per GPU\n"
    "computes real gradients on its shard, the policy decides each step, the gradients go\n"
    "through the compressor and the collectives on the simulated network. Reports the\n"
    "simulated time to reach --target-accuracy, bytes per worker and where the time went.\n"
    "SimGrid options --cfg=... and --log=... are passed to SimGrid unchanged.";

/* Builds the run's configuration from the parsed flags and loads the data. */
static int setup(const char *cmd, Flags *f, TrainArgs *ta, RunConfig *cfg, Dataset *train,
                 Dataset *test, double *slowdown, BwError *err)
{
    int rc = train_args_resolve(ta, f->set + f->train_at, err);
    if (rc) return rc;
    memset(cfg, 0, sizeof *cfg);
    if ((rc = cluster_from_cli(&cfg->cluster, f->set + f->cluster_at, err))) return rc;
    if (R.slowdown.n > cfg->cluster.workers)
        return bw_fail(err, BW_EUSAGE, "--slowdown: %d values for %d workers", R.slowdown.n,
                       cfg->cluster.workers);
    if (cfg->cluster.workers > DRIVER_MAX_WORKERS)
        return bw_fail(err, BW_EUSAGE, "--workers: at most %d", DRIVER_MAX_WORKERS);
    if (R.stop_at_target && R.target <= 0)
        return bw_fail(err, BW_EUSAGE, "--stop-at-target: needs a --target-accuracy above 0");
    int hier = strcmp(R.algorithm, "hierarchical") == 0;
    if (hier && cfg->cluster.gpus_per_node < 2)
        return bw_fail(err, BW_EUSAGE,
                       "--allreduce hierarchical: needs --gpus-per-node of 2 or more");
    cfg->model = model_find(ta->model);
    cfg->mc = ta->mc;
    cfg->tc = ta->tc;
    cfg->algo = (CollAlgo)coll_algo_parse(R.algorithm);
    cfg->backend = strcmp(R.collectives, "analytic") == 0 ? COLL_ANALYTIC : COLL_TRANSFER;
    cfg->compressor = R.compressor;
    cfg->policy = R.policy;
    cfg->eval_every = R.eval_every;
    cfg->target_accuracy = R.target;
    cfg->stop_at_target = R.stop_at_target;
    cfg->jitter_sigma = R.jitter;
    if (R.slowdown.n) {
        for (int w = 0; w < cfg->cluster.workers; w++)
            slowdown[w] = w < R.slowdown.n ? R.slowdown.v[w] : 1.0;
        cfg->slowdown = slowdown;
    }
    cfg->progress = !R.quiet && isatty(STDERR_FILENO);
    cfg->label = cmd;
    /* One OpenBLAS thread unless asked: the models are small, and compare runs in parallel. */
    openblas_set_num_threads(ta->threads > 0 ? ta->threads : 1);
    if ((rc = dataset_load_fashion_mnist(ta->data_dir, ta->train_samples, ta->test_samples, train,
                                         test, err)))
        return rc;
    cfg->train = train;
    cfg->test = test;
    return BW_OK;
}

static void print_scenario(const RunConfig *cfg, const TrainArgs *ta)
{
    const Cluster *c = &cfg->cluster;
    char bw[32], lat[32];
    units_format_bandwidth(c->bandwidth_Bps, bw, sizeof bw);
    units_format_duration(c->latency_s, lat, sizeof lat);
    printf("# %s on Fashion-MNIST (%d train / %d test), %d epochs, batch %d per worker (%d "
           "global), lr %g, seed %lu\n",
           ta->model, cfg->train->n, cfg->test->n, cfg->tc.epochs, cfg->tc.batch,
           cfg->tc.batch * c->workers, cfg->tc.lr.base_lr, cfg->tc.seed);
    if (c->platform_file) {
        printf("# %d ranks on the hosts of %s (speeds and links from the file), %s allreduce "
               "(%s), %s network model\n",
               c->workers, c->platform_file, R.algorithm, R.collectives, R.network_model);
        return;
    }
    printf("# %d x %s (%.3g TFLOP/s sustained), %d per node, %s, %s / %s, %s allreduce (%s), "
           "%s network model\n",
           c->workers, c->gpu ? c->gpu->name : "custom GPU", c->gpu_flops / 1e12, c->gpus_per_node,
           cluster_topology_name(c->topology), bw, lat, R.algorithm, R.collectives,
           R.network_model);
}

int cmd_run(int argc, char **argv)
{
    BwError err = {{0}};
    Flags f;
    int rc = parse_flags("bellows run", 0, argc, argv, &f, &err);
    if (rc == CLI_HELP) {
        cli_print_help(stdout, "bellows run [flags] [--cfg=SIMGRID_OPTION ...]", RUN_ABOUT, f.opts,
                       f.n);
        return BW_OK;
    }
    TrainArgs ta;
    RunConfig cfg;
    Dataset train = {0}, test = {0};
    static double slowdown[DRIVER_MAX_WORKERS];
    RunResult res;
    memset(&res, 0, sizeof res);
    double t0 = wall_now();
    if (rc == BW_OK) rc = setup("run", &f, &ta, &cfg, &train, &test, slowdown, &err);
    if (rc == BW_OK) rc = driver_check(&cfg, &err);
    if (rc == BW_OK) rc = engine_check_options(f.n_simgrid, f.simgrid_args, R.network_model, &err);
    if (rc == BW_OK) rc = engine_init(f.n_simgrid, f.simgrid_args, R.network_model, &err);
    if (rc == BW_OK && R.out) rc = outdir_create(R.out, &err);
    if (rc) goto fail;
    print_scenario(&cfg, &ta);
    printf("# policy %s, compressor %s\n", cfg.policy, cfg.compressor);
    fflush(stdout);
    if ((rc = driver_run(&cfg, &res, &err))) goto fail;
    results_print(stdout, &cfg, &res);
    if (strcmp(res.status, "diverged") == 0) fprintf(stderr, "bellows: %s\n", res.message);
    if (R.out) {
        RunMeta meta = {"run", ta.model, R.network_model, R.collectives, wall_now() - t0};
        if ((rc = results_write(R.out, &cfg, &meta, &res, &err))) goto fail;
        printf("# wrote %s/summary.json, evals.csv and steps.csv\n", R.out);
    }
    rc = strcmp(res.status, "diverged") == 0 ? BW_ERUNTIME : BW_OK;
    driver_result_free(&res);
    dataset_free(&train);
    dataset_free(&test);
    return rc;
fail:
    fprintf(stderr, "bellows: %s\n", err.msg);
    driver_result_free(&res);
    dataset_free(&train);
    dataset_free(&test);
    return rc;
}

/* ---- compare ---- */

typedef struct {
    int rc;
    char status[32];
    char error[512];
    double final, best, tta, sim_time, bytes, compute, comm, wait;
    long steps;
} CompareRow;

static void folder_name(int i, const char *spec, char *buf, size_t n)
{
    int used = snprintf(buf, n, "%d-", i + 1);
    for (const char *p = spec; *p && (size_t)used + 1 < n; p++)
        buf[used++] = (*p == ':' || *p == ',' || *p == '=') ? '-' : *p;
    buf[used] = '\0';
}

/* The child: one simulation, its folder, its row down the pipe. Never returns. */
static void compare_child(RunConfig *cfg, const TrainArgs *ta, Flags *f, const char *dir, int fd)
{
    CompareRow row;
    memset(&row, 0, sizeof row);
    BwError err = {{0}};
    RunResult res;
    memset(&res, 0, sizeof res);
    double t0 = wall_now();
    int rc = engine_init(f->n_simgrid, f->simgrid_args, R.network_model, &err);
    if (!rc) rc = outdir_create(dir, &err);
    if (!rc) rc = driver_run(cfg, &res, &err);
    if (!rc) {
        RunMeta meta = {"compare", ta->model, R.network_model, R.collectives, wall_now() - t0};
        rc = results_write(dir, cfg, &meta, &res, &err);
    }
    row.rc = rc;
    if (rc) {
        snprintf(row.error, sizeof row.error, "%s", err.msg);
    } else {
        snprintf(row.status, sizeof row.status, "%s", res.status);
        row.final = res.final_accuracy;
        row.best = res.best_accuracy;
        row.tta = res.time_to_accuracy_s;
        row.sim_time = res.sim_time_s;
        row.bytes = res.bytes_per_worker;
        row.compute = res.compute_s;
        row.comm = res.communication_s;
        row.wait = res.wait_s;
        row.steps = res.n_steps;
    }
    ssize_t w = write(fd, &row, sizeof row);
    _exit(w == (ssize_t)sizeof row ? 0 : 1);
}

static int write_compare_csv(const char *dir, char specs[][SPEC_MAX_TEXT], const CompareRow *rows,
                             int n, BwError *err)
{
    OutFile of;
    int rc = outfile_open(&of, dir, "compare.csv", err);
    if (rc) return rc;
    fputs("policy,folder,status,final_test_accuracy,best_test_accuracy,time_to_accuracy_s,"
          "speedup,bytes_per_worker,bytes_ratio,sim_time_s,compute_s,communication_s,wait_s,"
          "steps\n",
          of.f);
    for (int i = 0; i < n; i++) {
        const CompareRow *r = &rows[i];
        char folder[SPEC_MAX_TEXT + 8];
        folder_name(i, specs[i], folder, sizeof folder);
        double speedup = rows[0].tta / r->tta, ratio = r->bytes / rows[0].bytes;
        fprintf(of.f, "\"%s\",%s,%s,%.9g,%.9g,", specs[i], folder, r->status, r->final, r->best);
        if (isnan(r->tta))
            fputs(",", of.f);
        else
            fprintf(of.f, "%.9g,", r->tta);
        if (isfinite(speedup))
            fprintf(of.f, "%.6g,", speedup);
        else
            fputs(",", of.f);
        fprintf(of.f, "%.17g,%.6g,%.9g,%.9g,%.9g,%.9g,%ld\n", r->bytes, ratio, r->sim_time,
                r->compute, r->comm, r->wait, r->steps);
    }
    return outfile_commit(&of, err);
}

static void print_compare_table(char specs[][SPEC_MAX_TEXT], const CompareRow *rows, int n,
                                double target)
{
    printf("\n%-34s %8s %8s %12s %8s %12s %8s %10s\n", "policy", "final", "best", "tta_s",
           "speedup", "MB/worker", "bytes", "sim_s");
    for (int i = 0; i < n; i++) {
        const CompareRow *r = &rows[i];
        char tta[32], sp[32];
        if (isnan(r->tta))
            snprintf(tta, sizeof tta, "not reached");
        else
            snprintf(tta, sizeof tta, "%.4f", r->tta);
        double speedup = rows[0].tta / r->tta;
        if (isfinite(speedup))
            snprintf(sp, sizeof sp, "%.2fx", speedup);
        else
            snprintf(sp, sizeof sp, "-");
        printf("%-34s %8.4f %8.4f %12s %8s %12.3f %7.3fx %10.4f%s%s\n", specs[i], r->final, r->best,
               tta, sp, r->bytes / 1e6, r->bytes / rows[0].bytes, r->sim_time,
               strcmp(r->status, "diverged") == 0 ? "  DIVERGED" : "",
               strcmp(r->status, "reached_target") == 0 ? "  (stopped at target)" : "");
    }
    printf("\ntta_s: simulated seconds to test accuracy %.4f; speedup and bytes: against the "
           "first policy;\nMB/worker: megabytes each worker sent; sim_s: simulated seconds of "
           "the whole run.\n",
           target);
}

/* Plots are a convenience: a failure is reported, and the results stand. */
static void make_plots(const char *out, char specs[][SPEC_MAX_TEXT], int n)
{
    if (!plots_available()) {
        printf("# gnuplot not found: no plots (scripts/setup.sh installs gnuplot-nox)\n");
        return;
    }
    static char folders[MAX_POLICIES][SPEC_MAX_TEXT + 8];
    const char *runs[MAX_POLICIES], *labels[MAX_POLICIES];
    for (int i = 0; i < n; i++) {
        folder_name(i, specs[i], folders[i], sizeof folders[i]);
        runs[i] = folders[i];
        labels[i] = specs[i];
    }
    BwError err;
    if (plots_compare(out, runs, labels, n, &err) != BW_OK)
        fprintf(stderr, "bellows: %s\n", err.msg);
    else
        printf("# plots: %s/accuracy_vs_time.png, accuracy_vs_bytes.png, time_breakdown.png\n",
               out);
}

int cmd_compare(int argc, char **argv)
{
    BwError err = {{0}};
    Flags f;
    int rc = parse_flags("bellows compare", 1, argc, argv, &f, &err);
    if (rc == CLI_HELP) {
        cli_print_help(stdout, "bellows compare [flags] [--cfg=SIMGRID_OPTION ...]",
                       "Runs every policy of --policies on the identical scenario and seed (the "
                       "flags of bellows run),\nprints one table (accuracy, time to "
                       "--target-accuracy, speedup and bytes against the first policy)\nand "
                       "writes DIR/compare.csv and one run folder per policy. With no flags: "
                       "mlp, 8 workers,\n10Gbps star, PowerSGD, policies sync, static rank 1, "
                       "static rank 2 and accordion.",
                       f.opts, f.n);
        return BW_OK;
    }
    char specs[MAX_POLICIES][SPEC_MAX_TEXT];
    int n = 0;
    TrainArgs ta;
    RunConfig cfg;
    Dataset train = {0}, test = {0};
    static double slowdown[DRIVER_MAX_WORKERS];
    CompareRow rows[MAX_POLICIES];
    memset(rows, 0, sizeof rows);
    if (rc == BW_OK) rc = spec_split_list(R.policies, "--policies", specs, MAX_POLICIES, &n, &err);
    if (rc == BW_OK) rc = setup("compare", &f, &ta, &cfg, &train, &test, slowdown, &err);
    for (int i = 0; rc == BW_OK && i < n; i++) {
        cfg.policy = specs[i];
        rc = driver_check(&cfg, &err);
    }
    if (rc == BW_OK) rc = engine_check_options(f.n_simgrid, f.simgrid_args, R.network_model, &err);
    const char *out = R.out ? R.out : "runs/compare";
    if (rc == BW_OK) rc = outdir_create(out, &err);
    if (rc) goto fail;
    print_scenario(&cfg, &ta);
    printf("# compressor %s; %d policies, %d at a time; run folders in %s/\n", cfg.compressor, n,
           R.jobs, out);
    fflush(stdout);
    fflush(stderr);

    /* up to --jobs children at a time; rows come back in order of completion */
    pid_t pids[MAX_POLICIES];
    int fds[MAX_POLICIES], next = 0, running = 0, failed = 0;
    double t0 = wall_now();
    int progress = cfg.progress;
    while (next < n || running > 0) {
        while (next < n && running < R.jobs) {
            int p[2];
            if (pipe(p) != 0) {
                rc = bw_fail(&err, BW_ERUNTIME, "pipe: %s", strerror(errno));
                goto fail;
            }
            char dir[4096], folder[SPEC_MAX_TEXT + 8];
            folder_name(next, specs[next], folder, sizeof folder);
            snprintf(dir, sizeof dir, "%s/%s", out, folder);
            cfg.policy = specs[next];
            cfg.label = specs[next];
            cfg.progress = progress && R.jobs == 1;
            pid_t pid = fork();
            if (pid < 0) {
                rc = bw_fail(&err, BW_ERUNTIME, "fork: %s", strerror(errno));
                goto fail;
            }
            if (pid == 0) {
                close(p[0]);
                compare_child(&cfg, &ta, &f, dir, p[1]);
            }
            close(p[1]);
            pids[next] = pid;
            fds[next] = p[0];
            next++;
            running++;
        }
        int status;
        pid_t done = wait(&status);
        if (done < 0) break;
        for (int i = 0; i < next; i++) {
            if (pids[i] != done) continue;
            running--;
            ssize_t got = read(fds[i], &rows[i], sizeof rows[i]);
            close(fds[i]);
            if (got != (ssize_t)sizeof rows[i]) {
                rows[i].rc = BW_ERUNTIME;
                snprintf(rows[i].error, sizeof rows[i].error, "the run process died (status %d)",
                         status);
                snprintf(rows[i].status, sizeof rows[i].status, "failed");
            }
            if (rows[i].rc) {
                failed++;
                snprintf(rows[i].status, sizeof rows[i].status, "failed");
                rows[i].final = rows[i].best = rows[i].tta = NAN;
                fprintf(stderr, "bellows: compare: %s: %s\n", specs[i], rows[i].error);
            } else if (progress) {
                fprintf(stderr, "[compare] %s done: accuracy %.4f, %.1f wall s so far\n", specs[i],
                        rows[i].final, wall_now() - t0);
            }
        }
    }
    print_compare_table(specs, rows, n, R.target);
    if ((rc = write_compare_csv(out, specs, rows, n, &err))) goto fail;
    printf("# wrote %s/compare.csv (%.1f wall s)\n", out, wall_now() - t0);
    if (!R.no_plots) make_plots(out, specs, n);
    dataset_free(&train);
    dataset_free(&test);
    return failed ? BW_ERUNTIME : BW_OK;
fail:
    fprintf(stderr, "bellows: %s\n", err.msg);
    dataset_free(&train);
    dataset_free(&test);
    return rc;
}
