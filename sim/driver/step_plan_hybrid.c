/* step_plan_hybrid.c: the step plan's rules for --sharding hybrid (FSDP's HYBRID_SHARD; Zhao et
 * al., VLDB 2023; REFERENCES.md "Sharded data parallel"): ZeRO-3 inside each node of g GPUs, the
 * node replicated across the m nodes. A bucket's gradients are reduce-scattered inside the node
 * (PLAN_COMM_NODE: the ring all-gather's messages, one shard of the bucket / g a rank) and then
 * each GPU's shard, the bucket's values / g, is allreduced across the nodes with the GPUs of its
 * local index (PLAN_COMM_ACROSS); the optimizer steps over 1/g of the parameters; the parameters
 * are gathered inside the node twice, for the forward and the backward. Per GPU and step:
 * 3 (g-1)/g M bytes on the node's fabric and 2 (m-1)/m M/g across the nodes (the ring allreduce
 * of M/g), M the model's bytes in the training's data type (driver_shard_elem_bytes). The
 * communicators are shard_comms.c's. */
#include "exec_impl.h"

/* One rank's shard of `floats` values over the node's g GPUs, in bytes. */
static size_t node_shard_bytes(const DriverRun *run, size_t floats)
{
    const size_t g = (size_t)run_node_gpus(run), es = driver_shard_elem_bytes(run->cfg);
    return (es * floats + g - 1) / g;
}

void plan_hybrid_bucket(DriverRun *run, StepPlan *p, int rs, size_t floats)
{
    const size_t g = (size_t)run_node_gpus(run);
    PlanStage *s = &p->stage[rs];
    s->comm = PLAN_COMM_NODE;
    s->msg = (CompressMsg){COMPRESS_ALLGATHER, node_shard_bytes(run, floats)};
    const double call_s = s->call_s; /* s moves when the plan grows */
    PlanStage *a = plan_push_stage(p, STAGE_COLL);
    a->comm = PLAN_COMM_ACROSS;
    a->call_s = call_s;
    a->msg = (CompressMsg){driver_shard_elem_bytes(run->cfg) == 2 ? COMPRESS_ALLREDUCE_F16
                                                                  : COMPRESS_ALLREDUCE_F32,
                           (floats + g - 1) / g};
}

void plan_hybrid_tail(DriverRun *run, StepPlan *p)
{
    for (int pass = 0; pass < 2; pass++) { /* the next forward's, the backward's */
        PlanStage *s = plan_push_stage(p, STAGE_COLL);
        s->comm = PLAN_COMM_NODE;
        s->shard = PLAN_SHARD_AG;
        s->msg = (CompressMsg){COMPRESS_ALLGATHER, node_shard_bytes(run, run->cost->wl->n_params)};
        s->call_s = run->cost->prof ? run->cost->prof->collective_s : PLAN_NO_CALL;
    }
}
