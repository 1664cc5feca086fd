/* shard_estimate.c: what a sharded step costs in estimate.c's closed forms (--sharding, issue 50),
 * before the run: the simulated time that must stay representable (estimate_check_sim_time) and
 * the collective calls SimGrid will simulate (driver_wall_estimate_s). The step's collectives are
 * the plan's (step_plan.c; ZeRO, Rajbhandari et al., SC 2020, section 7; REFERENCES.md "Sharded
 * data parallel"), each a ring over the N priced GPUs, (N-1) a + (N-1)/N n b for a reduce-scatter
 * or an all-gather of n bytes (Patarasuk and Yuan, JPDC 2009; REFERENCES.md "Collectives"):
 * - zero1, zero2: a reduce-scatter of the gradients and an all-gather of the updated parameters,
 *   2 [(N-1) a + (N-1)/N n b], a ring allreduce's time;
 * - zero3: the same reduce-scatter and two all-gathers (forward and backward), 3 [...];
 * - hybrid (FSDP's HYBRID_SHARD): zero3 inside each node of g GPUs on the node's fabric,
 *   3 [(g-1) a_l + (g-1)/g n b_l], and the shard of n/g bytes allreduced across the m = N/g nodes,
 *   2 (m-1) a + 2 (m-1)/m (n/g) b k, where the g GPUs' rings share each node's NIC: k, the GPUs
 *   behind one NIC (cluster_gpus_per_nic). Per GPU, 2 (m-1)/m n/g bytes cross the nodes. */
#include "driver_impl.h"

#include <string.h>

/* What a sharded step's collectives carry a value (step_plan.c, and here): the training's data
 * type, as FSDP's MixedPrecision(param_dtype, reduce_dtype) all-gathers and reduce-scatters it
 * (torch.distributed.fsdp) and DeepSpeed's fp16 or bf16 ZeRO does: 2 bytes at --precision bf16
 * or fp16, 4 at fp32 and tf32 (FSDP without mixed precision, the parameters' fp32). */
size_t driver_shard_elem_bytes(const RunConfig *cfg)
{
    const char *p = cfg->cluster.precision;
    return p && (!strcmp(p, "bf16") || !strcmp(p, "fp16")) ? 2 : 4;
}

/* a and b: a route's latency and seconds a byte between nodes (two NIC links); a_l, b_l inside a
 * node (two links to its fabric), at the cost profile's shares (driver_cluster_loaded). */
double estimate_shard_comm_s(const RunConfig *cfg, const Cluster *c, double n)
{
    n *= (double)driver_shard_elem_bytes(cfg) / 4; /* n: fp32 bytes */
    const double N = cfg->price_workers > 0 ? cfg->price_workers : c->workers;
    const double a = 2 * c->latency_s, b = 1 / (c->bandwidth_Bps * cluster_link_share(c));
    const double ring = (N - 1) * a + (N - 1) / N * n * b;
    switch (cfg->sharding) {
    case SHARD_NONE:
        return 0;
    case SHARD_ZERO1:
    case SHARD_ZERO2:
        return 2 * ring;
    case SHARD_ZERO3:
        return 3 * ring;
    case SHARD_HYBRID:
        break;
    }
    const double g = c->gpus_per_node, m = N / g;
    const double al = 2 * c->intra_latency_s,
                 bl = 1 / (c->intra_bandwidth_Bps * cluster_intra_link_share(c));
    const double inside = g > 1 ? 3 * ((g - 1) * al + (g - 1) / g * n * bl) : 0;
    const double across =
        m > 1 ? 2 * (m - 1) * a + 2 * (m - 1) / m * (n / g) * b * cluster_gpus_per_nic(c) : 0;
    return inside + across;
}

/* The sharded step's calls in place of step_calls' dense allreduce: the reduce-scatter and the
 * all-gathers each move as the ring all-gather does (P (P-1) messages at the transfer level, an
 * upper bound for hybrid's, inside a node of g: g (g-1)); hybrid's across nodes is one allreduce.
 */
void estimate_shard_calls(const RunConfig *cfg, double *allreduces, double *allgathers)
{
    if (cfg->sharding == SHARD_NONE) return;
    *allreduces = cfg->sharding == SHARD_HYBRID ? 1 : 0;
    *allgathers = cfg->sharding == SHARD_ZERO1 || cfg->sharding == SHARD_ZERO2 ? 2 : 3;
}
