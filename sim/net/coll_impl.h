/* coll_impl.h: what the collectives' files share (coll.c: the communicators and the calls;
 * coll_msg.c: the messages; coll_algos.c and one file per algorithm: the table of
 * collectives.def; coll_sum.c: the sums done in memory); nothing else includes it but the
 * tests' (tests/coll_toy.c: an algorithm added by a test). */
#ifndef BELLOWS_COLL_IMPL_H
#define BELLOWS_COLL_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include <simgrid/forward.h>

#include "coll.h"
#include "half.h"
#include "pool.h"

typedef struct {
    const unsigned char *data; /* the sender's buffer, or stage once staged; NULL: sizes only */
    size_t bytes;
    int unread; /* put on the wire and not yet read by the receiver */
    unsigned char *stage;
    size_t stage_cap;
} Msg;

/* One rank's reusable state for the transfer-level collectives. */
typedef struct {
    Msg **msgs; /* [n_msgs], each allocated once (the receivers hold pointers to them) */
    int n_msgs;
    unsigned char *gather; /* coll_allgather: the blocks received, in arrival order */
    size_t gather_cap;
    size_t *goff;    /* [P]: where each rank's block starts in gather */
    long ring_calls; /* ring allreduces with data this rank has entered */
    double factor;   /* > 0: the current call's messages take this many times their bytes on
                        the wire (coll_comm_set_share_curves); 0: their bytes */
} RankState;

/* The element types an allreduce sums: fp32, or IEEE binary16 (halves on the wire; each
 * addition converts to float, adds and rounds back to half, as a GPU's half-precision sum does:
 * the float sum of two halves is exact enough that rounding it to half equals the correctly
 * rounded half sum). */
typedef enum { DT_F32, DT_F16 } Dtype;

static inline size_t dt_size(Dtype dt)
{
    return dt == DT_F32 ? sizeof(float) : sizeof(uint16_t);
}

static inline void dt_add(Dtype dt, void *restrict dst, const void *restrict src, size_t n)
{
    if (dt == DT_F32) {
        float *restrict d = dst;
        const float *restrict s = src;
        for (size_t i = 0; i < n; i++) d[i] += s[i];
    } else {
        uint16_t *d = dst;
        const uint16_t *s = src;
        for (size_t i = 0; i < n; i++)
            d[i] = half_from_float(half_to_float(d[i]) + half_to_float(s[i]));
    }
}

/* One in-memory sum: coll_sum_into_all's arguments. */
typedef struct {
    Comm *c;
    size_t n;
    Dtype dt;
    int mean; /* f32 only: each sum s becomes (s + 0.0f) / P */
    int ring; /* ring order, else rank order */
} SumJob;

/* ---- the algorithms' table (collectives.def) ---- */

/* coll_hier_steps.c: an irregular layout's steps, in order, enumerated once for the p, g, q they
 * hold (p 0: none yet): whether a pair of step i stays inside a node, and the most flows a NIC
 * carries at it. A communicator keeps one (Comm.steps), so that pricing a call costs O(log p). */
#define COLL_STEPS_MAX 64 /* the tree's 2 ceil(log2 p) steps, halving-doubling's log2 p + 2 */
typedef struct {
    int p, g, q, tree;
    int n;
    unsigned char intra[COLL_STEPS_MAX];
    int most[COLL_STEPS_MAX];
} CollStepTable;

/* What the closed forms read: p ranks, the algorithm's group g (coll_algo_group), a route's
 * latency a (seconds) and seconds per byte b, and the intra-node pair for per-node ones; on a
 * hierarchical cluster of several nodes, q > 0 GPUs behind a NIC and b_nic, the seconds per byte
 * of one flow through it (the halving-doubling and tree closed forms price each step's pairs
 * with them: coll_hier_steps.c); on a fat-tree of several leaves, g = q a leaf's GPUs, b_nic its
 * uplink's and a_local, b_local a route inside a leaf; q 0: neither (the one-rate forms);
 * steps, where the steps of an irregular layout are kept (NULL: enumerated at each call). */
typedef struct {
    int p, g;
    double a, b, a_local, b_local;
    int q;
    double b_nic;
    CollStepTable *steps;
} CollShape;

/* coll_hier_steps.c: whether s prices its steps pair by pair (q > 0, nodes or leaves of g > 1
 * GPUs, more than one), and then the halving-doubling's and the tree's seconds for n bytes. */
int coll_hier_steps_apply(const CollShape *s);
double coll_hier_hd_s(const CollShape *s, double n);
double coll_hier_tree_s(const CollShape *s, double n);

/* A ring's `steps` steps moving `bytes` over each hop in all: at its slowest hop's pace, across
 * nodes or inside one (coll_ring.c); the ring allgather's closed form takes it too
 * (coll_analytic.c). */
double coll_ring_hops_s(const CollShape *s, double steps, double bytes);

/* How a transfer-level allreduce sums (coll.h: sums_once; coll_sum.c: the orders). */
typedef enum {
    COLL_SUMS_ARRIVING, /* its messages carry the data, added as they arrive */
    COLL_SUMS_RING,     /* once in memory, in a ring allreduce's order of additions */
    COLL_SUMS_RANK      /* once in memory, in rank order (a parameter server's) */
} CollSums;

/* One algorithm: its file coll_FILE.c defines `const CollAlgoOps coll_FILE_ops`, and its line
 * in collectives.def puts it in the table. coll.h says what the flags decide above the net. */
typedef struct CollAlgoOps {
    /* The transfer level: rank's part of an allreduce of n elements of dt from buf into out
     * (out is buf unless sums is not COLL_SUMS_ARRIVING; buf NULL: dataless, sizes only; P > 1),
     * with coll_sendrecv and its helpers below. mean (f32): whether out may become the mean
     * (sum + 0.0f) / P; returns 1 when it did, 0 to leave the division to the caller. */
    int (*allreduce)(Comm *c, int rank, const unsigned char *buf, unsigned char *out, size_t n,
                     Dtype dt, int mean);
    /* The analytic level: the closed form (shared/REFERENCES.md) of an allreduce of n bytes
     * (s->p > 1), which the transfer level takes on a contention-free platform
     * (tests/test_coll_time.c), and the bytes rank sends in it. */
    double (*time_s)(const CollShape *s, double n);
    double (*bytes)(const Comm *c, int rank, double n);
    /* Point-to-point messages of one transfer-level allreduce among cl's workers. */
    double (*messages)(const Cluster *cl);
    /* coll.h's group; NULL: cl's GPUs a node. */
    int (*group)(const Cluster *cl);
    CollSums sums;
    /* 1: each rank talks to one peer at a time on the links it shares (a ring): a fat-tree's
     * uplink carries one flow a direction, and the GPUs behind one NIC do not share it; 0: a
     * leaf's GPUs (a NIC's) cross at once, each at its share (coll.c derive_costs). */
    int single_flow;
    /* 1: its closed form prices a hierarchical cluster's or a fat-tree's steps pair by pair
     * (coll_hier_steps.c: CollShape.q, b_nic, steps), which derive_costs then sets up */
    int steps_by_pairs;
    int per_node; /* coll.h */
    int servers;  /* coll.h; the communicator gets coll_ps.c's tables (coll_ps_init) */
} CollAlgoOps;

/* The table's entry of algorithm a (coll_algos.c). */
const CollAlgoOps *coll_algo_ops(CollAlgo a);

/* ---- the messages (coll_msg.c), for the algorithms' transfer levels ---- */

/* Sends send[0..bytes) to rank `to` (if to >= 0) while receiving from rank `from` (if
 * from >= 0); returns the received message, which the caller reads (coll_add_into,
 * coll_copy_from) or hands to coll_msg_done before its next sendrecv. send NULL: a message of
 * that size with no data (sizes only). The sender must not change send's bytes until the
 * collective returns (coll.c's header: zero-copy). */
Msg *coll_sendrecv(Comm *c, int me, int to, const void *send, size_t bytes, int from);
/* The receiver has read m's bytes (NULL: nothing was received). */
void coll_msg_done(Msg *m);
/* Rank me adds the received message into dst (element by element, in order; NULL: a dataless
 * call), or copies it there, and releases it. */
void coll_add_into(Comm *c, int me, Dtype dt, unsigned char *dst, Msg *m);
void coll_copy_from(Comm *c, int me, unsigned char *dst, Msg *m);
/* Before a collective returns: none of rank me's unread messages may point into the caller's
 * buffers any more. */
void coll_release(Comm *c, int me);
/* Ring reduce-scatter of buf[lo, hi) (elements of dt) over the ranks g[0..gn), this rank
 * being g[i]; afterwards g[i] holds the sum of chunk (i + 1) mod gn. Then the matching
 * allgather: g[i] starts with chunk (i + 1) mod gn and ends with all. */
void coll_ring_reduce_scatter(Comm *c, const int *g, int gn, int i, unsigned char *buf, size_t lo,
                              size_t hi, Dtype dt);
void coll_ring_allgather(Comm *c, const int *g, int gn, int i, unsigned char *buf, size_t lo,
                         size_t hi, Dtype dt);
/* Binomial-tree broadcast of root's buf [bytes] (NULL: dataless). */
void coll_tree_broadcast(Comm *c, int rank, int root, void *buf, size_t bytes);

static inline int coll_mod(int a, int n)
{
    return ((a % n) + n) % n;
}

/* Chunk j of gn equal parts of [lo, hi). */
static inline void coll_chunk(size_t lo, size_t hi, int gn, int j, size_t *a, size_t *b)
{
    size_t len = hi - lo;
    *a = lo + len * (size_t)j / (size_t)gn;
    *b = lo + len * (size_t)(j + 1) / (size_t)gn;
}

/* buf + off, or NULL for a dataless call (coll_cost_*: sizes only; NULL + off is undefined) */
static inline unsigned char *coll_at(unsigned char *buf, size_t off)
{
    return buf ? buf + off : NULL;
}

/* A mirror's log (coll_mirror.c): the calls one rank made since its last replay. */
typedef enum { CALL_ALLREDUCE, CALL_ALLGATHER, CALL_BROADCAST } CallKind;
typedef struct {
    CallKind kind;
    Dtype dt;        /* allreduce */
    int root;        /* broadcast */
    size_t count;    /* allreduce: elements; allgather: this rank's bytes; broadcast: bytes */
    size_t sizes_at; /* allgather: every rank's bytes are sizes[sizes_at .. + P) */
} CollCall;

typedef struct {
    CollCall *calls;
    int n, cap;
    size_t *sizes;
    size_t n_sizes, cap_sizes;
} CallLog;

/* What a ps communicator's closed form needs of its cluster's links (coll_ps_net.c): the
 * topology, a leaf's GPUs (fat-tree), a node's GPUs and those behind one NIC (hierarchical), the
 * links' rates (bytes/s, at their share) and latencies. */
typedef struct {
    Topology topo;
    int leaf, G, q;
    double nic_Bps, up_Bps, nvl_Bps, lat_s, intra_lat_s;
} PsNet;

struct Comm {
    int P, G;
    int price_P; /* the GPUs the closed forms price (coll_comm_set_price); P when not priced */
    CollAlgo algo;
    const CollAlgoOps *ops; /* algo's entry in the table */
    int group;              /* coll_algo_group: the closed form's g */
    CollBackend backend;
    sg_mailbox_t *mb; /* [P * P]: mb[dst * P + src] */
    RankState *rs;    /* [P], with the engine only */
    CollStats *stats; /* [P] */
    int *ranks;       /* [P]: 0..P-1, the ring of all ranks; node n's GPUs are ranks + n*G */
    int *peers;       /* [G * P/G]: peers[i * nodes + k] = k*G + i, GPU i of every node */
    /* analytic backend */
    sg_bar_t bar;
    const void **bufs;                 /* [P]: each rank's buffer during a call */
    void **outs;                       /* [P]: where each rank's sum goes (its buffer, or shared) */
    size_t *sizes;                     /* [P] */
    double a_s, b, a_local_s, b_local; /* route latency and seconds per byte */
    double b_ring;                     /* b of a ring's hops: the allgathers' (coll.c) */
    int hier_q;                        /* CollShape.q: 0, a NIC's GPUs, a leaf's (fat-tree) */
    int hier_g;                        /* CollShape.g: a fat-tree's leaf, else 0 (group) */
    double b_nic;                      /* CollShape.b_nic */
    CollStepTable *steps;              /* CollShape.steps: with hier_q, else NULL */
    int zero_time;                     /* coll_comm_create_zero_time */
    int ring_order;                    /* a mirror of a ring: its sums in the ring's order */
    CallLog *log;                      /* [P]: a mirror's calls (coll_comm_create_mirror) */
    Pool *pool;       /* NULL, or the threads that share the in-memory sums (coll_comm_set_pool) */
    long ring_summed; /* the last data ring allreduce whose sum is done (RankState.ring_calls) */
    int ring_entered; /* ranks that have entered the current data ring allreduce */
    int entered;      /* ranks that have entered the current data analytic allreduce */
    int ring_pending; /* ring_job is on the pool: the current call's sum, started early */
    double allgather_factor; /* a dataless allgather's messages take this many times their bytes
                                on the wire (coll_comm_set_allgather_factor); 0: as 1 */
    PoolJob ring_job;
    SumJob ring_sum;
    CollShareCurve curve[2]; /* allreduce, allgather (coll_comm_set_share_curves); n 0: none */
    int shares_stats;        /* a sibling (coll_comm_create_sibling): stats are its parent's */
    /* ps (coll_ps.c) */
    int ps_servers, ps_own; /* servers; 1: on hosts of their own */
    int ps_remote;          /* workers whose pushes cross the network: P - 1 or P */
    long *ps_calls;         /* [P]: allreduces each rank has entered (the round robin) */
    long ps_spawned;        /* own hosts: calls whose server actor has been started */
    double ps_partition;    /* analytic: > 0, a call's partitions (coll_comm_set_ps_partition) */
    sg_mailbox_t *ps_mb;    /* [ps_servers * P * 2]: (server, rank, push|pull) */
    int *ps_host;           /* [ps_servers]: the rank whose host a colocated server shares */
    PsNet ps_net;           /* the links its pushes and pulls load (coll_ps_net.c) */
    double *ps_scratch;     /* [3 P + servers]: a call's bytes a rank, leaf, node, server */
    long ps_summed;         /* transfer, data: the last partitioned call whose sum is done */
    int tag;                /* > 0: its mailboxes' names carry it (coll_comm_set_tag) */
    int mb_named;           /* a mailbox was looked up (the tag is fixed from then on) */
    CollWireFn wire;        /* sees every message (coll_comm_set_wire), or NULL */
    void *wire_arg;
    CollFabricFn fabric; /* a priced ring's flows on a shared fabric (coll_comm_set_fabric) */
    void *fabric_arg;
    int wire_stride; /* > 0: analytic, the between-nodes bytes to rank + stride (set_wire_inter) */
};

/* An analytic allgather's total bytes over the P ranks, as price_P ranks of the same blocks
 * would send them (identical workers); the total itself when not priced. */
static inline double coll_priced_total(const Comm *c, double total)
{
    return c->price_P != c->P ? total / c->P * c->price_P : total;
}

/* The sum over ranks of their buffers c->bufs[r] (n elements) into every rank's c->outs[r] (its
 * buffer, or one that several ranks share: stored once for a run of equal outs): analytic, in
 * rank order; ring, each element in the order a ring allreduce adds it (ring_allreduce_order in
 * coll_sum.c); mean (f32): (sum + 0.0f) / P. On the pool's threads when there is one (the same
 * bits: each element's additions are its own). */
void coll_sum_into_all(Comm *c, size_t n, Dtype dt, int mean, int ring);
/* coll.c's allreduce of count elements (buf NULL: dataless), for the mirror's replay. */
void coll_allreduce_dt(Comm *c, int rank, unsigned char *buf, size_t count, Dtype dt, int mean);
/* A dataless allgather to which rank r contributes sizes[r] bytes (sizes NULL: every rank
 * `bytes`). */
void coll_cost_allgather_sizes(Comm *c, int rank, size_t bytes, const size_t *sizes);
/* Logs a call on a mirror (coll_mirror.c); sizes [P] for an allgather, else NULL. */
void coll_log_call(Comm *c, int rank, CallKind kind, Dtype dt, int root, size_t count,
                   const size_t *sizes);
void coll_log_free(Comm *c);

/* coll_ps.c: the ps communicator's tables (with_engine: its mailboxes come lazily) and their
 * release; a transfer-level allreduce through server `server` (buf NULL: dataless; the sum in
 * rank order, once, by the server); the bytes rank sends in a call of n bytes through server. */
int coll_ps_init(Comm *c, const Cluster *cl);
void coll_ps_free(Comm *c);
void coll_ps_allreduce(Comm *c, int rank, int server, const unsigned char *buf, unsigned char *out,
                       size_t n, Dtype dt, int mean);
double coll_ps_bytes(const Comm *c, int rank, int server, double n);
/* coll_ps_parts.c: the mailbox of (server, rank): pushes into the server (pull 0) or pulls out. */
sg_mailbox_t coll_ps_mbox(Comm *c, int server, int rank, int pull);
/* coll_ps.c: on a ps communicator with a partition (coll_comm_set_ps_partition), the analytic
 * seconds of rank's call of count elements of es bytes, its partitions all in flight (the
 * closed form in coll_ps.c), the curve's factor f on the bytes; books rank's bytes and moves
 * its round robin past the call's partitions. */
double coll_ps_inflight_call(Comm *c, int rank, size_t count, size_t es, double f);
/* coll_ps_inflight.c: whether a call of count elements of es bytes on a ps communicator is
 * priced and sent partitioned over the servers (BytePS's partitions, COLL_PS_PARTITION_BYTES
 * unless coll_comm_set_ps_partition set another size): more than one partition, or a
 * topology other than the star (whose one-call form, 2 (a + r n b), holds only there); the
 * partition's elements (per) and the call's partitions (*k). */
int coll_ps_split(const Comm *c, size_t count, size_t es, size_t *per, long *k);
/* coll_ps_net.c: the cluster's figures and the servers' places (coll_ps_init; 0: out of
 * memory); the rank a colocated server s shares a
 * host with; the seconds of a push phase (its busiest link direction's bytes at its rate, and
 * the longest route's latency in *lat) when server s is sent served[s] bytes by every worker
 * whose push crosses a link, N bytes a worker in all. */
int coll_ps_net_init(Comm *c, const Cluster *cl);
int coll_ps_host(const Comm *c, int server);
double coll_ps_net_push_s(Comm *c, const double *served, double N, double *lat);
/* coll_ps_parts.c: a transfer-level call of n elements cut into k partitions of per elements
 * (the last the rest), partition j to server (first + j) % servers, all in flight at once. */
void coll_ps_allreduce_parts(Comm *c, int rank, const unsigned char *buf, unsigned char *out,
                             size_t n, Dtype dt, int mean, size_t per, long k);

/* coll_analytic.c: ceil(log2 p); the bytes one rank sends in an allreduce of n bytes, and the
 * seconds it lasts, as the analytic backend charges them; the seconds of a ring allgather of
 * `total` bytes summed over the ranks: (p-1) a + (p-1)/p total b. The transfer-level
 * collectives take these times on a contention-free platform (tests/test_coll_time.c). */
int coll_ceil_log2(int p);
double coll_allreduce_bytes(const Comm *c, int rank, double n);
double coll_allreduce_time_s(const Comm *c, double n);
double coll_allgather_time_s(const Comm *c, double total);
/* 1 / share(bytes) of the allreduce's (allgather 0) or the allgather's curve; 1 without one. */
double coll_curve_factor(const Comm *c, int allgather, double bytes);

/* The same for a SumJob (arg), all of it on one thread: a pool job (pool.h) that sums while the
 * ring's messages are simulated. */
void coll_sum_job(void *arg, int thread);

#endif
