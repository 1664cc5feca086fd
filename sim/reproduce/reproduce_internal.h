/* reproduce_internal.h: what the files of sim/reproduce/ share, and nothing else includes. A
 * reproduction (Repro) is created by cmd_reproduce, filled by the flags, the papers' settings
 * (papers.c) and the job lists (jobs.c), run, and read back into cells for the report (cells.c,
 * report.c). Experiments are indexed 0 (Accordion) and 1 (ADPSGD). */
#ifndef BELLOWS_REPRODUCE_INTERNAL_H
#define BELLOWS_REPRODUCE_INTERNAL_H

#include <stddef.h>
#include <stdio.h>

#include "cli.h"
#include "status.h"

#define MAX_SEEDS    CLI_LIST_MAX
#define MAX_ROLES    8
#define MAX_BWS      2
#define MAX_SETTINGS 8
#define MAX_JOBS     16
#define MAX_ARGV     80
#define N_EXPS       2
/* ADPSGD's roles (the index of a policy in the experiment's cells): CPSGD and ADPSGD at the
 * budgets of periods 4 and 16 (ADPSGD at period P is CPSGD at P's role + ADP_SAME_BUDGET) */
enum {
    ADP_SYNC,
    ADP_CPSGD4,
    ADP_CPSGD16,
    ADP_ADPSGD4,
    ADP_ADPSGD16,
    ADP_POSTLOCAL,
    ADP_ADACOMM,
    ADP_QSGD,
    ADP_N_ROLES,
    ADP_SAME_BUDGET = ADP_ADPSGD4 - ADP_CPSGD4
};

/* Accordion's large batch: 8x the small one (the lr scaled linearly), as the driver's batch mode */
#define PAPERS_LARGE_BATCH 8

/* A paper's setting: whose costs the runs charge, on which GPU and links. */
typedef struct {
    const char *what, *source;
    const char *workload; /* the real model's profile (bellows workloads) */
    const char *gpu;      /* a cluster_gpu_find name, charged at fp32 x efficiency */
    double efficiency;
    const char *gpu_source;
    int workers, batch; /* the paper's; batch per worker, 0 when unknown */
    double latency;     /* NIC link latency [s] */
    const char *latency_source;
} PaperSetting;

/* The simulated counterpart of a model: what bellows trains. Arrays: full, --quick, --smoke. */
typedef struct {
    const char *model;
    int train_samples[3], test_samples[3]; /* 0: all */
    int evals_per_epoch;
    int workers, batch;
    double lr;
    int epochs[3];
    double target[3];
} SimModel;

/* One row of an experiment: a simulated model, compared under the paper's roles. */
typedef struct {
    const char *name;  /* "mlp-powersgd" */
    const char *label; /* "mlp, PowerSGD rank 2 / 1" */
    const SimModel *sim;
    const char *roles[MAX_ROLES];
    int n_roles;
    double paper_acc[MAX_ROLES]; /* the authors' logs, NaN when none */
} Setting;

/* The real model's costs on the paper's GPU: what the report's cost table is computed from. */
typedef struct {
    double params; /* parameters (fp32 gradients) */
    int tensors;
    double flops_sample; /* forward and backward of one sample */
    double gpu_peak;     /* the GPU's fp32 peak, flop/s */
    double gpu_flops;    /* its sustained rate: peak x efficiency */
    /* the cost profile's (--costs): the allreduce's share of a TCP link, the fixed cost of a
     * collective call [s] (1 and 0 under `ideal`), and the profile's name */
    double share, call_s;
    double cap_Bps; /* the profile's cap on a TCP link's rate, bytes/s (0: none) */
    char costs_name[64];
} ProfileCost;

/* One sweep of an experiment: its folder, its flags, and the role of each of its policies. The
 * sweep trains every policy and seed once, at the experiment's first bandwidth, each run
 * recording its gradient trace; then each run is priced at every bandwidth by replaying its
 * trace (price.c): no policy's training depends on the network (none reads the clock). */
typedef struct {
    int exp;     /* 0 accordion, 1 adpsgd */
    int setting; /* index into the experiment's settings */
    char folder[64];
    const char *compressor; /* --compressor of every run */
    int priced; /* trained once and priced by replays; 0: trained at every bandwidth (a policy
                   that changes the batch cannot be replayed) */
    char *argv[MAX_ARGV]; /* the training sweep; strings in the reproduction's pool */
    int argc;
    char *price[MAX_ARGV]; /* the flags every pricing replay of its runs shares */
    int n_price;
    int n_pol;
    char policy[MAX_ROLES][64];
    int role[MAX_ROLES];
} Job;

/* One (experiment, setting, role, bandwidth): a value per seed (NaN: missing or not reached). */
typedef struct {
    int n, diverged;
    double final[MAX_SEEDS], tta[MAX_SEEDS], bytes[MAX_SEEDS], time[MAX_SEEDS];
    double compute[MAX_SEEDS], compress[MAX_SEEDS], comm[MAX_SEEDS], wait[MAX_SEEDS];
    double steps[MAX_SEEDS];
    double tta_step[MAX_SEEDS], tta_bytes[MAX_SEEDS];
    double loss[MAX_SEEDS]; /* training loss at the last evaluation */
    char policy[64];
    char first_run[512]; /* the first seed's run folder, from DIR */
} Cell;

/* A reproduction: the flags, what they imply, the jobs and, once read, the results. */
typedef struct {
    const char *what;  /* accordion, adpsgd or all */
    const char *out;   /* the report folder */
    const char *costs; /* --costs of every run (sim/costs/) */
    int quick, smoke, size, jobs, resume, report_only, no_plots, exp_on[N_EXPS];
    CliIntList seeds;
    ProfileCost cost[N_EXPS]; /* per experiment, when it is on */
    Job job[MAX_JOBS];
    int n_jobs;
    char pool[32768]; /* the jobs' argument strings (jobs_keep) */
    size_t pool_used;
    char out_default[64];
    Cell cells[N_EXPS][MAX_SETTINGS][MAX_ROLES][MAX_BWS];
} Repro;

/* papers.c */
extern const char *const PAPERS_EXP_NAME[N_EXPS];    /* "accordion", "adpsgd" */
extern const char *const PAPERS_BW[N_EXPS][MAX_BWS]; /* the bandwidths of each experiment */
extern const double PAPERS_BW_BPS[N_EXPS][MAX_BWS];  /* the same in bit/s */
const PaperSetting *papers_paper(int exp);           /* the paper's own setting */
const Setting *papers_setting(int exp, int s);       /* s < papers_n_settings(exp) */
int papers_n_settings(int exp);
void papers_decay_epochs(int epochs, int *a, int *b); /* --lr-decay-epochs of a run */
int papers_scaled_epochs(double e300, int epochs, int lo);
int papers_profile_cost(const PaperSetting *ps, const char *costs, ProfileCost *pc, BwError *err);
double papers_compute_s(const ProfileCost *pc, int batch); /* per step, forward + backward */
double papers_dense_comm_s(const ProfileCost *pc, int p, double bw_bps, double link_latency,
                           int calls);
/* The allreduces of a dense step: one per tensor in Accordion's runs (--overlap tensor), one
 * fused in ADPSGD's. */
int papers_dense_calls(int exp, const ProfileCost *pc);

/* jobs.c */
/* DIR/sweeps/<folder>/priced/seed-S-K: where run (seed S, policy K of the job) is priced */
void jobs_price_folder(const Job *j, int seed, int k, char *buf, size_t n);
char *jobs_keep(Repro *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void jobs_build(Repro *r);
void jobs_command(const Job *j, char *buf, size_t n);
void jobs_seed_list(const Repro *r, char *buf, size_t n);

/* cells.c */
int cells_read(Repro *r); /* every job's sweep.csv into r->cells; returns the runs read */
double cells_mean(const Repro *r, const double *v, int *k);
double cells_sd(const Repro *r, const double *v);
double cells_ratio(const Repro *r, const double *a, const double *b);
void cells_regimes(const Repro *r, const char *run_dir, char *buf, size_t n);

/* price.c: every finished training run of job `index` replayed at every bandwidth; returns the
 * number of pricing sweeps that failed. */
int price_job(const Repro *r, int index);

/* verdict.c: the verdict on each claim, with its figures and measured cause */
void verdict_accordion(const Repro *r, FILE *f);
void verdict_adpsgd(const Repro *r, FILE *f, int s);

/* report.c */
int report_write(Repro *r, BwError *err);

/* diloco_runs.c: --out of a reproduction (accordion's, adpsgd's and diloco's) is never written
 * over: holds says whether out holds one already (lacks: what --report-only then names, "sweeps
 * (no DIR/sweeps)"). --report-only needs one; without --resume or --report-only, one is
 * refused, naming both. BW_OK or BW_EUSAGE. */
int repro_check_out(const char *out, int holds, int resume, int report_only, const char *lacks,
                    BwError *err);

/* diloco_runs.c: a run of `bellows reproduce diloco` (the mlp's and --workload's), DIR/runs/NAME.
 * Its state: done (its summary.json), failed (its folder or log, no summary), or never started. */
enum { DILOCO_NOT_RUN, DILOCO_FAILED, DILOCO_DONE };
int diloco_run_state(const char *dir);
/* argv[0..n) (this executable, "run", its flags; room for 2 more) into dir, its output to
 * dir.log, the child tracked for a fatal signal; --force over a folder a stopped run left
 * (--resume). Returns its exit status, -1 if it did not run. */
int diloco_run_child(const char **argv, int n, const char *dir);
/* A run's figures, read back from DIR/summary.json: ok when it has its accuracy and WAN bytes;
 * ran when its folder or log exists (a row without figures failed, else it did not run). */
typedef struct {
    int ok, ran;
    double final_acc, tta, sim_time, wan, peak;
    long steps, exchanges;
} DilocoRow;
void diloco_read_row(const char *dir, DilocoRow *r);
/* Whether to stop after a run: a Ctrl-C came (outfile_interrupt_softly); err says where. */
int diloco_stopped(const char *out, int k, int total, const char *what, BwError *err);

/* zeropp_repro.c: `bellows reproduce zeropp` (ZeRO++'s claims, issue 50 item 7) */
int reproduce_zeropp(int argc, char **argv, BwError *err);

#endif
