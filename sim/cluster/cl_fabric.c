/* cl_fabric.c: a priced job's traffic on the shared fabric (a job of bellows cluster with
 * "price_workers" N: the small model trains on its P workers, its collectives are the closed
 * forms at N GPUs, coll_comm_set_price). The job holds N GPUs of the cluster; its ring over them
 * (GPU i sends to GPU i + 1, in the order it was placed) uses links no other job uses, the GPUs'
 * own, except where two neighbours sit on different switches (fat-tree leaves, hierarchical
 * nodes): those flows cross a leaf's uplink or a node's NIC, which other jobs may share. Each
 * such flow is simulated by SimGrid, as one transfer from the one GPU to the other of all the
 * bytes the ring sends in the call, while the collective waits its closed form's time; the call
 * takes that time plus the delay the others' traffic added to the slowest flow (its time less
 * its time alone: route latency plus bytes over the route's bandwidth). Alone, a priced job's
 * steps are the closed form's; shared, they slow down as their uplinks are shared. The model
 * and its limits are in sim/cluster/README.md. */
#include "cl_impl.h"
#include "xalloc.h"

#include <math.h>
#include <stdlib.h>

#include <simgrid/actor.h>
#include <simgrid/barrier.h>
#include <simgrid/engine.h>
#include <simgrid/host.h>
#include <simgrid/link.h>

#include "engine.h"

typedef struct ClFabric ClFabric;
typedef struct {
    ClFabric *fab;
    int i;
} ClFlow;

struct ClFabric {
    int n;                  /* flows: the ring's hops between switches */
    sg_host_t *src, *dst;   /* [n] */
    int *from, *to;         /* [n]: indices into the job's GPUs (links.csv) */
    double *lat_s, *bw_Bps; /* [n]: each route's latency and bandwidth, alone */
    ClFlow *flows;          /* [n]: each flow actor's data */
    sg_bar_t bar;           /* n + 1: the flows and the job's rank 0; created on first use */
    double bytes, t0_s;     /* the current call's */
    ClWireJob *wire;        /* the links' books, or NULL */
};

/* The switch GPU g hangs from, where other jobs' traffic can meet this job's; -1: none (a star:
 * every route is the two GPUs' own links). */
static int switch_of(const ClPlan *p, int g)
{
    const Cluster *c = &p->platform;
    if (c->topology == TOPO_FAT_TREE && c->workers > c->leaf_size) return g / c->leaf_size;
    if (c->topology == TOPO_HIERARCHICAL && c->workers > c->gpus_per_node)
        return g / c->gpus_per_node;
    return -1;
}

int cl_ring_layout(const ClPlan *p, const ClJob *job)
{
    int layout = 0;
    for (int i = 0; job->N > 1 && i < job->N; i++) {
        const int a = switch_of(p, job->gpus[i]), b = switch_of(p, job->gpus[(i + 1) % job->N]);
        if (a < 0) return 0; /* no switch (a star, one leaf or node): rank order's routes */
        layout |= a == b ? COLL_LAYOUT_INSIDE : COLL_LAYOUT_ACROSS;
    }
    return layout;
}

const char *cl_layout_name(int layout)
{
    return layout == COLL_LAYOUT_ACROSS   ? "across"
           : layout == COLL_LAYOUT_INSIDE ? "inside"
                                          : "across and inside";
}

ClFabric *cl_fabric_create(const ClPlan *p, const ClJob *job, ClWireJob *wire)
{
    ClFabric *f = bw_xcalloc(1, sizeof *f, "cl_fabric.c: f");
    const int N = job->N;
    f->src = bw_xcalloc((size_t)N, sizeof *f->src, "cl_fabric.c: f->src");
    f->dst = bw_xcalloc((size_t)N, sizeof *f->dst, "cl_fabric.c: f->dst");
    f->from = bw_xcalloc((size_t)N, sizeof *f->from, "cl_fabric.c: f->from");
    f->to = bw_xcalloc((size_t)N, sizeof *f->to, "cl_fabric.c: f->to");
    f->lat_s = bw_xcalloc((size_t)N, sizeof *f->lat_s, "cl_fabric.c: f->lat_s");
    f->bw_Bps = bw_xcalloc((size_t)N, sizeof *f->bw_Bps, "cl_fabric.c: f->bw_Bps");
    f->flows = bw_xcalloc((size_t)N, sizeof *f->flows, "cl_fabric.c: f->flows");
    f->wire = wire;
    for (int i = 0; N > 1 && i < N; i++) {
        const int a = job->gpus[i], b = job->gpus[(i + 1) % N];
        if (switch_of(p, a) == switch_of(p, b)) continue;
        const int k = f->n++;
        f->src[k] = engine_host(a);
        f->dst[k] = engine_host(b);
        f->from[k] = i;
        f->to[k] = (i + 1) % N;
        f->flows[k] = (ClFlow){f, k};
    }
    return f;
}

int cl_fabric_flows(const ClFabric *f)
{
    return f ? f->n : 0;
}

void cl_fabric_free(ClFabric *f)
{
    if (!f) return;
    if (f->bar) sg_barrier_destroy(f->bar);
    free(f->src);
    free(f->dst);
    free(f->from);
    free(f->to);
    free(f->lat_s);
    free(f->bw_Bps);
    free(f->flows);
    free(f);
}

/* One flow's actor: its bytes from its GPU to the next, then the barrier with rank 0. */
static void flow_main(int argc, char **argv)
{
    (void)argc, (void)argv;
    const ClFlow *fl = sg_actor_self_get_data();
    ClFabric *f = fl->fab;
    sg_host_sendto(f->src[fl->i], f->dst[fl->i], f->bytes);
    if (f->wire)
        cl_links_wire(f->wire, f->from[fl->i], f->to[fl->i], f->bytes, f->t0_s,
                      simgrid_get_clock());
    sg_barrier_wait(f->bar);
}

/* Each flow's route alone: its links' latencies added, the narrowest link's bandwidth. Once the
 * engine runs (SimGrid's routes are not known before). */
static void routes(ClFabric *f)
{
    xbt_dynar_t links = xbt_dynar_new(sizeof(sg_link_t), NULL);
    for (int k = 0; k < f->n; k++) {
        xbt_dynar_reset(links);
        sg_host_get_route(f->src[k], f->dst[k], links);
        unsigned at;
        sg_link_t l;
        f->bw_Bps[k] = INFINITY;
        xbt_dynar_foreach(links, at, l)
        {
            f->lat_s[k] += sg_link_get_latency(l);
            if (sg_link_get_bandwidth(l) < f->bw_Bps[k]) f->bw_Bps[k] = sg_link_get_bandwidth(l);
        }
    }
    xbt_dynar_free(&links);
}

double cl_fabric_call(void *arg, double flow_bytes)
{
    ClFabric *f = arg;
    if (f->n == 0 || flow_bytes <= 0) return 0;
    if (!f->bar) {
        f->bar = sg_barrier_init((unsigned)f->n + 1);
        routes(f);
    }
    f->bytes = flow_bytes;
    f->t0_s = simgrid_get_clock();
    double alone = 0;
    for (int k = 0; k < f->n; k++) {
        const double t = f->lat_s[k] + flow_bytes / f->bw_Bps[k];
        if (t > alone) alone = t;
        sg_actor_t a = sg_actor_init("fabric", f->src[k]);
        sg_actor_set_data(a, &f->flows[k]);
        sg_actor_start(a, flow_main, 0, NULL);
    }
    sg_barrier_wait(f->bar);
    const double delay = simgrid_get_clock() - f->t0_s - alone;
    return delay > 0 ? delay : 0;
}
