/* coll.h: collective operations between the worker actors of one simulation, whose results are
 * the real sums of the inputs: every message is simulated with its size; the ring allreduce (and
 * the analytic backend) then does its sum once in memory, in the order the ring's messages would
 * have added (coll_sum.c: the same bits), and the other algorithms' messages carry the real bytes
 * (read by the receiver straight from the sender's buffer, zero-copy; see coll.c). A buffer
 * handed to a collective is the caller's again, to change or free, as soon as the call returns.
 * Every function is called by every rank of the communicator, from inside its SimGrid actor,
 * with the same arguments but its own buffer.
 *
 * Algorithms (allreduce, sum):
 *   ring              reduce-scatter then allgather around a ring (Patarasuk and Yuan, JPDC 2009):
 *                     2(p-1) a + 2 (p-1)/p n b
 *   halving-doubling  Rabenseifner's recursive halving reduce-scatter and doubling allgather
 *                     (Thakur, Rabenseifner, Gropp, IJHPCA 2005); for p not a power of two the
 *                     first 2r ranks pair up first (r = p - 2^floor(log2 p)) and the results go
 *                     back at the end: 2 log2(p) a + 2 (p-1)/p n b for powers of two
 *   tree              binomial-tree reduce to rank 0, then binomial broadcast:
 *                     2 ceil(log2 p) (a + n b)
 *                     (both, on a hierarchical cluster of several nodes: step by step, each
 *                     step its slowest pair's a_l + x b_l inside a node or a + x max(f b_nic,
 *                     b_l) across, f the flows crossing a NIC at that step; on a fat-tree of
 *                     several leaves the same, a leaf for a node and its uplink for the NIC;
 *                     coll_hier_steps.c)
 *   hierarchical      ring reduce-scatter inside each node, ring allreduce of each GPU's share
 *                     between nodes, ring allgather inside each node:
 *                     2(g-1) a_l + 2 (g-1)/g n b_l + 2(m-1) a_g + 2 (m-1)/m (n/g) b_g
 *   ps                parameter servers (BytePS, Jiang et al., OSDI 2020; coll_ps.c): every call
 *                     pushes the n bytes of each worker to one server, chosen round-robin over
 *                     the calls, which sums them and sends the sum back to each worker; the r
 *                     workers whose pushes cross the network share the server's NIC, each way:
 *                     2 (a + r n b), r = p - 1 with servers on the workers' hosts (colocated),
 *                     r = p with servers on hosts of their own (on a star; a call over
 *                     COLL_PS_PARTITION_BYTES is cut over all servers, coll_ps_parts.c, and
 *                     on a fat-tree or hierarchical cluster a call is priced link by link,
 *                     coll_ps_net.c). Allgathers stay rings.
 * where a is the latency of a route and b its seconds per byte. The analytic backend does the
 * reduction in memory (in rank order) and makes every rank wait the formula's time instead. */
#ifndef BELLOWS_COLL_H
#define BELLOWS_COLL_H

#include <stddef.h>
#include <stdint.h>

#include "cluster.h"

/* The algorithms of collectives.def, in its order: COLL_RING, COLL_HALVING_DOUBLING, ... */
typedef enum {
#define COLL_ALGO(ID, file, name) COLL_##ID,
#include "collectives.def"
#undef COLL_ALGO
    COLL_N_ALGOS
} CollAlgo;
typedef enum { COLL_TRANSFER, COLL_ANALYTIC } CollBackend;

/* "ring" etc.; -1 if unknown. */
int coll_algo_parse(const char *name);
const char *coll_algo_name(CollAlgo a);

/* What an algorithm's entry in the table decides (collectives.def, coll_impl.h's CollAlgoOps),
 * for the layers above, which never name an algorithm:
 *   servers: it goes through parameter servers (--servers, --ps-hosts, coll_cost_ps; a
 *     schedule's partitions round-robin over them);
 *   per_node: it works in groups of a node's GPUs (needs --gpus-per-node 2 or more; its order
 *     of additions depends on the group);
 *   sums_once: at the transfer level its sum is done once in memory for every rank (a ring's
 *     order, or a server's rank order), so a mirror can take its data apart from its messages
 *     (coll_comm_create_mirror); otherwise its messages carry the data and add as they arrive;
 *   group: the g of coll_allreduce_formula_s on cluster c (GPUs a node; ps: the workers whose
 *     pushes cross the network);
 *   messages: point-to-point messages of one transfer-level allreduce among c's workers;
 *   sum_order: the order in which a run's allreduce adds, as summary.json names it: "rank"
 *     (the analytic backend, a server), else the algorithm's name ("hierarchical/G" for a
 *     per-node one, G GPUs a node). */
int coll_algo_servers(CollAlgo a);
int coll_algo_per_node(CollAlgo a);
int coll_algo_sums_once(CollAlgo a);
int coll_algo_group(CollAlgo a, const Cluster *c);
double coll_algo_messages(CollAlgo a, const Cluster *c);
void coll_algo_sum_order(CollAlgo a, CollBackend backend, int gpus_per_node, char *buf, size_t n);

typedef struct {
    double
        bytes_sent; /* payload bytes this rank put on the wire (analytic: as the algorithm would) */
    double time_s;  /* simulated seconds spent inside collectives */
    long calls;
    /* bytes this rank handed to the collectives: count * element size for an allreduce, the
     * bytes argument of an allgather or a broadcast (every rank, root or not); the size of the
     * message, independent of the algorithm (compressors report this) */
    double payload_bytes;
} CollStats;

typedef struct Comm Comm;

/* For the cluster's P ranks; call after the platform is loaded and before the actors run. */
Comm *coll_comm_create(const Cluster *c, CollAlgo algo, CollBackend backend);
void coll_comm_free(Comm *c); /* NULL is a no-op */

/* Lets the analytic backend's in-memory sums run on pool's threads (NULL: on the calling
 * actor's alone); the same bits either way. The pool must outlive the collectives' calls. */
typedef struct Pool Pool;
void coll_comm_set_pool(Comm *c, Pool *pool);

/* A communicator that only keeps the analytic backend's books, without SimGrid (no engine, no
 * actors): each coll_charge_* call stands for every rank making the same call at once and
 * returns the simulated seconds it lasts. For the fast trace replay (driver.c), where the
 * workers are identical; the collectives above must not be called on it. */
Comm *coll_comm_create_offline(const Cluster *c, CollAlgo algo);
/* An allreduce of count elements of elem_bytes each (4: fp32, 2: fp16): the same duration,
 * bytes_sent and payload_bytes as the analytic backend charges each rank. */
double coll_charge_allreduce(Comm *c, size_t count, size_t elem_bytes);
/* An allgather to which every rank contributes `bytes` bytes. */
double coll_charge_allgather(Comm *c, size_t bytes);
const CollStats *coll_stats(const Comm *c, int rank);

/* A communicator whose analytic collectives take no simulated time: the real reduction of a
 * run whose time and bytes are charged elsewhere (a workload profile's collectives, with
 * coll_cost_* on the run's communicator). Its books count calls but no time. */
Comm *coll_comm_create_zero_time(const Cluster *c, CollAlgo algo);

/* A run's collectives taken apart, data first and messages after: a mirror of sim is a
 * zero-time communicator whose collectives give the bits sim's would (its sums in the order of
 * sim's: a ring's when sim is a transfer-level ring, rank order when analytic) and log every
 * rank's calls; coll_replay then makes, on sim and without data, the calls one rank made on the
 * mirror since its last replay: the same messages, simulated times and books as if they had
 * been made on sim, provided every rank made its first call on the mirror since its last replay
 * at the same simulated instant (as after a barrier: a call on the mirror waits for every rank,
 * at no simulated time, where a call on sim would not). So a step's result is known before its
 * messages are simulated. NULL when
 * sim's sums cannot be mirrored (a transfer-level halving-doubling, tree or hierarchical
 * allreduce adds as its messages arrive) or out of memory. */
Comm *coll_comm_create_mirror(const Cluster *c, const Comm *sim);
void coll_replay(Comm *sim, Comm *mirror, int rank);

/* Prices the analytic collectives of c as `priced`'s GPUs would pay them (--price-workers):
 * the closed forms' p and routes (a fat-tree's leaves, a hierarchical cluster's nodes) are
 * priced's, its workers at least c's ranks, while the calls and their sums stay c's ranks'.
 * An allgather's total is priced's workers' blocks of the same size (identical workers); each
 * rank's books are those of one of priced's GPUs. Analytic backend, not ps; call before the
 * first collective. */
void coll_comm_set_price(Comm *c, const Cluster *priced);

/* A ring's hops as bellows cluster placed its GPUs (sim/cluster/cl_fabric.c cl_ring_layout), not
 * necessarily in rank order: COLL_LAYOUT_ACROSS if one crosses a switch (a fat-tree leaf, a
 * hierarchical node), COLL_LAYOUT_INSIDE if one stays under a switch. The closed forms then price
 * those hops: the routes across switches when some hop takes one, even if priced's workers would
 * fit one switch in rank order (4 GPUs spread over 4 leaves pay 4 link latencies a hop and the
 * uplinks' share, not a leaf's 2 and its host links); only the hops across when none stays under a
 * switch (a node's slow intra links, coll_ring_hops_s, do not hold back a ring that never takes
 * them). priced is the cluster the closed forms price (coll_comm_set_price's, or c's own). Analytic
 * ring only; call after coll_comm_set_price and before the first collective. */
enum { COLL_LAYOUT_ACROSS = 1, COLL_LAYOUT_INSIDE = 2 };
void coll_comm_set_layout(Comm *c, const Cluster *priced, int layout);

/* Several communicators in one engine (the jobs of bellows cluster): tag > 0 goes into the
 * names of c's mailboxes, so that two jobs' messages between ranks of the same numbers never
 * meet; 0 (the default) keeps a single run's names. Call before the first collective. */
void coll_comm_set_tag(Comm *c, int tag);

/* Sees every message of c's transfer-level collectives once the caller's send (and receive) is
 * done: from rank src to rank dst, its bytes on the wire, posted at t0_s and done by t1_s
 * (simulated seconds). For accounting the links' use (bellows cluster); fn NULL: none. The
 * analytic backend sends no message. */
typedef void (*CollWireFn)(void *arg, int src, int dst, double bytes, double t0_s, double t1_s);
void coll_comm_set_wire(Comm *c, CollWireFn fn, void *arg);
/* The analytic backend's account of an allreduce's bytes between nodes (--topology islands: a
 * node is an island): after each hierarchical allreduce, fn sees one message per rank, to rank
 * (rank + stride) % P (a rank of the next node), of the closed form's bytes between nodes,
 * 2 (m-1)/m n / g, times price_P / P (so the P ranks' messages sum to the priced GPUs': at
 * --price-workers N, N of them). Sets the communicator's wire: transfer-level messages are seen
 * as coll_comm_set_wire's. */
void coll_comm_set_wire_inter(Comm *c, CollWireFn fn, void *arg, int stride);

/* A priced ring's traffic on a shared fabric (bellows cluster's jobs of --price-workers): with
 * fn set, an analytic allreduce or allgather of c's ranks waits its closed form's time t, then
 * rank 0 calls fn(arg, flow_bytes) (flow_bytes: the bytes each priced GPU's ring sends in the
 * call, 2 (p-1)/p n or (p-1)/p of an allgather's total), which simulates the flows the priced
 * ring puts on shared links and returns the delay other traffic added to them (>= 0); every
 * rank then waits until rank 0 has, so the call takes t + that delay (t alone). fn NULL: none.
 * Call before the first collective. */
typedef double (*CollFabricFn)(void *arg, double flow_bytes);
void coll_comm_set_fabric(Comm *c, CollFabricFn fn, void *arg);

/* Makes the dataless allgathers below (coll_cost_allgather, coll_charge_allgather) take factor
 * (> 0) times their bytes on the wire, with the books (bytes_sent, payload_bytes) at their true
 * bytes: a collective library whose allgather reaches a smaller share of the link than its
 * allreduce (a cost profile's, sim/costs/; the links themselves carry the allreduce's share,
 * Cluster.link_share). 1: as the allreduce. */
void coll_comm_set_allgather_factor(Comm *c, double factor);

/* A collective library's share of the links as a function of a call's size: the bus bandwidth
 * nccl-tests measured over the link's rate (a cost profile's "busbw" table, sim/costs/), at
 * rising sizes in bytes (an allreduce's buffer, an allgather's total over the ranks, as
 * nccl-tests counts them), interpolated in log-log and constant beyond the ends. With curves
 * set, every call's messages take 1 / share(its size) times their bytes on the wire (the links
 * themselves at line rate, Cluster.link_share 1), the books at their true bytes; for a ring on
 * links of the measured rate that is t = 2 (p-1)/p n / busbw(n), nccl-tests' own definition
 * (doc/PERFORMANCE.md). Parameter servers' pushes and pulls and broadcasts are not scaled. */
#define COLL_CURVE_MAX 64
typedef struct {
    int n; /* 0: no curve */
    double bytes[COLL_CURVE_MAX], share[COLL_CURVE_MAX];
} CollShareCurve;
double coll_share_curve_at(const CollShareCurve *k, double bytes);
/* allgather NULL: the allreduce's curve for both. */
void coll_comm_set_share_curves(Comm *c, const CollShareCurve *allreduce,
                                const CollShareCurve *allgather);

/* Dataless collectives: the same messages, times and books as coll_allreduce(_f16) of count
 * elements of elem_bytes (4 or 2) and coll_allgather of `bytes` from every rank, without any
 * data (the transfer backend sends messages of those sizes and no payload). For costs of tensors
 * that exist only as shapes (sim/workload/). */
void coll_cost_allreduce(Comm *c, int rank, size_t count, size_t elem_bytes);
void coll_cost_allgather(Comm *c, int rank, size_t bytes);

/* A dataless push and pull of count elements to and from parameter server `server` (0 ..
 * servers - 1) on a ps communicator: the books and times of coll_cost_allreduce, with the server
 * chosen by the caller (a schedule's round robin over partitions) instead of the call count. */
void coll_cost_ps(Comm *c, int rank, int server, size_t count, size_t elem_bytes);
/* BytePS's BYTEPS_PARTITION_BYTES (byteps/common/global.cc, 4,096,000 in its scripts;
 * shared/REFERENCES.md): a ps communicator cuts every allreduce call larger than this into
 * partitions of this size, spread round-robin over the servers, all in flight at once (at both
 * levels; coll_comm_set_ps_partition sets another size on the analytic backend). */
#define COLL_PS_PARTITION_BYTES 4096000.0
/* A ps communicator on the analytic backend prices each allreduce call as BytePS sends it
 * (fifo): cut into partitions of at most `bytes` bytes (the last one the rest), round-robin over
 * the servers, every partition in flight at once and sharing each host's NIC (coll_ps.c gives
 * the closed form); 0 (the default): COLL_PS_PARTITION_BYTES, and a call of one partition on a
 * star is one push and pull through one server. */
void coll_comm_set_ps_partition(Comm *c, double bytes);
/* The parameter servers of a ps communicator (0 for the other algorithms). */
int coll_ps_servers(const Comm *c);

/* A communicator of its own mailboxes (and barrier) whose books are parent's: a second stream of
 * collectives running beside parent's on the same ranks (a schedule's partitions in flight at
 * once to parameter servers). Free it before its parent. */
Comm *coll_comm_create_sibling(const Cluster *c, Comm *parent);

/* A ring communicator of parent's ranks first .. first + sub->workers - 1 (an island's, sub
 * describing the island's own network), its rank i being parent's first + i: mailboxes of its
 * own, and its books are those ranks' books in parent's (bytes and time add up there). The
 * caller's actors call it with their local rank. Free it before its parent. */
Comm *coll_comm_create_group(const Cluster *sub, Comm *parent, int first);

/* Adds rank `rank`'s books in c since `before` (a copy of coll_stats(c, rank) taken then) to
 * `into`'s books at `into_rank`: a communicator of its own books whose ranks are not contiguous in
 * the run's (hybrid sharding's ranks of one local index across the nodes) keeps them in the run's
 * books, as a group's do. */
void coll_stats_fold(Comm *into, int into_rank, const Comm *c, int rank, const CollStats *before);

/* buf [count] is replaced by the sum over ranks. */
void coll_allreduce(Comm *c, int rank, float *buf, size_t count);

/* buf [count] is replaced by the mean over ranks: each element's sum, as coll_allreduce makes
 * it, plus 0.0f (a sum of zeros is +0 whatever their signs, so the inputs' -0 need no care),
 * divided by P. The analytic backend divides as it sums, once for every rank. */
void coll_allreduce_mean(Comm *c, int rank, float *buf, size_t count);

/* Whether c sums in memory once for all ranks (the analytic backend, a mirror, a ring): then
 * coll_allreduce_mean_into may take an out buffer apart from buf. */
int coll_sums_once(const Comm *c);
/* Whether c takes no simulated time (coll_comm_create_zero_time, a mirror): every rank's call
 * returns at the instant all have entered it, with every rank's result done. */
int coll_zero_time(const Comm *c);
/* coll_allreduce_mean's messages, times and mean, the mean into out instead of buf, which is
 * only read, on a communicator that sums once. Ranks may pass the same out (one result for a
 * shared replica): it is stored there once. */
void coll_allreduce_mean_into(Comm *c, int rank, const float *buf, float *out, size_t count);
/* The same for coll_allreduce's sum. */
void coll_allreduce_into(Comm *c, int rank, const float *buf, float *out, size_t count);

/* The same for IEEE binary16 elements (see half.h): 2 bytes per element on the wire; every
 * addition converts both halves to float, adds, and rounds the sum to half (nearest, ties to
 * even), as a GPU's half-precision allreduce does. Same algorithms and costs as above. */
void coll_allreduce_f16(Comm *c, int rank, uint16_t *buf, size_t count);

/* Every rank contributes `bytes` bytes (the counts may differ). Returns a malloc'd buffer with
 * all contributions concatenated in rank order, and their sizes in sizes[P]; the caller frees
 * it. Ring algorithm. */
unsigned char *coll_allgather(Comm *c, int rank, const void *send, size_t bytes, size_t *sizes);

/* Binomial-tree broadcast of root's buf [bytes] to every rank (buf NULL on every rank: the
 * messages without data). */
void coll_broadcast(Comm *c, int rank, int root, void *buf, size_t bytes);

/* The closed-form time of an allreduce of n bytes with the given algorithm, with per-route
 * latency a_s and seconds per byte b (and the intra-node pair for hierarchical). For ps, g is
 * the number of workers whose pushes cross the network to a server (p - 1 colocated, p on hosts
 * of their own). */
double coll_allreduce_formula_s(CollAlgo algo, int p, int g, double n_bytes, double a_s, double b,
                                double a_local_s, double b_local);

#endif
