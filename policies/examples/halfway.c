/* halfway.c: the shortest useful policy. Dense for the first half of the epochs, then every
 * matrix layer at the compressor's default level (e.g. PowerSGD rank 2, TopK's fraction).
 *   cc -shared -fPIC -I policies -o halfway.so policies/examples/halfway.c
 *   bellows run --compressor powersgd --policy ./halfway.so */
#include "bellows_policy.h"

static void decide(BellowsPolicy *p, const BellowsPolicyObs *obs, BellowsPolicyDecision *d)
{
    const BellowsPolicyContext *c = p->ctx;
    int late = obs->epoch >= c->epochs / 2;
    for (int l = 0; l < c->n_layers; l++)
        d->level[l] = (late && c->layers[l].ndim == 2) ? c->compressor_level : 0;
}

static const BellowsPolicyOps ops = {
    .iVersion = BELLOWS_POLICY_VERSION,
    .name = "halfway",
    .help = "dense for the first half of the epochs, then the compressor's default level",
    .mode = BELLOWS_POLICY_GRADIENT,
    .decide = decide,
};

const BellowsPolicyOps *bellows_policy_entry(void)
{
    return &ops;
}
