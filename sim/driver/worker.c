/* worker.c: the worker actor, one per simulated GPU: its gradient, the step's flops on its host,
 * the rendezvous, then the gradient through the compressor (gradient mode: every replica applies
 * the same decoded gradient, so the replicas stay bit-identical, and unless told otherwise they
 * are one shared replica, updated once by the first worker to hold the decoded mean) or a local
 * step and, when decided, parameter averaging (periodic mode). It takes its step only from
 * run->cur. */
#include "exec_impl.h"

#include <assert.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_randist.h>
#include <simgrid/actor.h>
#include <simgrid/engine.h>
#include <simgrid/host.h>

#include "grad_norms.h"
#include "wallclock.h"
#include "splitmix.h"
#include "xalloc.h"

/* The worker's model: its own replica (a copy of the untrained run->shared.replica, which is the
 * same model from the same seed), or one that borrows the shared replica's parameters (a replay's
 * stand-in, which has no setup to run again, is made whole and then borrows them). */
static int worker_model_create(Worker *me, int own, BwError *err)
{
    DriverRun *run = me->run;
    if (own && run->cfg->replay) return run_model_create(run->cfg, &me->model, err);
    if (own) return model_create_copy(run->shared.replica, &me->model, err);
    if (!run->cfg->replay) return model_create_sharing(run->shared.replica, &me->model, err);
    int rc = run_model_create(run->cfg, &me->model, err);
    if (rc) return rc;
    /* made from the same seed: a check that sharing changes nothing */
    if (memcmp(me->model->params, run->shared.replica->params, sizeof(float) * me->model->n_params))
        return bw_fail(err, BW_ERUNTIME,
                       "worker %d: its initial parameters differ from the shared replica's",
                       me->rank);
    model_borrow(me->model, run->shared.replica->params, NULL, NULL);
    return BW_OK;
}

int worker_init(Worker *me, DriverRun *run, int rank, int own, BwError *err)
{
    const RunConfig *cfg = run->cfg;
    me->run = run;
    me->rank = rank;
    me->early_step = -1;
    int rc;
    if ((rc = worker_model_create(me, own, err))) return rc;
    const size_t n = me->model->n_params;
    if (own && (rc = sgd_init(&me->opt, n, cfg->tc.sgd, err))) return rc;
    if ((rc = compress_create(cfg->compressor, "--compressor", me->model->layers,
                              me->model->n_layers, run->P, rank, cfg->tc.seed, &me->comp, err)))
        return rc;
    me->rng = gsl_rng_alloc(gsl_rng_mt19937);
    if (run->periodic)
        me->before =
            bw_xmalloc(sizeof(float) * n * driver_average_floats(cfg), "worker.c: me->before");
    if (run->want_norms) me->gsum = bw_xcalloc(n, sizeof(float), "worker.c: me->gsum");
    if (cfg->zeropp.qwz_bits) me->zpp_w = bw_xcalloc(n, sizeof(float), "worker.c: qwZ's weights");
    if (!me->rng || (run->periodic && !me->before) || (run->want_norms && !me->gsum))
        return bw_fail(err, BW_ERUNTIME, "out of memory");
    if (cfg->replay && (rc = replay_template_create(me, cfg->tc.seed, err))) return rc;
    /* reseeded for the jitter, so its stream is the same whether a template was drawn or not */
    gsl_rng_set(me->rng, (unsigned long)splitmix64(cfg->tc.seed * 4099 + (uint64_t)rank + 1));
    return BW_OK;
}

void worker_free(Worker *me)
{
    model_free(me->model);
    sgd_free(&me->opt);
    compress_free(me->comp);
    if (me->rng) gsl_rng_free(me->rng);
    free(me->idx);
    free(me->before);
    free(me->gsum);
    free(me->zpp_w);
    free(me->gtemplate);
    free(me->norms);
    free(me->spans);
    if (me->stream.ready) sg_sem_destroy(me->stream.ready);
    if (me->stream.done) sg_sem_destroy(me->stream.done);
    memset(me, 0, sizeof *me);
}

/* Room for a batch of b samples' indices. */
static void worker_reserve(Worker *me, int b)
{
    if (b <= me->cap) return;
    me->cap = b;
    me->idx = bw_xrealloc_n(me->idx, (size_t)b, sizeof(int), "a worker's batch");
}

/* Room in a computing thread's scratch for a batch of b samples of dim features. */
static void slot_reserve(ComputeSlot *s, int b, int dim)
{
    if (b <= s->cap) return;
    s->cap = b;
    s->x = bw_xrealloc_n(s->x, (size_t)b * (size_t)dim, sizeof(float), "a batch's images");
    s->y = bw_xrealloc(s->y, (size_t)b, "a batch's labels");
}

/* The real forward and backward on the job_b samples of idx, the loss, and the norms: on a pool
 * thread, or in the actor (thread 0). Touches only the worker's own data, the scratch of the
 * thread (its slot's model, which borrows the worker's parameters, gradients and state, and its
 * batch buffers) and the read-only dataset. */
static void gradient_job(void *arg, int thread)
{
    Worker *me = arg;
    const DriverRun *run = me->run;
    assert(thread >= 0 && thread < run->n_slots);
    ComputeSlot *s = &run->slots[thread];
    Model *own = me->model;
    double w0 = wallclock_s();
    slot_reserve(s, me->job_b, run->cfg->train->dim);
    dataset_gather(run->cfg->train, me->idx, me->job_b, s->x, s->y);
    const float *w = own->params;
    if (me->zpp_w) { /* --zeropp qwz: the gathered weights, quantized and decoded (zeropp.c) */
        zpp_qwz_weights(run, own, own->params, me->zpp_w);
        w = me->zpp_w;
    }
    model_borrow(s->model, (float *)w, own->grads, own->state);
    me->loss = model_forward_backward(s->model, s->x, s->y, me->job_b);
    double w1 = wallclock_s();
    me->wall_model_s += w1 - w0;
    if (!run->want_norms) return;
    grad_norms_and_sum(me->model, me->norms, me->gsum);
    me->wall_policy_s += wallclock_s() - w1;
}

/* The worker's gradient and loss for the step: real forward and backward on its part of the
 * global batch (drawn from the epoch order shared by all workers; the indices are taken here,
 * in the actor), or the replay's. With a pool it is only submitted: worker_gradient_wait. */
static void worker_gradient(Worker *me, const StepState *st)
{
    DriverRun *run = me->run;
    const RunConfig *cfg = run->cfg;
    if (cfg->replay) {
        replay_gradient(me, &cfg->replay->steps[st->step]);
        return;
    }
    if (me->early_step == st->step) return; /* on the pool since the last step's update */
    worker_reserve(me, st->b);
    for (int j = 0; j < st->b; j++)
        me->idx[j] = dataset_shard_index(run->perm, run->P, me->rank, st->pos + j);
    me->job_b = st->b;
    if (run->pool) {
        pool_submit(run->pool, &me->job, gradient_job, me);
        me->job_pending = 1;
    } else {
        gradient_job(me, 0);
    }
}

/* With a mirror the step's update is done before its messages are simulated, so the next
 * step's gradient (run->cur, fixed at this step's rendezvous) can go on the pool now, while the
 * actors simulate them. Not after the last step, nor before an evaluation (it reads rank 0's
 * state, and a gradient updates batch norm's running statistics in the state). */
static void worker_gradient_early(Worker *me, int last)
{
    DriverRun *run = me->run;
    if (!run->pool || last || run->eval_due) return;
    worker_gradient(me, &run->cur);
    me->early_step = run->cur.step;
}

/* The submitted gradient, done: in wall time only, no simulated time passes. */
static void worker_gradient_wait(Worker *me)
{
    if (!me->job_pending) return;
    pool_wait(me->run->pool, &me->job);
    me->job_pending = 0;
}

/* The step's simulated compute on the worker's host; returns the clock after it. */
static double worker_compute(Worker *me, const StepState *st)
{
    const RunConfig *cfg = me->run->cfg;
    double t0 = simgrid_get_clock();
    double flops = worker_step_flops(cfg, model_flops_per_sample(me->model), st->b,
                                     sg_host_get_speed(sg_host_self()), me->rank);
    if (cfg->jitter_sigma > 0) { /* lognormal of mean 1 */
        double s = cfg->jitter_sigma;
        flops *= exp(s * gsl_ran_gaussian(me->rng, 1.0) - 0.5 * s * s);
    }
    /* stragglers: every worker computes as long as the slowest (driver_straggler_factor); the
     * extra is booked as waiting for it, as exec_step books a costed step's */
    const double m = driver_straggler_factor(cfg, st->step);
    sg_actor_execute(flops * m);
    double t1 = simgrid_get_clock();
    me->step_compute_s = m > 1 ? (t1 - t0) / m : t1 - t0;
    me->straggler_wait_s = (t1 - t0) - me->step_compute_s;
    return t1;
}

/* The policy's decision as an instant event on worker 0's timeline. */
static void decision_event(DriverRun *run, const StepState *st, double t)
{
    char args[160];
    snprintf(args, sizeof args, "\"state\":\"%.60s\",\"batch\":%d,\"average\":%d", run->state,
             st->b * run->P, run->dec.average);
    timeline_instant(run->tl, 0, "policy decision", t, st->step, args);
}

/* The rendezvous: the last to arrive runs the policy for everyone before anyone is released.
 * Returns the clock on release; the time since t1 was spent waiting for the slowest. */
static double worker_meet(Worker *me, const StepState *st, double t1)
{
    DriverRun *run = me->run;
    if (++run->arrived == run->P) {
        run->arrived = 0;
        /* costed steps meet before their gradients are waited for (the others' jobs ran on
         * the pool while the actors arrived): the policy needs them all */
        for (int w = 0; w < run->P; w++) worker_gradient_wait(&run->w[w]);
        rendezvous_leader(run);
        if (run->cost && !stop_now(run->stop)) cost_decided(run, st->step, st->b);
        if (run->tl && timeline_wants(run->tl, st->step)) decision_event(run, st, t1);
    }
    sg_barrier_wait(run->bar);
    double t2 = simgrid_get_clock();
    me->step_wait_s = t2 - t1 + me->straggler_wait_s;
    me->compute_s += me->step_compute_s;
    me->wait_s += me->step_wait_s;
    return t2;
}

/* The optimiser's step (none in a replay, which trains nothing), timed as the models' math. */
static void worker_sgd(Worker *me, double lr)
{
    DriverRun *run = me->run;
    Model *m = me->model;
    double w0 = wallclock_s();
    if (!run->cfg->replay) sgd_step(&me->opt, m->params, m->grads, lr);
    me->wall_model_s += wallclock_s() - w0;
}

/* shared_update's work, in items of UPDATE_ITEM floats over the run's threads: the first
 * worker's copy and update (both timed as the optimiser's), or a later worker's comparison. */
enum { UPDATE_ITEM = 16384 };
typedef struct {
    DriverRun *run;
    const float *g;
    double lr;
    int first;
    atomic_int differs; /* a compared item differs */
} UpdateJob;

static void update_item(void *arg, int item, int thread)
{
    (void)thread;
    UpdateJob *u = arg;
    DriverRun *run = u->run;
    const size_t n = run->shared.replica->n_params, lo = (size_t)item * UPDATE_ITEM;
    const size_t hi = n - lo < UPDATE_ITEM ? n : lo + UPDATE_ITEM;
    if (!u->first) {
        if (memcmp(u->g + lo, run->shared.applied + lo, (hi - lo) * sizeof(float)))
            atomic_store(&u->differs, 1);
        return;
    }
    if (u->g != run->shared.applied)
        memcpy(run->shared.applied + lo, u->g + lo, (hi - lo) * sizeof(float));
    if (!run->cfg->replay)
        sgd_step_range(&run->shared.opt, run->shared.replica->params, u->g, u->lr, lo, hi);
}

/* Gradient mode with a shared replica: the first worker to hold the step's decoded mean applies
 * it once and keeps a copy; every other worker's must equal it bit for bit (they are what each
 * replica would have applied), else the largest difference is reported as replica_max_diff.
 * in_applied: the collective stored the one mean of all workers in run->shared.applied itself
 * (compress_reduce_into), so there is one to apply and none to compare. */
static void shared_update(Worker *me, double lr, long step, int in_applied)
{
    DriverRun *run = me->run;
    const float *g = in_applied ? run->shared.applied : me->model->grads;
    const size_t n = me->model->n_params;
    UpdateJob u = {run, g, lr, run->shared.updated_step != step, 0};
    if (in_applied && !u.first) return;
    double w0 = wallclock_s();
    run->shared.updated_step = step;
    if (u.first) sgd_tick(&run->shared.opt); /* AdamW's step count; the ranges follow */
    pool_for(run->pool, (int)((n + UPDATE_ITEM - 1) / UPDATE_ITEM), update_item, &u);
    if (u.first) {
        me->wall_model_s += wallclock_s() - w0;
        return;
    }
    if (!atomic_load(&u.differs)) return;
    double *worst = &run->res->replica_max_diff;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)g[i] - run->shared.applied[i]);
        if (!(d <= *worst)) *worst = d;
    }
}

/* Where the step's data is reduced: a costed step's zero-time communicator (cost.c charges the
 * real model's collectives), the run's mirror (its messages are replayed after), or the run's
 * communicator itself. */
static Comm *data_comm(const DriverRun *run)
{
    return run->cost ? run->cost->data : run->mirror ? run->mirror : run->comm;
}

/* A worker's parameters become the mean, sum[i] * (1/P), and its sq_dist ||x_w - xbar||^2: one
 * chain of additions in double, in order (the bits ADPSGD's variance reads). */
static void average_one(Worker *me, const float *sum)
{
    float *p = me->model->params;
    const size_t n = me->model->n_params;
    const float inv = 1.0f / (float)me->run->P;
    double d2 = 0;
    for (size_t i = 0; i < n; i++) {
        float mean = sum[i] * inv;
        double d = (double)p[i] - mean;
        d2 += d * d;
        p[i] = mean;
    }
    me->sq_dist = d2;
}

/* average_one for AVG_GROUP workers at once, from their `before` buffers: their chains are
 * independent, so the processor overlaps them, and each keeps its own order and bits. */
enum { AVG_GROUP = 4 };
static void average_group(void *arg, int group, int thread)
{
    (void)thread;
    DriverRun *run = arg;
    Worker *w = run->w + (size_t)group * AVG_GROUP;
    if ((group + 1) * AVG_GROUP > run->P) {
        for (int k = 0; group * AVG_GROUP + k < run->P; k++) average_one(&w[k], w[k].before);
        return;
    }
    float *p[AVG_GROUP];
    const float *sum[AVG_GROUP];
    double d2[AVG_GROUP] = {0};
    for (int k = 0; k < AVG_GROUP; k++) p[k] = w[k].model->params, sum[k] = w[k].before;
    const size_t n = w[0].model->n_params;
    const float inv = 1.0f / (float)run->P;
    for (size_t i = 0; i < n; i++)
        for (int k = 0; k < AVG_GROUP; k++) {
            float mean = sum[k][i] * inv;
            double d = (double)p[k][i] - mean;
            d2[k] += d * d;
            p[k][i] = mean;
        }
    for (int k = 0; k < AVG_GROUP; k++) w[k].sq_dist = d2[k];
}

/* Periodic mode: average the parameters with an allreduce, and measure ||x_w - xbar||^2 (the
 * variance mean_w of it is handed to the policy at the next step). With --average-momentum the
 * momentum buffer rides in the same allreduce, packed after the parameters (one message of 2n
 * floats, as a flattened buffer in PyTorch). Without it, a communicator that sums once reads the
 * parameters where they are, into `before`. When the data's communicator takes no time (a
 * mirror, or a costed step's), every worker's sum is done once the first returns, and it
 * averages them all, AVG_GROUP at a time, on the pool's threads when there is one. */
static void average_parameters(Worker *me, long step)
{
    DriverRun *run = me->run;
    Model *m = me->model;
    const size_t n = m->n_params;
    const int with_v = driver_average_floats(run->cfg) == 2 && me->opt.velocity;
    Comm *comm = data_comm(run);
    float *buf = me->before;
    if (run->outer.eager.on) { /* its exchange overlaps the next round (outer_eager.c) */
        outer_eager_apply(me, step);
        return;
    }
    if (!with_v && coll_sums_once(comm)) {
        coll_allreduce_into(comm, me->rank, m->params, buf, n);
    } else {
        memcpy(buf, m->params, n * sizeof(float));
        if (with_v) memcpy(buf + n, me->opt.velocity, n * sizeof(float));
        coll_allreduce(comm, me->rank, buf, with_v ? 2 * n : n);
    }
    if (with_v) {
        const float inv = 1.0f / (float)run->P;
        for (size_t i = 0; i < n; i++) me->opt.velocity[i] = buf[n + i] * inv;
    }
    if (run->outer.on && !coll_zero_time(comm)) {
        outer_apply(run, me, buf, step);
    } else if (run->outer.on && run->avg.averaged_step != step) {
        run->avg.averaged_step = step; /* every worker's sum is done: the outer step for them all */
        for (int w = 0; w < run->P; w++) outer_apply(run, &run->w[w], run->w[w].before, step);
    } else if (!coll_zero_time(comm)) {
        average_one(me, buf);
    } else if (run->avg.averaged_step != step) {
        run->avg.averaged_step = step;
        pool_for(run->pool, (run->P + AVG_GROUP - 1) / AVG_GROUP, average_group, run);
    }
}

/* Communication and the update, at the decided levels (they stay fixed until every worker has
 * reached the next rendezvous). Returns whether the parameters were averaged. */
static int worker_communicate(Worker *me, const StepState *st)
{
    DriverRun *run = me->run;
    Model *m = me->model;
    if (!run->periodic && run->cfg->zeropp.qgz && run->shared.replica) {
        /* --zeropp qgz: the gradients through ZeRO++'s int4 all-to-all, once a step for all
         * (zeropp.c), on the costed step's zero-time data path (the plan prices it) */
        zpp_qgz_mean(run, st->step, run->shared.applied);
        shared_update(me, st->lr, st->step, 1);
        return 0;
    }
    if (!run->periodic) {
        int in_applied = 0;
        compress_reduce_into(me->comp, data_comm(run), m->grads, run->dec.level,
                             run->shared.replica ? run->shared.applied : NULL, &in_applied);
        if (run->shared.replica)
            shared_update(me, st->lr, st->step, in_applied);
        else
            worker_sgd(me, st->lr);
        return 0;
    }
    islands_reduce(me, st->step); /* on islands: the island's synchronous inner step */
    worker_sgd(me, st->lr);
    if (run->outer.streaming) return outer_stream(me, st->step, data_comm(run));
    if (!run->dec.average) return 0;
    average_parameters(me, st->step);
    return 1;
}

/* An evaluation, free in simulated time: rank 0's replica in gradient mode (the replicas are
 * identical but for their own state: batch norm's running statistics, kept per replica as DDP
 * without SyncBN), else the mean of the replicas once the last of them has deposited its
 * share: the mean of their parameters and, after them in eval_acc, of their states. */
static void worker_evaluate(Worker *me, const StepState *st, double now)
{
    DriverRun *run = me->run;
    Model *m = me->model;
    if (!run->periodic) {
        if (me->rank != 0) return;
        const int had_tta = !isnan(run->res->time_to_accuracy_s);
        record_eval(run, m, st, now);
        exec_evaluated(run, st->step, !had_tta && !isnan(run->res->time_to_accuracy_s));
        return;
    }
    const size_t np = m->n_params, ns = m->n_state;
    for (size_t i = 0; i < np; i++) run->avg.eval_acc[i] += m->params[i];
    for (size_t i = 0; i < ns; i++) run->avg.eval_acc[np + i] += m->state[i];
    if (++run->avg.eval_deposits < run->P) return;
    Model *e = run->eval_model;
    for (size_t i = 0; i < np + ns; i++) {
        float mean = (float)(run->avg.eval_acc[i] / run->P);
        if (i < np)
            e->params[i] = mean;
        else
            e->state[i - np] = mean;
        run->avg.eval_acc[i] = 0;
    }
    run->avg.eval_deposits = 0;
    record_eval(run, e, st, run_now(run));
}

/* What follows a step's update, costed or not: the variance at an averaging, the step's row,
 * an evaluation and the progress line. */
static void worker_step_end(Worker *me, const StepState *st, int averaged, double t3, int last)
{
    DriverRun *run = me->run;
    /* the variance at this averaging, for the policy at the next step */
    if (averaged && ++run->avg.avg_deposits == run->P) rendezvous_averaged(run, st);
    if (me->rank == 0) record_step(run, st, me, averaged);
    if (run->eval_due) worker_evaluate(me, st, t3 - run->job.start_s);
    if (me->rank == 0 && run->cfg->progress && (st->step % 10 == 0 || last))
        record_progress(run, st);
}

/* A step charged as one computation then the small model's collectives (no workload, no
 * overlap); returns 1 when the worker is done. */
static int worker_step_plain(Worker *me)
{
    DriverRun *run = me->run;
    const StepState st = run->cur;
    /* with a pool, the other actors submit theirs while this one is charged its compute */
    double t0 = simgrid_get_clock();
    worker_gradient(me, &st);
    double t1 = worker_compute(me, &st);
    worker_gradient_wait(me);
    double t2 = worker_meet(me, &st, t1);
    if (stop_now(run->stop)) {
        me->end_s = t2; /* the run ends at this rendezvous: its books go as far */
        return 1;
    }
    const int last = run->stop == STOP_DONE;

    const CollStats *books = coll_stats(run->comm, me->rank);
    const double sent0 = books->bytes_sent, payload0 = books->payload_bytes;
    int averaged = worker_communicate(me, &st);
    /* with a mirror the data is done (every worker entered it at t2, as its replay wants):
     * the next gradient, then the messages */
    if (run->mirror) {
        worker_gradient_early(me, last);
        coll_replay(run->comm, run->mirror, me->rank);
    }
    double t3 = simgrid_get_clock();
    me->step_comm_s = t3 - t2;
    me->comm_s += me->step_comm_s;
    if (run->tl && timeline_wants(run->tl, st.step)) {
        char bytes[96]; /* what this worker's collectives moved this step */
        books = coll_stats(run->comm, me->rank);
        snprintf(bytes, sizeof bytes, "\"bytes\":%.0f,\"payload_bytes\":%.0f",
                 books->bytes_sent - sent0, books->payload_bytes - payload0);
        timeline_span(run->tl, me->rank, TL_LANE_COMPUTE, "compute", "step", t0, t1, st.step, NULL);
        if (t2 > t1) /* no slice for a wait that did not happen */
            timeline_span(run->tl, me->rank, TL_LANE_COMM, "wait", "wait for the slowest", t1, t2,
                          st.step, NULL);
        timeline_span(run->tl, me->rank, TL_LANE_COMM, "communication",
                      averaged ? (run->outer.on ? "outer exchange" : "average parameters")
                               : "collectives",
                      t2, t3, st.step, bytes);
    }
    worker_step_end(me, &st, averaged, t3, last);
    me->end_s = t3;
    return last;
}

/* A costed step (cost.c): the real gradient, the rendezvous, the real update (at no simulated
 * time), then the real model's forward, backward, collectives and optimiser. With a pool, the
 * gradient is only submitted before the rendezvous, whose leader waits for them all. */
static int worker_step_costed(Worker *me)
{
    DriverRun *run = me->run;
    const StepState st = run->cur;
    worker_gradient(me, &st);
    me->step_compute_s = 0;
    me->step_compress_s = 0;
    double t1 = simgrid_get_clock();
    double t2 = worker_meet(me, &st, t1);
    if (run->tl && timeline_wants(run->tl, st.step)) { /* where the policy decides */
        if (t2 > t1)
            timeline_span(run->tl, me->rank, TL_LANE_COMPUTE, "wait", "step rendezvous", t1, t2,
                          st.step, NULL);
        else
            timeline_instant(run->tl, me->rank, "step rendezvous", t1, st.step, NULL);
    }
    if (stop_now(run->stop)) {
        /* the run ends at this rendezvous: the previous step's partitions may still be in
         * flight (layer-wise), and its books go as far as they do */
        exec_drain(me, &st);
        me->end_s = simgrid_get_clock();
        return 1;
    }
    const int last = run->stop == STOP_DONE;
    int averaged = worker_communicate(me, &st);
    /* the step's data is done on the zero-time communicator (every worker entered it at the
     * rendezvous' instant, as with a mirror): the next gradient goes on the pool while the
     * actors price this step */
    worker_gradient_early(me, last);
    exec_step(me, &st, averaged, last);
    worker_step_end(me, &st, averaged, simgrid_get_clock(), last);
    me->end_s = simgrid_get_clock();
    return last;
}

void worker_actor(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    Worker *me = sg_actor_self_get_data();
    if (me->run->job.start_s > 0) { /* a later job's */
        sg_actor_sleep_until(me->run->job.start_s);
        /* SimGrid wakes it within its timing precision (1e-9 s) of start_s, not at it (1e-12
         * gives 1e-9): the job starts when it wakes, and its books and clock count from there */
        me->run->job.start_s = simgrid_get_clock();
    }
    if (me->run->cost)
        while (!worker_step_costed(me)) continue;
    else
        while (!worker_step_plain(me)) continue;
    /* the outer exchanges still in flight (outer_lane.c): the run ends once they land */
    const double in_flight = outer_lane_drain(me, me->run->cur.step);
    if (in_flight > 0) {
        me->comm_s += in_flight;
        me->end_s = simgrid_get_clock();
    }
    outer_lane_stop(me);
    exec_stop(me);
    run_actor_ended(me->run);
}
