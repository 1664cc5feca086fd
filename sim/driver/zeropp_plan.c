/* zeropp_plan.c: ZeRO++'s builder rules of the step plan (--zeropp under --sharding zero3; Wang
 * et al., "ZeRO++", 2023, arXiv:2306.10209; zeropp.c for the small model's side). Bytes are
 * bellows' wire bytes: its dense gradients and parameters are fp32 (4 bytes a value,
 * plan_shard_bytes), the quantized ones blockq_bytes (packed integers and one fp32 scale a block).
 * ZeRO++ counts against fp16 (2 bytes a value), so its int8 weights are half its baseline's bytes
 * and a quarter of bellows'. Encode and decode are the cost profile's `quantise` operation over the
 * values quantized or dequantized, as the compressors' (comp_qsgd.c); none without a profile
 * (the roofline), under --costs ideal or with --free-compression. */
#include "exec_impl.h"

#include <math.h>

#include "blockq.h"
#include "costs.h"
#include "xalloc.h"

/* The priced GPUs, the GPUs a node and the nodes (the priced GPUs over G). */
static double zpp_N(const DriverRun *run)
{
    const RunConfig *cfg = run->cfg;
    return cfg->price_workers > 0 ? cfg->price_workers : cfg->cluster.workers;
}

static double quant_s(const DriverRun *run, double values)
{
    const CostProfile *p = run->cost->prof;
    if (run->cfg->free_compression) return 0; /* as the compressors' work (cost_phases) */
    /* a fused block quantiser's rate where the profile has one (blockq), else QSGD's eager one */
    const CostOp op = p && p->ops[COST_OP_BLOCKQ].present ? COST_OP_BLOCKQ : COST_OP_QUANTISE;
    if (!p || p->ideal || !p->ops[op].present || !(values > 0)) return 0;
    return costs_op_seconds(p, op, values);
}

static double call_s(const DriverRun *run)
{
    return run->cost->prof ? run->cost->prof->collective_s : PLAN_NO_CALL;
}

/* A new stage at the end of the plan, as step_plan.c's push (kept apart so that the builder's
 * file and this one do not call each other: scripts/callgraph.py). */
/* The fp32 bytes of one rank's shard of `floats` values over the priced GPUs (plan_shard_bytes). */
static double shard_bytes(const DriverRun *run, double floats)
{
    const double N = zpp_N(run);
    return ceil(4 * floats / N);
}

static PlanStage *push_coll(DriverRun *run, StepPlan *p, PlanComm comm, PlanShard shard,
                            double bytes)
{
    PlanStage *s = plan_push_stage(p, STAGE_COLL);
    s->comm = comm;
    s->shard = shard;
    s->msg = (CompressMsg){COMPRESS_ALLGATHER, (size_t)ceil(bytes)};
    s->call_s = call_s(run);
    return s;
}

/* qwZ's bytes of one rank's shard: each tensor partitioned over the N ranks (ceil(numel / N)
 * each, DeepSpeed's ds_tensor) and quantized in blocks of at most 8000 (blockq_qwz_block). */
static double qwz_shard_bytes(const DriverRun *run, int t0, int nt)
{
    const Workload *wl = run->cost->wl;
    const double N = zpp_N(run);
    double bytes = 0;
    for (int t = t0; t < t0 + nt; t++) {
        const size_t s = (size_t)ceil((double)wl->tensors[t].numel / N);
        bytes += blockq_bytes(s, blockq_qwz_block(s), run->cfg->zeropp.qwz_bits);
    }
    return bytes;
}

/* One all-gather of the parameters on the run's communicator: quantized under qwZ (the shard
 * encoded, the gathered model decoded), else fp32. */
static void gather_run(DriverRun *run, StepPlan *p)
{
    const double n = (double)run->cost->wl->n_params;
    if (!run->cfg->zeropp.qwz_bits) {
        push_coll(run, p, PLAN_COMM_RUN, PLAN_SHARD_AG, shard_bytes(run, n));
        return;
    }
    plan_push_stage(p, STAGE_ENCODE)->seconds = quant_s(run, n / zpp_N(run));
    push_coll(run, p, PLAN_COMM_RUN, PLAN_SHARD_AG,
              qwz_shard_bytes(run, 0, run->cost->wl->n_tensors));
    plan_push_stage(p, STAGE_DECODE)->seconds = quant_s(run, n);
}

int zpp_plan_gathers(DriverRun *run, StepPlan *p)
{
    const ZeroPP *z = &run->cfg->zeropp;
    if (!z->qwz_bits && !z->hpz) return 0;
    gather_run(run, p); /* the next forward's */
    if (!z->hpz) {
        gather_run(run, p); /* the backward's */
        return 1;
    }
    /* hpZ: the backward's from the node's secondary shard (fp32 here, 1/G of the model a GPU),
     * none to gather on a node of one GPU */
    const int G = run_node_gpus(run);
    if (G > 1)
        push_coll(run, p, PLAN_COMM_NODE, PLAN_SHARD_AG,
                  ceil(4.0 * (double)run->cost->wl->n_params / G));
    return 1;
}

/* One all-gather of a unit into its stages s[]: on `comm`, of `bytes` a rank, after an encode of
 * `enc` values and before a decode of `dec` (none when 0); returns the stages' number. */
static int unit_gather(const DriverRun *run, PlanStage *s, PlanComm comm, double bytes, double enc,
                       double dec)
{
    int n = 0;
    if (enc > 0) s[n++] = (PlanStage){.kind = STAGE_ENCODE, .seconds = quant_s(run, enc)};
    s[n++] = (PlanStage){.kind = STAGE_COLL,
                         .comm = comm,
                         .shard = PLAN_SHARD_AG,
                         .msg = {COMPRESS_ALLGATHER, (size_t)ceil(bytes)},
                         .call_s = call_s(run)};
    if (dec > 0) s[n++] = (PlanStage){.kind = STAGE_DECODE, .seconds = quant_s(run, dec)};
    return n;
}

/* A unit's all-gathers by the whole model's rules (zpp_plan_gathers) over its tensors: qwZ's
 * quantized shard (its encode and decode), else fp32; under hpZ the backward's from the node's
 * secondary shard, none on a node of one GPU. The units' bytes add up to the whole model's. */
int zpp_plan_unit_gathers(DriverRun *run, PlanUnit *un)
{
    const ZeroPP *z = &run->cfg->zeropp;
    if (!z->qwz_bits && !z->hpz) return 0;
    const double n = (double)un->floats, N = zpp_N(run);
    for (int k = 0; k < 2; k++) {
        PlanStage *s = un->gather[k];
        if (k == 1 && z->hpz) {
            const int G = run_node_gpus(run);
            un->n_gather[1] = G > 1 ? unit_gather(run, s, PLAN_COMM_NODE, 4.0 * n / G, 0, 0) : 0;
        } else if (z->qwz_bits) {
            const double q = qwz_shard_bytes(run, un->first_tensor, un->n_tensors);
            un->n_gather[k] = unit_gather(run, s, PLAN_COMM_RUN, q, n / N, n);
        } else {
            un->n_gather[k] = unit_gather(run, s, PLAN_COMM_RUN, shard_bytes(run, n), 0, 0);
        }
    }
    return 1;
}

/* qgZ's int4 bytes of the bucket's quantized tensors (coalesced_collectives.py's rule: more
 * than one dimension and a size that divides by 2 N, in max(rows, cols, N) groups): all of each
 * tensor (inside the node) and 1/G of it (across the nodes); the other tensors' values. */
static void qgz_bucket_bytes(const DriverRun *run, const PlanBucket *b, double *y1, double *y2,
                             double *xq, double *plain)
{
    const Workload *wl = run->cost->wl;
    const size_t N = (size_t)zpp_N(run), G = (size_t)run_node_gpus(run);
    *y1 = *y2 = *xq = *plain = 0;
    for (int i = 0; i < b->n_tensors; i++) {
        const WorkloadTensor *t = &wl->tensors[b->tensors[i]];
        size_t groups = (size_t)(t->rows > t->cols ? t->rows : t->cols);
        if (groups < N) groups = N;
        if (t->ndim < 2 || t->numel % (2 * N) != 0) {
            *plain += (double)t->numel;
            continue;
        }
        const size_t block = (t->numel + groups - 1) / groups;
        *xq += (double)t->numel;
        *y1 += blockq_bytes(t->numel, block, 4);
        *y2 += blockq_bytes(t->numel / G, block, 4);
    }
}

/* qgZ: the bucket's plain tensors reduce-scattered as before; its quantized ones
 * encoded to int4, all-to-all inside the node (its X bytes: the all-gather of X/G a rank),
 * dequantized, summed and quantized again, all-to-all across the nodes between the GPUs of the
 * same local rank (each sends (m-1)/m of its Y bytes across; priced on the run's ring as the
 * all-gather of (m-1)/m Y / (N-1) a rank, the same bytes a rank), and decoded and summed. */
int zpp_plan_bucket_rs(DriverRun *run, StepPlan *p, PlanBucket *b, size_t floats)
{
    (void)floats;
    if (!run->cfg->zeropp.qgz) return 0;
    double y1, y2, xq, plain;
    qgz_bucket_bytes(run, b, &y1, &y2, &xq, &plain);
    const double N = zpp_N(run), G = run_node_gpus(run), m = N / G;
    if (plain > 0) push_coll(run, p, p->grad_comm, PLAN_SHARD_RS, shard_bytes(run, plain));
    if (!(xq > 0)) return 1;
    p->stage[b->first_stage].seconds += quant_s(run, xq); /* the bucket's STAGE_ENCODE */
    if (G > 1) push_coll(run, p, PLAN_COMM_NODE, PLAN_SHARD_A2A, y1 / G);
    plan_push_stage(p, STAGE_BETWEEN)->seconds = quant_s(run, xq) + quant_s(run, xq / G);
    plan_push_stage(p, STAGE_ROUND)->seconds = cost_cycle_wait_s(run->cost->prof, 0);
    if (m > 1) push_coll(run, p, PLAN_COMM_RUN, PLAN_SHARD_A2A, (m - 1) / m * y2 / (N - 1));
    plan_push_stage(p, STAGE_DECODE)->seconds = quant_s(run, xq / G);
    return 1;
}

/* Per node and step: a collective on the node's ring crosses none; the all-to-all across the
 * nodes sends (m-1)/m of each GPU's Y bytes across (G GPUs a node); a ring over all N GPUs
 * (nodes of G consecutive ranks) crosses each node boundary once: its sender's bytes. */
double zpp_cross_node_bytes(const DriverRun *run)
{
    const StepPlan *p = &run->cost->plan;
    const double N = zpp_N(run), G = run_node_gpus(run);
    if (N / G <= 1) return 0;
    double bytes = 0;
    for (int i = 0; i < p->n_stages; i++) {
        const PlanStage *s = &p->stage[i];
        if (s->kind != STAGE_COLL || s->comm != PLAN_COMM_RUN || s->if_averaged) continue;
        const double c = (double)s->msg.count;
        if (s->shard == PLAN_SHARD_A2A)
            bytes += G * (N - 1) * c;
        else if (s->msg.op == COMPRESS_ALLGATHER)
            bytes += (N - 1) * c;
        else /* a ring allreduce: 2 (N-1)/N of its bytes */
            bytes += 2 * (N - 1) / N * c * (s->msg.op == COMPRESS_ALLREDUCE_F16 ? 2 : 4);
    }
    /* ZeRO-3's FSDP units (shard_sched.c): each unit's all-gather for the forward, and again
     * for the backward unless --reshard-after-forward off keeps it (on the node's ring under
     * hpZ: none across) */
    const int gathers = run->cfg->fsdp.keep_after_forward ? 1 : 2;
    for (int u = 0; u < p->n_units; u++)
        for (int k = 0; k < gathers; k++)
            for (int i = 0; i < p->unit[u].n_gather[k]; i++) {
                const PlanStage *s = &p->unit[u].gather[k][i];
                if (s->kind == STAGE_COLL && s->comm == PLAN_COMM_RUN)
                    bytes += (N - 1) * (double)s->msg.count;
            }
    return bytes;
}
