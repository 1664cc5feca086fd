/* cost.c: what a step costs when it is costed layer by layer (a workload profile, or --overlap
 * ddp): the real model's forward, then its backward in reverse layer order, its tensors'
 * collectives at the levels of the small-model layers they follow, the compressors' encode and
 * decode and the optimiser on the simulated GPU. The small model's real gradients are reduced
 * beforehand on a zero-time communicator (CostModel.data), so the dynamics are the uncosted run's
 * (bit for bit with analytic collectives, which also sum in rank order) and only the prices differ.
 *
 * Overlap DDP (PyTorch's DistributedDataParallel, torch/nn/parallel/distributed.py and
 * reducer.cpp): the gradients fill buckets in reverse order of the parameters (the first bucket
 * capped at 1 MiB, the others at --bucket-mb), and a bucket's collective starts once its last
 * gradient is computed, on a communication stream of its own: here a second actor per worker
 * (its "stream"), on the same host, fed by a semaphore. Collectives run one bucket after the
 * other, as NCCL's one stream does; the optimiser waits for all of them. A bucket's encode and
 * decode run on the stream too, and share the GPU (the host) with the backward they overlap.
 *
 * Where a worker's step time goes: compute (forward, backward, optimiser), and what the compute
 * lane waits for after its backward: compression, communication and waiting for the slowest
 * (the streams' rendezvous before each bucket's collectives), split by what the stream was doing
 * in that window (exposed time; what the backward hid is not counted). With --overlap none the
 * same four come one after the other. The step's rendezvous (the policy's decision) comes
 * before the forward here: waiting there is waiting too.
 *
 * Prices (RunConfig.costs, sim/costs/): under the `ideal` profile an encode or decode is the
 * roofline of the compressor's flops and bytes, half before the collectives and half after,
 * and the optimiser the roofline of its memory traffic, as bellows always charged. Under a
 * calibrated profile each stage of the compressor is priced as its operation in its phase
 * (the encode before the first collective, the work between collectives, the decode after the
 * last), each tensor handed to the compressor pays the profile's fixed cost, each collective
 * call its own, the optimiser its measured rate, and a bucket with an allgather waits for the
 * backward to end unless the profile's allgathers overlap it. */
#include "driver_impl.h"
#include "xalloc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_randist.h>
#include <simgrid/actor.h>
#include <simgrid/barrier.h>
#include <simgrid/engine.h>
#include <simgrid/host.h>
#include <simgrid/semaphore.h>

#include "engine.h"
#include "exec_impl.h"

/* ---- the plan, fixed for the run ---- */

/* DDP's buckets: tensors in reverse order, a bucket closed once it holds cap bytes (the first
 * one DRIVER_FIRST_BUCKET_BYTES), as PyTorch's compute_bucket_assignment_by_size does. */
static int cost_buckets(CostModel *cm, double cap)
{
    const Workload *wl = cm->wl;
    const int n = wl->n_tensors;
    int k = 0;
    double bytes = 0;
    cm->bucket_start[0] = 0;
    for (int i = 0; i < n; i++) {
        int t = n - 1 - i;
        cm->order[i] = t;
        bytes += 4.0 * (double)wl->tensors[t].numel;
        double limit = k == 0 ? fmin(DRIVER_FIRST_BUCKET_BYTES, cap) : cap;
        if (bytes >= limit || i == n - 1) {
            cm->bucket_layer[k] = wl->tensors[t].layer; /* ready after this layer's backward */
            cm->bucket_start[++k] = i + 1;
            bytes = 0;
        }
    }
    return k;
}

int cost_create(DriverRun *run, const Model *m0, BwError *err)
{
    const RunConfig *cfg = run->cfg;
    CostModel *cm = bw_xcalloc(1, sizeof *cm, "cost.c: cm");
    run->cost = cm;
    if (!cm) return bw_fail(err, BW_ERUNTIME, "out of memory");
    int rc;
    cm->wl = cfg->workload;
    if (!cm->wl) { /* the small model's own, or a replayed trace's measured step */
        const TraceHeader *h = cfg->replay ? &cfg->replay->h : NULL;
        rc = h && h->compute_s_per_step > 0
                 ? workload_from_model_times(m0->layers, m0->n_layers, h->compute_s_per_step,
                                             h->batch, &cm->own, err)
                 : workload_from_model(m0->layers, m0->n_layers, model_flops_per_sample(m0),
                                       &cm->own, err);
        if (rc) return rc;
        cm->wl = cm->own;
    }
    const int n = cm->wl->n_tensors;
    cm->views = bw_xcalloc((size_t)n, sizeof *cm->views, "cost.c: cm->views");
    cm->follows = bw_xcalloc((size_t)n, sizeof *cm->follows, "cost.c: cm->follows");
    cm->levels = bw_xcalloc((size_t)n, sizeof *cm->levels, "cost.c: cm->levels");
    cm->order = bw_xcalloc((size_t)n, sizeof *cm->order, "cost.c: cm->order");
    cm->bucket_start =
        bw_xcalloc((size_t)n + 1, sizeof *cm->bucket_start, "cost.c: cm->bucket_start");
    cm->bucket_layer = bw_xcalloc((size_t)n, sizeof *cm->bucket_layer, "cost.c: cm->bucket_layer");
    cm->bucket_defer = bw_xcalloc((size_t)n, 1, "cost.c: cm->bucket_defer");
    if (!cm->views || !cm->follows || !cm->levels || !cm->order || !cm->bucket_start ||
        !cm->bucket_layer || !cm->bucket_defer)
        return bw_fail(err, BW_ERUNTIME, "out of memory");
    cm->prof = cfg->costs && !cfg->costs->ideal ? cfg->costs : NULL;
    workload_views(cm->wl, cm->views);
    rc = workload_map(cm->wl, m0->layers, m0->n_layers, "--workload", cm->follows, err);
    if (rc) return rc;
    cm->n_buckets =
        cost_buckets(cm, cfg->bucket_bytes > 0 ? cfg->bucket_bytes : DRIVER_BUCKET_BYTES);
    cm->peak_ratio = cost_peak_ratio(cm->wl, &run->cluster);
    sgd_cost(cm->wl->n_params, &cfg->tc.sgd, &cm->opt_flops, &cm->opt_bytes);
    cm->exec = exec_choose(run);
    cm->ddp = cfg->overlap == OVERLAP_DDP && (!run->periodic || islands_bucketed(run)) &&
              cm->exec != &exec_sched;
    if (run->fast) return BW_OK;
    cm->data = coll_comm_create_zero_time(&run->cluster, cfg->algo);
    if (!cm->data) return bw_fail(err, BW_ERUNTIME, "out of memory");
    return exec_create(run, err);
}

void cost_free(DriverRun *run)
{
    CostModel *cm = run->cost;
    if (!cm) return;
    exec_free(run);
    workload_free(cm->own);
    free(cm->views);
    free(cm->follows);
    free(cm->levels);
    free(cm->order);
    free(cm->bucket_start);
    free(cm->bucket_layer);
    free(cm->bucket_defer);
    coll_comm_free(cm->data);
    free(cm);
    run->cost = NULL;
}

/* Whether bucket k waits for the backward to end this step: the profile's allgathers do not
 * overlap it, and the bucket's collectives at this step's levels include one; or the profile's
 * hook of the run's compressor synchronises (CostHook.synchronizes) and the bucket compresses
 * a tensor. A synchronising hook holds the backward until its bucket is reduced; the backward
 * and the collectives then take turns, which prices as the backward first and the buckets
 * after it (the same sum, nothing overlapped). */
static int bucket_waits(const DriverRun *run, int k)
{
    const CostModel *cm = run->cost;
    if (!cm->prof) return 0;
    const CostHook *hook = costs_hook(cm->prof, compress_spec(run->w[0].comp));
    if (cm->prof->allgather_overlaps && !(hook && hook->synchronizes)) return 0;
    CompressMsg msgs[COMPRESS_MAX_MSGS];
    CompressCost first = {.prof = NULL}; /* only which message is the compressor's first */
    int nm =
        compress_plan_views(run->w[0].comp, cm->views, cm->order + cm->bucket_start[k],
                            cm->bucket_start[k + 1] - cm->bucket_start[k], cm->levels, msgs, &first);
    if (hook && hook->synchronizes && nm > first.first_msg) return 1;
    if (cm->prof->allgather_overlaps) return 0;
    for (int i = 0; i < nm; i++)
        if (msgs[i].op == COMPRESS_ALLGATHER) return 1;
    return 0;
}

/* At the rendezvous, once the policy has decided: each real tensor's level, that of the small
 * layer it follows (vectors dense), and which buckets wait for the backward. */
void cost_decided(DriverRun *run, long step)
{
    CostModel *cm = run->cost;
    for (int t = 0; t < cm->wl->n_tensors; t++)
        cm->levels[t] = cm->follows[t] >= 0 ? run->dec.level[cm->follows[t]] : 0.0;
    for (int k = 0; cm->ddp && k < cm->n_buckets; k++) cm->bucket_defer[k] = bucket_waits(run, k);
    exec_decided(run, step);
}

/* ---- seconds on the simulated GPU ---- */

/* One message of a plan on comm, after the profile's fixed cost of a call; returns its payload
 * bytes. */
static double cost_message(Worker *me, const CompressMsg *m, Comm *comm, int rank)
{
    DriverRun *run = me->run;
    const CostProfile *prof = run->cost->prof;
    if (prof) sg_actor_sleep_for(prof->collective_s);
    const int beside = run->cost->ddp; /* the stream's: the backward runs beside it */
    if (beside) cost_comm_begin(me);
    double bytes = (double)m->count;
    if (m->op == COMPRESS_ALLGATHER) {
        coll_cost_allgather(comm, rank, m->count);
    } else {
        size_t es = m->op == COMPRESS_ALLREDUCE_F16 ? 2 : 4;
        coll_cost_allreduce(comm, rank, m->count, es);
        bytes *= (double)es;
    }
    if (beside) cost_comm_end(me);
    return bytes;
}

static void cycle_wait(Worker *me, int queued)
{
    double w = cost_cycle_wait_s(me->run->cost->prof, queued);
    if (w > 0) sg_actor_sleep_for(w);
}

/* Compressor work of `seconds` on the GPU, booked as compression and noted as `name`. */
static void compress_work(Worker *me, TimelineLane lane, const char *name, double seconds,
                          const char *args, double *split)
{
    double t0 = simgrid_get_clock();
    split[COST_COMPRESS] += cost_gpu_exec(me, seconds * sg_host_get_speed(sg_host_self()));
    double t1 = simgrid_get_clock();
    cost_span(me, lane, "compression", name, t0, t1, args);
    cost_note(me, COST_COMPRESS, t0, t1);
}

/* Communication from t0 to now, booked, noted and drawn as one span carrying its bytes. */
static void comm_done(Worker *me, TimelineLane lane, double t0, double bytes, int bucket, int n,
                      double *split)
{
    double t1 = simgrid_get_clock();
    split[COST_COMM] += t1 - t0;
    char args[96] = "";
    if (me->run->tl && timeline_wants(me->run->tl, me->cost_step))
        snprintf(args, sizeof args, "\"bucket\":%d,\"tensors\":%d,\"bytes\":%.0f", bucket, n,
                 bytes);
    cost_span(me, lane, "communication", "collectives", t0, t1, args);
    cost_note(me, COST_COMM, t0, t1);
}

/* The collectives of the tensors todo[0..n) at this step's levels with the compressor's work
 * around them: the encode, a rendezvous of the ranks (the time the others wait for the
 * slowest), then each message, the work between the compressor's messages, and the decode
 * (cost_phases). bar: the barrier of whoever calls (workers or their streams); queued: the
 * tensors were ready while the previous ones were reduced (cycle_wait). Notes each part in the
 * worker's spans and adds its books to split[]. */
static void cost_reduce(Worker *me, const int *todo, int n, sg_bar_t bar, TimelineLane lane,
                        int bucket, int queued, double *split)
{
    DriverRun *run = me->run;
    CostModel *cm = run->cost;
    CompressMsg msgs[COMPRESS_MAX_MSGS];
    CompressCost cc = {.prof = cm->prof};
    int nm = compress_plan_views(me->comp, cm->views, todo, n, cm->levels, msgs, &cc);
    const int last = cost_phases(run, nm, &cc);
    /* the timeline's args, built only when it keeps this step */
    char args[96] = "";
    if (run->tl && timeline_wants(run->tl, me->cost_step))
        snprintf(args, sizeof args, "\"bucket\":%d,\"tensors\":%d", bucket, n);
    compress_work(me, lane, "encode", cc.phase_s[0], args, split);
    double t1 = simgrid_get_clock();
    sg_barrier_wait(bar);
    double t2 = simgrid_get_clock();
    split[COST_WAIT] += t2 - t1;
    cost_span(me, lane, "wait", "wait for the slowest", t1, t2, args);
    cost_note(me, COST_WAIT, t1, t2);
    double bytes = 0, total = 0;
    cycle_wait(me, queued);
    for (int i = 0; i < nm; i++) {
        const int p = i - cc.first_msg; /* the compressor's work before its p-th message */
        if (p > 0 && cc.phase_s[p] > 0) {
            comm_done(me, lane, t2, bytes, bucket, n, split);
            compress_work(me, lane, "between collectives", cc.phase_s[p], args, split);
            t2 = simgrid_get_clock();
            bytes = 0;
            cycle_wait(me, 0); /* a new round of collectives */
        }
        int rank;
        Comm *comm = islands_step_comm(me, &rank); /* islands.c */
        double b = cost_message(me, &msgs[i], comm, rank);
        bytes += b;
        total += b;
    }
    comm_done(me, lane, t2, bytes, bucket, n, split);
    if (args[0]) /* the decode's args: the bucket's bytes */
        snprintf(args, sizeof args, "\"bucket\":%d,\"tensors\":%d,\"bytes\":%.0f", bucket, n,
                 total);
    if (last > 0) compress_work(me, lane, "decode", cc.phase_s[last], args, split);
}

/* ---- the stream actor (overlap ddp) ---- */

static void stream_actor(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    Worker *me = sg_actor_self_get_data();
    CostModel *cm = me->run->cost;
    double ignored[COST_KINDS];
    int queued = 0;
    for (;;) {
        sg_sem_acquire(me->stream.ready);
        if (me->stream.quit) break;
        int k = me->stream.next++;
        const int *todo = cm->order + cm->bucket_start[k];
        int n = cm->bucket_start[k + 1] - cm->bucket_start[k];
        cost_reduce(me, todo, n, cm->stream_bar, TL_LANE_COMM, k, k > 0 && queued, ignored);
        queued = sg_sem_get_capacity(me->stream.ready) > 0; /* the next bucket is ready already */
        if (me->stream.next == cm->n_buckets) {
            me->stream.next = 0;
            sg_sem_release(me->stream.done);
        }
    }
}

/* The streams' rendezvous (the exposed wait of each bucket's collectives), under ddp. */
static int ddp_create(DriverRun *run, BwError *err)
{
    (void)err;
    CostModel *cm = run->cost;
    if (cm->ddp) cm->stream_bar = sg_barrier_init((unsigned)run->P);
    return BW_OK;
}

static void ddp_free(DriverRun *run)
{
    if (run->cost->stream_bar) sg_barrier_destroy(run->cost->stream_bar);
    run->cost->stream_bar = NULL;
}

static void ddp_start(DriverRun *run)
{
    if (!run->cost->ddp) return;
    for (int w = 0; w < run->P; w++) {
        Worker *me = &run->w[w];
        me->stream.ready = sg_sem_init(0);
        me->stream.done = sg_sem_init(0);
        run_actor_start(run, w, "stream", stream_actor, me);
    }
}

static void ddp_stop(Worker *me)
{
    if (!me->stream.ready) return;
    me->stream.quit = 1;
    sg_sem_release(me->stream.ready);
}

/* ---- a step ---- */

/* The forward of every layer, as one execution (nothing else runs on the GPU meanwhile). */
static double cost_forward(Worker *me, int b)
{
    CostModel *cm = me->run->cost;
    double f = 0;
    for (int l = 0; l < cm->wl->n_layers; l++)
        f += workload_fwd_flops(cm->wl, l, b, sg_host_get_speed(sg_host_self()), cm->peak_ratio);
    double t0 = simgrid_get_clock();
    double d = cost_gpu_exec(me, f);
    cost_span(me, TL_LANE_COMPUTE, "compute", "forward", t0, t0 + d, NULL);
    return d;
}

/* The backward from the last layer to the first, executed in runs of layers that end where a
 * bucket fills; each full bucket is handed to the stream (ddp), except that from the first
 * bucket that waits for the backward (CostModel.bucket_defer) on, they are handed over at its
 * end (the stream reduces them in order). Returns the seconds. */
static double cost_backward(Worker *me, int b)
{
    CostModel *cm = me->run->cost;
    const Workload *wl = cm->wl;
    const double speed = sg_host_get_speed(sg_host_self());
    double total = 0, f = 0;
    int k = 0, from = wl->n_layers - 1, held = 0;
    for (int l = wl->n_layers - 1; l >= 0; l--) {
        f += workload_bwd_flops(wl, l, b, speed, cm->peak_ratio);
        int full = 0;
        while (cm->ddp && k < cm->n_buckets && cm->bucket_layer[k] == l) k++, full++;
        if (!full && l > 0) continue;
        double t0 = simgrid_get_clock();
        double d = cost_gpu_exec(me, f);
        total += d;
        char name[160];
        snprintf(name, sizeof name, "backward %s .. %s", wl->layers[from].name, wl->layers[l].name);
        cost_span(me, TL_LANE_COMPUTE, "compute", name, t0, t0 + d, NULL);
        for (int i = k - full; i < k; i++) {
            held += held || cm->bucket_defer[i];
            if (!held) sg_sem_release(me->stream.ready);
        }
        f = 0;
        from = l - 1;
    }
    for (; held > 0; held--) sg_sem_release(me->stream.ready);
    return total;
}

/* The part of [t0, t1] the stream spent on each kind of work; the rest is communication (the
 * stream is never idle in that window: every bucket is full by then). */
static void exposed_split(const Worker *me, double t0, double t1, double *split)
{
    double covered = 0;
    for (int i = 0; i < me->n_spans; i++) {
        const CostSpan *s = &me->spans[i];
        double a = fmax(s->t0, t0), b = fmin(s->t1, t1);
        if (b > a) {
            split[s->kind] += b - a;
            covered += b - a;
        }
    }
    split[COST_COMM] += fmax(0.0, (t1 - t0) - covered);
}

/* Periodic mode's averaging (or DiLoCo's outer exchange) after the optimiser, the real model's
 * parameters, dense: nothing in the step to overlap with. Streaming DiLoCo with tau > 0 posts
 * its exchange to the worker's lane (outer_lane.c) instead, so that it overlaps the next tau
 * steps, and the step where the fragment is applied waits only for what remains of it. */
static void cost_average(Worker *me, long step, int averaged, double *split)
{
    DriverRun *run = me->run;
    CostModel *cm = run->cost;
    if (outer_lane_of(me)) {
        /* a fragment applied now, or eager updates' last round (outer_eager.c) */
        if (outer_applies_at(run, step) || (averaged && run->outer.eager.on))
            split[COST_COMM] += outer_lane_wait(me, step);
        if (!averaged) return;
        const size_t floats = outer_exchange_floats(run, cm->wl->n_params); /* outer.c */
        const double fixed = cm->prof ? cm->prof->collective_s : 0;
        outer_lane_post(me, floats, cost_cycle_wait_s(cm->prof, 0) + fixed, step);
        return;
    }
    if (!averaged) return;
    double t1 = simgrid_get_clock();
    sg_barrier_wait(run->bar);
    double t2 = simgrid_get_clock();
    const CompressMsg avg = {COMPRESS_ALLREDUCE_F32,
                             outer_exchange_floats(run, cm->wl->n_params)}; /* outer.c */
    cycle_wait(me, 0);
    cost_message(me, &avg, run->comm, me->rank);
    double t3 = simgrid_get_clock();
    split[COST_WAIT] += t2 - t1;
    split[COST_COMM] += t3 - t2;
    cost_span(me, TL_LANE_COMM, "wait", "wait for the slowest", t1, t2, NULL);
    cost_span(me, TL_LANE_COMM, "communication",
              run->outer.on ? "outer exchange" : "average parameters", t2, t3, NULL);
}

/* The simulated part of a costed step, after the rendezvous and the real update, into books.
 * averaged: periodic mode averaged the parameters at this step. */
static void ddp_step(Worker *me, const StepState *st, int averaged, int last, StepBooks *books)
{
    (void)last;
    DriverRun *run = me->run;
    CostModel *cm = run->cost;
    double *split = books->split;
    me->cost_step = st->step;
    me->cost_mult = cost_step_multiplier(me);
    me->n_spans = 0;
    const int b = driver_price_batch(run->cfg, st->b);
    double compute = cost_forward(me, b);
    compute += cost_backward(me, b);
    if (cm->ddp) {
        double t0 = simgrid_get_clock();
        sg_sem_acquire(me->stream.done);
        double t1 = simgrid_get_clock();
        exposed_split(me, t0, t1, split);
    } else if (!run->periodic || islands_bucketed(run)) {
        if (run->cfg->overlap == OVERLAP_TENSOR) /* in the model's order, as a loop over them */
            for (int t = 0; t < cm->wl->n_tensors; t++)
                cost_reduce(me, &t, 1, run->bar, TL_LANE_COMM, t, t > 0, split);
        else
            cost_reduce(me, cm->order, cm->wl->n_tensors, run->bar, TL_LANE_COMM, 0, 0, split);
    }
    double t0 = simgrid_get_clock(), isl = islands_cost(me, cm->wl->n_params); /* islands.c */
    if (isl > 0)
        cost_span(me, TL_LANE_COMM, "communication", "island allreduce", t0, t0 + isl, NULL);
    split[COST_COMM] += isl;
    t0 = simgrid_get_clock();
    double opt = cost_gpu_exec(me, cost_opt_seconds(run) * sg_host_get_speed(sg_host_self()));
    cost_span(me, TL_LANE_COMPUTE, "compute", "optimizer", t0, t0 + opt, NULL);
    compute += opt;
    cost_average(me, st->step, averaged, split);
    books->compute = compute;
}

const StepExec exec_ddp = {
    .version = STEP_EXEC_VERSION,
    .name = "ddp",
    .create = ddp_create,
    .free = ddp_free,
    .start = ddp_start,
    .step = ddp_step,
    .stop = ddp_stop,
};
