/* sync.c: the baseline. Every layer's gradient is allreduced uncompressed (dense fp32) at every
 * step: synchronous data-parallel SGD as in PyTorch DistributedDataParallel. */
#include "policy_impl.h"

static int sync_init(Policy *p, const SpecVal *vals, BwError *err)
{
    (void)p, (void)vals, (void)err;
    return BW_OK;
}

static void sync_decide(Policy *p, const PolicyObs *obs, PolicyDecision *d)
{
    (void)obs;
    policy_set_levels(&p->ctx, 0, d);
}

static void sync_describe(const Policy *p, char *buf, size_t n)
{
    (void)p;
    snprintf(buf, n, "dense");
}

const PolicyOps policy_sync_ops = {
    .name = "sync",
    .help = "uncompressed gradient allreduce every step (the baseline)",
    .source = "synchronous data-parallel SGD (e.g. PyTorch DistributedDataParallel)",
    .mode = POLICY_GRADIENT,
    .init = sync_init,
    .decide = sync_decide,
    .describe = sync_describe,
};
