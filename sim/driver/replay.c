/* replay.c: a replay's stand-ins for training: the trace's layer table as the (never trained)
 * model, a fixed random gradient per worker scaled every step to the trace's norms (so compressors
 * and collectives move what they would), the trace's losses and accuracies. And the fast replay:
 * the workers are identical, so one loop on rank 0's clock does the actors' arithmetic. */
#include "exec_impl.h"
#include "xalloc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_randist.h>

#include "splitmix.h"

/* The worker's fixed random gradient, drawn from its own stream (seeded from the run's seed and
 * its rank), each layer scaled to norm 1. */
int replay_template_create(Worker *me, unsigned long seed, BwError *err)
{
    const Model *m = me->model;
    me->gtemplate = bw_xmalloc(sizeof(float) * m->n_params, "replay.c: me->gtemplate");
    if (!me->gtemplate) return bw_fail(err, BW_ERUNTIME, "out of memory");
    gsl_rng_set(me->rng, (unsigned long)splitmix64(seed * 7919 + (uint64_t)me->rank + 1));
    for (int l = 0; l < m->n_layers; l++) {
        const LayerView *v = &m->layers[l];
        float *t = me->gtemplate + v->offset;
        double sq = 0;
        for (size_t i = 0; i < layer_size(v); i++) {
            t[i] = (float)gsl_ran_gaussian(me->rng, 1.0);
            sq += (double)t[i] * t[i];
        }
        for (size_t i = 0; i < layer_size(v); i++) t[i] = (float)(t[i] / sqrt(sq));
    }
    return BW_OK;
}

/* What a worker reports at the rendezvous, from the trace: its loss, and its layers' gradient
 * norms (rank 0 takes rank 0's norms when the trace has them). */
void replay_observation(Worker *me, const TraceStep *ts, int n_layers)
{
    const double *norms = me->rank == 0 && ts->has_rank0 ? ts->grad_norms_rank0 : ts->grad_norms;
    memcpy(me->norms, norms, sizeof(double) * (size_t)n_layers);
    me->loss = ts->loss;
}

/* This step's gradient: the worker's template, each layer scaled to the trace's norm. */
void replay_gradient(Worker *me, const TraceStep *ts)
{
    Model *m = me->model;
    for (int l = 0; l < m->n_layers; l++) {
        const LayerView *v = &m->layers[l];
        float scale = (float)ts->grad_norms[l];
        const float *t = me->gtemplate + v->offset;
        float *g = m->grads + v->offset;
        for (size_t i = 0; i < layer_size(v); i++) g[i] = scale * t[i];
    }
    replay_observation(me, ts, m->n_layers);
}

/* The fast replay needs rank 0's layer table, and its compressor for the message plans; the
 * other workers only report the trace's observations. */
int replay_fast_init(DriverRun *run, BwError *err)
{
    const RunConfig *cfg = run->cfg;
    Worker *me = &run->w[0];
    int rc = replay_model_create(&cfg->replay->h, cfg->tc.seed, &me->model, err);
    if (rc) return rc;
    return compress_create(cfg->compressor, "--compressor", me->model->layers, me->model->n_layers,
                           run->P, 0, cfg->tc.seed, &me->comp, err);
}

/* The step's communication on the fast path: the messages compress_plan lists for the decided
 * levels (or the parameter averaging), each charged the analytic backend's own time and bytes.
 * Returns whether the parameters were averaged. */
static int fast_communicate(DriverRun *run)
{
    Worker *me = &run->w[0];
    if (!run->periodic) {
        CompressMsg msgs[COMPRESS_MAX_MSGS];
        int n = compress_plan(me->comp, run->dec.level, msgs);
        for (int i = 0; i < n; i++) run->now += cost_charge(run->comm, &msgs[i]);
        return 0;
    }
    if (!run->dec.average) return 0;
    run->now += coll_charge_allreduce(
        run->comm, me->model->n_params * driver_average_floats(run->cfg), sizeof(float));
    return 1;
}

/* The end of a fast step: the variance, the row, an evaluation, the progress line. */
static void fast_step_end(DriverRun *run, const StepState *st, int averaged, int last)
{
    if (averaged) rendezvous_averaged(run, st);
    record_step(run, st, &run->w[0], averaged);
    if (run->eval_due) record_eval(run, NULL, st, run->now);
    if (run->cfg->progress && (st->step % 10 == 0 || last)) record_progress(run, st);
}

/* A costed step of every worker at once (the run's executor, exec_fast, on rank 0's books):
 * the rendezvous first, as the actors meet before a costed step, where nobody waits. */
static int fast_step_costed(DriverRun *run, const StepState *st)
{
    Worker *me = &run->w[0];
    rendezvous_leader(run);
    if (stop_now(run->stop)) return 1;
    cost_decided(run, st->step, st->b);
    const int last = run->stop == STOP_DONE;
    const int averaged = run->periodic && run->dec.average;
    me->step_wait_s = 0;
    exec_step(me, st, averaged, last);
    fast_step_end(run, st, averaged, last);
    return last;
}

/* One step of every worker at once, as worker_step does it: the compute time, the rendezvous
 * (no waiting: everyone arrives at once), the communication. Returns 1 when the run is done. */
static int fast_step(DriverRun *run)
{
    const RunConfig *cfg = run->cfg;
    Worker *me = &run->w[0];
    const Model *m = me->model;
    const double speed_flops = cfg->cluster.gpu_flops; /* every generated host's speed */
    const StepState st = run->cur;
    const TraceStep *ts = &cfg->replay->steps[st.step];
    for (int w = 0; w < run->P; w++) replay_observation(&run->w[w], ts, m->n_layers);
    if (run->cost) return fast_step_costed(run, &st);
    const double t0 = run->now, strag = driver_straggler_factor(cfg, st.step);
    run->now = t0 + worker_step_flops(cfg, model_flops_per_sample(m), st.b, speed_flops, 0) *
                        strag / speed_flops;
    const double t1 = run->now;
    /* stragglers: the extra over this worker's own compute is waiting, as worker_compute books it
     */
    me->step_compute_s = strag > 1 ? (t1 - t0) / strag : t1 - t0;
    rendezvous_leader(run);
    me->step_wait_s = (t1 - t0) - me->step_compute_s;
    me->compute_s += me->step_compute_s;
    me->wait_s += me->step_wait_s;
    if (stop_now(run->stop)) return 1;
    const int last = run->stop == STOP_DONE;

    int averaged = fast_communicate(run);
    const double t3 = run->now;
    me->step_comm_s = t3 - t1;
    me->comm_s += me->step_comm_s;
    fast_step_end(run, &st, averaged, last);
    return last;
}

void replay_fast(DriverRun *run)
{
    while (!fast_step(run)) continue;
    Worker *me = &run->w[0];
    for (int w = 1; w < run->P; w++) { /* every worker's books are rank 0's */
        run->w[w].compute_s = me->compute_s;
        run->w[w].comm_s = me->comm_s;
        run->w[w].wait_s = me->wait_s;
        run->w[w].compress_s = me->compress_s;
    }
}
