/* record.c: the run's books: a StepRow per step and an EvalRow per evaluation (from rank 0 or
 * the fast loop), the epoch norms, the progress line, and --record-trace, where a step's record
 * waits for the next rendezvous (which knows its averaging's variance) and an evaluation that
 * follows it waits with it, so the file keeps the trace's order; and, layer-wise, the row and
 * evaluation of a step stamped again once its update is applied (record_applied). */
#include "driver_impl.h"

#include <assert.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wallclock.h"
#include "xalloc.h"

/* Writes the step record held back, and the evaluation that followed it. */
static void flush_trace(TraceRecorder *rec)
{
    if (rec->has_pending) trace_write_step(rec->writer, &rec->pending);
    if (rec->has_queued_eval) trace_write_eval(rec->writer, &rec->queued_eval);
    rec->has_pending = rec->has_queued_eval = 0;
}

/* An evaluation goes to the trace after the step it follows. */
static void trace_eval(TraceRecorder *rec, const EvalRow *e)
{
    TraceEval te = {.step = e->step, .test_accuracy = e->test_accuracy, .test_loss = e->test_loss};
    if (rec->has_pending) {
        rec->queued_eval = te;
        rec->has_queued_eval = 1;
    } else {
        trace_write_eval(rec->writer, &te);
    }
}

/* A new zeroed row at the end of res->evals. */
static EvalRow *eval_row_add(DriverRun *run)
{
    RunResult *res = run->res;
    if (res->n_evals == run->cap_evals) {
        run->cap_evals = run->cap_evals ? 2 * run->cap_evals : 64;
        res->evals = bw_xrealloc_n(res->evals, (size_t)run->cap_evals, sizeof *res->evals,
                                   "the evaluations' rows");
    }
    EvalRow *e = &res->evals[res->n_evals++];
    memset(e, 0, sizeof *e);
    return e;
}

/* A parallel evaluation: chunk i's sums in part[i] and right[i], computed by the thread's
 * scratch model lent m's parameters and state. */
typedef struct {
    const DriverRun *run;
    Model *m;
    double *part;
    long *right;
    int *rc;
} EvalJob;

static void eval_item(void *arg, int item, int thread)
{
    const EvalJob *j = arg;
    const Dataset *test = j->run->cfg->test;
    Model *scratch = j->run->slots[thread].model;
    model_borrow(scratch, j->m->params, NULL, j->m->state);
    const int at = item * MODEL_EVAL_CHUNK;
    const int k = test->n - at < MODEL_EVAL_CHUNK ? test->n - at : MODEL_EVAL_CHUNK;
    j->rc[item] = model_evaluate_part(scratch, test->x + (size_t)at * test->dim, test->y + at, k,
                                      &j->part[item], &j->right[item]);
}

/* model_evaluate's figures, its chunks spread over the run's threads and added in order (the
 * same bits). */
static int evaluate_parallel(DriverRun *run, Model *m, double *loss, double *accuracy)
{
    const Dataset *test = run->cfg->test;
    const int n = (test->n + MODEL_EVAL_CHUNK - 1) / MODEL_EVAL_CHUNK;
    EvalJob j = {run, m, bw_xcalloc((size_t)n, sizeof(double), "record.c: memory"),
                 bw_xcalloc((size_t)n, sizeof(long), "record.c: memory"),
                 bw_xcalloc((size_t)n, sizeof(int), "record.c: memory")};
    int rc = j.part && j.right && j.rc ? BW_OK : BW_ERUNTIME;
    if (rc == BW_OK) pool_for(run->pool, n, eval_item, &j);
    double total = 0;
    long correct = 0;
    for (int i = 0; i < n && rc == BW_OK; i++) {
        rc = j.rc[i];
        total += j.part[i];
        correct += j.right[i];
    }
    *loss = test->n ? total / test->n : 0.0;
    *accuracy = test->n ? (double)correct / test->n : 0.0;
    free(j.part);
    free(j.right);
    free(j.rc);
    return rc;
}

/* The row's test loss and accuracy: the trace's (a replay does not re-simulate them), or m's
 * on the test set (NAN when that fails). */
static void eval_accuracy(DriverRun *run, Model *m, const TraceEval *te, EvalRow *e)
{
    const Dataset *test = run->cfg->test;
    double w0 = wallclock_s();
    int rc = BW_OK;
    if (te) {
        e->test_accuracy = te->test_accuracy;
        e->test_loss = te->test_loss;
    } else if (run->pool && run->n_slots > 1) {
        rc = evaluate_parallel(run, m, &e->test_loss, &e->test_accuracy);
    } else {
        BwError ignore;
        rc = model_evaluate(m, test->x, test->y, test->n, test->dim, &e->test_loss,
                            &e->test_accuracy, &ignore);
    }
    run->res->wall_model_s += wallclock_s() - w0;
    if (rc != BW_OK) {
        e->test_accuracy = NAN;
        e->test_loss = NAN;
    }
}

/* An evaluation of m after step st (NULL: the untrained model at time 0); a replay records only
 * the steps its trace evaluated, and needs no m. */
void record_eval(DriverRun *run, Model *m, const StepState *st, double now)
{
    RunResult *res = run->res;
    const RunConfig *cfg = run->cfg;
    const TraceEval *te = NULL;
    if (cfg->replay && !(te = replay_eval_at(run, st ? st->step + 1 : 0))) return;
    EvalRow *e = eval_row_add(run);
    e->sim_time_s = now;
    e->epoch = st ? st->epoch + run->epoch_end : 0;
    e->step = st ? st->step + 1 : 0;
    e->train_loss = st ? run->loss_mean : NAN;
    e->bytes_per_worker = coll_stats(run->comm, 0)->bytes_sent;
    e->wan_bytes = res->wan_bytes;
    snprintf(e->state, sizeof e->state, "%s", st ? run->state : "start");
    eval_accuracy(run, m, te, e);
    if (!(e->test_accuracy <= res->best_accuracy)) res->best_accuracy = e->test_accuracy;
    if (run->rec.writer && isfinite(e->test_accuracy)) trace_eval(&run->rec, e);
    res->final_accuracy = e->test_accuracy;
    if (cfg->target_accuracy > 0 && isnan(res->time_to_accuracy_s) &&
        e->test_accuracy >= cfg->target_accuracy) {
        res->time_to_accuracy_s = now;
        run->target_hit = 1;
    }
}

/* The step's row, at its end; w0 is rank 0's worker, whose times the row reports. */
void record_step(DriverRun *run, const StepState *st, const Worker *w0, int averaged)
{
    RunResult *res = run->res;
    if (res->n_steps == run->cap_steps) {
        run->cap_steps = run->cap_steps ? 2 * run->cap_steps : 1024;
        res->steps = bw_xrealloc_n(res->steps, (size_t)run->cap_steps, sizeof *res->steps,
                                   "the steps' rows");
    }
    StepRow *r = &res->steps[res->n_steps++];
    memset(r, 0, sizeof *r);
    r->step = st->step;
    r->epoch = st->epoch;
    r->batch = st->b * run->P;
    r->lr = st->lr;
    r->loss = run->loss_mean;
    r->end_s = run_now(run);
    r->compute_s = w0->step_compute_s;
    r->comm_s = w0->step_comm_s;
    r->compress_s = w0->step_compress_s;
    r->wait_s = w0->step_wait_s;
    r->bytes = coll_stats(run->comm, 0)->bytes_sent;
    r->wan_bytes = res->wan_bytes;
    r->averaged = averaged; /* the variance is filled in at the next rendezvous */
    r->period = run->dec.period;
    int matrices = 0;
    for (int l = 0; l < w0->model->n_layers; l++)
        if (w0->model->layers[l].ndim == 2) {
            r->level_mean += run->dec.level[l];
            matrices++;
        }
    if (matrices && !run->periodic)
        r->level_mean /= matrices;
    else
        r->level_mean = 0;
    snprintf(r->state, sizeof r->state, "%s", run->state);
    const char *sched = sched_state(run);
    if (sched) snprintf(r->schedule, sizeof r->schedule, "%s", sched);
}

/* The last row's variance, once its averaging has been measured. */
void record_step_variance(DriverRun *run)
{
    RunResult *res = run->res;
    if (run->avg.averaged_prev && res->n_steps)
        res->steps[res->n_steps - 1].variance = run->avg.variance_prev;
}

/* The epoch that step st ended: the whole model's norm of its mean gradient, from the
 * per-layer means run->epoch_norm_mean. */
void record_epoch_norm(DriverRun *run, const StepState *st)
{
    RunResult *res = run->res;
    const int n = run->w[0].model->n_layers;
    double sq = 0;
    for (int l = 0; l < n; l++) sq += run->epoch_norm_mean[l] * run->epoch_norm_mean[l];
    size_t k = (size_t)res->n_epoch_norms + 1;
    res->epoch_norm = bw_xrealloc_n(res->epoch_norm, k, sizeof(double), "the epochs' norms");
    res->epoch_last_step =
        bw_xrealloc_n(res->epoch_last_step, k, sizeof(long), "the epochs' norms");
    res->epoch_index = bw_xrealloc_n(res->epoch_index, k, sizeof(int), "the epochs' norms");
    res->epoch_index[res->n_epoch_norms] = st->epoch;
    res->epoch_last_step[res->n_epoch_norms] = st->step;
    res->epoch_norm[res->n_epoch_norms++] = sqrt(sq);
}

void record_progress(const DriverRun *run, const StepState *st)
{
    const RunResult *res = run->res;
    double acc = res->n_evals ? res->evals[res->n_evals - 1].test_accuracy : NAN;
    fprintf(stderr, "\r\033[K[%s] epoch %d/%d  step %ld  sim %.3fs  acc %.4f", run->cfg->label,
            st->epoch + 1, run->cfg->tc.epochs, st->step + 1, run_now(run), acc);
    fflush(stderr);
}

/* --record-trace: the header says what was run, on which layer table (m0's). The pending
 * step's norm arrays are one block of 3 x n_layers, freed by record_trace_abort. */
int record_trace_open(DriverRun *run, const Model *m0, BwError *err)
{
    const RunConfig *cfg = run->cfg;
    const int n = m0->n_layers;
    TraceStep *t = &run->rec.pending;
    TraceHeader h;
    memset(&h, 0, sizeof h);
    h.layers = bw_xcalloc((size_t)n, sizeof *h.layers, "record.c: h.layers");
    if ((t->grad_norms = bw_xcalloc(TRACE_NORM_ARRAYS * (size_t)n, sizeof(double),
                                    "record.c: t->grad_norms"))) {
        t->grad_norms_rank0 = t->grad_norms + n;
        t->epoch_norms = t->grad_norms + 2 * n;
        t->epoch_norms_rank0 = t->grad_norms + 3 * n;
    }
    if (!h.layers || !t->grad_norms) {
        free(h.layers);
        return bw_fail(err, BW_ERUNTIME, "--record-trace: out of memory for %d layers", n);
    }
    /* what ran: a policy that compresses nothing names no compressor */
    if (run_uses_compressor(run))
        snprintf(h.source, sizeof h.source, "bellows run (policy %s, compressor %s, seed %lu)",
                 cfg->policy, cfg->compressor, cfg->tc.seed);
    else
        snprintf(h.source, sizeof h.source, "bellows run (policy %s, no compressor, seed %lu)",
                 cfg->policy, cfg->tc.seed);
    snprintf(h.model, sizeof h.model, "%s", cfg->model_name ? cfg->model_name : "?");
    snprintf(h.dataset, sizeof h.dataset, "fashion-mnist");
    h.workers = run->P;
    h.batch = cfg->tc.batch;
    h.flops_per_sample = model_flops_per_sample(m0);
    h.epochs = cfg->tc.epochs;
    h.steps_per_epoch = run->shard / cfg->tc.batch;
    snprintf(h.lr_schedule, sizeof h.lr_schedule, "%s", lr_kind_name(cfg->tc.lr.kind));
    h.lr_base = cfg->tc.lr.base_lr;
    h.n_layers = m0->n_layers;
    for (int l = 0; l < m0->n_layers; l++) {
        snprintf(h.layers[l].name, sizeof h.layers[l].name, "%s", m0->layers[l].name);
        h.layers[l].rows = m0->layers[l].rows;
        h.layers[l].cols = m0->layers[l].cols;
    }
    int rc = trace_writer_open(cfg->record_trace, &h, &run->rec.writer, err);
    free(h.layers);
    return rc;
}

/* The trace's record of this step; the previous one is written now that its averaging's
 * variance (if any) is known. */
void record_trace_step(DriverRun *run, const PolicyObs *obs, const StepState *st)
{
    TraceRecorder *rec = &run->rec;
    if (rec->has_pending && obs->averaged) {
        rec->pending.has_variance = 1;
        rec->pending.param_variance = obs->param_variance;
    }
    flush_trace(rec);
    TraceStep *t = &rec->pending;
    double *g = t->grad_norms, *g0 = t->grad_norms_rank0, *e = t->epoch_norms;
    double *e0 = t->epoch_norms_rank0;
    memset(t, 0, sizeof *t);
    t->grad_norms = g, t->grad_norms_rank0 = g0, t->epoch_norms = e; /* the block stays */
    t->epoch_norms_rank0 = e0;
    int n = run->w[0].model->n_layers;
    t->step = st->step;
    t->epoch = st->epoch;
    t->epoch_end = obs->epoch_end;
    t->batch = st->b * run->P;
    t->lr = st->lr;
    t->loss = obs->loss;
    memcpy(t->grad_norms, obs->grad_norm_mean, sizeof(double) * (size_t)n);
    memcpy(t->grad_norms_rank0, obs->grad_norm_rank0, sizeof(double) * (size_t)n);
    t->has_rank0 = 1;
    if (obs->epoch_norm_mean) {
        memcpy(t->epoch_norms, obs->epoch_norm_mean, sizeof(double) * (size_t)n);
        t->has_epoch_norms = 1;
    }
    if (obs->epoch_norm_mean && obs->epoch_norm_rank0) {
        memcpy(t->epoch_norms_rank0, obs->epoch_norm_rank0, sizeof(double) * (size_t)n);
        t->has_epoch_rank0 = 1;
    }
    rec->has_pending = 1;
}

/* FNV-1a of the n doubles x (-0 as 0) into h. */
static uint64_t hash_doubles(uint64_t h, const double *x, int n)
{
    for (int l = 0; l < n; l++) {
        double v = x[l] == 0 ? 0 : x[l];
        const unsigned char *p = (const unsigned char *)&v;
        for (size_t i = 0; i < sizeof v; i++) h = (h ^ p[i]) * 1099511628211ull;
    }
    return h;
}

void record_decision_print(const DriverRun *run, const PolicyDecision *d, char *out)
{
    uint64_t h = 14695981039346656037ull; /* FNV-1a over the bytes, in a fixed order */
    const int ints[3] = {d->batch, d->average, d->period};
    const unsigned char *p = (const unsigned char *)ints;
    for (size_t i = 0; i < sizeof ints; i++) h = (h ^ p[i]) * 1099511628211ull;
    h = hash_doubles(h, d->level, run->w[0].model->n_layers);
    if (run->outer.asked) { /* the outer step the policy asked for, every field */
        const PolicyOuter *o = &run->outer.o;
        const double outer[8] = {o->lr,        o->momentum, o->alpha, o->h,
                                 o->fragments, o->tau,      o->bits,  o->eager};
        h = hash_doubles(h, outer, 8);
    }
    snprintf(out, 17, "%016llx", (unsigned long long)h);
}

void record_trace_decision(DriverRun *run, const PolicyDecision *d)
{
    TraceRecorder *rec = &run->rec;
    if (!rec->writer || !rec->has_pending || !run->cfg->record_decisions) return;
    record_decision_print(run, d, rec->pending.decision);
}

/* Writes what is held back and completes the file (no-op without --record-trace). */
int record_trace_close(DriverRun *run, BwError *err)
{
    TraceRecorder *rec = &run->rec;
    if (!rec->writer) return BW_OK;
    if (rec->has_pending && (run->stop == STOP_DIVERGED || run->stop == STOP_TARGET))
        snprintf(rec->pending.stopped, sizeof rec->pending.stopped, "%s",
                 run->stop == STOP_DIVERGED ? "diverged" : "reached_target");
    if (rec->has_pending && run->avg.averaged_prev) { /* the last step's averaging: no next step */
        rec->pending.has_variance = 1;
        rec->pending.param_variance = run->avg.variance_prev;
    }
    flush_trace(rec);
    int rc = trace_writer_close(rec->writer, err);
    rec->writer = NULL;
    return rc;
}

/* A run that fails leaves no trace file behind; run_free calls it after any run, so it also
 * frees the pending step's block. */
void record_trace_abort(DriverRun *run)
{
    trace_writer_abort(run->rec.writer);
    run->rec.writer = NULL;
    free(run->rec.pending.grad_norms);
    run->rec.pending.grad_norms = NULL;
}

void record_eval_pending(DriverRun *run, long step, int set_tta)
{
    run->stamps.eval_pending_row = run->res->n_evals - 1;
    run->stamps.eval_pending_step = step;
    run->stamps.eval_pending_tta = set_tta;
}

void record_applied(DriverRun *run, long step)
{
    RunResult *res = run->res;
    const double now = run_now(run), sent = coll_stats(run->comm, 0)->bytes_sent;
    for (long i = res->n_steps - 1; i >= 0 && i >= res->n_steps - 2; i--)
        if (res->steps[i].step == step) {
            res->steps[i].bytes = sent;
            res->steps[i].wan_bytes = res->wan_bytes;
        }
    if (run->stamps.eval_pending_row < 0 || run->stamps.eval_pending_step != step) return;
    EvalRow *e = &res->evals[run->stamps.eval_pending_row];
    e->sim_time_s = now;
    e->bytes_per_worker = sent;
    e->wan_bytes = res->wan_bytes;
    if (run->stamps.eval_pending_tta) res->time_to_accuracy_s = now;
    run->stamps.eval_pending_row = -1;
}
