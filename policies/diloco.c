/* diloco.c: DiLoCo (Douillard, Feng, Rusu et al., "DiLoCo: Distributed Low-Communication
 * Training of Language Models", arXiv 2311.08105, Algorithm 1). Each replica takes H inner steps
 * with its own optimizer (AdamW in the paper: --optimizer adamw); then the outer gradient, the
 * replicas' mean of (theta_global - theta_i), is applied to theta_global by an outer optimizer,
 * Nesterov momentum (the paper's lr 0.7, momentum 0.9, H = 500), and every replica restarts from
 * the result. The outer optimizer is torch.optim.SGD(nesterov=True), as pytorch/torchft's
 * local_sgd.py (DiLoCo) uses it on the pseudogradients: v = mu v + g; theta -= lr (g + mu v).
 *
 * The policy decides when (every H steps); the driver runs the outer step (policy_outer says
 * which): the rule lives where the parameters are. */
#include <string.h>

#include "policy_impl.h"

typedef struct {
    PolicyClock clock;
    PolicyOuterOpt outer;
} DilocoState;

static const BellowsPolicyOpt diloco_opts[] = {
    {"h", BELLOWS_OPT_INT, "500", 1, 1e9, NULL,
     "H, the inner steps between outer steps (the paper's 500; H=500 reads as h=500)"},
    {"outer_lr", BELLOWS_OPT_DOUBLE, "0.7", 1e-9, 1e3, NULL,
     "the outer Nesterov optimizer's learning rate (the paper's 0.7)"},
    {"outer_momentum", BELLOWS_OPT_DOUBLE, "0.9", 0, 0.999999, NULL,
     "the outer optimizer's Nesterov momentum (the paper's 0.9; 0: plain SGD on the outer "
     "gradient, outer_lr 1 is then local SGD's averaging)"},
    {"eager", BELLOWS_OPT_INT, "0", 0, 1, NULL,
     "1: eager updates (Kale et al., arXiv 2502.12996): the exchange overlaps the next H steps, "
     "the outer step mixing this round's own outer gradient with the others' of the last round"},
};

static int diloco_init(BellowsPolicy *p, const BellowsPolicyValue *vals, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    DilocoState *s = p->state;
    s->clock.period = (int)vals[0].num;
    s->outer.lr = vals[1].num;
    s->outer.momentum = vals[2].num;
    s->outer.h = s->clock.period;
    s->outer.fragments = 1;
    s->outer.bits = 32;
    s->outer.eager = (int)vals[3].num;
    return BELLOWS_POLICY_OK;
}

static void diloco_decide(BellowsPolicy *p, const BellowsPolicyObs *obs, BellowsPolicyDecision *d)
{
    (void)obs;
    DilocoState *s = p->state;
    d->period = s->clock.period;
    d->average = policy_clock_tick(&s->clock);
}

static void diloco_describe(const BellowsPolicy *p, char *buf, size_t n)
{
    const DilocoState *s = p->state;
    snprintf(buf, n, "H=%d,outer_lr=%g,outer_momentum=%g%s", s->clock.period, s->outer.lr,
             s->outer.momentum, s->outer.eager ? ",eager=1" : "");
}

const BellowsPolicyOps policy_diloco_ops = {
    .iVersion = BELLOWS_POLICY_VERSION,
    .name = "diloco",
    .help = "DiLoCo: H inner steps per replica, then an outer Nesterov step on the mean of "
            "(theta_global - theta_i), from which every replica restarts",
    .source = "Douillard et al., DiLoCo, arXiv 2311.08105 (Algorithm 1); pytorch/torchft "
              "torchft/local_sgd.py (DiLoCo); eager=1: Kale, Douillard, Donchev, arXiv 2502.12996",
    .mode = BELLOWS_POLICY_PERIODIC,
    .opts = diloco_opts,
    .n_opts = BELLOWS_N(diloco_opts),
    .state_size = sizeof(DilocoState),
    .init = diloco_init,
    .decide = diloco_decide,
    .describe = diloco_describe,
    .price_blind = 1, /* a fixed H */
};

int policy_builtin_outer(const BellowsPolicy *p, PolicyOuterOpt *o)
{
    if (p->ops->decide == diloco_decide) {
        *o = ((const DilocoState *)p->state)->outer;
        return 1;
    }
    return policy_streaming_outer(p, o);
}
