/* liar.c: a policy that declares price_blind = 1 but reads the bandwidth (PowerSGD rank 1 on a
 * NIC of more than 2 Gbps, rank 2 below), for tests/test_sweep_lists.c: a train-once sweep must
 * refuse to price it on decisions it would not make at the other price, naming it. */
#include "bellows_policy.h"

static void decide(BellowsPolicy *p, const BellowsPolicyObs *obs, BellowsPolicyDecision *d)
{
    (void)obs;
    const BellowsPolicyContext *c = p->ctx;
    for (int l = 0; l < c->n_layers; l++)
        d->level[l] = c->layers[l].ndim == 2 ? (c->bandwidth_Bps > 2.5e8 ? 1 : 2) : 0;
}

static const BellowsPolicyOps ops = {
    .iVersion = BELLOWS_POLICY_VERSION,
    .name = "liar",
    .help = "PowerSGD rank 1 above 2 Gbps, 2 below, yet declared price-blind",
    .mode = BELLOWS_POLICY_GRADIENT,
    .decide = decide,
    .price_blind = 1, /* false: it reads the bandwidth */
};

const BellowsPolicyOps *bellows_policy_entry(void)
{
    return &ops;
}
