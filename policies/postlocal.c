/* postlocal.c: post-local SGD (Lin, Stich, Patel, Jaggi, "Don't use large mini-batches, use
 * local SGD", ICLR 2020; epfml/LocalSGD-Code, pcode/optim/local_sgd.py): average after every
 * step until `switch_epoch` (their turn_on_local_step_from; by default the first lr decay, the
 * paper's t'), then every `period` steps counted from the switch (their code counts from step 0,
 * the same when the switch falls on a multiple of period). Without a step schedule the default
 * switch is at epochs / 2 (our choice, not the paper's). */
#include "policy_impl.h"

typedef struct {
    int switch_epoch, local_period;
    PolicyClock clock;
} PostlocalState;

static const BellowsPolicyOpt postlocal_opts[] = {
    {"switch_epoch", BELLOWS_OPT_INT, NULL, 0, 1e6, NULL,
     "first epoch of local SGD; default: the first lr decay epoch, else epochs/2"},
    {"period", BELLOWS_OPT_INT, "16", 1, 1e6, NULL,
     "local steps between averagings after the switch"},
};

static int postlocal_init(BellowsPolicy *p, const BellowsPolicyValue *vals, char *err,
                          size_t errlen)
{
    (void)err, (void)errlen;
    PostlocalState *s = p->state;
    const BellowsPolicyContext *ctx = p->ctx;
    if (vals[0].set)
        s->switch_epoch = (int)vals[0].num;
    else
        s->switch_epoch = ctx->n_decays > 0 ? ctx->decay_epochs[0] : ctx->epochs / 2;
    s->local_period = (int)vals[1].num;
    s->clock.period = 1;
    return BELLOWS_POLICY_OK;
}

static void postlocal_decide(BellowsPolicy *p, const BellowsPolicyObs *obs,
                             BellowsPolicyDecision *d)
{
    PostlocalState *s = p->state;
    /* period 1 averages every step, so the clock is at 0 when the period changes */
    s->clock.period = obs->epoch >= s->switch_epoch ? s->local_period : 1;
    d->period = s->clock.period;
    d->average = policy_clock_tick(&s->clock);
}

static void postlocal_describe(const BellowsPolicy *p, char *buf, size_t n)
{
    const PostlocalState *s = p->state;
    snprintf(buf, n, "period=%d", s->clock.period);
}

const BellowsPolicyOps policy_postlocal_ops = {
    .iVersion = BELLOWS_POLICY_VERSION,
    .name = "postlocal",
    .help = "post-local SGD: average every step until switch_epoch, then every `period` steps",
    .source = "Lin, Stich, Patel, Jaggi, Don't use large mini-batches, use local SGD, ICLR 2020; "
              "github.com/epfml/LocalSGD-Code (pcode/optim/local_sgd.py)",
    .mode = BELLOWS_POLICY_PERIODIC,
    .opts = postlocal_opts,
    .n_opts = BELLOWS_N(postlocal_opts),
    .state_size = sizeof(PostlocalState),
    .init = postlocal_init,
    .decide = postlocal_decide,
    .describe = postlocal_describe,
    .price_blind = 1, /* a fixed switch epoch and period */
};
