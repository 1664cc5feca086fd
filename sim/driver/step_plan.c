/* step_plan.c: the builder of a costed step's plan (step_plan.h), the one place that asks the
 * compressor for its messages and its work per phase, reads the profile's fixed costs, cycle
 * and hooks, DDP's buckets and --overlap, whether the run has islands (and which communicator
 * its gradients take there) or outer lanes, and what the outer exchange carries. The clocks
 * (cost.c, cost_fast.c) only walk what it builds. */
#include "exec_impl.h"

#include <math.h>
#include <stdlib.h>

#include "xalloc.h"

/* DDP's buckets: tensors in reverse order, a bucket closed once it holds cap bytes (the first
 * one DRIVER_FIRST_BUCKET_BYTES), as PyTorch's compute_bucket_assignment_by_size does
 * (torch/nn/parallel/distributed.py, reducer.cpp). */
static int plan_ddp_buckets(CostModel *cm, double cap)
{
    const Workload *wl = cm->wl;
    const int n = wl->n_tensors;
    int k = 0;
    double bytes = 0;
    cm->bucket_start[0] = 0;
    for (int i = 0; i < n; i++) {
        int t = n - 1 - i;
        cm->order[i] = t;
        bytes += 4.0 * (double)wl->tensors[t].numel;
        double limit = k == 0 ? fmin(DRIVER_FIRST_BUCKET_BYTES, cap) : cap;
        if (bytes >= limit || i == n - 1) {
            cm->bucket_layer[k] = wl->tensors[t].layer; /* ready after this layer's backward */
            cm->bucket_start[++k] = i + 1;
            bytes = 0;
        }
    }
    return k;
}

/* The run's fixed part: DDP's buckets over the tensors (CostModel.order, bucket_*), the plan's
 * buckets (as many as the tensors at most: --overlap tensor's), its mode and the communicator
 * of its buckets' collectives: on islands in periodic mode with --workload or --overlap
 * (islands_bucketed, islands.c) the inner step is the workload's data-parallel step inside the
 * worker's island, its buckets on the island's ring (PLAN_COMM_ISLAND), DDP's overlap too. */
int plan_create(DriverRun *run, BwError *err)
{
    (void)err;
    CostModel *cm = run->cost;
    const RunConfig *cfg = run->cfg;
    StepPlan *p = &cm->plan;
    const int n = cm->wl->n_tensors;
    cm->n_buckets =
        plan_ddp_buckets(cm, cfg->bucket_bytes > 0 ? cfg->bucket_bytes : DRIVER_BUCKET_BYTES);
    p->bucket = bw_xcalloc((size_t)n, sizeof *p->bucket, "the plan's buckets");
    p->identity = bw_xcalloc((size_t)n, sizeof *p->identity, "the plan's buckets");
    for (int t = 0; t < n; t++) p->identity[t] = t;
    const int island = islands_bucketed(run);
    p->grad_comm = island ? PLAN_COMM_ISLAND : PLAN_COMM_RUN;
    p->mode = cm->exec == &exec_sched    ? PLAN_SCHEDULED
              : cm->ddp                  ? PLAN_OVERLAP
              : run->periodic && !island ? PLAN_NO_GRADIENTS
                                         : PLAN_AFTER;
    if (p->mode == PLAN_OVERLAP) {
        p->n_buckets = cm->n_buckets;
        for (int k = 0; k < cm->n_buckets; k++)
            p->bucket[k] = (PlanBucket){.tensors = cm->order + cm->bucket_start[k],
                                        .n_tensors = cm->bucket_start[k + 1] - cm->bucket_start[k],
                                        .layer = cm->bucket_layer[k],
                                        .queued = -1};
        if (cm->prof && cm->prof->horovod.present) /* step_plan_hvd.c */
            plan_hvd_buckets(run, driver_price_batch(cfg, run->b0));
        if (cfg->sharding == SHARD_ZERO3) fsdp_plan_create(run, p); /* units (shard_sched.c) */
        for (int u = 0; u < p->n_units; u++) { /* each unit's all-gathers: a shard of it a rank */
            PlanUnit *un = &p->unit[u];
            if (zpp_plan_unit_gathers(run, un)) continue; /* --zeropp qwz, hpz (zeropp_plan.c) */
            un->gather[0][0].msg.count = un->gather[1][0].msg.count =
                plan_shard_bytes(run, un->floats);
        }
    } else if (p->mode == PLAN_AFTER && cfg->overlap == OVERLAP_TENSOR) {
        /* in the model's order, as a loop over them; each queued behind the one before */
        p->n_buckets = n;
        for (int t = 0; t < n; t++)
            p->bucket[t] = (PlanBucket){
                .tensors = p->identity + t, .n_tensors = 1, .layer = -1, .queued = t > 0};
    } else if (p->mode == PLAN_AFTER) { /* one fused call of every tensor */
        p->n_buckets = 1;
        p->bucket[0] = (PlanBucket){.tensors = cm->order, .n_tensors = n, .layer = -1};
    }
    return BW_OK;
}

void plan_free(StepPlan *p)
{
    free(p->bucket);
    free(p->stage);
    free(p->identity);
    free(p->unit);
    *p = (StepPlan){0};
}

/* The profile's fixed cost of a collective call, or none (the roofline). */
static double call_cost(const CostModel *cm)
{
    return cm->prof ? cm->prof->collective_s : PLAN_NO_CALL;
}

/* Whether the profile's hook of the run's compressor synchronises (CostHook.synchronizes:
 * PyTorch's powerSGD_hook calls torch.cuda.synchronize in its last callback, which DDP's
 * reducer runs inline on the autograd thread, so the backward after a bucket it compresses does
 * not start until the bucket is reduced). */
static int plan_hook_syncs(const DriverRun *run)
{
    const CostHook *hook = costs_hook(run->cost->prof, compress_spec(run->w[0].comp));
    return hook && hook->synchronizes;
}

/* Bucket b's stages at this step's levels: the encode, the ranks' rendezvous, the first round,
 * each message on the plan's communicator with the compressor's work and a new round between
 * rounds (cost_phases), the decode; and whether it waits for the backward: an allgather the
 * profile does not overlap, or a message of the compressor's own under a hook that synchronises
 * (syncs). The backward and such a bucket's collectives take turns, which prices as the backward
 * first and the buckets after it (the same sum, nothing overlapped), as an allgather's. */
void plan_bucket(DriverRun *run, StepPlan *p, PlanBucket *b, int syncs)
{
    CostModel *cm = run->cost;
    CompressMsg msgs[COMPRESS_MAX_MSGS];
    CompressCost cc = {.prof = cm->prof};
    const int nm = compress_plan_views(run->w[0].comp, cm->views, b->tensors, b->n_tensors,
                                       cm->levels, msgs, &cc);
    const int last = cost_phases(run, nm, &cc);
    b->first_stage = p->n_stages;
    /* the hook compresses something (and synchronises then, whether or not it sends anything
     * of its own: powersgd:comm=none keeps the hook's chain, and so its torch.cuda.synchronize) */
    b->defer = syncs && cc.n_compressed > 0;
    plan_push_stage(p, STAGE_ENCODE)->seconds = cc.phase_s[0];
    plan_push_stage(p, STAGE_RENDEZVOUS);
    if (p->horovod) { /* its cycle, negotiation and copy in (step_plan_hvd.c) */
        if (b->opens_cycle) {
            plan_push_stage(p, STAGE_CYCLE)->seconds = cm->prof->horovod.cycle_s;
            plan_hvd_negotiation(cm, b, &plan_push_stage(p, STAGE_NEGOTIATE)->msg);
        }
        const double copy = plan_hvd_copy_s(cm, b, msgs, nm);
        if (copy > 0) plan_push_stage(p, STAGE_FUSE)->seconds = copy;
    } else {
        PlanStage *r = plan_push_stage(p, STAGE_ROUND);
        r->seconds = cost_cycle_wait_s(cm->prof, 0);
        r->queueable = 1;
    }
    for (int i = 0; i < nm; i++) {
        const int ph = i - cc.first_msg; /* the compressor's work before its ph-th message */
        if (ph > 0 && cc.phase_s[ph] > 0) {
            plan_push_stage(p, STAGE_BETWEEN)->seconds = cc.phase_s[ph];
            plan_push_stage(p, STAGE_ROUND)->seconds = cost_cycle_wait_s(cm->prof, 0);
        }
        if (run->cfg->sharding != SHARD_NONE && msgs[i].op == COMPRESS_ALLREDUCE_F32 &&
            zpp_plan_bucket_rs(run, p, b, msgs[i].count)) /* --zeropp qgz (zeropp_plan.c) */
            continue;
        PlanStage *c = plan_push_stage(p, STAGE_COLL);
        c->comm = p->grad_comm;
        c->msg = msgs[i];
        c->call_s = call_cost(cm);
        if (run->cfg->sharding != SHARD_NONE && msgs[i].op == COMPRESS_ALLREDUCE_F32) {
            /* the bucket's gradients reduce-scattered (ZeRO-2's and FSDP's buckets beside the
             * backward), not allreduced; compressors are refused with sharding (compat.def) */
            c->shard = PLAN_SHARD_RS;
            c->msg = (CompressMsg){COMPRESS_ALLGATHER, plan_shard_bytes(run, msgs[i].count)};
            if (run->cfg->sharding == SHARD_HYBRID) /* inside the node, then across (hybrid) */
                plan_hybrid_bucket(run, p, (int)(c - p->stage), msgs[i].count);
        } else if (msgs[i].op == COMPRESS_ALLGATHER && cm->prof && !cm->prof->allgather_overlaps)
            b->defer = 1;
    }
    const double copy_out = p->horovod ? plan_hvd_copy_s(cm, b, msgs, nm) : 0;
    if (copy_out > 0)
        plan_push_stage(p, STAGE_FUSE)->seconds = copy_out; /* the fusion buffer's, out */
    if (last > 0) plan_push_stage(p, STAGE_DECODE)->seconds = cc.phase_s[last];
    b->n_stages = p->n_stages - b->first_stage;
}

size_t plan_shard_bytes(const DriverRun *run, size_t floats)
{
    const RunConfig *cfg = run->cfg;
    const size_t n = (size_t)(cfg->price_workers > 0 ? cfg->price_workers : cfg->cluster.workers);
    const size_t es = driver_shard_elem_bytes(cfg); /* 2 at bf16 and fp16 (shard_estimate.c) */
    return (es * floats + n - 1) / n;
}

static void push_gather(DriverRun *run, StepPlan *p)
{
    PlanStage *s = plan_push_stage(p, STAGE_COLL);
    s->shard = PLAN_SHARD_AG;
    s->msg = (CompressMsg){COMPRESS_ALLGATHER, plan_shard_bytes(run, run->cost->wl->n_params)};
    s->call_s = call_cost(run->cost);
}

/* The optimiser and, sharded (ZeRO, Rajbhandari et al., SC 2020, section 5; REFERENCES.md
 * "Sharded data parallel"), its step on the GPU's shard only (1/N of the time) and the
 * parameters' all-gathers: ZeRO-1 and 2 gather the updated parameters once (with the buckets'
 * reduce-scatters, 2 (N-1)/N of the model's bytes a step and GPU); ZeRO-3 gathers them before
 * the forward and again before the backward (3 (N-1)/N). This slice prices ZeRO-3's two
 * gathers here, after the optimiser and not overlapped with compute, when the step has no FSDP
 * units (--overlap none or tensor): the bytes are the closed form's, the time an upper bound of
 * a prefetching FSDP's. Beside the compute (--overlap ddp) ZeRO-3's gathers are its units'
 * (fsdp_plan_create), scheduled by fsdp_walk, under --zeropp too (zpp_plan_unit_gathers). */
static void plan_sharded_tail(DriverRun *run, StepPlan *p)
{
    const Sharding sh = run->cfg->sharding;
    double opt = cost_opt_seconds(run);
    if (sh == SHARD_HYBRID) /* sharded over the node's GPUs (step_plan_hybrid.c) */
        opt /= run_node_gpus(run);
    else if (sh != SHARD_NONE)
        opt /= run->cfg->price_workers > 0 ? run->cfg->price_workers : run->cfg->cluster.workers;
    plan_push_stage(p, STAGE_OPTIMIZER)->seconds = opt;
    if (sh == SHARD_HYBRID) plan_hybrid_tail(run, p);
    if (sh == SHARD_ZERO1 || sh == SHARD_ZERO2) push_gather(run, p);
    if (sh != SHARD_ZERO3 || p->n_units) return; /* with units, each unit's (shard_sched.c) */
    if (zpp_plan_gathers(run, p)) return;        /* --zeropp (zeropp_plan.c) */
    push_gather(run, p);                         /* the next forward's */
    push_gather(run, p);                         /* the backward's */
}

/* After the gradients: the island's ring (periodic mode on islands, unless the buckets ran on
 * it), the optimiser, and at an averaging the real model's parameters, dense, on the run's
 * communicator (Streaming DiLoCo: the fragment exchanged at `step`, outer_exchange_floats), on
 * the outer lane when the run has one (it overlaps the next tau steps). */
void plan_tail(DriverRun *run, StepPlan *p, long step)
{
    CostModel *cm = run->cost;
    p->tail_first = p->n_stages;
    if (run->island_comm && p->grad_comm != PLAN_COMM_ISLAND) {
        PlanStage *s = plan_push_stage(p, STAGE_COLL);
        s->comm = PLAN_COMM_ISLAND;
        s->msg = (CompressMsg){COMPRESS_ALLREDUCE_F32, cm->wl->n_params};
    }
    plan_sharded_tail(run, p);
    const CompressMsg avg = {COMPRESS_ALLREDUCE_F32,
                             outer_exchange_floats(run, step, cm->wl->n_params)}; /* outer.c */
    if (run->outer.lanes) {
        plan_push_stage(p, STAGE_OUTER_WAIT);
        PlanStage *s = plan_push_stage(p, STAGE_OUTER_POST);
        s->if_averaged = 1;
        s->msg = avg;
        s->seconds = cost_cycle_wait_s(cm->prof, 0) + (cm->prof ? cm->prof->collective_s : 0);
        return;
    }
    PlanStage *s = plan_push_stage(p, STAGE_AVERAGE);
    s->if_averaged = 1;
    s->msg = avg;
    s->seconds = cost_cycle_wait_s(cm->prof, 0);
    s->call_s = call_cost(cm);
}

/* At the rendezvous, once the policy decided: each real tensor's level (that of the small layer
 * it follows; vectors dense), then every bucket's stages and the tail. */
void plan_build(DriverRun *run, long step, int b)
{
    CostModel *cm = run->cost;
    StepPlan *p = &cm->plan;
    /* Horovod fuses what its cycles find ready, and the backward's length moves with the batch
     * (a policy's, Accordion's batch mode): its calls follow the batch priced */
    if (p->horovod && driver_price_batch(run->cfg, b) != p->hvd_batch)
        plan_hvd_buckets(run, driver_price_batch(run->cfg, b));
    for (int t = 0; t < cm->wl->n_tensors; t++)
        cm->levels[t] = cm->follows[t] >= 0 ? run->dec.level[cm->follows[t]] : 0.0;
    p->n_stages = 0;
    if (p->mode == PLAN_SCHEDULED) { /* the schedule decides the buckets (plan_build_units) */
        p->n_buckets = 0;
        return;
    }
    const int syncs = p->mode == PLAN_OVERLAP && plan_hook_syncs(run);
    for (int k = 0; k < p->n_buckets; k++) plan_bucket(run, p, &p->bucket[k], syncs);
    plan_tail(run, p, step);
    if (run->cfg->sharding != SHARD_NONE) /* zeropp_plan.c */
        run->res->cross_node_bytes_per_step = zpp_cross_node_bytes(run);
}

int plan_outer_waits(const DriverRun *run, long step, int averaged)
{
    return outer_applies_at(run, step) || (averaged && run->outer.eager.on);
}
