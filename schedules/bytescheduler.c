/* bytescheduler.c: ByteScheduler (Peng et al., "A Generic Communication Scheduler for Distributed
 * DNN Training Acceleration", SOSP 2019; code in bytedance/byteps, bytescheduler/common/
 * bytecore.py): every tensor is a task of its own, split into partitions; a partition's
 * priority is its layer's index (the first layers, which the next forward needs first, go
 * first; ties from the first partition to the last); the scheduler loop hands out the
 * highest-priority ready partition while the credit, the bytes in flight, is not used up (a
 * partition may overdraw it). Defaults: BytePS's BYTEPS_PARTITION_BYTES, 4,096,000 bytes
 * (byteps/common/global.cc), and bytecore.py's credit of 4,000,000 parameters over its partition
 * unit of 1,000,000 parameters: 4 partitions. The paper tunes both by Bayesian optimisation;
 * bytedance/byteps#339 found partitions slower than a plain ring when communication was already
 * hidden, and advised "infinite" partition and credit there. */
#include "schedule_impl.h"

typedef struct {
    double partition_bytes;
    int credit;
} ByteSchedulerState;

static const BellowsScheduleOpt bytescheduler_opts[] = {
    {"partition", BELLOWS_SCHEDULE_OPT_DOUBLE, NULL, BELLOWS_SCHEDULE_MIN_PARTITION_BYTES, 1e15,
     NULL,
     "bytes of a partition, at most the model's; default 4096000 (BytePS's "
     "BYTEPS_PARTITION_BYTES), or the whole model when it is smaller"},
    {"credit", BELLOWS_SCHEDULE_OPT_INT, "4", 1, 1e6, NULL,
     "partitions' worth of bytes in flight at once (ByteScheduler's credit)"},
};

static int bytescheduler_init(BellowsSchedule *s, const BellowsScheduleValue *vals, char *err,
                              size_t errlen)
{
    ByteSchedulerState *st = s->state;
    st->credit = (int)vals[1].num;
    if (!vals[0].set) {
        st->partition_bytes = schedule_default_partition(s->ctx, 4096000);
        return BELLOWS_SCHEDULE_OK;
    }
    st->partition_bytes = vals[0].num;
    return schedule_check_partition(s->ctx, st->partition_bytes, "partition", err, errlen);
}

static void bytescheduler_decide(BellowsSchedule *s, const BellowsScheduleObs *obs,
                                 BellowsScheduleDecision *d)
{
    (void)obs;
    const ByteSchedulerState *st = s->state;
    schedule_priority_by_layer(s->ctx, d);
    d->bucket_bytes = d->first_bucket_bytes = 0; /* a task per tensor */
    d->partition_bytes = st->partition_bytes;
    d->credit_bytes = st->credit * st->partition_bytes;
}

static void bytescheduler_describe(const BellowsSchedule *s, char *buf, size_t n)
{
    const ByteSchedulerState *st = s->state;
    snprintf(buf, n, "partition=%.15g,credit=%d", st->partition_bytes, st->credit);
}

const BellowsScheduleOps schedule_bytescheduler_ops = {
    .iVersion = BELLOWS_SCHEDULE_VERSION,
    .name = "bytescheduler",
    .help = "ByteScheduler: tensors split into partitions, priority by layer (first layers "
            "first), a credit of bytes in flight",
    .source = "Peng et al., SOSP 2019; bytedance/byteps (bytescheduler/common/bytecore.py)",
    .opts = bytescheduler_opts,
    .n_opts = BELLOWS_SCHEDULE_N(bytescheduler_opts),
    .state_size = sizeof(ByteSchedulerState),
    .init = bytescheduler_init,
    .decide = bytescheduler_decide,
    .describe = bytescheduler_describe,
};
