/* jobs.c: the job lists of a reproduction. Each job is one `bellows sweep` command line over a
 * paper's setting (its policies in their roles, both bandwidths, the seeds), with its folder
 * under DIR/sweeps/; the flags every sweep shares follow from the setting's simulated model,
 * the size (full, --quick, --smoke) and the paper's costs: the real model's workload profile on
 * the paper's GPU and links. A sweep trains at the first bandwidth and records each run's trace;
 * the pricing replays (price.c) share the flags in Job.price. */
#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "reproduce_internal.h"

char *jobs_keep(Repro *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = r->pool + r->pool_used;
    int n = vsnprintf(s, sizeof r->pool - r->pool_used, fmt, ap);
    va_end(ap);
    /* the job lists are fixed, so the pool's size is: running out is a bug */
    assert(n >= 0 && (size_t)n + 1 <= sizeof r->pool - r->pool_used);
    r->pool_used += (size_t)n + 1;
    return s;
}

void jobs_seed_list(const Repro *r, char *buf, size_t n)
{
    buf[0] = '\0';
    for (int k = 0; k < r->seeds.n; k++)
        snprintf(buf + strlen(buf), n - strlen(buf), "%s%d", k ? "," : "", r->seeds.v[k]);
}

/* The flags both the training sweep and the pricing replays give: the real model's costs (its
 * workload profile on the paper's GPU and links, the overlap of the paper's code), analytic
 * collectives (exact on this uncontended star, and what the fast replay prices) and the target. */
static int cost_flags(Repro *r, const Job *j, const SimModel *sm, char **a)
{
    const PaperSetting *ps = papers_paper(j->exp);
    int n = 0;
    a[n++] = jobs_keep(r, "--workers=%d", sm->workers);
    a[n++] = jobs_keep(r, "--target-accuracy=%g", sm->target[r->size]);
    a[n++] = jobs_keep(r, "--workload=%s", ps->workload);
    a[n++] = jobs_keep(r, "--gpu=%s", ps->gpu);
    a[n++] = jobs_keep(r, "--precision=fp32");
    a[n++] = jobs_keep(r, "--gpu-efficiency=%g", ps->efficiency);
    a[n++] = jobs_keep(r, "--costs=%s", r->costs);
    a[n++] = jobs_keep(r, "--latency=%gus", ps->latency * 1e6);
    /* what the papers' code did: Accordion's (experiment 0) reduces one tensor after another once
     * the backward is done (--overlap tensor); ADPSGD's is not public: no overlap */
    a[n++] = jobs_keep(r, "--overlap=%s", j->exp == 0 ? "tensor" : "none");
    a[n++] = jobs_keep(r, "--collectives=analytic");
    a[n++] = jobs_keep(r, "--threads=1");
    a[n++] = jobs_keep(r, "--compressor=%s", j->compressor);
    return n;
}

/* The training sweep's flags of a job of setting s: the simulated model and its schedule (the
 * Accordion authors' for experiment 0, scaled to the run's epochs: policies/accordion.c's
 * paper=1 checks them), the costs, the first bandwidth, the policies and seeds, the traces. */
static void job_flags(Repro *r, Job *j, const Setting *s, int batch_x, const char *pol)
{
    const SimModel *sm = s->sim;
    int epochs = sm->epochs[r->size], d1, d2;
    papers_decay_epochs(epochs, &d1, &d2);
    char seeds[256];
    jobs_seed_list(r, seeds, sizeof seeds);
    char **a = j->argv;
    int n = 0;
    a[n++] = jobs_keep(r, "--model=%s", sm->model);
    int samples = sm->train_samples[r->size];
    if (samples < 60000) a[n++] = jobs_keep(r, "--train-samples=%d", samples);
    if (sm->test_samples[r->size] < 10000)
        a[n++] = jobs_keep(r, "--test-samples=%d", sm->test_samples[r->size]);
    a[n++] = jobs_keep(r, "--batch=%d", batch_x * sm->batch);
    a[n++] = jobs_keep(r, "--lr=%g", batch_x * sm->lr);
    a[n++] = jobs_keep(r, "--epochs=%d", epochs);
    a[n++] = jobs_keep(r, "--lr-schedule=step");
    a[n++] = jobs_keep(r, "--lr-decay-epochs=%d,%d", d1, d2);
    if (j->exp == 0) { /* the Accordion authors' warm-up to lr x workers (main.py) */
        a[n++] = jobs_keep(r, "--lr-scale=workers");
        a[n++] = jobs_keep(r, "--warmup-epochs=%d", papers_scaled_epochs(5, epochs, 1));
        a[n++] = jobs_keep(r, "--warmup-shape=epoch");
    }
    /* evaluations at every epoch's end: the same sample counts for every policy, batch-size
     * changes included */
    a[n++] = jobs_keep(r, "--eval-every=0");
    n += cost_flags(r, j, sm, a + n);
    if (j->priced) {
        a[n++] = jobs_keep(r, "--bandwidth=%s", PAPERS_BW[j->exp][0]);
        a[n++] = jobs_keep(r, "--record-traces");
    } else {
        a[n++] = jobs_keep(r, "--bandwidth=%s,%s", PAPERS_BW[j->exp][0], PAPERS_BW[j->exp][1]);
    }
    a[n++] = jobs_keep(r, "--policies=%s", pol);
    a[n++] = jobs_keep(r, "--seeds=%s", seeds);
    a[n++] = jobs_keep(r, "--jobs=%d", r->jobs);
    a[n++] = jobs_keep(r, "--out=%s/sweeps/%s", r->out, j->folder);
    if (r->no_plots) a[n++] = jobs_keep(r, "--no-plots");
    j->argc = n;
    /* the pricing replays: the same costs at every bandwidth (the trace gives the rest) */
    j->n_price = cost_flags(r, j, sm, j->price);
    j->price[j->n_price++] =
        jobs_keep(r, "--bandwidth=%s,%s", PAPERS_BW[j->exp][0], PAPERS_BW[j->exp][1]);
}

void jobs_price_folder(const Job *j, int seed, int k, char *buf, size_t n)
{
    snprintf(buf, n, "sweeps/%s/priced/seed-%d-%d", j->folder, seed, k);
}

/* A new job with the flags every sweep of (exp, setting) shares. */
static Job *job_new(Repro *r, int exp, int setting, const char *folder, const char *const *policies,
                    const int *roles, int n_pol, int batch_x, const char *compressor)
{
    assert(r->n_jobs < MAX_JOBS && n_pol <= MAX_ROLES); /* the job lists are fixed */
    Job *j = &r->job[r->n_jobs++];
    memset(j, 0, sizeof *j);
    j->exp = exp;
    j->setting = setting;
    j->compressor = compressor;
    j->priced = 1;
    for (int k = 0; k < n_pol; k++) /* the batch is the trace's in a replay */
        if (strstr(policies[k], "mode=batch")) j->priced = 0;
    snprintf(j->folder, sizeof j->folder, "%s", folder);
    char pol[512] = "";
    for (int k = 0; k < n_pol; k++) {
        snprintf(j->policy[k], sizeof j->policy[k], "%s", policies[k]);
        j->role[k] = roles[k];
        snprintf(pol + strlen(pol), sizeof pol - strlen(pol), "%s%s", k ? "," : "", policies[k]);
    }
    j->n_pol = n_pol;
    job_flags(r, j, papers_setting(exp, setting), batch_x, pol);
    return j;
}

/* The Accordion authors' compressors (policies/accordion.c, paper=1): PowerSGD with error
 * feedback and a new random Q at a rank change; TopK without error feedback, summed, int64
 * indices, k truncated. */
#define AUTHORS_POWERSGD "powersgd:ef=1,rank_change=reset"
#define AUTHORS_TOPK     "topk:ef=0,divide=0,index=int64,count=trunc"

/* Accordion's sweeps of setting s: roles low (critical level everywhere), high (normal level),
 * accordion; every policy with the authors' settings (accordion:paper=1 checks them). */
static void accordion_jobs(Repro *r, int s)
{
    const char *name = papers_setting(0, s)->name;
    const int role[] = {0, 1, 2};
    if (strstr(name, "-powersgd")) {
        const char *pol[] = {"static:level=2", "static:level=1", "accordion:paper=1"};
        job_new(r, 0, s, name, pol, role, 3, 1, AUTHORS_POWERSGD);
    } else if (strstr(name, "-topk")) {
        const char *pol[] = {"static:level=0.99", "static:level=0.1", "accordion:paper=1"};
        job_new(r, 0, s, name, pol, role, 3, 1, AUTHORS_TOPK);
    } else {
        /* small batch and Accordion's batch mode (the authors' fixed switch, paper=1) share a
         * sweep; the large batch (8x, the lr scaled linearly, as the driver scales it for
         * Accordion) is its own */
        const char *pol[] = {"sync", "accordion:paper=1,mode=batch"};
        const int role_b[] = {0, 2};
        job_new(r, 0, s, name, pol, role_b, 2, 1, "none");
        char folder[64];
        snprintf(folder, sizeof folder, "%s-large", name);
        const char *pol_l[] = {"sync"};
        const int role_l[] = {1};
        job_new(r, 0, s, folder, pol_l, role_l, 1, PAPERS_LARGE_BATCH, "none");
    }
}

/* ADPSGD's sweeps of setting s: sync, CPSGD and ADPSGD at the same budgets (periods 4 and 16),
 * post-local SGD and AdaComm; and quantised SGD (QSGD, 127 levels: 8 bits an element) */
static void adpsgd_jobs(Repro *r, int s)
{
    const char *name = papers_setting(1, s)->name;
    const char *pol[] = {
        "sync",      "cpsgd:period=4", "cpsgd:period=16", "adpsgd:period=4", "adpsgd:period=16",
        "postlocal", "adacomm"};
    const int role[] = {ADP_SYNC,     ADP_CPSGD4,    ADP_CPSGD16, ADP_ADPSGD4,
                        ADP_ADPSGD16, ADP_POSTLOCAL, ADP_ADACOMM};
    job_new(r, 1, s, name, pol, role, 7, 1, "none");
    char folder[64];
    snprintf(folder, sizeof folder, "%s-qsgd", name);
    const char *pol_q[] = {"static:level=127"};
    const int role_q[] = {ADP_QSGD};
    job_new(r, 1, s, folder, pol_q, role_q, 1, 1, "qsgd");
}

void jobs_build(Repro *r)
{
    r->n_jobs = 0;
    if (r->exp_on[0])
        for (int s = 0; s < papers_n_settings(0); s++) accordion_jobs(r, s);
    if (r->exp_on[1])
        for (int s = 0; s < papers_n_settings(1); s++) adpsgd_jobs(r, s);
    if (r->size) { /* --quick and --smoke: the mlp's sweeps only */
        int k = 0;
        for (int i = 0; i < r->n_jobs; i++)
            if (strcmp(papers_setting(r->job[i].exp, r->job[i].setting)->sim->model, "mlp") == 0)
                r->job[k++] = r->job[i];
        r->n_jobs = k;
    }
}

/* The command line of a job, as a user would type it. */
void jobs_command(const Job *j, char *buf, size_t n)
{
    size_t k = (size_t)snprintf(buf, n, "bellows sweep");
    for (int i = 0; i < j->argc && k < n; i++)
        k += (size_t)snprintf(buf + k, n - k, " %s", j->argv[i]);
}
