/* step_plan_units.c: the step plan of a scheduled step (PLAN_SCHEDULED, step_plan.h). The
 * schedule engine's units are the plan's buckets: the schedule decides their caps each step
 * from the tensors' payloads (its observation), so these buckets are built after it decided,
 * by the same rules as DDP's (plan_bucket: the compressor's messages and phases, the profile's
 * call cost and cycle, an allgather the profile does not overlap) and with the same tail. The
 * engine (sched_plan.c) only cuts the buckets' messages into the schedule's partitions and
 * orders them (ByteScheduler's and P3's scheduling over DDP-like buckets). */
#include "exec_impl.h"

#include <stdlib.h>

#include "optim.h"

/* The payload bytes of each element a message's operation sends (CompressCollective). */
static double op_bytes(CompressCollective op)
{
    return op == COMPRESS_ALLREDUCE_F32 ? 4.0 : op == COMPRESS_ALLREDUCE_F16 ? 2.0 : 1.0;
}

void plan_tensor_bytes(const DriverRun *run, double *bytes)
{
    const CostModel *cm = run->cost;
    CompressMsg msgs[COMPRESS_MAX_MSGS];
    for (int t = 0; t < cm->wl->n_tensors; t++) {
        const int nm =
            compress_plan_views(run->w[0].comp, cm->views, &t, 1, cm->levels, msgs, NULL);
        bytes[t] = 0;
        for (int i = 0; i < nm; i++) bytes[t] += (double)msgs[i].count * op_bytes(msgs[i].op);
    }
}

/* The buckets: the tensors in the backward's order (CostModel.order, plan_create's), each bucket
 * closed once it holds its cap of fp32 bytes, or at the last tensor; ready after the layer of
 * its last tensor's backward. A synchronising hook does not defer them: the engine's dispatcher
 * has never held a unit for it (a rule the engine would change outputs by taking). */
void plan_build_units(DriverRun *run, long step, double first_cap, double cap)
{
    CostModel *cm = run->cost;
    StepPlan *p = &cm->plan;
    const Workload *wl = cm->wl;
    const int n = wl->n_tensors;
    double bytes = 0;
    int start = 0;
    p->n_buckets = 0;
    p->n_stages = 0;
    for (int i = 0; i < n; i++) {
        const int t = cm->order[i];
        bytes += 4.0 * (double)wl->tensors[t].numel;
        const double limit = p->n_buckets == 0 && first_cap > 0 ? first_cap : cap;
        if (bytes >= limit || i == n - 1) {
            p->bucket[p->n_buckets++] = (PlanBucket){.tensors = cm->order + start,
                                                     .n_tensors = i + 1 - start,
                                                     .layer = wl->tensors[t].layer,
                                                     .queued = -1};
            start = i + 1;
            bytes = 0;
        }
    }
    for (int k = 0; k < p->n_buckets; k++) plan_bucket(run, p, &p->bucket[k], 0);
    plan_tail(run, p, step);
}

/* Each layer's update on the GPU: the profile's optimiser over its parameters (one call a layer,
 * its kernels' fixed cost each time), or the roofline of its flops and bytes (sgd_cost), as
 * cost_opt_seconds prices the whole model's. */
void plan_layer_updates(const DriverRun *run, double *opt_s)
{
    const CostModel *cm = run->cost;
    const Workload *wl = cm->wl;
    for (int l = 0; l < wl->n_layers; l++) {
        size_t n = 0;
        for (int t = 0; t < wl->layers[l].n_tensors; t++)
            n += wl->tensors[wl->layers[l].first_tensor + t].numel;
        opt_s[l] = 0;
        if (!n) continue;
        double flops, bytes;
        sgd_cost(n, &run->cfg->tc.sgd, &flops, &bytes);
        opt_s[l] = cm->prof ? costs_op_seconds(cm->prof, COST_OP_OPTIMIZER, (double)n)
                            : cost_gpu_seconds(&run->cluster, flops, bytes);
    }
}
