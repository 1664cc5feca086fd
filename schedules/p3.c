/* p3.c: Priority-based Parameter Propagation (Jayarajan et al., "Priority-based Parameter
 * Propagation for Distributed DNN Training", MLSys 2019): parameters sliced finer than the
 * model's layers, and slices sent in priority order, the layer the next forward needs first
 * first, so a slice of a front layer overtakes the rest of a large back layer at the next slice
 * boundary. P3 has no credit of its own: its sender (the priority queue of P3's ps-lite van)
 * hands the highest-priority slice to the transport whenever the transport takes one, without
 * waiting for the slice before it to come back, so on parameter servers slices keep going while
 * the network takes them. Here the credit counts slices per server each way: credit=1 (the
 * default) keeps 2 x servers slices in flight, a push into and a pull out of each server's NIC
 * at once (every link busy, and a new slice of higher priority waits behind at most two a
 * server); that count is bellows' reading of "what the network takes", not a constant of P3's
 * code. On all-reduce, whose partitions go one at a time on the worker's stream anyway, the
 * credit is that many slices in flight (1: a larger one only queues lower-priority slices ahead
 * of a later, higher-priority one). The default
 * slice is that of P3 as merged into MXNet (apache/mxnet, src/kvstore/p3store_dist.h, the
 * `dist_p3` KVStore): MXNET_KVSTORE_SLICE_THRESHOLD, 40 * 1000 parameters, so 160,000 bytes of
 * fp32; its slices go to the servers round-robin, as `--allreduce ps` deals partitions. */
#include "schedule_impl.h"

typedef struct {
    double slice_bytes;
    int credit;
} P3State;

static const BellowsScheduleOpt p3_opts[] = {
    {"slice", BELLOWS_SCHEDULE_OPT_DOUBLE, NULL, BELLOWS_SCHEDULE_MIN_PARTITION_BYTES, 1e15, NULL,
     "bytes of a slice, at most the model's; default 160000 (40,000 fp32 parameters, MXNet "
     "dist_p3), or the whole model when it is smaller"},
    {"credit", BELLOWS_SCHEDULE_OPT_INT, "1", 1, 1e6, NULL,
     "slices in flight at once; with --allreduce ps, slices in flight at each server each way "
     "(1: 2 x servers in all, slices keep going while the network takes them)"},
};

static int p3_init(BellowsSchedule *s, const BellowsScheduleValue *vals, char *err, size_t errlen)
{
    P3State *st = s->state;
    st->credit = (int)vals[1].num;
    if (!vals[0].set) {
        st->slice_bytes = schedule_default_partition(s->ctx, 160000);
        return BELLOWS_SCHEDULE_OK;
    }
    st->slice_bytes = vals[0].num;
    return schedule_check_partition(s->ctx, st->slice_bytes, "slice", err, errlen);
}

static void p3_decide(BellowsSchedule *s, const BellowsScheduleObs *obs, BellowsScheduleDecision *d)
{
    (void)obs;
    const P3State *st = s->state;
    schedule_priority_by_layer(s->ctx, d);
    d->bucket_bytes = d->first_bucket_bytes = 0;
    d->partition_bytes = st->slice_bytes;
    d->credit_partitions = s->ctx->servers > 0 ? 2 * s->ctx->servers * st->credit : st->credit;
}

static void p3_describe(const BellowsSchedule *s, char *buf, size_t n)
{
    const P3State *st = s->state;
    snprintf(buf, n, "slice=%.15g,credit=%d", st->slice_bytes, st->credit);
}

const BellowsScheduleOps schedule_p3_ops = {
    .iVersion = BELLOWS_SCHEDULE_VERSION,
    .name = "p3",
    .help = "P3: parameters in slices, sent in priority order (first layers first) while the "
            "network takes them",
    .source = "Jayarajan et al., Priority-based Parameter Propagation, MLSys 2019",
    .opts = p3_opts,
    .n_opts = BELLOWS_SCHEDULE_N(p3_opts),
    .state_size = sizeof(P3State),
    .init = p3_init,
    .decide = p3_decide,
    .describe = p3_describe,
};
