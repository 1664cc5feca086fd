/* host_feed.c: feeds a recorded trace's observations, step by step, to a policy through the
 * core's own policy_create and policy_step (as the simulator calls them), and prints each
 * decision; tests/test_policy_host.sh compares its lines with those of the same trace fed
 * through libbellows_policy.so from Python (traces/pytorch/bellows_host.py), which builds the
 * observations by the same rules (bellows_host.trace_observations).
 *   host_feed TRACE SPEC COMPRESSOR LEVEL
 * Prints "step level... batch average period describe" per step, numbers as %.17g. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"
#include "trace.h"

static void context(const Trace *t, const char *comp, double level, PolicyLayer *layers,
                    PolicyContext *ctx)
{
    memset(ctx, 0, sizeof *ctx);
    for (int l = 0; l < t->h.n_layers; l++) {
        memset(&layers[l], 0, sizeof layers[l]);
        snprintf(layers[l].name, sizeof layers[l].name, "%.31s", t->h.layers[l].name);
        layers[l].rows = t->h.layers[l].rows;
        layers[l].cols = t->h.layers[l].cols;
        layers[l].ndim = layers[l].cols > 1 ? 2 : 1;
    }
    ctx->n_layers = t->h.n_layers;
    ctx->layers = layers;
    ctx->workers = t->h.workers;
    ctx->epochs = t->steps[t->n_steps - 1].epoch + 1;
    ctx->batch = t->h.workers * t->h.batch;
    long spe = 0;
    for (long s = 0; s < t->n_steps && t->steps[s].epoch == 0; s++) spe++;
    ctx->steps_per_epoch = spe;
    ctx->lr0 = t->h.lr_base > 0 ? t->h.lr_base : t->steps[0].lr;
    snprintf(ctx->compressor, sizeof ctx->compressor, "%s", comp);
    ctx->compressor_level = level;
    snprintf(ctx->compressor_spec, sizeof ctx->compressor_spec, "%s", comp);
}

/* The observation of step s, by bellows_host.trace_observations' rules. */
static PolicyObs observe(const Trace *t, long s, long *next_eval, double *first_lr)
{
    const TraceStep *ts = &t->steps[s];
    PolicyObs o = {.step = s, .epoch = ts->epoch, .lr = ts->lr, .loss = ts->loss};
    o.epoch_start = s == 0 || t->steps[s - 1].epoch != ts->epoch;
    o.epoch_end = ts->epoch_end || s + 1 == t->n_steps || t->steps[s + 1].epoch != ts->epoch;
    o.lr_decayed = o.epoch_start && ts->epoch > 0 && ts->lr <= 0.5 * *first_lr;
    if (o.epoch_start) *first_lr = ts->lr;
    o.grad_norm_mean = ts->grad_norms;
    o.grad_norm_rank0 = ts->has_rank0 ? ts->grad_norms_rank0 : ts->grad_norms;
    o.have = BELLOWS_HAS_GRAD_NORMS | (ts->has_rank0 ? BELLOWS_HAS_RANK0_NORMS : 0u);
    if (o.epoch_end && ts->has_epoch_norms) {
        o.epoch_norm_mean = ts->epoch_norms;
        o.epoch_norm_rank0 = ts->has_epoch_rank0 ? ts->epoch_norms_rank0 : ts->epoch_norms;
        o.have |= BELLOWS_HAS_EPOCH_NORMS;
    }
    while (*next_eval < t->n_evals && t->evals[*next_eval].step <= s) (*next_eval)++;
    if (*next_eval > 0) {
        const TraceEval *e = &t->evals[*next_eval - 1];
        o.eval_accuracy = e->test_accuracy;
        o.eval_loss = e->test_loss;
        o.eval_step = e->step;
        o.eval_time_s = 0;
        o.have |= BELLOWS_HAS_EVAL;
    }
    return o;
}

static int feed(const Trace *t, Policy *p)
{
    double *level = calloc((size_t)t->h.n_layers, sizeof *level);
    long next_eval = 0;
    double first_lr = 0;
    int rc = level ? BW_OK : BW_ERUNTIME;
    for (long s = 0; rc == BW_OK && s < t->n_steps; s++) {
        PolicyObs o = observe(t, s, &next_eval, &first_lr);
        PolicyDecision d = {.level = level};
        BwError e = {{0}};
        if ((rc = policy_step(p, &o, &d, &e))) {
            fprintf(stderr, "host_feed: %s\n", e.msg);
            break;
        }
        char desc[128];
        policy_describe(p, desc, sizeof desc);
        printf("%ld", s);
        for (int l = 0; l < t->h.n_layers; l++) printf(" %.17g", level[l]);
        printf(" %d %d %d %s\n", d.batch, d.average, d.period, desc);
    }
    free(level);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: host_feed TRACE SPEC COMPRESSOR LEVEL\n");
        return 2;
    }
    Trace t;
    memset(&t, 0, sizeof t);
    BwError err = {{0}};
    int rc = trace_read(argv[1], &t, &err);
    PolicyLayer *layers = rc ? NULL : calloc((size_t)t.h.n_layers, sizeof *layers);
    Policy *p = NULL;
    if (!rc && layers) {
        PolicyContext ctx;
        context(&t, argv[3], atof(argv[4]), layers, &ctx);
        rc = policy_create(argv[2], "--policy", &ctx, &p, &err);
    }
    if (rc) fprintf(stderr, "host_feed: %s\n", err.msg);
    if (!rc) rc = feed(&t, p);
    policy_free(p);
    free(layers);
    trace_free(&t);
    return rc;
}
