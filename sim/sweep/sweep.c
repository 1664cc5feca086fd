/* sweep.c: `bellows sweep`: parses the command line into a Sweep, checks every run before
 * anything is written, runs this invocation's runs (each in its own child process, --jobs at a
 * time) while sweep.csv follows them, and reports. Everything the sweep holds is in the Sweep,
 * freed at the end: cmd_sweep can be called again in the same process. */
#include <assert.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "costs_band.h"
#include "engine.h"
#include "xalloc.h"
#include "outfile.h"
#include "sweep.h"
#include "sweep_impl.h"
#include "wallclock.h"

static const char USAGE[] = "bellows sweep [flags, any scenario flag as a list] --out DIR";
static const char ABOUT[] =
    "Runs the cross product of every scenario flag given as a comma-separated list (or an "
    "integer\nrange LO..HI[:xF|:+S]), times --seeds, times --policies; each run in its own "
    "process\n(--jobs at a time) and folder under DIR/runs/. DIR/sweep.csv holds one row per "
    "finished run\n(one column per swept flag, seed, policy, then compare.csv's columns) and is "
    "always complete;\n--resume finishes an interrupted sweep; --shard K/N runs one slice (join "
    "them with bellows merge).\nRuns that differ only in their price (network, GPU, costs) "
    "train once: the others replay that\ntraining's trace, which gives the same files bit for "
    "bit (--train-each trains every run).";

/* A sweep of the command line argv (argc <= SWEEP_MAX_ARGS - 1), nothing parsed yet; NULL if
 * out of memory. -j N and -jN become --jobs. */
static Sweep *sweep_create(int argc, char **argv)
{
    assert(argc < SWEEP_MAX_ARGS);
    Sweep *s = bw_xcalloc(1, sizeof *s, "sweep.c: s");
    if (!s) return NULL;
    s->argc = argc;
    for (int i = 0; i < argc; i++) {
        s->argv[i] = argv[i];
        if (strcmp(argv[i], "-j") == 0)
            s->argv[i] = "--jobs";
        else if (strncmp(argv[i], "-j", 2) == 0) {
            snprintf(s->jobs_arg, sizeof s->jobs_arg, "--jobs=%s", argv[i] + 2);
            s->argv[i] = s->jobs_arg;
        }
    }
    return s;
}

static void sweep_free(Sweep *s)
{
    if (!s) return;
    sweep_groups_free(s);
    free(s->runs);
    free(s->todo);
    free(s->band_r);
    free(s->band_on);
    dataset_free(&s->train);
    dataset_free(&s->test);
    trace_free(&s->trace);
    own_traces_free(&s->own);
    run_flags_release(&s->f);
    free(s);
}

/* --help anywhere prints the help (with the flag table) and returns CLI_HELP. Otherwise the
 * axes and the base command line. */
static int parse_axes(Sweep *s, BwError *err)
{
    Flags *table = bw_xmalloc(
        sizeof *table, "sweep.c: table"); /* the flag table, to tell which arguments are lists */
    if (!table) return bw_fail(err, BW_ERUNTIME, "out of memory");
    int rc = run_parse_flags("bellows sweep", RUN_MODE_SWEEP, 0, NULL, table, err);
    for (int i = 0; i < s->argc && rc == BW_OK; i++)
        if (strcmp(s->argv[i], "--help") == 0 || strcmp(s->argv[i], "-h") == 0) {
            cli_print_help(stdout, USAGE, ABOUT, table->opts, table->n);
            rc = CLI_HELP;
        }
    if (rc == BW_OK) rc = sweep_find_axes(s, table, err);
    free(table);
    return rc;
}

/* The sweep's own flags (from the first point's parse): output, shard, policies, seeds. */
static int own_flags(Sweep *s, BwError *err)
{
    const RunOpts *o = &s->f.run;
    s->out = o->out;
    s->target = o->target;
    s->jobs = o->jobs;
    s->no_plots = o->no_plots;
    s->resume = o->resume;
    s->progress = !o->quiet && isatty(STDERR_FILENO);
    if (!s->out) return bw_fail(err, BW_EUSAGE, "--out: a sweep needs an output folder");
    s->shard_k = 1;
    s->shard_n = 1;
    char extra;
    if (o->shard && (sscanf(o->shard, "%d/%d%c", &s->shard_k, &s->shard_n, &extra) != 2 ||
                     s->shard_n < 1 || s->shard_k < 1 || s->shard_k > s->shard_n))
        return bw_fail(err, BW_EUSAGE, "--shard %s: expected K/N with 1 <= K <= N", o->shard);
    if (o->force && o->resume) return bw_fail(err, BW_EUSAGE, "--force: not with --resume");
    int brc = costs_band_parse(o->cost_band ? o->cost_band : COSTS_BAND_DEFAULT, &s->band_k, err);
    if (brc) return brc;
    if (o->traces) return sweep_own_load(s, err); /* the policies and seeds are the traces' */
    int rc = spec_split_list(o->policies, "--policies", s->policies, SWEEP_MAX_POLICIES,
                             &s->n_policies, err);
    if (rc) return rc;
    for (int k = 0; k < s->n_policies; k++)
        if (strchr(s->policies[k], '@'))
            return bw_fail(err, BW_EUSAGE,
                           "--policies '%s': POLICY@COMPRESSOR is compare's and replay's; a sweep "
                           "sweeps --compressor A,B as an axis",
                           s->policies[k]);
    s->baseline = 0;
    for (int k = s->n_policies - 1; k >= 0; k--)
        if (strcmp(s->policies[k], "sync") == 0) s->baseline = k;
    if (o->record_traces && o->trace)
        return bw_fail(err, BW_EUSAGE, "--record-traces: not with --trace (a replay)");
    return run_seeds(&s->f, s->seeds, &s->n_seeds, err);
}

/* Inputs are never outputs (io_check.h): the first point's files and every value of a swept
 * input flag (--workload a.json,b.json). */
static int check_io(const Sweep *s, BwError *err)
{
    IoFiles io = {0};
    run_io_files(&s->f, &io);
    for (int a = 0; a < s->n_axes; a++)
        for (int v = 0; v < s->axes[a].n; v++)
            io_input(&io, s->axes[a].name, NULL, s->axes[a].value[v]);
    int rc = io_check(&io, err);
    io_free(&io);
    return rc;
}

/* The scenario shared by every run, its data (or --trace) loaded once, and the seeds. */
static int load_scenario(Sweep *s, BwError *err)
{
    s->replay = s->f.run.trace != NULL || s->own.n > 0;
    int rc = run_setup("sweep", &s->f, &s->ta, &s->cfg, s->slowdown, err);
    if (rc == BW_OK && !s->own.n)
        rc = s->replay ? trace_read(s->f.run.trace, &s->trace, err)
                       : run_load_data(&s->ta, &s->cfg, &s->train, &s->test, err);
    const Trace *first = sweep_trace_of(s, 0, 0);
    if (rc == BW_OK && s->replay) { /* the trace's cluster unless --workers */
        s->f.trace_workers = first->h.workers;
        rc = run_setup("sweep", &s->f, &s->ta, &s->cfg, s->slowdown, err);
    }
    if (rc == BW_OK && s->own.n)
        rc = sweep_own_config(s, 0, 0, &s->f, &s->cfg, err);
    else if (rc == BW_OK && s->replay)
        rc = run_apply_trace(&s->f, &s->cfg, &s->trace, err);
    s->train_shape = s->train; /* what a priced run reads of the sets: their sizes */
    s->train_shape.x = NULL, s->train_shape.px = NULL, s->train_shape.y = NULL;
    s->test_shape = s->test;
    s->test_shape.x = NULL, s->test_shape.px = NULL, s->test_shape.y = NULL;
    if (rc == BW_OK)
        rc = engine_check_options(s->f.n_simgrid, s->f.simgrid_args, s->f.run.network_model, err);
    if (rc) return rc;
    s->replay_engine = s->cfg.replay_engine;                            /* every run's */
    if (s->f.run.record_traces) s->cfg.record_trace = "trace.jsonl.gz"; /* in each run's folder */
    run_default_eval_every(&s->f, &s->cfg); /* the first point's, for the header */
    s->cfg.tc.seed = (unsigned long)s->seeds[0];
    return BW_OK;
}

/* A run's configuration: its command line (sweep_run_argv) parsed with run's flags and the
 * defaults of compare and sweep (what the header prints), with the sweep's data or trace. */
static int run_config(Sweep *s, long point, int seed_i, int policy_i, Flags *f, TrainArgs *ta,
                      RunConfig *cfg, BwError *err)
{
    char *argv[SWEEP_MAX_ARGS + 16], store[2 * SWEEP_MAX_AXES + 8][SPEC_MAX_TEXT];
    int argc = sweep_run_argv(s, point, seed_i, policy_i, argv, store);
    int rc = run_parse_flags("bellows sweep", RUN_MODE_SWEEP_RUN, argc, argv, f, err);
    if (s->replay) f->trace_workers = sweep_trace_of(s, seed_i, policy_i)->h.workers;
    if (rc == BW_OK) rc = run_setup("sweep", f, ta, cfg, s->slowdown, err);
    if (rc == BW_OK && s->own.n)
        rc = sweep_own_config(s, seed_i, policy_i, f, cfg, err);
    else if (rc == BW_OK && s->replay)
        rc = run_apply_trace(f, cfg, &s->trace, err);
    cfg->replay_engine = s->replay_engine;
    cfg->train = &s->train;
    cfg->test = &s->test;
    if (rc == BW_OK) run_default_eval_every(f, cfg);
    return rc;
}

/* Every point and policy checked before anything is written: a bad value is a usage error
 * now, not a failed run later (with --traces, every policy's trace of every seed). Counts the
 * points a replay runs fast. */
static int check_points(Sweep *s, BwError *err)
{
    s->fast_points = 0;
    long on_islands = 0; /* points */
    unsigned idle = ~0u; /* flag_effect.c's rows idle at every point (issue 47: noted) */
    const int seeds = s->own.n ? s->n_seeds : 1;
    for (long p = 0; p < s->n_points; p++)
        for (int j = 0; j < s->n_policies * seeds; j++) {
            const int k = j % s->n_policies, first = j == 0;
            Flags f;
            TrainArgs ta;
            RunConfig cfg;
            int rc = run_config(s, p, j / s->n_policies, k, &f, &ta, &cfg, err);
            char one[1][SPEC_MAX_TEXT]; /* the policy's kind against the table (compat.def) */
            snprintf(one[0], sizeof one[0], "%s", cfg.policy ? cfg.policy : "");
            if (!rc && cfg.policy) rc = run_check_compat("sweep", &f, &cfg, one, 1, err);
            if (!rc) rc = driver_check(&cfg, err);
            if (!rc) idle &= run_idle_flags(&f, &cfg, one, 1);
            if (!rc && first) s->fast_points += driver_replay_fast(&cfg, NULL, 0);
            if (!rc && first) sweep_note_point(s, p, &cfg);
            if (!rc && first) sweep_band_note(s, p, &cfg);
            if (!rc && first) on_islands += cfg.cluster.topology == TOPO_ISLANDS;
            if (!rc && !s->own.n && !s->overlaps[k]) s->overlaps[k] = !driver_replay_exact(&cfg);
            run_flags_release(&f);
            if (rc) {
                char label[1024], msg[512];
                sweep_point_label(s, p, label, sizeof label);
                snprintf(msg, sizeof msg, "%s", err->msg);
                return bw_fail(err, rc, "sweep point %s: %s", label, msg);
            }
        }
    /* one meaning for the bytes columns: the WAN's when every point is on islands (runner.h);
     * a sweep across topologies keeps every run's bytes, the WAN's in each run's summary.json */
    s->islands = on_islands == s->n_points;
    return run_note_idle(idle, err);
}

/* The output folder: new or empty (or --force), or (--resume) this sweep's with its finished
 * runs read back. Lists this invocation's runs and writes sweep.csv's header and sweep.json. */
static int prepare_out(Sweep *s, BwError *err)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/sweep.csv", s->out);
    if (!s->resume && !s->f.run.force && access(path, F_OK) == 0) /* finished with --resume */
        return bw_fail(err, BW_EUSAGE,
                       "--out %s: holds a sweep already; add --resume to finish it, or choose "
                       "another folder",
                       s->out);
    int rc = s->resume ? BW_OK : run_check_out(s->out, s->f.run.force, err);
    if (rc == BW_OK) rc = outdir_create(s->out, err);
    if (rc == BW_OK && s->resume) rc = sweep_resume(s, err);
    if (rc) return rc;
    s->n_todo = s->n_already = 0;
    for (long r = 0; r < s->n_runs; r++) {
        if (r % s->shard_n != s->shard_k - 1) continue;
        if (s->runs[r].done)
            s->n_already++;
        else
            s->todo[s->n_todo++] = r;
    }
    rc = sweep_write_csv(s, err); /* the header, at least */
    if (rc == BW_OK) rc = sweep_write_json(s, err);
    return rc;
}

/* The run of job `job` of the phase going on. */
static long job_run(const Sweep *s, int job)
{
    return s->phase_runs[s->phase ? s->n_train + job : job];
}

/* In the child process of job: runs it into its folder (runner_child) and exits. A training
 * records its group's trace; a trace-only one writes nothing else; a run of a group with a trace
 * is priced by replaying it. */
static void sweep_start(int job, int fd, void *ctx)
{
    Sweep *s = ctx;
    long r = job_run(s, job);
    const Run *run = &s->runs[r];
    Group *g = &s->groups[s->group_of[r]];
    BwError err = {{0}};
    Flags f;
    TrainArgs ta;
    RunConfig cfg;
    int rc = run_config(s, run->point, run->seed_i, run->policy_i, &f, &ta, &cfg, &err);
    if (rc) {
        RunRow row = {.rc = rc};
        snprintf(row.error, sizeof row.error, "%s", err.msg);
        ssize_t w = write(fd, &row, sizeof row);
        _exit(w == (ssize_t)sizeof row ? 0 : 1);
    }
    cfg.progress = 0;
    f.run.cost_band = s->f.run.cost_band; /* the run's band in its summary.json, as the sweep's */
    char dir[8192], folder[4096];
    sweep_run_folder(s, r, folder, sizeof folder);
    snprintf(dir, sizeof dir, "%s/%s", s->out, folder);
    char trace[8300];
    if (s->f.run.record_traces) {
        snprintf(trace, sizeof trace, "%s/trace.jsonl.gz", dir);
        cfg.record_trace = trace;
        run_default_eval_every(&f, &cfg); /* a trace keeps every evaluation */
    }
    if (s->phase == 0 && g->record) {
        sweep_trace_path(s, r, trace, sizeof trace);
        cfg.record_trace = trace;
        if (g->trace_only) cfg.stop_at_target = 0; /* a trace to the end: groups.c priced_self */
        cfg.record_decisions = 1; /* its priced twins check the policy is price-blind */
    }
    if (s->phase == 1 && g->priced) {
        cfg.train = &s->train_shape; /* the samples may be gone (run_phases) */
        cfg.test = &s->test_shape;
        cfg.replay = g->trace;
        cfg.priced = 1;
        cfg.replay_engine = REPLAY_AUTO;
    }
    const int results = !(s->phase == 0 && g->trace_only);
    runner_child(&cfg,
                 s->replay ? sweep_trace_of(s, run->seed_i, run->policy_i)->h.model : ta.model,
                 "sweep", &f, s->out, results ? dir : NULL, fd);
}

static void print_progress(const Sweep *s)
{
    double el = wallclock_s() - s->t0;
    long left_runs = s->n_todo - s->done_now;
    double left = el / (double)s->done_now * (double)left_runs;
    fprintf(stderr, "\r\033[K[sweep] %ld/%ld runs done, %ld running, %.0fs elapsed, ~%.0fs left",
            s->done_now, s->n_todo, left_runs < s->jobs ? left_runs : s->jobs, el, left);
    fflush(stderr);
}

/* In the parent, as job ends: a failed run is reported here and the sweep goes on (it is not
 * recorded: --resume runs it again); a finished one goes into sweep.csv. */
static void sweep_done(int job, RunRow *row, void *ctx)
{
    Sweep *s = ctx;
    long r = job_run(s, job);
    Run *run = &s->runs[r];
    const int trace_only = s->phase == 0 && s->groups[s->group_of[r]].trace_only;
    if (s->islands) runner_show_wan(row);
    if (row->rc == BW_EINTR && outfile_interrupted()) return; /* the sweep's one line says it */
    if (!trace_only) s->done_now++;
    if (row->rc) {
        char label[1024];
        sweep_point_label(s, run->point, label, sizeof label);
        fprintf(stderr, "%sbellows: sweep: %s seed %d %s%s: %s\n", s->progress ? "\r\033[K" : "",
                label, s->seeds[run->seed_i], s->policies[run->policy_i],
                trace_only ? " (trained for its trace: its group's runs train instead)" : "",
                row->error);
        s->failed += !trace_only;
        return;
    }
    if (trace_only) return;
    run->row = *row;
    run->done = 1;
    BwError err;
    if (sweep_write_csv(s, &err) != BW_OK) {
        fprintf(stderr, "bellows: %s\n", err.msg);
        s->failed++;
    }
    if (s->progress) print_progress(s);
}

/* "# swept: NAME v1,v2,...; ..." so that the header lines above (the first point's) are not
 * read as every point's. */
static void print_axes(const Sweep *s)
{
    if (s->n_axes == 0) return;
    printf("# swept (the lines above are the first point's):");
    for (int a = 0; a < s->n_axes; a++) {
        printf("%s --%s ", a ? ";" : "", s->axes[a].name);
        for (int v = 0; v < s->axes[a].n; v++) printf("%s%s", v ? "," : "", s->axes[a].value[v]);
    }
    printf("\n");
}

static void print_plan(const Sweep *s)
{
    run_print_scenario(&s->f, &s->cfg, &s->ta);
    print_axes(s);
    if (s->replay) run_print_replay_engine(&s->cfg, s->fast_points, s->n_points);
    if (s->own.n)
        printf("# own traces: each policy's recorded decisions and compressor (%s first); the "
               "baseline is the first trace's policy, %s\n",
               s->own_compressor[0], s->policies[0]);
    printf("# sweep: %ld points x %d seeds x %d policies = %ld runs", s->n_points, s->n_seeds,
           s->n_policies, s->n_runs);
    if (s->shard_n > 1) printf(", shard %d/%d", s->shard_k, s->shard_n);
    printf("; %ld to run, %ld done already; %d at a time; results in %s/sweep.csv\n", s->n_todo,
           s->n_already, s->jobs, s->out);
    sweep_print_groups(s);
    fflush(stdout);
}

/* The trainings, then (their traces read) the priced runs; "interrupted; K of N runs finished"
 * counts the runs of both. */
static int run_phases(Sweep *s, BwError *err)
{
    char traces[4096];
    snprintf(traces, sizeof traces, "%s/traces", s->out);
    int rc = BW_OK;
    for (long i = 0; i < s->n_train && rc == BW_OK; i++)
        if (s->groups[s->group_of[s->phase_runs[i]]].record) rc = outdir_create(traces, err);
    s->phase = 0;
    if (rc == BW_OK) rc = runner_pool((int)s->n_train, s->jobs, sweep_start, sweep_done, s, err);
    rmdir(traces); /* when no training left a trace (they failed): no empty folder stays */
    s->t_trained = wallclock_s();
    if (rc == BW_OK) {
        long trained = s->n_after = sweep_load_traces(s);
        if (!trained && !s->replay) { /* priced runs read only the sets' sizes: lighter forks */
            dataset_free(&s->train);
            dataset_free(&s->test);
        }
        if (trained)
            printf("%s# %ld scenario(s) to train after all: their training did not complete "
                   "(failed, diverged or stopped at the target), and only a completed one is "
                   "priced\n",
                   s->progress ? "\r\033[K" : "", trained);
        fflush(stdout);
        s->phase = 1;
        rc = runner_pool((int)s->n_price, s->jobs, sweep_start, sweep_done, s, err);
    }
    if (rc == BW_EINTR)
        bw_fail(err, BW_EINTR, "interrupted; %ld of %ld runs finished", s->done_now, s->n_todo);
    return rc;
}

/* Runs this invocation's runs and reports. Each run is a child process forked by the runner:
 * SimGrid allows one engine per process. SIGPIPE is ignored meanwhile (a run's pipe may close
 * early) and restored before returning. */
static int run_all(Sweep *s, BwError *err)
{
    print_plan(s);
    s->t0 = wallclock_s();
    struct sigaction ignore;
    memset(&ignore, 0, sizeof ignore);
    ignore.sa_handler = SIG_IGN;
    sigemptyset(&ignore.sa_mask);
    sigaction(SIGPIPE, &ignore, &s->old_sigpipe);
    int rc = run_phases(s, err), plots_failed = 0;
    if (rc == BW_OK) {
        if (s->progress) fputs("\r\033[K", stderr);
        sweep_print_table(s);
        BwError berr;
        if (sweep_write_band(s, &berr) != BW_OK) {
            fprintf(stderr, "bellows: %s\n", berr.msg);
            s->failed++;
        }
        if (s->own.n)
            printf("own traces: each policy's accuracy is that of its own recorded run (its "
                   "trace's evaluations); time and bytes are simulated from its recorded "
                   "decisions\n");
        double end = wallclock_s();
        printf("# wrote %s/sweep.csv (%.1f wall s", s->out, end - s->t0);
        if (s->n_price && !s->n_after) /* the trainings' phase, then the pricing's */
            printf(": %.1f training, %.1f pricing", s->t_trained - s->t0, end - s->t_trained);
        else if (s->n_price) /* the second phase trained some after all */
            printf(": %.1f training, then %.1f for %ld training(s) after all and %ld priced run(s)",
                   s->t_trained - s->t0, end - s->t_trained, s->n_after, s->n_price - s->n_after);
        printf(")\n");
        plots_failed = sweep_plots(s);
    }
    sigaction(SIGPIPE, &s->old_sigpipe, NULL);
    if (rc == BW_EINTR) { /* "interrupted; K of N runs finished" */
        BwError why = *err;
        bw_fail(err, BW_EINTR, "sweep: %s; %s/sweep.csv holds them: add --resume to run the rest",
                why.msg, s->out);
    }
    if (rc == BW_OK && s->failed)
        rc = bw_fail(err, BW_ERUNTIME,
                     "sweep: %d run(s) failed (see above); --resume runs them again", s->failed);
    else if (rc == BW_OK && plots_failed < 0)
        rc = bw_fail(err, BW_EINTR,
                     "sweep: interrupted while looking for gnuplot; %s/sweep.csv "
                     "is written, no plots (bellows plot draws them)",
                     s->out);
    else if (rc == BW_OK && plots_failed)
        rc = bw_fail(err, BW_ERUNTIME, "sweep: plots failed (see above); the results are written");
    return rc;
}

int cmd_sweep(int argc, char **argv, BwError *err)
{
    if (argc > SWEEP_MAX_ARGS - 1) return bw_fail(err, BW_EUSAGE, "sweep: too many arguments");
    runner_supervise(); /* a plug-in's _exit() in this process (its init) is reported */
    Sweep *s = sweep_create(argc, argv);
    if (!s) return bw_fail(err, BW_ERUNTIME, "out of memory");
    int rc = parse_axes(s, err);
    if (rc == BW_OK) rc = sweep_parse_first_point(s, err);
    if (rc == BW_OK) rc = own_flags(s, err);
    if (rc == BW_OK) rc = check_io(s, err);
    if (rc == BW_OK) rc = load_scenario(s, err);
    if (rc == BW_OK) rc = sweep_check_values(s, err);
    if (rc == BW_OK) rc = sweep_plan_runs(s, err);
    if (rc == BW_OK) rc = sweep_check_folders(s, err);
    if (rc == BW_OK) rc = sweep_groups_create(s, err);
    if (rc == BW_OK) rc = check_points(s, err);
    if (rc == BW_OK) rc = sweep_plan_groups(s, err);
    if (rc == BW_OK) rc = prepare_out(s, err);
    if (rc == BW_OK) sweep_plan_phases(s);
    if (rc == BW_OK) rc = run_all(s, err);
    sweep_free(s);
    return rc == CLI_HELP ? BW_OK : rc;
}
