/* sched_step.c: the compute side of a scheduled step (sched_impl.h, sched_run.c): the forward
 * (layer-wise: each layer's update of the previous step, once its gradients are reduced, just
 * before its forward), the backward handing units over, the drain before the optimiser (every
 * step under --overlap ddp, the last one layer-wise), the books of what the compute lane waited
 * for, and driver_check's checks of a --schedule. */
#include "exec_impl.h"
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

typedef struct {
    double t;
    int kind, d; /* +1: a span of kind starts, -1: it ends */
} SplitEvent;

static int event_cmp(const void *a, const void *b)
{
    const SplitEvent *x = a, *y = b;
    return (x->t > y->t) - (x->t < y->t);
}

/* The part of [a, b] each kind of work covered on the worker's lanes and launches (COST_*: the
 * compressor's work before communication before waiting); what nothing covered is
 * communication. The spans that ended by a are dropped: the compute lane never looks back. */
static void sched_split(Worker *me, double a, double b, double *split)
{
    int kept = 0;
    for (int i = 0; i < me->n_spans; i++)
        if (me->spans[i].t1 > a) me->spans[kept++] = me->spans[i];
    me->n_spans = kept;
    SplitEvent *ev =
        bw_xrealloc_n(NULL, (size_t)(2 * kept + 1), sizeof *ev, "a scheduled step's time split");
    int n = 0;
    for (int i = 0; i < kept; i++) {
        const CostSpan *s = &me->spans[i];
        if (s->t0 >= b) continue;
        ev[n++] = (SplitEvent){fmax(s->t0, a), s->kind, 1};
        ev[n++] = (SplitEvent){fmin(s->t1, b), s->kind, -1};
    }
    qsort(ev, (size_t)n, sizeof *ev, event_cmp);
    int cover[COST_KINDS] = {0};
    double x = a;
    for (int i = 0; i <= n; i++) {
        const double t = i < n ? ev[i].t : b;
        if (t > x) {
            int kind = COST_COMM;
            for (int k = COST_KINDS - 1; k >= 0; k--)
                if (cover[k] > 0) kind = k; /* the lowest kind covering wins */
            split[kind] += t - x;
            x = t;
        }
        if (i < n) cover[ev[i].kind] += ev[i].d;
    }
    free(ev);
}

/* Waits until `done` holds for this worker (a unit finishing wakes it), booking the wait. */
static void wait_for(Worker *me, int (*done)(const Worker *, const void *), const void *arg,
                     const char *what, double *split)
{
    SchedRank *R = &me->run->cost->sched->ranks[me->rank];
    const double t0 = simgrid_get_clock();
    while (!done(me, arg)) {
        R->waiting = 1;
        sg_sem_acquire(R->progress);
    }
    const double t1 = simgrid_get_clock();
    if (t1 > t0) {
        sched_split(me, t0, t1, split);
        cost_span(me, TL_LANE_COMPUTE, "wait", what, t0, t1, NULL);
    }
}

typedef struct {
    int layer;
    long step;
} LayerStep;

static int layer_reduced(const Worker *me, const void *arg)
{
    const LayerStep *ls = arg;
    return me->run->cost->sched->ranks[me->rank].layer_done[ls->layer] >= ls->step;
}

static int plan_done(const Worker *me, const void *arg)
{
    return ((const SchedPlan *)arg)->units_left[me->rank] == 0;
}

/* Step `step`'s update is applied on this worker: rank 0's row of that step and the evaluation
 * that followed it are stamped now (record_applied). */
static void applied(Worker *me, long step)
{
    if (me->rank == 0 && me->run->cost->sched->layerwise) record_applied(me->run, step);
}

static void sched_evaluated(DriverRun *run, long step, int set_tta)
{
    if (run->cost->sched && run->cost->sched->layerwise) record_eval_pending(run, step, set_tta);
}

/* An execution of flops on the compute lane, drawn as `name`; its seconds. */
static double exec_span(Worker *me, double flops, const char *name)
{
    const double t0 = simgrid_get_clock();
    const double d = cost_gpu_exec(me, flops);
    cost_span(me, TL_LANE_COMPUTE, "compute", name, t0, t0 + d, NULL);
    return d;
}

/* Every layer's update of `prev`'s gradients, after they are reduced (the drain). */
static double update_all(Worker *me, const SchedPlan *prev, double *split)
{
    const SchedEngine *E = me->run->cost->sched;
    const double speed = sg_host_get_speed(sg_host_self());
    wait_for(me, plan_done, prev, "wait for the last partitions", split);
    double d = 0;
    for (int l = 0; l < me->run->cost->wl->n_layers; l++)
        if (E->opt_s[l] > 0) d += exec_span(me, E->opt_s[l] * speed, "update");
    applied(me, prev->step);
    return d;
}

/* The forward; layer-wise after a step (prev), each layer with tensors waits for their
 * reduction and applies its update first. Returns the compute's seconds. */
static double sched_forward(Worker *me, int b, const SchedPlan *prev, double *split)
{
    const CostModel *cm = me->run->cost;
    const SchedEngine *E = cm->sched;
    const Workload *wl = cm->wl;
    const double speed = sg_host_get_speed(sg_host_self());
    double d = 0, f = 0;
    int from = 0;
    char name[160];
    for (int l = 0; l < wl->n_layers; l++) {
        if (prev && E->opt_s[l] > 0) {
            snprintf(name, sizeof name, "forward %s .. %s", wl->layers[from].name,
                     wl->layers[l > 0 ? l - 1 : 0].name);
            if (f > 0) d += exec_span(me, f, name);
            f = 0;
            from = l;
            snprintf(name, sizeof name, "wait for %s's update", wl->layers[l].name);
            wait_for(me, layer_reduced, &(LayerStep){l, prev->step}, name, split);
            snprintf(name, sizeof name, "update %s", wl->layers[l].name);
            d += exec_span(me, E->opt_s[l] * speed, name);
            if (l == E->last_updated) applied(me, prev->step); /* the model is step t's */
        }
        f += workload_fwd_flops(wl, l, b, speed, cm->peak_ratio);
    }
    snprintf(name, sizeof name, "forward %s .. %s", wl->layers[from].name,
             wl->layers[wl->n_layers - 1].name);
    d += exec_span(me, f, prev ? name : "forward");
    return d;
}

/* The backward from the last layer to the first, executed in runs that end where a unit is
 * full; each full unit is handed over, those that may not overlap the backward at its end. */
static double sched_backward(Worker *me, int b, SchedPlan *p)
{
    DriverRun *run = me->run;
    const CostModel *cm = run->cost;
    const Workload *wl = cm->wl;
    const double speed = sg_host_get_speed(sg_host_self());
    double d = 0, f = 0;
    int u = 0, from = wl->n_layers - 1;
    for (int l = wl->n_layers - 1; l >= 0; l--) {
        f += workload_bwd_flops(wl, l, b, speed, cm->peak_ratio);
        const int first = u;
        while (u < p->n_units && p->units[u].ready_layer == l) u++;
        if (u == first && l > 0) continue;
        char name[160];
        snprintf(name, sizeof name, "backward %s .. %s", wl->layers[from].name, wl->layers[l].name);
        d += exec_span(me, f, name);
        for (int k = first; k < u; k++)
            if (!p->units[k].defer) sched_release(run, me->rank, p, k);
        f = 0;
        from = l - 1;
    }
    for (int k = 0; k < p->n_units; k++)
        if (p->units[k].defer) sched_release(run, me->rank, p, k);
    return d;
}

static void sched_step(Worker *me, const StepState *st, int averaged, int last, StepBooks *books)
{
    DriverRun *run = me->run;
    SchedEngine *E = run->cost->sched;
    double *split = books->split;
    me->cost_step = st->step;
    me->cost_mult = cost_step_multiplier(me);
    const int b = driver_price_batch(run->cfg, st->b);
    SchedPlan *p = sched_plan_of(E, st->step);
    assert(p && "cost_decided planned the step");
    double compute =
        sched_forward(me, b, E->layerwise ? sched_plan_of(E, st->step - 1) : NULL, split);
    compute += sched_backward(me, b, p);
    if (!E->layerwise) { /* the plan's tail, as DDP's streams walk it (cost.c) */
        wait_for(me, plan_done, p, "wait for the last partitions", split);
        compute += cost_tail(me, st->step, averaged, split);
    } else if (last) {
        compute += update_all(me, p, split);
    }
    books->compute = compute;
}

static void sched_drain(Worker *me, const StepState *st, StepBooks *books)
{
    SchedEngine *E = me->run->cost->sched;
    SchedPlan *prev = E->layerwise ? sched_plan_of(E, st->step - 1) : NULL;
    if (!prev) return;
    books->compute = update_all(me, prev, books->split);
}

/* The step's plan, once the policy and the schedule decided it. */
static void sched_decided(DriverRun *run, long step)
{
    BwError why = {{0}};
    int rc = sched_plan_build(run, step, &why);
    if (rc) run_fail(run, rc, &why); /* a plugin's bad decision: the run stops here */
}

const StepExec exec_sched = {
    .version = STEP_EXEC_VERSION,
    .name = "sched",
    .create = sched_create,
    .free = sched_free,
    .decided = sched_decided,
    .start = sched_start,
    .step = sched_step,
    .drain = sched_drain,
    .evaluated = sched_evaluated,
    .stop = sched_stop,
};

/* The workload a run's schedule sees: --workload, or the small model's own (a replayed trace's
 * measured step split over it), as cost_create makes it. */
static int check_workload(const RunConfig *cfg, const Model *m, Workload **own, const Workload **wl,
                          BwError *err)
{
    *own = NULL;
    *wl = cfg->workload;
    if (*wl) return BW_OK;
    const TraceHeader *h = cfg->replay ? &cfg->replay->h : NULL;
    int rc = h && h->compute_s_per_step > 0
                 ? workload_from_model_times(m->layers, m->n_layers, h->compute_s_per_step,
                                             h->batch, own, err)
                 : workload_from_model(m->layers, m->n_layers, model_flops_per_sample(m), own, err);
    *wl = *own;
    return rc;
}

/* The schedule is created as the run would create it, and its first decision must be valid:
 * an unknown schedule, a bad option (a partition below 1 KB or above the model, a credit of 0),
 * a plugin that cannot load or decides badly, a usage error before anything is written. */
static int check_schedule(const RunConfig *cfg, const Workload *wl, BwError *err)
{
    ScheduleContext ctx;
    BellowsScheduleTensor *tensors = NULL;
    BellowsScheduleLayer *layers = NULL;
    Schedule *s = NULL;
    double *priority =
        bw_xcalloc((size_t)wl->n_tensors, sizeof *priority, "sched_step.c: priority");
    double *bytes = bw_xcalloc((size_t)wl->n_tensors, sizeof *bytes, "sched_step.c: bytes");
    int rc = priority && bytes ? BW_OK : bw_fail(err, BW_ERUNTIME, "out of memory");
    if (!rc)
        rc = sched_context(cfg, wl, cfg->cluster.gpu_flops, cost_peak_ratio(wl, &cfg->cluster),
                           &ctx, &tensors, &layers, err);
    if (!rc) rc = schedule_create(cfg->schedule, "--schedule", &ctx, &s, err);
    if (!rc) {
        for (int t = 0; t < wl->n_tensors; t++) bytes[t] = 4.0 * (double)wl->tensors[t].numel;
        ScheduleObs obs = {.step = 0, .tensor_bytes = bytes, .last_step_s = NAN};
        ScheduleDecision d = {.priority = priority};
        if ((rc = schedule_step(s, &obs, &d, err)) == BW_ERUNTIME) rc = BW_EUSAGE;
    }
    schedule_free(s);
    free(tensors);
    free(layers);
    free(priority);
    free(bytes);
    return rc;
}

int sched_check(const RunConfig *cfg, const Model *m, BwError *err)
{
    if (!cfg->schedule && cfg->overlap != OVERLAP_LAYER) return BW_OK;
    const int fifo = !cfg->schedule || schedule_spec_is_fifo(cfg->schedule);
    /* the CLI refuses these two first, from its table (sim/cli/compat.def) */
    if (!fifo && cfg->overlap != OVERLAP_DDP && cfg->overlap != OVERLAP_LAYER)
        return bw_fail(err, BW_EUSAGE,
                       "--schedule %s: orders what the backward overlaps; needs --overlap ddp or "
                       "layer (none and tensor send every gradient after the backward)",
                       cfg->schedule);
    if (coll_algo_servers(cfg->algo) && cfg->backend == COLL_ANALYTIC && driver_scheduled(cfg))
        return bw_fail(err, BW_EUSAGE,
                       "--collectives analytic: prices fifo's partitions in flight, one DDP "
                       "bucket at a time; a schedule's partitions in flight to several servers "
                       "share the links across buckets and steps: use --collectives transfer "
                       "with --allreduce ps and a schedule");
    if (!cfg->schedule) return BW_OK; /* fifo, layer-wise */
    Workload *own = NULL;
    const Workload *wl;
    int rc = check_workload(cfg, m, &own, &wl, err);
    if (!rc) rc = check_schedule(cfg, wl, err);
    workload_free(own);
    return rc;
}
