/* estimate.c: what a run will cost before it runs, from its scenario alone. The simulated time
 * of a dense step (compute at the GPU's rate, the closed-form allreduce of every parameter)
 * times the steps must stay under CLUSTER_MAX_SIM_S, so that every simulated time is
 * representable and resolved (a run beyond it is refused, naming the flags that price it); and
 * the wall time a large run will take, from the messages SimGrid will simulate and the real
 * gradients the host will compute, so that a run of hours says so before it starts. */
#include "driver_impl.h"
#include "xalloc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "units.h"

/* Measured here (tests/perf/README.md, "wall time"): SimGrid's cost of one simulated
 * point-to-point message at the transfer level, and the host's rate on the small models'
 * forward and backward passes, per computing thread. */
#define WALL_PER_MESSAGE_S 3e-6
#define WALL_HOST_FLOPS    50e9

/* Steps the run takes at most: the trace's, or epochs x steps per epoch. */
static double run_steps(const RunConfig *cfg, int shard)
{
    if (cfg->replay) return (double)cfg->replay->n_steps;
    return (double)cfg->tc.epochs * (double)(shard / cfg->tc.batch);
}

/* The largest compute-time multiplier of the workers (--slowdown). */
static double max_slowdown(const RunConfig *cfg)
{
    double x = 1;
    for (int w = 0; cfg->slowdown && w < cfg->cluster.workers; w++)
        x = cfg->slowdown[w] > x ? cfg->slowdown[w] : x;
    return x;
}

/* The simulated compute of one worker's step as priced: the workload's layers at the batch it
 * is charged for (--price-batch), the trace's measured step, or the model's flops, at the GPU's
 * sustained rate (the cost profile's efficiency in it). */
static double step_compute_s(const RunConfig *cfg, const Model *m)
{
    const Workload *wl = cfg->workload;
    const double b = driver_price_batch(cfg, cfg->tc.batch), rate = cfg->cluster.gpu_flops;
    double s;
    if (wl && wl->measured_batch > 0) {
        s = 0;
        for (int l = 0; l < wl->n_layers; l++)
            s += (wl->layers[l].fwd_s + wl->layers[l].bwd_s) * b / wl->measured_batch;
    } else if (wl) {
        s = workload_flops_per_sample(wl) * b / rate;
    } else if (cfg->replay && cfg->replay->h.compute_s_per_step > 0) {
        s = cfg->replay->h.compute_s_per_step;
    } else {
        s = model_flops_per_sample(m) * b / rate;
    }
    return s * max_slowdown(cfg);
}

/* The closed-form time of one dense fp32 allreduce of the parameters charged, on links at the
 * cost profile's share of their rate; under --sharding, the sharded step's collectives instead
 * (shard_estimate.c). */
static double step_comm_s(const RunConfig *cfg, const Model *m)
{
    Cluster loaded;
    driver_cluster_loaded(cfg, &loaded);
    const Cluster *c = &loaded;
    const double share = cluster_link_share(c), intra_share = cluster_intra_link_share(c);
    double n = 4.0 * (double)(cfg->workload ? cfg->workload->n_params : m->n_params);
    if (cfg->sharding != SHARD_NONE) return estimate_shard_comm_s(cfg, c, n);
    const int g = coll_algo_group(cfg->algo, c);
    return coll_allreduce_formula_s(cfg->algo, c->workers, g, n, 2 * c->latency_s,
                                    1 / (c->bandwidth_Bps * share), 2 * c->intra_latency_s,
                                    1 / (c->intra_bandwidth_Bps * intra_share));
}

int estimate_check_sim_time(const RunConfig *cfg, const Model *m, int shard, BwError *err)
{
    if (cfg->cluster.platform_file) return BW_OK; /* its hosts and links are checked one by one */
    double steps = run_steps(cfg, shard), compute = step_compute_s(cfg, m),
           comm = step_comm_s(cfg, m), total = steps * (compute + comm);
    if (isfinite(total) && total <= CLUSTER_MAX_SIM_S) return BW_OK;
    char bw[32], lat[32];
    units_format_bandwidth(cfg->cluster.bandwidth_Bps, bw, sizeof bw);
    units_format_duration(cfg->cluster.latency_s, lat, sizeof lat);
    return bw_fail(err, BW_EUSAGE,
                   "%s: the run would simulate about %.3g s (%.0f steps of %.3g s of compute at "
                   "%.3g flop/s and %.3g s of dense communication at %s / %s), more than the "
                   "%.0e s bellows simulates with representable times; shorten the run or check "
                   "--gpu-flops, --bandwidth, --latency%s%s",
                   compute >= comm ? (cfg->workload ? "--workload" : "--gpu-flops") : "--bandwidth",
                   total, steps, compute, cfg->cluster.gpu_flops, comm, bw, lat, CLUSTER_MAX_SIM_S,
                   cfg->workload ? " and the workload's compute" : "",
                   cfg->price_batch > 0 ? " at --price-batch" : "");
}

/* Point-to-point messages of one collective among P ranks at the transfer level. */
static double messages_per_call(const RunConfig *cfg, int allgather)
{
    const double P = cfg->cluster.workers;
    if (cfg->backend == COLL_ANALYTIC) return 0; /* a barrier and the closed form: no messages */
    if (allgather) return P * (P - 1);
    return coll_algo_messages(cfg->algo, &cfg->cluster); /* the algorithm's table entry */
}

/* The collective calls of a step, allreduces and allgathers: the compressor's at its default
 * level on every matrix (its plan), or one dense allreduce when it cannot say. */
static void step_calls(const RunConfig *cfg, const Model *m, double *allreduces, double *allgathers)
{
    *allreduces = 1;
    *allgathers = 0;
    Compressor *c = NULL;
    Spec spec;
    BwError ignore;
    const CompressorOps *ops = spec_parse(cfg->compressor, "--compressor", &spec, &ignore) == BW_OK
                                   ? compress_find(spec.name)
                                   : NULL;
    double *level = bw_xmalloc(sizeof *level * (size_t)m->n_layers, "estimate.c: level");
    if (ops && level &&
        compress_create(cfg->compressor, "--compressor", m->layers, m->n_layers,
                        cfg->cluster.workers, 0, cfg->tc.seed, &c, &ignore) == BW_OK) {
        CompressMsg msgs[COMPRESS_MAX_MSGS];
        for (int l = 0; l < m->n_layers; l++)
            level[l] = m->layers[l].ndim == 2 ? ops->level_default : 0;
        int n = compress_plan(c, level, msgs);
        *allreduces = 0;
        for (int i = 0; i < n; i++) {
            if (msgs[i].op == COMPRESS_ALLGATHER)
                (*allgathers)++;
            else
                (*allreduces)++;
        }
    }
    free(level);
    compress_free(c);
}

double driver_wall_estimate_s(const RunConfig *cfg, double *messages)
{
    Model *m = NULL;
    BwError ignore;
    *messages = 0;
    if (run_model_create(cfg, &m, &ignore)) return 0;
    double allreduces, allgathers;
    step_calls(cfg, m, &allreduces, &allgathers);
    estimate_shard_calls(cfg, &allreduces, &allgathers); /* shard_estimate.c */
    const double P = cfg->cluster.workers, steps = run_steps(cfg, run_shard_of(cfg));
    *messages =
        steps * (allreduces * messages_per_call(cfg, 0) + allgathers * messages_per_call(cfg, 1));
    double threads = cfg->compute_threads > 1 ? cfg->compute_threads : 1;
    double grads = cfg->replay ? 0 : steps * P * cfg->tc.batch * model_flops_per_sample(m);
    model_free(m);
    return *messages * WALL_PER_MESSAGE_S + grads / (threads * WALL_HOST_FLOPS);
}
