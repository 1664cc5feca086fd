/* plateau.c: compress harder once the test accuracy plateaus, a bellows plugin. The run starts
 * at level `soft` (default 0: dense); each new evaluation (obs.eval_step changes) whose accuracy
 * does not beat the best so far by min_gain counts as stale, and after `patience` stale ones in
 * a row every matrix layer goes to level `hard` (default: the compressor's default level) for
 * the rest of the run. When the observations hold no evaluation (obs.have lacks
 * BELLOWS_HAS_EVAL: an older bellows), the signal is the epoch's mean training loss instead,
 * taken at each epoch's last step (an improvement is a fall of at least min_gain); the state
 * says which.
 *   cc -shared -fPIC -I policies -o plateau.so policies/examples/plateau.c
 *   bellows run --compressor powersgd --policy ./plateau.so:patience=2 */
#include <stdio.h>

#include "bellows_policy.h"

typedef struct {
    double soft, hard, min_gain;
    int patience, stale, hard_now, by_eval;
    double best, loss_sum;
    long loss_steps, last_eval_step;
} Plateau;

static const BellowsPolicyOpt plateau_opts[] = {
    {"soft", BELLOWS_OPT_DOUBLE, "0", 0, 1e9, NULL, "level until the plateau (0: dense)"},
    {"hard", BELLOWS_OPT_DOUBLE, NULL, 0, 1e9, NULL,
     "level after it; default: the compressor's default level"},
    {"patience", BELLOWS_OPT_INT, "2", 1, 1000, NULL, "stale evaluations (or epochs) in a row"},
    {"min_gain", BELLOWS_OPT_DOUBLE, "0.002", 0, 1, NULL,
     "an accuracy gain (or loss fall) below this is stale"},
};

static int plateau_init(BellowsPolicy *p, const BellowsPolicyValue *v, char *err, size_t n)
{
    Plateau *s = p->state;
    s->soft = v[0].num;
    s->hard = v[1].set ? v[1].num : p->ctx->compressor_level;
    s->patience = (int)v[2].num;
    s->min_gain = v[3].num;
    s->best = -1e300;
    s->last_eval_step = -1;
    int rc = p->ctx->check_level(p->ctx, s->soft, "soft", err, n);
    return rc ? rc : p->ctx->check_level(p->ctx, s->hard, "hard", err, n);
}

/* One new value of the signal (higher is better). */
static void plateau_signal(Plateau *s, double x)
{
    if (x >= s->best + s->min_gain) {
        s->best = x;
        s->stale = 0;
    } else if (++s->stale >= s->patience) {
        s->hard_now = 1;
    }
}

static void plateau_observe(BellowsPolicy *p, const BellowsPolicyObs *obs)
{
    Plateau *s = p->state;
    if (obs->have & BELLOWS_HAS_EVAL) {
        s->by_eval = 1;
        if (obs->eval_step != s->last_eval_step) plateau_signal(s, obs->eval_accuracy);
        s->last_eval_step = obs->eval_step;
        return;
    }
    s->loss_sum += obs->loss;
    s->loss_steps++;
    if (obs->epoch_end) {
        plateau_signal(s, -s->loss_sum / (double)s->loss_steps);
        s->loss_sum = 0;
        s->loss_steps = 0;
    }
}

static void plateau_decide(BellowsPolicy *p, const BellowsPolicyObs *obs, BellowsPolicyDecision *d)
{
    (void)obs;
    const Plateau *s = p->state;
    for (int l = 0; l < p->ctx->n_layers; l++)
        d->level[l] = p->ctx->layers[l].ndim == 2 ? (s->hard_now ? s->hard : s->soft) : 0;
}

static void plateau_describe(const BellowsPolicy *p, char *buf, size_t n)
{
    const Plateau *s = p->state;
    snprintf(buf, n, "%s stale=%d by=%s", s->hard_now ? "hard" : "soft", s->stale,
             s->by_eval ? "accuracy" : "loss");
}

static const BellowsPolicyOps plateau_ops = {
    .iVersion = BELLOWS_POLICY_VERSION,
    .name = "plateau",
    .help = "dense (or soft) until the test accuracy plateaus, then compress harder",
    .source = "bellows example (policies/examples/plateau.c)",
    .mode = BELLOWS_POLICY_GRADIENT,
    .opts = plateau_opts,
    .n_opts = BELLOWS_N(plateau_opts),
    .state_size = sizeof(Plateau),
    .init = plateau_init,
    .observe = plateau_observe,
    .decide = plateau_decide,
    .describe = plateau_describe,
    .price_blind = 1, /* accuracy and loss only: the same decisions on any network */
};

const BellowsPolicyOps *bellows_policy_entry(void)
{
    return &plateau_ops;
}
