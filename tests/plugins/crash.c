/* crash.c: a plugin that crashes (SIGSEGV) at step `at`, to check that a sweep fails only the
 * runs of the crashing policy and finishes the others (each run is its own process). */
#include "bellows_policy.h"

static const BellowsPolicyOpt opts[] = {
    {"at", BELLOWS_OPT_INT, "5", 1, 1e9, NULL, "the step it crashes at"},
};

static void decide(BellowsPolicy *p, const BellowsPolicyObs *obs, BellowsPolicyDecision *d)
{
    (void)d;
    if (obs->step >= *(const int *)p->state) *(volatile int *)0 = 1;
}

static int init(BellowsPolicy *p, const BellowsPolicyValue *v, char *err, size_t n)
{
    (void)err, (void)n;
    *(int *)p->state = (int)v[0].num;
    return BELLOWS_POLICY_OK;
}

static const BellowsPolicyOps ops = {
    .iVersion = BELLOWS_POLICY_VERSION,
    .name = "crash",
    .help = "crashes at step `at`",
    .mode = BELLOWS_POLICY_GRADIENT,
    .opts = opts,
    .n_opts = BELLOWS_N(opts),
    .state_size = sizeof(int),
    .init = init,
    .decide = decide,
};

const BellowsPolicyOps *bellows_policy_entry(void)
{
    return &ops;
}
