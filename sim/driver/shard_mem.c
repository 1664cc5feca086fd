/* shard_mem.c: memory per GPU of a workload's training state under --sharding (issue 50), from
 * the ZeRO paper's model (Rajbhandari et al., SC 2020, section 3.1 and Figure 1; REFERENCES.md
 * "Sharded data parallel"): mixed precision keeps 2 Psi bytes of fp16 parameters, 2 Psi of fp16
 * gradients and K Psi of optimizer state (the fp32 master parameters and the optimizer's
 * buffers: K = 12 with Adam's two moments, 8 with SGD's momentum, 4 with plain SGD). DDP holds
 * all of it, 16 Psi with Adam; ZeRO-1 shards the optimizer state (4 Psi + 12 Psi / N), ZeRO-2
 * also the gradients (2 Psi + 14 Psi / N), ZeRO-3 also the parameters (16 Psi / N), which then
 * gathers units as it goes: the largest FSDP unit's fp16 parameters as many times as the
 * schedule holds units at once (fsdp_gathered_bytes: twice under FSDP's defaults, the one in use
 * and the one prefetched; the whole model without resharding after the forward), an estimate.
 * That is --precision bf16 and fp16. At fp32 and tf32 (TF32 is a compute mode on fp32 tensors)
 * there is no mixed precision: the parameters and gradients are fp32, 4 Psi each, and the
 * optimizer's state has no master copy, K - 4 (8 Psi with Adam, 4 with momentum, none for plain
 * SGD): the same total under DDP, but a split that moves 4 Psi out of what ZeRO-1 and ZeRO-2
 * shard, and fp32 units gathered. Activations are not counted: the workload profiles carry no
 * activation sizes yet (docs/guide/sharded.md). */
#include "driver_impl.h"

/* K: the optimizer's state in bytes a parameter under mixed precision (the fp32 master copy and
 * the buffers, ZeRO section 3.1); without it (fp32 training), K - 4. */
static double optimizer_k(const RunConfig *cfg, int mixed)
{
    const double k = cfg->tc.sgd.kind == OPT_ADAMW ? 12.0 : cfg->tc.sgd.momentum > 0 ? 8.0 : 4.0;
    return mixed ? k : k - 4.0;
}

const char *driver_shard_memory_model(const RunConfig *cfg)
{
    return driver_shard_elem_bytes(cfg) == 2 ? "ZeRO's mixed-precision model"
                                             : "ZeRO's model in fp32, no master copy";
}

int driver_shard_memory(const RunConfig *cfg, Sharding sh, ShardMemory *m)
{
    *m = (ShardMemory){0};
    const Workload *wl = cfg->workload;
    if (!wl) return 0;
    const double e = (double)driver_shard_elem_bytes(cfg); /* 2: mixed precision; 4: fp32 */
    const double psi = (double)wl->n_params, k = optimizer_k(cfg, e == 2);
    const double n = cfg->price_workers > 0 ? cfg->price_workers : cfg->cluster.workers;
    m->params = e * psi;
    m->grads = e * psi;
    m->optimizer = k * psi;
    if (sh != SHARD_NONE) m->optimizer /= n;
    if (sh == SHARD_ZERO2 || sh == SHARD_ZERO3 || sh == SHARD_HYBRID) m->grads /= n;
    if (sh == SHARD_ZERO3 || sh == SHARD_HYBRID) {
        /* hybrid shards inside a node: over its GPUs, not the run's */
        const double g = sh == SHARD_HYBRID ? cfg->cluster.gpus_per_node : n;
        if (sh == SHARD_HYBRID) {
            m->optimizer = k * psi / g;
            m->grads = e * psi / g;
        }
        m->params = e * psi / g;
        /* the units held (shard_sched.c: in fp16), in the training's type */
        m->gathered = fsdp_gathered_bytes(wl, &cfg->fsdp) * e / 2;
    }
    if (sh == SHARD_ZERO3 && cfg->zeropp.hpz) /* ZeRO++'s secondary shard, fp16 over the node */
        m->secondary = 2 * psi / (cfg->cluster.gpus_per_node > 0 ? cfg->cluster.gpus_per_node : 1);
    m->total = m->params + m->grads + m->optimizer + m->gathered + m->secondary;
    const GpuProfile *gpu = cfg->cluster.gpu;
    m->capacity = gpu ? gpu->mem_bytes : 0;
    return 1;
}

const char *driver_sharding_name(Sharding sh)
{
    static const char *const NAMES[] = {"none", "zero1", "zero2", "zero3", "hybrid"};
    return NAMES[sh];
}

/* The workload's state must fit the GPU's memory (its profile): a usage error saying by how
 * much otherwise, and what each sharding mode would need. */
int driver_check_shard_memory(const RunConfig *cfg, BwError *err)
{
    ShardMemory m, z3;
    if (!driver_shard_memory(cfg, cfg->sharding, &m) || !(m.capacity > 0) || m.total <= m.capacity)
        return BW_OK;
    driver_shard_memory(cfg, SHARD_ZERO3, &z3);
    const GpuProfile *gpu = cfg->cluster.gpu;
    return bw_fail(err, BW_EUSAGE,
                   "--workload %s: its training state needs %.1f GB per GPU with --sharding %s "
                   "(%s, activations not counted), over the %s's %.0f GB by %.1f GB; --sharding "
                   "zero3 would need %.1f GB",
                   cfg->workload->spec, m.total / 1e9, driver_sharding_name(cfg->sharding),
                   driver_shard_memory_model(cfg), gpu->name, m.capacity / 1e9,
                   (m.total - m.capacity) / 1e9, z3.total / 1e9);
}
