/* cost.c: exec_ddp, the actors' clock of a costed step's plan (step_plan.h; the cost model and
 * the plan are made in exec.c and step_plan.c). What a step costs when it is costed layer by
 * layer (a workload profile, or --overlap ddp): the real model's forward, then its backward in
 * reverse layer order, its tensors' collectives at the levels of the small-model layers they
 * follow, the compressors' encode and decode and the optimiser on the simulated GPU. The small
 * model's real gradients are reduced beforehand on a zero-time communicator (CostModel.data), so
 * the dynamics are the uncosted run's (bit for bit with analytic collectives, which also sum in
 * rank order) and only the prices differ.
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
 * backward to end unless the profile's allgathers overlap it, as does a bucket that a
 * synchronising hook compresses (PowerSGD's in PyTorch; PlanBucket.defer, step_plan.c). On
 * islands in periodic mode with --workload or --overlap the buckets run on the worker's island
 * (the stage's PlanComm). */
#include "driver_impl.h"

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

/* ---- seconds on the simulated GPU ---- */

/* A collective stage of the plan on the communicator it names (the run's, or the worker's
 * island's: islands_plan_comm), after its fixed cost of a call; returns its payload bytes. */
static double cost_message(Worker *me, const PlanStage *s)
{
    DriverRun *run = me->run;
    const CompressMsg *m = &s->msg;
    int rank;
    Comm *comm = islands_plan_comm(me, s->comm, &rank); /* islands.c */
    if (s->call_s != PLAN_NO_CALL) sg_actor_sleep_for(s->call_s);
    const int beside = run->cost->ddp; /* the stream's: the backward runs beside it */
    if (beside) cost_comm_begin(me);
    double bytes = (double)m->count;
    const CollStats before = *coll_stats(comm, rank); /* hybrid's books to fold (shard_comms.c) */
    if (m->op == COMPRESS_ALLGATHER) {
        coll_cost_allgather(comm, rank, m->count);
    } else {
        size_t es = m->op == COMPRESS_ALLREDUCE_F16 ? 2 : 4;
        coll_cost_allreduce(comm, rank, m->count, es);
        bytes *= (double)es;
    }
    shard_comms_fold(me, s->comm, &before);
    if (beside) cost_comm_end(me);
    return bytes;
}

/* A round of collectives: the profile's cycle (STAGE_ROUND), none when queued. */
static void cycle_wait(double seconds)
{
    if (seconds > 0) sg_actor_sleep_for(seconds);
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

/* The ranks' rendezvous before a bucket's collectives: the time the others wait for the slowest,
 * booked, noted and drawn. bar: the barrier of whoever calls (workers or their streams). */
static double cost_rendezvous(Worker *me, sg_bar_t bar, TimelineLane lane, const char *args,
                              double *split)
{
    double t1 = simgrid_get_clock();
    sg_barrier_wait(bar);
    double t2 = simgrid_get_clock();
    split[COST_WAIT] += t2 - t1;
    cost_span(me, lane, "wait", "wait for the slowest", t1, t2, args);
    cost_note(me, COST_WAIT, t1, t2);
    return t2;
}

/* A Horovod plan's own stages (step_plan_hvd.c): the thread's next cycle (queued: its last work
 * ended now with this bucket ready), the cycle's negotiation on the run's communicator (no
 * interference: the controller's MPI or Gloo call is the host's), a copy of the fusion buffer. */
static void hvd_stage(Worker *me, const PlanStage *s, int queued)
{
    if (s->kind == STAGE_CYCLE) {
        const double now = simgrid_get_clock();
        const double at = costs_horovod_cycle_start(now, me->stream.hvd_last, s->seconds, queued);
        cycle_wait(at - now);
        me->stream.hvd_last = at;
    } else if (s->kind == STAGE_NEGOTIATE) {
        int rank;
        Comm *comm = islands_plan_comm(me, s->comm, &rank); /* islands.c */
        if (s->msg.op == COMPRESS_ALLGATHER)
            coll_cost_allgather(comm, rank, s->msg.count);
        else
            coll_cost_allreduce(comm, rank, s->msg.count, 4);
    } else if (s->kind == STAGE_FUSE) {
        cycle_wait(s->seconds);
    }
}

/* Bucket k of the plan on the clock of the worker's actors (or its stream's): its stages in
 * order (step_plan.h), each part noted in the worker's spans and its books added to split[].
 * queued: the tensors were ready while the previous ones were reduced (the first round waits
 * for no cycle). */
static void cost_reduce(Worker *me, int k, sg_bar_t bar, TimelineLane lane, int queued,
                        double *split)
{
    DriverRun *run = me->run;
    const StepPlan *p = &run->cost->plan;
    const PlanBucket *b = &p->bucket[k];
    /* the timeline's args, built only when it keeps this step */
    char args[96] = "";
    const int tl = run->tl && timeline_wants(run->tl, me->cost_step);
    if (tl) snprintf(args, sizeof args, "\"bucket\":%d,\"tensors\":%d", k, b->n_tensors);
    double t2 = simgrid_get_clock(), bytes = 0, total = 0;
    int open = 1; /* communication since t2 not booked yet */
    for (int i = b->first_stage; i < b->first_stage + b->n_stages; i++) {
        const PlanStage *s = &p->stage[i];
        switch (s->kind) {
        case STAGE_ENCODE:
            compress_work(me, lane, "encode", s->seconds, args, split);
            break;
        case STAGE_RENDEZVOUS:
            t2 = cost_rendezvous(me, bar, lane, args, split);
            break;
        case STAGE_ROUND:
            cycle_wait(s->queueable && queued ? 0.0 : s->seconds);
            break;
        case STAGE_BETWEEN:
            comm_done(me, lane, t2, bytes, k, b->n_tensors, split);
            compress_work(me, lane, "between collectives", s->seconds, args, split);
            t2 = simgrid_get_clock();
            bytes = 0;
            break;
        case STAGE_COLL: {
            const double m = cost_message(me, s);
            bytes += m;
            total += m;
            break;
        }
        case STAGE_CYCLE:
        case STAGE_NEGOTIATE:
        case STAGE_FUSE:
            hvd_stage(me, s, queued);
            break;
        case STAGE_DECODE:
            comm_done(me, lane, t2, bytes, k, b->n_tensors, split);
            open = 0;
            if (tl) /* the decode's args: the bucket's bytes */
                snprintf(args, sizeof args, "\"bucket\":%d,\"tensors\":%d,\"bytes\":%.0f", k,
                         b->n_tensors, total);
            compress_work(me, lane, "decode", s->seconds, args, split);
            break;
        default:
            break;
        }
    }
    if (open) comm_done(me, lane, t2, bytes, k, b->n_tensors, split);
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
        cost_reduce(me, k, cm->stream_bar, TL_LANE_COMM, k > 0 && queued, ignored);
        queued = sg_sem_get_capacity(me->stream.ready) > 0; /* the next bucket is ready already */
        if (me->stream.next == cm->plan.n_buckets) {
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
    return fsdp_lanes_create(run, err); /* ZeRO-3's units (cost_shard.c) */
}

static void ddp_free(DriverRun *run)
{
    if (run->cost->stream_bar) sg_barrier_destroy(run->cost->stream_bar);
    run->cost->stream_bar = NULL;
    fsdp_lanes_free(run);
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
    fsdp_lanes_start(run);
}

static void ddp_stop(Worker *me)
{
    fsdp_lanes_stop(me);
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
 * bucket of the plan fills (PLAN_OVERLAP); each full bucket is handed to the stream, except that
 * from the first bucket that waits for the backward (PlanBucket.defer) on, they are handed over
 * at its end (the stream reduces them in order). Returns the seconds. */
static double cost_backward(Worker *me, int b)
{
    CostModel *cm = me->run->cost;
    const StepPlan *p = &cm->plan;
    const int nb = p->mode == PLAN_OVERLAP ? p->n_buckets : 0;
    const Workload *wl = cm->wl;
    const double speed = sg_host_get_speed(sg_host_self());
    double total = 0, f = 0;
    int k = 0, from = wl->n_layers - 1, held = 0;
    me->stream.hvd_last = simgrid_get_clock(); /* Horovod's cycles start with the backward */
    for (int l = wl->n_layers - 1; l >= 0; l--) {
        f += workload_bwd_flops(wl, l, b, speed, cm->peak_ratio);
        int full = 0;
        while (k < nb && p->bucket[k].layer == l) k++, full++;
        if (!full && l > 0) continue;
        double t0 = simgrid_get_clock();
        double d = cost_gpu_exec(me, f);
        total += d;
        char name[160];
        snprintf(name, sizeof name, "backward %s .. %s", wl->layers[from].name, wl->layers[l].name);
        cost_span(me, TL_LANE_COMPUTE, "compute", name, t0, t0 + d, NULL);
        for (int i = k - full; i < k; i++) {
            held += held || p->bucket[i].defer;
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

/* Periodic mode's averaging (or DiLoCo's outer exchange) after the optimiser (STAGE_AVERAGE),
 * the real model's parameters, dense: nothing in the step to overlap with. */
static void cost_average(Worker *me, const PlanStage *s, double *split)
{
    DriverRun *run = me->run;
    double t1 = simgrid_get_clock();
    sg_barrier_wait(run->bar);
    double t2 = simgrid_get_clock();
    cycle_wait(s->seconds);
    PlanStage coll = *s;
    coll.kind = STAGE_COLL;
    cost_message(me, &coll);
    double t3 = simgrid_get_clock();
    split[COST_WAIT] += t2 - t1;
    split[COST_COMM] += t3 - t2;
    cost_span(me, TL_LANE_COMM, "wait", "wait for the slowest", t1, t2, NULL);
    cost_span(me, TL_LANE_COMM, "communication",
              run->outer.on ? "outer exchange" : "average parameters", t2, t3, NULL);
}

/* The plan's tail on the worker's clock: the island's ring (islands.c), the optimiser, the
 * averaging; Streaming DiLoCo with tau > 0 posts its exchange to the worker's lane
 * (outer_lane.c) instead, so that it overlaps the next tau steps, and the step where the
 * fragment is applied waits only for what remains of it. Returns the compute's seconds. */
double cost_tail(Worker *me, long step, int averaged, double *split)
{
    DriverRun *run = me->run;
    const StepPlan *p = &run->cost->plan;
    double compute = 0;
    for (int i = p->tail_first; i < p->n_stages; i++) {
        const PlanStage *s = &p->stage[i];
        if (s->if_averaged && !averaged) continue;
        const double t0 = simgrid_get_clock();
        if (s->kind == STAGE_COLL && s->comm == PLAN_COMM_ISLAND) {
            const double isl = islands_cost(me, s->msg.count); /* islands.c */
            if (isl > 0)
                cost_span(me, TL_LANE_COMM, "communication", "island allreduce", t0, t0 + isl,
                          NULL);
            split[COST_COMM] += isl;
        } else if (s->kind == STAGE_COLL) { /* a sharded step's all-gather (step_plan.c) */
            const double bytes = cost_message(me, s);
            const double t1 = simgrid_get_clock();
            char args[64] = "";
            if (run->tl && timeline_wants(run->tl, me->cost_step))
                snprintf(args, sizeof args, "\"bytes\":%.0f", bytes);
            cost_span(me, TL_LANE_COMM, "communication", "all-gather parameters", t0, t1, args);
            cost_note(me, COST_COMM, t0, t1);
            split[COST_COMM] += t1 - t0;
        } else if (s->kind == STAGE_ENCODE || s->kind == STAGE_DECODE) { /* --zeropp qwz */
            compress_work(me, TL_LANE_COMPUTE, s->kind == STAGE_ENCODE ? "quantize" : "dequantize",
                          s->seconds, NULL, split);
        } else if (s->kind == STAGE_OPTIMIZER) {
            const double opt = cost_gpu_exec(me, s->seconds * sg_host_get_speed(sg_host_self()));
            cost_span(me, TL_LANE_COMPUTE, "compute", "optimizer", t0, t0 + opt, NULL);
            compute += opt;
        } else if (s->kind == STAGE_OUTER_WAIT) {
            if (plan_outer_waits(run, step, averaged))
                split[COST_COMM] += outer_lane_wait(me, step);
        } else if (s->kind == STAGE_OUTER_POST) {
            outer_lane_post(me, s->msg.count, s->seconds, step);
        } else if (s->kind == STAGE_AVERAGE) {
            cost_average(me, s, split);
        }
    }
    return compute;
}

/* The simulated part of a costed step, after the rendezvous and the real update, into books:
 * the plan on the clock of the worker's actors. averaged: periodic mode averaged the parameters
 * at this step. */
static void ddp_step(Worker *me, const StepState *st, int averaged, int last, StepBooks *books)
{
    (void)last;
    DriverRun *run = me->run;
    const StepPlan *p = &run->cost->plan;
    double *split = books->split;
    me->cost_step = st->step;
    me->cost_mult = cost_step_multiplier(me);
    me->n_spans = 0;
    const int b = driver_price_batch(run->cfg, st->b);
    double compute;
    if (p->n_units) { /* ZeRO-3's units: their collectives on the FSDP lanes (cost_shard.c) */
        compute = fsdp_step(me, b, split);
    } else {
        compute = cost_forward(me, b);
        compute += cost_backward(me, b);
    }
    if (p->mode == PLAN_OVERLAP && !p->n_units) {
        double t0 = simgrid_get_clock();
        sg_sem_acquire(me->stream.done);
        double t1 = simgrid_get_clock();
        exposed_split(me, t0, t1, split);
    } else if (p->mode == PLAN_AFTER) {
        for (int k = 0; k < p->n_buckets; k++)
            cost_reduce(me, k, run->bar, TL_LANE_COMM, p->bucket[k].queued, split);
    }
    compute += cost_tail(me, st->step, averaged, split);
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
