/* sync.c: the baseline. Every layer's gradient is allreduced uncompressed (dense fp32) at every
 * step: synchronous data-parallel SGD as in PyTorch DistributedDataParallel. */
#include "policy_impl.h"

static int sync_init(BellowsPolicy *p, const BellowsPolicyValue *vals, char *err, size_t errlen)
{
    (void)p, (void)vals, (void)err, (void)errlen;
    return BELLOWS_POLICY_OK;
}

static void sync_decide(BellowsPolicy *p, const BellowsPolicyObs *obs, BellowsPolicyDecision *d)
{
    (void)obs;
    policy_set_levels(p->ctx, 0, d);
}

static void sync_describe(const BellowsPolicy *p, char *buf, size_t n)
{
    (void)p;
    snprintf(buf, n, "dense");
}

const BellowsPolicyOps policy_sync_ops = {
    .iVersion = BELLOWS_POLICY_VERSION,
    .name = "sync",
    .help = "uncompressed gradient allreduce every step (the baseline)",
    .source = "synchronous data-parallel SGD (e.g. PyTorch DistributedDataParallel)",
    .mode = BELLOWS_POLICY_GRADIENT,
    .init = sync_init,
    .decide = sync_decide,
    .describe = sync_describe,
    .price_blind = 1, /* dense every step, whatever the network */
};
