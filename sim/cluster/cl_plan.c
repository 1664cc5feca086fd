/* cl_plan.c: a cluster file's spec made into what one engine simulates: the cluster's flags
 * parsed as `bellows run` parses them into the whole cluster's platform, each job's GPUs placed
 * (cl_place.c), and each job's command line (the cluster's flags but its size, then the job's
 * own) parsed, resolved and checked by the same code as `bellows run`'s (run_setup,
 * driver_check), with its data. A job's messages name the file, the job and the key. The jobs
 * share the hardware, so they must agree on what their cost profiles make of it (the GPUs'
 * sustained rate, the links' share), and several jobs need the transfer-level collectives: the
 * analytic ones price each collective alone, blind to the other jobs' traffic; but a priced job
 * (price_workers, which holds that many GPUs) puts its ring's flows on the links (cl_fabric.c). */
#include "cl_impl.h"
#include "xalloc.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cluster_args.h"
#include "compat.h"

/* Appends "--flag" [value] to argv. */
static int push(char **argv, int *argc, const char *flag, const char *value, BwError *err)
{
    if (*argc + 2 >= CL_MAX_ARGS)
        return bw_fail(err, BW_EUSAGE, "more than %d flags", CL_MAX_ARGS / 2);
    size_t n = strlen(flag) + 3;
    argv[*argc] = bw_xmalloc(n, "cl_plan.c: argc]");
    snprintf(argv[(*argc)++], n, "--%s", flag);
    if (value) argv[(*argc)++] = bw_xstrdup(value, "cl_plan.c: argv[(*argc)++]");
    return BW_OK;
}

static const char *flag_of(const ClFlag *f, int n, const char *flag)
{
    for (int i = 0; i < n; i++)
        if (strcmp(f[i].flag, flag) == 0) return f[i].value ? f[i].value : "";
    return NULL;
}

/* The workers job j asks for: its "workers", its hosts' count, or `bellows run`'s default (8;
 * with a platform file a job names its workers or hosts). */
static int job_workers(const ClSpec *s, const ClJobSpec *j, int platform, int *P, BwError *err)
{
    const char *w = flag_of(j->flags, j->n_flags, "workers");
    *P = j->n_hosts ? j->n_hosts : 8;
    if (w) {
        char *end;
        long n = strtol(w, &end, 10);
        if (*end || n < 1 || n > DRIVER_MAX_WORKERS)
            return bw_fail(err, BW_EUSAGE,
                           "%s: job \"%s\": key \"workers\": expected an integer in [1, %d], "
                           "got '%s'",
                           s->path, j->name, DRIVER_MAX_WORKERS, w);
        if (j->n_hosts && n != j->n_hosts)
            return bw_fail(err, BW_EUSAGE,
                           "%s: job \"%s\": key \"workers\": %ld, but key \"hosts\" lists %d",
                           s->path, j->name, n, j->n_hosts);
        *P = (int)n;
    } else if (platform && !j->n_hosts) {
        return bw_fail(err, BW_EUSAGE,
                       "%s: job \"%s\": key \"workers\": missing (with a platform file each job "
                       "gives its workers or its hosts)",
                       s->path, j->name);
    }
    return BW_OK;
}

/* The GPUs job j holds: its "price_workers" N (its ring priced and its flows simulated over N
 * GPUs, cl_fabric.c), at least its workers P; else P. Checked here, before the jobs are placed. */
static int job_price(const ClSpec *s, const ClJobSpec *j, int P, int *N, BwError *err)
{
    const char *v = flag_of(j->flags, j->n_flags, "price-workers");
    *N = P;
    if (!v) return BW_OK;
    char *end;
    long n = strtol(v, &end, 10);
    if (!*v || *end || n < P || n > DRIVER_MAX_WORKERS)
        return bw_fail(err, BW_EUSAGE,
                       "%s: job \"%s\": key \"price_workers\": expected an integer from its "
                       "workers (%d) to %d, the GPUs it holds on the cluster, got '%s'",
                       s->path, j->name, P, DRIVER_MAX_WORKERS, v);
    if (j->n_hosts)
        return bw_fail(err, BW_EUSAGE,
                       "%s: job \"%s\": key \"hosts\": a priced job (price_workers) is placed "
                       "by placement, packed or spread, on its %ld GPUs; drop its hosts",
                       s->path, j->name, n);
    *N = (int)n;
    return BW_OK;
}

/* The whole cluster: its flags, and its size unless given (the jobs' workers together). */
static int plan_platform(ClPlan *p, BwError *err)
{
    const ClSpec *s = p->spec;
    int rc = BW_OK, platform = flag_of(s->flags, s->n_flags, "platform") != NULL;
    long sum = 0;
    for (int j = 0; j < s->n_jobs; j++) {
        if ((rc = job_workers(s, &s->jobs[j], platform, &p->jobs[j].P, err)) ||
            (rc = job_price(s, &s->jobs[j], p->jobs[j].P, &p->jobs[j].N, err)))
            return rc;
        sum += p->jobs[j].N;
    }
    for (int i = 0; i < s->n_flags && !rc; i++)
        rc = push(p->top_argv, &p->top_argc, s->flags[i].flag, s->flags[i].value, err);
    if (!rc && !platform && !flag_of(s->flags, s->n_flags, "workers")) {
        if (sum > DRIVER_MAX_WORKERS) /* the file has no "workers" of its own to blame */
            return bw_fail(err, BW_EUSAGE,
                           "%s: the jobs' \"workers\" add up to %ld GPUs, and the cluster they "
                           "size holds at most %d; give the jobs fewer workers",
                           s->path, sum, DRIVER_MAX_WORKERS);
        char n[32];
        snprintf(n, sizeof n, "%ld", sum);
        rc = push(p->top_argv, &p->top_argc, "workers", n, err);
    }
    if (rc) return rc;
    char where[1100];
    snprintf(where, sizeof where, "%s: ", s->path);
    rc = run_parse_flags("bellows cluster", RUN_MODE_RUN, p->top_argc, p->top_argv, &p->top, err);
    if (!rc)
        rc = cluster_from_cli(&p->platform, &p->top.cluster, p->top.set + p->top.cluster_at, err);
    if (!rc) { /* the shared cluster against the compatibility table (compat.def) */
        CompatScene shared = {0};
        shared.value[COMPAT_TOPOLOGY] = cluster_topology_name(p->platform.topology);
        shared.value[COMPAT_CLUSTER] = "*";
        rc = compat_check(&shared, err);
    }
    if (rc) return cl_fail_keys(err, rc, where, err->msg);
    p->gpus = p->platform.workers;
    return BW_OK;
}

/* Job j's command line: the cluster's flags but its size and hosts, the network model, then
 * its own; with a platform file, the hosts it was placed on. */
static int job_argv(ClPlan *p, ClJob *job, BwError *err)
{
    const ClSpec *s = p->spec;
    const ClJobSpec *j = job->spec;
    int rc = BW_OK;
    for (int i = 0; i < s->n_flags && !rc; i++)
        if (strcmp(s->flags[i].flag, "workers") && strcmp(s->flags[i].flag, "hosts"))
            rc = push(job->argv, &job->argc, s->flags[i].flag, s->flags[i].value, err);
    if (!rc) rc = push(job->argv, &job->argc, "network-model", s->network_model, err);
    for (int i = 0; i < j->n_flags && !rc; i++)
        rc = push(job->argv, &job->argc, j->flags[i].flag, j->flags[i].value, err);
    const int P = job->P;
    if (!rc && !flag_of(j->flags, j->n_flags, "workers") &&
        (j->n_hosts || p->platform.platform_file)) {
        char n[32];
        snprintf(n, sizeof n, "%d", P);
        rc = push(job->argv, &job->argc, "workers", n, err);
    }
    if (rc || !p->platform.platform_file) return rc;
    size_t len = 1;
    for (int r = 0; r < P; r++) len += strlen(p->platform.hosts[job->gpus[r]]) + 1;
    char *hosts = bw_xcalloc(len, 1, "cl_plan.c: hosts");
    for (int r = 0; r < P; r++)
        strcat(strcat(hosts, r ? "," : ""), p->platform.hosts[job->gpus[r]]);
    rc = push(job->argv, &job->argc, "hosts", hosts, err);
    free(hosts);
    return rc;
}

/* The data a job trains on: a data set already loaded for another job with the same flags, or
 * its own. */
static int job_data(ClPlan *p, ClJob *job, BwError *err)
{
    const TrainArgs *ta = &job->ta;
    for (int k = 0; k < p->n_data; k++) {
        const ClJob *o = NULL;
        for (int i = 0; i < p->n_jobs && !o; i++)
            if (&p->jobs[i] != job && p->jobs[i].cfg.train == &p->train[k]) o = &p->jobs[i];
        if (o && strcmp(o->ta.data_dir, ta->data_dir) == 0 &&
            o->ta.train_samples == ta->train_samples && o->ta.test_samples == ta->test_samples) {
            job->cfg.train = &p->train[k];
            job->cfg.test = &p->test[k];
            return BW_OK;
        }
    }
    int k = p->n_data++;
    return run_load_data(ta, &job->cfg, &p->train[k], &p->test[k], err);
}

/* One job: parsed, resolved, its data loaded, checked as `bellows run` checks its run. */
static int plan_job(ClPlan *p, ClJob *job, int threads, BwError *err)
{
    char where[1100];
    snprintf(where, sizeof where, "%s: job \"%s\": ", p->spec->path, job->spec->name);
    int rc = job_argv(p, job, err);
    if (!rc)
        rc = run_parse_flags("bellows cluster", RUN_MODE_RUN, job->argc, job->argv, &job->f, err);
    job->slowdown =
        bw_xcalloc(DRIVER_MAX_WORKERS, sizeof *job->slowdown, "cl_plan.c: job->slowdown");
    if (!rc) rc = run_setup("cluster", &job->f, &job->ta, &job->cfg, job->slowdown, err);
    if (!rc) rc = job_data(p, job, err);
    if (rc) return cl_fail_keys(err, rc, where, err->msg);
    run_compare_eval_every(&job->f, &job->cfg); /* compare's: 20 evaluations an epoch */
    job->cfg.progress = 0;
    job->cfg.label = job->spec->name;
    job->cfg.compute_threads = threads; /* the process's pool, which the jobs share */
    if (job->cfg.cluster.ps_own_hosts)
        return bw_fail(err, BW_EUSAGE,
                       "%skey \"ps_hosts\": own parameter-server hosts are hosts beyond the "
                       "cluster's GPUs, which a cluster file does not place; use \"colocated\"",
                       where);
    if (p->n_jobs > 1 && job->cfg.backend == COLL_ANALYTIC && !job->cfg.price_workers)
        return bw_fail(err, BW_EUSAGE,
                       "%skey \"collectives\": analytic prices each collective alone, blind to "
                       "the other jobs' traffic; several jobs need \"transfer\" (or the job "
                       "a \"price_workers\": its ring's flows between switches then share the "
                       "links)",
                       where);
    if (job->cfg.price_workers &&
        (job->cfg.algo != COLL_RING || strcmp(p->spec->network_model, "exact")))
        return bw_fail(err, BW_EUSAGE,
                       "%skey \"price_workers\": a priced job's traffic on the shared links is "
                       "its ring's (sim/cluster/README.md): it needs \"allreduce\": \"ring\" "
                       "and the exact network model, whose lone flow takes its route's latency "
                       "plus its bytes over the route's bandwidth",
                       where);
    if (job->cfg.backend == COLL_ANALYTIC && !job->cfg.price_workers && !cl_in_rank_order(p, job))
        return bw_fail(err, BW_EUSAGE,
                       "%skey \"%s\": %s its ranks under the %s out of rank order, but the "
                       "analytic collectives' closed forms take a %s's GPUs as consecutive "
                       "ranks; give it \"placement\": \"packed\", \"collectives\": "
                       "\"transfer\", or with \"allreduce\": \"ring\" a \"price_workers\" "
                       "of %d (its ring then priced and its flows simulated as placed)",
                       where, job->spec->n_hosts ? "hosts" : "placement",
                       job->spec->n_hosts ? "its hosts put" : "spread puts",
                       p->platform.topology == TOPO_FAT_TREE ? "leaf switches" : "nodes",
                       p->platform.topology == TOPO_FAT_TREE ? "leaf" : "node", job->P);
    if ((rc = driver_check(&job->cfg, err))) return cl_fail_keys(err, rc, where, err->msg);
    if (job->cfg.price_workers) job->layout = cl_ring_layout(p, job); /* its hops as placed */
    return BW_OK;
}

/* The jobs share the GPUs and links: each must see them as the first job does. */
static int plan_hardware(ClPlan *p, BwError *err)
{
    Cluster first, mine;
    driver_cluster_loaded(&p->jobs[0].cfg, &first);
    for (int j = 1; j < p->n_jobs; j++) {
        driver_cluster_loaded(&p->jobs[j].cfg, &mine);
        if (mine.link_share != first.link_share ||
            mine.intra_link_share != first.intra_link_share ||
            (!p->platform.platform_file && mine.gpu_flops != first.gpu_flops))
            return bw_fail(err, BW_EUSAGE,
                           "%s: job \"%s\": key \"costs\": its cost profile makes the GPUs %g "
                           "flop/s and the links' share %g, job \"%s\"'s %g and %g; the jobs "
                           "share the hardware: give them the same costs and transport (or "
                           "gpu_efficiency at the top)",
                           p->spec->path, p->jobs[j].spec->name, mine.gpu_flops,
                           cluster_link_share(&mine), p->jobs[0].spec->name, first.gpu_flops,
                           cluster_link_share(&first));
    }
    p->platform.link_share = first.link_share;
    p->platform.intra_link_share = first.intra_link_share;
    if (!p->platform.platform_file) {
        p->platform.efficiency = first.efficiency;
        p->platform.efficiency_from = first.efficiency_from; /* its source, for the XML's note */
        snprintf(p->platform.efficiency_of, sizeof p->platform.efficiency_of, "%s",
                 first.efficiency_of);
        p->platform.gpu_flops = first.gpu_flops;
        p->platform.gpu_mem_Bps = first.gpu_mem_Bps;
    }
    return BW_OK;
}

/* "A:B" or "A:" (B < 0: no end) */
static int steps_range(const char *text, long *lo, long *hi)
{
    char *end;
    *lo = strtol(text, &end, 10);
    *hi = -1;
    if (end == text || *end != ':' || *lo < 0) return 0;
    if (!end[1]) return 1;
    const char *b = end + 1;
    *hi = strtol(b, &end, 10);
    return end != b && !*end && *hi >= *lo;
}

int cl_plan_build(const ClSpec *spec, const char *timeline_steps, ClPlan *p, BwError *err)
{
    memset(p, 0, sizeof *p);
    p->spec = spec;
    p->n_jobs = spec->n_jobs;
    p->jobs = bw_xcalloc((size_t)p->n_jobs, sizeof *p->jobs, "cl_plan.c: p->jobs");
    p->train = bw_xcalloc((size_t)p->n_jobs, sizeof *p->train, "cl_plan.c: p->train");
    p->test = bw_xcalloc((size_t)p->n_jobs, sizeof *p->test, "cl_plan.c: p->test");
    for (int j = 0; j < p->n_jobs; j++) p->jobs[j].spec = &spec->jobs[j];
    long lo, hi;
    if (timeline_steps && !steps_range(timeline_steps, &lo, &hi))
        return bw_fail(err, BW_EUSAGE,
                       "--timeline-steps: expected A:B or A: with 0 <= A <= B, got '%s'",
                       timeline_steps);
    snprintf(p->timeline_steps, sizeof p->timeline_steps, "%s",
             timeline_steps ? timeline_steps : "");
    int rc = plan_platform(p, err);
    if (!rc) rc = cl_place(p, err);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    for (int j = 0; j < p->n_jobs && !rc; j++)
        rc = plan_job(p, &p->jobs[j], cores > 1 ? (int)cores : 1, err);
    if (!rc) rc = plan_hardware(p, err);
    return rc;
}

void cl_timeline_range(const ClPlan *p, long *lo, long *hi)
{
    if (!steps_range(p->timeline_steps, lo, hi)) *lo = 0, *hi = -1;
}

static void argv_free(char **argv, int argc)
{
    for (int i = 0; i < argc; i++) free(argv[i]);
}

void cl_plan_free(ClPlan *p)
{
    for (int j = 0; p->jobs && j < p->n_jobs; j++) {
        ClJob *job = &p->jobs[j];
        run_flags_release(&job->f);
        argv_free(job->argv, job->argc);
        free(job->slowdown);
        free(job->gpus);
    }
    for (int k = 0; k < p->n_data; k++) {
        dataset_free(&p->train[k]);
        dataset_free(&p->test[k]);
    }
    free(p->train);
    free(p->test);
    free(p->jobs);
    run_flags_release(&p->top);
    argv_free(p->top_argv, p->top_argc);
    memset(p, 0, sizeof *p);
}
