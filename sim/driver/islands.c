/* islands.c: training across islands (--topology islands: K datacenters joined by WAN links,
 * sim/net/cluster.h). The run's communicator is the hierarchical allreduce with the islands as
 * its nodes: reduce-scatter inside each island, an allreduce of each GPU's share between the
 * islands (over the WAN), allgather inside (coll.h, "hierarchical"), so a synchronous
 * data-parallel step or a periodic averaging (DiLoCo's outer exchange) crosses the WAN once per
 * share, 2 (K-1)/K of the model per island. In periodic mode the inner steps are synchronous
 * data-parallel inside each island, over its own ring every step (Douillard et al., DiLoCo,
 * arXiv 2311.08105: the replicas are islands of accelerators), so the island's workers stay one
 * replica. Every message between two islands is counted (RunResult.wan_bytes). */
#include "driver_impl.h"
#include "xalloc.h"

#include <assert.h>
#include <stdlib.h>

#include <simgrid/engine.h>

Comm *islands_comm_create(const Cluster *cl, CollAlgo algo, CollBackend backend, int flat)
{
    /* flat (--allreduce ring): one ring over every rank in order, so K of its P hops cross the
     * WAN (island k's last rank to island k+1's first) and each step waits for them: the
     * analytic closed form 2 (P-1) a + 2 (P-1)/P n b with a, b the route between islands
     * (sim/net/coll.c derive_costs) */
    if (cl->topology != TOPO_ISLANDS || flat) return coll_comm_create(cl, algo, backend);
    Cluster h = *cl;
    h.gpus_per_node = cluster_island_size(cl); /* the hierarchical algorithm's groups */
    return coll_comm_create(&h, COLL_HIERARCHICAL, backend);
}

static void wan_wire(void *arg, int src, int dst, double bytes, double t0_s, double t1_s)
{
    (void)t0_s, (void)t1_s;
    DriverRun *run = arg;
    const Cluster *cl = &run->cluster;
    if (cluster_island_of(cl, src) == cluster_island_of(cl, dst)) return;
    run->res->wan_bytes += bytes;
    run->wan_step += bytes;
}

/* Called once every rank has left the step (the next step's rendezvous, or the run's end): the
 * step's row gets the WAN bytes so far. Each rank counts its own share as its call returns, and
 * rank 0 records the row when its own has (worker_step_end), before the others' are in. */
void islands_step_done(DriverRun *run)
{
    RunResult *res = run->res;
    if (res->n_steps > 0) res->steps[res->n_steps - 1].wan_bytes = res->wan_bytes;
    if (run->wan_step > run->res->wan_peak_step_bytes)
        run->res->wan_peak_step_bytes = run->wan_step;
    run->wan_step = 0;
}

int islands_init(DriverRun *run, BwError *err)
{
    const Cluster *cl = &run->cluster;
    if (cl->topology != TOPO_ISLANDS || run->fast) return BW_OK;
    if (run->cfg->backend == COLL_ANALYTIC) /* the closed form's bytes between islands */
        coll_comm_set_wire_inter(run->comm, wan_wire, run, cluster_island_size(cl));
    else
        coll_comm_set_wire(run->comm, wan_wire, run);
    if (!run->periodic) return BW_OK;
    const int K = cl->islands, S = cluster_island_size(cl);
    run->island_size = S;
    run->island_comm =
        bw_xcalloc((size_t)K, sizeof *run->island_comm, "islands.c: run->island_comm");
    run->island_step =
        bw_xmalloc(sizeof *run->island_step * (size_t)K, "islands.c: run->island_step");
    for (int k = 0; run->island_step && k < K; k++) run->island_step[k] = -1;
    if (!run->island_comm || !run->island_step)
        return bw_fail(err, BW_ERUNTIME, "out of memory for %d islands", K);
    Cluster sub = *cl; /* an island: a star of S GPUs on its own switch */
    sub.workers = S;
    sub.topology = TOPO_STAR;
    sub.islands = 0;
    sub.gpus_per_node = 1;
    for (int k = 0; k < K; k++)
        if (!(run->island_comm[k] = coll_comm_create_group(&sub, run->comm, k * S)))
            return bw_fail(err, BW_ERUNTIME, "out of memory for island %d's ring", k);
    if (run->cfg->price_workers > run->P) { /* --price-workers N: islands of N / K GPUs */
        Cluster priced = sub;
        priced.workers = run->cfg->price_workers / K;
        for (int k = 0; k < K; k++) coll_comm_set_price(run->island_comm[k], &priced);
    }
    return BW_OK;
}

void islands_free(DriverRun *run)
{
    free(run->island_step);
    run->island_step = NULL;
    if (!run->island_comm) return;
    for (int k = 0; k < run->cluster.islands; k++) coll_comm_free(run->island_comm[k]);
    free(run->island_comm);
    run->island_comm = NULL;
}

/* A costed step's island mean, at no simulated time (islands_cost charges its ring): the
 * island's first worker at this step sums its members' gradients in rank order, scales by 1/S
 * and gives every member the mean (they all computed theirs before the rendezvous). */
static void island_mean_in_memory(DriverRun *run, int k)
{
    const int S = run->island_size;
    Worker *w = run->w + (size_t)k * S;
    const size_t n = w[0].model->n_params;
    const float inv = 1.0f / (float)S;
    for (size_t i = 0; i < n; i++) {
        float sum = 0;
        for (int j = 0; j < S; j++) sum += w[j].model->grads[i];
        for (int j = 0; j < S; j++) w[j].model->grads[i] = sum * inv;
    }
}

void islands_reduce(Worker *me, long step)
{
    DriverRun *run = me->run;
    if (!run->island_comm || run->cfg->replay) return;
    const int S = run->island_size, k = me->rank / S;
    if (!run->cost) {
        coll_allreduce_mean(run->island_comm[k], me->rank % S, me->model->grads,
                            me->model->n_params);
        return;
    }
    if (run->island_step[k] == step) return;
    run->island_step[k] = step;
    island_mean_in_memory(run, k);
}

int islands_bucketed(const DriverRun *run)
{
    const RunConfig *cfg = run->cfg;
    return run->periodic && !run->fast && run->cluster.topology == TOPO_ISLANDS &&
           (cfg->workload || cfg->overlap != OVERLAP_NONE);
}

Comm *islands_plan_comm(const Worker *me, PlanComm which, int *rank)
{
    const DriverRun *run = me->run;
    *rank = me->rank;
    if (which == PLAN_COMM_RUN) return run->comm;
    if (which == PLAN_COMM_ACROSS || (which == PLAN_COMM_NODE && run->node_comm))
        return shard_plan_comm(me, which, rank);                 /* hybrid sharding's */
    if (which == PLAN_COMM_NODE) return zpp_node_comm(me, rank); /* --zeropp (zeropp.c) */
    assert(run->island_comm && "the builder names an island only on islands in periodic mode");
    *rank = me->rank % run->island_size;
    return run->island_comm[me->rank / run->island_size];
}

double islands_cost(Worker *me, size_t n_params)
{
    DriverRun *run = me->run;
    if (!run->island_comm) return 0;
    const int S = run->island_size;
    const double t0 = simgrid_get_clock();
    coll_cost_allreduce(run->island_comm[me->rank / S], me->rank % S, n_params, 4);
    return simgrid_get_clock() - t0;
}
