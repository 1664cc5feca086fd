/* sched_plan.c: a scheduled step's plan and its progress (sched_impl.h says what they are): the
 * schedule's context from the workload and the cluster, each step's units, stages and
 * partitions from the schedule's decision and the compressor's plan at the policy's levels, and
 * the state machine the actors drive as units are handed over and stages end. Partitions follow
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

/* The partitions of one message into the GROUP stage s: pieces of at most partition_bytes, the
 * last one the rest; returns its payload bytes. */
static double message_parts(SchedPlan *p, int s, int u, const CompressMsg *m, double partition)
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
    return (double)m->count * (double)es;
}

/* Unit u's stages from its compressor's plan at this step's levels: the encode, its messages
 * in groups split where the compressor works between them, the decode (cost_phases). Returns
 * whether one of its messages is an allgather. */
static int unit_stages(DriverRun *run, SchedPlan *p, int u, double partition)
{
    const CostModel *cm = run->cost;
    SchedUnit *U = &p->units[u];
    CompressMsg msgs[COMPRESS_MAX_MSGS];
    CompressCost cc = {.prof = cm->prof};
    const int nm = compress_plan_views(run->w[0].comp, cm->views, p->order + U->first, U->n,
                                       cm->levels, msgs, &cc);
    const int last = cost_phases(run, nm, &cc);
    U->first_stage = p->n_stages;
    work_stage(p, run->P, u, "encode", cc.phase_s[0]);
    int group = -1, gathers = 0;
    for (int i = 0; i < nm; i++) {
        const int ph = i - cc.first_msg;
        if (ph > 0 && cc.phase_s[ph] > 0) {
            work_stage(p, run->P, u, "between collectives", cc.phase_s[ph]);
            group = -1;
        }
        if (group < 0) {
            SchedStage *s = stage_add(p, run->P);
            *s = (SchedStage){.kind = STAGE_GROUP, .unit = u, .first_part = p->n_parts};
            group = p->n_stages - 1;
        }
        U->bytes += message_parts(p, group, u, &msgs[i], partition);
        gathers |= msgs[i].op == COMPRESS_ALLGATHER;
    }
    if (last > 0) work_stage(p, run->P, u, "decode", cc.phase_s[last]);
    U->n_stages = p->n_stages - U->first_stage;
    return gathers;
}

/* Units: the tensors in the backward's order, each unit closed once it holds its cap of fp32
 * bytes (the first cap for the first unit; cap 0: a tensor a unit), as cost_buckets fills DDP's. */
static void plan_units(DriverRun *run, SchedPlan *p, const ScheduleDecision *d)
{
    const Workload *wl = run->cost->wl;
    const int n = wl->n_tensors;
    double bytes = 0;
    p->n_units = 0;
    int start = 0;
    for (int i = 0; i < n; i++) {
        const int t = n - 1 - i;
        p->order[i] = t;
        bytes += 4.0 * (double)wl->tensors[t].numel;
        const double cap =
            p->n_units == 0 && d->first_bucket_bytes > 0 ? d->first_bucket_bytes : d->bucket_bytes;
        if (bytes >= cap || i == n - 1) {
            SchedUnit *U = &p->units[p->n_units++];
            memset(U, 0, sizeof *U);
            U->first = start;
            U->n = i + 1 - start;
            U->ready_layer = wl->tensors[t].layer;
            U->first_tensor = t;
            U->priority = d->priority[t];
            for (int k = start; k <= i; k++)
                if (d->priority[p->order[k]] < U->priority) U->priority = d->priority[p->order[k]];
            start = i + 1;
            bytes = 0;
        }
    }
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
            const int l = T[p->order[U->first + k]].layer;
            if (k > 0 && T[p->order[U->first + k - 1]].layer == l) continue;
            for (int r = 0; r < P; r++) p->layer_left[r * L + l]++;
        }
    }
    for (int r = 0; r < P; r++) p->units_left[r] = p->n_units;
    p->n_elig = 0;
}

/* The observation: each tensor's payload at this step's levels. */
static void observe_bytes(DriverRun *run, double *bytes)
{
    const CostModel *cm = run->cost;
    CompressMsg msgs[COMPRESS_MAX_MSGS];
    for (int t = 0; t < cm->wl->n_tensors; t++) {
        const int nm =
            compress_plan_views(run->w[0].comp, cm->views, &t, 1, cm->levels, msgs, NULL);
        bytes[t] = 0;
        for (int i = 0; i < nm; i++)
            bytes[t] += (double)msgs[i].count * (msgs[i].op == COMPRESS_ALLREDUCE_F32   ? 4.0
                                                 : msgs[i].op == COMPRESS_ALLREDUCE_F16 ? 2.0
                                                                                        : 1.0);
    }
}

int sched_plan_build(DriverRun *run, long step, BwError *err)
{
    SchedEngine *E = run->cost->sched;
    observe_bytes(run, E->tensor_bytes);
    const StepRow *last = run->res->n_steps ? &run->res->steps[run->res->n_steps - 1] : NULL;
    const StepRow *before = run->res->n_steps > 1 ? &run->res->steps[run->res->n_steps - 2] : NULL;
    ScheduleObs obs = {.step = step,
                       .epoch = run->cur.epoch,
                       .tensor_bytes = E->tensor_bytes,
                       .last_step_s = last ? last->end_s - (before ? before->end_s : 0) : NAN};
    int rc = schedule_step(E->sched, &obs, &E->dec, err);
    if (rc) return rc;
    schedule_describe(E->sched, E->state, sizeof E->state);
    SchedPlan *p = &E->plans[step & 1];
    p->n_stages = p->n_parts = 0;
    plan_units(run, p, &E->dec);
    const CostProfile *prof = run->cost->prof;
    for (int u = 0; u < p->n_units; u++) {
        const int gathers = unit_stages(run, p, u, E->dec.partition_bytes);
        p->units[u].defer = gathers && prof && !prof->allgather_overlaps;
    }
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
        const int l = wl->tensors[p->order[U->first + k]].layer;
        if (k > 0 && wl->tensors[p->order[U->first + k - 1]].layer == l) continue;
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
        free(p->order);
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
