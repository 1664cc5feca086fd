/* fifo.c: what PyTorch's DistributedDataParallel does, and bellows' default: the gradients fill
 * buckets in reverse order of the parameters (the first bucket 1 MiB, the others --bucket-mb),
 * each bucket's collectives start once its last gradient is computed, and buckets go out in the
 * order they fill, whole (torch/nn/parallel/distributed.py, reducer.cpp). On parameter servers
 * (--allreduce ps) fifo is BytePS's instead: every tensor pushed as soon as its gradient is
 * ready, in 4,096,000-byte partitions over the servers, all in flight (schedule.c's prefill).
 * The core pre-fills every decision with exactly this, so decide has nothing to change. Under
 * --overlap ddp a run with fifo is priced by sim/driver/cost.c, bit for bit as before schedules
 * existed, except on parameter servers at the transfer level (driver_scheduled). */
#include "schedule_impl.h"

static void fifo_decide(BellowsSchedule *s, const BellowsScheduleObs *obs,
                        BellowsScheduleDecision *d)
{
    (void)s, (void)obs, (void)d; /* the pre-filled decision is fifo's */
}

const BellowsScheduleOps schedule_fifo_ops = {
    .iVersion = BELLOWS_SCHEDULE_VERSION,
    .name = "fifo",
    .help = "PyTorch DDP: buckets of --bucket-mb in reverse layer order, each sent whole as soon "
            "as it is full, in the order they fill (the default); with --allreduce ps, BytePS: "
            "each tensor as it is ready, in 4 MB partitions, all in flight",
    .source = "PyTorch DistributedDataParallel (torch/nn/parallel/distributed.py, reducer.cpp); "
              "with ps, BytePS (bytedance/byteps, BYTEPS_PARTITION_BYTES)",
    .decide = fifo_decide,
};
