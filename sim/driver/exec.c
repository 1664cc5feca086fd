/* exec.c: a costed run's cost model, its step plan and its clock in one place (issue 47):
 * cost_create makes the model, the plan's fixed part (step_plan.c) and chooses the executor
 * (exec_choose), cost_decided builds each step's plan then tells the executor; and the
 * executor's calls (exec_impl.h): the step loops of worker.c and replay.c call these, and the
 * run's executor, a clock of the plan, does the pricing. */
#include "xalloc.h"
#include "exec_impl.h"

#include <stdlib.h>

const StepExec *exec_choose(const DriverRun *run)
{
    if (run->fast) return &exec_fast;
    if (driver_scheduled(run->cfg) && !run->periodic) return &exec_sched;
    return &exec_ddp;
}

/* ---- the run's cost model, its plan and its clock ---- */

int cost_create(DriverRun *run, const Model *m0, BwError *err)
{
    const RunConfig *cfg = run->cfg;
    CostModel *cm = bw_xcalloc(1, sizeof *cm, "exec.c: cm");
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
    cm->views = bw_xcalloc((size_t)n, sizeof *cm->views, "exec.c: cm->views");
    cm->follows = bw_xcalloc((size_t)n, sizeof *cm->follows, "exec.c: cm->follows");
    cm->levels = bw_xcalloc((size_t)n, sizeof *cm->levels, "exec.c: cm->levels");
    cm->order = bw_xcalloc((size_t)n, sizeof *cm->order, "exec.c: cm->order");
    cm->bucket_start =
        bw_xcalloc((size_t)n + 1, sizeof *cm->bucket_start, "exec.c: cm->bucket_start");
    cm->bucket_layer = bw_xcalloc((size_t)n, sizeof *cm->bucket_layer, "exec.c: cm->bucket_layer");
    if (!cm->views || !cm->follows || !cm->levels || !cm->order || !cm->bucket_start ||
        !cm->bucket_layer)
        return bw_fail(err, BW_ERUNTIME, "out of memory");
    cm->prof = cfg->costs && !cfg->costs->ideal ? cfg->costs : NULL;
    workload_views(cm->wl, cm->views);
    rc = workload_map(cm->wl, m0->layers, m0->n_layers, "--workload", cm->follows, err);
    if (rc) return rc;
    cm->peak_ratio = cost_peak_ratio(cm->wl, &run->cluster);
    sgd_cost(cm->wl->n_params, &cfg->tc.sgd, &cm->opt_flops, &cm->opt_bytes);
    cm->exec = exec_choose(run);
    /* periodic mode on islands with --workload or --overlap: DDP inside the island (islands.c) */
    cm->ddp = cfg->overlap == OVERLAP_DDP && (!run->periodic || islands_bucketed(run)) &&
              cm->exec != &exec_sched;
    rc = plan_create(run, err); /* step_plan.c */
    if (rc || run->fast) return rc;
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
    plan_free(&cm->plan);
    coll_comm_free(cm->data);
    free(cm);
    run->cost = NULL;
}

/* At the rendezvous, once the policy has decided: the step's plan (step_plan.c), then the
 * clock's own (exec_decided: the schedule engine's partitions). */
void cost_decided(DriverRun *run, long step, int b)
{
    plan_build(run, step, b);
    exec_decided(run, step);
}

/* ---- the executor's calls ---- */

static const StepExec *exec_of(const DriverRun *run)
{
    return run->cost ? run->cost->exec : NULL;
}

int exec_create(DriverRun *run, BwError *err)
{
    const StepExec *x = exec_of(run);
    return x && x->create ? x->create(run, err) : BW_OK;
}

void exec_free(DriverRun *run)
{
    const StepExec *x = exec_of(run);
    if (x && x->free) x->free(run);
}

void exec_decided(DriverRun *run, long step)
{
    const StepExec *x = exec_of(run);
    if (x && x->decided) x->decided(run, step);
}

void exec_start(DriverRun *run)
{
    const StepExec *x = exec_of(run);
    if (x && x->start) x->start(run);
}

void exec_step(Worker *me, const StepState *st, int averaged, int last)
{
    StepBooks b = {0};
    exec_of(me->run)->step(me, st, averaged, last, &b);
    /* stragglers: the step's compute took m times as long as this worker's own would have;
     * the extra is waiting for the slowest, in every executor alike (cost_step_multiplier) */
    double m = driver_straggler_factor(me->run->cfg, st->step);
    if (m > 1) {
        double own = b.compute / m;
        b.split[COST_WAIT] += b.compute - own;
        b.compute = own;
    }
    exec_books_add(me, &b, 1);
}

void exec_drain(Worker *me, const StepState *st)
{
    const StepExec *x = exec_of(me->run);
    if (!x || !x->drain) return;
    StepBooks b = {0};
    x->drain(me, st, &b);
    exec_books_add(me, &b, 0);
}

void exec_evaluated(DriverRun *run, long step, int set_tta)
{
    const StepExec *x = exec_of(run);
    if (x && x->evaluated) x->evaluated(run, step, set_tta);
}

void exec_stop(Worker *me)
{
    const StepExec *x = exec_of(me->run);
    if (x && x->stop) x->stop(me);
}

/* The time books: the step's own (the rendezvous' wait is in step_wait_s already) and the
 * worker's totals. */
void exec_books_add(Worker *me, const StepBooks *b, int step)
{
    if (step) {
        me->step_compute_s = b->compute;
        me->step_compress_s = b->split[COST_COMPRESS];
        me->step_comm_s = b->split[COST_COMM];
        me->step_wait_s += b->split[COST_WAIT];
    }
    me->compute_s += b->compute;
    me->compress_s += b->split[COST_COMPRESS];
    me->comm_s += b->split[COST_COMM];
    me->wait_s += b->split[COST_WAIT];
}
