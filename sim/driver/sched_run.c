/* sched_run.c: a scheduled step (sched_impl.h): the schedule and its engine for a run, the
 * dispatcher actor (ByteScheduler's scheduling loop, bytescheduler/common/bytecore.py: the
 * highest-priority ready partition goes while the credit lasts, a finished one returns its
 * credit), one lane actor per worker and lane, and the compute side of a step.
 *
 * The compute side, per worker: the forward, then the backward in reverse layer order handing
 * each unit over once its last gradient is computed (as DDP hands over a full bucket). Under
 * --overlap ddp every unit must be done before the optimiser and the next step, as today. Under
 * --overlap layer the update is per layer and runs just before that layer's next forward, once
 * the units holding the layer's tensors are done on this worker: the forward of step t+1 waits
 * only for what it reads (ByteScheduler's and P3's layer-wise dependency), so the last units of
 * step t overlap it; the run's last step drains and updates at its end.
 *
 * The books, as cost.c keeps them: compute (forward, backward, updates), and of the time the
 * compute lane waits (for a layer's update, or the last step's drain), what the worker's lanes
 * were doing: the compressor's work, communication (a partition, or the dispatcher's launch of
 * one), waiting for the slowest worker to hand a unit over; the rest is communication (a credit
 * that another worker returns a moment later). Layer-wise, the evaluation after step t, and the
 * bytes of step t's row, are stamped when rank 0 has applied step t's update. */
#include "sched_impl.h"
#include "xalloc.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <simgrid/actor.h>
#include <simgrid/engine.h>
#include <simgrid/host.h>

#include "engine.h"
#include "optim.h"

/* ---- the engine ---- */

/* Each layer's update on the GPU, layer-wise (the plan's: plan_layer_updates), and the last
 * layer that has one. */
static int layer_updates(DriverRun *run, SchedEngine *E, BwError *err)
{
    const int L = run->cost->wl->n_layers;
    if (!(E->opt_s = bw_xcalloc((size_t)L, sizeof *E->opt_s, "sched_run.c: E->opt_s")))
        return bw_fail(err, BW_ERUNTIME, "out of memory");
    plan_layer_updates(run, E->opt_s);
    for (int l = 0; l < L; l++)
        if (E->opt_s[l] > 0) E->last_updated = l;
    return BW_OK;
}

static int plans_alloc(SchedEngine *E, int n_tensors, int n_layers, int P)
{
    const size_t up = (size_t)n_tensors * (size_t)P;
    for (int k = 0; k < 2; k++) {
        SchedPlan *p = &E->plans[k];
        p->step = -1;
        p->units = bw_xcalloc((size_t)n_tensors, sizeof *p->units, "sched_run.c: p->units");
        p->rank_stage = bw_xcalloc(up, sizeof *p->rank_stage, "sched_run.c: p->rank_stage");
        p->work_queued = bw_xcalloc(up, sizeof *p->work_queued, "sched_run.c: p->work_queued");
        p->handed_at = bw_xcalloc(up, sizeof *p->handed_at, "sched_run.c: p->handed_at");
        p->layer_left = bw_xcalloc((size_t)P * (size_t)n_layers, sizeof *p->layer_left,
                                   "sched_run.c: p->layer_left");
        p->units_left = bw_xcalloc((size_t)P, sizeof *p->units_left, "sched_run.c: p->units_left");
        if (!p->units || !p->rank_stage || !p->work_queued || !p->handed_at || !p->layer_left ||
            !p->units_left)
            return 0;
    }
    return 1;
}

/* Lanes with parameter servers: one more than fifo's partitions of the model, within
 * [SCHED_PS_LANES, SCHED_PS_MAX_LANES]. */
static int ps_lanes(const Workload *wl)
{
    double n = 1;
    for (int t = 0; t < wl->n_tensors; t++)
        n += ceil(4.0 * (double)wl->tensors[t].numel / SCHEDULE_PS_PARTITION_BYTES);
    return n < SCHED_PS_LANES       ? SCHED_PS_LANES
           : n > SCHED_PS_MAX_LANES ? SCHED_PS_MAX_LANES
                                    : (int)n;
}

/* The lanes: lane 0 is the run's communicator; with parameter servers each other lane is a
 * sibling (mailboxes of its own, the run's books), at the run's allgather factor. */
static int lanes_create(DriverRun *run, SchedEngine *E)
{
    const RunConfig *cfg = run->cfg;
    E->ps = coll_algo_servers(cfg->algo);
    E->partition_s = costs_partition_s(run->cost->prof, cfg->schedule);
    E->servers = coll_ps_servers(run->comm);
    E->lanes = E->ps ? ps_lanes(run->cost->wl) : 1;
    E->lane_comm = bw_xcalloc((size_t)E->lanes, sizeof *E->lane_comm, "sched_run.c: E->lane_comm");
    E->lane_busy = bw_xcalloc((size_t)E->lanes, sizeof *E->lane_busy, "sched_run.c: E->lane_busy");
    if (!E->lane_comm || !E->lane_busy) return 0;
    E->lane_comm[0] = run->comm;
    const CostProfile *prof = run->cost->prof;
    for (int k = 1; k < E->lanes; k++) {
        if (!(E->lane_comm[k] = coll_comm_create_sibling(&run->cluster, run->comm))) return 0;
        if (prof)
            coll_comm_set_allgather_factor(E->lane_comm[k],
                                           driver_allgather_factor(prof, cfg, &run->cluster));
    }
    E->ranks = bw_xcalloc((size_t)run->P, sizeof *E->ranks, "sched_run.c: E->ranks");
    if (!E->ranks) return 0;
    const int L = run->cost->wl->n_layers;
    for (int r = 0; r < run->P; r++) {
        SchedRank *R = &E->ranks[r];
        R->q = bw_xcalloc((size_t)E->lanes, sizeof *R->q, "sched_run.c: R->q");
        R->layer_done = bw_xmalloc(sizeof *R->layer_done * (size_t)L, "sched_run.c: R->layer_done");
        if (!R->q || !R->layer_done) return 0;
        for (int l = 0; l < L; l++) R->layer_done[l] = -1;
        for (int k = 0; k < E->lanes; k++) R->q[k].sem = sg_sem_init(0);
        R->progress = sg_sem_init(0);
    }
    E->wake = sg_sem_init(0);
    return 1;
}

int sched_create(DriverRun *run, BwError *err)
{
    const RunConfig *cfg = run->cfg;
    CostModel *cm = run->cost;
    SchedEngine *E = bw_xcalloc(1, sizeof *E, "sched_run.c: E");
    cm->sched = E;
    if (!E) return bw_fail(err, BW_ERUNTIME, "out of memory");
    ScheduleContext ctx;
    int rc = sched_context(cfg, cm->wl, run->cluster.gpu_flops, cm->peak_ratio, &ctx, &E->tensors,
                           &E->layers, err);
    if (!rc)
        rc = schedule_create(cfg->schedule ? cfg->schedule : SCHEDULE_DEFAULT, "--schedule", &ctx,
                             &E->sched, err);
    if (rc) return rc;
    const int n = cm->wl->n_tensors;
    E->layerwise = cfg->overlap == OVERLAP_LAYER;
    E->dec.priority =
        bw_xcalloc((size_t)n, sizeof *E->dec.priority, "sched_run.c: E->dec.priority");
    E->tensor_bytes =
        bw_xcalloc((size_t)n, sizeof *E->tensor_bytes, "sched_run.c: E->tensor_bytes");
    if (!E->dec.priority || !E->tensor_bytes || !plans_alloc(E, n, cm->wl->n_layers, run->P) ||
        !lanes_create(run, E))
        return bw_fail(err, BW_ERUNTIME, "out of memory for %d workers", run->P);
    run->stamps.eval_pending_row = -1;
    return layer_updates(run, E, err);
}

void sched_record(DriverRun *run)
{
    const SchedEngine *E = run->cost ? run->cost->sched : NULL;
    if (!E) return;
    run->res->partitions_per_step =
        E->steps_planned ? E->parts_total / (double)E->steps_planned : 0;
    if (E->sched)
        snprintf(run->res->schedule, sizeof run->res->schedule, "%s", schedule_spec(E->sched));
    snprintf(run->res->schedule_state, sizeof run->res->schedule_state, "%s", E->state);
}

void sched_free(DriverRun *run)
{
    SchedEngine *E = run->cost ? run->cost->sched : NULL;
    if (!E) return;
    schedule_free(E->sched);
    free(E->dec.priority);
    free(E->tensor_bytes);
    free(E->tensors);
    free(E->layers);
    sched_plans_free(E);
    for (int r = 0; E->ranks && r < run->P; r++) {
        SchedRank *R = &E->ranks[r];
        for (int k = 0; R->q && k < E->lanes; k++) {
            free(R->q[k].items);
            if (R->q[k].sem) sg_sem_destroy(R->q[k].sem);
        }
        free(R->q);
        free(R->layer_done);
        if (R->progress) sg_sem_destroy(R->progress);
    }
    free(E->ranks);
    for (int k = 1; E->lane_comm && k < E->lanes; k++) coll_comm_free(E->lane_comm[k]);
    free(E->lane_comm);
    free(E->lane_busy);
    if (E->wake) sg_sem_destroy(E->wake);
    free(E->opt_s);
    free(E);
    run->cost->sched = NULL;
}

/* ---- the dispatcher ---- */

static int credit_allows(const SchedEngine *E)
{
    const ScheduleDecision *d = &E->dec;
    return (d->credit_partitions == 0 || E->in_flight_parts < d->credit_partitions) &&
           (d->credit_bytes == 0 || E->in_flight_bytes < d->credit_bytes);
}

/* A lane for the next partition: lane 0 (its queue) without parameter servers, else a free one
 * of the others; -1: none free. */
static int lane_for(const SchedEngine *E)
{
    if (!E->ps) return 0;
    for (int k = 1; k < E->lanes; k++)
        if (!E->lane_busy[k]) return k;
    return -1;
}

/* Hands the next partition of GROUP s to every rank's lane. */
static void launch(DriverRun *run, SchedPlan *p, int s, int lane)
{
    SchedEngine *E = run->cost->sched;
    SchedStage *G = &p->stages[s];
    const int i = G->first_part + G->next_part++;
    if (G->next_part == G->n_parts) sched_group_exhausted(p, s);
    SchedPart *x = &p->parts[i];
    x->lane = lane;
    x->server = E->ps ? (int)(E->next_server++ % E->servers) : -1;
    E->in_flight_parts++;
    E->in_flight_bytes += x->bytes;
    E->parts_total++;
    if (E->ps) E->lane_busy[lane] = 1;
    for (int r = 0; r < run->P; r++)
        sched_queue_push(&E->ranks[r].q[lane], (SchedItem){ITEM_PART, (int)(p->step & 1), i});
}

/* While the credit and a lane allow: the best ready partition, after the plan's fixed cost of a
 * call (STAGE_COLL.call_s) and the profile's cost of one of this schedule's partitions
 * (ByteScheduler's core), and the plan's round before its group (STAGE_ROUND: half of a
 * background thread's cycle) when the dispatcher was idle (cost.c's rule for a queued bucket). */
static void dispatch(DriverRun *run)
{
    SchedEngine *E = run->cost->sched;
    for (;;) {
        SchedPlan *p;
        int s, lane;
        if (!credit_allows(E) || (s = sched_best_group(E, &p)) < 0 || (lane = lane_for(E)) < 0)
            return;
        const SchedStage *G = &p->stages[s];
        const double t0 = simgrid_get_clock();
        const int busy = E->in_flight_parts > 0 || G->next_part > 0 || G->queued;
        const double wait = (busy ? 0.0 : G->round_s) + G->call_s + E->partition_s;
        if (wait > 0) sg_actor_sleep_for(wait);
        const double t1 = simgrid_get_clock();
        for (int r = 0; t1 > t0 && r < run->P; r++) cost_note(&run->w[r], COST_COMM, t0, t1);
        launch(run, p, s, lane);
    }
}

static void dispatcher_actor(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    DriverRun *run = sg_actor_self_get_data();
    SchedEngine *E = run->cost->sched;
    for (;;) {
        sg_sem_acquire(E->wake);
        if (E->quit) break;
        dispatch(run);
    }
}

/* ---- the lanes ---- */

/* A span of a lane's item, on that lane's thread of the timeline, for the step it belongs to. */
static void lane_span(Worker *me, int lane, long step, const char *cat, const char *name, double t0,
                      double t1, const char *args)
{
    Timeline *tl = me->run->tl;
    if (tl && t1 > t0 && timeline_wants(tl, step))
        timeline_span(tl, me->rank, (TimelineLane)(TL_LANE_COMM + lane), cat, name, t0, t1, step,
                      args);
}

static void run_work(Worker *me, int lane, SchedPlan *p, int s)
{
    const SchedStage *S = &p->stages[s];
    const double t0 = simgrid_get_clock();
    cost_gpu_exec(me, S->seconds * sg_host_get_speed(sg_host_self()));
    const double t1 = simgrid_get_clock();
    cost_note(me, COST_COMPRESS, t0, t1);
    char args[64] = "";
    if (me->run->tl) snprintf(args, sizeof args, "\"unit\":%d", S->unit);
    lane_span(me, lane, p->step, "compression", S->name, t0, t1, args);
    sched_work_done(me->run, me->rank, p, s);
}

static void run_part(Worker *me, int lane, SchedPlan *p, int i)
{
    SchedEngine *E = me->run->cost->sched;
    const SchedPart *x = &p->parts[i];
    Comm *c = E->lane_comm[lane];
    const double t0 = simgrid_get_clock();
    const size_t es = x->op == COMPRESS_ALLREDUCE_F16 ? 2 : 4;
    cost_comm_begin(me); /* the backward, or the next forward, runs beside it */
    if (x->op == COMPRESS_ALLGATHER)
        coll_cost_allgather(c, me->rank, x->count);
    else if (E->ps)
        coll_cost_ps(c, me->rank, x->server, x->count, es);
    else
        coll_cost_allreduce(c, me->rank, x->count, es);
    cost_comm_end(me);
    const double t1 = simgrid_get_clock();
    cost_note(me, COST_COMM, t0, t1);
    if (me->run->tl && timeline_wants(me->run->tl, p->step)) {
        const SchedUnit *U = &p->units[x->unit];
        const WorkloadTensor *T = &me->run->cost->wl->tensors[U->first_tensor];
        char args[256];
        snprintf(args, sizeof args,
                 "\"unit\":%d,\"first tensor\":\"%.60s\",\"tensors\":%d,\"partition\":%d,"
                 "\"of\":%d,\"priority\":%.15g,\"bytes\":%.0f,\"server\":%d",
                 x->unit, T->name, U->n, x->index + 1, x->of, U->priority, x->bytes, x->server);
        lane_span(me, lane, p->step, "communication", x->of > 1 ? "partition" : "collective", t0,
                  t1, args);
    }
    sched_part_done(me->run, me->rank, p, i);
}

static void lane_actor(int argc, char **argv)
{
    Worker *me = sg_actor_self_get_data();
    const int lane = argc > 1 ? atoi(argv[1]) : 0;
    SchedEngine *E = me->run->cost->sched;
    SchedRank *R = &E->ranks[me->rank];
    SchedQueue *q = &R->q[lane];
    for (;;) {
        sg_sem_acquire(q->sem);
        if (q->n == 0) {
            if (R->quit) break;
            continue;
        }
        const SchedItem it = q->items[q->head];
        q->head = (q->head + 1) % q->cap;
        q->n--;
        SchedPlan *p = &E->plans[it.plan];
        if (it.kind == ITEM_WORK)
            run_work(me, lane, p, it.index);
        else
            run_part(me, lane, p, it.index);
    }
}

void sched_start(DriverRun *run)
{
    SchedEngine *E = run->cost->sched;
    sg_actor_t d = sg_actor_init("dispatcher", run_host(run, 0));
    sg_actor_set_data(d, run);
    sg_actor_start(d, dispatcher_actor, 0, NULL);
    for (int w = 0; w < run->P; w++)
        for (int k = 0; k < E->lanes; k++) {
            char name[32], lane[16];
            snprintf(name, sizeof name, "lane%d.%d", w, k);
            snprintf(lane, sizeof lane, "%d", k);
            char *argv[] = {name, lane, NULL};
            sg_actor_t a = sg_actor_init(name, run_host(run, w));
            sg_actor_set_data(a, &run->w[w]);
            sg_actor_start(a, lane_actor, 2, argv);
        }
}

void sched_stop(Worker *me)
{
    SchedEngine *E = me->run->cost->sched;
    SchedRank *R = &E->ranks[me->rank];
    R->quit = 1;
    for (int k = 0; k < E->lanes; k++) sg_sem_release(R->q[k].sem);
    if (++E->quit_workers == me->run->P) {
        E->quit = 1;
        sg_sem_release(E->wake);
    }
}

const char *sched_state(const DriverRun *run)
{
    return run->cost && run->cost->sched ? run->cost->sched->state : NULL;
}

int sched_lanes(const DriverRun *run)
{
    return run->cost && run->cost->sched ? run->cost->sched->lanes : 1;
}
