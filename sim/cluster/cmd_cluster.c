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
#include "xalloc.h"

typedef struct {
    const char *out, *alone, *set, *timeline_steps;
    int force, jobs, timeline, resume;
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
        "values, several separated by spaces (in one argument, or as arguments of their own after "
        "--set); the cross product, into DIR/points/, and "
        "DIR/sweep.csv",
        0, 0, NULL, 0),
    OPT("resume", CLI_FLAG, resume, NULL, NULL,
        "skip the points already in DIR (their cluster.json written) after an interruption, and "
        "run the rest",
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
    "start_s and optionally hosts (sim/cluster/README.md). A job's price_workers N (with\n"
    "collectives analytic, allreduce ring) trains on its workers, holds N GPUs and pays its\n"
    "closed forms at N plus the delay its ring's flows between switches meet on the shared\n"
    "links. Prints each job's time to accuracy, its slowdown against the same job alone on the\n"
    "same GPUs, its bytes and the share of its communication time that contention added, and\n"
    "plots each job's accuracy on the cluster's clock and the busiest links' utilisation\n"
    "(jobs_accuracy_vs_time, links_utilisation).";

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
    int n_priced = 0;
    for (int j = 0; j < p->n_jobs; j++) {
        const ClJob *job = &p->jobs[j];
        char on[64];
        cl_gpu_text(job, on, sizeof on);
        char priced[96] = "", hops[48] = "";
        if (job->cfg.price_workers) {
            if (job->layout) /* its ring's hops as placed (coll_comm_set_layout) */
                snprintf(hops, sizeof hops, " (ring hops %s switches)",
                         cl_layout_name(job->layout));
            snprintf(priced, sizeof priced, " priced as %d GPUs%s,", job->N, hops);
            n_priced++;
        }
        printf("# job %s: %s%s%s, %d worker%s%s on GPU%s %s, from %g s; policy %s, compressor "
               "%s\n",
               job->spec->name, job->ta.model, job->cfg.workload ? " priced as " : "",
               job->cfg.workload ? job->cfg.workload->name : "", job->P, job->P > 1 ? "s" : "",
               priced, job->N > 1 ? "s" : "", on, job->spec->start_s, job->cfg.policy,
               run_policy_uses_compressor(job->cfg.policy) ? job->cfg.compressor
                                                           : "none (dense gradients)");
    }
    if (n_priced) /* the model of cl_fabric.c */
        printf("# %d priced job%s: each step the closed forms at its GPUs, its ring's hops as "
               "placed (across switches or under one), plus the delay other jobs add to its "
               "ring's flows between switches (simulated on the shared links); no other message "
               "of theirs is simulated\n",
               n_priced, n_priced > 1 ? "s" : "");
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
    if (plots_find() <= 0) return 0; /* none, or a Ctrl-C while it looked: run_points */
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

/* The files the point's keys read (a job's costs, policy, schedule, workload; the platform)
 * into io, checked (io_check.h) with what io holds already. */
static int point_files(const ClSpec *spec, IoFiles *io, BwError *err)
{
    char where[1200];
    for (int j = -1; j < spec->n_jobs; j++) {
        const ClFlag *f = j < 0 ? spec->flags : spec->jobs[j].flags;
        int n = j < 0 ? spec->n_flags : spec->jobs[j].n_flags;
        for (int i = 0; i < n; i++) {
            if (j < 0)
                snprintf(where, sizeof where, "%.1000s: key \"%s\"", spec->path, f[i].flag);
            else
                snprintf(where, sizeof where, "%.1000s: job \"%s\": key \"%s\"", spec->path,
                         spec->jobs[j].name, f[i].flag);
            for (char *c = strstr(where, ": key \"") + 7; *c; c++) /* the file's key_name */
                if (*c == '-') *c = '_';
            io_input(io, f[i].flag, where, f[i].value);
        }
    }
    return io_check(io, err);
}

/* The point's spec and plan from the file's tree with the point's values set; with io, the
 * files its keys read checked first. */
static int point_build(Point *pt, const json_t *root, const char *path, const ClAxis *axes,
                       int n_axes, const int *value, const Opts *o, IoFiles *io, BwError *err)
{
    json_t *copy = json_deep_copy(root);
    int rc = n_axes ? cl_axes_apply(copy, path, axes, n_axes, value, err) : BW_OK;
    if (!rc) rc = cl_spec_from_json(path, copy, &pt->spec, err);
    json_decref(copy);
    if (!rc && io) rc = point_files(&pt->spec, io, err);
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
                        const Opts *o, Point *pt, IoFiles *io, BwError *err)
{
    int value[CL_MAX_AXES];
    const long n = n_axes ? cl_axes_points(axes, n_axes) : 1;
    const int progress = n > 1 && isatty(STDERR_FILENO);
    const double t0 = wallclock_s();
    if (n > 1) { /* each check loads the point's data: say so before the wait */
        printf("# checking the %ld points of --set before anything runs\n", n);
        fflush(stdout);
    }
    for (long i = 0; i < n; i++) {
        if (progress && i) {
            double el = wallclock_s() - t0;
            fprintf(stderr, "\r\033[K[cluster] %ld/%ld points checked, %.0fs elapsed, ~%.0fs left",
                    i, n, el, el / (double)i * (double)(n - i));
        }
        cl_axes_point(axes, n_axes, i, value);
        int rc = point_build(pt, root, file, axes, n_axes, value, o, io, err);
        if (progress && (rc || i == n - 1)) fputs("\r\033[K", stderr);
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

/* A point that --resume finds finished (its cluster.json written): its rows read back. */
static int point_resumed(Point *pt, BwError *err)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/cluster.json", pt->dir);
    if (access(path, F_OK) != 0) return 0;
    json_t *done = json_load_file(path, 0, NULL);
    const char *was = json_string_value(json_object_get(done, "input"));
    int same = was && strcmp(was, pt->spec.input) == 0;
    if (!same)
        bw_fail(err, BW_EUSAGE,
                "--resume: %s: was made from another cluster file or other --set values (its "
                "input %s, now %s): its results would mix two clusters; give a new --out",
                path, was ? was : "not recorded", pt->spec.input);
    json_decref(done);
    if (!same) return -1;
    int rc = point_read(pt, err);
    if (rc) {
        BwError why = *err;
        bw_fail(err, BW_EUSAGE, "--resume: %s holds results of another cluster? %s", pt->dir,
                why.msg);
        return -1;
    }
    printf("# done already (--resume): %s\n", path);
    return 1;
}

/* --resume with --set: every folder of out/points is a point of these axes (one of other keys
 * or values would be another sweep's, and its sweep.csv would mix the two). */
static int points_of_this_set(const ClAxis *axes, int n_axes, const char *out, BwError *err)
{
    char dir[4200], folder[1024];
    snprintf(dir, sizeof dir, "%s/points", out);
    DIR *d = opendir(dir);
    int rc = BW_OK, value[CL_MAX_AXES];
    for (struct dirent *e; d && !rc && (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        int found = 0;
        for (long i = 0; i < cl_axes_points(axes, n_axes) && !found; i++) {
            cl_axes_point(axes, n_axes, i, value);
            cl_axes_folder(axes, n_axes, value, folder, sizeof folder);
            found = strcmp(folder, e->d_name) == 0;
        }
        if (!found)
            rc = bw_fail(err, BW_EUSAGE,
                         "--resume: %s/%s: is no point of this --set (another sweep's keys or "
                         "values); give a new --out",
                         dir, e->d_name);
    }
    if (d) closedir(d);
    return rc;
}

/* Each point into out (or out/points/FOLDER with --set); sweep.csv's rows into rows; *done:
 * the points finished (with --resume, before too). A Ctrl-C stops after the point in flight;
 * pt->dir is then the stopped point's folder. */
static int run_points(const json_t *root, const char *file, const ClAxis *axes, int n_axes,
                      const Opts *o, Point *pt, FILE *rows, long *done, int *plots_failed,
                      BwError *err)
{
    int value[CL_MAX_AXES], rc = BW_OK;
    const long n = n_axes ? cl_axes_points(axes, n_axes) : 1;
    *done = 0;
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
        if (n_axes) rc = point_build(pt, root, file, axes, n_axes, value, o, NULL, err);
        int resumed = !rc && o->resume ? point_resumed(pt, err) : 0;
        if (resumed < 0) rc = BW_EUSAGE;
        if (!rc && !resumed) rc = point_run(pt, o, err);
        if (!rc && n_axes) sweep_rows(rows, axes, n_axes, value, pt, folder);
        if (!rc) ++*done;
        *plots_failed += pt->plots_failed;
        if (!rc && outfile_interrupted()) { /* after this point (looking for gnuplot, say) */
            pt->dir[0] = '\0';              /* no point stopped midway */
            rc = bw_fail(err, BW_EINTR, "interrupted after point %ld of %ld", i + 1, n);
        } else if (rc == BW_EINTR && n_axes) {
            BwError why = *err;
            bw_fail(err, BW_EINTR, "point %ld of %ld: %s", i + 1, n, why.msg);
        }
        point_free(pt);
    }
    return rc;
}

/* The flags with every --set joined into one (its keys separated by spaces, as one --set takes
 * them), so that repeated --set combine into axes while any other flag given twice is refused
 * (cli_parse). rest holds argc + 1; sets is the joined text. */
static int join_sets(int argc, char **argv, char **rest, int *n_rest, char *sets, size_t size,
                     BwError *err)
{
    size_t used = 0;
    *n_rest = 0;
    for (int i = 0; i < argc; i++) {
        const char *v = NULL;
        if (strcmp(argv[i], "--set") == 0 && i + 1 < argc)
            v = argv[++i];
        else if (strncmp(argv[i], "--set=", 6) == 0)
            v = argv[i] + 6;
        if (!v) {
            rest[(*n_rest)++] = argv[i];
            continue;
        }
        for (;;) { /* this --set's value, then the KEY=VALUES arguments that follow it */
            int n = snprintf(sets + used, size - used, "%s%s", used ? " " : "--set=", v);
            if (n < 0 || (size_t)n >= size - used)
                return bw_fail(err, BW_EUSAGE, "--set: more than %zu bytes of keys and values",
                               size - 7);
            used += (size_t)n;
            if (i + 1 >= argc || !cl_set_item(argv[i + 1])) break;
            v = argv[++i];
        }
    }
    if (used) rest[(*n_rest)++] = sets;
    return BW_OK;
}

/* The points, then sweep.csv of those that finished. After a failure or an interruption the
 * finished points stay (sweep.csv lists them; --resume runs the rest), and the stopped point's
 * folder goes (its files too in a --out that was new or empty); with none finished, a new or
 * empty --out is as it was, another keeps its files. The message says what stayed. */
static int run_all(const json_t *root, const char *file, const ClAxis *axes, int n_axes,
                   const Opts *o, Point *pt, int was_empty, int existed, BwError *err)
{
    char *text = NULL;
    size_t len = 0;
    long done = 0;
    int plots_failed = 0;
    FILE *rows = open_memstream(&text, &len);
    outfile_interrupt_softly();
    int rc = run_points(root, file, axes, n_axes, o, pt, rows, &done, &plots_failed, err);
    fclose(rows);
    BwError werr;
    int wrc = n_axes && done ? sweep_write(o->out, axes, n_axes, text, &werr) : BW_OK;
    free(text);
    if (!rc && wrc) *err = werr;
    if (!rc && !wrc && n_axes) printf("# wrote %s/sweep.csv\n", o->out);
    if (!rc && !wrc && plots_failed) /* after the results are kept */
        return bw_fail(err, BW_ERUNTIME,
                       "cluster: the plots of %d point(s) failed (see above); the results are "
                       "written",
                       plots_failed);
    if (!rc || wrc) return rc ? rc : wrc;
    if (done == 0) {
        out_restore(o->out, was_empty, existed);
    } else if (pt->dir[0]) {
        remove_below(pt->dir, was_empty);
        rmdir(pt->dir);
    }
    BwError why = *err;
    if (done == 0 && rc == BW_EINTR)
        return bw_fail(err, rc, "cluster: %s; %s", why.msg,
                       was_empty ? "nothing written" : "the files written so far stay");
    if (done == 0) return rc;
    const long n = n_axes ? cl_axes_points(axes, n_axes) : 1;
    if (done == n) /* stopped while it looked for gnuplot */
        return bw_fail(err, rc,
                       "cluster: %s; every point finished: the results stay in %s (no "
                       "plots; bellows plot draws them)",
                       why.msg, o->out);
    return bw_fail(err, rc,
                   "cluster: %s; the %ld finished point%s stay%s in %s%s: add --resume to run "
                   "the rest",
                   why.msg, done, done > 1 ? "s" : "", done > 1 ? "" : "s", o->out,
                   n_axes ? " (sweep.csv lists them)" : "");
}

int cmd_cluster(int argc, char **argv, BwError *err)
{
    Opts o;
    const char *file = argc > 0 && argv[0][0] != '-' ? argv[0] : NULL;
    char **rest = bw_xcalloc((size_t)argc + 1, sizeof *rest, "the command line"), sets[4096];
    int n_rest = 0, given[N_OPTS];
    int rc = join_sets(argc - !!file, argv + !!file, rest, &n_rest, sets, sizeof sets, err);
    if (!rc) rc = cli_parse("bellows cluster", OPTS, N_OPTS, &o, n_rest, rest, given, err);
    free(rest);
    if (rc == CLI_HELP) {
        cli_print_help(stdout, USAGE, ABOUT, OPTS, N_OPTS);
        return BW_OK;
    }
    if (rc) return rc;
    if (cli_given(OPTS, N_OPTS, given, "timeline-steps") &&
        !o.timeline) /* as run's (flag_effect.c) */
        return bw_fail(err, BW_EUSAGE,
                       "--timeline-steps: has no effect alone: the steps a timeline keeps; add "
                       "--timeline");
    if (!file)
        return bw_fail(err, BW_EUSAGE, "cluster: expected the cluster file first (%s)", USAGE);
    ClAxis *axes = bw_xcalloc(CL_MAX_AXES, sizeof *axes, "cmd_cluster.c: axes");
    Point *pt = bw_xcalloc(1, sizeof *pt, "cmd_cluster.c: pt");
    json_t *root = NULL;
    int n_axes = 0;
    if (o.set) rc = cl_axes_parse(o.set, axes, &n_axes, err);
    if (!rc && o.set) rc = cl_axes_check(axes, n_axes, err);
    if (!rc && o.set && cl_axes_points(axes, n_axes) > RUN_MAX_RUNS)
        rc = bw_fail(err, BW_EUSAGE,
                     "--set: %ld points is too many (at most %d, as bellows sweep); set fewer "
                     "keys or values",
                     cl_axes_points(axes, n_axes), RUN_MAX_RUNS);
    IoFiles io = {0}; /* inputs are never outputs (io_check.h) */
    io_input_file(&io, "cluster file", file);
    io_out_dir(&io, "--out", o.out);
    if (!rc) rc = io_check(&io, err);
    if (!rc) rc = cl_file_read(file, &root, err);
    if (!rc) rc = check_points(root, file, axes, n_axes, &o, pt, &io, err);
    io_free(&io);
    if (!rc && o.resume && o.force) rc = bw_fail(err, BW_EUSAGE, "--force: not with --resume");
    if (!rc && !o.resume) rc = run_check_out(o.out, o.force, err);
    if (!rc && o.resume && n_axes) rc = points_of_this_set(axes, n_axes, o.out, err);
    const int existed = access(o.out, F_OK) == 0, was_empty = new_or_empty(o.out);
    if (!rc) rc = outdir_create(o.out, err);
    if (!rc) rc = run_all(root, file, axes, n_axes, &o, pt, was_empty, existed, err);
    point_free(pt); /* the one point, when it was not run (freed twice is a no-op) */
    json_decref(root);
    free(axes);
    free(pt);
    return rc;
}
