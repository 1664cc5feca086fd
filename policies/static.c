/* static.c: one fixed compression level for every matrix layer for the whole run, the static
 * baselines of Accordion's evaluation (Agarwal et al., MLSys 2021), e.g.
 * PowerSGD rank 1 or 2, TopK 10% or 99%. Vectors always go dense.
 * With compressor "none" there is no level to choose: the policy sends everything dense (the
 * same as sync), and an explicit level other than 0 is a usage error rather than ignored. */
#include "policy_impl.h"

#include <string.h>

typedef struct {
    double level;
} StaticState;

static const BellowsPolicyOpt static_opts[] = {
    {"level", BELLOWS_OPT_DOUBLE, NULL, 0, 1e9, NULL,
     "level of every matrix layer (rank, fraction kept, ...); default: the compressor's own "
     "default; 0: dense"},
};

static int static_init(BellowsPolicy *p, const BellowsPolicyValue *vals, char *err, size_t errlen)
{
    StaticState *s = p->state;
    const BellowsPolicyContext *ctx = p->ctx;
    if (strcmp(ctx->compressor, "none") == 0) {
        if (vals[0].set && vals[0].num != 0)
            return policy_fail(err, errlen, BELLOWS_POLICY_EUSAGE,
                               "level=%g: compressor 'none' takes no level (choose one with "
                               "--compressor, or leave level out)",
                               vals[0].num);
        s->level = 0;
        return BELLOWS_POLICY_OK;
    }
    s->level = vals[0].set ? vals[0].num : ctx->compressor_level;
    return policy_check_level(ctx, s->level, "level", err, errlen);
}

static void static_decide(BellowsPolicy *p, const BellowsPolicyObs *obs, BellowsPolicyDecision *d)
{
    (void)obs;
    const StaticState *s = p->state;
    policy_set_levels(p->ctx, s->level, d);
}

static void static_describe(const BellowsPolicy *p, char *buf, size_t n)
{
    const StaticState *s = p->state;
    snprintf(buf, n, "level=%g", s->level);
}

const BellowsPolicyOps policy_static_ops = {
    .iVersion = BELLOWS_POLICY_VERSION,
    .name = "static",
    .help = "one fixed compression level for every matrix layer (vectors dense)",
    .source = "the static baselines of Accordion's evaluation (Agarwal et al., MLSys 2021)",
    .mode = BELLOWS_POLICY_GRADIENT,
    .opts = static_opts,
    .n_opts = BELLOWS_N(static_opts),
    .state_size = sizeof(StaticState),
    .init = static_init,
    .decide = static_decide,
    .describe = static_describe,
    .price_blind = 1, /* one level for the whole run */
};
