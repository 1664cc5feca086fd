/* smallfirst.c: a schedule of your own in one file. Among the tensors whose gradients are
 * ready, the one that sends the fewest bytes this step goes first (shortest job first: it frees
 * its layer soonest), each tensor a unit of its own, whole, one at a time.
 *   cc -shared -fPIC -I schedules -o smallfirst.so schedules/examples/smallfirst.c
 *   bellows run --workload vgg16 --schedule ./smallfirst.so --overlap layer */
#include "bellows_schedule.h"

static void decide(BellowsSchedule *s, const BellowsScheduleObs *obs, BellowsScheduleDecision *d)
{
    for (int t = 0; t < s->ctx->n_tensors; t++) d->priority[t] = obs->tensor_bytes[t];
    d->bucket_bytes = d->first_bucket_bytes = 0; /* a tensor a unit */
    d->credit_partitions = 1;
}

static const BellowsScheduleOps ops = {
    .iVersion = BELLOWS_SCHEDULE_VERSION,
    .name = "smallfirst",
    .help = "the ready tensor with the fewest bytes first, whole, one at a time",
    .decide = decide,
};

const BellowsScheduleOps *bellows_schedule_entry(void)
{
    return &ops;
}
