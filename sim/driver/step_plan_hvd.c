/* step_plan_hvd.c: a step's plan as Horovod runs it (issue 48), under a cost profile with a
 * "horovod" object and DDP's overlap (the backward beside the collectives). Horovod's background
 * thread wakes every HOROVOD_CYCLE_TIME, negotiates the tensors every rank has ready, fuses them
 * up to HOROVOD_FUSION_THRESHOLD bytes and allreduces each fused call (docs/tensor-fusion.rst;
 * horovod/common/operations.cc, controller.cc; the rule itself is costs_horovod_fuse). So the
 * buckets are not DDP's 25 MB ones: they are the calls that thread makes over the workload's
 * backward, a tensor ready when its layer's backward ends.
 *
 * The buckets are planned from the backward at the step's priced batch and the GPU's rate (once,
 * and again when a policy changes the batch: plan_build), with a thread that is never late
 * (costs_horovod_fuse with no busy time): when the collectives run longer than a cycle, real
 * Horovod fuses what became ready meanwhile into fewer calls, and here they queue as planned
 * (the clock still starts each cycle as the thread would: at once after a late cycle,
 * costs_horovod_cycle_start). A bucket's stages:
 *   - its cycle (STAGE_CYCLE) and the cycle's negotiation (STAGE_NEGOTIATE), for a cycle's first
 *     call: with the response cache on and every tensor cached, an allreduce of the cache's bit
 *     vector, ceil((tensors + 3) / 64) 64-bit words (CacheCoordinator::sync, response_cache.cc:
 *     NUM_STATUS_BITS 3); otherwise each rank's requests gathered to rank 0 and the plan
 *     broadcast back (MPIController::SendReadyTensors / RecvFinalTensors), priced as a ring
 *     allgather of each rank's requests (the gather brings rank 0 the same (N-1) requests, and
 *     the broadcast sends the plan back);
 *   - the fusion buffer's copy in before the allreduce and out after it, only for a call of more
 *     than one tensor (GPUAllreduce::MemcpyInFusionBuffer in ops/gpu_operations.cc): its bytes
 *     read and written at the profile's elementwise rate, a kernel per tensor (cudaMemcpyAsync)
 *     or, batched (v0.21.0 on, HOROVOD_BATCH_D2D_MEMCOPIES), one per 160 tensors
 *     (BATCHED_D2D_CAPACITY, ops/cuda/cuda_kernels.h). The copies are a delay on the stream, not
 *     a share of the GPU beside the backward (so the closed form, cost_fast.c, times them the
 *     same). */
#include "exec_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

/* ops/cuda/cuda_kernels.h (v0.21.0): the tensors one batched copy kernel takes */
#define HVD_BATCHED_D2D_CAPACITY 160
/* response_cache.h: the status bits ahead of the tensors' in the cache's bit vector */
#define HVD_NUM_STATUS_BITS 3
/* A request on the wire (horovod/common/wire/message.fbs, a flatbuffers table of 9 fields):
 * its vtable (4 + 2 x 9 bytes, padded to 24), the table (a 4-byte offset to the vtable, three
 * ints, two doubles, two bytes, two 4-byte offsets: 42, padded to 48) and its offset in the
 * request list (4), 76 bytes, plus the name (a 4-byte length, the characters and a NUL, padded
 * to 4) and the shape (a 4-byte length and 8 bytes a dimension). */
#define HVD_REQUEST_FIXED_BYTES 76.0

static double hvd_request_bytes(const WorkloadTensor *t)
{
    const double name = 4.0 * ceil((4.0 + (double)strlen(t->name) + 1.0) / 4.0);
    return HVD_REQUEST_FIXED_BYTES + name + 4.0 + 8.0 * t->ndim;
}

/* Each rank's bytes of a cycle's negotiation of tensors order[first .. first + n). */
static double hvd_negotiate_bytes(const CostModel *cm, int first, int n)
{
    const CostHorovod *h = &cm->prof->horovod;
    const Workload *wl = cm->wl;
    if (h->response_cache && wl->n_tensors <= h->cache_capacity)
        return 8.0 * ceil((wl->n_tensors + HVD_NUM_STATUS_BITS) / 64.0);
    double bytes = 0;
    for (int i = first; i < first + n; i++) bytes += hvd_request_bytes(&wl->tensors[cm->order[i]]);
    return bytes;
}

/* When each tensor, in backward order (CostModel.order), is ready: its layer's backward's end
 * at b images per GPU (priced as the clock prices it, before any slowdown). */
static void hvd_timeline(DriverRun *run, int b, HvdTensor *t)
{
    CostModel *cm = run->cost;
    const Workload *wl = cm->wl;
    const double speed = run->cluster.gpu_flops;
    double *end = bw_xcalloc((size_t)wl->n_layers, sizeof *end, "Horovod's timeline");
    double now = 0;
    for (int l = wl->n_layers - 1; l >= 0; l--) {
        now += workload_bwd_flops(wl, l, b, speed, cm->peak_ratio) / speed;
        end[l] = now;
    }
    for (int i = 0; i < wl->n_tensors; i++) {
        const WorkloadTensor *wt = &wl->tensors[cm->order[i]];
        t[i] = (HvdTensor){.ready_s = end[wt->layer], .bytes = 4.0 * (double)wt->numel};
    }
    free(end);
}

/* A fused call's copy into the fusion buffer (or out) of `bytes` over n tensors: 0 for one. */
static double hvd_copy_bytes_s(const CostProfile *prof, double bytes, int n)
{
    if (n < 2) return 0;
    const double kernels =
        prof->horovod.batched_memcpy ? ceil(n / (double)HVD_BATCHED_D2D_CAPACITY) : n;
    /* the bytes read and written at the streaming rate, and the copies' own kernels */
    return costs_op_seconds(prof, COST_OP_ELEMENTWISE, 2.0 * bytes) +
           (kernels - prof->ops[COST_OP_ELEMENTWISE].kernels) * prof->kernel_s;
}

/* The closed form of a dense allreduce of `bytes` on the run's cluster (at --price-workers' N
 * when given), at the profile's share of its links (estimate.c's step_comm_s for one call). */
static double hvd_allreduce_s(const DriverRun *run, double bytes)
{
    const Cluster *c = &run->cluster;
    const int g = coll_algo_group(run->cfg->algo, c);
    const int p = run->cfg->price_workers > c->workers ? run->cfg->price_workers : c->workers;
    return coll_allreduce_formula_s(run->cfg->algo, p, g, bytes, 2 * c->latency_s,
                                    1 / (c->bandwidth_Bps * cluster_link_share(c)),
                                    2 * c->intra_latency_s,
                                    1 / (c->intra_bandwidth_Bps * cluster_intra_link_share(c)));
}

/* How long the thread works on a call, to know when its next cycle starts: the call's fixed
 * cost, the copies, a dense allreduce of its bytes in closed form and, for a cycle's first, the
 * negotiation of its tensors as an allreduce of as many bytes. An estimate (the compressors'
 * messages and stages, the interference and the simulated network are the clock's): it only
 * decides which tensors a call fuses. */
static double hvd_busy(void *ctx, const HvdCall *call)
{
    const DriverRun *run = ctx;
    const CostModel *cm = run->cost;
    double s = cm->prof->collective_s + hvd_allreduce_s(run, call->bytes) +
               2 * hvd_copy_bytes_s(cm->prof, call->bytes, call->n);
    if (call->opens_cycle) s += hvd_allreduce_s(run, hvd_negotiate_bytes(cm, call->first, call->n));
    return s;
}

void plan_hvd_buckets(DriverRun *run, int b)
{
    CostModel *cm = run->cost;
    StepPlan *p = &cm->plan;
    const int n = cm->wl->n_tensors;
    HvdTensor *t = bw_xcalloc((size_t)n, sizeof *t, "Horovod's timeline");
    HvdCall *calls = bw_xcalloc((size_t)n, sizeof *calls, "Horovod's calls");
    hvd_timeline(run, b, t);
    const int nc = costs_horovod_fuse(&cm->prof->horovod, t, n, hvd_busy, run, calls);
    for (int k = 0; k < nc; k++) {
        const HvdCall *c = &calls[k];
        int cycle_n = 0; /* the tensors of the cycle this call opens */
        for (int j = k; c->opens_cycle && j < nc && (j == k || !calls[j].opens_cycle); j++)
            cycle_n += calls[j].n;
        p->bucket[k] = (PlanBucket){
            .tensors = cm->order + c->first,
            .n_tensors = c->n,
            .layer = cm->wl->tensors[cm->order[c->first + c->n - 1]].layer,
            .queued = -1,
            .opens_cycle = c->opens_cycle,
            .negotiate_bytes = c->opens_cycle ? hvd_negotiate_bytes(cm, c->first, cycle_n) : 0};
    }
    p->n_buckets = nc;
    p->horovod = 1;
    p->hvd_batch = b;
    free(t);
    free(calls);
}

/* The bytes the fusion buffer holds: the bucket's messages'. */
static double hvd_msg_bytes(const CompressMsg *msgs, int nm)
{
    double bytes = 0;
    for (int i = 0; i < nm; i++)
        bytes += (double)msgs[i].count * (msgs[i].op == COMPRESS_ALLGATHER       ? 1.0
                                          : msgs[i].op == COMPRESS_ALLREDUCE_F16 ? 2.0
                                                                                 : 4.0);
    return bytes;
}

void plan_hvd_negotiation(const CostModel *cm, const PlanBucket *b, CompressMsg *msg)
{
    const CostHorovod *h = &cm->prof->horovod;
    const int cached = h->response_cache && cm->wl->n_tensors <= h->cache_capacity;
    const size_t bytes = (size_t)b->negotiate_bytes;
    *msg = cached ? (CompressMsg){COMPRESS_ALLREDUCE_F32, (bytes + 3) / 4}
                  : (CompressMsg){COMPRESS_ALLGATHER, bytes};
}

double plan_hvd_copy_s(const CostModel *cm, const PlanBucket *b, const CompressMsg *msgs, int nm)
{
    return hvd_copy_bytes_s(cm->prof, hvd_msg_bytes(msgs, nm), b->n_tensors);
}
