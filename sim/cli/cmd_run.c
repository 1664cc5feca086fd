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

#include "spec.h"
#include "dataset.h"
#include "plots.h"
#include "cli.h"
#include "cluster_args.h"
#include "commands.h"
#include "driver.h"
#include "engine.h"
#include "outfile.h"
#include "results.h"
#include "train_args.h"
#include "run_args.h"
#include "runner.h"
#include "units.h"
#include "wallclock.h"

#define MAX_POLICIES 16

int cmd_run(int argc, char **argv, BwError *err)
{
    Flags f;
    int rc = run_parse_flags("bellows run", RUN_MODE_RUN, argc, argv, &f, err);
    if (rc == CLI_HELP) {
        cli_print_help(stdout, "bellows run [flags] [--cfg=SIMGRID_OPTION ...]", RUN_ABOUT, f.opts,
                       f.n);
        return BW_OK;
    }
    TrainArgs ta;
    RunConfig cfg;
    Dataset train = {0}, test = {0};
    double slowdown[DRIVER_MAX_WORKERS];
    RunResult res;
    memset(&res, 0, sizeof res);
    double t0 = wallclock_s();
    if (rc == BW_OK) rc = run_setup("run", &f, &ta, &cfg, slowdown, err);
    if (rc == BW_OK) rc = run_load_data(&ta, &cfg, &train, &test, err);
    if (rc == BW_OK) rc = driver_check(&cfg, err);
    if (rc == BW_OK)
        rc = engine_check_options(f.n_simgrid, f.simgrid_args, f.run.network_model, err);
    if (rc == BW_OK) rc = engine_init(f.n_simgrid, f.simgrid_args, f.run.network_model, err);
    int existed = f.run.out && access(f.run.out, F_OK) == 0;
    if (rc == BW_OK && f.run.out) rc = outdir_create(f.run.out, err);
    if (rc) goto fail;
    outfile_interrupt_softly();
    run_print_scenario(&f, &cfg, &ta);
    printf("# policy %s, compressor %s\n", cfg.policy, cfg.compressor);
    fflush(stdout);
    if ((rc = driver_run(&cfg, &res, err))) goto fail;
    results_print(stdout, &cfg, &res);
    if (f.run.out) {
        RunMeta meta = {"run", ta.model, f.run.network_model, f.run.collectives,
                        wallclock_s() - t0};
        if ((rc = results_write(f.run.out, &cfg, &meta, &res, err))) goto fail;
        printf("# wrote %s/summary.json, evals.csv and steps.csv\n", f.run.out);
    }
    if (strcmp(res.status, "diverged") == 0) rc = bw_fail(err, BW_ERUNTIME, "%s", res.message);
fail:
    if (rc == BW_EINTR) { /* the driver's "interrupted at step N of M" */
        outdir_remove_if_new(f.run.out, existed);
        BwError why = *err;
        bw_fail(err, BW_EINTR, "%s; nothing written (run it again to start over)", why.msg);
    }
    driver_result_free(&res);
    dataset_free(&train);
    dataset_free(&test);
    run_flags_release(&f);
    return rc;
}

/* ---- compare ---- */

/* Whether row i has a speedup and bytes ratio against the baseline (row 0): neither failed
 * nor diverged (a diverged run's time to accuracy is not a result). */
static int compare_has_ratio(const RunRow *rows, int i)
{
    return !rows[0].rc && !rows[i].rc && strcmp(rows[0].status, "diverged") != 0 &&
           strcmp(rows[i].status, "diverged") != 0;
}

static int write_compare_csv(const char *dir, char specs[][SPEC_MAX_TEXT], const RunRow *rows,
                             int n, BwError *err)
{
    OutFile of;
    int rc = outfile_open(&of, dir, "compare.csv", err);
    if (rc) return rc;
    fputs("policy,folder,", of.f);
    runner_csv_header(of.f);
    fputc('\n', of.f);
    for (int i = 0; i < n; i++) {
        const RunRow *r = &rows[i];
        char folder[SPEC_MAX_TEXT + 8];
        runner_folder_name(i, specs[i], folder, sizeof folder);
        /* no ratio to or of a failed or diverged run */
        double speedup = compare_has_ratio(rows, i) ? rows[0].tta / r->tta : NAN;
        double ratio = compare_has_ratio(rows, i) ? r->bytes / rows[0].bytes : NAN;
        fprintf(of.f, "\"%s\",%s,", specs[i], folder);
        runner_csv_row(of.f, r, speedup, ratio, RUNNER_CSV_COMPARE);
        fputc('\n', of.f);
    }
    return outfile_commit(&of, err);
}

static void print_compare_table(char specs[][SPEC_MAX_TEXT], const RunRow *rows, int n,
                                double target)
{
    printf("\n%-34s %8s %8s %12s %8s %12s %8s %10s\n", "policy", "final", "best", "tta_s",
           "speedup", "MB/worker", "bytes", "sim_s");
    for (int i = 0; i < n; i++) {
        const RunRow *r = &rows[i];
        char tta[32], sp[32];
        if (r->rc) {
            printf("%-34s %8s %8s %12s %8s %12s %8s %10s  FAILED\n", specs[i], "-", "-", "-", "-",
                   "-", "-", "-");
            continue;
        }
        if (isnan(r->tta))
            snprintf(tta, sizeof tta, "not reached");
        else
            snprintf(tta, sizeof tta, "%.4f", r->tta);
        double speedup = compare_has_ratio(rows, i) ? rows[0].tta / r->tta : NAN;
        if (isfinite(speedup))
            snprintf(sp, sizeof sp, "%.2fx", speedup);
        else
            snprintf(sp, sizeof sp, "-");
        char ratio[32] = "-";
        if (compare_has_ratio(rows, i))
            snprintf(ratio, sizeof ratio, "%.3fx", r->bytes / rows[0].bytes);
        printf("%-34s %8.4f %8.4f %12s %8s %12.3f %8s %10.4f%s%s\n", specs[i], r->final, r->best,
               tta, sp, r->bytes / 1e6, ratio, r->sim_time,
               strcmp(r->status, "diverged") == 0 ? "  DIVERGED" : "",
               strcmp(r->status, "reached_target") == 0 ? "  (stopped at target)" : "");
    }
    printf("\ntta_s: simulated seconds to test accuracy %.4f; speedup and bytes: against the "
           "first policy;\nMB/worker: megabytes each worker sent; sim_s: simulated seconds of "
           "the whole run.\n",
           target);
}

/* Plots are a convenience: a failure is reported, and the results stand. */
static void make_plots(const char *out, char specs[][SPEC_MAX_TEXT], int n, double target)
{
    if (!plots_available()) {
        printf("# gnuplot not found: no plots (scripts/setup.sh installs gnuplot-nox)\n");
        return;
    }
    static char folders[MAX_POLICIES][SPEC_MAX_TEXT + 8];
    const char *runs[MAX_POLICIES], *labels[MAX_POLICIES];
    for (int i = 0; i < n; i++) {
        runner_folder_name(i, specs[i], folders[i], sizeof folders[i]);
        runs[i] = folders[i];
        labels[i] = specs[i];
    }
    BwError err;
    if (plots_compare(out, runs, labels, n, target, &err) != BW_OK)
        fprintf(stderr, "bellows: %s\n", err.msg);
    else
        printf("# plots in %s: accuracy_vs_time, accuracy_vs_bytes, bytes_vs_time, "
               "time_breakdown, schedule (.png and .svg)\n",
               out);
}

typedef struct {
    RunConfig *cfg;
    const TrainArgs *ta;
    const Flags *f;
    const char *out;
    char (*specs)[SPEC_MAX_TEXT];
    RunRow *rows;
    double t0;
    int progress, failed;
} CompareJob;

static void compare_start(int i, int fd, void *ctx)
{
    CompareJob *job = ctx;
    char dir[4096], folder[SPEC_MAX_TEXT + 8];
    runner_folder_name(i, job->specs[i], folder, sizeof folder);
    snprintf(dir, sizeof dir, "%s/%s", job->out, folder);
    job->cfg->policy = job->specs[i];
    job->cfg->label = job->specs[i];
    runner_child(job->cfg, job->ta->model, "compare", job->f, dir, fd);
}

static void compare_done(int i, RunRow *row, void *ctx)
{
    CompareJob *job = ctx;
    job->rows[i] = *row;
    if (row->rc) {
        job->failed++;
        job->rows[i].final = job->rows[i].best = job->rows[i].tta = NAN;
        fprintf(stderr, "bellows: compare: %s: %s\n", job->specs[i], row->error);
    } else if (job->progress) {
        fprintf(stderr, "[compare] %s done: accuracy %.4f, %.1f wall s so far\n", job->specs[i],
                row->final, wallclock_s() - job->t0);
    }
}

static int compare_or_replay(int argc, char **argv, int replay, BwError *err);

int cmd_compare(int argc, char **argv, BwError *err)
{
    return compare_or_replay(argc, argv, 0, err);
}

int cmd_replay(int argc, char **argv, BwError *err)
{
    return compare_or_replay(argc, argv, 1, err);
}

static void print_compare_help(int replay, const Flags *f)
{
    if (replay)
        cli_print_help(stdout,
                       "bellows replay --trace FILE --policies SPEC,... [cluster flags] "
                       "[--cfg=SIMGRID_OPTION ...]",
                       "Replays a gradient trace (traces/README.md) under every policy of "
                       "--policies on the given cluster:\nthe trace's norms feed the "
                       "policies, the compute and communication their decisions imply are\n"
                       "simulated, and accuracy comes from the trace's evaluations "
                       "(accuracy_source: trace). Writes\nwhat compare writes.",
                       f->opts, f->n);
    else
        cli_print_help(stdout, "bellows compare [flags] [--cfg=SIMGRID_OPTION ...]",
                       "Runs every policy of --policies on the identical scenario and seed (the "
                       "flags of bellows run),\nprints one table (accuracy, time to "
                       "--target-accuracy, speedup and bytes against the first policy)\nand "
                       "writes DIR/compare.csv and one run folder per policy. With no flags: "
                       "mlp, 8 workers,\n10Gbps star, PowerSGD, policies sync, static rank 1, "
                       "static rank 2 and accordion.",
                       f->opts, f->n);
}

static int compare_or_replay(int argc, char **argv, int replay, BwError *err)
{
    Trace trace = {0};
    Flags f;
    int rc = run_parse_flags(replay ? "bellows replay" : "bellows compare", RUN_MODE_COMPARE, argc,
                             argv, &f, err);
    if (rc == CLI_HELP) {
        print_compare_help(replay, &f);
        return BW_OK;
    }
    char specs[MAX_POLICIES][SPEC_MAX_TEXT];
    int n = 0;
    TrainArgs ta;
    RunConfig cfg;
    Dataset train = {0}, test = {0};
    double slowdown[DRIVER_MAX_WORKERS];
    RunRow rows[MAX_POLICIES];
    memset(rows, 0, sizeof rows);
    if (rc == BW_OK)
        rc = spec_split_list(f.run.policies, "--policies", specs, MAX_POLICIES, &n, err);
    if (rc == BW_OK) rc = run_setup("compare", &f, &ta, &cfg, slowdown, err);
    if (rc == BW_OK && replay && !f.run.trace)
        rc = bw_fail(err, BW_EUSAGE, "--trace: replay needs the trace to replay");
    if (rc == BW_OK && f.run.trace && (rc = trace_read(f.run.trace, &trace, err)) == BW_OK)
        rc = run_apply_trace(&f, &cfg, &trace, err);
    else if (rc == BW_OK && !f.run.trace)
        rc = run_load_data(&ta, &cfg, &train, &test, err);
    for (int i = 0; rc == BW_OK && i < n; i++) {
        cfg.policy = specs[i];
        rc = driver_check(&cfg, err);
    }
    if (rc == BW_OK)
        rc = engine_check_options(f.n_simgrid, f.simgrid_args, f.run.network_model, err);
    const char *out = f.run.out ? f.run.out : "runs/compare";
    int existed = access(out, F_OK) == 0;
    if (rc == BW_OK) rc = outdir_create(out, err);
    if (rc) goto fail;
    run_print_scenario(&f, &cfg, &ta);
    if (cfg.replay) run_print_replay_engine(&cfg, 0, 1);
    printf("# compressor %s; %d policies, %d at a time; run folders in %s/\n", cfg.compressor, n,
           f.run.jobs, out);
    fflush(stdout);
    fflush(stderr);

    CompareJob job = {&cfg, &ta, &f, out, specs, rows, wallclock_s(), cfg.progress, 0};
    if (cfg.replay) ta.model = cfg.replay->h.model;
    cfg.progress = cfg.progress && f.run.jobs == 1;
    if ((rc = runner_pool(n, f.run.jobs, compare_start, compare_done, &job, err))) {
        if (rc == BW_EINTR) { /* runner: "interrupted; K of N runs finished" */
            outdir_remove_if_new(out, existed);
            BwError why = *err;
            bw_fail(err, BW_EINTR, "%s: %s; no compare.csv (run it again for the table)",
                    replay ? "replay" : "compare", why.msg);
        }
        goto fail;
    }
    int failed = job.failed;
    double t0 = job.t0;
    print_compare_table(specs, rows, n, f.run.target);
    if (cfg.replay)
        printf("replay: accuracy is the trace's (its evaluations at the same steps), not the "
               "policy's own; only time and bytes are simulated\n");
    if ((rc = write_compare_csv(out, specs, rows, n, err))) goto fail;
    printf("# wrote %s/compare.csv (%.1f wall s)\n", out, wallclock_s() - t0);
    if (!f.run.no_plots) make_plots(out, specs, n, f.run.target);
    if (failed)
        rc = bw_fail(err, BW_ERUNTIME, "%s: %d of %d policies failed (see above)",
                     replay ? "replay" : "compare", failed, n);
fail:
    dataset_free(&train);
    dataset_free(&test);
    trace_free(&trace);
    run_flags_release(&f);
    return rc;
}
