/* coll.c: the collectives (see coll.h for the algorithms, sources and cost formulas): the
 * communicators, the allreduce's entry (the analytic backend here, the transfer level through
 * the algorithm's entry in the table, collectives.def: coll_ring.c, coll_halving_doubling.c,
 * coll_tree.c, coll_hierarchical.c, coll_ps.c), the allgathers and the broadcast.
 * The ring allreduce simulates every message with its size and no data, and its sum is done
 * once in memory, in the ring's own order of additions, by the first rank to finish
 * (coll_ring.c; coll_sum.c); the analytic backend's sum is done there too, in rank order.
 * The other algorithms' messages (coll_msg.c) are zero-copy: the sender puts a descriptor (Msg) on
 * the mailbox of the (receiver, sender) pair, with the data's size as the simulated size; the
 * descriptor points at the sender's own buffer, and the receiver adds or copies straight from
 * it, then marks it read. Until then the sender must not change those bytes: before a rank
 * writes into its buffer (protect) and before a collective returns to its caller (release),
 * every message of its own still unread is first copied into the descriptor's stage (grow-once)
 * and pointed there. Descriptors and stages live in the communicator and are reused call after
 * call: no allocation per message. Actors run one at a time, so none of this (nor the lazily
 * created mailbox table) needs a lock; the in-memory sums may use the communicator's pool,
 * whose threads only ever touch the buffers of the call that waits for them. */
#include "coll_impl.h"
#include "xalloc.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <simgrid/actor.h>
#include <simgrid/barrier.h>
#include <simgrid/comm.h>
#include <simgrid/engine.h>
#include <simgrid/mailbox.h>

/* Latency and inverse bandwidth of the routes an algorithm's transfers take, for the analytic
 * backend: on a star a route crosses two NIC links; on a fat-tree a cross-leaf route crosses
 * two uplinks too, whose share per flow is B / oversubscription when a whole leaf sends out at
 * once (the one-rate form of halving-doubling and the tree, which price their steps pair by
 * pair instead: coll_hier_steps.c) and B for a ring (one flow per uplink direction); on a
 * hierarchical cluster the inter-node figures are the route through the NIC(s) (and, with a NIC
 * shared by a node's GPUs, the intra links that reach it), and a cluster of one node has only
 * its intra-node routes. A ring's intra-node hops are the closed form's (coll_ring.c). br: b
 * for a ring (one flow a link each way), what every communicator's allgathers pay, rings all. */
static void derive_costs_as(Comm *c, const Cluster *cl, int spans);

/* Whether a ring over cl's workers in rank order crosses a switch: a fat-tree of several leaves,
 * a hierarchical cluster of several nodes (the ranks fill them in order). */
static int spans_switches(const Cluster *cl)
{
    if (cl->topology == TOPO_FAT_TREE) return cl->workers > cl->leaf_size;
    if (cl->topology == TOPO_HIERARCHICAL) return cl->workers > cl->gpus_per_node;
    return 0;
}

static void derive_costs(Comm *c, const Cluster *cl)
{
    derive_costs_as(c, cl, spans_switches(cl));
}

/* derive_costs, the routes across switches priced when spans (coll_comm_set_layout: a job's
 * GPUs as bellows cluster placed them, not in rank order) */
static void derive_costs_as(Comm *c, const Cluster *cl, int spans)
{
    double a = 2 * cl->latency_s, b = 1 / (cl->bandwidth_Bps * cluster_link_share(cl)), br = b;
    c->a_local_s = 2 * cl->intra_latency_s;
    c->b_local = 1 / (cl->intra_bandwidth_Bps * cluster_intra_link_share(cl));
    if (cl->topology == TOPO_HIERARCHICAL && !spans) {
        /* one node: every route stays on its intra-node links (NVLink or PCIe), as the
         * transfer level routes them; no NIC, so neither its rate nor its cap applies */
        c->a_s = c->a_local_s;
        c->b = c->b_ring = c->b_local;
        return;
    }
    if (cl->topology == TOPO_FAT_TREE && spans) {
        a = 4 * cl->latency_s;
        /* parameter servers: their allgathers are rings (their pushes and pulls are priced
         * link by link, coll_ps_net.c) */
        const double ring = cl->oversubscription / cl->leaf_size;
        double share = c->ops->single_flow || c->ops->servers ? ring : cl->oversubscription;
        if (c->ops->steps_by_pairs) {
            /* halving-doubling and the tree price their steps pair by pair (coll_hier_steps.c):
             * ranks fill the leaves in order (cluster.c fat_tree_xml), a pair in one leaf talks
             * over its two host links, a pair across over nic, up, up, nic, a leaf's uplink
             * each way shared by the flows that cross it at that step */
            c->hier_g = c->hier_q = cl->leaf_size;
            c->a_local_s = a / 2;
            c->b_local = b;
            const double up = cl->leaf_size * cl->bandwidth_Bps / cl->oversubscription;
            c->b_nic = 1 / (up * cluster_link_share(cl));
        }
        br *= ring > 1 ? ring : 1;
        b *= share > 1 ? share : 1;
    }
    if (cl->topology == TOPO_ISLANDS && cl->islands > 1) {
        /* between islands: two NIC links and two WAN links; a hierarchical allreduce's G rings
         * (one per GPU of an island) cross an island's WAN link at once */
        c->a_local_s = a;
        c->b_local = b;
        a += cl->wan_latency_s;
        double wan = (c->algo == COLL_HIERARCHICAL ? c->G : 1) / cl->wan_bandwidth_Bps;
        b = wan > b ? wan : b;
        br = 1 / cl->wan_bandwidth_Bps > br ? 1 / cl->wan_bandwidth_Bps : br;
    }
    if (cl->topology == TOPO_HIERARCHICAL && cluster_gpus_per_nic(cl) > 1) {
        a += 2 * cl->intra_latency_s;
        /* the GPUs behind a NIC share it when they all talk to other nodes at once */
        if (!c->ops->single_flow && !c->ops->servers) b *= cluster_gpus_per_nic(cl);
        /* and the route reaches the NIC over the sender's and the receiver's intra links
         * (cluster.c hierarchical_xml), one flow each: the slower of the two shares */
        if (c->b_local > b) b = c->b_local;
        if (c->b_local > br) br = c->b_local;
    }
    if (cl->topology == TOPO_HIERARCHICAL && cl->gpus_per_node > 1 && c->ops->steps_by_pairs) {
        /* several nodes: halving-doubling and the tree price their steps pair by pair
         * (coll_hier_steps.c), a NIC shared by the flows that cross it at a step */
        c->hier_q = cluster_gpus_per_nic(cl);
        c->b_nic = 1 / (cl->bandwidth_Bps * cluster_link_share(cl));
    }
    if (c->hier_q && !c->steps) /* NULL (out of memory): enumerated at each call instead */
        c->steps = bw_xcalloc(1, sizeof *c->steps, "coll.c: c->steps");
    c->a_s = a;
    c->b = b;
    c->b_ring = br;
}

/* The communicator's tables; with_engine: also the mailboxes and the barrier, which need the
 * SimGrid engine. */
static Comm *comm_new(const Cluster *cl, CollAlgo algo, CollBackend backend, int with_engine)
{
    Comm *c = bw_xcalloc(1, sizeof *c, "coll.c: c");
    if (!c) return NULL;
    c->P = c->price_P = cl->workers;
    c->G = cl->gpus_per_node;
    c->algo = algo;
    c->ops = coll_algo_ops(algo);
    c->group = coll_algo_group(algo, cl);
    c->backend = backend;
    if (with_engine) {
        c->mb = bw_xcalloc((size_t)c->P * c->P, sizeof *c->mb, "coll.c: c->mb");
        c->rs = bw_xcalloc((size_t)c->P, sizeof *c->rs, "coll.c: c->rs");
    }
    c->stats = bw_xcalloc((size_t)c->P, sizeof *c->stats, "coll.c: c->stats");
    c->bufs = bw_xcalloc((size_t)c->P, sizeof *c->bufs, "coll.c: c->bufs");
    c->outs = bw_xcalloc((size_t)c->P, sizeof *c->outs, "coll.c: c->outs");
    c->sizes = bw_xcalloc((size_t)c->P, sizeof *c->sizes, "coll.c: c->sizes");
    c->ranks = bw_xmalloc(sizeof *c->ranks * (size_t)c->P, "coll.c: c->ranks");
    c->peers = bw_xmalloc(sizeof *c->peers * (size_t)c->P, "coll.c: c->peers");
    if ((with_engine && (!c->mb || !c->rs)) || !c->stats || !c->bufs || !c->outs || !c->sizes ||
        !c->ranks || !c->peers || (c->ops->servers && !coll_ps_init(c, cl))) {
        coll_comm_free(c);
        return NULL;
    }
    const int nodes = c->P / c->G;
    for (int r = 0; r < c->P; r++) {
        c->ranks[r] = r;
        c->peers[(r % c->G) * nodes + r / c->G] = r;
    }
    if (with_engine) c->bar = sg_barrier_init((unsigned)c->P);
    derive_costs(c, cl);
    return c;
}

Comm *coll_comm_create(const Cluster *cl, CollAlgo algo, CollBackend backend)
{
    return comm_new(cl, algo, backend, 1);
}

Comm *coll_comm_create_zero_time(const Cluster *cl, CollAlgo algo)
{
    Comm *c = comm_new(cl, algo, COLL_ANALYTIC, 1);
    if (c) c->zero_time = 1;
    return c;
}

Comm *coll_comm_create_offline(const Cluster *cl, CollAlgo algo)
{
    return comm_new(cl, algo, COLL_ANALYTIC, 0);
}

Comm *coll_comm_create_sibling(const Cluster *cl, Comm *parent)
{
    Comm *c = comm_new(cl, parent->algo, parent->backend, 1);
    if (!c) return NULL;
    free(c->stats);
    c->stats = parent->stats;
    c->shares_stats = 1;
    c->curve[0] = parent->curve[0];
    c->curve[1] = parent->curve[1];
    c->tag = parent->tag; /* a job's, in one engine of several (coll_comm_set_tag) */
    c->wire = parent->wire;
    c->wire_arg = parent->wire_arg;
    return c;
}

void coll_comm_free(Comm *c)
{
    if (!c) return;
    if (c->bar) sg_barrier_destroy(c->bar);
    for (int r = 0; c->rs && r < c->P; r++) {
        RankState *rs = &c->rs[r];
        for (int i = 0; i < rs->n_msgs; i++) {
            free(rs->msgs[i]->stage);
            free(rs->msgs[i]);
        }
        free(rs->msgs);
        free(rs->gather);
        free(rs->goff);
    }
    free(c->rs);
    free(c->mb);
    if (!c->shares_stats) free(c->stats);
    coll_ps_free(c);
    free(c->bufs);
    free(c->outs);
    free(c->sizes);
    free(c->ranks);
    free(c->peers);
    free(c->steps);
    coll_log_free(c);
    free(c);
}

const CollStats *coll_stats(const Comm *c, int rank)
{
    return &c->stats[rank];
}
/* An analytic call's wait: its closed form's time t, and with a fabric (coll_comm_set_fabric)
 * the delay rank 0's flows of flow_bytes met on the shared links, every rank waiting for it. */
static void analytic_wait(Comm *c, int rank, double t, double flow_bytes)
{
    if (c->zero_time) return;
    if (!c->fabric) {
        sg_actor_sleep_for(t);
        return;
    }
    if (rank == 0) { /* the flows run during the closed form's time, not after it */
        const double t0 = simgrid_get_clock(), delay = c->fabric(c->fabric_arg, flow_bytes);
        const double left = t + delay - (simgrid_get_clock() - t0);
        if (left > 0) sg_actor_sleep_for(left);
    }
    sg_barrier_wait(c->bar);
}

/* The analytic backend: the sum in memory (in rank order, or a mirror's in the ring's) into
 * out, by the last rank to enter (every buffer is registered by then, and the others wait in the
 * barrier, so none returns before the sum is written), then every rank waits the formula's time
 * (none on a zero-time communicator). buf NULL: a dataless call, only the waiting and the books. */
static void analytic_allreduce(Comm *c, int rank, const unsigned char *buf, unsigned char *out,
                               size_t n, Dtype dt, int mean)
{
    const size_t es = dt_size(dt);
    c->bufs[rank] = buf;
    c->outs[rank] = out;
    if (buf && ++c->entered == c->P) {
        c->entered = 0;
        coll_sum_into_all(c, n, dt, mean, c->ring_order);
    }
    sg_barrier_wait(c->bar);
    double bytes = (double)n * (double)es;
    const double f = coll_curve_factor(c, 0, bytes);
    size_t per;
    long k;
    if (c->ps_partition > 0 || coll_ps_split(c, n, es, &per, &k)) { /* partitions in flight */
        const double t = coll_ps_inflight_call(c, rank, n, es, f);
        if (!c->zero_time) sg_actor_sleep_for(t);
        return;
    }
    c->stats[rank].bytes_sent += coll_allreduce_bytes(c, rank, bytes);
    if (c->ops->servers) c->ps_calls[rank]++; /* the round robin's next server */
    const double wire = f != 1 ? bytes * f : bytes, t0 = simgrid_get_clock();
    analytic_wait(c, rank, coll_allreduce_time_s(c, wire), coll_allreduce_bytes(c, 0, wire));
    if (c->wire_stride > 0 && c->wire && c->algo == COLL_HIERARCHICAL) { /* set_wire_inter */
        const int m = c->price_P / c->G;
        const double inter = 2.0 * (m - 1) / m * bytes / c->G * c->price_P / c->P;
        c->wire(c->wire_arg, rank, (rank + c->wire_stride) % c->P, inter, t0, simgrid_get_clock());
    } else if (c->wire_stride > 0 && c->wire && c->algo == COLL_RING) { /* a flat ring */
        c->wire(c->wire_arg, rank, (rank + 1) % c->P, coll_allreduce_bytes(c, rank, bytes), t0,
                simgrid_get_clock()); /* each rank's sends all go to the next */
    }
}

/* An allreduce of buf into out: out is buf, or (coll_allreduce_mean_into, on a communicator that
 * sums once) any buffer. mean (f32 only): out becomes (sum + 0.0f) / P, which the sums in memory
 * compute as they sum, once for all ranks, and the other transfer-level algorithms after the sum,
 * each rank for itself. */
static void allreduce(Comm *c, int rank, const unsigned char *buf, unsigned char *out, size_t count,
                      Dtype dt, int mean)
{
    if (c->log) coll_log_call(c, rank, CALL_ALLREDUCE, dt, 0, count, NULL);
    double t0 = simgrid_get_clock();
    int divided = 0;
    assert(out == buf || coll_sums_once(c));
    if (c->rs && c->curve[0].n > 0)
        c->rs[rank].factor = coll_curve_factor(c, 0, (double)count * (double)dt_size(dt));
    if (c->P > 1) {
        if (c->backend == COLL_ANALYTIC) {
            analytic_allreduce(c, rank, buf, out, count, dt, mean);
            divided = 1;
        } else {
            divided = c->ops->allreduce(c, rank, buf, out, count, dt, mean);
        }
        if (c->backend == COLL_TRANSFER) coll_release(c, rank);
    }
    if (c->rs) c->rs[rank].factor = 0;
    if (mean && !divided) {
        const float *f = (const float *)(const void *)buf;
        float *o = (float *)(void *)out;
        const float w = (float)c->P;
        for (size_t i = 0; i < count; i++) o[i] = (f[i] + 0.0f) / w;
    } else if (c->P <= 1 && out != buf) {
        memcpy(out, buf, count * dt_size(dt));
    }
    c->stats[rank].payload_bytes += (double)count * (double)dt_size(dt);
    c->stats[rank].time_s += simgrid_get_clock() - t0;
    c->stats[rank].calls++;
}

void coll_allreduce_dt(Comm *c, int rank, unsigned char *buf, size_t count, Dtype dt, int mean)
{
    allreduce(c, rank, buf, buf, count, dt, mean);
}

int coll_zero_time(const Comm *c)
{
    return c->zero_time;
}

int coll_sums_once(const Comm *c)
{
    return c->backend == COLL_ANALYTIC || c->ops->sums != COLL_SUMS_ARRIVING;
}

void coll_allreduce_mean_into(Comm *c, int rank, const float *buf, float *out, size_t count)
{
    allreduce(c, rank, (const unsigned char *)buf, (unsigned char *)out, count, DT_F32, 1);
}

void coll_allreduce_into(Comm *c, int rank, const float *buf, float *out, size_t count)
{
    allreduce(c, rank, (const unsigned char *)buf, (unsigned char *)out, count, DT_F32, 0);
}

void coll_comm_set_pool(Comm *c, Pool *pool)
{
    c->pool = pool;
}

void coll_allreduce(Comm *c, int rank, float *buf, size_t count)
{
    coll_allreduce_dt(c, rank, (unsigned char *)buf, count, DT_F32, 0);
}

void coll_allreduce_mean(Comm *c, int rank, float *buf, size_t count)
{
    coll_allreduce_dt(c, rank, (unsigned char *)buf, count, DT_F32, 1);
}

void coll_allreduce_f16(Comm *c, int rank, uint16_t *buf, size_t count)
{
    coll_allreduce_dt(c, rank, (unsigned char *)buf, count, DT_F16, 0);
}

void coll_cost_allreduce(Comm *c, int rank, size_t count, size_t elem_bytes)
{
    coll_allreduce_dt(c, rank, NULL, count, elem_bytes == 2 ? DT_F16 : DT_F32, 0);
}

void coll_cost_allgather(Comm *c, int rank, size_t bytes)
{
    coll_cost_allgather_sizes(c, rank, bytes, NULL);
}

void coll_comm_set_allgather_factor(Comm *c, double factor)
{
    assert(factor > 0 && isfinite(factor));
    c->allgather_factor = factor;
}

void coll_comm_set_wire(Comm *c, CollWireFn fn, void *arg)
{
    c->wire = fn;
    c->wire_arg = arg;
}

void coll_comm_set_price(Comm *c, const Cluster *priced)
{
    assert(c->backend == COLL_ANALYTIC && c->algo != COLL_PS && priced->workers >= c->P);
    c->price_P = priced->workers;
    /* islands priced at N: K islands of N / K GPUs (elsewhere the same nodes, the same g) */
    c->G = priced->gpus_per_node;
    c->group = coll_algo_group(c->algo, priced);
    derive_costs(c, priced);
}

void coll_comm_set_layout(Comm *c, const Cluster *priced, int layout)
{
    assert(c->backend == COLL_ANALYTIC && c->algo == COLL_RING);
    const int across = (layout & COLL_LAYOUT_ACROSS) != 0, inside = (layout & COLL_LAYOUT_INSIDE);
    if (across != spans_switches(priced)) derive_costs_as(c, priced, across);
    /* no hop under one switch: the ring's steps are its hops across, every one (coll_ring.c
     * coll_ring_hops_s with g = 1), its allgathers' too */
    if (!inside) c->group = c->G = 1;
}

void coll_comm_set_fabric(Comm *c, CollFabricFn fn, void *arg)
{
    assert(c->backend == COLL_ANALYTIC && c->bar);
    c->fabric = fn;
    c->fabric_arg = arg;
}

void coll_comm_set_wire_inter(Comm *c, CollWireFn fn, void *arg, int stride)
{
    coll_comm_set_wire(c, fn, arg);
    c->wire_stride = stride;
}

void coll_comm_set_tag(Comm *c, int tag)
{
    assert(tag >= 0 && !c->mb_named);
    c->tag = tag;
}

/* Bytes on the wire of a dataless allgather's block of `bytes` (coll_comm_set_allgather_factor). */
static size_t wire_bytes(const Comm *c, size_t bytes)
{
    return c->allgather_factor > 0 && c->allgather_factor != 1
               ? (size_t)llround((double)bytes * c->allgather_factor)
               : bytes;
}

void coll_cost_allgather_sizes(Comm *c, int rank, size_t bytes, const size_t *sizes)
{
    double t0 = simgrid_get_clock();
    const int P = c->P;
    if (P > 1 && c->backend == COLL_ANALYTIC) {
        c->sizes[rank] = bytes;
        sg_barrier_wait(c->bar);
        double total = 0;
        for (int r = 0; r < P; r++) total += (double)c->sizes[r];
        total = coll_priced_total(c, total);
        sg_barrier_wait(c->bar); /* every rank has read the sizes before any call reuses them */
        c->stats[rank].bytes_sent += total - (double)bytes;
        const double f = coll_curve_factor(c, 1, total);
        if (c->allgather_factor > 0) total *= c->allgather_factor;
        if (f != 1) total *= f;
        analytic_wait(c, rank, coll_allgather_time_s(c, total),
                      (double)(c->price_P - 1) / c->price_P * total);
    } else if (P > 1) {   /* the ring of coll_allgather: at step s, block rank - s goes on */
        double extra = 0; /* booked by sendrecv beyond the true bytes */
        if (c->curve[1].n > 0) {
            double total = 0;
            for (int r = 0; r < P; r++) total += sizes ? (double)sizes[r] : (double)bytes;
            c->rs[rank].factor = coll_curve_factor(c, 1, total);
        }
        for (int s = 0; s < P - 1; s++) {
            const size_t out = sizes ? sizes[coll_mod(rank - s, P)] : bytes,
                         wire = wire_bytes(c, out);
            coll_msg_done(
                coll_sendrecv(c, rank, (rank + 1) % P, NULL, wire, coll_mod(rank - 1, P)));
            extra += (double)wire - (double)out;
        }
        c->stats[rank].bytes_sent -= extra;
        c->rs[rank].factor = 0;
    }
    c->stats[rank].payload_bytes += (double)bytes;
    c->stats[rank].time_s += simgrid_get_clock() - t0;
    c->stats[rank].calls++;
}

/* The analytic allgather: every rank copies the others' blocks straight from their buffers
 * into its result, then waits the formula's time. */
static unsigned char *analytic_allgather(Comm *c, int rank, const void *send, size_t bytes,
                                         size_t *sizes)
{
    const int P = c->P;
    c->bufs[rank] = send;
    c->sizes[rank] = bytes;
    sg_barrier_wait(c->bar);
    double total = 0;
    size_t all_bytes = 0;
    for (int r = 0; r < P; r++) {
        total += (double)c->sizes[r];
        all_bytes += c->sizes[r];
    }
    unsigned char *all = bw_xmalloc(all_bytes, "coll: an allgather's result"), *p = all;
    for (int r = 0; r < P; r++) {
        sizes[r] = c->sizes[r];
        if (sizes[r]) memcpy(p, c->bufs[r], sizes[r]);
        p += sizes[r];
    }
    sg_barrier_wait(c->bar); /* every rank has read the others' buffers */
    total = coll_priced_total(c, total);
    c->stats[rank].bytes_sent += total - (double)bytes;
    const double f = coll_curve_factor(c, 1, total), wire = f != 1 ? total * f : total;
    analytic_wait(c, rank, coll_allgather_time_s(c, wire),
                  (double)(c->price_P - 1) / c->price_P * wire);
    return all;
}

/* Room for `more` bytes after the `used` of rank me's gather buffer (grow-once; its unread
 * messages from the old one are staged first). */
static unsigned char *gather_room(Comm *c, int me, size_t used, size_t more)
{
    RankState *rs = &c->rs[me];
    if (used + more > rs->gather_cap || !rs->gather) {
        coll_release(c, me);
        size_t cap = 2 * rs->gather_cap > used + more ? 2 * rs->gather_cap : used + more + 1;
        unsigned char *g = bw_xrealloc(rs->gather, cap, "coll: an allgather's buffer");
        rs->gather = g;
        rs->gather_cap = cap;
    }
    return rs->gather + used;
}

/* The ring allgather: at step s rank i passes on block i - s (its own, then the one it last
 * received, read by the receiver from where it lies) and receives block i - s - 1. */
static unsigned char *ring_allgather_blocks(Comm *c, int rank, const void *send, size_t bytes,
                                            size_t *sizes)
{
    const int P = c->P;
    RankState *rs = &c->rs[rank];
    if (!rs->goff) {
        rs->goff = bw_xrealloc_n(NULL, (size_t)P, sizeof *rs->goff, "coll: an allgather");
    }
    size_t used = 0;
    const unsigned char *out = send;
    size_t out_bytes = bytes;
    sizes[rank] = bytes;
    for (int s = 0; s < P - 1; s++) {
        Msg *m = coll_sendrecv(c, rank, (rank + 1) % P, out, out_bytes, coll_mod(rank - 1, P));
        const int r = coll_mod(rank - s - 1, P);
        unsigned char *dst = gather_room(c, rank, used, m->bytes);
        rs->goff[r] = used;
        sizes[r] = m->bytes;
        coll_copy_from(c, rank, dst, m);
        out = dst;
        out_bytes = sizes[r];
        used += sizes[r];
    }
    unsigned char *all = bw_xmalloc(used + bytes, "coll: an allgather's result"), *p = all;
    for (int r = 0; r < P; r++) {
        const unsigned char *src = r == rank ? send : rs->gather + rs->goff[r];
        if (sizes[r]) memcpy(p, src, sizes[r]);
        p += sizes[r];
    }
    coll_release(c, rank);
    return all;
}

unsigned char *coll_allgather(Comm *c, int rank, const void *send, size_t bytes, size_t *sizes)
{
    double t0 = simgrid_get_clock();
    unsigned char *all;
    if (c->P > 1 && c->backend == COLL_ANALYTIC)
        all = analytic_allgather(c, rank, send, bytes, sizes);
    else {
        if (c->curve[1].n > 0) /* the total is known only at the end: this rank's block P times */
            c->rs[rank].factor = coll_curve_factor(c, 1, (double)bytes * c->P);
        all = ring_allgather_blocks(c, rank, send, bytes, sizes);
        c->rs[rank].factor = 0;
    }
    if (c->log) coll_log_call(c, rank, CALL_ALLGATHER, DT_F32, 0, bytes, sizes);
    c->stats[rank].payload_bytes += (double)bytes;
    c->stats[rank].time_s += simgrid_get_clock() - t0;
    c->stats[rank].calls++;
    return all;
}

void coll_broadcast(Comm *c, int rank, int root, void *buf, size_t bytes)
{
    if (c->log) coll_log_call(c, rank, CALL_BROADCAST, DT_F32, root, bytes, NULL);
    double t0 = simgrid_get_clock();
    if (c->P > 1) {
        if (c->backend == COLL_ANALYTIC) {
            if (rank == root) c->bufs[0] = buf;
            sg_barrier_wait(c->bar);
            if (rank != root && buf) memcpy(buf, c->bufs[0], bytes);
            sg_barrier_wait(c->bar);
            if (rank == root) c->stats[rank].bytes_sent += (double)bytes;
            if (!c->zero_time)
                sg_actor_sleep_for(coll_ceil_log2(c->P) * (c->a_s + (double)bytes * c->b));
        } else {
            coll_tree_broadcast(c, rank, root, buf, bytes);
            coll_release(c, rank);
        }
    }
    c->stats[rank].payload_bytes += (double)bytes;
    c->stats[rank].time_s += simgrid_get_clock() - t0;
    c->stats[rank].calls++;
}
