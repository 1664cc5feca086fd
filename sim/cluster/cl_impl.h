/* cl_impl.h: what the files of sim/cluster/ (bellows cluster: several training jobs on one
 * simulated cluster) share, and nothing else includes. The file (cl_file.c) becomes a ClSpec:
 * its keys as the flags of `bellows run`; the spec becomes a ClPlan (cl_plan.c): the cluster's
 * platform, each job's resolved run and the GPUs it sits on (cl_place.c); a plan is simulated in
 * a child process (cl_sim.c), the shared fabric's links sampled as it runs (cl_links.c); the
 * parent reads the jobs' results back and writes the cluster's (cl_report.c); --set points
 * (cl_sweep.c); the command (cmd_cluster.c). The format is in sim/cluster/README.md. */
#ifndef BELLOWS_CL_IMPL_H
#define BELLOWS_CL_IMPL_H

#include <jansson.h>

#include "dataset.h"
#include "driver.h"
#include "run_args.h"

#define CL_MAX_JOBS       64
#define CL_NAME_MAX       48  /* a job's name, a folder's: [A-Za-z0-9._-], 1 to 47 bytes */
#define CL_FORMAT_VERSION 1   /* the file's "version", when it gives one */
#define CL_MAX_ARGS       256 /* flags and values of one job's command line */

/* One key of the file as a flag of `bellows run`: "train-samples" and "4096" (value NULL for a
 * flag that takes no value, given as true). */
typedef struct {
    char *flag, *value;
} ClFlag;

/* A job as the file gives it. */
typedef struct {
    char name[CL_NAME_MAX];
    ClFlag *flags; /* its run flags ("workers" among them), in the file's order */
    int n_flags;
    double start_s;     /* the engine's clock at its start */
    char **hosts;       /* "hosts": host names, or the cluster's GPU indices as text */
    int n_hosts;        /* 0: placed by placement */
    int hosts_indices;  /* hosts are GPU indices */
    char placement[16]; /* "packed", "spread", or "": the cluster's */
} ClJobSpec;

/* The file. */
typedef struct {
    char path[1024];
    ClFlag *flags; /* the cluster's flags ("workers", "hosts" among them) */
    int n_flags;
    char placement[16];     /* packed (default) or spread */
    char network_model[16]; /* exact (default) or tcp */
    ClJobSpec *jobs;
    int n_jobs;
    char input[32]; /* the point's JSON (--set applied) as a fingerprint, "fnv1a64:HEX": its
                     * cluster.json records it, and --resume takes a finished point only if it
                     * matches (another file or other values would mix two clusters' results) */
} ClSpec;

/* cl_file.c: reads path into a JSON tree (a usage error naming the file and the line); then
 * cl_spec_from_json checks every key (naming the file, the job and the key) and converts. */
int cl_file_read(const char *path, json_t **root, BwError *err);
int cl_spec_from_json(const char *path, const json_t *root, ClSpec *out, BwError *err);
void cl_spec_free(ClSpec *s); /* a zeroed one too */
/* A message that names flags (--train-samples) as the file's keys ("train_samples"), behind
 * where ("FILE: job \"a\": "). */
int cl_fail_keys(BwError *err, int status, const char *where, const char *msg);
/* --set KEY=VALUE: a key of the file's top level, or of job NAME as NAME.KEY, set to VALUE (a
 * number if it reads as one, true or false, else a string). */
int cl_file_set(json_t *root, const char *path, const char *key, const char *value, BwError *err);

/* One job of a plan: its flags parsed and resolved as `bellows run` resolves them, and where it
 * runs. */
typedef struct {
    const ClJobSpec *spec;
    char *argv[CL_MAX_ARGS];
    int argc;
    Flags f;
    TrainArgs ta;
    RunConfig cfg;
    double *slowdown; /* [DRIVER_MAX_WORKERS] */
    int P;            /* its workers */
    int N;            /* the GPUs it holds: its price_workers, else P */
    int *gpus;        /* [N]: the cluster's GPUs it holds, its ranks on the first P */
    int layout;       /* a priced job's ring hops as placed (cl_ring_layout), else 0 */
} ClJob;

/* What a plan simulates. */
typedef struct {
    const ClSpec *spec;
    Flags top; /* the cluster's flags, parsed (owns a platform's host names) */
    char *top_argv[CL_MAX_ARGS];
    int top_argc;
    Cluster platform;       /* the whole cluster, as loaded (its links at the jobs' share) */
    int gpus;               /* platform.workers */
    int groups, group_size; /* switches a placement spreads over (fat-tree leaves, nodes) */
    ClJob *jobs;            /* [spec->n_jobs] */
    int n_jobs;
    Dataset *train, *test; /* [n_data] the data sets the jobs train on, shared when equal */
    int n_data;
    char timeline_steps[32]; /* "" : no timeline */
} ClPlan;

/* cl_plan.c: every job resolved and checked (as `bellows run` would, with its data loaded),
 * the jobs' GPUs placed, the platform built. */
int cl_plan_build(const ClSpec *spec, const char *timeline_steps, ClPlan *plan, BwError *err);
void cl_plan_free(ClPlan *plan); /* a zeroed one too */
/* The steps the timeline keeps (hi < 0: no end), from --timeline-steps. */
void cl_timeline_range(const ClPlan *plan, long *lo, long *hi);
/* cl_place.c: each job's GPUs (hosts, packed or spread), or a usage error naming the job. */
int cl_place(ClPlan *plan, BwError *err);
/* Whether job's ranks sit under the switches as on a cluster of its own size (rank r under the
 * r / size-th, size a leaf's or a node's GPUs), as the analytic closed forms take them; islands
 * are placed so. */
int cl_in_rank_order(const ClPlan *plan, const ClJob *job);

/* cl_sim.c: in this (child) process, simulates the jobs `which[0..n)` of plan in one engine and
 * writes each into dir/jobs/NAME/ (the files of bellows run), and with link monitoring the
 * links' file dir/links.csv; a job alone (n 1, alone set) starts at 0 and writes into
 * dir/alone/NAME/. threads: the pool the jobs share. */
int cl_simulate(const ClPlan *plan, const int *which, int n, int alone, const char *dir,
                int threads, double wall0, BwError *err);

/* cl_links.c: the bytes the jobs' messages put on each link of the cluster, over time. */
typedef struct ClLinks ClLinks;
typedef struct {
    ClLinks *links;
    const int *gpus; /* the job's: its rank r on the cluster's GPU gpus[r] */
} ClWireJob;
ClLinks *cl_links_create(int gpus); /* once the platform is loaded */
void cl_links_wire(void *job, int src, int dst, double bytes, double t0_s, double t1_s); /* a
                                                   CollWireFn, job a ClWireJob */
int cl_links_write(ClLinks *m, const char *dir, BwError *err); /* dir/links.csv, at the end */
void cl_links_free(ClLinks *m);
#define CL_LINKS_TOP 8 /* links.csv keeps the busiest */

/* cl_fabric.c: a priced job's ring flows between switches on the shared links (the model is in
 * cl_fabric.c and sim/cluster/README.md). Create once the platform is loaded; wire may be NULL. */
typedef struct ClFabric ClFabric;
ClFabric *cl_fabric_create(const ClPlan *plan, const ClJob *job, ClWireJob *wire);
double cl_fabric_call(void *fabric, double flow_bytes); /* a CollFabricFn */
int cl_fabric_flows(const ClFabric *f);                 /* its flows (0 for NULL) */
void cl_fabric_free(ClFabric *f);                       /* NULL is a no-op */
/* The hops of job's ring over its GPUs in the order they were placed (coll_comm_set_layout):
 * COLL_LAYOUT_ACROSS if one crosses a switch (a fat-tree leaf, a hierarchical node of the
 * cluster), COLL_LAYOUT_INSIDE if one stays under one; 0 on a cluster without switches. */
int cl_ring_layout(const ClPlan *plan, const ClJob *job);
/* A layout in words: "across" (every hop crosses a switch), "inside", "across and inside". */
const char *cl_layout_name(int layout);

/* cl_report.c: the jobs' results read back (their summary.json), cluster.json and the table. */
typedef struct {
    int ok;
    char status[32];
    double tta_s, sim_time_s, bytes, comm_s, final_acc, tta_res_s;
    long steps;
    char compressor[256]; /* what ran: "none" under sync or a periodic policy (driver.c) */
} ClFigures;
typedef struct {
    ClFigures shared, alone;
    double start_s;
} ClRow;
int cl_report_read(const char *summary_json, ClFigures *fig, BwError *err);
/* A job's slowdown: its time to accuracy shared over alone when both reached the target (of_tta
 * 1), else its whole run's simulated time shared over alone. */
double cl_slowdown(const ClRow *r, int *of_tta);
/* The share of its communication time the other jobs added: (shared - alone) / shared. */
double cl_contention(const ClRow *r);
int cl_report_write(const ClPlan *plan, const ClRow *rows, const char *dir, double wall_s,
                    int alone, BwError *err);
void cl_report_print(FILE *out, const ClPlan *plan, const ClRow *rows, int alone);
/* One line: the busiest links of dir/links.csv, their mean and peak utilisation. */
void cl_report_links(FILE *out, const char *dir);
/* A job's GPUs as "0-7", "0,4,8,12", "0-3,8-11" (at most n bytes, "..." when cut). */
void cl_gpu_text(const ClJob *job, char *buf, size_t n);
/* The jobs' timelines (dir/jobs/NAME/timeline.json) as one, dir/timeline.json: a process per
 * job, a thread per worker's lane. */
int cl_timeline_merge(const ClPlan *plan, const char *dir, BwError *err);

#endif
