/* shard_comms.c: hybrid sharding's communicators (--sharding hybrid, FSDP's HYBRID_SHARD; issue
 * 50). The parameters, gradients and optimizer state are sharded over the g GPUs of a node and
 * replicated across the m nodes: a bucket's gradients are reduce-scattered inside the node (on
 * its fabric), each GPU's shard is allreduced with the GPUs of its local index on the other
 * nodes, and the parameters are gathered inside the node (step_plan_hybrid.c). Each node's group
 * is a ring of g ranks over the node's links (coll_comm_create_group: its books are run->comm's);
 * each local index's group is a ring of m ranks through the NICs, whose g rings cross each NIC at
 * once (its rate divided by the GPUs that share it, cluster_gpus_per_nic), with books of its own
 * that each call folds into run->comm's (coll_stats_fold), so that a rank's bytes and time add
 * up in one place. With --price-workers N, the cross-node rings are priced at N / g nodes. */
#include "driver_impl.h"
#include "xalloc.h"

#include <stdlib.h>

/* Mailbox tags of the groups' own (coll_comm_set_tag): apart from the run's and islands'. */
#define NODE_TAG   3000000
#define ACROSS_TAG 4000000

static int make_groups(DriverRun *run, int g, int m, BwError *err)
{
    const Cluster *cl = &run->cluster;
    Cluster node = *cl; /* a node: g GPUs on its fabric */
    node.workers = g;
    node.topology = TOPO_STAR;
    node.gpus_per_node = 1;
    node.islands = 0;
    node.bandwidth_Bps = cl->intra_bandwidth_Bps;
    node.latency_s = cl->intra_latency_s;
    node.link_share = cl->intra_link_share;
    Cluster across = *cl; /* one GPU a node, each ring at its share of the NIC */
    across.workers = m;
    across.topology = TOPO_STAR;
    across.gpus_per_node = 1;
    across.islands = 0;
    across.bandwidth_Bps = cl->bandwidth_Bps / cluster_gpus_per_nic(cl);
    for (int k = 0; k < m; k++) {
        if (!(run->node_comm[k] = coll_comm_create_group(&node, run->comm, k * g)))
            return bw_fail(err, BW_ERUNTIME, "out of memory for node %d's ring", k);
        coll_comm_set_tag(run->node_comm[k], NODE_TAG + k * g);
    }
    for (int l = 0; l < g; l++) {
        if (!(run->across_comm[l] = coll_comm_create(&across, COLL_RING, run->cfg->backend)))
            return bw_fail(err, BW_ERUNTIME, "out of memory for the rings across nodes");
        coll_comm_set_tag(run->across_comm[l], ACROSS_TAG + l);
        if (run->cfg->price_workers > run->P) {
            Cluster priced = across;
            priced.workers = run->cfg->price_workers / g;
            coll_comm_set_price(run->across_comm[l], &priced);
        }
    }
    return BW_OK;
}

int shard_comms_init(DriverRun *run, BwError *err)
{
    if (run->cfg->sharding != SHARD_HYBRID || !run->cost || run->fast) return BW_OK;
    const int g = run_node_gpus(run), m = run->P / g;
    run->node_size = g;
    run->node_comm = bw_xcalloc((size_t)m, sizeof *run->node_comm, "shard_comms.c: node_comm");
    run->across_comm =
        bw_xcalloc((size_t)g, sizeof *run->across_comm, "shard_comms.c: across_comm");
    if (!run->node_comm || !run->across_comm)
        return bw_fail(err, BW_ERUNTIME, "out of memory for hybrid sharding's communicators");
    return make_groups(run, g, m, err);
}

void shard_comms_free(DriverRun *run)
{
    const int g = run->node_size;
    for (int k = 0; run->node_comm && k < run->P / g; k++) coll_comm_free(run->node_comm[k]);
    for (int l = 0; run->across_comm && l < g; l++) coll_comm_free(run->across_comm[l]);
    free(run->node_comm);
    free(run->across_comm);
    run->node_comm = run->across_comm = NULL;
}

Comm *shard_plan_comm(const Worker *me, PlanComm which, int *rank)
{
    const DriverRun *run = me->run;
    const int g = run->node_size;
    if (which == PLAN_COMM_NODE) {
        *rank = me->rank % g;
        return run->node_comm[me->rank / g];
    }
    *rank = me->rank / g;
    return run->across_comm[me->rank % g];
}

void shard_comms_fold(const Worker *me, PlanComm which, const CollStats *before)
{
    if (which != PLAN_COMM_ACROSS) return; /* a node's books are already run->comm's */
    int rank;
    const Comm *c = shard_plan_comm(me, which, &rank);
    coll_stats_fold(me->run->comm, me->rank, c, rank, before);
}
