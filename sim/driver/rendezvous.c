/* rendezvous.c: run by the last worker to arrive, before anyone is released: the observation,
 * the policy's decision, and the next step's shared state (run->cur), which nothing else writes.
 * Live runs take epochs and lrs from the data and the schedule, replays from the trace, each in
 * its own observe and advance. Every worker draws step t's batch from the same epoch order. */
#include "driver_impl.h"

#include "outfile.h"
#include "wallclock.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* The step's learning rate: the schedule at the epoch progress, scaled linearly with the global
 * batch when a policy changes it (Goyal et al. 2017, "Accurate, Large Minibatch SGD"). */
static double lr_for(const DriverRun *run, int epoch, int pos, int b)
{
    const RunConfig *cfg = run->cfg;
    double lr = lr_at(&cfg->tc.lr, epoch + (double)pos / run->shard, (double)run->shard / b);
    return lr * (double)b / run->b0;
}

/* The first step: the trace's, or the first epoch's order at the starting batch. */
void rendezvous_first_step(DriverRun *run)
{
    const RunConfig *cfg = run->cfg;
    if (cfg->replay) {
        const TraceStep *t0 = &cfg->replay->steps[0];
        run->cur = (StepState){.epoch = t0->epoch,
                               .b = replay_per_worker_batch(t0, run->P),
                               .epoch_start = 1,
                               .lr = t0->lr};
        return;
    }
    dataset_epoch_order(cfg->train->n, cfg->tc.seed, 0, run->perm);
    run->cur = (StepState){.b = run->b0, .epoch_start = 1};
    run->cur.lr = lr_for(run, 0, 0, run->b0);
}

/* A decision's levels and batch must suit the compressor and the cluster. */
int rendezvous_check_decision(const RunConfig *cfg, const Model *m, const CompressorOps *cops,
                              const PolicyDecision *d, int periodic, BwError *err)
{
    int P = cfg->cluster.workers;
    const int live = !cfg->replay || cfg->priced; /* a priced run's data is the flags' */
    if (cfg->replay && !cfg->priced && d->batch != cfg->tc.batch * P)
        return bw_fail(err, BW_EUSAGE,
                       "--policy %s: a replay follows the trace's batches; a policy that changes "
                       "the batch cannot be replayed",
                       cfg->policy);
    if (live && (d->batch < P || d->batch % P != 0))
        return bw_fail(err, BW_EUSAGE,
                       "--policy %s: global batch %d is not a positive multiple of the %d workers",
                       cfg->policy, d->batch, P);
    if (live && d->batch / P > dataset_shard_size(cfg->train->n, P))
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

/* A run diverged when the workers' mean loss is not finite, or when it exceeds
 * DRIVER_DIVERGENCE_FACTOR times the larger of the first step's loss and ln 10 (the loss of a
 * uniform guess over Fashion-MNIST's 10 classes, a floor for runs that start from a low loss):
 * a classifier that far above where it started is confidently wrong, not learning. */
static int loss_diverged(DriverRun *run, const StepState *st)
{
    if (!isfinite(run->loss_mean)) return 1;
    if (st->step == 0) run->loss_limit = DRIVER_DIVERGENCE_FACTOR * fmax(run->loss_mean, M_LN10);
    return run->loss_mean > run->loss_limit;
}

/* The workers' mean loss. Returns 0 if the run stops here: a loss that diverged, or a target
 * reached by a run told to stop there. */
static int gather_losses(DriverRun *run, const StepState *st)
{
    double loss = 0;
    for (int w = 0; w < run->P; w++) loss += run->w[w].loss;
    /* a replay's workers all report the trace's loss, which is the recorded mean itself */
    run->loss_mean = run->cfg->replay ? run->w[0].loss : loss / run->P;
    if (loss_diverged(run, st)) {
        run->stop = STOP_DIVERGED;
        if (isfinite(run->loss_mean))
            snprintf(run->res->message, sizeof run->res->message,
                     "training diverged at epoch %d, step %ld: loss %g exceeds %g (%g x max(the "
                     "first step's loss, ln 10)); try a smaller --lr",
                     st->epoch + 1, st->step, run->loss_mean, run->loss_limit,
                     DRIVER_DIVERGENCE_FACTOR);
        else
            snprintf(run->res->message, sizeof run->res->message,
                     "training diverged at epoch %d, step %ld (loss %g); try a smaller --lr",
                     st->epoch + 1, st->step, run->loss_mean);
        return 0;
    }
    if (run->target_hit && run->cfg->stop_at_target) {
        run->stop = STOP_TARGET;
        return 0;
    }
    return 1;
}

/* Per layer, rank 0's gradient norm and the mean over workers. */
static void gather_norms(DriverRun *run)
{
    const Model *m0 = run->w[0].model;
    for (int l = 0; l < m0->n_layers; l++) {
        double s = 0;
        for (int w = 0; w < run->P; w++) s += run->w[w].norms[l];
        run->grad_norm_rank0[l] = run->w[0].norms[l];
        run->grad_norm_mean[l] = s / run->P;
    }
}

/* What the run has shown so far: rank 0's last finished step (its compute, communication and
 * waiting; compression is not charged yet, so 0) and the last evaluation. */
static void observe_history(const DriverRun *run, PolicyObs *o)
{
    const RunResult *res = run->res;
    if (res->n_steps) {
        const StepRow *r = &res->steps[res->n_steps - 1];
        o->compute_s = r->compute_s;
        o->compress_s = r->compress_s;
        o->comm_s = r->comm_s;
        o->wait_s = r->wait_s;
        o->have |= BELLOWS_HAS_STEP_TIMES;
    }
    const EvalRow *e = res->n_evals ? &res->evals[res->n_evals - 1] : NULL;
    if (e && isfinite(e->test_accuracy)) {
        o->eval_accuracy = e->test_accuracy;
        o->eval_loss = e->test_loss;
        o->eval_step = e->step;
        o->eval_time_s = e->sim_time_s;
        o->have |= BELLOWS_HAS_EVAL;
    }
}

/* The observation both kinds of run fill alike. */
static PolicyObs observation(const DriverRun *run, const StepState *st, int lr_decayed)
{
    PolicyObs o = {.step = st->step,
                   .epoch = st->epoch,
                   .epoch_start = st->epoch_start,
                   .epoch_end = run->epoch_end,
                   .lr_decayed = lr_decayed,
                   .lr = st->lr,
                   .loss = run->loss_mean,
                   .grad_norm_rank0 = run->grad_norm_rank0,
                   .grad_norm_mean = run->grad_norm_mean,
                   .averaged = run->avg.averaged_prev,
                   .param_variance = run->avg.averaged_prev ? run->avg.variance_prev : 0,
                   .sim_time_s = run_now(run),
                   .bytes_per_worker = coll_stats(run->comm, 0)->bytes_sent,
                   .epoch_norm_rank0 = run->epoch_end ? run->epoch_norm_rank0 : NULL,
                   .epoch_norm_mean = run->epoch_end ? run->epoch_norm_mean : NULL};
    observe_history(run, &o);
    return o;
}

/* Accordion's signal at an epoch's end: per layer, ||(1/T) sum_t g_t|| of every worker's
 * local gradients over the epoch's T steps; rank 0's and the mean over workers. */
static void epoch_norms(DriverRun *run)
{
    const Model *m0 = run->w[0].model;
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

/* Whether the lr decayed at step st: a step schedule's milestone fell in the epoch just ended. */
static int lr_decayed_live(const LrSchedule *lr, const StepState *st)
{
    int decayed = 0;
    if (st->epoch_start && st->epoch > 0 && lr->kind == LR_STEP)
        for (int i = 0; i < lr->n_milestones; i++)
            decayed |= lr->milestones[i] > st->epoch - 1 && lr->milestones[i] <= st->epoch;
    return decayed;
}

/* Live: an epoch ends where the next batch would no longer fit in the shard; the lr decayed
 * where a step schedule's milestone fell in the epoch just ended. */
static PolicyObs live_observe(DriverRun *run, const StepState *st)
{
    const LrSchedule *lr = &run->cfg->tc.lr;
    run->epoch_end = st->pos + 2 * st->b > run->shard;
    run->epoch_steps++;
    if (run->epoch_end && run->want_norms) {
        double w0 = wallclock_s();
        epoch_norms(run);
        run->res->wall_policy_s += wallclock_s() - w0;
        /* epochs.csv: a policy's signal (--record-trace computes it for any policy) */
        if (run->pol->ops->needs_grad_norms) record_epoch_norm(run, st);
    }
    PolicyObs obs = observation(run, st, lr_decayed_live(lr, st));
    /* for the policies that ask (--record-trace computes them for any policy, unseen) */
    if (run->want_norms && run->pol->ops->needs_grad_norms)
        obs.have |= BELLOWS_HAS_GRAD_NORMS | BELLOWS_HAS_RANK0_NORMS;
    if (obs.epoch_norm_mean) obs.have |= BELLOWS_HAS_EPOCH_NORMS;
    if (obs.averaged) obs.have |= BELLOWS_HAS_VARIANCE;
    return obs;
}

/* Replay: epochs end where the trace's do; an lr at least halved since the previous epoch's
 * start counts as a decay (a priced run's schedule says); the epoch norms are the trace's, and its
 * last measured variance stands in when this replay averages where the recorded run did not. */
static PolicyObs replay_observe(DriverRun *run, const StepState *st)
{
    const Trace *tr = run->cfg->replay;
    const TraceStep *ts = &tr->steps[st->step];
    run->epoch_end =
        ts->epoch_end || st->step + 1 == tr->n_steps || tr->steps[st->step + 1].epoch != ts->epoch;
    /* a priced run knows its schedule; a replay guesses from the rates */
    int lr_decayed = run->cfg->priced ? lr_decayed_live(&run->cfg->tc.lr, st)
                                      : st->epoch_start && st->epoch > 0 &&
                                            st->lr <= 0.5 * run->cursor.epoch_first_lr;
    if (st->epoch_start) run->cursor.epoch_first_lr = st->lr;
    PolicyObs obs = observation(run, st, lr_decayed);
    /* the trace's mean norms are the recorded run's mean (rank 0's stands in the gathered one) */
    memcpy(run->grad_norm_mean, ts->grad_norms, sizeof(double) * (size_t)tr->h.n_layers);
    obs.epoch_norm_mean = ts->has_epoch_norms ? ts->epoch_norms : NULL;
    /* rank 0's own epoch norms if recorded (decider=rank0), else the mean stands in */
    obs.epoch_norm_rank0 = ts->has_epoch_rank0 ? ts->epoch_norms_rank0 : obs.epoch_norm_mean;
    if (st->step > 0 && tr->steps[st->step - 1].has_variance)
        run->cursor.trace_variance = tr->steps[st->step - 1].param_variance;
    obs.param_variance = run->avg.averaged_prev ? run->cursor.trace_variance : 0;
    /* what the trace recorded: its mean norms always, rank 0's and the epoch norms if written,
     * a variance once it measured one */
    if (obs.epoch_norm_mean) obs.have |= BELLOWS_HAS_EPOCH_NORMS;
    if (run->cfg->priced) { /* what the live run showed, and its epochs.csv */
        const int n = tr->h.n_layers;
        if (run->pol->ops->needs_grad_norms)
            obs.have |= BELLOWS_HAS_GRAD_NORMS | BELLOWS_HAS_RANK0_NORMS;
        if (run->pol->ops->needs_grad_norms && ts->has_epoch_norms) {
            memcpy(run->epoch_norm_mean, ts->epoch_norms, sizeof(double) * (size_t)n);
            record_epoch_norm(run, st);
        }
        if (obs.averaged) obs.have |= BELLOWS_HAS_VARIANCE;
        return obs;
    }
    obs.have |= BELLOWS_HAS_GRAD_NORMS;
    if (ts->has_rank0) obs.have |= BELLOWS_HAS_RANK0_NORMS;
    if (obs.averaged && run->cursor.trace_variance > 0) obs.have |= BELLOWS_HAS_VARIANCE;
    return obs;
}

/* SIGINT: every worker stops at once, nothing is kept. */
static void stop_interrupted(DriverRun *run, long step)
{
    long of = run->cfg->replay ? run->cfg->replay->n_steps
                               : (long)run->cfg->tc.epochs * (run->shard / run->b0);
    BwError why;
    run_fail(run, bw_fail(&why, BW_EINTR, "interrupted at step %ld of %ld", step, of), &why);
}

/* A priced twin's policy, declared price-blind, must decide at this price what it decided in
 * the training run (the trace's fingerprint): one that reads the price anyway would be priced
 * on decisions it would not make here. */
static int check_price_blind(const DriverRun *run, long step, const PolicyDecision *d, BwError *err)
{
    const RunConfig *cfg = run->cfg;
    if (!cfg->priced || step >= cfg->replay->n_steps) return BW_OK;
    const char *was = cfg->replay->steps[step].decision;
    char now[17];
    if (!was[0]) return BW_OK; /* a trace without fingerprints */
    record_decision_print(run, d, now);
    if (strcmp(now, was) == 0) return BW_OK;
    return bw_fail(
        err, BW_EUSAGE,
        "--policy %s: declared price-blind (price_blind = 1), but at step %ld it decides "
        "differently at this price than in the training run it is priced from: it "
        "reads the price; declare price_blind = 0 (bellows_policy.h), or sweep with "
        "--train-each",
        cfg->policy, step);
}

/* The trace's recorded decision at obs's step (follow_decisions), as policy_step would fill
 * it: levels (gradient mode) or average and period, the step's batch, the recorded state. */
static int recorded_decision(DriverRun *run, const PolicyObs *obs, PolicyDecision *d)
{
    const TraceStep *ts = &run->cfg->replay->steps[obs->step];
    const int n = run->w[0].model->n_layers;
    memset(d->level, 0, sizeof *d->level * (size_t)n);
    if (ts->levels) memcpy(d->level, ts->levels, sizeof *d->level * (size_t)n);
    d->batch = ts->batch;
    d->average = run->periodic ? ts->average : 0;
    d->period = run->periodic ? ts->period : 0;
    snprintf(run->state, sizeof run->state, "%s", ts->state[0] ? ts->state : "recorded");
    return BW_OK;
}

/* The policy's decision, checked; returns 0 (and stops the run) if it is not valid, or the
 * policy failed (a plugin's or Python policy's error, or a Ctrl-C while a Python policy ran). */
static int decide(DriverRun *run, const PolicyObs *obs)
{
    PolicyDecision d = {.level = run->dec.level}; /* policy_step resets it, sets its batch */
    BwError why = {{0}};
    if (run->cfg->follow_decisions) {
        int rc = recorded_decision(run, obs, &d);
        if (rc == BW_OK)
            rc = rendezvous_check_decision(run->cfg, run->w[0].model, run->cops, &d, run->periodic,
                                           &why);
        if (rc) {
            run_fail(run, rc, &why);
            return 0;
        }
        run->dec = d;
        return 1;
    }
    int rc = policy_step(run->pol, obs, &d, &why);
    if (rc == BW_EINTR) {
        stop_interrupted(run, obs->step);
        return 0;
    }
    policy_describe(run->pol, run->state, sizeof run->state);
    if (rc == BW_OK)
        rc = rendezvous_check_decision(run->cfg, run->w[0].model, run->cops, &d, run->periodic,
                                       &why);
    if (rc == BW_OK) rc = check_price_blind(run, obs->step, &d, &why);
    if (rc) {
        run_fail(run, rc, &why);
        return 0;
    }
    run->dec = d;
    return 1;
}

/* Live: the next step, at the policy's batch. Every worker has gathered this step's batch
 * already. A new batch that no longer fits in what is left of this epoch waits for the next
 * one, so an epoch ends only where the policy was told it would (obs.epoch_end). */
static void live_advance(DriverRun *run, const StepState *st)
{
    const RunConfig *cfg = run->cfg;
    const int wanted = run->dec.batch / run->P;
    StepState next = {
        .step = st->step + 1, .epoch = st->epoch, .pos = st->pos + st->b, .b = wanted};
    if (!run->epoch_end && next.pos + next.b > run->shard) next.b = st->b;
    if (run->epoch_end) {
        next.epoch++;
        next.pos = 0;
        next.epoch_start = 1;
        next.b = wanted;
    }
    int last = next.epoch == cfg->tc.epochs;
    int dense = cfg->eval_every > 0 && !(cfg->eval_sparse_after_target && run->target_hit);
    run->eval_due = last || (dense ? next.step % cfg->eval_every == 0 : run->epoch_end);
    if (next.epoch_start) {
        if (!last) dataset_epoch_order(cfg->train->n, cfg->tc.seed, next.epoch, run->perm);
        if (run->want_norms)
            for (int w = 0; w < run->P; w++)
                memset(run->w[w].gsum, 0, sizeof(float) * run->w[w].model->n_params);
        run->epoch_steps = 0;
    }
    next.lr = lr_for(run, next.epoch, next.pos, next.b);
    run->cur = next;
    run->stop = last ? STOP_DONE : STOP_NO;
}

/* Replay: the next step is the trace's. */
static void replay_advance(DriverRun *run, const StepState *st)
{
    const Trace *tr = run->cfg->replay;
    int last = st->step + 1 == tr->n_steps;
    /* after an epoch's last step the run is in the next epoch, as live_advance counts them */
    StepState next = {.step = st->step + 1,
                      .epoch = st->epoch + (last && run->epoch_end),
                      .b = st->b,
                      .lr = st->lr};
    if (!last) {
        const TraceStep *nx = &tr->steps[st->step + 1];
        next.epoch = nx->epoch;
        next.epoch_start = nx->epoch != tr->steps[st->step].epoch;
        next.b = replay_per_worker_batch(nx, run->P);
        next.lr = nx->lr;
    }
    run->eval_due = replay_eval_at(run, st->step + 1) != NULL;
    run->cur = next;
    run->stop = last ? STOP_DONE : STOP_NO;
}

/* The observation, the policy's decision, and the next step's shared state. */
void rendezvous_leader(DriverRun *run)
{
    const StepState st = run->cur;
    islands_step_done(run); /* the previous step's WAN bytes are all sent */
    if (outfile_interrupted()) {
        stop_interrupted(run, st.step);
        return;
    }
    if (!gather_losses(run, &st)) return;
    gather_norms(run);
    PolicyObs obs = run->cfg->replay ? replay_observe(run, &st) : live_observe(run, &st);
    record_step_variance(run); /* the previous step's averaging, measured since */
    if (run->rec.writer) record_trace_step(run, &obs, &st);
    run->avg.averaged_prev = 0;
    if (!decide(run, &obs)) return;
    record_trace_decision(run, &run->dec);
    if (run->cfg->replay)
        replay_advance(run, &st);
    else
        live_advance(run, &st);
}

/* Once every worker has averaged: the variance the policy sees at the next step and steps.csv
 * reports. A replay trains no parameters, so its variance is the trace's latest measurement up
 * to this step (what the policy is shown), not that of the stand-in replicas. */
void rendezvous_averaged(DriverRun *run, const StepState *st)
{
    const Trace *tr = run->cfg->replay;
    if (tr) {
        const TraceStep *ts = &tr->steps[st->step];
        run->avg.variance_prev = ts->has_variance ? ts->param_variance : run->cursor.trace_variance;
    } else {
        double v = 0;
        for (int w = 0; w < run->P; w++) v += run->w[w].sq_dist;
        run->avg.variance_prev = v / run->P;
    }
    run->avg.averaged_prev = 1;
    run->avg.avg_deposits = 0;
    run->res->averagings++;
}
