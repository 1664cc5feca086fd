/* cmd_run.c: `bellows run` (one simulated training run) and `bellows compare` (several policies
 * on the identical scenario, each with every seed of --seeds, one table of means over seeds and
 * speedups paired by seed). SimGrid allows one simulation per process,
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
#include "xalloc.h"
#include "breakdown.h"
#include "cost_band.h"
#include "dataset.h"
#include "plots.h"
#include "cli.h"
#include "cluster_args.h"
#include "compress.h"
#include "csv.h"
#include "commands.h"
#include "compare_impl.h"
#include "driver.h"
#include "engine.h"
#include "flag_class.h"
#include "outfile.h"
#include "own_traces.h"
#include "results.h"
#include "train_args.h"
#include "run_args.h"
#include "runner.h"
#include "units.h"
#include "wallclock.h"

#include <gsl/gsl_statistics_double.h>

int cmd_run(int argc, char **argv, BwError *err)
{
    runner_supervise(); /* a plug-in's _exit() is reported, not taken for success */
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
    int existed = 0; /* --out was there before: an interruption leaves it */
    if (rc == BW_OK) rc = run_setup("run", &f, &ta, &cfg, slowdown, err);
    if (rc == BW_OK && f.run.out) rc = run_check_out(f.run.out, f.run.force, err);
    if (rc == BW_OK) rc = run_load_data(&ta, &cfg, &train, &test, err);
    if (rc == BW_OK) run_default_eval_every(&f, &cfg); /* with --record-trace */
    char one[1][SPEC_MAX_TEXT];
    if (rc == BW_OK) snprintf(one[0], sizeof one[0], "%s", cfg.policy);
    if (rc == BW_OK) rc = run_check_compat("run", &f, &cfg, one, 1, err); /* the policy's kind */
    if (rc == BW_OK) rc = driver_check(&cfg, err);
    if (rc == BW_OK) rc = run_note_idle_flags(&f, &cfg, one, 1, err);
    if (rc == BW_OK)
        rc = engine_check_options(f.n_simgrid, f.simgrid_args, f.run.network_model, err);
    if (rc == BW_OK) rc = engine_init(f.n_simgrid, f.simgrid_args, f.run.network_model, err);
    existed = f.run.out && access(f.run.out, F_OK) == 0;
    if (rc == BW_OK && f.run.out) rc = outdir_create(f.run.out, err);
    if (rc) goto fail;
    outfile_interrupt_softly();
    run_print_scenario(&f, &cfg, &ta);
    run_print_policy(&cfg);
    fflush(stdout);
    runner_guard_exit(cfg.policy);
    rc = driver_run(&cfg, &res, err);
    outfile_unguard_exit();
    if (rc) goto fail;
    char evals[96];
    run_describe_evals(&cfg, evals, sizeof evals);
    results_print(stdout, &cfg, &res, evals);
    if (res.never_exchanged[0]) /* a result the command goes on after: stated, not hidden */
        fprintf(stderr, "bellows: warning: %s; these results are no result of the policy\n",
                res.never_exchanged);
    if (f.run.out) {
        RunMeta meta = {"run",
                        ta.model,
                        f.run.network_model,
                        f.run.collectives,
                        wallclock_s() - t0,
                        cfg.target_accuracy,
                        0,
                        0};
        if ((rc = results_write(f.run.out, &cfg, &meta, &res, err))) goto fail;
        printf("# wrote %s/summary.json, evals.csv and steps.csv\n", f.run.out);
    }
    if (res.output_error[0]) /* the results stand; the trace or timeline does not */
        rc = bw_fail(err, BW_ERUNTIME, "%s (the run's results are %s%s)", res.output_error,
                     f.run.out ? "in " : "printed above", f.run.out ? f.run.out : "");
    else if (strcmp(res.status, "diverged") == 0)
        rc = bw_fail(err, BW_ERUNTIME, "%s", res.message);
fail:
    if (rc) outdir_remove_if_new(f.run.out, existed); /* a failed run leaves no empty folder */
    if (rc == BW_EINTR) { /* the driver's "interrupted at step N of M" */
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

/* Plots are a convenience: a failure leaves the results standing, and is the command's
 * failure (exit 1), with err saying so. They draw the first seed's runs (the legend says which
 * seed). */
static int make_plots(const char *out, const Runs *r, double target, BwError *err)
{
    const int found = plots_find();
    if (found < 0)
        return bw_fail(err, BW_EINTR,
                       "interrupted while looking for gnuplot; the results are "
                       "written, no plots (bellows plot draws them)");
    if (!found) return BW_OK;
    BwError berr;
    if (write_breakdown(out, r, &berr) != BW_OK) fprintf(stderr, "bellows: %s\n", berr.msg);
    char folders[MAX_POLICIES][SPEC_MAX_TEXT + 24], labels_of[MAX_POLICIES][SPEC_MAX_TEXT + 24];
    const char *runs[MAX_POLICIES], *labels[MAX_POLICIES];
    for (int k = 0; k < r->n_pol; k++) {
        char folder[SPEC_MAX_TEXT + 8];
        runner_folder_name(k, r->specs[k], folder, sizeof folder);
        snprintf(folders[k], sizeof folders[k], "seed-%d/%s", r->seeds[0], folder);
        snprintf(labels_of[k], sizeof labels_of[k], "%s(seed-%d)", r->specs[k], r->seeds[0]);
        runs[k] = folders[k];
        labels[k] = labels_of[k];
    }
    if (plots_compare(out, runs, labels, r->n_pol, target, err) != BW_OK) {
        BwError why = *err;
        return bw_fail(err, BW_ERUNTIME, "%s (the results are written)", why.msg);
    }
    printf("# plots in %s (the runs of seed %d): accuracy_vs_time, accuracy_vs_bytes, "
           "bytes_vs_time, time_breakdown (to the target, means over seeds: "
           "time_breakdown.csv), %sschedule (.png and .svg)\n",
           out, r->seeds[0], r->band_k ? "speedup_band (seeds; seeds and costs), " : "");
    return BW_OK;
}

typedef struct {
    RunConfig *cfg;
    const TrainArgs *ta;
    const Flags *f;
    const char *out;
    Runs *r;
    double t0;
    int progress, failed;
} CompareJob;

static void compare_start(int j, int fd, void *ctx)
{
    CompareJob *job = ctx;
    const Runs *r = job->r;
    int k = j % r->n_pol, seed = r->seeds[j / r->n_pol];
    char dir[4096], folder[SPEC_MAX_TEXT + 8];
    runner_folder_name(k, r->specs[k], folder, sizeof folder);
    snprintf(dir, sizeof dir, "%s/seed-%d/%s", job->out, seed, folder);
    job->cfg->policy = r->policy[k];
    job->cfg->compressor = r->compressor[k][0] ? r->compressor[k] : job->f->run.compressor;
    job->cfg->label = r->specs[k];
    job->cfg->tc.seed = (unsigned long)seed;
    if (r->own) { /* this run's own trace (checked in compare_setup), its decisions followed */
        BwError e;
        job->cfg->replay = r->own->run[j];
        run_apply_trace(job->f, job->cfg, r->own->run[j], &e);
    }
    runner_child(job->cfg, job->ta->model, job->cfg->replay ? "replay" : "compare", job->f,
                 job->out, dir, fd);
}

static void compare_done(int j, RunRow *row, void *ctx)
{
    CompareJob *job = ctx;
    const Runs *r = job->r;
    const char *spec = r->specs[j % r->n_pol];
    int seed = r->seeds[j / r->n_pol];
    r->rows[j] = *row;
    if (r->islands) runner_show_wan(&r->rows[j]);
    if (row->rc) {
        job->failed++;
        r->rows[j].final = r->rows[j].best = r->rows[j].tta = NAN;
        fprintf(stderr, "bellows: compare: %s seed %d: %s\n", spec, seed, row->error);
    } else if (job->progress) {
        fprintf(stderr, "[compare] %s seed %d done: accuracy %.4f, %.1f wall s so far\n", spec,
                seed, row->final, wallclock_s() - job->t0);
    }
}

/* The lines compare and replay print before their runs: the scenario, then the compressors,
 * the policies and seeds and where their folders go. */
static void print_compare_header(const Flags *f, const RunConfig *cfg, const TrainArgs *ta,
                                 const Runs *r)
{
    run_print_scenario(f, cfg, ta);
    if (cfg->replay) run_print_replay_engine(cfg, 0, 1);
    int own = 0; /* policies with a compressor of their own (POLICY@COMPRESSOR) */
    for (int k = 0; k < r->n_pol; k++) own += r->compressor[k][0] != '\0';
    if (r->own)
        printf("# own traces: each policy's recorded decisions and compressor (%s first); ",
               r->compressor[0]);
    else if (own)
        printf("# compressor: each POLICY@COMPRESSOR its own, the others %s; ", cfg->compressor);
    else
        printf("# compressor %s; ", cfg->compressor);
    printf("%d policies x %d seeds, %d at a time; run folders in %s/seed-S/\n", r->n_pol,
           r->n_seeds, f->run.jobs, f->run.out);
    fflush(stdout);
    fflush(stderr);
}

/* err (the runner's "interrupted; K of N runs finished") said with what stays in out. */
static void compare_interrupted(const char *out, int out_existed, int replay, BwError *err)
{
    outdir_remove_if_new(out, out_existed);
    BwError why = *err;
    if (access(out, F_OK) == 0) /* the finished runs' folders stay */
        bw_fail(err, BW_EINTR,
                "%s: %s; no compare.csv (the finished runs stay in %s: run it again with "
                "--force to write over them, or into another --out)",
                replay ? "replay" : "compare", why.msg, out);
    else
        bw_fail(err, BW_EINTR, "%s: %s; nothing written (run it again to start over)",
                replay ? "replay" : "compare", why.msg);
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
    CliOpt own[RUN_MAX_OPTS]; /* replay's: the flags it takes */
    int n_own = 0;
    for (int i = 0; i < f->n; i++)
        if (!run_replay_refuses(f, i)) own[n_own++] = f->opts[i];
    if (replay)
        cli_print_help(stdout,
                       "bellows replay --trace FILE --policies SPEC,... [cluster flags] "
                       "[--cfg=SIMGRID_OPTION ...]",
                       "Replays a gradient trace (traces/README.md) under every policy of "
                       "--policies on the given cluster:\nthe trace's norms feed the "
                       "policies, the compute and communication their decisions imply are\n"
                       "simulated, and accuracy comes from the trace's evaluations "
                       "(accuracy_source: trace). Writes\nwhat compare writes.",
                       own, n_own);
    else
        cli_print_help(stdout, "bellows compare [flags] [--cfg=SIMGRID_OPTION ...]",
                       "Runs every policy of --policies on the identical scenario, once per seed "
                       "of --seeds (the flags of\nbellows run), prints one table (means over the "
                       "seeds of accuracy and time to --target-accuracy,\nspeedup against the "
                       "first policy paired by seed with its 95% interval, bytes) and writes\n"
                       "DIR/compare.csv and one run folder per policy and seed, DIR/seed-S/"
                       "K-POLICY/. With no flags:\nmlp, 8 workers, 10Gbps star, PowerSGD, "
                       "policies sync, static rank 1, static rank 2 and\naccordion, seeds 1,2,3, "
                       "into runs/compare (which must be new or empty, or --force).",
                       f->opts, f->n);
}

/* The policies, seeds and scenario checked, the data (or trace) loaded; nothing written. */
/* compare --traces: the policies and seeds are the traces', each run replays its own trace
 * following its recorded decisions. */
static int own_traces_setup(Flags *f, Runs *r, OwnTraces *own, BwError *err)
{
    static const char *const alone[] = {"trace", "policies", "seeds", "seed"};
    for (size_t i = 0; i < sizeof alone / sizeof *alone; i++)
        if (cli_given(f->opts, f->n, f->set, alone[i]))
            return bw_fail(err, BW_EUSAGE,
                           "--%s: compare --traces takes the policies and seeds from the traces",
                           alone[i]);
    if (cli_given(f->opts, f->n, f->set, "compressor")) /* it would be ignored: say so */
        return bw_fail(err, BW_EUSAGE,
                       "--compressor: compare --traces takes each policy's compressor from its "
                       "trace");
    int rc =
        own_traces_load(f->run.traces, own, r->specs, r->policy, r->compressor, MAX_POLICIES, err);
    if (rc) return rc;
    r->n_pol = own->n_pol;
    r->n_seeds = own->n_seeds;
    memcpy(r->seeds, own->seeds, sizeof(int) * (size_t)own->n_seeds);
    r->own = own;
    f->trace_workers = own->t[0].h.workers; /* the cluster unless --workers */
    return BW_OK;
}

/* Every own trace applied once (its evaluations, its batch against --workers) and its policy's
 * stand-in and compressor checked on it. */
static int own_traces_check(const Flags *f, const Runs *r, RunConfig *cfg, BwError *err)
{
    int rc = BW_OK;
    for (int j = 0; rc == BW_OK && j < r->n_pol * r->n_seeds; j++) {
        rc = run_apply_trace(f, cfg, r->own->run[j], err);
        cfg->policy = r->policy[j % r->n_pol];
        cfg->compressor = r->compressor[j % r->n_pol];
        if (rc == BW_OK) rc = driver_check(cfg, err);
    }
    if (rc == BW_OK) rc = run_apply_trace(f, cfg, r->own->run[0], err);
    cfg->follow_decisions = 1;
    return rc;
}

/* --policies' item i split into its policy and compressor; the compressor after an '@' is
 * checked here, so that its errors name the item, not --compressor (a plugin's path holds no
 * '@': "./half@way.so" is refused as a path, not read as the compressor "way.so"). */
static int split_policy_item(Runs *r, int i, BwError *err)
{
    int rc = spec_split_compressor(r->specs[i], "--policies", r->policy[i], r->compressor[i], err);
    if (rc || !r->compressor[i][0]) return rc;
    if (spec_is_path(r->compressor[i]))
        return bw_fail(err, BW_EUSAGE,
                       "--policies '%s': a plugin's path is made of A-Z a-z 0-9 . _ / + - only, "
                       "and '%s' after the '@' is no compressor (expected POLICY@COMPRESSOR, "
                       "static:level=2@powersgd)",
                       r->specs[i], r->compressor[i]);
    char resolved[SPEC_MAX_TEXT];
    return compress_spec_resolved(r->compressor[i], "--policies", resolved, sizeof resolved, err);
}

/* --cost-band (none: COSTS_BAND_DEFAULT) against the run's cost profile: a band needs its stated
 * uncertainty; asked for explicitly without one, a note says there is none. */
static void band_setup(const Flags *f, const RunConfig *cfg, Runs *r)
{
    const CostProfile *p = cfg->costs;
    if (r->band_k && (!p || p->ideal || !p->has_uncertainty)) {
        if (f->run.cost_band)
            fprintf(stderr,
                    "bellows: note: --cost-band: the cost profile %s states no "
                    "uncertainty (sim/costs/README.md): no band\n",
                    p ? p->name : "ideal");
        r->band_k = 0;
    }
}

static int compare_setup(int replay, Flags *f, Runs *r, TrainArgs *ta, RunConfig *cfg,
                         Dataset *train, Dataset *test, Trace *trace, double *slowdown,
                         BwError *err)
{
    int brc =
        costs_band_parse(f->run.cost_band ? f->run.cost_band : COSTS_BAND_DEFAULT, &r->band_k, err);
    if (brc) return brc;
    if (f->run.traces && replay)
        return bw_fail(err, BW_EUSAGE,
                       "--traces: replay replays one --trace under --policies; bellows compare "
                       "--traces prices each policy's own trace");
    if (f->run.traces) {
        int rc = run_check_out(f->run.out, f->run.force, err);
        if (rc == BW_OK) rc = own_traces_setup(f, r, r->own, err);
        if (rc == BW_OK) rc = run_setup("compare", f, ta, cfg, slowdown, err);
        if (rc == BW_OK) rc = own_traces_check(f, r, cfg, err);
        cfg->compressor = f->run.compressor;
        if (rc == BW_OK)
            rc = engine_check_options(f->n_simgrid, f->simgrid_args, f->run.network_model, err);
        r->out_existed = access(f->run.out, F_OK) == 0;
        if (rc == BW_OK) rc = outdir_create(f->run.out, err);
        if (rc) return rc;
        cfg->tc.seed = (unsigned long)r->seeds[0];
        r->stop_at_target = cfg->stop_at_target;
        band_setup(f, cfg, r);
        r->islands = cfg->cluster.topology == TOPO_ISLANDS;
        return BW_OK;
    }
    r->own = NULL; /* not compare --traces */
    int rc = spec_split_list(f->run.policies, "--policies", r->specs, MAX_POLICIES, &r->n_pol, err);
    for (int i = 0; rc == BW_OK && i < r->n_pol; i++) rc = split_policy_item(r, i, err);
    if (rc == BW_OK) rc = run_seeds(f, r->seeds, &r->n_seeds, err);
    if (rc == BW_OK) rc = run_setup("compare", f, ta, cfg, slowdown, err);
    if (rc == BW_OK) rc = run_check_out(f->run.out, f->run.force, err);
    if (rc == BW_OK && replay && !f->run.trace)
        rc = bw_fail(err, BW_EUSAGE, "--trace: replay needs the trace to replay");
    if (rc == BW_OK && f->run.trace && (rc = trace_read(f->run.trace, trace, err)) == BW_OK) {
        f->trace_workers = trace->h.workers; /* the replay's cluster unless --workers */
        rc = run_setup("compare", f, ta, cfg, slowdown, err);
    }
    if (rc == BW_OK && f->run.trace)
        rc = run_apply_trace(f, cfg, trace, err);
    else if (rc == BW_OK && !f->run.trace)
        rc = run_load_data(ta, cfg, train, test, err);
    if (rc == BW_OK) rc = run_check_compat("compare", f, cfg, r->specs, r->n_pol, err);
    for (int i = 0; rc == BW_OK && i < r->n_pol; i++) {
        cfg->policy = r->policy[i];
        cfg->compressor = r->compressor[i][0] ? r->compressor[i] : f->run.compressor;
        rc = driver_check(cfg, err);
    }
    cfg->compressor = f->run.compressor;
    if (rc == BW_OK) rc = run_note_idle_flags(f, cfg, r->specs, r->n_pol, err);
    if (rc == BW_OK)
        rc = engine_check_options(f->n_simgrid, f->simgrid_args, f->run.network_model, err);
    r->out_existed = access(f->run.out, F_OK) == 0;
    if (rc == BW_OK) rc = outdir_create(f->run.out, err);
    if (rc) return rc;
    run_default_eval_every(f, cfg);
    cfg->tc.seed = (unsigned long)r->seeds[0];
    r->stop_at_target = cfg->stop_at_target;
    band_setup(f, cfg, r);
    r->islands = cfg->cluster.topology == TOPO_ISLANDS;
    return BW_OK;
}

/* A list of values of a price flag (--bandwidth 1Gbps,10Gbps), as sweep reads one (a comma in a
 * spec's options or a host list is one value: flag_scenarios), is a usage error that points to
 * bellows sweep: compare's files (compare.csv, DIR/seed-S/K-POLICY/) are one scenario's, and
 * sweep already runs compare's runs at every point, training each policy and seed once. */
static int one_scenario(int argc, char **argv, int replay, BwError *err)
{
    Flags *table = bw_xmalloc(sizeof *table, "cmd_run.c: table");
    if (!table) return bw_fail(err, BW_ERUNTIME, "out of memory");
    int rc = run_parse_flags("bellows compare", RUN_MODE_COMPARE, 0, NULL, table, err);
    for (int i = 0; rc == BW_OK && i < argc; i++) {
        const char *eq = strchr(argv[i], '=');
        size_t len = eq ? (size_t)(eq - argv[i]) : strlen(argv[i]);
        for (int k = 0; k < table->n && strncmp(argv[i], "--", 2) == 0; k++) {
            const CliOpt *o = &table->opts[k];
            if (strlen(o->name) != len - 2 || strncmp(o->name, argv[i] + 2, len - 2) != 0 ||
                o->kind == CLI_FLAG || o->kind == CLI_INT_LIST || o->kind == CLI_DOUBLE_LIST)
                continue;
            const char *v = eq ? eq + 1 : i + 1 < argc ? argv[i + 1] : "";
            if (flag_class(o->name) == FLAG_PRICE && flag_scenarios(o, o->name, v) > 1)
                rc = bw_fail(err, BW_EUSAGE, "--%s %s: %s runs one scenario; for several, %s",
                             o->name, v, replay ? "replay" : "compare",
                             replay ? "bellows sweep --trace takes lists"
                                    : "bellows sweep takes lists (the same runs, each policy and "
                                      "seed trained once and priced in every scenario)");
        }
    }
    run_flags_release(table);
    free(table);
    return rc;
}

static int compare_or_replay(int argc, char **argv, int replay, BwError *err)
{
    runner_supervise(); /* a plug-in's _exit() in this process (its init) is reported too */
    Trace trace = {0};
    Flags f;
    int rc = one_scenario(argc, argv, replay, err);
    if (rc) return rc;
    rc = run_parse_flags(replay ? "bellows replay" : "bellows compare", RUN_MODE_COMPARE, argc,
                         argv, &f, err);
    if (rc == CLI_HELP) {
        print_compare_help(replay, &f);
        return BW_OK;
    }
    char specs[MAX_POLICIES][SPEC_MAX_TEXT], policy[MAX_POLICIES][SPEC_MAX_TEXT],
        compressor[MAX_POLICIES][SPEC_MAX_TEXT];
    OwnTraces own = {0};
    Runs r = {.specs = specs, .policy = policy, .compressor = compressor, .own = &own};
    TrainArgs ta;
    RunConfig cfg;
    Dataset train = {0}, test = {0};
    double slowdown[DRIVER_MAX_WORKERS];
    PolicyStats st[MAX_POLICIES];
    if (rc == BW_OK)
        rc = compare_setup(replay, &f, &r, &ta, &cfg, &train, &test, &trace, slowdown, err);
    if (rc) goto fail;
    const char *out = f.run.out;
    int n = r.n_pol * r.n_seeds;
    r.rows = bw_xcalloc((size_t)n, sizeof *r.rows, "cmd_run.c: r.rows");
    if (!r.rows) {
        rc = bw_fail(err, BW_ERUNTIME, "out of memory");
        goto fail;
    }
    print_compare_header(&f, &cfg, &ta, &r);

    CompareJob job = {&cfg, &ta, &f, out, &r, wallclock_s(), cfg.progress, 0};
    if (cfg.replay) ta.model = cfg.replay->h.model;
    cfg.progress = cfg.progress && f.run.jobs == 1;
    if ((rc = runner_pool(n, f.run.jobs, compare_start, compare_done, &job, err))) {
        if (rc == BW_EINTR) compare_interrupted(out, r.out_existed, replay, err);
        goto fail;
    }
    for (int k = 0; k < r.n_pol; k++) policy_stats(&r, k, &st[k]);
    if (r.band_k) compute_bands(out, &r, cfg.costs, st);
    char evals[96];
    run_describe_evals(&cfg, evals, sizeof evals);
    print_compare_table(&r, st, f.run.target, evals,
                        cfg.replay ? "the trace's evaluations set it: record the trace with a "
                                     "smaller --eval-every"
                                   : "a smaller --eval-every sharpens them");
    if (r.own)
        printf("own traces: each policy's accuracy is that of its own recorded run (its trace's "
               "evaluations); time and bytes are simulated from its recorded decisions\n");
    else if (cfg.replay)
        printf("replay: accuracy is the trace's (its evaluations at the same steps), not the "
               "policy's own; only time and bytes are simulated\n");
    if ((rc = write_compare_csv(out, &r, st, err))) goto fail;
    printf("# wrote %s/compare.csv (%.1f wall s)\n", out, wallclock_s() - job.t0);
    if (!f.run.no_plots) rc = make_plots(out, &r, f.run.target, err);
    if (job.failed)
        rc = bw_fail(err, BW_ERUNTIME, "%s: %d of %d runs failed (see above)",
                     replay ? "replay" : "compare", job.failed, n);
fail:
    free(r.rows);
    dataset_free(&train);
    dataset_free(&test);
    trace_free(&trace);
    own_traces_free(&own);
    run_flags_release(&f);
    return rc;
}
