/* tictac.c: TicTac (Hashemi et al., "TicTac: Accelerating Distributed Deep Learning with
 * Communication Scheduling", MLSys 2019): transfers ordered by when the next iteration's
 * forward pass needs them, enforced by making each transfer wait for the one before it; whole
 * tensors, no slicing. Its timing-aware order (TAC) ranks a tensor by the time at which the
 * forward reaches the op that reads it: here the start of its layer's forward, the sum of the
 * forward times of the layers before it (BellowsScheduleLayer.fwd_s). On a chain of layers that
 * is the layers' order, as ByteScheduler's and P3's; what sets TicTac apart here is that it
 * sends whole tensors, one at a time, so a large tensor started is never overtaken. */
#include "schedule_impl.h"

static void tictac_decide(BellowsSchedule *s, const BellowsScheduleObs *obs,
                          BellowsScheduleDecision *d)
{
    (void)obs;
    const BellowsScheduleContext *ctx = s->ctx;
    double start = 0;
    for (int l = 0; l < ctx->n_layers; l++) {
        const BellowsScheduleLayer *L = &ctx->layers[l];
        for (int t = L->first_tensor; t < L->first_tensor + L->n_tensors; t++)
            d->priority[t] = start;
        start += L->fwd_s;
    }
    d->bucket_bytes = d->first_bucket_bytes = 0;
    d->partition_bytes = 0;
    d->credit_partitions = 1;
}

const BellowsScheduleOps schedule_tictac_ops = {
    .iVersion = BELLOWS_SCHEDULE_VERSION,
    .name = "tictac",
    .help = "TicTac: whole tensors one at a time, in the order the next forward needs them",
    .source = "Hashemi et al., TicTac, MLSys 2019 (the timing-aware order, TAC)",
    .decide = tictac_decide,
};
