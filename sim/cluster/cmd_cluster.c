/* cmd_cluster.c: `bellows cluster FILE.json --out DIR`: several training jobs on one simulated
 * cluster. Every point (the file, or each point of --set) is checked whole before anything is
 * written; then each runs as child processes (runner.h, --jobs at a time): the jobs together in
 * one engine, and unless --alone none each job alone on the same GPUs of the same platform. The
 * parent reads their files back, writes cluster.json (and with --set, sweep.csv) and prints the
 * table. A failure or an interruption leaves an --out that was new or empty as it found it. */
#include "cluster_cmd.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cl_impl.h"
#include "cl_sweep.h"
#include "csv.h"
#include "outfile.h"
#include "plots.h"
#include "runner.h"
#include "wallclock.h"

typedef struct {
    const char *out, *alone, *set, *timeline_steps;
    int force, jobs, timeline;
} Opts;

#define OPT(name, kind, field, ...)                                                                \
    {                                                                                              \
        name, kind, NULL, __VA_ARGS__, offsetof(Opts, field)                                       \
    }
static const CliOpt OPTS[] = {
    OPT("out", CLI_STRING, out, "runs/cluster", NULL,
        "output folder, new or empty: DIR/jobs/NAME/ (each job's files of bellows run), "
        "DIR/alone/NAME/, cluster.json, links.csv",
        0, 0, NULL, 0),
    OPT("force", CLI_FLAG, force, NULL, NULL,
        "write into a non-empty --out (files of the same names are overwritten)", 0, 0, NULL, 0),
    OPT("alone", CLI_CHOICE, alone, "run", NULL,
        "run: also run each job alone on its GPUs, for its slowdown and what contention cost it; "
        "none: the jobs together only",
        0, 0, "run|none", 0),
    OPT("jobs", CLI_INT, jobs, "2", "processes",
        "simulations at a time (the jobs together, each "
        "alone)",
        1, 64, NULL, 0),
    OPT("set", CLI_STRING, set, NULL, "KEY=V1,V2 ...",
        "sweep keys of the file: a top-level key (oversubscription, bandwidth, placement, ...) "
        "or a job's as JOB.KEY (b.policy, b.compressor, b.start_s, ...), each with a list of "
        "values, several separated by spaces; the cross product, into DIR/points/, and "
        "DIR/sweep.csv",
        0, 0, NULL, 0),
    OPT("timeline", CLI_FLAG, timeline, NULL, NULL,
        "write DIR/timeline.json: Chrome trace events, one process per job, one thread per "
        "worker's lane (open in Perfetto)",
        0, 0, NULL, 0),
    OPT("timeline-steps", CLI_STRING, timeline_steps, "0:19", "A:B",
        "the steps of each job the timeline keeps, A to B inclusive (A: alone: from A on)", 0, 0,
        NULL, 0),
};
#undef OPT
#define N_OPTS ((int)(sizeof OPTS / sizeof *OPTS))

static const char USAGE[] = "bellows cluster FILE.json [--out DIR] [flags]";
static const char ABOUT[] =
    "Simulates several training jobs on one cluster: every job's workers are actors of one\n"
    "SimGrid engine, so their collectives share the links as SimGrid shares them; each job keeps\n"
    "its own model, policy, seeds and files. FILE.json holds the cluster's flags of bellows run\n"
    "(topology, bandwidth, oversubscription, platform, ...; hyphens as underscores), placement\n"
    "(packed or spread over the leaf switches) and jobs: each a name, the job's flags of bellows\n"
    "run (model, workers, policy, compressor, workload, epochs, train_samples, seed, ...),\n"
    "start_s and optionally hosts (sim/cluster/README.md). Prints each job's time to accuracy,\n"
    "its slowdown against the same job alone on the same GPUs, its bytes and the share of its\n"
    "communication time that contention added, and plots each job's accuracy on the cluster's\n"
    "clock and the busiest links' utilisation (jobs_accuracy_vs_time, links_utilisation).";

/* One point: its file, plan and results. */
typedef struct {
    ClSpec spec;
    ClPlan plan;
    ClRow rows[CL_MAX_JOBS];
    RunRow runs[CL_MAX_JOBS + 1]; /* the children's: the jobs together, then each alone */
    char dir[4096];
    int alone, threads;
    double wall0;
    int plots_failed; /* its plots failed (said on stderr); its results stand */
} Point;

/* A child: task 0 the jobs together, task k the job k - 1 alone. */
static void point_child(int task, int fd, void *arg)
{
    const Point *pt = arg;
    RunRow row;
    memset(&row, 0, sizeof row);
    BwError e = {{0}};
    int which[CL_MAX_JOBS];
    for (int j = 0; j < pt->plan.n_jobs; j++) which[j] = j;
    outfile_guard_exit("a job's policy plugin (or a library)");
    row.rc =
        task == 0
            ? cl_simulate(&pt->plan, which, pt->plan.n_jobs, 0, pt->dir, pt->threads, pt->wall0, &e)
            : cl_simulate(&pt->plan, &which[task - 1], 1, 1, pt->dir, pt->threads, pt->wall0, &e);
    outfile_unguard_exit();
    snprintf(row.status, sizeof row.status, "%s", row.rc ? "failed" : "completed");
    snprintf(row.error, sizeof row.error, "%s", e.msg);
    ssize_t w = write(fd, &row, sizeof row);
    _exit(w == (ssize_t)sizeof row ? 0 : 1);
}

static void point_done(int task, RunRow *row, void *arg)
{
    ((Point *)arg)->runs[task] = *row;
}

/* The files of a point's children, read back. */
static int point_read(Point *pt, BwError *err)
{
    for (int t = 0; t <= (pt->alone ? pt->plan.n_jobs : 0); t++)
        if (pt->runs[t].rc) {
            char what[96] = "the jobs together";
            if (t) snprintf(what, sizeof what, "job \"%s\" alone", pt->plan.jobs[t - 1].spec->name);
            return bw_fail(err, pt->runs[t].rc == BW_EINTR ? BW_EINTR : BW_ERUNTIME, "%s: %s", what,
                           pt->runs[t].error);
        }
    for (int j = 0; j < pt->plan.n_jobs; j++) {
        char path[4400];
        const char *name = pt->plan.jobs[j].spec->name;
        pt->rows[j].start_s = pt->plan.jobs[j].spec->start_s;
        snprintf(path, sizeof path, "%s/jobs/%s/summary.json", pt->dir, name);
        int rc = cl_report_read(path, &pt->rows[j].shared, err);
        snprintf(path, sizeof path, "%s/alone/%s/summary.json", pt->dir, name);
        if (!rc && pt->alone) rc = cl_report_read(path, &pt->rows[j].alone, err);
        if (rc) return rc;
    }
    return BW_OK;
}

/* What the point will simulate, before it does. */
static void point_header(const Point *pt, int jobs)
{
    const ClPlan *p = &pt->plan;
    const Cluster *c = &p->platform;
    char fabric[160] = "";
    if (c->topology == TOPO_FAT_TREE)
        snprintf(fabric, sizeof fabric, " (leaves of %d, oversubscription %g)", c->leaf_size,
                 c->oversubscription);
    else if (c->topology == TOPO_HIERARCHICAL)
        snprintf(fabric, sizeof fabric, " (nodes of %d)", c->gpus_per_node);
    if (c->platform_file)
        printf("# cluster %s: %d GPUs of %s; %s network model\n", p->spec->path, p->gpus,
               c->platform_file, p->spec->network_model);
    else
        printf("# cluster %s: %d GPUs, %s%s, %g Gbps / %g us NICs; %s placement; %s network "
               "model\n",
               p->spec->path, p->gpus, cluster_topology_name(c->topology), fabric,
               c->bandwidth_Bps * 8 / 1e9, c->latency_s * 1e6, p->spec->placement,
               p->spec->network_model);
    for (int j = 0; j < p->n_jobs; j++) {
        const ClJob *job = &p->jobs[j];
        char on[64];
        cl_gpu_text(job, on, sizeof on);
        printf("# job %s: %s%s%s, %d worker%s on GPU%s %s, from %g s; policy %s, compressor %s\n",
               job->spec->name, job->ta.model, job->cfg.workload ? " priced as " : "",
               job->cfg.workload ? job->cfg.workload->name : "", job->P, job->P > 1 ? "s" : "",
               job->P > 1 ? "s" : "", on, job->spec->start_s, job->cfg.policy, job->cfg.compressor);
    }
    int sims = 1 + (pt->alone ? p->n_jobs : 0);
    printf("# %d simulation%s (the jobs together%s), %d at a time; results in %s\n", sims,
           sims > 1 ? "s" : "", pt->alone ? ", then each alone on its GPUs" : "",
           jobs < sims ? jobs : sims, pt->dir);
    fflush(stdout);
}

/* Plots are a convenience: a failure is reported, the results stand, and the command fails
 * at its end (exit 1). Returns 1 if they failed. */
static int point_plots(const char *dir)
{
    if (!plots_available()) {
        printf("# gnuplot not found: no plots (scripts/setup.sh installs gnuplot-nox)\n");
        return 0;
    }
    BwError err;
    if (plots_cluster(dir, &err) != BW_OK) {
        fprintf(stderr, "bellows: %s\n", err.msg);
        return 1;
    }
    printf("# plots in %s: jobs_accuracy_vs_time, links_utilisation (.png and .svg)\n", dir);
    return 0;
}

/* A point: its children, then its files and table. */
static int point_run(Point *pt, const Opts *o, BwError *err)
{
    int sims = 1 + (pt->alone ? pt->plan.n_jobs : 0);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int at_once = o->jobs < sims ? o->jobs : sims;
    pt->threads = cores > at_once ? (int)(cores / at_once) : 1;
    pt->wall0 = wallclock_s();
    point_header(pt, o->jobs);
    int rc = outdir_create(pt->dir, err);
    if (!rc) rc = runner_pool(sims, o->jobs, point_child, point_done, pt, err);
    if (!rc) rc = point_read(pt, err);
    if (!rc && o->timeline) rc = cl_timeline_merge(&pt->plan, pt->dir, err);
    if (!rc)
        rc = cl_report_write(&pt->plan, pt->rows, pt->dir, wallclock_s() - pt->wall0, pt->alone,
                             err);
    if (rc) return rc;
    cl_report_print(stdout, &pt->plan, pt->rows, pt->alone);
    cl_report_links(stdout, pt->dir);
    printf("# wrote %s/cluster.json (%.1f wall s)\n", pt->dir, wallclock_s() - pt->wall0);
    pt->plots_failed = point_plots(pt->dir);
    fflush(stdout);
    return BW_OK;
}

/* The point's spec and plan from the file's tree with the point's values set. */
static int point_build(Point *pt, const json_t *root, const char *path, const ClAxis *axes,
                       int n_axes, const int *value, const Opts *o, BwError *err)
{
    json_t *copy = json_deep_copy(root);
    int rc = n_axes ? cl_axes_apply(copy, path, axes, n_axes, value, err) : BW_OK;
    if (!rc) rc = cl_spec_from_json(path, copy, &pt->spec, err);
    json_decref(copy);
    if (!rc) rc = cl_plan_build(&pt->spec, o->timeline ? o->timeline_steps : NULL, &pt->plan, err);
    return rc;
}

static void point_free(Point *pt)
{
    cl_plan_free(&pt->plan);
    cl_spec_free(&pt->spec);
}

/* Removes what path's folder holds, its folders' too (never following a link); files_too 0:
 * only the folders that end up empty, every file kept. */
static void remove_below(const char *path, int files_too)
{
    DIR *d = opendir(path);
    if (!d) return;
    for (struct dirent *e; (e = readdir(d));) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        char sub[4400];
        snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
        struct stat st;
        if (lstat(sub, &st) == 0 && S_ISDIR(st.st_mode)) {
            remove_below(sub, files_too);
            rmdir(sub); /* fails, as it should, on a folder that still holds a file */
        } else if (files_too) {
            unlink(sub);
        }
    }
    closedir(d);
}

/* After a failure: a new or empty --out as it was; another keeps what was written, less the
 * empty folders the stopped point left. */
static void out_restore(const char *out, int was_empty, int existed)
{
    remove_below(out, was_empty); /* all, or a stopped point's empty folders */
    if (was_empty) outdir_remove_if_new(out, existed);
}

/* Whether path is missing or an empty folder. */
static int new_or_empty(const char *path)
{
    DIR *d = opendir(path);
    if (!d) return access(path, F_OK) != 0;
    int empty = 1;
    for (struct dirent *e; empty && (e = readdir(d));)
        empty = strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0;
    closedir(d);
    return empty;
}

/* ",x" for a figure, "," for one that is not finite (an empty field, as in bellows sweep's). */
static void fig(FILE *f, double x)
{
    if (isfinite(x))
        fprintf(f, ",%.9g", x);
    else
        fputc(',', f);
}

/* sweep.csv's rows of one point: the point's values, then each job's figures. */
static void sweep_rows(FILE *f, const ClAxis *axes, int n_axes, const int *value, const Point *pt,
                       const char *folder)
{
    for (int j = 0; j < pt->plan.n_jobs; j++) {
        const ClRow *r = &pt->rows[j];
        for (int k = 0; k < n_axes; k++) {
            csv_field(f, axes[k].values[value[k]]);
            fputc(',', f);
        }
        csv_field(f, pt->plan.jobs[j].spec->name);
        fprintf(f, ",%s", r->shared.status);
        fig(f, r->shared.tta_s);
        fig(f, r->shared.sim_time_s);
        fprintf(f, ",%.17g", r->shared.bytes);
        fig(f, r->shared.comm_s);
        int of_tta = 0;
        fig(f, pt->alone ? r->alone.tta_s : NAN);
        fig(f, pt->alone ? r->alone.sim_time_s : NAN);
        fig(f, pt->alone ? r->alone.comm_s : NAN);
        fig(f, pt->alone ? cl_slowdown(r, &of_tta) : NAN);
        fprintf(f, ",%s", !pt->alone ? "" : of_tta ? "time_to_accuracy_s" : "sim_time_s");
        fig(f, pt->alone ? cl_contention(r) : NAN);
        fputc(',', f);
        csv_field(f, folder);
        fputc('\n', f);
    }
}

static int sweep_write(const char *out, const ClAxis *axes, int n_axes, const char *rows,
                       BwError *err)
{
    OutFile of;
    int rc = outfile_open(&of, out, "sweep.csv", err);
    if (rc) return rc;
    for (int k = 0; k < n_axes; k++) {
        csv_field(of.f, axes[k].key);
        fputc(',', of.f);
    }
    fputs("job,status,time_to_accuracy_s,sim_time_s,bytes_per_worker,communication_s,"
          "alone_time_to_accuracy_s,alone_sim_time_s,alone_communication_s,slowdown,slowdown_of,"
          "contention_share,folder\n",
          of.f);
    fputs(rows, of.f);
    return outfile_commit(&of, err);
}

/* Every point checked whole (its file, its jobs as bellows run checks a run, its placement)
 * before anything is written. Without --set the one point stays built in pt, its data loaded. */
static int check_points(const json_t *root, const char *file, const ClAxis *axes, int n_axes,
                        const Opts *o, Point *pt, BwError *err)
{
    int value[CL_MAX_AXES];
    for (long i = 0; i < (n_axes ? cl_axes_points(axes, n_axes) : 1); i++) {
        cl_axes_point(axes, n_axes, i, value);
        int rc = point_build(pt, root, file, axes, n_axes, value, o, err);
        if (rc || n_axes) point_free(pt);
        if (rc && n_axes) {
            char folder[1024];
            cl_axes_folder(axes, n_axes, value, folder, sizeof folder);
            BwError why = *err;
            return bw_fail(err, rc, "--set point %s: %s", folder, why.msg);
        }
        if (rc) return rc;
    }
    return BW_OK;
}

/* Each point into out (or out/points/FOLDER with --set); sweep.csv's rows into rows. */
static int run_points(const json_t *root, const char *file, const ClAxis *axes, int n_axes,
                      const Opts *o, Point *pt, FILE *rows, int *plots_failed, BwError *err)
{
    int value[CL_MAX_AXES], rc = BW_OK;
    const long n = n_axes ? cl_axes_points(axes, n_axes) : 1;
    for (long i = 0; i < n && !rc; i++) {
        char folder[1024] = "";
        cl_axes_point(axes, n_axes, i, value);
        if (n_axes) {
            memset(pt, 0, sizeof *pt);
            cl_axes_folder(axes, n_axes, value, folder, sizeof folder);
            printf("%s# point %ld of %ld:", i ? "\n" : "", i + 1, n);
            for (int k = 0; k < n_axes; k++)
                printf(" %s=%s", axes[k].key, axes[k].values[value[k]]);
            putchar('\n');
            snprintf(pt->dir, sizeof pt->dir, "%s/points/%s", o->out, folder);
        } else {
            snprintf(pt->dir, sizeof pt->dir, "%s", o->out);
        }
        pt->alone = strcmp(o->alone, "run") == 0;
        if (n_axes) rc = point_build(pt, root, file, axes, n_axes, value, o, err);
        if (!rc) rc = point_run(pt, o, err);
        if (!rc && n_axes) sweep_rows(rows, axes, n_axes, value, pt, folder);
        *plots_failed += pt->plots_failed;
        point_free(pt);
    }
    return rc;
}

int cmd_cluster(int argc, char **argv, BwError *err)
{
    Opts o;
    const char *file = argc > 0 && argv[0][0] != '-' ? argv[0] : NULL;
    int rc =
        cli_parse("bellows cluster", OPTS, N_OPTS, &o, argc - !!file, argv + !!file, NULL, err);
    if (rc == CLI_HELP) {
        cli_print_help(stdout, USAGE, ABOUT, OPTS, N_OPTS);
        return BW_OK;
    }
    if (rc) return rc;
    if (!file)
        return bw_fail(err, BW_EUSAGE, "cluster: expected the cluster file first (%s)", USAGE);
    ClAxis *axes = calloc(CL_MAX_AXES, sizeof *axes);
    Point *pt = calloc(1, sizeof *pt);
    json_t *root = NULL;
    int n_axes = 0, plots_failed = 0;
    if (o.set) rc = cl_axes_parse(o.set, axes, &n_axes, err);
    if (!rc && o.set) rc = cl_axes_check(axes, n_axes, err);
    if (!rc) rc = cl_file_read(file, &root, err);
    if (!rc) rc = check_points(root, file, axes, n_axes, &o, pt, err);
    if (!rc) rc = run_check_out(o.out, o.force, err);
    const int existed = access(o.out, F_OK) == 0, was_empty = new_or_empty(o.out);
    if (!rc) rc = outdir_create(o.out, err);
    if (!rc) {
        char *text = NULL;
        size_t len = 0;
        FILE *rows = open_memstream(&text, &len);
        outfile_interrupt_softly();
        rc = run_points(root, file, axes, n_axes, &o, pt, rows, &plots_failed, err);
        fclose(rows);
        if (!rc && n_axes) rc = sweep_write(o.out, axes, n_axes, text, err);
        if (!rc && n_axes) printf("# wrote %s/sweep.csv\n", o.out);
        free(text);
        if (rc) out_restore(o.out, was_empty, existed);
        if (rc == BW_EINTR) {
            BwError why = *err;
            bw_fail(err, BW_EINTR, "cluster: %s; %s", why.msg,
                    was_empty ? "nothing written" : "the files written so far stay");
        }
    }
    if (!rc && plots_failed) /* after the results are kept */
        rc = bw_fail(err, BW_ERUNTIME,
                     "cluster: the plots of %d point(s) failed (see above); the results are "
                     "written",
                     plots_failed);
    point_free(pt); /* the one point, when it was not run (freed twice is a no-op) */
    json_decref(root);
    free(axes);
    free(pt);
    return rc;
}
