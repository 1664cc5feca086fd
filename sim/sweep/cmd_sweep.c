/* cmd_sweep.c: `bellows sweep`, the cross product of scenario flags given as lists
 * (`--bandwidth 1Gbps,10Gbps --latency 1us,10us --workers 8,32`), times --seeds, times
 * --policies, each run in its own child process and folder; and `bellows merge`, which joins the
 * sweep.csv files of shards. sweep.csv is rewritten atomically (temporary file, fsync, rename)
 * each time a run ends, with rows in the sweep's own order, so a sweep killed at any moment
 * leaves a complete file holding exactly the finished runs, and --resume runs the rest. */
#include <ctype.h>
#include <dirent.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gsl/gsl_statistics_double.h>

#include "spec.h"
#include "plots.h"
#include "sweep.h"
#include "csv.h"
#include "engine.h"
#include "outfile.h"
#include "run_args.h"
#include "runner.h"
#include "wallclock.h"

#define MAX_AXES     8
#define MAX_VALUES   64
#define MAX_ARGS     256
#define MAX_POLICIES 16

/* Flags a sweep may not vary: the data is loaded once, and these shape the sweep itself. */
static const char *const NOT_SWEPT[] = {
    "seed",           "data-dir", "train-samples", "test-samples", "out",
    "threads",        "shard",    "platform",      "hosts",        "policies",
    "jobs",           "seeds",    "resume",        "quiet",        "no-plots",
    "stop-at-target", "nesterov", "nic-per-gpu",   "replay-engine"};
/* Flags of the sweep itself, dropped from the command line of each run. */
static const char *const SWEEP_ONLY[] = {"policies", "jobs",         "seeds",    "resume",
                                         "shard",    "out",          "no-plots", "seed",
                                         "trace",    "replay-engine"};

typedef struct {
    char name[64];
    int n;
    char value[MAX_VALUES][SPEC_MAX_TEXT];
} Axis;

typedef struct {
    int done;
    int point, seed_i, policy_i;
    char values[MAX_AXES][SPEC_MAX_TEXT]; /* as read back from sweep.csv */
    RunRow row;
} Run;

static struct {
    Axis axes[MAX_AXES];
    int n_axes;
    char *base[MAX_ARGS]; /* the command line of every run, without the swept flags */
    int n_base;
    int seeds[CLI_LIST_MAX], n_seeds;
    char policies[MAX_POLICIES][SPEC_MAX_TEXT];
    int n_policies, baseline;
    long n_points, n_runs;
    Run *runs;
    const char *out;
    int jobs, shard_k, shard_n, progress, no_plots;
    double target; /* --target-accuracy, or its first value when swept */
    long done_now, total_now;
    double t0;
    Dataset train, test;
    Trace trace; /* --trace: every run replays it */
    int replay;
    ReplayEngine replay_engine;
    TrainArgs ta;
    RunConfig cfg;
    Flags f;
    double slowdown[DRIVER_MAX_WORKERS];
} W;

static int in_list(const char *name, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(list[i], name) == 0) return 1;
    return 0;
}

static const CliOpt *find_opt(const Flags *f, const char *name)
{
    for (int i = 0; i < f->n; i++)
        if (strcmp(f->opts[i].name, name) == 0) return &f->opts[i];
    return NULL;
}

/* "8..64:x2" (times), "1..4" or "0..100:+25" (plus) for integer flags. */
static int expand_range(Axis *ax, const char *text, BwError *err)
{
    long lo, hi, step = 1;
    char kind = '+', tail[32] = "";
    if (sscanf(text, "%ld..%ld%31s", &lo, &hi, tail) < 2)
        return bw_fail(err, BW_EUSAGE, "--%s %s: expected LO..HI[:xF|:+S]", ax->name, text);
    if (tail[0] && (sscanf(tail, ":%c%ld", &kind, &step) != 2 || (kind != 'x' && kind != '+')))
        return bw_fail(err, BW_EUSAGE, "--%s %s: expected LO..HI[:xF|:+S]", ax->name, text);
    if (hi < lo || step < 1 || (kind == 'x' && (step < 2 || lo < 1)))
        return bw_fail(err, BW_EUSAGE, "--%s %s: an empty or endless range", ax->name, text);
    ax->n = 0;
    for (long v = lo; v <= hi; v = kind == 'x' ? v * step : v + step) {
        if (ax->n == MAX_VALUES)
            return bw_fail(err, BW_EUSAGE, "--%s %s: more than %d values", ax->name, text,
                           MAX_VALUES);
        snprintf(ax->value[ax->n++], SPEC_MAX_TEXT, "%ld", v);
    }
    return BW_OK;
}

/* Splits argv into the swept axes and the base command line of every run. */
static int find_axes(int argc, char **argv, const Flags *table, BwError *err)
{
    W.n_axes = 0;
    W.n_base = 0;
    for (int i = 0; i < argc; i++) {
        const char *arg = argv[i];
        if (strncmp(arg, "--", 2) != 0 || strncmp(arg, "--cfg=", 6) == 0 ||
            strncmp(arg, "--log=", 6) == 0) {
            W.base[W.n_base++] = argv[i];
            continue;
        }
        char name[64];
        const char *eq = strchr(arg, '='), *value = NULL;
        size_t len = eq ? (size_t)(eq - arg - 2) : strlen(arg + 2);
        snprintf(name, sizeof name, "%.*s", (int)(len < 63 ? len : 63), arg + 2);
        const CliOpt *o = find_opt(table, name);
        int takes_value = o && o->kind != CLI_FLAG;
        if (takes_value) value = eq ? eq + 1 : (i + 1 < argc ? argv[i + 1] : NULL);
        int consumed = takes_value && !eq && value ? 2 : 1;
        int listy = value && (strchr(value, ',') || strstr(value, ".."));
        int sweepable = o && value &&
                        !in_list(name, NOT_SWEPT, sizeof NOT_SWEPT / sizeof *NOT_SWEPT) &&
                        o->kind != CLI_INT_LIST && o->kind != CLI_DOUBLE_LIST;
        if (listy && sweepable && (o->kind != CLI_STRING || strcmp(name, "compressor") == 0)) {
            for (int a = 0; a < W.n_axes; a++)
                if (strcmp(W.axes[a].name, name) == 0)
                    return bw_fail(err, BW_EUSAGE, "--%s: given twice", name);
            if (W.n_axes == MAX_AXES)
                return bw_fail(err, BW_EUSAGE, "sweep: at most %d swept flags", MAX_AXES);
            Axis *ax = &W.axes[W.n_axes++];
            snprintf(ax->name, sizeof ax->name, "%s", name);
            int rc;
            if (strstr(value, "..") && (o->kind == CLI_INT || o->kind == CLI_LONG))
                rc = expand_range(ax, value, err);
            else {
                char flag[80];
                snprintf(flag, sizeof flag, "--%s", name);
                rc = spec_split_list(value, flag, ax->value, MAX_VALUES, &ax->n, err);
                if (rc == BW_OK && o->kind != CLI_STRING) /* plain lists: split on every comma */
                    for (int k = 0; k < ax->n; k++)
                        if (strchr(ax->value[k], ','))
                            return bw_fail(err, BW_EUSAGE, "--%s %s: expected values", name, value);
            }
            if (rc) return rc;
            i += consumed - 1;
            continue;
        }
        if (in_list(name, SWEEP_ONLY, sizeof SWEEP_ONLY / sizeof *SWEEP_ONLY)) {
            i += consumed - 1;
            continue;
        }
        for (int k = 0; k < consumed && W.n_base < MAX_ARGS - 2 * MAX_AXES - 8; k++)
            W.base[W.n_base++] = argv[i + k];
        i += consumed - 1;
    }
    return BW_OK;
}

/* The command line of one run: the base, the point's values, the seed and the policy. */
static int run_argv(long point, int seed_i, int policy_i, char **out, char store[][SPEC_MAX_TEXT])
{
    int n = 0, s = 0;
    for (int i = 0; i < W.n_base; i++) out[n++] = W.base[i];
    long rest = point;
    for (int a = W.n_axes - 1; a >= 0; a--) {
        int v = (int)(rest % W.axes[a].n);
        rest /= W.axes[a].n;
        snprintf(store[s], SPEC_MAX_TEXT, "--%s", W.axes[a].name);
        out[n++] = store[s++];
        out[n++] = W.axes[a].value[v];
    }
    snprintf(store[s], SPEC_MAX_TEXT, "--seed");
    out[n++] = store[s++];
    snprintf(store[s], SPEC_MAX_TEXT, "%d", W.seeds[seed_i]);
    out[n++] = store[s++];
    snprintf(store[s], SPEC_MAX_TEXT, "--policy");
    out[n++] = store[s++];
    out[n++] = W.policies[policy_i];
    out[n] = NULL;
    return n;
}

static const char *point_value(long point, int a)
{
    long rest = point;
    for (int b = W.n_axes - 1; b > a; b--) rest /= W.axes[b].n;
    return W.axes[a].value[rest % W.axes[a].n];
}

static void point_label(long point, char *buf, size_t n)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int a = 0; a < W.n_axes && used < n; a++)
        used += (size_t)snprintf(buf + used, n - used, "%s%s=%s", a ? " " : "", W.axes[a].name,
                                 point_value(point, a));
    if (W.n_axes == 0) snprintf(buf, n, "(one point)");
}

/* A value as it appears in a folder name. */
static void folder_value(const char *v, char *buf, size_t n)
{
    size_t used = 0;
    for (const char *p = v; *p && used + 1 < n; p++)
        buf[used++] = isalnum((unsigned char)*p) || *p == '.' ? *p : '-';
    buf[used] = '\0';
}

static void run_folder(long r, char *buf, size_t n)
{
    const Run *run = &W.runs[r];
    char pol[SPEC_MAX_TEXT + 8];
    runner_folder_name(run->policy_i, W.policies[run->policy_i], pol, sizeof pol);
    size_t used = (size_t)snprintf(buf, n, "runs/");
    for (int a = 0; a < W.n_axes && used < n; a++) {
        char v[SPEC_MAX_TEXT];
        folder_value(point_value(run->point, a), v, sizeof v);
        used += (size_t)snprintf(buf + used, n - used, "%s%s-%s", a ? "_" : "", W.axes[a].name, v);
    }
    snprintf(buf + used, n - used, "%sseed-%d/%s", W.n_axes ? "/" : "", W.seeds[run->seed_i], pol);
}

/* ---- sweep.csv ---- */

static void write_header(FILE *f)
{
    for (int a = 0; a < W.n_axes; a++) fprintf(f, "%s,", W.axes[a].name);
    fputs("seed,policy,folder,", f);
    runner_csv_header(f);
    fputs(",run_index\n", f);
}

static void num(FILE *f, double x, const char *fmt)
{
    if (isfinite(x)) fprintf(f, fmt, x);
}

static const Run *baseline_of(const Run *run)
{
    long r = (run - W.runs) - run->policy_i + W.baseline;
    return W.runs[r].done && W.runs[r].row.rc == BW_OK ? &W.runs[r] : NULL;
}

static int write_sweep_csv(BwError *err)
{
    OutFile of;
    int rc = outfile_open(&of, W.out, "sweep.csv", err);
    if (rc) return rc;
    write_header(of.f);
    for (long r = 0; r < W.n_runs; r++) {
        const Run *run = &W.runs[r];
        if (!run->done) continue;
        const RunRow *x = &run->row;
        for (int a = 0; a < W.n_axes; a++) {
            csv_field(of.f, point_value(run->point, a));
            fputc(',', of.f);
        }
        char folder[4096];
        run_folder(r, folder, sizeof folder);
        fprintf(of.f, "%d,", W.seeds[run->seed_i]);
        csv_field(of.f, W.policies[run->policy_i]);
        fputc(',', of.f);
        csv_field(of.f, folder);
        fputc(',', of.f);
        const Run *b = baseline_of(run);
        runner_csv_row(of.f, x, b ? b->row.tta / x->tta : NAN, b ? x->bytes / b->row.bytes : NAN,
                       RUNNER_CSV_SWEEP);
        fprintf(of.f, ",%ld\n", r);
    }
    return outfile_commit(&of, err);
}

/* --resume: marks the runs already in sweep.csv as done, with their figures. */
static int read_finished(BwError *err)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/sweep.csv", W.out);
    FILE *f = fopen(path, "r");
    if (!f) return BW_OK; /* nothing finished yet */
    char header[4096], expect[4096];
    FILE *mem = fmemopen(expect, sizeof expect, "w");
    write_header(mem);
    fclose(mem);
    if (!fgets(header, sizeof header, f) || strcmp(header, expect) != 0) {
        fclose(f);
        return bw_fail(err, BW_EUSAGE,
                       "--resume: %s has other columns than this sweep (different swept flags?)",
                       path);
    }
    static char line[1 << 16];
    int lineno = 1;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        line[strcspn(line, "\n")] = '\0';
        char *fld[MAX_AXES + 20];
        int n = csv_split(line, fld, MAX_AXES + 20);
        if (n != W.n_axes + 16) {
            fclose(f);
            return bw_fail(err, BW_EUSAGE, "--resume: %s line %d: expected %d fields, got %d", path,
                           lineno, W.n_axes + 16, n);
        }
        /* the run of that index must have these values, seed and policy */
        char *end;
        long r = strtol(fld[W.n_axes + 15], &end, 10);
        int ok = *end == '\0' && r >= 0 && r < W.n_runs;
        const Run *want = ok ? &W.runs[r] : NULL;
        for (int a = 0; a < W.n_axes && ok; a++)
            ok = strcmp(point_value(want->point, a), fld[a]) == 0;
        ok = ok && atoi(fld[W.n_axes]) == W.seeds[want->seed_i] &&
             strcmp(W.policies[want->policy_i], fld[W.n_axes + 1]) == 0;
        if (!ok) {
            fclose(f);
            return bw_fail(err, BW_EUSAGE,
                           "--resume: %s line %d is not a run of this sweep (other values, seeds "
                           "or policies?)",
                           path, lineno);
        }
        Run *run = &W.runs[r];
        if (run->done) {
            fclose(f);
            return bw_fail(err, BW_EUSAGE, "--resume: %s line %d repeats a run", path, lineno);
        }
        const char **x = (const char **)fld + W.n_axes + 3;
        run->done = 1;
        RunRow *row = &run->row;
        snprintf(row->status, sizeof row->status, "%s", x[0]);
        row->final = csv_num(x[1]);
        row->best = csv_num(x[2]);
        row->tta = csv_num(x[3]);
        row->bytes = csv_num(x[5]);
        row->sim_time = csv_num(x[7]);
        row->compute = csv_num(x[8]);
        row->comm = csv_num(x[9]);
        row->wait = csv_num(x[10]);
        row->steps = atol(x[11]);
    }
    fclose(f);
    return BW_OK;
}

/* sweep.json: what the sweep is, for --resume and bellows merge to refuse a different sweep. */
static void sweep_json(FILE *f)
{
    char base[8192];
    size_t used = 0;
    base[0] = '\0';
    for (int i = 0; i < W.n_base && used < sizeof base; i++)
        used += (size_t)snprintf(base + used, sizeof base - used, "%s%s", i ? " " : "", W.base[i]);
    JsonW w;
    jsonw_begin(&w, f);
    jsonw_object(&w, NULL);
    jsonw_string(&w, "command", "sweep");
    jsonw_string(&w, "base_args", base);
    jsonw_array(&w, "axes");
    for (int a = 0; a < W.n_axes; a++) {
        jsonw_object(&w, NULL);
        jsonw_string(&w, "flag", W.axes[a].name);
        jsonw_array(&w, "values");
        for (int k = 0; k < W.axes[a].n; k++) jsonw_string(&w, NULL, W.axes[a].value[k]);
        jsonw_end_array(&w);
        jsonw_end_object(&w);
    }
    jsonw_end_array(&w);
    jsonw_array(&w, "seeds");
    for (int k = 0; k < W.n_seeds; k++) jsonw_long(&w, NULL, W.seeds[k]);
    jsonw_end_array(&w);
    jsonw_array(&w, "policies");
    for (int k = 0; k < W.n_policies; k++) jsonw_string(&w, NULL, W.policies[k]);
    jsonw_end_array(&w);
    jsonw_string(&w, "baseline", W.policies[W.baseline]);
    jsonw_long(&w, "runs", W.n_runs);
    char shard[32];
    snprintf(shard, sizeof shard, "%d/%d", W.shard_k, W.shard_n);
    jsonw_string(&w, "shard", shard);
    jsonw_end_object(&w);
}

static int write_sweep_json(BwError *err)
{
    OutFile of;
    int rc = outfile_open(&of, W.out, "sweep.json", err);
    if (rc) return rc;
    sweep_json(of.f);
    return outfile_commit(&of, err);
}

/* Text without its "shard" line: equal for the shards and resumptions of one sweep. */
static char *without_shard(const char *text)
{
    char *out = malloc(strlen(text) + 1), *o = out;
    for (const char *p = text; *p;) {
        const char *eol = strchr(p, '\n');
        size_t len = eol ? (size_t)(eol - p + 1) : strlen(p);
        memcpy(o, p, len);
        o[len] = '\0';
        if (!strstr(o, "\"shard\"")) o += len; /* keep the line */
        p += len;
    }
    *o = '\0';
    return out;
}

/* --resume: the folder must hold this very sweep (same flags, axes, seeds and policies). */
static int check_same_sweep(BwError *err)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/sweep.json", W.out);
    size_t len = 0;
    FILE *f = fopen(path, "r");
    if (!f) return BW_OK; /* interrupted before it was written */
    char *old = malloc(1 << 20);
    len = fread(old, 1, (1 << 20) - 1, f);
    old[len] = '\0';
    fclose(f);
    char *now = NULL;
    size_t now_len = 0;
    FILE *mem = open_memstream(&now, &now_len);
    sweep_json(mem);
    fclose(mem);
    char *a = without_shard(old), *b = without_shard(now);
    int same = strcmp(a, b) == 0;
    free(old);
    free(now);
    free(a);
    free(b);
    if (!same)
        return bw_fail(err, BW_EUSAGE,
                       "--resume: %s holds a different sweep (other flags, values, seeds or "
                       "policies; see its sweep.json)",
                       W.out);
    return BW_OK;
}

/* A sweep killed with SIGKILL while rewriting sweep.csv leaves its temporary file behind. */
static void remove_stale_temporaries(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strncmp(e->d_name, ".sweep.csv.tmp.", 15) == 0 ||
            strncmp(e->d_name, ".sweep.json.tmp.", 16) == 0) {
            char path[8192];
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            unlink(path);
        }
    closedir(d);
}

/* ---- running ---- */

static long *TODO; /* run indices of this invocation, in order */

/* A run's configuration: its command line (run_argv) parsed as bellows run would, with the
 * sweep's data or trace. */
static int run_config(long point, int seed_i, int policy_i, Flags *f, TrainArgs *ta, RunConfig *cfg,
                      BwError *err)
{
    char *argv[MAX_ARGS + 16], store[2 * MAX_AXES + 8][SPEC_MAX_TEXT];
    int argc = run_argv(point, seed_i, policy_i, argv, store);
    int rc = run_parse_flags("bellows sweep", RUN_MODE_RUN, argc, argv, f, err);
    if (rc == BW_OK) rc = run_setup("sweep", f, ta, cfg, W.slowdown, err);
    if (rc == BW_OK && W.replay) rc = run_apply_trace(f, cfg, &W.trace, err);
    cfg->replay_engine = W.replay_engine;
    cfg->train = &W.train;
    cfg->test = &W.test;
    return rc;
}

static void sweep_start(int job, int fd, void *ctx)
{
    (void)ctx;
    long r = TODO[job];
    const Run *run = &W.runs[r];
    BwError err = {{0}};
    Flags f;
    TrainArgs ta;
    RunConfig cfg;
    int rc = run_config(run->point, run->seed_i, run->policy_i, &f, &ta, &cfg, &err);
    if (rc) {
        RunRow row = {.rc = rc};
        snprintf(row.error, sizeof row.error, "%s", err.msg);
        ssize_t w = write(fd, &row, sizeof row);
        _exit(w == (ssize_t)sizeof row ? 0 : 1);
    }
    cfg.progress = 0;
    char dir[8192], folder[4096];
    run_folder(r, folder, sizeof folder);
    snprintf(dir, sizeof dir, "%s/%s", W.out, folder);
    runner_child(&cfg, W.replay ? W.trace.h.model : ta.model, "sweep", &f, dir, fd);
}

static void sweep_done(int job, RunRow *row, void *ctx)
{
    int *failed = ctx;
    long r = TODO[job];
    Run *run = &W.runs[r];
    W.done_now++;
    if (row->rc) {
        char label[1024];
        point_label(run->point, label, sizeof label);
        fprintf(stderr, "%sbellows: sweep: %s seed %d %s: %s\n", W.progress ? "\r\033[K" : "",
                label, W.seeds[run->seed_i], W.policies[run->policy_i], row->error);
        (*failed)++;
        return; /* not recorded: --resume runs it again */
    }
    run->row = *row;
    run->done = 1;
    BwError err;
    if (write_sweep_csv(&err) != BW_OK) {
        fprintf(stderr, "bellows: %s\n", err.msg);
        (*failed)++;
    }
    if (W.progress) {
        double el = wallclock_s() - W.t0;
        double left = el / (double)W.done_now * (double)(W.total_now - W.done_now);
        fprintf(stderr,
                "\r\033[K[sweep] %ld/%ld runs done, %ld running, %.0fs elapsed, ~%.0fs left",
                W.done_now, W.total_now,
                (W.total_now - W.done_now) < W.jobs ? W.total_now - W.done_now : W.jobs, el, left);
        fflush(stderr);
    }
}

/* ---- the final table ---- */

static void print_table(void)
{
    printf("\n%-40s %-30s %12s %9s %8s %8s %8s\n", "scenario", "policy", "tta_s", "+-sd", "speedup",
           "bytes", "final");
    for (long p = 0; p < W.n_points; p++) {
        char label[1024];
        point_label(p, label, sizeof label);
        double mean_tta[MAX_POLICIES], mean_bytes[MAX_POLICIES];
        int best = -1;
        for (int k = 0; k < W.n_policies; k++) {
            double tta[CLI_LIST_MAX], bytes = 0;
            int n = 0, done = 0;
            for (int s = 0; s < W.n_seeds; s++) {
                const Run *run = &W.runs[(p * W.n_seeds + s) * W.n_policies + k];
                if (!run->done) continue;
                done++;
                bytes += run->row.bytes;
                if (isfinite(run->row.tta)) tta[n++] = run->row.tta;
            }
            mean_tta[k] = n == W.n_seeds && n > 0 ? gsl_stats_mean(tta, 1, (size_t)n) : NAN;
            mean_bytes[k] = done ? bytes / done : NAN;
            if (isfinite(mean_tta[k]) && (best < 0 || mean_tta[k] < mean_tta[best])) best = k;
        }
        for (int k = 0; k < W.n_policies; k++) {
            double tta[CLI_LIST_MAX], fin = 0;
            int n = 0, done = 0;
            for (int s = 0; s < W.n_seeds; s++) {
                const Run *run = &W.runs[(p * W.n_seeds + s) * W.n_policies + k];
                if (!run->done) continue;
                done++;
                fin += run->row.final;
                if (isfinite(run->row.tta)) tta[n++] = run->row.tta;
            }
            char t[32] = "-", sd[32] = "", sp[32] = "-", br[32] = "-", fn[32] = "-";
            if (!done)
                snprintf(t, sizeof t, "(not run)");
            else if (isfinite(mean_tta[k]))
                snprintf(t, sizeof t, "%.4f", mean_tta[k]);
            else
                snprintf(t, sizeof t, "not reached");
            if (n > 1) snprintf(sd, sizeof sd, "%.4f", gsl_stats_sd(tta, 1, (size_t)n));
            double speed = mean_tta[W.baseline] / mean_tta[k];
            if (isfinite(speed)) snprintf(sp, sizeof sp, "%.2fx", speed);
            double ratio = mean_bytes[k] / mean_bytes[W.baseline];
            if (isfinite(ratio)) snprintf(br, sizeof br, "%.3fx", ratio);
            if (done) snprintf(fn, sizeof fn, "%.4f", fin / done);
            printf("%-40s %-30s %12s %9s %8s %8s %8s%s\n", k == 0 ? label : "", W.policies[k], t,
                   sd, sp, br, fn, k == best ? "  <- fastest" : "");
        }
    }
    char target[64];
    int swept = 0;
    for (int a = 0; a < W.n_axes; a++) swept |= strcmp(W.axes[a].name, "target-accuracy") == 0;
    if (swept)
        snprintf(target, sizeof target, "each point's --target-accuracy");
    else
        snprintf(target, sizeof target, "accuracy %.4f", W.target);
    printf("\ntta_s: mean simulated seconds to %s over %d seed(s); speedup and bytes against %s\n",
           target, W.n_seeds, W.policies[W.baseline]);
}

/* speedup_grid.dat for the heatmap: one block per policy, rows "x y speedup xlabel ylabel text"
 * over the bandwidth and latency axes (other axes at their first value, first seed). */
static int write_grid(int ax, int ay, BwError *err)
{
    OutFile of;
    int rc = outfile_open(&of, W.out, "speedup_grid.dat", err);
    if (rc) return rc;
    for (int k = 0; k < W.n_policies; k++) {
        fprintf(of.f, "# policy %s\n", W.policies[k]);
        for (long p = 0; p < W.n_points; p++) {
            int other_first = 1;
            long rest = p;
            int vi[MAX_AXES];
            for (int a = W.n_axes - 1; a >= 0; a--) {
                vi[a] = (int)(rest % W.axes[a].n);
                rest /= W.axes[a].n;
            }
            for (int a = 0; a < W.n_axes; a++)
                if (a != ax && a != ay && vi[a] != 0) other_first = 0;
            if (!other_first) continue;
            const Run *run = &W.runs[(p * W.n_seeds) * W.n_policies + k];
            const Run *b = run->done ? baseline_of(run) : NULL;
            double speed = b ? b->row.tta / run->row.tta : NAN;
            /* not reached (or not run): 0 on the colour scale, labelled "-" */
            if (isfinite(speed))
                fprintf(of.f, "%d %d %.4f %s %s %.2f\n", vi[ax], vi[ay], speed,
                        W.axes[ax].value[vi[ax]], W.axes[ay].value[vi[ay]], speed);
            else
                fprintf(of.f, "%d %d 0 %s %s -\n", vi[ax], vi[ay], W.axes[ax].value[vi[ax]],
                        W.axes[ay].value[vi[ay]]);
        }
        fputs("\n\n", of.f);
    }
    return outfile_commit(&of, err);
}

/* The target accuracy at a point (it may be swept). */
static double point_target(long point)
{
    for (int a = 0; a < W.n_axes; a++)
        if (strcmp(W.axes[a].name, "target-accuracy") == 0)
            return strtod(point_value(point, a), NULL);
    return W.target;
}

/* Each point's curves (first seed): accuracy and bytes against time, one line per policy, in
 * the point's folder runs/<point>/seed-S/. */
static void point_curves(void)
{
    int drawn = 0;
    for (long p = 0; p < W.n_points; p++) {
        char first[4096], dir[8192];
        run_folder(p * W.n_seeds * W.n_policies, first, sizeof first);
        *strrchr(first, '/') = '\0';
        snprintf(dir, sizeof dir, "%s/%s", W.out, first);
        static char folders[MAX_POLICIES][SPEC_MAX_TEXT + 8];
        const char *runs[MAX_POLICIES], *labels[MAX_POLICIES];
        int n = 0;
        for (int k = 0; k < W.n_policies; k++) {
            if (!W.runs[p * W.n_seeds * W.n_policies + k].done) continue;
            runner_folder_name(k, W.policies[k], folders[n], sizeof folders[n]);
            runs[n] = folders[n];
            labels[n++] = W.policies[k];
        }
        BwError err;
        if (n && plots_curves(dir, runs, labels, n, point_target(p), &err)) {
            fprintf(stderr, "bellows: %s\n", err.msg);
            return;
        }
        drawn += n > 0;
    }
    printf(
        "# plots: accuracy_vs_time and bytes_vs_time of each of %d points, in %s/runs/*/seed-%d/\n",
        drawn, W.out, W.seeds[0]);
}

/* The heatmap's data (whenever bandwidth and latency are both swept), then its plot. */
static void sweep_plots(int draw)
{
    int ax = -1, ay = -1;
    for (int a = 0; a < W.n_axes; a++) {
        if (strcmp(W.axes[a].name, "bandwidth") == 0) ax = a;
        if (strcmp(W.axes[a].name, "latency") == 0) ay = a;
    }
    if (ax < 0 || ay < 0) {
        if (draw) printf("# plots: a heatmap needs both --bandwidth and --latency swept\n");
        return;
    }
    BwError err;
    if (write_grid(ax, ay, &err)) {
        fprintf(stderr, "bellows: %s\n", err.msg);
        return;
    }
    if (!draw) return;
    if (!plots_available()) {
        printf("# gnuplot not found: no plots\n");
        return;
    }
    const char *labels[MAX_POLICIES];
    for (int k = 0; k < W.n_policies; k++) labels[k] = W.policies[k];
    if (plots_sweep(W.out, labels, W.n_policies, &err))
        fprintf(stderr, "bellows: %s\n", err.msg);
    else
        printf("# plots: %s/speedup_heatmap.png (and .svg)\n", W.out);
}

int cmd_sweep(int argc, char **argv_in, BwError *err)
{
    int rc;
    /* -j N and -jN are --jobs */
    static char *argv[MAX_ARGS], jobs_arg[64];
    if (argc > MAX_ARGS - 1) return bw_fail(err, BW_EUSAGE, "sweep: too many arguments");
    for (int i = 0; i < argc; i++) {
        argv[i] = argv_in[i];
        if (strcmp(argv_in[i], "-j") == 0)
            argv[i] = "--jobs";
        else if (strncmp(argv_in[i], "-j", 2) == 0) {
            snprintf(jobs_arg, sizeof jobs_arg, "--jobs=%s", argv_in[i] + 2);
            argv[i] = jobs_arg;
        }
    }
    /* the flag table, to tell which arguments are lists */
    Flags *table = malloc(sizeof *table);
    if (!table) return bw_fail(err, BW_ERUNTIME, "out of memory");
    rc = run_parse_flags("bellows sweep", RUN_MODE_SWEEP, 0, NULL, table, err);
    for (int i = 0; i < argc && rc == BW_OK; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            cli_print_help(
                stdout, "bellows sweep [flags, any scenario flag as a list] --out DIR",
                "Runs the cross product of every scenario flag given as a comma-separated list "
                "(or an integer\nrange LO..HI[:xF|:+S]), times --seeds, times --policies; each "
                "run in its own process\n(--jobs at a time) and folder under DIR/runs/. "
                "DIR/sweep.csv holds one row per finished run\n(one column per swept flag, seed, "
                "policy, then compare.csv's columns) and is always complete;\n--resume finishes "
                "an interrupted sweep; --shard K/N runs one slice (join them with bellows merge).",
                table->opts, table->n);
            free(table);
            return BW_OK;
        }
    if (rc == BW_OK) rc = find_axes(argc, argv, table, err);
    free(table);
    if (rc) goto fail;
    /* the sweep's own flags, and the first point checked as a whole */
    {
        /* parse with every list replaced by its first value */
        char *first[MAX_ARGS + 2 * MAX_AXES + 8];
        static char store[MAX_AXES][SPEC_MAX_TEXT + 40];
        int n = 0;
        for (int i = 0; i < argc; i++) {
            const char *arg = argv[i];
            int swept = -1;
            for (int a = 0; a < W.n_axes; a++) {
                size_t l = strlen(W.axes[a].name);
                if (strncmp(arg, "--", 2) == 0 && strncmp(arg + 2, W.axes[a].name, l) == 0 &&
                    (arg[2 + l] == '\0' || arg[2 + l] == '='))
                    swept = a;
            }
            if (swept >= 0) {
                snprintf(store[swept], sizeof store[swept], "--%s=%s", W.axes[swept].name,
                         W.axes[swept].value[0]);
                first[n++] = store[swept];
                if (!strchr(arg, '=')) i++;
            } else {
                first[n++] = argv[i];
            }
        }
        rc = run_parse_flags("bellows sweep", RUN_MODE_SWEEP, n, first, &W.f, err);
    }
    if (rc) goto fail;
    W.out = W.f.run.out;
    W.target = W.f.run.target;
    W.jobs = W.f.run.jobs;
    W.no_plots = W.f.run.no_plots;
    W.progress = !W.f.run.quiet && isatty(STDERR_FILENO);
    if (!W.out) {
        rc = bw_fail(err, BW_EUSAGE, "--out: a sweep needs an output folder");
        goto fail;
    }
    W.shard_k = 1;
    W.shard_n = 1;
    if (W.f.run.shard) {
        char extra;
        if (sscanf(W.f.run.shard, "%d/%d%c", &W.shard_k, &W.shard_n, &extra) != 2 || W.shard_n < 1 ||
            W.shard_k < 1 || W.shard_k > W.shard_n) {
            rc = bw_fail(err, BW_EUSAGE, "--shard %s: expected K/N with 1 <= K <= N", W.f.run.shard);
            goto fail;
        }
    }
    if ((rc = spec_split_list(W.f.run.policies, "--policies", W.policies, MAX_POLICIES, &W.n_policies,
                              err)))
        goto fail;
    W.baseline = 0;
    for (int k = 0; k < W.n_policies; k++)
        if (strcmp(W.policies[k], "sync") == 0) {
            W.baseline = k;
            break;
        }
    W.n_seeds = W.f.run.seeds.n;
    memcpy(W.seeds, W.f.run.seeds.v, sizeof(int) * (size_t)W.f.run.seeds.n);
    int resume = W.f.run.resume;
    W.replay = W.f.run.trace != NULL;
    if ((rc = run_setup("sweep", &W.f, &W.ta, &W.cfg, W.slowdown, err)) ||
        (rc = W.replay ? trace_read(W.f.run.trace, &W.trace, err)
                       : run_load_data(&W.ta, &W.cfg, &W.train, &W.test, err)) ||
        (W.replay && (rc = run_apply_trace(&W.f, &W.cfg, &W.trace, err))) ||
        (rc = engine_check_options(W.f.n_simgrid, W.f.simgrid_args, W.f.run.network_model, err)))
        goto fail;
    W.replay_engine = W.cfg.replay_engine; /* every run's */

    if (W.n_seeds == 0) {
        W.n_seeds = 1;
        W.seeds[0] = (int)W.ta.tc.seed;
    } else if (cli_given(W.f.opts, W.f.n, W.f.set, "seed")) {
        rc = bw_fail(err, BW_EUSAGE, "--seed: a sweep takes --seeds");
        goto fail;
    }
    /* the same value twice would run the same run twice, into one folder */
    for (int a = 0; a < W.n_axes; a++)
        for (int i = 0; i < W.axes[a].n; i++)
            for (int j = 0; j < i; j++)
                if (strcmp(W.axes[a].value[i], W.axes[a].value[j]) == 0) {
                    rc = bw_fail(err, BW_EUSAGE, "--%s: %s is listed twice", W.axes[a].name,
                                 W.axes[a].value[i]);
                    goto fail;
                }
    for (int i = 0; i < W.n_seeds; i++)
        for (int j = 0; j < i; j++)
            if (W.seeds[i] == W.seeds[j]) {
                rc = bw_fail(err, BW_EUSAGE, "--seeds: %d is listed twice", W.seeds[i]);
                goto fail;
            }
    for (int i = 0; i < W.n_policies; i++)
        for (int j = 0; j < i; j++)
            if (strcmp(W.policies[i], W.policies[j]) == 0) {
                rc = bw_fail(err, BW_EUSAGE, "--policies: %s is listed twice", W.policies[i]);
                goto fail;
            }
    W.n_points = 1;
    for (int a = 0; a < W.n_axes; a++) W.n_points *= W.axes[a].n;
    W.n_runs = W.n_points * W.n_seeds * W.n_policies;
    if (W.n_runs > 1000000) {
        rc = bw_fail(err, BW_EUSAGE, "sweep: %ld runs is too many", W.n_runs);
        goto fail;
    }
    W.runs = calloc((size_t)W.n_runs, sizeof *W.runs);
    TODO = malloc(sizeof *TODO * (size_t)W.n_runs);
    if (!W.runs || !TODO) {
        rc = bw_fail(err, BW_ERUNTIME, "out of memory");
        goto fail;
    }
    for (long r = 0; r < W.n_runs; r++) {
        W.runs[r].policy_i = (int)(r % W.n_policies);
        W.runs[r].seed_i = (int)(r / W.n_policies % W.n_seeds);
        W.runs[r].point = r / W.n_policies / W.n_seeds;
    }
    /* distinct values must give distinct folders (1e-3 and 1e+3 would not) */
    for (int a = 0; a < W.n_axes; a++)
        for (int i = 0; i < W.axes[a].n; i++)
            for (int j = 0; j < i; j++) {
                char x[SPEC_MAX_TEXT], y[SPEC_MAX_TEXT];
                folder_value(W.axes[a].value[i], x, sizeof x);
                folder_value(W.axes[a].value[j], y, sizeof y);
                if (strcmp(x, y) == 0) {
                    rc = bw_fail(err, BW_EUSAGE,
                                 "--%s: %s and %s would share a folder name; write them "
                                 "differently",
                                 W.axes[a].name, W.axes[a].value[j], W.axes[a].value[i]);
                    goto fail;
                }
            }
    /* every run checked before anything is written: a bad value is a usage error now */
    long fast_points = 0;
    for (long p = 0; p < W.n_points; p++)
        for (int k = 0; k < W.n_policies; k++) {
            Flags f;
            TrainArgs ta;
            RunConfig cfg;
            rc = run_config(p, 0, k, &f, &ta, &cfg, err);
            if (!rc) rc = driver_check(&cfg, err);
            if (!rc && k == 0) fast_points += driver_replay_fast(&cfg, NULL, 0);
            run_flags_release(&f);
            if (rc) {
                char label[1024], msg[512];
                point_label(p, label, sizeof label);
                snprintf(msg, sizeof msg, "%s", err->msg);
                bw_fail(err, rc, "sweep point %s: %s", label, msg);
                goto fail;
            }
        }
    /* an existing sweep is finished with --resume, never overwritten */
    {
        char path[4096];
        snprintf(path, sizeof path, "%s/sweep.csv", W.out);
        if (!resume && access(path, F_OK) == 0) {
            rc = bw_fail(err, BW_EUSAGE,
                         "--out %s: holds a sweep already; add --resume to finish it, or choose "
                         "another folder",
                         W.out);
            goto fail;
        }
    }
    if ((rc = outdir_create(W.out, err))) goto fail;
    if (resume) {
        remove_stale_temporaries(W.out);
        if ((rc = check_same_sweep(err)) || (rc = read_finished(err))) goto fail;
    }
    long n_todo = 0, already = 0;
    for (long r = 0; r < W.n_runs; r++) {
        if (r % W.shard_n != W.shard_k - 1) continue;
        if (W.runs[r].done)
            already++;
        else
            TODO[n_todo++] = r;
    }
    if ((rc = write_sweep_csv(err)) || (rc = write_sweep_json(err)))
        goto fail; /* the header, at least */
    run_print_scenario(&W.f, &W.cfg, &W.ta);
    if (W.replay) run_print_replay_engine(&W.cfg, fast_points, W.n_points);
    printf("# sweep: %ld points x %d seeds x %d policies = %ld runs", W.n_points, W.n_seeds,
           W.n_policies, W.n_runs);
    if (W.shard_n > 1) printf(", shard %d/%d", W.shard_k, W.shard_n);
    printf("; %ld to run, %ld done already; %d at a time; results in %s/sweep.csv\n", n_todo,
           already, W.jobs, W.out);
    fflush(stdout);
    W.t0 = wallclock_s();
    W.total_now = n_todo;
    int failed = 0;
    signal(SIGPIPE, SIG_IGN);
    if ((rc = runner_pool((int)n_todo, W.jobs, sweep_start, sweep_done, &failed, err))) goto fail;
    if (W.progress) fputs("\r\033[K", stderr);
    print_table();
    printf("# wrote %s/sweep.csv (%.1f wall s)\n", W.out, wallclock_s() - W.t0);
    sweep_plots(!W.no_plots);
    if (!W.no_plots && plots_available()) point_curves();
    free(W.runs);
    free(TODO);
    dataset_free(&W.train);
    dataset_free(&W.test);
    trace_free(&W.trace);
    run_flags_release(&W.f);
    if (failed)
        return bw_fail(err, BW_ERUNTIME, "sweep: %d run(s) failed (see above); --resume runs them again",
                       failed);
    return BW_OK;
fail:
    free(W.runs);
    free(TODO);
    W.runs = NULL;
    TODO = NULL;
    dataset_free(&W.train);
    dataset_free(&W.test);
    trace_free(&W.trace);
    run_flags_release(&W.f);
    return rc;
}

/* ---- bellows merge ---- */

typedef struct {
    long index;
    char *fields[MAX_AXES + 20];
    int n;
    char *line; /* owns the fields' text */
    char dir[1024];
} MergeRow;

static int cmp_rows(const void *a, const void *b)
{
    const MergeRow *x = a, *y = b;
    return (x->index > y->index) - (x->index < y->index);
}

/* sweep.json without its "shard" line: equal for the shards of one sweep. */
static char *scenario_of(const char *dir, BwError *err, int *rc)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/sweep.json", dir);
    FILE *f = fopen(path, "r");
    if (!f) {
        *rc =
            bw_fail(err, BW_EUSAGE, "merge: %s: not a sweep folder (no readable sweep.json)", dir);
        return NULL;
    }
    size_t cap = 1 << 16, len = 0;
    char *text = malloc(cap), line[8192];
    text[0] = '\0';
    while (fgets(line, sizeof line, f))
        if (!strstr(line, "\"shard\"") && len + strlen(line) + 1 < cap) {
            memcpy(text + len, line, strlen(line) + 1);
            len += strlen(line);
        }
    fclose(f);
    *rc = BW_OK;
    return text;
}

static const char *json_string_field(const char *json, const char *key, char *buf, size_t n)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\": \"", key);
    const char *p = strstr(json, pat);
    if (!p) return NULL;
    p += strlen(pat);
    size_t len = strcspn(p, "\"");
    snprintf(buf, n, "%.*s", (int)(len < n ? len : n - 1), p);
    return buf;
}

int cmd_merge(int argc, char **argv, BwError *err)
{
    const char *out = NULL, *dirs[256];
    int n_dirs = 0, rc = BW_OK;
    for (int i = 0; i < argc && rc == BW_OK; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            printf("usage: bellows merge --out DIR SWEEP_DIR...\n\nJoins the sweep.csv files of "
                   "the shards of one sweep (bellows sweep --shard K/N) into DIR/sweep.csv,\n"
                   "in the sweep's order, with speedups against the baseline recomputed. Refuses "
                   "folders of\ndifferent sweeps and runs present twice.\n");
            return BW_OK;
        }
        if (strcmp(argv[i], "--out") == 0 && i + 1 < argc)
            out = argv[++i];
        else if (strncmp(argv[i], "--out=", 6) == 0)
            out = argv[i] + 6;
        else if (strncmp(argv[i], "--", 2) == 0)
            rc = bw_fail(err, BW_EUSAGE, "merge: unknown flag '%s'", argv[i]);
        else if (n_dirs < 256)
            dirs[n_dirs++] = argv[i];
    }
    if (rc == BW_OK && !out) rc = bw_fail(err, BW_EUSAGE, "--out: merge needs an output folder");
    if (rc == BW_OK && n_dirs == 0)
        rc = bw_fail(err, BW_EUSAGE, "merge: expected the sweep folders to merge");
    if (rc) {
        return rc;
    }
    char *scenario = NULL, header[4096] = "", baseline[SPEC_MAX_TEXT] = "";
    MergeRow *rows = NULL;
    long n_rows = 0, cap = 0;
    for (int d = 0; d < n_dirs && rc == BW_OK; d++) {
        char *sc = scenario_of(dirs[d], err, &rc);
        if (rc) break;
        if (!scenario) {
            scenario = sc;
            json_string_field(sc, "baseline", baseline, sizeof baseline);
        } else {
            int same = strcmp(scenario, sc) == 0;
            free(sc);
            if (!same) {
                rc = bw_fail(err, BW_EUSAGE,
                             "merge: %s is a different sweep from %s (sweep.json differs)", dirs[d],
                             dirs[0]);
                break;
            }
        }
        char path[4096];
        snprintf(path, sizeof path, "%s/sweep.csv", dirs[d]);
        FILE *f = fopen(path, "r");
        char head[4096];
        if (!f || !fgets(head, sizeof head, f)) {
            if (f) fclose(f);
            rc = bw_fail(err, BW_EUSAGE, "merge: %s: missing or empty", path);
            break;
        }
        if (!header[0])
            snprintf(header, sizeof header, "%s", head);
        else if (strcmp(header, head) != 0) {
            fclose(f);
            rc = bw_fail(err, BW_EUSAGE, "merge: %s has other columns than %s/sweep.csv", path,
                         dirs[0]);
            break;
        }
        static char line[1 << 16];
        int lineno = 1;
        while (fgets(line, sizeof line, f)) {
            lineno++;
            line[strcspn(line, "\n")] = '\0';
            if (n_rows == cap) {
                cap = cap ? 2 * cap : 256;
                rows = realloc(rows, sizeof *rows * (size_t)cap);
            }
            MergeRow *r = &rows[n_rows];
            r->line = strdup(line);
            r->n = csv_split(r->line, r->fields, MAX_AXES + 20);
            snprintf(r->dir, sizeof r->dir, "%s", dirs[d]);
            char *end;
            r->index = strtol(r->fields[r->n - 1], &end, 10);
            if (r->n < 16 || *end) {
                free(r->line);
                rc = bw_fail(err, BW_EUSAGE, "merge: %s line %d: not a sweep row", path, lineno);
                break;
            }
            n_rows++;
        }
        fclose(f);
    }
    if (rc == BW_OK) {
        qsort(rows, (size_t)n_rows, sizeof *rows, cmp_rows);
        for (long i = 1; i < n_rows && rc == BW_OK; i++)
            if (rows[i].index == rows[i - 1].index)
                rc = bw_fail(err, BW_EUSAGE, "merge: run %ld is in both %s and %s", rows[i].index,
                             rows[i - 1].dir, rows[i].dir);
    }
    if (rc == BW_OK) rc = outdir_create(out, err);
    OutFile of = {0};
    if (rc == BW_OK) rc = outfile_open(&of, out, "sweep.csv", err);
    if (rc == BW_OK) {
        fputs(header, of.f);
        int n_axes = rows && n_rows ? rows[0].n - 16 : 0;
        for (long i = 0; i < n_rows; i++) {
            MergeRow *r = &rows[i];
            /* the baseline: same swept values and seed, the baseline policy */
            const MergeRow *b = NULL;
            for (long j = 0; j < n_rows && !b; j++) {
                int same = strcmp(rows[j].fields[n_axes + 1], baseline) == 0;
                for (int a = 0; a <= n_axes && same; a++)
                    same = strcmp(rows[j].fields[a], r->fields[a]) == 0;
                if (same) b = &rows[j];
            }
            double tta = csv_num(r->fields[n_axes + 6]), bytes = csv_num(r->fields[n_axes + 8]);
            double speed = b ? csv_num(b->fields[n_axes + 6]) / tta : NAN;
            double ratio = b ? bytes / csv_num(b->fields[n_axes + 8]) : NAN;
            char folder[8192], abs_dir[4096];
            if (!realpath(r->dir, abs_dir)) snprintf(abs_dir, sizeof abs_dir, "%s", r->dir);
            snprintf(folder, sizeof folder, "%s/%s", abs_dir, r->fields[n_axes + 2]);
            for (int k = 0; k < r->n; k++) {
                if (k) fputc(',', of.f);
                if (k == n_axes + 2)
                    csv_field(of.f, folder);
                else if (k == n_axes + 7)
                    num(of.f, speed, "%.6g");
                else if (k == n_axes + 9)
                    num(of.f, ratio, "%.6g");
                else
                    csv_field(of.f, r->fields[k]);
            }
            fputc('\n', of.f);
        }
        rc = outfile_commit(&of, err);
    }
    if (rc == BW_OK)
        printf("# merged %ld runs from %d folders into %s/sweep.csv\n", n_rows, n_dirs, out);
    else
    for (long i = 0; i < n_rows; i++) free(rows[i].line);
    free(rows);
    free(scenario);
    return rc;
}
