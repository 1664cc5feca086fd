/* outer.c: a DiLoCo-like periodic plugin through the public interface's outer step (version 6,
 * BellowsPolicyOps.outer): it averages every `h` steps and asks for DiLoCo's outer step (lr 0.7,
 * momentum 0.9), so tests/test_islands.c can check it trains bit for bit as the built-in
 * `diloco:H=h`; `bad=1` asks for tau = h, which the core refuses. */
#include "bellows_policy.h"

typedef struct {
    long step;
    int h, bad;
} State;

static const BellowsPolicyOpt opts[] = {
    {"h", BELLOWS_OPT_INT, "4", 1, 1e6, NULL, "the steps between outer steps"},
    {"bad", BELLOWS_OPT_INT, "0", 0, 1, NULL, "1: ask for tau = h (refused)"},
};

static int init(BellowsPolicy *p, const BellowsPolicyValue *vals, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    State *s = p->state;
    s->h = (int)vals[0].num;
    s->bad = (int)vals[1].num;
    return BELLOWS_POLICY_OK;
}

static void decide(BellowsPolicy *p, const BellowsPolicyObs *obs, BellowsPolicyDecision *d)
{
    (void)obs;
    State *s = p->state;
    d->period = s->h;
    d->average = ++s->step % s->h == 0;
}

static int outer(const BellowsPolicy *p, BellowsPolicyOuter *o)
{
    const State *s = p->state;
    *o = (BellowsPolicyOuter){.lr = 0.7,
                              .momentum = 0.9,
                              .h = s->h,
                              .fragments = 1,
                              .bits = 32,
                              .tau = s->bad ? s->h : 0};
    return 1;
}

#ifndef OUTER_IVERSION /* 5: a table that sets outer but declares version 5 (refused) */
#define OUTER_IVERSION BELLOWS_POLICY_VERSION
#endif

static const BellowsPolicyOps ops = {
    .iVersion = OUTER_IVERSION,
    .name = "outer",
    .help = "DiLoCo through the plugin interface's outer step",
    .source = "Douillard et al., DiLoCo, arXiv 2311.08105",
    .mode = BELLOWS_POLICY_PERIODIC,
    .opts = opts,
    .n_opts = BELLOWS_N(opts),
    .state_size = sizeof(State),
    .init = init,
    .decide = decide,
    .price_blind = 1,
    .outer = outer,
};

const BellowsPolicyOps *bellows_policy_entry(void)
{
    return &ops;
}
