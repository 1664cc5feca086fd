/* axes.c: what a sweep varies: which flags of the command line are swept (lists and integer
 * ranges) and which are the base of every run, the checks on their values, the list of runs,
 * and how a run is named: its command line, its folder, its point's label. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flag_class.h"
#include "xalloc.h"
#include "sweep_impl.h"

/* Flags of the sweep itself, dropped from the command line of each run (--cost-band: how the
 * sweep reads its runs, passed to them by sweep_start; not in sweep.json's base_args nor in a
 * trace's name, so that --cost-band off writes the files a sweep without it wrote). */
static const char *const SWEEP_ONLY[] = {"policies",   "jobs",          "seeds",    "resume",
                                         "shard",      "out",           "no-plots", "seed",
                                         "trace",      "replay-engine", "force",    "record-traces",
                                         "train-each", "traces",        "cost-band"};

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
        if (ax->n == SWEEP_MAX_VALUES)
            return bw_fail(err, BW_EUSAGE, "--%s %s: more than %d values", ax->name, text,
                           SWEEP_MAX_VALUES);
        snprintf(ax->value[ax->n++], SPEC_MAX_TEXT, "%ld", v);
    }
    return BW_OK;
}

/* A new axis for flag o (called name) from its list or range. */
static int add_axis(Sweep *s, const CliOpt *o, const char *name, const char *value, BwError *err)
{
    if (sweep_axis_index(s, name) >= 0) return bw_fail(err, BW_EUSAGE, "--%s: given twice", name);
    if (s->n_axes == SWEEP_MAX_AXES)
        return bw_fail(err, BW_EUSAGE, "sweep: at most %d swept flags", SWEEP_MAX_AXES);
    Axis *ax = &s->axes[s->n_axes++];
    snprintf(ax->name, sizeof ax->name, "%s", name);
    if (strstr(value, "..") && (o->kind == CLI_INT || o->kind == CLI_LONG))
        return expand_range(ax, value, err);
    char flag[80];
    snprintf(flag, sizeof flag, "--%s", name);
    int rc = spec_split_list(value, flag, ax->value, SWEEP_MAX_VALUES, &ax->n, err);
    if (rc == BW_OK && o->kind != CLI_STRING) /* plain lists: split on every comma */
        for (int k = 0; k < ax->n; k++)
            if (strchr(ax->value[k], ','))
                return bw_fail(err, BW_EUSAGE, "--%s %s: expected values", name, value);
    return rc;
}

/* Splits the command line into the swept axes and the base command line of every run. */
int sweep_find_axes(Sweep *s, const Flags *table, BwError *err)
{
    s->n_axes = 0;
    s->n_base = 0;
    for (int i = 0; i < s->argc; i++) {
        const char *arg = s->argv[i];
        if (strncmp(arg, "--", 2) != 0 || strncmp(arg, "--cfg=", 6) == 0 ||
            strncmp(arg, "--log=", 6) == 0) {
            s->base[s->n_base++] = s->argv[i];
            continue;
        }
        char name[64];
        const char *eq = strchr(arg, '='), *value = NULL;
        size_t len = eq ? (size_t)(eq - arg - 2) : strlen(arg + 2);
        snprintf(name, sizeof name, "%.*s", (int)(len < 63 ? len : 63), arg + 2);
        const CliOpt *o = find_opt(table, name);
        int takes_value = o && o->kind != CLI_FLAG;
        if (takes_value) value = eq ? eq + 1 : (i + 1 < s->argc ? s->argv[i + 1] : NULL);
        int consumed = takes_value && !eq && value ? 2 : 1;
        if (flag_scenarios(o, name, value) > 0) { /* one value of a spec's options too */
            int rc = add_axis(s, o, name, value, err);
            if (rc) return rc;
        } else if (!in_list(name, SWEEP_ONLY, sizeof SWEEP_ONLY / sizeof *SWEEP_ONLY)) {
            for (int k = 0; k < consumed && s->n_base < SWEEP_MAX_ARGS - 2 * SWEEP_MAX_AXES - 8;
                 k++)
                s->base[s->n_base++] = s->argv[i + k];
        }
        i += consumed - 1;
    }
    return BW_OK;
}

/* The axis a command-line argument sets ("--name" or "--name=..."), or -1. */
static int axis_of_arg(const Sweep *s, const char *arg)
{
    int swept = -1;
    for (int a = 0; a < s->n_axes; a++) {
        size_t l = strlen(s->axes[a].name);
        if (strncmp(arg, "--", 2) == 0 && strncmp(arg + 2, s->axes[a].name, l) == 0 &&
            (arg[2 + l] == '\0' || arg[2 + l] == '='))
            swept = a;
    }
    return swept;
}

/* Parses the command line into s->f with every list replaced by its first value: the sweep's
 * own flags, and the first point checked as a whole. */
int sweep_parse_first_point(Sweep *s, BwError *err)
{
    char *first[SWEEP_MAX_ARGS + 2 * SWEEP_MAX_AXES + 8];
    char(*store)[SWEEP_FIRST_ARG] = s->first_args; /* s->f's strings point here */
    int n = 0;
    for (int i = 0; i < s->argc; i++) {
        int a = axis_of_arg(s, s->argv[i]);
        if (a < 0) {
            first[n++] = s->argv[i];
            continue;
        }
        snprintf(store[a], SWEEP_FIRST_ARG, "--%s=%s", s->axes[a].name, s->axes[a].value[0]);
        first[n++] = store[a];
        if (!strchr(s->argv[i], '=')) i++;
    }
    return run_parse_flags("bellows sweep", RUN_MODE_SWEEP, n, first, &s->f, err);
}

/* A value as it appears in a folder name. */
static void folder_value(const char *v, char *buf, size_t n)
{
    size_t used = 0;
    for (const char *p = v; *p && used + 1 < n; p++)
        buf[used++] = isalnum((unsigned char)*p) || *p == '.' ? *p : '-';
    buf[used] = '\0';
}

/* The first j < i with items[j] equal to items[i] (as folder names when folded), as i * n + j,
 * or -1. */
static int first_repeat(const char items[][SPEC_MAX_TEXT], int n, int folded)
{
    for (int i = 0; i < n; i++)
        for (int j = 0; j < i; j++) {
            char x[SPEC_MAX_TEXT], y[SPEC_MAX_TEXT];
            if (folded) {
                folder_value(items[i], x, sizeof x);
                folder_value(items[j], y, sizeof y);
            }
            if (folded ? strcmp(x, y) == 0 : strcmp(items[i], items[j]) == 0) return i * n + j;
        }
    return -1;
}

/* "--flag: V is listed twice" if a value is; the same value twice would run the same run
 * twice, into one folder. */
static int listed_once(const char *flag, const char items[][SPEC_MAX_TEXT], int n, BwError *err)
{
    int at = first_repeat(items, n, 0);
    if (at < 0) return BW_OK;
    return bw_fail(err, BW_EUSAGE, "%s: %s is listed twice", flag, items[at / n]);
}

/* Every axis, the seeds and the policies without repeats. */
int sweep_check_values(const Sweep *s, BwError *err)
{
    char name[80], seeds[CLI_LIST_MAX][SPEC_MAX_TEXT];
    int rc = BW_OK;
    for (int a = 0; a < s->n_axes && rc == BW_OK; a++) {
        snprintf(name, sizeof name, "--%s", s->axes[a].name);
        rc = listed_once(name, s->axes[a].value, s->axes[a].n, err);
    }
    for (int k = 0; k < s->n_seeds; k++) snprintf(seeds[k], sizeof seeds[k], "%d", s->seeds[k]);
    if (rc == BW_OK)
        rc = listed_once("--seeds", (const char(*)[SPEC_MAX_TEXT])seeds, s->n_seeds, err);
    if (rc == BW_OK) rc = listed_once("--policies", s->policies, s->n_policies, err);
    return rc;
}

/* Distinct values must give distinct folders (1e-3 and 1e+3 would not). */
int sweep_check_folders(const Sweep *s, BwError *err)
{
    for (int a = 0; a < s->n_axes; a++) {
        const Axis *ax = &s->axes[a];
        int at = first_repeat(ax->value, ax->n, 1);
        if (at >= 0)
            return bw_fail(err, BW_EUSAGE,
                           "--%s: %s and %s would share a folder name; write them differently",
                           ax->name, ax->value[at % ax->n], ax->value[at / ax->n]);
    }
    return BW_OK;
}

/* The runs of the whole sweep, none done yet, and room for this invocation's list. */
int sweep_plan_runs(Sweep *s, BwError *err)
{
    s->n_points = 1;
    for (int a = 0; a < s->n_axes; a++) s->n_points *= s->axes[a].n;
    s->n_runs = s->n_points * s->n_seeds * s->n_policies;
    if (s->n_runs > RUN_MAX_RUNS)
        return bw_fail(err, BW_EUSAGE, "sweep: %ld runs is too many", s->n_runs);
    s->runs = bw_xcalloc((size_t)s->n_runs, sizeof *s->runs, "axes.c: s->runs");
    s->todo = bw_xmalloc(sizeof *s->todo * (size_t)s->n_runs, "axes.c: s->todo");
    if (!s->runs || !s->todo) return bw_fail(err, BW_ERUNTIME, "out of memory");
    for (long r = 0; r < s->n_runs; r++) {
        s->runs[r].policy_i = (int)(r % s->n_policies);
        s->runs[r].seed_i = (int)(r / s->n_policies % s->n_seeds);
        s->runs[r].point = r / s->n_policies / s->n_seeds;
    }
    return BW_OK;
}

/* The command line of one run: the base, the point's values, the seed and the policy; store
 * holds the text made here (2 * SWEEP_MAX_AXES + 8 entries). Returns the count. */
int sweep_run_argv(const Sweep *s, long point, int seed_i, int policy_i, char **out,
                   char store[][SPEC_MAX_TEXT])
{
    int n = 0, k = 0;
    for (int i = 0; i < s->n_base; i++) out[n++] = s->base[i];
    long rest = point;
    for (int a = s->n_axes - 1; a >= 0; a--) {
        int v = (int)(rest % s->axes[a].n);
        rest /= s->axes[a].n;
        snprintf(store[k], SPEC_MAX_TEXT, "--%s", s->axes[a].name);
        out[n++] = store[k++];
        out[n++] = (char *)s->axes[a].value[v];
    }
    snprintf(store[k], SPEC_MAX_TEXT, "--seed");
    out[n++] = store[k++];
    snprintf(store[k], SPEC_MAX_TEXT, "%d", s->seeds[seed_i]);
    out[n++] = store[k++];
    snprintf(store[k], SPEC_MAX_TEXT, "--policy");
    out[n++] = store[k++];
    /* --traces: the policy's stand-in (its label is no spec); sweep_own_config sets it up */
    out[n++] = (char *)(s->own.n ? s->own_policy[policy_i] : s->policies[policy_i]);
    out[n] = NULL;
    return n;
}

int sweep_axis_index(const Sweep *s, const char *name)
{
    for (int a = 0; a < s->n_axes; a++)
        if (strcmp(s->axes[a].name, name) == 0) return a;
    return -1;
}

const char *sweep_point_value(const Sweep *s, long point, int a)
{
    long rest = point;
    for (int b = s->n_axes - 1; b > a; b--) rest /= s->axes[b].n;
    return s->axes[a].value[rest % s->axes[a].n];
}

/* "bandwidth=1Gbps latency=1us", for the table and messages. */
void sweep_point_label(const Sweep *s, long point, char *buf, size_t n)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int a = 0; a < s->n_axes && used < n; a++)
        used += (size_t)snprintf(buf + used, n - used, "%s%s=%s", a ? " " : "", s->axes[a].name,
                                 sweep_point_value(s, point, a));
    if (s->n_axes == 0) snprintf(buf, n, "(one point)");
}

/* The target accuracy at a point (it may be swept). */
double sweep_point_target(const Sweep *s, long point)
{
    int a = sweep_axis_index(s, "target-accuracy");
    return a >= 0 ? strtod(sweep_point_value(s, point, a), NULL) : s->target;
}

/* "runs/bandwidth-1Gbps_latency-1us/seed-1/1-sync", relative to --out. */
void sweep_run_folder(const Sweep *s, long r, char *buf, size_t n)
{
    const Run *run = &s->runs[r];
    char pol[SPEC_MAX_TEXT + 8];
    runner_folder_name(run->policy_i, s->policies[run->policy_i], pol, sizeof pol);
    size_t used = (size_t)snprintf(buf, n, "runs/");
    for (int a = 0; a < s->n_axes && used < n; a++) {
        char v[SPEC_MAX_TEXT];
        folder_value(sweep_point_value(s, run->point, a), v, sizeof v);
        used += (size_t)snprintf(buf + used, n - used, "%s%s-%s", a ? "_" : "", s->axes[a].name, v);
    }
    snprintf(buf + used, n - used, "%sseed-%d/%s", s->n_axes ? "/" : "", s->seeds[run->seed_i],
             pol);
}

/* The finished run of the baseline policy at the same point and seed, for run's speedup and
 * bytes ratio; NULL when there is none: the baseline failed, or it or run diverged (a diverged
 * run's time to accuracy is not a result). */
const Run *sweep_baseline_of(const Sweep *s, const Run *run)
{
    long r = (run - s->runs) - run->policy_i + s->baseline;
    const Run *b = &s->runs[r];
    if (!b->done || b->row.rc != BW_OK) return NULL;
    if (strcmp(b->row.status, "diverged") == 0 || strcmp(run->row.status, "diverged") == 0)
        return NULL;
    return b;
}
