/* misbehave.c: plugins that end the run their own way at step 3, built with -DMISBEHAVE_EXIT
 * (exit(0)), -DMISBEHAVE_ABORT (abort()) or -DMISBEHAVE_LOOP (a loop that never returns), for
 * tests/test_leftovers.c: each must end with a message and leave nothing behind, and the loop
 * must yield to one Ctrl-C. */
#include <stdlib.h>

#include "bellows_policy.h"

static void decide(BellowsPolicy *p, const BellowsPolicyObs *obs, BellowsPolicyDecision *d)
{
    (void)p, (void)d;
    if (obs->step < 3) return;
#if defined(MISBEHAVE_EXIT)
    exit(0);
#elif defined(MISBEHAVE_ABORT)
    abort();
#else
    for (volatile unsigned long i = 0;; i++) continue;
#endif
}

static const BellowsPolicyOps ops = {
    .iVersion = BELLOWS_POLICY_VERSION,
    .name = "misbehave",
    .help = "ends the run its own way at step 3",
    .mode = BELLOWS_POLICY_GRADIENT,
    .decide = decide,
};

const BellowsPolicyOps *bellows_policy_entry(void)
{
    return &ops;
}
