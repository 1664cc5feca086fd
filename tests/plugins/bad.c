/* bad.c: plugins that bellows must refuse with one usage error naming the file, built with
 * -DCASE=N (tests/test_plugins.sh): 1 returns NULL, 2 a newer interface version, 3 no decide,
 * 4 an unknown mode, 5 an option whose default is out of its range, 6 no entry point,
 * 7 an init that refuses its options, 8 a version 0, 9 a version 2 (built when the context's
 * and the decision's layer arrays had 32 entries; refused since version 3), 10 a price_blind
 * that is neither 0 nor 1. */
#include <stdio.h>

#include "bellows_policy.h"

static void decide(BellowsPolicy *p, const BellowsPolicyObs *obs, BellowsPolicyDecision *d)
{
    (void)p, (void)obs, (void)d;
}

static int init(BellowsPolicy *p, const BellowsPolicyValue *v, char *err, size_t n)
{
    (void)p, (void)v;
    snprintf(err, n, "k=%g: this plugin refuses every value", v[0].num);
    return BELLOWS_POLICY_EUSAGE;
}

static const BellowsPolicyOpt opts[] = {
    {"k", BELLOWS_OPT_INT, CASE == 5 ? "99" : "1", 0, 10, NULL, "an option"},
};

static const BellowsPolicyOps ops = {
    .iVersion = CASE == 2   ? BELLOWS_POLICY_VERSION + 1
                : CASE == 8 ? 0
                : CASE == 9 ? 2
                            : BELLOWS_POLICY_VERSION,
    .name = "bad",
    .help = "a bad plugin",
    .mode = CASE == 4 ? 7 : BELLOWS_POLICY_GRADIENT,
    .opts = opts,
    .n_opts = BELLOWS_N(opts),
    .init = CASE == 7 ? init : NULL,
    .decide = CASE == 3 ? NULL : decide,
    .price_blind = CASE == 10 ? 2 : 0,
};

#if CASE == 6
const BellowsPolicyOps *bellows_policy_entry_misspelt(void);
const BellowsPolicyOps *bellows_policy_entry_misspelt(void)
#else
const BellowsPolicyOps *bellows_policy_entry(void)
#endif
{
    return CASE == 1 ? NULL : &ops;
}
