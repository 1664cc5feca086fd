/* cmd_reproduce.c: `bellows reproduce accordion|adpsgd|all`, the headline experiments of the
 * two source papers as fixed sets of sweeps, and a report that puts what the simulator shows
 * beside what the papers claim.
 *
 * Each experiment is a list of sweeps (bandwidths x seeds x policies, `bellows sweep` run in a
 * child process so that each starts from a clean state), written under DIR/sweeps/. The report
 * (DIR/report.md, DIR/accordion.csv, DIR/adpsgd.csv, DIR/plots/) is built from the sweeps'
 * sweep.csv files and the runs' evals.csv files only, so it can be rebuilt at any time, and an
 * interrupted reproduction resumes with --resume (each sweep resumes where it stopped).
 *
 * Fidelity. The papers trained ResNet-18-sized models on V100s; bellows trains a small model on
 * Fashion-MNIST, which is far more communication-bound on a real GPU. So the simulated GPU's
 * rate and the link latency are chosen so that one simulated step splits into compute, the
 * bandwidth term and the latency term of a dense ring allreduce in the same proportions as the
 * paper's setting does (at the reference bandwidth; both bandwidth terms scale as 1/bandwidth,
 * so the proportions then hold at every bandwidth). The papers' figures and their sources are in
 * the PaperSetting tables below and are printed in the report. */
#include <errno.h>
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gsl/gsl_statistics_double.h>

#include "model.h"
#include "plots.h"
#include "cli.h"
#include "reproduce.h"
#include "sweep.h"
#include "csv.h"
#include "outfile.h"
#include "run_args.h"
#include "wallclock.h"

#define MAX_SEEDS  CLI_LIST_MAX
#define MAX_ROLES  6
#define MAX_BWS    2
#define MAX_JOBS   16
#define MAX_ARGV   64
#define REF_BW_BPS 10e9 /* the reference bandwidth of both papers' ratios: 10 Gbps */

/* A paper's setting, for its compute-to-communication ratio. */
typedef struct {
    const char *what, *source;
    double params;       /* parameters (fp32 gradients) */
    double flops_sample; /* flops of one sample's forward and backward pass */
    double gpu_flops;    /* sustained flop/s of one GPU */
    const char *gpu;
    int workers, batch; /* per-worker batch */
    double latency;     /* link latency [s] */
    const char *latency_source;
} PaperSetting;

/* Accordion: the repository's CIFAR-10 ResNet-18 runs (main.py: train_batch_size 128 per worker,
 * get_table_2.sh: --num-nodes 4, NCCL). ResNet-18 (CIFAR variant): 11,173,962 parameters,
 * 0.56 GMAC = 1.11 GFLOP per forward pass, backward about twice that. The GPU (p3.2xlarge, one
 * V100) is not stated in the text we could read: assumed, at bellows' default efficiency. */
static const PaperSetting ACCORDION_PAPER = {
    "ResNet-18 on CIFAR-10, 4 workers x 128 images",
    "uw-mad-dash/Accordion main.py and get_table_2.sh; parameters and flops of the CIFAR "
    "ResNet-18 (kuangliu/pytorch-cifar)",
    11173962.0,
    3 * 1.11e9,
    0.5 * 15.7e12,
    "V100 (15.7 TFLOP/s fp32 peak) at 50% (assumed)",
    4,
    128,
    25e-6,
    "assumed (TCP between cloud instances; not stated in the sources)"};

/* ADPSGD: the paper's models, GPUs and batch could not be read (only the abstract). VGG-16 on
 * CIFAR-10 (14.72 M parameters, 0.31 GMAC forward) on V100s, 128 images per GPU, is an assumption
 * chosen because it is consistent with the claimed speedups: local SGD cannot beat sync by more
 * than (compute + communication) / compute, which for ResNet-18 at 100 Gbps would be 1.10x,
 * below the claimed 1.14-1.27x. */
static const PaperSetting ADPSGD_PAPER = {
    "VGG-16 on CIFAR-10, 8 workers x 128 images (assumed: the paper's setting was not found)",
    "Jiang & Agrawal, arXiv 2007.06134 (abstract only); VGG-16 figures from da2so/DA2Lite",
    14.72e6,
    3 * 0.62e9,
    0.5 * 15.7e12,
    "V100 (15.7 TFLOP/s fp32 peak) at 50% (assumed)",
    8,
    128,
    25e-6,
    "assumed (not stated in the sources)"};

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

/* Accordion's checks every 2 epochs need about 8 epochs before a run can leave the critical
 * regime between the lr decays (at 1/2 and 5/6 of the run): --quick keeps 8. */
static const SimModel SIM_MLP = {"mlp", {60000, 30000, 2048}, {10000, 10000, 500}, 4, 4, 32,
                                 0.02,  {12, 8, 2},           {0.88, 0.86, 0.7}};
/* the cnn costs ~15 times the mlp's math per sample: a 12,800-image training set keeps the full
 * reproduction within its hour (100 steps per epoch, as the paper's 98); not in --quick */
static const SimModel SIM_CNN = {"cnn", {12800, 12800, 2048}, {2500, 2500, 500}, 2, 4, 32,
                                 0.02,  {12, 8, 2},           {0.88, 0.86, 0.7}};
static const SimModel SIM_MLP8 = {"mlp", {60000, 30000, 2048}, {10000, 10000, 500}, 4, 8, 32,
                                  0.02,  {12, 8, 2},           {0.88, 0.86, 0.7}};

/* The step's proportions in the paper, and the simulated GPU rate and latency that keep them. */
typedef struct {
    double p_compute, p_comm, p_alpha; /* paper: compute, dense ring bandwidth term, latency term */
    double s_params, s_flops, s_compute, s_comm, gpu_flops, latency; /* simulated */
} Fidelity;

static double ring_bandwidth_term(double params, int p, double bw_bps)
{
    /* ring allreduce: 2 (p-1)/p n beta (REFERENCES.md, Patarasuk and Yuan 2009) */
    return 2.0 * (p - 1) / p * 4.0 * params * 8.0 / bw_bps;
}

static int fidelity(const PaperSetting *ps, const SimModel *sm, Fidelity *fd, BwError *err)
{
    Model *m;
    ModelConfig mc = model_config_default();
    int rc = model_create(model_find(sm->model), &mc, 1, &m, err);
    if (rc) return rc;
    fd->s_params = (double)m->n_params;
    fd->s_flops = model_flops_per_sample(m);
    model_free(m);
    fd->p_compute = ps->batch * ps->flops_sample / ps->gpu_flops;
    fd->p_comm = ring_bandwidth_term(ps->params, ps->workers, REF_BW_BPS);
    fd->p_alpha = 2.0 * (ps->workers - 1) * ps->latency;
    fd->s_comm = ring_bandwidth_term(fd->s_params, sm->workers, REF_BW_BPS);
    fd->s_compute = fd->s_comm * fd->p_compute / fd->p_comm;
    fd->gpu_flops = sm->batch * fd->s_flops / fd->s_compute;
    fd->latency = fd->s_comm * fd->p_alpha / fd->p_comm / (2.0 * (sm->workers - 1));
    return BW_OK;
}

/* One sweep of an experiment: its folder, its flags, and the role of each of its policies. */
typedef struct {
    int exp;     /* 0 accordion, 1 adpsgd */
    int setting; /* index into the experiment's settings */
    char folder[64];
    char *argv[MAX_ARGV];
    int argc;
    int n_pol;
    char policy[MAX_ROLES][64];
    int role[MAX_ROLES];
} Job;

typedef struct {
    const char *name;  /* "mlp-powersgd" */
    const char *label; /* "mlp, PowerSGD rank 2 / 1" */
    const SimModel *sim;
    const char *roles[MAX_ROLES];
    int n_roles;
    double paper_acc[MAX_ROLES]; /* the authors' logs, NaN when none */
} Setting;

static const char *const EXP_NAME[2] = {"accordion", "adpsgd"};
static const char *const SIZE_NAME[3] = {"", " (quick)", " (smoke test: not a result)"};
static const char *const SIZE_LONG[3] = {"the full", "the --quick", "the --smoke"};
static const char *const SIZE_FLAG[3] = {"", " --quick", " --smoke"};

/* Accordion: roles low (critical level everywhere), high (normal level), accordion. */
static Setting ACC[] = {
    {"mlp-powersgd",
     "mlp, PowerSGD rank 2 (low) / rank 1 (high)",
     &SIM_MLP,
     {"low compression", "high compression", "accordion"},
     3,
     {94.49, 94.25, 94.72}},
    {"mlp-topk",
     "mlp, TopK 99% (low) / 10% (high)",
     &SIM_MLP,
     {"low compression", "high compression", "accordion"},
     3,
     {94.09, 93.08, 93.78}},
    {"mlp-batch",
     "mlp, batch 128 (small) / 1024 (large), no compression",
     &SIM_MLP,
     {"small batch", "large batch", "accordion"},
     3,
     {94.49, 93.21, 94.34}},
    {"cnn-powersgd",
     "cnn, PowerSGD rank 2 (low) / rank 1 (high)",
     &SIM_CNN,
     {"low compression", "high compression", "accordion"},
     3,
     {94.49, 94.25, 94.72}},
    {"cnn-topk",
     "cnn, TopK 99% (low) / 10% (high)",
     &SIM_CNN,
     {"low compression", "high compression", "accordion"},
     3,
     {94.09, 93.08, 93.78}},
    {"cnn-batch",
     "cnn, batch 128 (small) / 1024 (large), no compression",
     &SIM_CNN,
     {"small batch", "large batch", "accordion"},
     3,
     {94.49, 93.21, 94.34}},
};
#define N_ACC ((int)(sizeof ACC / sizeof *ACC))

static Setting ADP[] = {
    {"mlp-periodic",
     "mlp, 8 workers, periodic averaging",
     &SIM_MLP8,
     {"sync", "cpsgd period 4", "cpsgd period 16", "adpsgd", "postlocal", "adacomm"},
     6,
     {NAN, NAN, NAN, NAN, NAN, NAN}},
};
#define N_ADP ((int)(sizeof ADP / sizeof *ADP))

static const char *const BW[2][MAX_BWS] = {{"1Gbps", "10Gbps"}, {"10Gbps", "100Gbps"}};

static struct {
    const char *out;
    int quick, smoke, size, jobs, resume, no_plots, exp_on[2];
    CliIntList seeds;
    Fidelity fid[2][8]; /* per experiment and setting */
    Job job[MAX_JOBS];
    int n_jobs;
    char pool[32768];
    size_t pool_used;
    double wall;
} P;

static char *keep(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *keep(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = P.pool + P.pool_used;
    int n = vsnprintf(s, sizeof P.pool - P.pool_used, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n + 1 > sizeof P.pool - P.pool_used) abort(); /* fixed sizes: a bug */
    P.pool_used += (size_t)n + 1;
    return s;
}

/* --lr-decay-epochs of an E-epoch run: the Accordion repository's CIFAR runs decay at epochs 150
 * and 250 of 300, i.e. at 1/2 and 5/6 of the run. */
static void decay_epochs(int epochs, int *a, int *b)
{
    *a = (int)lround(epochs * 0.5);
    *b = (int)lround(epochs * 5.0 / 6.0);
    if (*b <= *a) *b = *a + 1;
}

static int exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* A new job with the flags every sweep of (exp, setting) shares. */
static Job *job_new(int exp, int setting, const char *folder, const char *const *policies,
                    const int *roles, int n_pol, int batch_x)
{
    if (P.n_jobs == MAX_JOBS) abort(); /* the experiment tables are fixed: a bug */
    Job *j = &P.job[P.n_jobs++];
    memset(j, 0, sizeof *j);
    j->exp = exp;
    j->setting = setting;
    snprintf(j->folder, sizeof j->folder, "%s", folder);
    const Setting *s = exp == 0 ? &ACC[setting] : &ADP[setting];
    const SimModel *sm = s->sim;
    const Fidelity *fd = &P.fid[exp][setting];
    int epochs = sm->epochs[P.size], d1, d2;
    decay_epochs(epochs, &d1, &d2);
    char pol[512] = "", seeds[256] = "";
    for (int k = 0; k < n_pol; k++) {
        snprintf(j->policy[k], sizeof j->policy[k], "%s", policies[k]);
        j->role[k] = roles[k];
        snprintf(pol + strlen(pol), sizeof pol - strlen(pol), "%s%s", k ? "," : "", policies[k]);
    }
    j->n_pol = n_pol;
    for (int k = 0; k < P.seeds.n; k++)
        snprintf(seeds + strlen(seeds), sizeof seeds - strlen(seeds), "%s%d", k ? "," : "",
                 P.seeds.v[k]);
    char **a = j->argv;
    int n = 0;
    a[n++] = keep("--model=%s", sm->model);
    int samples = sm->train_samples[P.size];
    if (samples < 60000) a[n++] = keep("--train-samples=%d", samples);
    if (sm->test_samples[P.size] < 10000)
        a[n++] = keep("--test-samples=%d", sm->test_samples[P.size]);
    a[n++] = keep("--workers=%d", sm->workers);
    a[n++] = keep("--batch=%d", batch_x * sm->batch);
    a[n++] = keep("--lr=%g", batch_x * sm->lr);
    a[n++] = keep("--epochs=%d", epochs);
    a[n++] = keep("--lr-schedule=step");
    a[n++] = keep("--lr-decay-epochs=%d,%d", d1, d2);
    a[n++] = keep("--target-accuracy=%g", sm->target[P.size]);
    /* evaluations a few times an epoch, at the same sample counts for every policy of the
     * sweep; a sweep whose batch changes (Accordion's batch mode) evaluates at epoch ends */
    int steps_per_epoch = samples / (sm->workers * sm->batch * batch_x);
    int batch_sweep = strstr(s->name, "-batch") != NULL;
    a[n++] = keep("--eval-every=%d", batch_sweep ? 0 : steps_per_epoch / sm->evals_per_epoch);
    a[n++] = keep("--gpu-flops=%.6g", fd->gpu_flops);
    a[n++] = keep("--latency=%.6gs", fd->latency);
    a[n++] = keep("--bandwidth=%s,%s", BW[exp][0], BW[exp][1]);
    a[n++] = keep("--threads=1");
    a[n++] = keep("--policies=%s", pol);
    a[n++] = keep("--seeds=%s", seeds);
    a[n++] = keep("--jobs=%d", P.jobs);
    a[n++] = keep("--out=%s/sweeps/%s", P.out, folder);
    if (P.no_plots) a[n++] = keep("--no-plots");
    j->argc = n;
    return j;
}

static void job_arg(Job *j, const char *arg)
{
    if (j->argc == MAX_ARGV) abort();
    j->argv[j->argc++] = keep("%s", arg);
}

static void build_jobs(void)
{
    P.n_jobs = 0;
    if (P.exp_on[0])
        for (int s = 0; s < N_ACC; s++) {
            const char *name = ACC[s].name;
            if (strstr(name, "-powersgd")) {
                const char *pol[] = {"static:level=2", "static:level=1", "accordion"};
                const int role[] = {0, 1, 2};
                job_arg(job_new(0, s, name, pol, role, 3, 1), "--compressor=powersgd");
            } else if (strstr(name, "-topk")) {
                const char *pol[] = {"static:level=0.99", "static:level=0.1", "accordion"};
                const int role[] = {0, 1, 2};
                job_arg(job_new(0, s, name, pol, role, 3, 1), "--compressor=topk");
            } else {
                /* small batch and Accordion's batch mode share a sweep; the large batch (8x,
                 * the lr scaled linearly, as the driver scales it for Accordion) is its own */
                const char *pol[] = {"sync", "accordion:mode=batch"};
                const int role[] = {0, 2};
                job_arg(job_new(0, s, name, pol, role, 2, 1), "--compressor=none");
                char folder[64];
                snprintf(folder, sizeof folder, "%s-large", name);
                const char *pol_l[] = {"sync"};
                const int role_l[] = {1};
                job_arg(job_new(0, s, folder, pol_l, role_l, 1, 8), "--compressor=none");
            }
        }
    if (P.exp_on[1])
        for (int s = 0; s < N_ADP; s++) {
            const char *pol[] = {"sync",   "cpsgd:period=4", "cpsgd:period=16",
                                 "adpsgd", "postlocal",      "adacomm"};
            const int role[] = {0, 1, 2, 3, 4, 5};
            job_arg(job_new(1, s, ADP[s].name, pol, role, 6, 1), "--compressor=none");
        }
}

/* The command line of a job, as a user would type it. */
static void job_command(const Job *j, char *buf, size_t n)
{
    size_t k = (size_t)snprintf(buf, n, "bellows sweep");
    for (int i = 0; i < j->argc && k < n; i++)
        k += (size_t)snprintf(buf + k, n - k, " %s", j->argv[i]);
}

/* Runs one sweep in a child process (its state is global) and waits. Returns its status. */
static int run_job(Job *j, int index)
{
    char sweep_json[4096];
    snprintf(sweep_json, sizeof sweep_json, "%s/sweeps/%s/sweep.json", P.out, j->folder);
    int resume = P.resume && exists(sweep_json);
    char *argv[MAX_ARGV + 2];
    int argc = 0;
    for (int i = 0; i < j->argc; i++) argv[argc++] = j->argv[i];
    if (resume) argv[argc++] = keep("--resume");
    argv[argc] = NULL;
    static char cmd[8192];
    job_command(j, cmd, sizeof cmd);
    printf("\n## [%d/%d] %s %s: %s%s\n", index + 1, P.n_jobs, EXP_NAME[j->exp], j->folder, cmd,
           resume ? " --resume" : "");
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) return BW_ERUNTIME;
    if (pid == 0) {
        BwError err = {{0}};
        int rc = cmd_sweep(argc, argv, &err);
        if (rc) fprintf(stderr, "bellows: %s\n", err.msg);
        fflush(stdout);
        fflush(stderr);
        _exit(rc);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) return BW_ERUNTIME;
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    return BW_ERUNTIME;
}

/* ---- the report ---- */

/* One (experiment, setting, role, bandwidth): a value per seed (NaN: missing or not reached). */
typedef struct {
    int n, diverged;
    double final[MAX_SEEDS], tta[MAX_SEEDS], bytes[MAX_SEEDS], time[MAX_SEEDS];
    double compute[MAX_SEEDS], comm[MAX_SEEDS], wait[MAX_SEEDS], steps[MAX_SEEDS];
    double tta_step[MAX_SEEDS], tta_bytes[MAX_SEEDS];
    char policy[64];
    char first_run[512]; /* the first seed's run folder, from DIR */
} Cell;

static Cell CELLS[2][8][MAX_ROLES][MAX_BWS];

static const Setting *setting_of(int exp, int s)
{
    return exp == 0 ? &ACC[s] : &ADP[s];
}

static int n_settings(int exp)
{
    return exp == 0 ? N_ACC : N_ADP;
}

/* From a run's evals.csv: the step and bytes of the first evaluation at or above target. */
static void reached_at(const char *run_dir, double target, double *step, double *bytes)
{
    *step = *bytes = NAN;
    char path[4200], line[4096];
    snprintf(path, sizeof path, "%s/evals.csv", run_dir);
    FILE *f = fopen(path, "r");
    if (!f) return;
    char *fld[16];
    int c_acc = -1, c_step = -1, c_bytes = -1, first = 1;
    while (fgets(line, sizeof line, f)) {
        int n = csv_split(line, fld, 16);
        if (first) {
            c_acc = csv_column(fld, n, "test_accuracy");
            c_step = csv_column(fld, n, "step");
            c_bytes = csv_column(fld, n, "bytes_per_worker");
            first = 0;
            if (c_acc < 0 || c_step < 0 || c_bytes < 0) break;
            continue;
        }
        if (n > c_acc && n > c_step && n > c_bytes && csv_num(fld[c_acc]) >= target) {
            *step = csv_num(fld[c_step]);
            *bytes = csv_num(fld[c_bytes]);
            break;
        }
    }
    fclose(f);
}

static int seed_index(int seed)
{
    for (int k = 0; k < P.seeds.n; k++)
        if (P.seeds.v[k] == seed) return k;
    return -1;
}

/* Reads a job's sweep.csv into the cells. Returns the number of runs read. */
static int read_job(const Job *j)
{
    char path[4096], line[8192];
    snprintf(path, sizeof path, "%s/sweeps/%s/sweep.csv", P.out, j->folder);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char *h[32], *x[32], head[8192];
    if (!fgets(head, sizeof head, f)) {
        fclose(f);
        return 0;
    }
    int nh = csv_split(head, h, 32);
    int c_bw = csv_column(h, nh, "bandwidth"), c_seed = csv_column(h, nh, "seed"),
        c_pol = csv_column(h, nh, "policy"), c_dir = csv_column(h, nh, "folder"),
        c_status = csv_column(h, nh, "status"), c_final = csv_column(h, nh, "final_test_accuracy"),
        c_tta = csv_column(h, nh, "time_to_accuracy_s"),
        c_bytes = csv_column(h, nh, "bytes_per_worker"), c_time = csv_column(h, nh, "sim_time_s"),
        c_comp = csv_column(h, nh, "compute_s"), c_comm = csv_column(h, nh, "communication_s"),
        c_wait = csv_column(h, nh, "wait_s"), c_steps = csv_column(h, nh, "steps");
    const Setting *s = setting_of(j->exp, j->setting);
    double target = s->sim->target[P.size];
    int read = 0;
    while (fgets(line, sizeof line, f)) {
        int n = csv_split(line, x, 32);
        if (n < nh || c_bw < 0 || c_steps < 0) continue;
        int b = -1, k = -1, si = seed_index(atoi(x[c_seed]));
        for (int i = 0; i < MAX_BWS; i++)
            if (strcmp(x[c_bw], BW[j->exp][i]) == 0) b = i;
        for (int i = 0; i < j->n_pol; i++)
            if (strcmp(x[c_pol], j->policy[i]) == 0) k = i;
        if (b < 0 || k < 0 || si < 0) continue;
        Cell *c = &CELLS[j->exp][j->setting][j->role[k]][b];
        snprintf(c->policy, sizeof c->policy, "%s", j->policy[k]);
        c->diverged += strcmp(x[c_status], "diverged") == 0;
        c->final[si] = csv_num(x[c_final]);
        c->tta[si] = csv_num(x[c_tta]);
        c->bytes[si] = csv_num(x[c_bytes]);
        c->time[si] = csv_num(x[c_time]);
        c->compute[si] = csv_num(x[c_comp]);
        c->comm[si] = csv_num(x[c_comm]);
        c->wait[si] = csv_num(x[c_wait]);
        c->steps[si] = csv_num(x[c_steps]);
        char run_dir[4096];
        if (snprintf(run_dir, sizeof run_dir, "%s/sweeps/%s/%s", P.out, j->folder, x[c_dir]) >=
            (int)sizeof run_dir)
            continue;
        reached_at(run_dir, target, &c->tta_step[si], &c->tta_bytes[si]);
        if (si == 0)
            snprintf(c->first_run, sizeof c->first_run, "sweeps/%s/%s", j->folder, x[c_dir]);
        c->n++;
        read++;
    }
    fclose(f);
    return read;
}

/* Mean of the finite values (NaN if none); *k receives their count. */
static double mean_of(const double *v, int *k)
{
    double s = 0;
    int n = 0;
    for (int i = 0; i < P.seeds.n; i++)
        if (isfinite(v[i])) s += v[i], n++;
    if (k) *k = n;
    return n ? s / n : NAN;
}

static double sd_of(const double *v)
{
    double x[MAX_SEEDS];
    int n = 0;
    for (int i = 0; i < P.seeds.n; i++)
        if (isfinite(v[i])) x[n++] = v[i];
    return n > 1 ? gsl_stats_sd(x, 1, (size_t)n) : NAN;
}

static void init_cells(void)
{
    for (int e = 0; e < 2; e++)
        for (int s = 0; s < 8; s++)
            for (int r = 0; r < MAX_ROLES; r++)
                for (int b = 0; b < MAX_BWS; b++) {
                    Cell *c = &CELLS[e][s][r][b];
                    memset(c, 0, sizeof *c);
                    for (int i = 0; i < MAX_SEEDS; i++)
                        c->final[i] = c->tta[i] = c->bytes[i] = c->time[i] = c->compute[i] =
                            c->comm[i] = c->wait[i] = c->steps[i] = c->tta_step[i] =
                                c->tta_bytes[i] = NAN;
                }
}

/* "0.8812 ± 0.0021" (accuracy as a fraction), "-" when missing. */
static const char *fmt_acc(const Cell *c, char *buf, size_t n)
{
    int k;
    double m = mean_of(c->final, &k), sd = sd_of(c->final);
    if (!k)
        snprintf(buf, n, "-");
    else if (isfinite(sd))
        snprintf(buf, n, "%.4f ± %.4f", m, sd);
    else
        snprintf(buf, n, "%.4f", m);
    return buf;
}

/* Mean time to target over the seeds that reached it, with "(k/n)" when some did not. */
static const char *fmt_tta(const Cell *c, char *buf, size_t n)
{
    int k;
    double m = mean_of(c->tta, &k);
    if (!c->n)
        snprintf(buf, n, "-");
    else if (!k)
        snprintf(buf, n, "not reached");
    else if (k < c->n)
        snprintf(buf, n, "%.4g (%d/%d seeds)", m, k, c->n);
    else
        snprintf(buf, n, "%.4g", m);
    return buf;
}

static const char *fmt_ratio(double x, char *buf, size_t n)
{
    if (isfinite(x))
        snprintf(buf, n, "%.2fx", x);
    else
        snprintf(buf, n, "-");
    return buf;
}

/* ratio of means a/b over the seeds */
static double ratio(const double *a, const double *b)
{
    return mean_of(a, NULL) / mean_of(b, NULL);
}

/* One row of DIR/<paper>.csv: a setting's role at a bandwidth, summarised over the seeds. */
static void csv_row(FILE *csv, int exp, int s, int r, int bw)
{
    const Setting *st = setting_of(exp, s);
    const Cell *c = &CELLS[exp][s][r][bw];
    int reached;
    double tta = mean_of(c->tta, &reached);
    fprintf(csv, "%s,%s,%s,%s,%d,%d,%.9g,%.9g,%.17g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g\n", st->name,
            st->roles[r], c->policy, BW[exp][bw], c->n, reached, mean_of(c->final, NULL),
            sd_of(c->final), mean_of(c->bytes, NULL), tta, sd_of(c->tta),
            mean_of(c->tta_step, NULL), mean_of(c->tta_bytes, NULL), mean_of(c->compute, NULL),
            mean_of(c->comm, NULL));
}

enum {
    FID_PARAMS,
    FID_FLOPS,
    FID_SHAPE,
    FID_GPU,
    FID_COMPUTE,
    FID_COMM,
    FID_RATIO,
    FID_LATENCY,
    FID_ALPHA,
    FID_ROWS
};

/* One cell of the fidelity table for row `row`: the paper's side (s < 0) or setting s's
 * simulated model. */
static void fidelity_cell(FILE *f, const PaperSetting *ps, const Setting *st, const Fidelity *fd,
                          int row, int paper)
{
    const SimModel *sm = st->sim;
    switch (row) {
    case FID_PARAMS:
        paper ? fprintf(f, "%.4g M", ps->params / 1e6) : fprintf(f, "%.0f", fd->s_params);
        break;
    case FID_FLOPS:
        paper ? fprintf(f, "%.3g G", ps->flops_sample / 1e9)
              : fprintf(f, "%.3g M", fd->s_flops / 1e6);
        break;
    case FID_SHAPE:
        fprintf(f, "%d x %d", paper ? ps->workers : sm->workers, paper ? ps->batch : sm->batch);
        break;
    case FID_GPU:
        paper ? fprintf(f, "%s", ps->gpu) : fprintf(f, "--gpu-flops %.4g", fd->gpu_flops);
        break;
    case FID_COMPUTE:
        fprintf(f, paper ? "%.1f ms" : "%.4g ms", 1e3 * (paper ? fd->p_compute : fd->s_compute));
        break;
    case FID_COMM:
        fprintf(f, paper ? "%.1f ms" : "%.4g ms", 1e3 * (paper ? fd->p_comm : fd->s_comm));
        break;
    case FID_RATIO: /* the same on both sides, by construction */
        fprintf(f, "**%.2f**", fd->p_compute / fd->p_comm);
        break;
    case FID_LATENCY:
        paper ? fprintf(f, "%.0f us, %s", ps->latency * 1e6, ps->latency_source)
              : fprintf(f, "%.3g us", 1e6 * fd->latency);
        break;
    case FID_ALPHA:
        fprintf(f, "%.4f", fd->p_alpha / fd->p_comm);
        break;
    }
}

static void fidelity_table(FILE *f, const PaperSetting *ps, const Setting *settings, int n, int exp)
{
    static const char *const ROW[FID_ROWS] = {"parameters",
                                              "flops per sample (forward + backward)",
                                              "workers x batch per worker",
                                              "GPU",
                                              "compute per step",
                                              "dense ring allreduce at 10 Gbps, bandwidth term",
                                              "**compute / communication at 10 Gbps**",
                                              "link latency",
                                              "latency term / bandwidth term (dense, 10 Gbps)"};
    fprintf(f, "| | paper: %s | bellows (per simulated model) |\n|---|---|---|\n", ps->what);
    for (int row = 0; row < FID_ROWS; row++) {
        fprintf(f, "| %s | ", ROW[row]);
        fidelity_cell(f, ps, &settings[0], &P.fid[exp][0], row, 1);
        fputs(" | ", f);
        if (row == FID_RATIO || row == FID_ALPHA) {
            fidelity_cell(f, ps, &settings[0], &P.fid[exp][0], row, 0);
            fputs(" (same by construction) |\n", f);
            continue;
        }
        for (int s = 0; s < n; s++) /* each simulated model once */
            if (s == 0 || settings[s].sim != settings[s - 1].sim) {
                fprintf(f, "%s%s ", settings[s].sim->model, row == FID_GPU ? ":" : "");
                fidelity_cell(f, ps, &settings[s], &P.fid[exp][s], row, 0);
                fputs("; ", f);
            }
        fputs("|\n", f);
    }
    fprintf(f,
            "\nSources: %s. The simulated GPU rate and latency are derived, not tuned: "
            "compute per step = (paper's compute / paper's bandwidth term) x the simulated "
            "model's bandwidth term, and the latency keeps the latency-to-bandwidth-term "
            "proportion. Compressed steps do not keep the paper's proportions: a small "
            "model's layers compress by smaller factors than ResNet-18's.\n\n",
            ps->source);
}

/* Accordion's regime in each epoch of a run, from the policy_state column of its steps.csv
 * (the second step of each epoch, after the lr-decay rule and the last check took effect):
 * "CC CC NN ..." (C critical, N normal; one letter per matrix layer, or one for the batch). */
static void regimes(const char *run_dir, char *buf, size_t n)
{
    char path[4200], line[4096];
    snprintf(path, sizeof path, "%s/%s/steps.csv", P.out, run_dir);
    buf[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f) return;
    char *fld[32];
    int c_epoch = -1, c_state = -1, first = 1, epoch = -1, seen = 0;
    size_t k = 0;
    while (fgets(line, sizeof line, f)) {
        int m = csv_split(line, fld, 32);
        if (first) {
            c_epoch = csv_column(fld, m, "epoch");
            c_state = csv_column(fld, m, "policy_state");
            first = 0;
            if (c_epoch < 0 || c_state < 0) break;
            continue;
        }
        if (m <= c_state) continue;
        int e = atoi(fld[c_epoch]);
        if (e != epoch) epoch = e, seen = 0;
        if (++seen != 2) continue;
        const char *st = fld[c_state];
        int batch = strstr(st, "batch=") != NULL;
        if (k + 2 < n && k) buf[k++] = ' ';
        for (const char *q = st; *q && k + 1 < n; q++) {
            if (*q == 'C' || *q == 'N') buf[k++] = *q;
            if (batch) break;
        }
        buf[k] = '\0';
    }
    fclose(f);
}

static void accordion_section(FILE *f, FILE *csv)
{
    char a[64], b[64], c[64], d[64], e[64];
    fprintf(f, "## Accordion (Agarwal et al., MLSys 2021)\n\n"
               "**Claims** (abstract): accuracy similar to low compression, up to 5.5x less "
               "communication and up to 4.1x end-to-end speedup over static compression. "
               "**The authors' logs** (ResNet-18, CIFAR-10, 4 workers; high / low compression / "
               "Accordion final accuracy): PowerSGD rank 1 / 2: 94.25 / 94.49 / 94.72; TopK "
               "10%% / 99%%: 93.08 / 94.09 / 93.78; batch 4096 / 512: 93.21 / 94.49 / 94.34. "
               "The per-setting communication and speedup ratios of the paper's tables could "
               "not be read (only the abstract and the code were available), so the paper "
               "column gives the headline bounds.\n\n");
    fprintf(f, "### Setting and fidelity\n\n");
    fidelity_table(f, &ACCORDION_PAPER, ACC, N_ACC, 0);
    fprintf(f, "### Main table: Accordion against low compression (mean over seeds)\n\n");
    fprintf(f,
            "| setting | final accuracy: low / high / Accordion | paper (ResNet-18): low / "
            "high / Accordion | less communication (low / Accordion bytes) | speedup to "
            "target at %s | at %s | paper (up to) |\n|---|---|---|---|---|---|---|\n",
            BW[0][0], BW[0][1]);
    for (int s = 0; s < N_ACC; s++) {
        Cell(*x)[MAX_BWS] = CELLS[0][s];
        if (!x[0][0].n && !x[2][0].n) continue;
        fprintf(f,
                "| %s | %.4f / %.4f / %.4f | %.2f / %.2f / %.2f | %s | %s | %s | 5.5x "
                "less communication, 4.1x speedup |\n",
                ACC[s].label, mean_of(x[0][0].final, NULL), mean_of(x[1][0].final, NULL),
                mean_of(x[2][0].final, NULL), ACC[s].paper_acc[0], ACC[s].paper_acc[1],
                ACC[s].paper_acc[2], fmt_ratio(ratio(x[0][0].bytes, x[2][0].bytes), a, sizeof a),
                fmt_ratio(ratio(x[0][0].tta, x[2][0].tta), b, sizeof b),
                fmt_ratio(ratio(x[0][1].tta, x[2][1].tta), c, sizeof c));
    }
    fprintf(f, "\nSpeedup = low compression's mean time to the target / Accordion's (> 1: "
               "Accordion is faster); only seeds that reached the target count.\n\n");
    for (int s = 0; s < N_ACC; s++) {
        Cell(*x)[MAX_BWS] = CELLS[0][s];
        if (!x[0][0].n && !x[1][0].n && !x[2][0].n) continue;
        const SimModel *sm = ACC[s].sim;
        fprintf(f, "### %s\n\nTarget test accuracy %.2f.\n\n", ACC[s].label, sm->target[P.size]);
        fprintf(f,
                "| role | policy | final accuracy (mean ± sd) | MB per worker | steps to "
                "target | time to target at %s [s] | at %s [s] | communication share at "
                "%s |\n|---|---|---|---|---|---|---|---|\n",
                BW[0][0], BW[0][1], BW[0][0]);
        for (int r = 0; r < ACC[s].n_roles; r++) {
            const Cell *c0 = &x[r][0], *c1 = &x[r][1];
            if (!c0->n && !c1->n) continue;
            int k;
            double steps = mean_of(c0->tta_step, &k);
            fprintf(f, "| %s | `%s` | %s | %.3f | %s | %s | %s | %.0f%% |\n", ACC[s].roles[r],
                    c0->policy, fmt_acc(c0, a, sizeof a), mean_of(c0->bytes, NULL) / 1e6,
                    k ? (snprintf(e, sizeof e, "%.0f", steps), e) : "-", fmt_tta(c0, b, sizeof b),
                    fmt_tta(c1, c, sizeof c),
                    100 * mean_of(c0->comm, NULL) / mean_of(c0->time, NULL));
            for (int bw = 0; bw < MAX_BWS; bw++) csv_row(csv, 0, s, r, bw);
        }
        /* the speedup split into fewer steps and cheaper steps (measured, per bandwidth) */
        const Cell *lo = &x[0][0], *ac = &x[2][0];
        double steps_ratio = ratio(lo->tta_step, ac->tta_step);
        fprintf(f,
                "\nWhere Accordion's time to target comes from: low compression needs %s the "
                "steps Accordion needs to reach the target",
                fmt_ratio(steps_ratio, a, sizeof a));
        for (int bw = 0; bw < MAX_BWS; bw++) {
            double spd = ratio(x[0][bw].tta, x[2][bw].tta);
            fprintf(f, "; at %s a step to the target costs low compression %s Accordion's",
                    BW[0][bw], fmt_ratio(spd / steps_ratio, d, sizeof d));
        }
        fprintf(f,
                " (speedup = steps ratio x per-step cost ratio). Accordion's accuracy minus "
                "low compression's: %+.2f points (paper %+.2f); minus high compression's: "
                "%+.2f (paper %+.2f).\n\n",
                100 * (mean_of(ac->final, NULL) - mean_of(lo->final, NULL)),
                ACC[s].paper_acc[2] - ACC[s].paper_acc[0],
                100 * (mean_of(ac->final, NULL) - mean_of(x[1][0].final, NULL)),
                ACC[s].paper_acc[2] - ACC[s].paper_acc[1]);
        char reg[512];
        regimes(ac->first_run, reg, sizeof reg);
        if (reg[0])
            fprintf(f,
                    "Accordion's regime in each epoch (first seed; C critical, N normal; one "
                    "letter per matrix layer%s): %s.\n\n",
                    strstr(ACC[s].name, "-batch") ? ", here one for the batch" : "", reg);
        for (int r = 0; r < ACC[s].n_roles; r++)
            for (int bw = 0; bw < MAX_BWS; bw++)
                if (x[r][bw].diverged)
                    fprintf(f, "%s at %s: %d run(s) diverged.\n\n", ACC[s].roles[r], BW[0][bw],
                            x[r][bw].diverged);
        if (!P.no_plots && x[0][0].first_run[0])
            fprintf(f,
                    "Plots (first seed, %s): [accuracy against time](plots/%s/"
                    "accuracy_vs_time.png), [bytes](plots/%s/bytes_vs_time.png).\n\n",
                    BW[0][0], ACC[s].name, ACC[s].name);
    }
}

static void adpsgd_section(FILE *f, FILE *csv)
{
    char a[64], b[64], c[64], d[64];
    fprintf(f, "## ADPSGD (Jiang and Agrawal, arXiv 2007.06134)\n\n"
               "**Claims** (abstract): 1.14x to 1.27x speedup over full-communication SGD at 100 "
               "Gbps, 1.46x to 1.95x at 10 Gbps; smaller training loss and higher accuracy than "
               "constant-period averaging (CPSGD) with less communication. ADPSGD here is "
               "**bellows' reconstruction** (the paper's period rule and constants were not "
               "found; `bellows policies` gives its rule).\n\n");
    fprintf(f, "### Setting and fidelity\n\n");
    fidelity_table(f, &ADPSGD_PAPER, ADP, N_ADP, 1);
    for (int s = 0; s < N_ADP; s++) {
        Cell(*x)[MAX_BWS] = CELLS[1][s];
        const SimModel *sm = ADP[s].sim;
        fprintf(f, "### %s\n\nTarget test accuracy %.2f.\n\n", ADP[s].label, sm->target[P.size]);
        for (int bw = 0; bw < MAX_BWS; bw++) {
            fprintf(f,
                    "**%s**\n\n| policy | time to target [s] | speedup over sync | paper "
                    "(ADPSGD over sync) | final accuracy (mean ± sd) | MB per worker | MB "
                    "to target | communication share |\n|---|---|---|---|---|---|---|---|\n",
                    BW[1][bw]);
            for (int r = 0; r < ADP[s].n_roles; r++) {
                const Cell *cc = &x[r][bw];
                if (!cc->n) continue;
                double to_target = mean_of(cc->tta_bytes, NULL) / 1e6;
                if (isfinite(to_target))
                    snprintf(d, sizeof d, "%.3f", to_target);
                else
                    snprintf(d, sizeof d, "-");
                fprintf(f, "| `%s` | %s | %s | %s | %s | %.3f | %s | %.0f%% |\n", cc->policy,
                        fmt_tta(cc, a, sizeof a),
                        fmt_ratio(ratio(x[0][bw].tta, cc->tta), b, sizeof b),
                        r == 3 ? (bw == 0 ? "1.46x - 1.95x" : "1.14x - 1.27x") : "",
                        fmt_acc(cc, c, sizeof c), mean_of(cc->bytes, NULL) / 1e6, d,
                        100 * mean_of(cc->comm, NULL) / mean_of(cc->time, NULL));
                csv_row(csv, 1, s, r, bw);
                if (cc->diverged) fprintf(f, "\n%d run(s) diverged.\n", cc->diverged);
            }
            const Cell *sy = &x[0][bw];
            fprintf(f,
                    "\nPer step, averaging less often can gain at most sync's time / its "
                    "compute time = %s; a larger time-to-target speedup means the target was "
                    "reached in fewer steps.\n\n",
                    fmt_ratio(mean_of(sy->time, NULL) / mean_of(sy->compute, NULL), d, sizeof d));
        }
        /* every averaging sends the same bytes, so sync's bytes to the target over a policy's
         * is the policy's mean period until it reached the target */
        fprintf(f, "Mean averaging period until the target (sync's bytes to the target / the "
                   "policy's):");
        for (int r = 1; r < ADP[s].n_roles; r++)
            fprintf(f, " `%s` %s%s", x[r][0].policy,
                    fmt_ratio(ratio(x[0][0].tta_bytes, x[r][0].tta_bytes), a, sizeof a),
                    r + 1 < ADP[s].n_roles ? "," : "");
        int d1, d2;
        decay_epochs(sm->epochs[P.size], &d1, &d2);
        fprintf(f,
                ". `sync` reached the target after %.0f steps (mean); the first lr decay is at "
                "epoch %d, step %d.\n\n",
                mean_of(x[0][0].tta_step, NULL), d1,
                d1 * sm->train_samples[P.size] / (sm->workers * sm->batch));
        const Cell *ad = &x[3][0];
        for (int r = 1; r <= 2; r++) {
            const Cell *cp = &x[r][0];
            fprintf(f,
                    "ADPSGD against `%s`: bytes to the target %s of CPSGD's, final accuracy "
                    "%+.2f points.\n\n",
                    cp->policy, fmt_ratio(ratio(ad->tta_bytes, cp->tta_bytes), a, sizeof a),
                    100 * (mean_of(ad->final, NULL) - mean_of(cp->final, NULL)));
        }
        if (!P.no_plots && x[0][0].first_run[0])
            fprintf(f,
                    "Plots (first seed, %s): [accuracy against time](plots/%s/"
                    "accuracy_vs_time.png), [bytes](plots/%s/bytes_vs_time.png).\n\n",
                    BW[1][0], ADP[s].name, ADP[s].name);
    }
}

/* A label without spaces (gnuplot's word lists): the role for Accordion, the policy otherwise. */
static void role_label(int exp, int s, int r, char *buf, size_t n)
{
    snprintf(buf, n, "%s", exp == 0 ? ACC[s].roles[r] : CELLS[exp][s][r][0].policy);
    for (char *p = buf; *p; p++)
        if (*p == ' ') *p = '-';
}

/* DIR/plots/SETTING/: the first seed's runs at the lower bandwidth side by side, as a compare
 * folder (compare.csv and its plots; `bellows plot` redraws them). */
static int setting_plots(int exp, int s, BwError *err)
{
    const Setting *st = setting_of(exp, s);
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/plots/%s", P.out, st->name);
    static char folders[MAX_ROLES][600], labels[MAX_ROLES][64];
    const char *fp[MAX_ROLES], *lp[MAX_ROLES];
    int n = 0;
    for (int r = 0; r < st->n_roles; r++) {
        const Cell *c = &CELLS[exp][s][r][0];
        if (!c->first_run[0] || !isfinite(c->time[0])) continue;
        snprintf(folders[n], sizeof folders[n], "../../%s", c->first_run);
        role_label(exp, s, r, labels[n], sizeof labels[n]);
        fp[n] = folders[n];
        lp[n] = labels[n];
        n++;
    }
    if (!n) return BW_OK;
    int rc = outdir_create(dir, err);
    if (rc) return rc;
    OutFile of;
    if ((rc = outfile_open(&of, dir, "compare.csv", err))) return rc;
    fputs("policy,folder,status,final_test_accuracy,best_test_accuracy,time_to_accuracy_s,"
          "speedup,bytes_per_worker,bytes_ratio,sim_time_s,compute_s,communication_s,wait_s,"
          "steps\n",
          of.f);
    for (int r = 0, i = 0; r < st->n_roles; r++) {
        const Cell *c = &CELLS[exp][s][r][0];
        if (!c->first_run[0] || !isfinite(c->time[0])) continue;
        const Cell *b = &CELLS[exp][s][0][0];
        fprintf(of.f, "\"%s\",%s,completed,%.9g,,", lp[i], fp[i], c->final[0]);
        if (isfinite(c->tta[0])) fprintf(of.f, "%.9g", c->tta[0]);
        fputc(',', of.f);
        if (isfinite(b->tta[0] / c->tta[0])) fprintf(of.f, "%.6g", b->tta[0] / c->tta[0]);
        fprintf(of.f, ",%.17g,%.6g,%.9g,%.9g,%.9g,%.9g,%.0f\n", c->bytes[0],
                c->bytes[0] / b->bytes[0], c->time[0], c->compute[0], c->comm[0], c->wait[0],
                c->steps[0]);
        i++;
    }
    if ((rc = outfile_commit(&of, err))) return rc;
    return plots_compare(dir, fp, lp, n, st->sim->target[P.size], err);
}

static int write_report(BwError *err)
{
    init_cells();
    int runs = 0;
    for (int i = 0; i < P.n_jobs; i++) runs += read_job(&P.job[i]);
    int rc;
    OutFile rep, csv[2]; /* zeroed: outfile_abort is then safe on any of them */
    memset(&rep, 0, sizeof rep);
    memset(csv, 0, sizeof csv);
    if ((rc = outfile_open(&rep, P.out, "report.md", err))) return rc;
    for (int e = 0; e < 2; e++) {
        if (!P.exp_on[e]) continue;
        char name[32];
        snprintf(name, sizeof name, "%s.csv", EXP_NAME[e]);
        if ((rc = outfile_open(&csv[e], P.out, name, err))) goto abandon;
        fputs("setting,role,policy,bandwidth,seeds,seeds_reaching_target,final_accuracy_mean,"
              "final_accuracy_sd,bytes_per_worker_mean,time_to_accuracy_mean_s,"
              "time_to_accuracy_sd_s,steps_to_target_mean,bytes_to_target_mean,compute_mean_s,"
              "communication_mean_s\n",
              csv[e].f);
    }
    FILE *f = rep.f;
    char seeds[256] = "";
    for (int k = 0; k < P.seeds.n; k++)
        snprintf(seeds + strlen(seeds), sizeof seeds - strlen(seeds), "%s%d", k ? "," : "",
                 P.seeds.v[k]);
    fprintf(f, "# bellows reproduce: %s%s\n\n",
            P.exp_on[0] && P.exp_on[1] ? "Accordion and ADPSGD"
            : P.exp_on[0]              ? "Accordion"
                                       : "ADPSGD",
            SIZE_NAME[P.size]);
    fprintf(f,
            "The papers' headline experiments, simulated by bellows on Fashion-MNIST: %d runs "
            "(seeds %s), %s version. Every figure below was measured by these runs; the "
            "sweeps' own tables and every run's files are under `sweeps/`. Accuracy and its "
            "standard deviation are over the seeds; times are simulated seconds.\n\n",
            runs, seeds, SIZE_LONG[P.size]);
    if (P.exp_on[0]) accordion_section(f, csv[0].f);
    if (P.exp_on[1]) adpsgd_section(f, csv[1].f);
    fprintf(f, "## The sweeps\n\nEach is a plain `bellows sweep`; run one again to check a "
               "figure.\n\n");
    for (int i = 0; i < P.n_jobs; i++) {
        static char cmd[8192];
        job_command(&P.job[i], cmd, sizeof cmd);
        fprintf(f, "- `%s`\n", cmd);
    }
    fputc('\n', f);
    for (int e = 0; e < 2; e++)
        if (P.exp_on[e] && (rc = outfile_commit(&csv[e], err))) goto abandon;
    if ((rc = outfile_commit(&rep, err))) return rc;
    if (!P.no_plots && plots_available())
        for (int e = 0; e < 2; e++)
            for (int s = 0; P.exp_on[e] && s < n_settings(e); s++)
                if ((rc = setting_plots(e, s, err))) return rc;
    return BW_OK;
abandon: /* nothing half-written: the files not yet committed are removed */
    outfile_abort(&rep);
    for (int e = 0; e < 2; e++) outfile_abort(&csv[e]);
    return rc;
}

static int has_sweeps(const char *dir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/sweeps", dir);
    return exists(path);
}

int cmd_reproduce(int argc, char **argv, BwError *err)
{
    const char *out = NULL;
    int report_only = 0;
    static const char *const ABOUT =
        "Runs the headline experiments of a source paper as a fixed set of sweeps on "
        "Fashion-MNIST and\nwrites DIR/report.md (the simulator's figures beside the paper's "
        "claims, the scenario and the\nsweeps' command lines), DIR/<paper>.csv and DIR/plots/. "
        "WHAT: accordion (Agarwal et al., MLSys 2021:\nstatic low/high compression and Accordion "
        "with PowerSGD, TopK and batch sizes, on mlp and cnn,\nat 1 and 10 Gbps), adpsgd (Jiang & "
        "Agrawal 2020: sync, CPSGD, ADPSGD, post-local SGD and\nAdaComm at 10 and 100 Gbps), or "
        "all. The simulated GPU rate and latency keep each paper's\ncompute-to-communication "
        "ratio (see the report). The full version of both took 53 minutes with -j 2\non 2 shared "
        "cores (3,139 CPU seconds); --quick took 4.";
    CliOpt opts[] = {
        {"quick", CLI_FLAG, &P.quick, NULL, NULL,
         "the short version: mlp only, 8 epochs on 30,000 samples, seeds 1,2 (unless --seeds)", 0,
         0, NULL, 0, 0},
        {"smoke", CLI_FLAG, &P.smoke, NULL, NULL,
         "a check of the machinery, not of the papers: mlp, 2 epochs on 2,048 samples", 0, 0, NULL,
         0, 0},
        {"seeds", CLI_INT_LIST, &P.seeds, NULL, NULL,
         "seeds of every scenario (default 1,2,3; --quick: 1,2)", 0, 2147483647, NULL, 0, 0},
        {"jobs", CLI_INT, &P.jobs, "0", "runs", "runs at a time (0: one per core)", 0, 256, NULL,
         0, 0},
        {"out", CLI_STRING, &out, NULL, "DIR", "report folder (default: runs/reproduce-WHAT)", 0, 0,
         NULL, 0, 0},
        {"resume", CLI_FLAG, &P.resume, NULL, NULL,
         "finish an interrupted reproduction in --out (each sweep resumes)", 0, 0, NULL, 0, 0},
        {"report-only", CLI_FLAG, &report_only, NULL, NULL,
         "rebuild the report from the sweeps already in --out, running nothing", 0, 0, NULL, 0, 0},
        {"no-plots", CLI_FLAG, &P.no_plots, NULL, NULL, "no gnuplot plots", 0, 0, NULL, 0, 0},
    };
    const int n_opts = (int)(sizeof opts / sizeof *opts);
    const char *usage = "bellows reproduce accordion|adpsgd|all [flags]";
    /* -j N and -jN are --jobs */
    char *args[256], jobs_arg[64];
    int n = 0;
    const char *what = NULL;
    for (int i = 0; i < argc && n < 255; i++) {
        if (strcmp(argv[i], "-j") == 0 && i + 1 < argc) {
            snprintf(jobs_arg, sizeof jobs_arg, "--jobs=%s", argv[++i]);
            args[n++] = jobs_arg;
        } else if (strncmp(argv[i], "-j", 2) == 0 && argv[i][2]) {
            snprintf(jobs_arg, sizeof jobs_arg, "--jobs=%s", argv[i] + 2);
            args[n++] = jobs_arg;
        } else if (!what && argv[i][0] != '-') {
            what = argv[i];
        } else {
            args[n++] = argv[i];
        }
    }
    int rc = cli_parse("bellows reproduce", opts, n_opts, NULL, n, args, NULL, err);
    if (rc == CLI_HELP) {
        cli_print_help(stdout, usage, ABOUT, opts, n_opts);
        return BW_OK;
    }
    if (rc) goto fail;
    if (!what) {
        rc = bw_fail(err, BW_EUSAGE, "reproduce: say what to reproduce: accordion, adpsgd or all");
        goto fail;
    }
    P.exp_on[0] = strcmp(what, "accordion") == 0 || strcmp(what, "all") == 0;
    P.exp_on[1] = strcmp(what, "adpsgd") == 0 || strcmp(what, "all") == 0;
    if (!P.exp_on[0] && !P.exp_on[1]) {
        rc = bw_fail(err, BW_EUSAGE, "reproduce: '%s': expected accordion, adpsgd or all", what);
        goto fail;
    }
    P.size = P.smoke ? 2 : P.quick ? 1 : 0;
    if (P.seeds.n == 0) {
        P.seeds.n = P.size ? 2 : 3;
        for (int k = 0; k < P.seeds.n; k++) P.seeds.v[k] = k + 1;
    }
    for (int i = 0; i < P.seeds.n; i++)
        for (int j = 0; j < i; j++)
            if (P.seeds.v[i] == P.seeds.v[j]) {
                rc = bw_fail(err, BW_EUSAGE, "--seeds: %d is listed twice", P.seeds.v[i]);
                goto fail;
            }
    if (P.jobs == 0) {
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        P.jobs = cores > 0 ? (int)cores : 1;
    }
    static char out_default[64];
    if (!out) {
        snprintf(out_default, sizeof out_default, "runs/reproduce-%s", what);
        out = out_default;
    }
    P.out = out;
    if (report_only && !has_sweeps(out)) {
        rc = bw_fail(err, BW_EUSAGE, "--report-only: %s holds no sweeps (no %s/sweeps)", out, out);
        goto fail;
    }
    if (!report_only && !P.resume && has_sweeps(out)) {
        rc = bw_fail(err, BW_EUSAGE,
                     "--out %s already holds a reproduction: finish it with --resume, rebuild its "
                     "report with --report-only, or choose another folder",
                     out);
        goto fail;
    }
    for (int e = 0; e < 2; e++)
        for (int s = 0; P.exp_on[e] && s < n_settings(e); s++)
            if ((rc = fidelity(e == 0 ? &ACCORDION_PAPER : &ADPSGD_PAPER, setting_of(e, s)->sim,
                               &P.fid[e][s], err)))
                goto fail;
    build_jobs();
    if (P.size) { /* drop the cnn's sweeps */
        int k = 0;
        for (int i = 0; i < P.n_jobs; i++)
            if (strcmp(setting_of(P.job[i].exp, P.job[i].setting)->sim->model, "cnn") != 0)
                P.job[k++] = P.job[i];
        P.n_jobs = k;
    }
    if ((rc = outdir_create(out, err))) goto fail;
    double t0 = wallclock_s();
    int failed = 0;
    if (!report_only) {
        printf("# bellows reproduce %s%s: %d sweeps, seeds", what, SIZE_FLAG[P.size], P.n_jobs);
        for (int k = 0; k < P.seeds.n; k++) printf("%s%d", k ? "," : " ", P.seeds.v[k]);
        printf(", %d runs at a time, into %s/\n", P.jobs, out);
        for (int i = 0; i < P.n_jobs; i++) {
            int jrc = run_job(&P.job[i], i);
            if (jrc) {
                fprintf(stderr, "bellows: reproduce: sweep %s failed (status %d); going on\n",
                        P.job[i].folder, jrc);
                failed++;
            }
        }
    }
    if ((rc = write_report(err))) goto fail;
    printf("\n# wrote %s/report.md (%.1f wall min)\n", out, (wallclock_s() - t0) / 60);
    if (failed)
        return bw_fail(err, BW_ERUNTIME, "reproduce: %d sweep(s) failed; the report holds the rest",
                       failed);
    return BW_OK;
fail:
    return rc;
}
