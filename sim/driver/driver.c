/* driver.c: the simulated training loop (see driver.h), and the fast trace replay that takes
 * its place when every worker is the same (replay_fast). Invariants:
 *  - every worker draws its step-t batch from the same epoch order (DistributedSampler
 *    sharding), so with `sync` the workers' batches together are one process's global batch;
 *  - the step's shared state (epoch, position in the shard, batch, lr) is fixed by the last
 *    worker to reach the previous step's rendezvous, before anyone is released;
 *  - in gradient mode every replica applies the same decoded gradient, so replicas stay
 *    bit-identical (rank 0's parameters are the model); in periodic mode the evaluated model
 *    is the mean of the replicas (computed in memory, not charged).
 * Actors run one at a time on one thread (SimGrid's contexts), so the shared state needs no
 * locks; only simulated time orders them. */
#include "driver.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <simgrid/actor.h>
#include <simgrid/barrier.h>
#include <simgrid/engine.h>
#include <simgrid/host.h>

#include "optim.h"
#include "policy.h"
#include "trace.h"
#include "compress.h"
#include "engine.h"
#include "wallclock.h"
#include "splitmix.h"

enum { STOP_NO, STOP_DONE, STOP_DIVERGED, STOP_TARGET, STOP_ERROR };

typedef struct DriverRun DriverRun;

typedef struct {
    DriverRun *run; /* the simulation it belongs to */
    int rank;
    Model *model;
    Sgd opt;
    Compressor *comp;
    gsl_rng *rng; /* compute-time jitter */
    float *x;
    uint8_t *y;
    int *idx;
    int cap;          /* samples x, y and idx hold */
    float *before;    /* periodic: parameters before averaging */
    float *gsum;      /* the local gradients summed over the epoch so far (Accordion's signal) */
    float *gtemplate; /* replay: a fixed random gradient, each layer of norm 1 */
    double loss;
    double norms[MODEL_MAX_LAYERS];
    double compute_s, comm_s, wait_s;
    double step_compute_s, step_comm_s, step_wait_s;
    double sq_dist; /* periodic: ||x_w - xbar||^2 at the last averaging */
} Worker;

/* What a step is: fixed at the previous step's rendezvous, copied by each worker at its start. */
typedef struct {
    long step;
    int epoch, pos, b; /* pos: samples of the shard already used this epoch; b: per worker */
    int epoch_start;
    double lr;
} StepState;

/* One simulation: the state its workers share, passed by pointer to everything that runs it. */
struct DriverRun {
    const RunConfig *cfg;
    RunResult *res;
    int P;
    Worker *w;
    Comm *comm;
    Policy *pol;
    const CompressorOps *cops;
    int periodic;
    sg_bar_t bar;
    Model *eval_model;
    double *eval_acc;  /* periodic: sum of the replicas' parameters */
    int eval_deposits; /* periodic: replicas added to eval_acc this step */
    int avg_deposits;  /* periodic: replicas that measured their distance this step */
    int *perm;
    int shard; /* samples per worker per epoch */
    int b0;    /* starting per-worker batch */
    StepState cur;
    /* set at a step's rendezvous, valid until the next one */
    int arrived;
    int stop;
    int eval_due, epoch_end;
    PolicyDecision dec;
    double loss_mean;
    char state[64];
    double grad_norm_rank0[MODEL_MAX_LAYERS], grad_norm_mean[MODEL_MAX_LAYERS];
    double epoch_norm_rank0[MODEL_MAX_LAYERS], epoch_norm_mean[MODEL_MAX_LAYERS];
    long epoch_steps;      /* steps summed into the workers' gsum */
    int batch_wanted;      /* the policy's last per-worker batch */
    double epoch_first_lr; /* the lr at the current epoch's first step */
    double trace_variance; /* replay: the trace's latest parameter variance */
    long eval_cursor;      /* replay: the first trace evaluation not yet passed */
    /* periodic: the last averaging */
    int averaged_prev;
    double variance_prev;
    int target_hit;
    BwError err;
    int err_status;
    /* --record-trace: a step's record waits for the next rendezvous, which knows the variance
     * measured at its averaging */
    TraceWriter *trace;
    TraceStep pending;
    int has_pending;
    TraceEval queued_eval;
    int has_queued_eval;
    int want_norms;
    long cap_steps;
    int cap_evals;
    /* the fast replay: no SimGrid; the simulated clock is kept here */
    int fast;
    double now;
};

/* Simulated seconds since the start. */
static double sim_now(const DriverRun *run)
{
    return run->fast ? run->now : simgrid_get_clock();
}

/* Replay: the model is only the trace's layer table (a matrix per 2-D entry, a vector where
 * cols is 1) at the trace's cost per sample; it is never trained. */
static int replay_model_create(const TraceHeader *h, unsigned long seed, Model **out, BwError *err)
{
    if (h->n_layers > MODEL_MAX_LAYERS)
        return bw_fail(err, BW_EUSAGE, "--trace: %d layers, at most %d", h->n_layers,
                       MODEL_MAX_LAYERS);
    LayerView layers[MODEL_MAX_LAYERS];
    for (int l = 0; l < h->n_layers; l++) {
        LayerView *v = &layers[l];
        snprintf(v->name, sizeof v->name, "%s", h->layers[l].name);
        v->rows = h->layers[l].rows;
        v->cols = h->layers[l].cols;
        v->ndim = v->cols == 1 ? 1 : 2;
    }
    return model_create_from_layers(layers, h->n_layers, h->flops_per_sample, seed, out, err);
}

static int make_model(const RunConfig *cfg, Model **out, BwError *err)
{
    if (!cfg->replay) return model_create(cfg->model, &cfg->mc, cfg->tc.seed, out, err);
    return replay_model_create(&cfg->replay->h, cfg->tc.seed, out, err);
}

/* Samples per worker per epoch: the data's shard, or what the trace's epochs held. */
static int shard_of(const RunConfig *cfg)
{
    if (!cfg->replay) return dataset_shard_size(cfg->train->n, cfg->cluster.workers);
    long spe = cfg->replay->h.steps_per_epoch ? cfg->replay->h.steps_per_epoch : 1;
    return (int)(spe * cfg->tc.batch);
}

static int check_level(const void *arg, double level, const char *what, BwError *err)
{
    return compress_check_level(arg, level, what, err);
}

static void fill_context(PolicyContext *ctx, const RunConfig *cfg, const Model *m, int shard)
{
    memset(ctx, 0, sizeof *ctx);
    ctx->n_layers = m->n_layers;
    for (int l = 0; l < m->n_layers; l++) {
        snprintf(ctx->layers[l].name, sizeof ctx->layers[l].name, "%s", m->layers[l].name);
        ctx->layers[l].rows = m->layers[l].rows;
        ctx->layers[l].cols = m->layers[l].cols;
        ctx->layers[l].ndim = m->layers[l].ndim;
    }
    int P = cfg->cluster.workers;
    ctx->workers = P;
    ctx->epochs = cfg->tc.epochs;
    ctx->batch = cfg->tc.batch * P;
    ctx->steps_per_epoch = shard / cfg->tc.batch;
    ctx->lr0 = cfg->tc.lr.base_lr;
    if (cfg->tc.lr.kind == LR_STEP)
        for (int i = 0; i < cfg->tc.lr.n_milestones && i < POLICY_MAX_DECAYS; i++)
            ctx->decay_epochs[ctx->n_decays++] = (int)ceil(cfg->tc.lr.milestones[i]);
    Spec s;
    BwError ignore;
    if (spec_parse(cfg->compressor, "--compressor", &s, &ignore) == BW_OK) {
        snprintf(ctx->compressor, sizeof ctx->compressor, "%s", s.name);
        const CompressorOps *ops = compress_find(s.name);
        ctx->compressor_level = ops ? ops->level_default : 0;
        if (ops) {
            ctx->check_level = check_level;
            ctx->check_level_arg = ops;
        }
    }
}

/* A decision's levels and batch must suit the compressor and the cluster. */
static int check_decision(const RunConfig *cfg, const Model *m, const CompressorOps *cops,
                          const PolicyDecision *d, int periodic, BwError *err)
{
    int P = cfg->cluster.workers;
    if (cfg->replay && d->batch != cfg->tc.batch * P)
        return bw_fail(err, BW_EUSAGE,
                       "--policy %s: a replay follows the trace's batches; a policy that changes "
                       "the batch cannot be replayed",
                       cfg->policy);
    if (!cfg->replay && (d->batch < P || d->batch % P != 0))
        return bw_fail(err, BW_EUSAGE,
                       "--policy %s: global batch %d is not a positive multiple of the %d workers",
                       cfg->policy, d->batch, P);
    if (!cfg->replay && d->batch / P > dataset_shard_size(cfg->train->n, P))
        return bw_fail(err, BW_EUSAGE,
                       "--policy %s: global batch %d is larger than the training set allows "
                       "(%d samples per worker)",
                       cfg->policy, d->batch, dataset_shard_size(cfg->train->n, P));
    if (periodic) return BW_OK;
    for (int l = 0; l < m->n_layers; l++) {
        if (m->layers[l].ndim != 2 || d->level[l] == 0) continue;
        char what[128];
        snprintf(what, sizeof what, "--policy %s: layer %s", cfg->policy, m->layers[l].name);
        int rc = compress_check_level(cops, d->level[l], what, err);
        if (rc) return rc;
    }
    return BW_OK;
}

int driver_check(const RunConfig *cfg, BwError *err)
{
    const int P = cfg->cluster.workers;
    if (P > DRIVER_MAX_WORKERS)
        return bw_fail(err, BW_EUSAGE, "--workers: at most %d", DRIVER_MAX_WORKERS);
    int shard = shard_of(cfg);
    if (!cfg->replay && cfg->tc.batch > shard)
        return bw_fail(err, BW_EUSAGE,
                       "--batch: %d per worker, but each of the %d workers has only %d training "
                       "samples",
                       cfg->tc.batch, P, shard);
    if (cfg->slowdown)
        for (int w = 0; w < P; w++) assert(cfg->slowdown[w] > 0);
    char why[160];
    if (cfg->replay && cfg->replay_engine == REPLAY_FAST &&
        !driver_replay_fast(cfg, why, sizeof why))
        return bw_fail(err, BW_EUSAGE, "--replay-engine fast: %s; use auto or actors", why);
    Model *m = NULL;
    Policy *p = NULL;
    Compressor *c = NULL;
    int rc = make_model(cfg, &m, err);
    if (rc) return rc;
    /* Memory: every worker holds about 8 copies of the parameters (params, grads, velocity,
     * the epoch sum, the compressor's memory and buffers, the pre-averaging copy) and its
     * activations (bounded by batch x flops / 16 bytes for these models). A fast replay holds
     * one worker's layer table and compressor. */
    double need = (double)P * (32.0 * (double)m->n_params +
                               (double)cfg->tc.batch * model_flops_per_sample(m) / 16.0);
    double phys = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGE_SIZE);
    if (phys > 0 && need > 0.8 * phys && !driver_replay_fast(cfg, NULL, 0)) {
        size_t n_params = m->n_params;
        model_free(m);
        return bw_fail(err, BW_EUSAGE,
                       "--workers %d: the %d replicas of this %zu-parameter model need about "
                       "%.1f GiB, more than this machine's %.1f GiB allow; use fewer workers or a "
                       "smaller model",
                       P, P, n_params, need / (1 << 30), phys / (1 << 30));
    }
    PolicyContext ctx;
    fill_context(&ctx, cfg, m, shard);
    if ((rc = compress_create(cfg->compressor, "--compressor", m->layers, m->n_layers, P, 0,
                              cfg->tc.seed, &c, err)))
        goto done;
    if ((rc = policy_create(cfg->policy, "--policy", &ctx, &p, err))) goto done;
    /* one step on an empty observation: the first decision must already be valid */
    double zeros[MODEL_MAX_LAYERS] = {0};
    PolicyObs obs = {.epoch_start = 1,
                     .lr = cfg->tc.lr.base_lr,
                     .loss = 1,
                     .grad_norm_rank0 = zeros,
                     .grad_norm_mean = zeros};
    PolicyDecision d; /* policy_step resets it and sets its batch */
    policy_step(p, &obs, &d);
    rc = check_decision(cfg, m, compress_find(ctx.compressor), &d, p->ops->mode == POLICY_PERIODIC,
                        err);
done:
    policy_free(p);
    compress_free(c);
    model_free(m);
    return rc;
}

int driver_replay_fast(const RunConfig *cfg, char *why, size_t n)
{
    const char *no = NULL;
    int same_slowdown = 1;
    for (int w = 1; cfg->slowdown && w < cfg->cluster.workers; w++)
        same_slowdown &= cfg->slowdown[w] == cfg->slowdown[0];
    if (!cfg->replay)
        no = "not a replay";
    else if (cfg->replay_engine == REPLAY_ACTORS)
        no = "--replay-engine actors";
    else if (cfg->backend != COLL_ANALYTIC)
        no = "--collectives transfer simulates every message";
    else if (cfg->jitter_sigma > 0)
        no = "--compute-jitter makes the workers differ";
    else if (!same_slowdown)
        no = "--slowdown makes the workers differ";
    else if (cfg->cluster.platform_file)
        no = "--platform: a platform file's hosts and routes may differ";
    else if (cfg->simgrid_cfg)
        no = "--cfg= options may change SimGrid's timings";
    else if (cfg->record_trace)
        no = "--record-trace";
    else if (cfg->params_out)
        no = "the final parameters are wanted";
    if (why && n) snprintf(why, n, "%s", no ? no : "");
    return no == NULL;
}

/* ---- per-step pieces ---- */

/* Per layer, the L2 norm of the local gradient, and the epoch's running sum of gradients, in
 * one pass. Squares are summed in float lanes over blocks of 1024 and the blocks in double, so
 * the loop vectorises and the rounding stays at about 1e-7 relative. */
static void layer_norms_and_sum(const Model *m, double *norms, float *gsum)
{
    enum { BLOCK = 1024 };
    for (int l = 0; l < m->n_layers; l++) {
        const LayerView *v = &m->layers[l];
        const float *g = m->grads + v->offset;
        float *acc = gsum + v->offset;
        size_t n = layer_size(v);
        double total = 0;
        for (size_t lo = 0; lo < n; lo += BLOCK) {
            size_t hi = lo + BLOCK < n ? lo + BLOCK : n;
            float s = 0;
            for (size_t i = lo; i < hi; i++) {
                s += g[i] * g[i];
                acc[i] += g[i];
            }
            total += s;
        }
        norms[l] = sqrt(total);
    }
}

/* The step's learning rate: the schedule at the epoch progress, scaled linearly with the global
 * batch when a policy changes it (Goyal et al. 2017, "Accurate, Large Minibatch SGD"). */
static double lr_for(const DriverRun *run, int epoch, int pos, int b)
{
    const RunConfig *cfg = run->cfg;
    double lr = lr_at(&cfg->tc.lr, epoch + (double)pos / run->shard, (double)run->shard / b);
    return lr * (double)b / run->b0;
}

/* Replay: the trace's evaluation after `steps` steps, or NULL. Asked with steps that never
 * decrease, so a cursor walks the (ordered) evaluations once over the whole replay. */
static const TraceEval *trace_eval_at(DriverRun *run, long steps)
{
    const Trace *t = run->cfg->replay;
    while (run->eval_cursor < t->n_evals && t->evals[run->eval_cursor].step < steps)
        run->eval_cursor++;
    if (run->eval_cursor < t->n_evals && t->evals[run->eval_cursor].step == steps)
        return &t->evals[run->eval_cursor];
    return NULL;
}

static void record_eval(DriverRun *run, Model *m, const StepState *st, double now)
{
    RunResult *res = run->res;
    const TraceEval *te_replay = NULL;
    if (run->cfg->replay && !(te_replay = trace_eval_at(run, st ? st->step + 1 : 0))) return;
    if (res->n_evals == run->cap_evals) {
        run->cap_evals = run->cap_evals ? 2 * run->cap_evals : 64;
        res->evals = realloc(res->evals, sizeof *res->evals * (size_t)run->cap_evals);
        assert(res->evals);
    }
    EvalRow *e = &res->evals[res->n_evals++];
    memset(e, 0, sizeof *e);
    e->sim_time_s = now;
    e->epoch = st ? st->epoch + run->epoch_end : 0;
    e->step = st ? st->step + 1 : 0;
    e->train_loss = st ? run->loss_mean : NAN;
    e->bytes_per_worker = coll_stats(run->comm, 0)->bytes_sent;
    snprintf(e->state, sizeof e->state, "%s", st ? run->state : "start");
    BwError err;
    double w0 = wallclock_s();
    int eval_rc = BW_OK;
    if (te_replay) { /* the trace's accuracy: a replay does not re-simulate it */
        e->test_accuracy = te_replay->test_accuracy;
        e->test_loss = te_replay->test_loss;
    } else {
        eval_rc = model_evaluate(m, run->cfg->test->x, run->cfg->test->y, run->cfg->test->n,
                                 run->cfg->test->dim, &e->test_loss, &e->test_accuracy, &err);
    }
    res->wall_model_s += wallclock_s() - w0;
    if (eval_rc != BW_OK) {
        e->test_accuracy = NAN;
        e->test_loss = NAN;
    }
    if (!(e->test_accuracy <= res->best_accuracy)) res->best_accuracy = e->test_accuracy;
    if (run->trace && isfinite(e->test_accuracy)) {
        TraceEval te = {
            .step = e->step, .test_accuracy = e->test_accuracy, .test_loss = e->test_loss};
        if (run->has_pending) /* written after the step it follows */
            run->queued_eval = te, run->has_queued_eval = 1;
        else
            trace_write_eval(run->trace, &te);
    }
    res->final_accuracy = e->test_accuracy;
    if (run->cfg->target_accuracy > 0 && isnan(res->time_to_accuracy_s) &&
        e->test_accuracy >= run->cfg->target_accuracy) {
        res->time_to_accuracy_s = now;
        run->target_hit = 1;
    }
}

/* Accordion's signal at an epoch's end: per layer, ||(1/T) sum_t g_t|| of every worker's
 * local gradients over the epoch's T steps; rank 0's and the mean over workers. */
static void epoch_norms(DriverRun *run, const Model *m0)
{
    for (int l = 0; l < m0->n_layers; l++) {
        const LayerView *v = &m0->layers[l];
        double mean = 0;
        for (int w = 0; w < run->P; w++) {
            const float *g = run->w[w].gsum + v->offset;
            double s = 0;
            for (size_t i = 0; i < layer_size(v); i++) s += (double)g[i] * g[i];
            double norm = sqrt(s) / (double)run->epoch_steps;
            if (w == 0) run->epoch_norm_rank0[l] = norm;
            mean += norm / run->P;
        }
        run->epoch_norm_mean[l] = mean;
    }
}

/* Writes the step record held back, and the evaluation that followed it. */
static void flush_trace(DriverRun *run)
{
    if (run->has_pending) trace_write_step(run->trace, &run->pending);
    if (run->has_queued_eval) trace_write_eval(run->trace, &run->queued_eval);
    run->has_pending = run->has_queued_eval = 0;
}

/* The trace's record of this step; the previous one is written now that its averaging's
 * variance (if any) is known. */
static void record_trace_step(DriverRun *run, const PolicyObs *obs, const StepState *st)
{
    if (run->has_pending && obs->averaged) {
        run->pending.has_variance = 1;
        run->pending.param_variance = obs->param_variance;
    }
    flush_trace(run);
    TraceStep *t = &run->pending;
    memset(t, 0, sizeof *t);
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
    run->has_pending = 1;
}

/* Run by the last worker to reach the current step's rendezvous, before anyone is released:
 * the observation, the policy's decision, and the next step's shared state. */
static void rendezvous_leader(DriverRun *run)
{
    const RunConfig *cfg = run->cfg;
    const int P = run->P;
    const Model *m0 = run->w[0].model;
    const StepState *st = &run->cur;
    double loss = 0;
    int finite = 1;
    for (int w = 0; w < P; w++) {
        loss += run->w[w].loss;
        finite &= isfinite(run->w[w].loss);
    }
    run->loss_mean = loss / P;
    if (!finite) {
        run->stop = STOP_DIVERGED;
        snprintf(run->res->message, sizeof run->res->message,
                 "training diverged at epoch %d, step %ld (loss %g); try a smaller --lr",
                 st->epoch + 1, st->step, run->loss_mean);
        return;
    }
    if (run->target_hit && cfg->stop_at_target) {
        run->stop = STOP_TARGET;
        return;
    }
    for (int l = 0; l < m0->n_layers; l++) {
        double s = 0;
        for (int w = 0; w < P; w++) s += run->w[w].norms[l];
        run->grad_norm_rank0[l] = run->w[0].norms[l];
        run->grad_norm_mean[l] = s / P;
    }
    const Trace *tr = cfg->replay;
    const TraceStep *ts = tr ? &tr->steps[st->step] : NULL;
    if (tr)
        run->epoch_end = ts->epoch_end || st->step + 1 == tr->n_steps ||
                         tr->steps[st->step + 1].epoch != ts->epoch;
    else
        run->epoch_end = st->pos + 2 * st->b > run->shard;
    run->epoch_steps++;
    if (run->epoch_end && run->want_norms) {
        epoch_norms(run, m0);
        double sq = 0;
        for (int l = 0; l < m0->n_layers; l++)
            sq += run->epoch_norm_mean[l] * run->epoch_norm_mean[l];
        RunResult *res = run->res;
        res->epoch_norm =
            realloc(res->epoch_norm, sizeof(double) * (size_t)(res->n_epoch_norms + 1));
        res->epoch_last_step =
            realloc(res->epoch_last_step, sizeof(long) * (size_t)(res->n_epoch_norms + 1));
        assert(res->epoch_norm && res->epoch_last_step);
        res->epoch_index =
            realloc(res->epoch_index, sizeof(int) * (size_t)(res->n_epoch_norms + 1));
        assert(res->epoch_index);
        res->epoch_index[res->n_epoch_norms] = st->epoch;
        res->epoch_last_step[res->n_epoch_norms] = st->step;
        res->epoch_norm[res->n_epoch_norms++] = sqrt(sq);
    }
    int lr_decayed = 0;
    if (tr && st->epoch_start && st->epoch > 0) /* a replay: an lr at least halved since the
                                                    previous epoch's start counts as a decay */
        lr_decayed = st->lr <= 0.5 * run->epoch_first_lr;
    if (st->epoch_start) run->epoch_first_lr = st->lr;
    if (!tr && st->epoch_start && st->epoch > 0 && cfg->tc.lr.kind == LR_STEP)
        for (int i = 0; i < cfg->tc.lr.n_milestones; i++)
            lr_decayed |=
                cfg->tc.lr.milestones[i] > st->epoch - 1 && cfg->tc.lr.milestones[i] <= st->epoch;
    PolicyObs obs = {.step = st->step,
                     .epoch = st->epoch,
                     .epoch_start = st->epoch_start,
                     .epoch_end = run->epoch_end,
                     .lr_decayed = lr_decayed,
                     .lr = st->lr,
                     .loss = run->loss_mean,
                     .grad_norm_rank0 = run->grad_norm_rank0,
                     .grad_norm_mean = run->grad_norm_mean,
                     .averaged = run->averaged_prev,
                     .param_variance = run->averaged_prev ? run->variance_prev : 0,
                     .sim_time_s = sim_now(run),
                     .bytes_per_worker = coll_stats(run->comm, 0)->bytes_sent,
                     .epoch_norm_rank0 = run->epoch_end ? run->epoch_norm_rank0 : NULL,
                     .epoch_norm_mean = run->epoch_end ? run->epoch_norm_mean : NULL};
    if (tr) { /* the trace's signals; its last variance stands in when this replay averages
                 where the recorded run did not */
        obs.epoch_norm_rank0 = obs.epoch_norm_mean = ts->has_epoch_norms ? ts->epoch_norms : NULL;
        if (st->step > 0 && tr->steps[st->step - 1].has_variance)
            run->trace_variance = tr->steps[st->step - 1].param_variance;
        obs.param_variance = run->averaged_prev ? run->trace_variance : 0;
    }
    if (run->averaged_prev) run->res->steps[run->res->n_steps - 1].variance = run->variance_prev;
    if (run->trace) record_trace_step(run, &obs, st);
    run->averaged_prev = 0;
    PolicyDecision d; /* policy_step resets it and sets its batch */
    policy_step(run->pol, &obs, &d);
    policy_describe(run->pol, run->state, sizeof run->state);
    int rc = check_decision(cfg, m0, run->cops, &d, run->periodic, &run->err);
    if (rc) {
        run->stop = STOP_ERROR;
        run->err_status = rc;
        return;
    }
    run->dec = d;
    /* the next step (every worker has gathered this step's batch already) */
    if (tr) { /* the next step is the trace's */
        int last = st->step + 1 == tr->n_steps;
        StepState next = {.step = st->step + 1, .epoch = st->epoch, .b = st->b, .lr = st->lr};
        if (!last) {
            const TraceStep *nx = &tr->steps[st->step + 1];
            next.epoch = nx->epoch;
            next.epoch_start = nx->epoch != ts->epoch;
            next.b = nx->batch / P > 0 ? nx->batch / P : 1;
            next.lr = nx->lr;
        }
        run->eval_due = trace_eval_at(run, st->step + 1) != NULL;
        run->cur = next;
        run->stop = last ? STOP_DONE : STOP_NO;
        return;
    }
    /* A new batch that no longer fits in what is left of this epoch waits for the next one, so
     * an epoch ends only where the policy was told it would (obs.epoch_end). */
    run->batch_wanted = d.batch / P;
    StepState next = {
        .step = st->step + 1, .epoch = st->epoch, .pos = st->pos + st->b, .b = run->batch_wanted};
    if (!run->epoch_end && next.pos + next.b > run->shard) next.b = st->b;
    if (run->epoch_end) {
        next.epoch++;
        next.pos = 0;
        next.epoch_start = 1;
        next.b = run->batch_wanted;
    }
    int last = next.epoch == cfg->tc.epochs;
    run->eval_due =
        last || (cfg->eval_every > 0 ? next.step % cfg->eval_every == 0 : run->epoch_end);
    if (next.epoch_start) {
        if (!last) dataset_epoch_order(cfg->train->n, cfg->tc.seed, next.epoch, run->perm);
        if (run->want_norms)
            for (int w = 0; w < P; w++) memset(run->w[w].gsum, 0, sizeof(float) * m0->n_params);
        run->epoch_steps = 0;
    }
    next.lr = lr_for(run, next.epoch, next.pos, next.b);
    run->cur = next;
    run->stop = last ? STOP_DONE : STOP_NO; /* STOP_DONE: this step is the last one */
}

static void add_step_row(DriverRun *run, const StepState *st, const Worker *w0, int averaged)
{
    RunResult *res = run->res;
    if (res->n_steps == run->cap_steps) {
        run->cap_steps = run->cap_steps ? 2 * run->cap_steps : 1024;
        res->steps = realloc(res->steps, sizeof *res->steps * (size_t)run->cap_steps);
        assert(res->steps);
    }
    StepRow *r = &res->steps[res->n_steps++];
    memset(r, 0, sizeof *r);
    r->step = st->step;
    r->epoch = st->epoch;
    r->batch = st->b * run->P;
    r->lr = st->lr;
    r->loss = run->loss_mean;
    r->end_s = sim_now(run);
    r->compute_s = w0->step_compute_s;
    r->comm_s = w0->step_comm_s;
    r->wait_s = w0->step_wait_s;
    r->bytes = coll_stats(run->comm, 0)->bytes_sent;
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
}

/* Periodic mode: average the parameters with an allreduce, and measure ||x_w - xbar||^2 (the
 * variance mean_w of it is handed to the policy at the next step). */
static void average_parameters(DriverRun *run, int rank, Worker *me)
{
    Model *m = me->model;
    const size_t n = m->n_params;
    memcpy(me->before, m->params, n * sizeof(float));
    coll_allreduce(run->comm, rank, m->params, n);
    const float inv = 1.0f / (float)run->P;
    double d2 = 0;
    for (size_t i = 0; i < n; i++) {
        m->params[i] *= inv;
        double d = (double)me->before[i] - m->params[i];
        d2 += d * d;
    }
    me->sq_dist = d2;
}

static void progress_line(const DriverRun *run, const StepState *st)
{
    const RunResult *res = run->res;
    double acc = res->n_evals ? res->evals[res->n_evals - 1].test_accuracy : NAN;
    fprintf(stderr, "\r\033[K[%s] epoch %d/%d  step %ld  sim %.3fs  acc %.4f", run->cfg->label,
            st->epoch + 1, run->cfg->tc.epochs, st->step + 1, sim_now(run), acc);
    fflush(stderr);
}

/* Replay: what a worker reports at the rendezvous, from the trace: its loss, and its layers'
 * gradient norms (rank 0 takes rank 0's norms when the trace has them). */
static void replay_observation(Worker *me, const TraceStep *ts, int n_layers, int rank)
{
    const double *norms = rank == 0 && ts->has_rank0 ? ts->grad_norms_rank0 : ts->grad_norms;
    memcpy(me->norms, norms, sizeof(double) * (size_t)n_layers);
    me->loss = ts->loss;
}

/* Replay: this step's gradient is the worker's fixed random tensor, each layer scaled to the
 * trace's norm, so compressors select, factor and quantise realistic data and every collective
 * moves what it would. */
static void replay_gradient(Model *m, Worker *me, const TraceStep *ts, int rank)
{
    for (int l = 0; l < m->n_layers; l++) {
        const LayerView *v = &m->layers[l];
        float scale = (float)ts->grad_norms[l];
        const float *t = me->gtemplate + v->offset;
        float *g = m->grads + v->offset;
        for (size_t i = 0; i < layer_size(v); i++) g[i] = scale * t[i];
    }
    replay_observation(me, ts, m->n_layers, rank);
}

/* A worker's simulated work for a step of b samples on a host of the given speed: flops per
 * sample x b, or (a trace with measured step times) the measured seconds scaled by the batch,
 * as flops of this host; times its slowdown. Jitter comes on top (worker_main). */
static double step_flops(const RunConfig *cfg, double flops_per_sample, int b, double speed_flops,
                         int rank)
{
    double flops = flops_per_sample * b;
    if (cfg->replay && cfg->replay->h.compute_s_per_step > 0) /* measured, scaled by batch */
        flops = cfg->replay->h.compute_s_per_step * speed_flops * b / cfg->replay->h.batch;
    if (cfg->slowdown) flops *= cfg->slowdown[rank];
    return flops;
}

/* Once every worker has averaged: the variance the policy sees at the next step and steps.csv
 * reports. A replay trains no parameters, so its variance is the trace's latest measurement up
 * to this step (what the policy is shown), not that of the stand-in replicas. */
static void averaging_done(DriverRun *run, const StepState *st)
{
    const Trace *tr = run->cfg->replay;
    if (tr) {
        const TraceStep *ts = &tr->steps[st->step];
        run->variance_prev = ts->has_variance ? ts->param_variance : run->trace_variance;
    } else {
        double v = 0;
        for (int w = 0; w < run->P; w++) v += run->w[w].sq_dist;
        run->variance_prev = v / run->P;
    }
    run->averaged_prev = 1;
    run->avg_deposits = 0;
    run->res->averagings++;
}

static void worker_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    Worker *me = sg_actor_self_get_data();
    DriverRun *run = me->run;
    const int rank = me->rank, P = run->P;
    const RunConfig *cfg = run->cfg;
    Model *m = me->model;
    const double flops_per_sample = model_flops_per_sample(m);
    double levels[MODEL_MAX_LAYERS];
    for (;;) {
        const StepState st = run->cur;
        /* real forward and backward on this worker's part of the global batch */
        if (!cfg->replay && st.b > me->cap) {
            me->cap = st.b;
            me->x = realloc(me->x, sizeof(float) * (size_t)st.b * (size_t)cfg->train->dim);
            me->y = realloc(me->y, (size_t)st.b);
            me->idx = realloc(me->idx, sizeof(int) * (size_t)st.b);
            assert(me->x && me->y && me->idx);
        }
        if (cfg->replay) {
            replay_gradient(m, me, &cfg->replay->steps[st.step], rank);
        } else {
            for (int j = 0; j < st.b; j++)
                me->idx[j] = dataset_shard_index(run->perm, P, rank, st.pos + j);
            double w0 = wallclock_s();
            dataset_gather(cfg->train, me->idx, st.b, me->x, me->y);
            me->loss = model_forward_backward(m, me->x, me->y, st.b);
            run->res->wall_model_s += wallclock_s() - w0;
            if (run->want_norms) layer_norms_and_sum(m, me->norms, me->gsum);
        }

        /* simulated compute */
        double t0 = simgrid_get_clock();
        double flops =
            step_flops(cfg, flops_per_sample, st.b, sg_host_get_speed(sg_host_self()), rank);
        if (cfg->jitter_sigma > 0) {
            double s = cfg->jitter_sigma;
            flops *= exp(s * gsl_ran_gaussian(me->rng, 1.0) - 0.5 * s * s);
        }
        sg_actor_execute(flops);
        double t1 = simgrid_get_clock();
        me->step_compute_s = t1 - t0;

        /* rendezvous: the last to arrive runs the policy for everyone */
        if (++run->arrived == P) {
            run->arrived = 0;
            rendezvous_leader(run);
        }
        sg_barrier_wait(run->bar);
        double t2 = simgrid_get_clock();
        me->step_wait_s = t2 - t1;
        me->compute_s += me->step_compute_s;
        me->wait_s += me->step_wait_s;
        if (run->stop == STOP_DIVERGED || run->stop == STOP_TARGET || run->stop == STOP_ERROR)
            break;
        const int last = run->stop == STOP_DONE;

        /* communication and the update */
        int averaged = 0;
        if (!run->periodic) {
            for (int l = 0; l < m->n_layers; l++) levels[l] = run->dec.level[l];
            compress_reduce(me->comp, run->comm, m->grads, levels);
            double w1 = wallclock_s();
            if (!cfg->replay) sgd_step(&me->opt, m->params, m->grads, st.lr);
            run->res->wall_model_s += wallclock_s() - w1;
        } else {
            double w1 = wallclock_s();
            if (!cfg->replay) sgd_step(&me->opt, m->params, m->grads, st.lr);
            run->res->wall_model_s += wallclock_s() - w1;
            if (run->dec.average) {
                average_parameters(run, rank, me);
                averaged = 1;
            }
        }
        double t3 = simgrid_get_clock();
        me->step_comm_s = t3 - t2;
        me->comm_s += me->step_comm_s;

        /* the variance at this averaging, for the policy at the next step */
        if (averaged && ++run->avg_deposits == P) averaging_done(run, &st);
        if (rank == 0) add_step_row(run, &st, me, averaged);

        /* evaluation, free in simulated time */
        if (run->eval_due) {
            if (!run->periodic) {
                if (rank == 0) record_eval(run, m, &st, t3);
            } else {
                for (size_t i = 0; i < m->n_params; i++) run->eval_acc[i] += m->params[i];
                if (++run->eval_deposits == P) {
                    Model *e = run->eval_model;
                    for (size_t i = 0; i < m->n_params; i++) {
                        e->params[i] = (float)(run->eval_acc[i] / P);
                        run->eval_acc[i] = 0;
                    }
                    run->eval_deposits = 0;
                    record_eval(run, e, &st, simgrid_get_clock());
                }
            }
        }
        if (rank == 0 && cfg->progress && (st.step % 10 == 0 || last)) progress_line(run, &st);
        if (last) break;
    }
}

/* The collective a compressor's message goes through, charged to every rank at once. */
static double charge(Comm *comm, const CompressMsg *msg)
{
    switch (msg->op) {
    case COMPRESS_ALLREDUCE_F32:
        return coll_charge_allreduce(comm, msg->count, sizeof(float));
    case COMPRESS_ALLREDUCE_F16:
        return coll_charge_allreduce(comm, msg->count, sizeof(uint16_t));
    case COMPRESS_ALLGATHER:
        return coll_charge_allgather(comm, msg->count);
    }
    return 0.0;
}

/* The fast replay (driver_replay_fast): the workers are identical, so one loop on rank 0's
 * clock stands for them all. It follows worker_main step by step, with the same arithmetic:
 * the compute time, the rendezvous (no waiting: everyone arrives at once), then the messages
 * compress_plan lists for the decided levels (or the parameter averaging), each charged the
 * analytic backend's own time and bytes (coll_charge_*), so every figure equals the actors'. */
static void replay_fast(DriverRun *run)
{
    const RunConfig *cfg = run->cfg;
    Worker *me = &run->w[0];
    const Model *m = me->model;
    const double speed_flops = cfg->cluster.gpu_flops; /* every generated host's speed */
    const double flops_per_sample = model_flops_per_sample(m);
    for (;;) {
        const StepState st = run->cur;
        const TraceStep *ts = &cfg->replay->steps[st.step];
        for (int w = 0; w < run->P; w++) replay_observation(&run->w[w], ts, m->n_layers, w);
        const double t0 = run->now;
        run->now = t0 + step_flops(cfg, flops_per_sample, st.b, speed_flops, 0) / speed_flops;
        const double t1 = run->now;
        me->step_compute_s = t1 - t0;
        rendezvous_leader(run);
        me->step_wait_s = 0;
        me->compute_s += me->step_compute_s;
        me->wait_s += me->step_wait_s;
        if (run->stop == STOP_DIVERGED || run->stop == STOP_TARGET || run->stop == STOP_ERROR)
            break;
        const int last = run->stop == STOP_DONE;

        int averaged = 0;
        if (!run->periodic) {
            CompressMsg msgs[COMPRESS_MAX_MSGS];
            int n = compress_plan(me->comp, run->dec.level, msgs);
            for (int i = 0; i < n; i++) run->now += charge(run->comm, &msgs[i]);
        } else if (run->dec.average) {
            run->now += coll_charge_allreduce(run->comm, m->n_params, sizeof(float));
            averaged = 1;
        }
        const double t3 = run->now;
        me->step_comm_s = t3 - t1;
        me->comm_s += me->step_comm_s;
        if (averaged) averaging_done(run, &st);
        add_step_row(run, &st, me, averaged);
        if (run->eval_due) record_eval(run, NULL, &st, t3);
        if (cfg->progress && (st.step % 10 == 0 || last)) progress_line(run, &st);
        if (last) break;
    }
    for (int w = 1; w < run->P; w++) { /* every worker's books are rank 0's */
        run->w[w].compute_s = me->compute_s;
        run->w[w].comm_s = me->comm_s;
        run->w[w].wait_s = me->wait_s;
    }
}

static void free_workers(DriverRun *run)
{
    if (!run->w) return;
    for (int w = 0; w < run->P; w++) {
        Worker *me = &run->w[w];
        model_free(me->model);
        sgd_free(&me->opt);
        compress_free(me->comp);
        if (me->rng) gsl_rng_free(me->rng);
        free(me->x);
        free(me->y);
        free(me->idx);
        free(me->before);
        free(me->gsum);
        free(me->gtemplate);
    }
    free(run->w);
    run->w = NULL;
}

int driver_run(const RunConfig *cfg, RunResult *res, BwError *err)
{
    int rc = driver_check(cfg, err);
    if (rc) return rc;
    memset(res, 0, sizeof *res);
    res->time_to_accuracy_s = NAN;
    res->best_accuracy = NAN;
    res->final_accuracy = NAN;
    snprintf(res->policy_spec, sizeof res->policy_spec, "%s", cfg->policy);
    snprintf(res->compressor_spec, sizeof res->compressor_spec, "%s", cfg->compressor);
    const int P = cfg->cluster.workers;
    DriverRun *run = calloc(1, sizeof *run);
    if (!run) return bw_fail(err, BW_ERUNTIME, "out of memory");
    run->cfg = cfg;
    run->res = res;
    run->P = P;
    run->shard = shard_of(cfg);
    run->b0 = cfg->tc.batch;

    run->fast = driver_replay_fast(cfg, res->replay_engine_why, sizeof res->replay_engine_why);
    if (cfg->replay) res->replay_engine = run->fast ? "fast" : "actors";

    res->cluster = cfg->cluster;
    if (!run->fast && (rc = engine_load_cluster(&res->cluster, err))) goto done;
    run->comm = run->fast ? coll_comm_create_offline(&res->cluster, cfg->algo)
                          : coll_comm_create(&res->cluster, cfg->algo, cfg->backend);
    run->w = calloc((size_t)P, sizeof *run->w);
    run->perm = malloc(sizeof(int) * (size_t)(cfg->replay ? 1 : cfg->train->n));
    for (int w = 0; run->w && w < P; w++) {
        run->w[w].run = run;
        run->w[w].rank = w;
    }
    if (!run->comm || !run->w || !run->perm) {
        rc = bw_fail(err, BW_ERUNTIME, "out of memory for %d workers", P);
        goto done;
    }
    if (run->fast && (rc = make_model(cfg, &run->w[0].model, err)) == BW_OK)
        /* rank 0's layer table, and its compressor for the message plans */
        rc = compress_create(cfg->compressor, "--compressor", run->w[0].model->layers,
                             run->w[0].model->n_layers, P, 0, cfg->tc.seed, &run->w[0].comp, err);
    for (int w = 0; w < P && rc == BW_OK && !run->fast; w++) {
        Worker *me = &run->w[w];
        if ((rc = make_model(cfg, &me->model, err)) ||
            (rc = sgd_init(&me->opt, me->model->n_params, cfg->tc.sgd, err)) ||
            (rc = compress_create(cfg->compressor, "--compressor", me->model->layers,
                                  me->model->n_layers, P, w, cfg->tc.seed, &me->comp, err)))
            break;
        me->rng = gsl_rng_alloc(gsl_rng_mt19937);
        me->before = malloc(sizeof(float) * me->model->n_params);
        me->gsum = calloc(me->model->n_params, sizeof(float));
        if (cfg->replay && me->rng &&
            (me->gtemplate = malloc(sizeof(float) * me->model->n_params))) {
            gsl_rng_set(me->rng, (unsigned long)splitmix64(cfg->tc.seed * 7919 + (uint64_t)w + 1));
            for (int l = 0; l < me->model->n_layers; l++) {
                const LayerView *v = &me->model->layers[l];
                float *t = me->gtemplate + v->offset;
                double sq = 0;
                for (size_t i = 0; i < layer_size(v); i++) {
                    t[i] = (float)gsl_ran_gaussian(me->rng, 1.0);
                    sq += (double)t[i] * t[i];
                }
                for (size_t i = 0; i < layer_size(v); i++) t[i] = (float)(t[i] / sqrt(sq));
            }
        }
        if (!me->rng || !me->before || !me->gsum || (cfg->replay && !me->gtemplate))
            rc = bw_fail(err, BW_ERUNTIME, "out of memory");
        else
            gsl_rng_set(me->rng, (unsigned long)splitmix64(cfg->tc.seed * 4099 + (uint64_t)w + 1));
    }
    if (rc) goto done;
    const Model *m0 = run->w[0].model;
    PolicyContext ctx;
    fill_context(&ctx, cfg, m0, run->shard);
    if ((rc = policy_create(cfg->policy, "--policy", &ctx, &run->pol, err))) goto done;
    run->cops = compress_find(ctx.compressor);
    run->periodic = run->pol->ops->mode == POLICY_PERIODIC;
    res->policy_mode = run->pol->ops->mode;
    res->n_params = m0->n_params;
    res->flops_per_sample = model_flops_per_sample(m0);
    if (!run->fast) { /* the model evaluated (a replay's evaluations are the trace's) */
        if ((rc = make_model(cfg, &run->eval_model, err))) goto done;
        run->eval_acc = calloc(m0->n_params, sizeof(double));
        if (!run->eval_acc) {
            rc = bw_fail(err, BW_ERUNTIME, "out of memory");
            goto done;
        }
        run->bar = sg_barrier_init((unsigned)P);
    }
    /* a replay takes its norms from the trace */
    run->want_norms = !cfg->replay && (run->pol->ops->needs_grad_norms || cfg->record_trace);
    if (cfg->record_trace) {
        TraceHeader h;
        memset(&h, 0, sizeof h);
        snprintf(h.source, sizeof h.source, "bellows run (policy %s, compressor %s, seed %lu)",
                 cfg->policy, cfg->compressor, cfg->tc.seed);
        snprintf(h.model, sizeof h.model, "%s", cfg->model_name ? cfg->model_name : "?");
        snprintf(h.dataset, sizeof h.dataset, "fashion-mnist");
        h.workers = P;
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
        if ((rc = trace_writer_open(cfg->record_trace, &h, &run->trace, err))) goto done;
    }

    /* the untrained model at time 0, then the first step */
    snprintf(run->state, sizeof run->state, "start");
    record_eval(run, run->eval_model, NULL, 0.0);
    if (cfg->replay) {
        const TraceStep *t0 = &cfg->replay->steps[0];
        run->cur = (StepState){.epoch = t0->epoch,
                               .b = t0->batch / P > 0 ? t0->batch / P : 1,
                               .epoch_start = 1,
                               .lr = t0->lr};
        res->accuracy_from_trace = 1;
    } else {
        dataset_epoch_order(cfg->train->n, cfg->tc.seed, 0, run->perm);
        run->cur = (StepState){.b = run->b0, .epoch_start = 1};
        run->cur.lr = lr_for(run, 0, 0, run->b0);
    }

    if (run->fast) {
        replay_fast(run);
    } else {
        for (int w = 0; w < P; w++) {
            char name[32];
            snprintf(name, sizeof name, "worker%d", w);
            char *argv[] = {name, NULL};
            sg_actor_t actor = sg_actor_init(name, engine_host(w));
            sg_actor_set_data(actor, &run->w[w]);
            sg_actor_start(actor, worker_main, 1, argv);
        }
        simgrid_run();
    }
    if (cfg->progress) fputs("\r\033[K", stderr);

    if (run->stop == STOP_ERROR) {
        rc = run->err_status;
        *err = run->err;
        goto done;
    }
    if (run->trace) {
        flush_trace(run);
        rc = trace_writer_close(run->trace, err);
        run->trace = NULL;
        if (rc) goto done;
    }
    res->status = run->stop == STOP_DIVERGED ? "diverged"
                  : run->stop == STOP_TARGET ? "reached_target"
                                             : "completed";
    res->epochs_done = run->cur.epoch;
    if (run->averaged_prev && res->n_steps) /* the last averaging had no next step to report it */
        res->steps[res->n_steps - 1].variance = run->variance_prev;
    for (int w = 0; w < P; w++) {
        const CollStats *cs = coll_stats(run->comm, w);
        res->compute_s += run->w[w].compute_s / P;
        res->wait_s += run->w[w].wait_s / P;
        res->communication_s += run->w[w].comm_s / P;
        res->bytes_per_worker += cs->bytes_sent / P;
        res->payload_bytes_per_worker += cs->payload_bytes / P;
    }
    res->sim_time_s = sim_now(run);
    const Model *m = run->w[0].model;
    for (int w = 1; w < P && !run->fast; w++)
        for (size_t i = 0; i < m->n_params; i++) {
            double d = fabs((double)run->w[w].model->params[i] - m->params[i]);
            if (!(d <= res->replica_max_diff)) res->replica_max_diff = d;
        }
    if (cfg->params_out) {
        assert(!run->fast);
        if (run->periodic) /* the mean of the replicas, as evaluated */
            for (size_t i = 0; i < m->n_params; i++) {
                double s = 0;
                for (int w = 0; w < P; w++) s += run->w[w].model->params[i];
                cfg->params_out[i] = (float)(s / P);
            }
        else
            memcpy(cfg->params_out, m->params, sizeof(float) * m->n_params);
    }
done:
    trace_writer_abort(run->trace);
    if (run->bar) sg_barrier_destroy(run->bar);
    policy_free(run->pol);
    free_workers(run);
    coll_comm_free(run->comm);
    model_free(run->eval_model);
    free(run->eval_acc);
    free(run->perm);
    free(run);
    return rc;
}

void driver_result_free(RunResult *res)
{
    free(res->evals);
    free(res->steps);
    free(res->epoch_norm);
    free(res->epoch_last_step);
    free(res->epoch_index);
    res->epoch_index = NULL;
    res->epoch_norm = NULL;
    res->epoch_last_step = NULL;
    res->evals = NULL;
    res->steps = NULL;
}
