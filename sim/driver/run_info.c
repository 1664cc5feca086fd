/* run_info.c: what every room of a run asks of it and of its configuration, and nothing more:
 * its clock and hosts, its model, its shard, the price of a batch, the kind of step it prices,
 * whether the fast replay may run it, and the replay's stand-in model and trace cursor. A leaf of
 * sim/driver/'s call graph (scripts/callgraph.py): it calls no function of another file here, so
 * the files above it (driver.c, worker.c, replay.c, cost.c, the sched files) call one way. */
#include "driver_impl.h"
#include "xalloc.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <simgrid/engine.h>
#include <simgrid/actor.h>

#include "engine.h"
#include "spec.h"
#include "splitmix.h"

#include <gsl/gsl_cdf.h>

/* The one way an actor stops the run with an error (driver_impl.h). */
void run_fail(DriverRun *run, int status, const BwError *why)
{
    assert(status != BW_OK && why);
    if (run->stop == STOP_ERROR) return; /* the first error is the one reported */
    run->stop = STOP_ERROR;
    run->err = *why;
    run->err_status = status;
}

double run_now(const DriverRun *run)
{
    return run->fast ? run->now : simgrid_get_clock() - run->job.start_s;
}

sg_host_t run_host(const DriverRun *run, int w)
{
    return engine_host(run->job.place ? run->job.place->gpus[w] : w);
}

void run_actor_start(const DriverRun *run, int w, const char *prefix, void (*code)(int, char **),
                     void *data)
{
    char name[32];
    snprintf(name, sizeof name, "%s%d", prefix, w);
    char *argv[] = {name, NULL};
    sg_actor_t actor = sg_actor_init(name, run_host(run, w));
    sg_actor_set_data(actor, data);
    sg_actor_start(actor, code, 1, argv);
}

void run_actor_ended(DriverRun *run)
{
    double now = simgrid_get_clock();
    if (now > run->job.end_clock) run->job.end_clock = now;
    run->job.actors_ended++;
}

int run_model_create(const RunConfig *cfg, Model **out, BwError *err)
{
    if (!cfg->replay) return model_create(cfg->model, &cfg->mc, cfg->tc.seed, out, err);
    return replay_model_create(&cfg->replay->h, cfg->tc.seed, out, err);
}

int run_shard_of(const RunConfig *cfg)
{
    if (!cfg->replay || cfg->priced) return dataset_shard_size(cfg->train->n, cfg->cluster.workers);
    long spe = cfg->replay->h.steps_per_epoch ? cfg->replay->h.steps_per_epoch : 1;
    return (int)(spe * cfg->tc.batch);
}

int driver_price_batch(const RunConfig *cfg, int b)
{
    if (cfg->price_batch <= 0 || cfg->price_batch == cfg->tc.batch) return b;
    return (int)llround((double)cfg->price_batch * b / cfg->tc.batch);
}

int driver_costed(const RunConfig *cfg)
{
    return cfg->workload || cfg->overlap != OVERLAP_NONE || (cfg->costs && !cfg->costs->ideal);
}

/* Parameter servers at the transfer level are always scheduled under --overlap ddp, fifo
 * included: there fifo posts every ready tensor's partitions at once, as BytePS and MXNet's
 * KVStore do (schedule.c's prefill), which needs the engine's lanes, not cost.c's one call at a
 * time. The analytic backend prices one call alone and keeps cost.c's path. */
int driver_scheduled(const RunConfig *cfg)
{
    if (cfg->overlap == OVERLAP_DDP && coll_algo_servers(cfg->algo) &&
        cfg->backend == COLL_TRANSFER)
        return 1;
    return cfg->overlap == OVERLAP_LAYER ||
           (cfg->overlap == OVERLAP_DDP && cfg->schedule && !schedule_spec_is_fifo(cfg->schedule));
}

/* Parameter servers under fifo and DDP's overlap on the analytic backend: each DDP bucket is
 * priced as BytePS sends it, its partitions in flight at once over the servers
 * (coll_comm_set_ps_partition), as the transfer level schedules them (driver_scheduled). */
int driver_ps_inflight(const RunConfig *cfg)
{
    return cfg->overlap == OVERLAP_DDP && coll_algo_servers(cfg->algo) &&
           cfg->backend == COLL_ANALYTIC && !driver_scheduled(cfg);
}

/* Whether a built-in policy's outer exchanges are Streaming DiLoCo's (fragments, quantised, and
 * with tau > 0 overlapping the inner steps) or eager DiLoCo's (overlapping the next round): the
 * outer lanes price those (outer_lane.c), which the fast replay's closed form does not. From the
 * spec, as the policy is not created yet when the engine is chosen. */
static int outer_needs_actors(const char *policy)
{
    Spec s;
    BwError ignore;
    if (!policy || spec_parse(policy, "--policy", &s, &ignore) != BW_OK) return 0;
    if (strcmp(s.name, "streaming-diloco") == 0) return 1;
    for (int i = 0; strcmp(s.name, "diloco") == 0 && i < s.n; i++)
        if (strcmp(s.key[i], "eager") == 0 && atoi(s.val[i]) != 0) return 1;
    return 0;
}

int driver_replay_fast(const RunConfig *cfg, char *why, size_t n)
{
    const char *no = NULL;
    int same_slowdown = 1;
    for (int w = 1; cfg->slowdown && w < cfg->cluster.workers; w++)
        same_slowdown &= cfg->slowdown[w] == cfg->slowdown[0];
    if (!cfg->replay)
        no = "not a replay";
    else if (cfg->replay_engine == REPLAY_ACTORS)
        no = "--replay-engine actors";
    else if (cfg->backend != COLL_ANALYTIC)
        no = "--collectives transfer simulates every message";
    else if (cfg->jitter_sigma > 0)
        no = "--compute-jitter makes the workers differ";
    else if (!same_slowdown)
        no = "--slowdown makes the workers differ";
    else if (cfg->cluster.topology == TOPO_ISLANDS)
        no = "--topology islands: the islands' rings and exchanges over the WAN need the actors";
    else if (cfg->cluster.platform_file)
        no = "--platform: a platform file's hosts and routes may differ";
    else if (cfg->zeropp.hpz || cfg->zeropp.qgz)
        no = "--zeropp hpz or qgz: the nodes' rings need the actors";
    else if (cfg->sharding == SHARD_HYBRID)
        no = "--sharding hybrid: its node and cross-node rings need the actors";
    else if (outer_needs_actors(cfg->policy))
        no = "Streaming DiLoCo's and eager DiLoCo's outer exchanges (their fragments and "
             "overlap) need the actors";
    else if (cfg->simgrid_cfg)
        no = "--cfg= options may change SimGrid's timings";
    else if (driver_scheduled(cfg))
        no = "--schedule or --overlap layer: partitions, credit and layer-wise dependencies "
             "need the actors";
    else if (cfg->priced && driver_costed(cfg) && cfg->overlap == OVERLAP_DDP)
        no = "--overlap ddp: its closed form equals the actors to 1e-9 but not to the bit, and a "
             "priced run must be the live run";
    else if (cfg->sharding == SHARD_ZERO3 && cfg->overlap == OVERLAP_DDP && cfg->costs &&
             !cfg->costs->ideal && cfg->costs->interference > 1)
        no = "--sharding zero3 under a cost profile's interference: the all-gathers and "
             "reduce-scatters slow the compute beside them, which only the actors simulate";
    else if (cfg->overlap == OVERLAP_DDP && !cfg->free_compression)
        no = "--overlap ddp: encode and decode share the GPU with the backward, which only the "
             "actors simulate (--free-compression or --overlap none allow the fast path)";
    else if (cfg->timeline)
        no = "--timeline records the actors' events";
    else if (cfg->record_trace)
        no = "--record-trace";
    else if (cfg->params_out)
        no = "the final parameters are wanted";
    if (why && n) snprintf(why, n, "%s", no ? no : "");
    return no == NULL;
}

/* Flops per sample x b, or (a trace with measured step times) the measured seconds scaled by
 * the batch, as flops of this host; times the worker's slowdown. Jitter comes on top
 * (worker_compute). */
double worker_step_flops(const RunConfig *cfg, double flops_per_sample, int b, double speed_flops,
                         int rank)
{
    double flops = flops_per_sample * b;
    if (cfg->replay && cfg->replay->h.compute_s_per_step > 0) /* measured, scaled by batch */
        flops = cfg->replay->h.compute_s_per_step * speed_flops * b / cfg->replay->h.batch;
    if (cfg->slowdown) flops *= cfg->slowdown[rank];
    return flops;
}

/* A matrix per 2-D entry of the table, a vector where cols is 1, at the trace's cost per
 * sample. */
int replay_model_create(const TraceHeader *h, unsigned long seed, Model **out, BwError *err)
{
    LayerView *layers = bw_xcalloc((size_t)h->n_layers, sizeof *layers, "run_info.c: layers");
    if (!layers)
        return bw_fail(err, BW_ERUNTIME, "--trace: out of memory for %d layers", h->n_layers);
    for (int l = 0; l < h->n_layers; l++) {
        LayerView *v = &layers[l];
        /* a trace's names may be longer than a layer view's: shown shortened */
        snprintf(v->name, sizeof v->name, "%.*s", (int)sizeof v->name - 1, h->layers[l].name);
        v->rows = h->layers[l].rows;
        v->cols = h->layers[l].cols;
        v->ndim = v->cols == 1 ? 1 : 2;
    }
    int rc = model_create_from_layers(layers, h->n_layers, h->flops_per_sample, seed, out, err);
    free(layers);
    return rc;
}

/* The trace's evaluation after `steps` steps, or NULL. Asked with steps that never decrease, so
 * a cursor walks the (ordered) evaluations once over the whole replay. */
const TraceEval *replay_eval_at(DriverRun *run, long steps)
{
    const Trace *t = run->cfg->replay;
    while (run->cursor.eval_cursor < t->n_evals && t->evals[run->cursor.eval_cursor].step < steps)
        run->cursor.eval_cursor++;
    if (run->cursor.eval_cursor < t->n_evals && t->evals[run->cursor.eval_cursor].step == steps)
        return &t->evals[run->cursor.eval_cursor];
    return NULL;
}

/* A trace step's global batch, shared by P workers (at least one sample each). */
int replay_per_worker_batch(const TraceStep *ts, int P)
{
    return ts->batch / P > 0 ? ts->batch / P : 1;
}

/* The cluster as the run loads it: the cost profile's share of the links (driver.h). */
void driver_cluster_loaded(const RunConfig *cfg, Cluster *out)
{
    *out = cfg->cluster;
    const CostProfile *prof = cfg->costs && !cfg->costs->ideal ? cfg->costs : NULL;
    if (prof) { /* the collective library's share of the links (a generated platform's NICs) */
        out->link_share = costs_link_share(prof, cfg->transport, 0, out->bandwidth_Bps);
        out->intra_link_share = costs_link_share(
            prof, prof->net[COST_NET_NVLINK].present ? COST_NET_NVLINK : cfg->transport, 0,
            out->intra_bandwidth_Bps);
    }
}

double driver_allgather_factor(const CostProfile *prof, const RunConfig *cfg, const Cluster *c)
{
    return costs_link_share(prof, cfg->transport, 0, c->bandwidth_Bps) /
           costs_link_share(prof, cfg->transport, 1, c->bandwidth_Bps);
}

/* The slowest of n normal step times, by the inverse CDF of their maximum (driver.h): P(max <= x)
 * = Phi(x)^n, so max = Phi^-1(u^(1/n)); 1 - u^(1/n) = -expm1(log(u) / n) keeps its digits at
 * 65,536 GPUs, where u^(1/n) rounds to 1. */
double driver_straggler_max(double cv, double n, double u)
{
    assert(u > 0 && u < 1 && n >= 1 && cv >= 0);
    double m = 1.0 + cv * gsl_cdf_ugaussian_Qinv(-expm1(log(u) / n));
    return m > 0 ? m : 0;
}

double driver_straggler_factor(const RunConfig *cfg, long step)
{
    if (!(cfg->straggler_cv > 0)) return 1.0;
    /* a stream of its own: the run's seed, a tag and the step (splitmix.h) */
    uint64_t z =
        splitmix64(splitmix64((uint64_t)cfg->tc.seed ^ 0x5354524147474c45ULL) + (uint64_t)step);
    double u = ((double)(z >> 11) + 0.5) * 0x1p-53; /* in (0, 1) */
    int n = cfg->price_workers > cfg->cluster.workers ? cfg->price_workers : cfg->cluster.workers;
    return driver_straggler_max(cfg->straggler_cv, n, u);
}

/* The GPUs of a node (step_plan_hybrid.c, shard_comms.c, zeropp_plan.c) */
int run_node_gpus(const DriverRun *run)
{
    return run->cluster.gpus_per_node > 0 ? run->cluster.gpus_per_node : 1;
}

/* Whether the run's gradients pass through --compressor: not in periodic mode (the parameters
 * are averaged dense) nor under sync, whose levels are 0 (dense) at every step (policies/sync.c;
 * sim/cli/flag_effect.c's run_policy_uses_compressor, the same rule for the run's header). */
int run_uses_compressor(const DriverRun *run)
{
    return !run->periodic && strcmp(run->pol->ops->name, "sync") != 0;
}
