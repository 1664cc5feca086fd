/* sched_plan.c: a scheduled step's units and their progress (sched_impl.h says what they are):
 * the schedule's context from the workload and the cluster, each step's units, stages and
 * partitions from the step plan's buckets (step_plan_units.c) at the schedule's caps, cut to its
 * partitions and ordered by its priorities, and the state machine the actors drive as units are
 * handed over and stages end. Partitions follow
 * ByteScheduler's (bytescheduler/common/bytetask.py: a tensor cut into pieces of at most the
 * partition size, the last one the rest) and go out in priority order, ties from the first
 * tensor to the last and from a message's first partition to its last, as BytePS's scheduled
 * queue sorts them (byteps/common/scheduled_queue.cc). */
#include "sched_impl.h"
#include "xalloc.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <simgrid/engine.h>

int sched_context(const RunConfig *cfg, const Workload *wl, double speed, double peak_ratio,
                  ScheduleContext *ctx, BellowsScheduleTensor **tensors,
                  BellowsScheduleLayer **layers, BwError *err)
{
    memset(ctx, 0, sizeof *ctx);
    BellowsScheduleTensor *T = bw_xcalloc((size_t)wl->n_tensors, sizeof *T, "sched_plan.c: T");
    BellowsScheduleLayer *L = bw_xcalloc((size_t)wl->n_layers, sizeof *L, "sched_plan.c: L");
    *tensors = T;
    *layers = L;
    if (!T || !L) return bw_fail(err, BW_ERUNTIME, "out of memory");
    for (int t = 0; t < wl->n_tensors; t++) {
        snprintf(T[t].name, sizeof T[t].name, "%s", wl->tensors[t].name);
        T[t].layer = wl->tensors[t].layer;
        T[t].numel = (double)wl->tensors[t].numel;
        T[t].ndim = wl->tensors[t].ndim;
    }
    const int b = driver_price_batch(cfg, cfg->tc.batch);
    for (int l = 0; l < wl->n_layers; l++) {
        snprintf(L[l].name, sizeof L[l].name, "%s", wl->layers[l].name);
        if (speed > 0) {
            L[l].fwd_s = workload_fwd_flops(wl, l, b, speed, peak_ratio) / speed;
            L[l].bwd_s = workload_bwd_flops(wl, l, b, speed, peak_ratio) / speed;
        }
        L[l].first_tensor = wl->layers[l].first_tensor;
        L[l].n_tensors = wl->layers[l].n_tensors;
    }
    const Cluster *c = &cfg->cluster;
    *ctx = (ScheduleContext){
        .n_tensors = wl->n_tensors,
        .tensors = T,
        .n_layers = wl->n_layers,
        .layers = L,
        .model_bytes = 4.0 * (double)wl->n_params,
        .workers = c->workers,
        .bandwidth_Bps = c->platform_file ? 0 : c->bandwidth_Bps,
        .latency_s = c->platform_file ? 0 : c->latency_s,
        .servers = coll_algo_servers(cfg->algo) ? c->ps_servers : 0,
        .layerwise = cfg->overlap == OVERLAP_LAYER,
        .bucket_bytes = cfg->bucket_bytes > 0 ? cfg->bucket_bytes : DRIVER_BUCKET_BYTES,
        .first_bucket_bytes = DRIVER_FIRST_BUCKET_BYTES,
        .collective_s = cfg->costs && !cfg->costs->ideal ? cfg->costs->collective_s : 0};
    snprintf(ctx->algorithm, sizeof ctx->algorithm, "%s", coll_algo_name(cfg->algo));
    return BW_OK;
}

/* ---- a step's plan ---- */

/* Room for one more stage and its per-rank rows. */
static SchedStage *stage_add(SchedPlan *p, int P)
{
    if (p->n_stages == p->cap_stages) {
        const int cap = p->cap_stages ? 2 * p->cap_stages : 64;
        const char *what = "a scheduled step's plan";
        p->stages = bw_xrealloc_n(p->stages, (size_t)cap, sizeof *p->stages, what);
        p->elig = bw_xrealloc_n(p->elig, (size_t)cap, sizeof *p->elig, what);
        p->parts_done =
            bw_xrealloc_n(p->parts_done, (size_t)cap * (size_t)P, sizeof *p->parts_done, what);
        p->stage_end =
            bw_xrealloc_n(p->stage_end, (size_t)cap * (size_t)P, sizeof *p->stage_end, what);
        p->cap_stages = cap;
    }
    SchedStage *s = &p->stages[p->n_stages++];
    memset(s, 0, sizeof *s);
    return s;
}

static SchedPart *part_add(SchedPlan *p)
{
    if (p->n_parts == p->cap_parts) {
        p->cap_parts = p->cap_parts ? 2 * p->cap_parts : 256;
        p->parts = bw_xrealloc_n(p->parts, (size_t)p->cap_parts, sizeof *p->parts,
                                 "a scheduled step's partitions");
    }
    SchedPart *x = &p->parts[p->n_parts++];
    memset(x, 0, sizeof *x);
    return x;
}

/* A WORK stage of `seconds` (skipped when there is nothing to do) for unit u. */
static void work_stage(SchedPlan *p, int P, int u, const char *name, double seconds)
{
    if (!(seconds > 0)) return;
    SchedStage *s = stage_add(p, P);
    *s = (SchedStage){.kind = STAGE_WORK, .unit = u, .seconds = seconds, .name = name};
}

/* The partitions of one message of the plan into the GROUP stage s: pieces of at most
 * partition_bytes, the last one the rest (the schedule's cut: when they go, not what). */
static void message_parts(SchedPlan *p, int s, int u, const CompressMsg *m, double partition)
{
    const size_t es = m->op == COMPRESS_ALLREDUCE_F32 ? 4 : m->op == COMPRESS_ALLREDUCE_F16 ? 2 : 1;
    size_t per = m->count;
    if (partition > 0 && (double)m->count * (double)es > partition) {
        per = (size_t)floor(partition / (double)es);
        if (per < 1) per = 1;
    }
    const size_t whole = m->count > 0 ? m->count : 1; /* an empty message is still a call */
    const int of = (int)((whole + per - 1) / per);
    for (int i = 0; i < of; i++) {
        const size_t lo = (size_t)i * per, count = m->count - lo < per ? m->count - lo : per;
        SchedPart *x = part_add(p);
        *x = (SchedPart){.op = (int)m->op,
                         .count = m->count ? count : 0,
                         .bytes = (double)(m->count ? count : 0) * (double)es,
                         .unit = u,
                         .stage = s,
                         .index = i,
                         .of = of,
                         .server = -1};
        p->stages[s].n_parts++;
    }
}

/* Unit u from the plan's bucket b: its tensors, when it is full, whether it waits for the
 * backward's end, and its priority (the lowest of its tensors', the schedule's); then its stages
 * as the plan's: the compressor's work (encode, between collectives, decode) as WORK stages,
 * each run of messages between them as a GROUP of their partitions, which goes after the round
 * the plan puts before it and the fixed cost of its calls. The ranks' rendezvous is the GROUP's
 * own (every rank finished the stage before). A stage kind it does not know stops the run
 * rather than being dropped. */
static int unit_from_bucket(DriverRun *run, SchedPlan *p, int u, const PlanBucket *b,
                            const ScheduleDecision *d, BwError *err)
{
    const StepPlan *plan = &run->cost->plan;
    SchedUnit *U = &p->units[u];
    *U = (SchedUnit){.tensors = b->tensors,
                     .n = b->n_tensors,
                     .ready_layer = b->layer,
                     .first_tensor = b->tensors[b->n_tensors - 1], /* the backward's last */
                     .defer = b->defer,
                     .first_stage = p->n_stages};
    U->priority = d->priority[b->tensors[0]];
    for (int k = 1; k < b->n_tensors; k++)
        if (d->priority[b->tensors[k]] < U->priority) U->priority = d->priority[b->tensors[k]];
    int group = -1;
    double round = 0;
    for (int i = b->first_stage; i < b->first_stage + b->n_stages; i++) {
        const PlanStage *s = &plan->stage[i];
        if (s->kind == STAGE_ENCODE) {
            work_stage(p, run->P, u, "encode", s->seconds);
        } else if (s->kind == STAGE_ROUND) {
            round = s->seconds;
        } else if (s->kind == STAGE_BETWEEN) {
            work_stage(p, run->P, u, "between collectives", s->seconds);
            group = -1;
        } else if (s->kind == STAGE_DECODE) {
            work_stage(p, run->P, u, "decode", s->seconds);
        } else if (s->kind == STAGE_COLL && s->comm == PLAN_COMM_RUN) { /* the lanes' */
            if (group < 0) {
                SchedStage *g = stage_add(p, run->P);
                *g = (SchedStage){.kind = STAGE_GROUP,
                                  .unit = u,
                                  .first_part = p->n_parts,
                                  .round_s = round,
                                  .call_s = s->call_s == PLAN_NO_CALL ? 0 : s->call_s};
                group = p->n_stages - 1;
            }
            message_parts(p, group, u, &s->msg, d->partition_bytes);
        } else if (s->kind != STAGE_RENDEZVOUS || s->comm != PLAN_COMM_RUN) {
            return bw_fail(err, BW_ERUNTIME,
                           "the schedule engine does not time the step plan's stage %d (kind %d) "
                           "in bucket %d",
                           i, (int)s->kind, u);
        }
    }
    U->n_stages = p->n_stages - U->first_stage;
    return BW_OK;
}

/* The plan's tail: after the units, the worker's actor walks it as DDP's streams do (cost_tail,
 * sched_step.c). Layer-wise, each layer's update takes the optimiser's place (before its next
 * forward, SchedEngine.opt_s), and a gradient policy never averages: any other stage would be
 * dropped, so it stops the run (the CLI refuses what would build one: compat.def). */
static int tail_check(const DriverRun *run, BwError *err)
{
    const StepPlan *plan = &run->cost->plan;
    for (int i = plan->tail_first; run->cost->sched->layerwise && i < plan->n_stages; i++) {
        const PlanStage *s = &plan->stage[i];
        if (s->kind != STAGE_OPTIMIZER && !s->if_averaged)
            return bw_fail(err, BW_ERUNTIME,
                           "--overlap layer: the schedule engine does not time the step plan's "
                           "tail stage %d (kind %d) beside its layer-wise updates",
                           i, (int)s->kind);
    }
    return BW_OK;
}

/* Every rank's progress on a new plan: nothing handed over, every unit's layers waiting. */
static void plan_progress_reset(DriverRun *run, SchedPlan *p)
{
    const int P = run->P, L = run->cost->wl->n_layers;
    const WorkloadTensor *T = run->cost->wl->tensors;
    for (int i = 0; i < p->n_units * P; i++) p->rank_stage[i] = -1, p->work_queued[i] = 0;
    for (int u = 0; u < p->n_units; u++) p->units[u].handed = 0;
    memset(p->parts_done, 0, sizeof *p->parts_done * (size_t)p->n_stages * (size_t)P);
    memset(p->layer_left, 0, sizeof *p->layer_left * (size_t)P * (size_t)L);
    for (int u = 0; u < p->n_units; u++) {
        const SchedUnit *U = &p->units[u];
        for (int k = 0; k < U->n; k++) { /* a layer's tensors are adjacent in the order */
            const int l = T[U->tensors[k]].layer;
            if (k > 0 && T[U->tensors[k - 1]].layer == l) continue;
            for (int r = 0; r < P; r++) p->layer_left[r * L + l]++;
        }
    }
    for (int r = 0; r < P; r++) p->units_left[r] = p->n_units;
    p->n_elig = 0;
}

/* Step `step`: the observation (the plan's payload of each tensor at this step's levels), the
 * schedule's decision, the plan's buckets at the schedule's caps (step_plan_units.c), and this
 * engine's units, stages and partitions from them. */
int sched_plan_build(DriverRun *run, long step, BwError *err)
{
    SchedEngine *E = run->cost->sched;
    plan_tensor_bytes(run, E->tensor_bytes);
    const StepRow *last = run->res->n_steps ? &run->res->steps[run->res->n_steps - 1] : NULL;
    const StepRow *before = run->res->n_steps > 1 ? &run->res->steps[run->res->n_steps - 2] : NULL;
    ScheduleObs obs = {.step = step,
                       .epoch = run->cur.epoch,
                       .tensor_bytes = E->tensor_bytes,
                       .last_step_s = last ? last->end_s - (before ? before->end_s : 0) : NAN};
    int rc = schedule_step(E->sched, &obs, &E->dec, err);
    if (rc) return rc;
    schedule_describe(E->sched, E->state, sizeof E->state);
    plan_build_units(run, step, E->dec.first_bucket_bytes, E->dec.bucket_bytes);
    const StepPlan *plan = &run->cost->plan;
    SchedPlan *p = &E->plans[step & 1];
    p->n_stages = p->n_parts = 0;
    p->n_units = plan->n_buckets;
    for (int u = 0; u < plan->n_buckets && !rc; u++)
        rc = unit_from_bucket(run, p, u, &plan->bucket[u], &E->dec, err);
    if (rc || (rc = tail_check(run, err))) return rc;
    plan_progress_reset(run, p);
    p->step = step;
    E->steps_planned++;
    return BW_OK;
}

SchedPlan *sched_plan_of(SchedEngine *E, long step)
{
    if (step < 0) return NULL;
    SchedPlan *p = &E->plans[step & 1];
    return p->step == step ? p : NULL;
}

/* ---- progress ---- */

void sched_queue_push(SchedQueue *q, SchedItem it)
{
    if (q->n == q->cap) {
        const int cap = q->cap ? 2 * q->cap : 16;
        SchedItem *grown = bw_xrealloc_n(NULL, (size_t)cap, sizeof *grown, "a lane's queue");
        for (int i = 0; i < q->n; i++) grown[i] = q->items[(q->head + i) % q->cap];
        free(q->items);
        q->items = grown;
        q->head = 0;
        q->cap = cap;
    }
    q->items[(q->head + q->n++) % q->cap] = it;
    sg_sem_release(q->sem);
}

static void wake(SchedEngine *E)
{
    sg_sem_release(E->wake);
}

/* Unit u is done on rank r: its layers' counts, and the compute actor if it waits. */
static void unit_done(DriverRun *run, int r, SchedPlan *p, int u)
{
    SchedEngine *E = run->cost->sched;
    const Workload *wl = run->cost->wl;
    const int L = wl->n_layers;
    const SchedUnit *U = &p->units[u];
    for (int k = 0; k < U->n; k++) {
        const int l = wl->tensors[U->tensors[k]].layer;
        if (k > 0 && wl->tensors[U->tensors[k - 1]].layer == l) continue;
        if (--p->layer_left[r * L + l] == 0) E->ranks[r].layer_done[l] = p->step;
    }
    p->units_left[r]--;
    SchedRank *R = &E->ranks[r];
    if (R->waiting) {
        R->waiting = 0;
        sg_sem_release(R->progress);
    }
}

/* GROUP s may go: every rank finished what comes before it. */
static void make_eligible(SchedEngine *E, SchedPlan *p, int s)
{
    SchedStage *G = &p->stages[s];
    G->eligible = 1;
    G->queued = E->in_flight_parts > 0;
    p->elig[p->n_elig++] = s;
    wake(E);
}

/* Rank r finished stage s: the stage's count, the time (for the others' waiting), and, when it
 * was the last rank, the next GROUP may go. */
static void stage_finished(DriverRun *run, int r, SchedPlan *p, int s)
{
    SchedEngine *E = run->cost->sched;
    const int P = run->P;
    SchedStage *S = &p->stages[s];
    const double now = simgrid_get_clock();
    p->stage_end[(size_t)s * P + r] = now;
    if (++S->ranks_done < P) return;
    const SchedUnit *U = &p->units[S->unit];
    if (s + 1 >= U->first_stage + U->n_stages || p->stages[s + 1].kind != STAGE_GROUP) return;
    make_eligible(E, p, s + 1);
    for (int k = 0; k < P; k++) /* the ranks that were ready waited for the slowest */
        if (p->stage_end[(size_t)s * P + k] < now)
            cost_note(&run->w[k], COST_WAIT, p->stage_end[(size_t)s * P + k], now);
}

/* Moves unit u on rank r through every stage it can finish now: a WORK stage goes on r's lane 0
 * (once), a GROUP waits for its partitions; the last stage done, the unit is. */
static void advance(DriverRun *run, int r, SchedPlan *p, int u)
{
    SchedEngine *E = run->cost->sched;
    const int P = run->P;
    const SchedUnit *U = &p->units[u];
    int *at = &p->rank_stage[(size_t)u * P + r];
    for (;;) {
        if (*at == U->n_stages) {
            unit_done(run, r, p, u);
            return;
        }
        const int s = U->first_stage + *at;
        const SchedStage *S = &p->stages[s];
        if (S->kind == STAGE_WORK) {
            int *queued = &p->work_queued[(size_t)u * P + r];
            if (!*queued) {
                *queued = 1;
                sched_queue_push(&E->ranks[r].q[0], (SchedItem){ITEM_WORK, (int)(p->step & 1), s});
            }
            return;
        }
        if (p->parts_done[(size_t)s * P + r] < S->n_parts) return;
        stage_finished(run, r, p, s);
        (*at)++;
    }
}

void sched_release(DriverRun *run, int r, SchedPlan *p, int u)
{
    const int P = run->P;
    SchedUnit *U = &p->units[u];
    assert(p->rank_stage[(size_t)u * P + r] == -1);
    p->rank_stage[(size_t)u * P + r] = 0;
    const double now = simgrid_get_clock();
    p->handed_at[(size_t)u * P + r] = now;
    /* no encode: being handed over by every rank is what lets its first GROUP go */
    if (++U->handed == P && U->n_stages > 0 && p->stages[U->first_stage].kind == STAGE_GROUP) {
        make_eligible(run->cost->sched, p, U->first_stage);
        for (int k = 0; k < P; k++)
            if (p->handed_at[(size_t)u * P + k] < now)
                cost_note(&run->w[k], COST_WAIT, p->handed_at[(size_t)u * P + k], now);
    }
    advance(run, r, p, u);
}

void sched_work_done(DriverRun *run, int r, SchedPlan *p, int s)
{
    const int P = run->P, u = p->stages[s].unit;
    p->work_queued[(size_t)u * P + r] = 0;
    stage_finished(run, r, p, s);
    p->rank_stage[(size_t)u * P + r]++;
    advance(run, r, p, u);
}

void sched_part_done(DriverRun *run, int r, SchedPlan *p, int i)
{
    SchedEngine *E = run->cost->sched;
    SchedPart *x = &p->parts[i];
    if (++x->ranks_done == run->P) { /* done everywhere: its credit and its lane come back */
        E->in_flight_parts--;
        E->in_flight_bytes -= x->bytes;
        if (E->in_flight_parts == 0) E->in_flight_bytes = 0; /* no rounding left over */
        if (E->ps) E->lane_busy[x->lane] = 0;
        wake(E);
    }
    p->parts_done[(size_t)x->stage * run->P + r]++;
    advance(run, r, p, x->unit);
}

/* ---- the dispatcher's choice ---- */

/* Whether group a of plan pa goes before group b of plan pb. */
static int goes_before(const SchedPlan *pa, int a, const SchedPlan *pb, int b)
{
    if (pa->step != pb->step) return pa->step < pb->step;
    const SchedUnit *ua = &pa->units[pa->stages[a].unit], *ub = &pb->units[pb->stages[b].unit];
    if (ua->priority != ub->priority) return ua->priority < ub->priority;
    if (ua->first_tensor != ub->first_tensor) return ua->first_tensor < ub->first_tensor;
    return a < b;
}

int sched_best_group(SchedEngine *E, SchedPlan **plan)
{
    int best = -1;
    *plan = NULL;
    for (int k = 0; k < 2; k++) {
        SchedPlan *p = &E->plans[k];
        if (p->step < 0) continue;
        for (int i = 0; i < p->n_elig; i++)
            if (best < 0 || goes_before(p, p->elig[i], *plan, best)) {
                best = p->elig[i];
                *plan = p;
            }
    }
    return best;
}

void sched_group_exhausted(SchedPlan *p, int s)
{
    for (int i = 0; i < p->n_elig; i++)
        if (p->elig[i] == s) {
            p->elig[i] = p->elig[--p->n_elig];
            return;
        }
}

void sched_plans_free(SchedEngine *E)
{
    for (int k = 0; k < 2; k++) {
        SchedPlan *p = &E->plans[k];
        free(p->units);
        free(p->stages);
        free(p->parts);
        free(p->elig);
        free(p->rank_stage);
        free(p->work_queued);
        free(p->handed_at);
        free(p->parts_done);
        free(p->stage_end);
        free(p->layer_left);
        free(p->units_left);
    }
}
