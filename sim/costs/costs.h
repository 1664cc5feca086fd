/* costs.h: cost profiles, what an implementation of data-parallel training pays on one GPU and
 * one kind of network, beside the roofline: fixed costs per tensor handed to a compression hook,
 * per GPU kernel and per collective call; the throughput of each operation the compressors and
 * the optimiser use, as a function of its size; the share of a link the collective library
 * achieves on each kind of network; whether allgathers overlap the backward; and the sustained
 * compute efficiency of the workload's layers. The format is in sim/costs/README.md.
 *
 * `ideal` is the roofline bellows always charged (operations at the GPU's sustained flop rate
 * and memory bandwidth, no fixed costs, collectives at line rate): with it a run gives the same
 * files bit for bit as before profiles existed. The other built-ins (bellows costs) are
 * profiles/NAME.json, each constant cited to a measurement or a published figure, or measured
 * by traces/pytorch/calibrate.py. A profile is one const value passed by pointer to whoever
 * prices (the compressors' cost hooks, sim/driver/cost.c), never a global. */
#ifndef BELLOWS_COSTS_H
#define BELLOWS_COSTS_H

#include <stdio.h>

#include "coll.h"
#include "status.h"

/* The operations a profile prices; each stage of a compressor's cost hook is one of them. The
 * size of a stage is in the operation's own unit, and a profile gives the rate in that unit per
 * second at a few sizes (log-log interpolated between them, constant beyond). */
typedef enum {
    COST_OP_ELEMENTWISE,   /* a streaming pass (error feedback, casts, scaling); size: bytes
                              read and written */
    COST_OP_MATMUL,        /* a skinny product (PowerSGD's M Q, M^T P, P Q^T at rank r <= 8,
                              bound by reading M); size: elements of M */
    COST_OP_ORTHOGONALISE, /* one column of Gram-Schmidt (normalise it, project it out of the
                              later ones); size: the column's elements */
    COST_OP_TOPK,          /* selecting the k largest magnitudes of n (k/n about 1%); size: n */
    COST_OP_QUANTISE,      /* quantising to a few levels, or back (QSGD); size: elements */
    COST_OP_PACK,          /* signs packed into bits, or unpacked (signSGD); size: elements */
    COST_OP_SCATTER,       /* sparse entries gathered, or scatter-added into a dense tensor;
                              size: entries */
    COST_OP_OPTIMIZER,     /* the optimiser's step over the model; size: parameters */
    COST_OP_RANDOM,        /* RandomK's random indices, drawn as the implementations draw them:
                              a permutation of the n (torch.randperm, tf.random.shuffle) cut
                              to k; size: n */
    COST_OP_BLOCKQ,        /* block quantisation as one fused kernel (ZeRO++'s qwZ and qgZ, as
                              DeepSpeed's csrc/quantization: a block's absolute maximum, scaled,
                              rounded and packed), or back; size: values */
    COST_OP_QR,            /* one torch.linalg.qr of a tall [n x r] matrix (measured at r 4,
                              priced so at every r: within 10% to r 8, unmeasured above), which
                              PyTorch's powerSGD_hook runs instead of Gram-Schmidt above rank 2
                              since 2022 (CostHook qr_above_rank); size: its rows n */
    COST_OP_COUNT
} CostOp;

#define COST_OP_BIT(op) (1u << (op))

/* The kinds of network whose achievable link share a profile gives (--transport). */
typedef enum { COST_NET_TCP, COST_NET_RDMA, COST_NET_NVLINK, COST_NET_COUNT } CostNet;

#define COSTS_MAX_POINTS    16
#define COSTS_MAX_WORKLOADS 8
/* the largest interference a profile may give: the compute keeps at least half the GPU (the
 * sharing bellows simulates it with, cost_comm_begin, gives no less) */
#define COSTS_MAX_INTERFERENCE 2.0
#define COSTS_MAX_SCHEDULES    8
#define COSTS_MAX_HOOKS        8
/* Winograd's F(4x4, 3x3) does a quarter of a direct 3x3 convolution's multiplies (Lavin and
 * Gray, "Fast Algorithms for Convolutional Neural Networks", CVPR 2016): a workload's efficiency
 * in direct flops may reach 4 times the peak, no more */
#define COSTS_MAX_WORKLOAD_EFFICIENCY 4.0

typedef struct {
    double size, rate; /* at this size, this many units per second */
} CostPoint;

typedef struct {
    int present;
    double kernels; /* GPU kernels (with their launch and dispatch) per stage */
    int n_points;   /* >= 1, sizes ascending */
    CostPoint points[COSTS_MAX_POINTS];
} CostOpRate;

/* nccl-tests' bus bandwidth (doc/PERFORMANCE.md) at rising sizes, for one number of GPUs per
 * NIC: what `bellows costs import-nccl-tests` reads from its logs (costs_busbw.c). */
#define COSTS_BUSBW_TABLES 8
#define COSTS_BUSBW_POINTS 32
typedef struct {
    double gpus_per_nic; /* >= 1 */
    int n;               /* 1 .. COSTS_BUSBW_POINTS, bytes rising */
    double bytes[COSTS_BUSBW_POINTS], busbw_Bps[COSTS_BUSBW_POINTS];
} CostBusbwTable;

/* NCCL's socket transport (NVIDIA/nccl src/transport/net_socket.cc): NCCL_SOCKET_NTHREADS is
 * at most MAX_THREADS 16, and its product with NCCL_NSOCKS_PERTHREAD at most MAX_SOCKETS 64. */
#define COSTS_MAX_SOCKET_THREADS 16
#define COSTS_MAX_SOCKETS        64

typedef struct {
    int present;
    double allreduce, allgather; /* achieved bus bandwidth over the link's, in (0, 1] */
    /* "cap_gbps": the most one of NCCL's socket streams reaches whatever the link, in bytes/s
     * (0: no cap), a transport's own limit, not a share of it; "sockets": "TxS", the
     * NCCL_SOCKET_NTHREADS x NCCL_NSOCKS_PERTHREAD it runs with (1x1 when absent), which
     * --nccl-sockets replaces (costs_set_sockets). cap_Bps is the transport's cap, one
     * stream's times threads x sockets: every caller reads that. */
    double socket_cap_Bps, cap_Bps;
    int threads, socks;
    /* "busbw" instead of the two shares: the tables of allreduce [0] and allgather [1] (none:
     * the allreduce's), gpus_per_nic rising, measured on links of link_Bps bytes/s */
    int busbw;
    double link_Bps;
    int n_tables[2];
    CostBusbwTable tables[2][COSTS_BUSBW_TABLES];
} CostNetShare;

/* A compressor's communication hook as the framework runs it ("hooks": {NAME: {...}}). */
typedef struct {
    char compressor[32]; /* the compressor's name, as --compressor spells it */
    /* the hook waits for its bucket's collectives on the thread that runs the backward
     * (PyTorch's powerSGD_hook: torch.cuda.synchronize in its last callback, run inline by
     * DDP's reducer on the autograd thread), so the backward after a bucket does not start
     * until the bucket is reduced: under DDP the bucket gets no overlap */
    int synchronizes;
    /* PowerSGD: the warm-started Q is orthogonalised again before P = M Q, every step
     * (PyTorch's powerSGD_hook: `for q in qs: _orthogonalize(q)`), besides P after its
     * allreduce */
    int orthogonalises_query;
    /* PowerSGD: above this rank a matrix is orthogonalised by one torch.linalg.qr call (the
     * profile's "qr" operation) instead of Gram-Schmidt column by column; 0: Gram-Schmidt at
     * every rank. PyTorch's _orthogonalize since pytorch/pytorch PR #72043 (January 2022: after
     * 1.10, in Debian's 1.13 and in 2.x): `if rank <= 2 or dtype in [torch.float16,
     * torch.bfloat16]` Gram-Schmidt, else torch.linalg.qr; DDP's gradients stay fp32 under
     * autocast, so QR above rank 2 */
    int qr_above_rank;
} CostHook;

/* The groups of a profile's constants that carry a stated uncertainty ("uncertainty"): the
 * compute's efficiency, the fixed costs, the operations' rates, the networks' shares and caps. */
typedef enum {
    COST_GROUP_COMPUTE,
    COST_GROUP_FIXED,
    COST_GROUP_OPS,
    COST_GROUP_NETWORKS,
    COST_GROUP_COUNT
} CostGroup;

/* "uncertainty"'s own format version (the field is optional in a profile of format 1) */
#define COSTS_UNCERTAINTY_VERSION 1
#define COSTS_MAX_UNCERTAINTY     0.9

/* Horovod (horovod/horovod) as the framework that runs a step's allreduces ("horovod": the
 * format in sim/costs/README.md; read by costs_horovod.c). Its background thread wakes every
 * cycle (RunLoopOnce in horovod/common/operations.cc: it sleeps until the last cycle's start
 * plus HOROVOD_CYCLE_TIME, or not at all when the last cycle's work ran past that), negotiates
 * which tensors every rank has ready (the response cache's bit-vector allreduce when every
 * tensor is cached, else a gather of the requests to rank 0 and a broadcast of the plan:
 * horovod/common/controller.cc, response_cache.cc), fuses them in order while their bytes stay
 * within HOROVOD_FUSION_THRESHOLD (Controller::FuseResponses), copies a fused call's tensors
 * into the fusion buffer and back out (only when it holds more than one: ops/gpu_operations.cc)
 * and allreduces. */
#define COSTS_HVD_MAX_THRESHOLD (1ull << 40) /* bytes: a terabyte, far above any GPU's memory */
#define COSTS_HVD_MAX_CYCLE_MS  1000.0
#define COSTS_HVD_MAX_CACHE     (1 << 20)
typedef struct {
    int present;
    char version[24];    /* the release whose defaults the fields are, "0.21.0" */
    double fusion_bytes; /* HOROVOD_FUSION_THRESHOLD; 0: no fusion (each tensor its own call) */
    double cycle_s;      /* HOROVOD_CYCLE_TIME */
    int response_cache;  /* HOROVOD_CACHE_CAPACITY > 0 */
    int cache_capacity;  /* the cache's bits (HOROVOD_CACHE_CAPACITY, 1024 by default) */
    int batched_memcpy;  /* the fusion copies as one kernel per 160 tensors (HOROVOD_BATCH_D2D_
                            MEMCOPIES, v0.21.0 on) rather than a cudaMemcpyAsync per tensor */
    char controller[8];  /* the negotiation's: "mpi" or "gloo" */
    char operations[8];  /* the allreduce's: "nccl" or "mpi" (HOROVOD_GPU_OPERATIONS) */
} CostHorovod;

typedef struct {
    char name[64];
    char spec[256];   /* what costs_load was given, for errors and summaries */
    char source[512]; /* where the constants come from */
    char implementation[128];
    /* "software": the framework generation its rates were measured under, e.g. "PyTorch 1.x
     * (GRACE, pytorch#22812)" ("" when not given); the run's header names it */
    char software[160];
    int ideal;    /* the roofline: none of the fields below is used */
    char gpu[16]; /* the GPU it describes (cluster_gpu_find's name) */
    /* where it was measured (calibrate.py writes them; "" for cited profiles) */
    char device[128], versions[128], date[32];
    /* a built-in's validation against published measurements (bellows validate), e.g. "median
     * error 8%, worst 19% over 24 published rows"; "" for a file or a profile not validated */
    char validation[160];
    /* the workload layers' sustained fraction of the GPU's peak, per precision (fp32, tf32,
     * bf16); 0: not given (the cluster's --gpu-efficiency default applies) */
    double efficiency[3];
    /* "efficiency": {"workloads": {NAME: {...}}}: a workload's own efficiency per precision (0:
     * the precision's above), in its profile's direct flops: up to COSTS_MAX_WORKLOAD_EFFICIENCY,
     * as cuDNN's Winograd and FFT convolutions do fewer multiplies than they count */
    struct {
        char workload[64];
        double efficiency[3];
    } workload_eff[COSTS_MAX_WORKLOADS];
    int n_workload_eff;
    double tensor_s;     /* per tensor handed to a compression hook (framework dispatch) */
    double kernel_s;     /* per GPU kernel: launch and the framework's dispatch */
    double collective_s; /* per collective call, beyond its messages */
    /* > 0: collectives are started by a background thread that wakes every cycle_s (Horovod's
     * HOROVOD_CYCLE_TIME): a round of them submitted to the idle thread waits half a cycle on
     * average; 0: started at once (NCCL) */
    double cycle_s;
    CostOpRate ops[COST_OP_COUNT];
    CostNetShare net[COST_NET_COUNT];
    /* whether a bucket whose collectives include an allgather starts during the backward (as
     * DDP's allreduce buckets do), or waits for the backward to end */
    int allgather_overlaps;
    /* the compute beside a worker's collective (DDP's backward beside its buckets, the
     * layer-wise next forward beside the last partitions) takes this many times as long: NCCL's
     * kernels share the SMs and the memory; 1 (or 0, ideal): no interference */
    double interference;
    /* "schedules": {NAME: {"partition_s": x}}: what a schedule's own machinery pays per
     * partition it hands out (ByteScheduler's Python core), beyond a collective call */
    struct {
        char schedule[32];
        double partition_s;
    } sched_cost[COSTS_MAX_SCHEDULES];
    int n_sched_cost;
    /* "hooks": how the framework's communication hook of a compressor runs (CostHook); "" and
     * none when the profile does not say: the hook then overlaps the backward as DDP's allreduce
     * buckets do and pays only its stages' prices */
    char hook_framework[64]; /* the framework and version the hooks model, "PyTorch 1.10" */
    CostHook hooks[COSTS_MAX_HOOKS];
    int n_hooks;
    /* "uncertainty": {"version": 1, "compute": r, "fixed": r, "ops": r, "networks": r}: each
     * group's constants are known to a relative range of +-r (0 < r <= COSTS_MAX_UNCERTAINTY),
     * from the profile's validation residuals or its sources' spread, stated beside each;
     * has_uncertainty 0: the profile states none */
    int has_uncertainty;
    double uncertainty[COST_GROUP_COUNT];
    /* "horovod": the framework that runs the step's allreduces (CostHorovod); present 0: DDP's
     * buckets. Its cycle is cycle_s too (the schedules' and the averaging's rounds). */
    CostHorovod horovod;
} CostProfile;

/* The default --costs: the PyTorch DDP + NCCL profile of the cluster's GPU. */
#define COSTS_DEFAULT "pytorch"

/* Loads a built-in by name (`pytorch` is pytorch-<gpu>, the cluster's GPU, lower case), or a
 * profile file (a path: contains '/' or ends in .json). gpu: the cluster's GPU name (NULL when
 * its rate was given directly: then `pytorch` is `ideal`). A profile measured on another GPU,
 * a missing or bad field, a constant that is negative, zero where it must not be, or not
 * finite, an efficiency or share above 1, an unknown GPU or network kind: a usage error naming
 * flag, the file and the field. */
int costs_load(const char *spec, const char *flag, const char *gpu, CostProfile **out,
               BwError *err);
void costs_free(CostProfile *p); /* NULL is a no-op */

/* The `ideal` profile, a static value (never freed). */
const CostProfile *costs_ideal(void);

/* Checks that p prices every operation in ops_mask (COST_OP_BIT) and the network kind net:
 * else a usage error naming flag, the profile and the missing operation, needed by `who`. */
int costs_check(const CostProfile *p, unsigned ops_mask, CostNet net, const char *who,
                const char *flag, BwError *err);

/* Checks that each link share of p on network net (and nvlink, or net, inside a node) leaves a
 * bandwidth bellows simulates on links of bandwidth_Bps (intra_Bps inside a node; 0: no such
 * links): else a usage error naming flag, the profile and the field. */
int costs_check_links(const CostProfile *p, CostNet net, double bandwidth_Bps, double intra_Bps,
                      const char *flag, BwError *err);

/* Seconds of one stage of op over size units: its kernels' fixed cost and size at the
 * interpolated rate. p must not be ideal and must have the operation. */
double costs_op_seconds(const CostProfile *p, CostOp op, double size);

/* The link share of a collective on network net (1 for ideal, and for a network priced by its
 * "busbw" tables: its links run at line rate, and costs_busbw_curve scales each call). */
double costs_share(const CostProfile *p, CostNet net, int allgather);

/* The share of a link of link_Bps bytes/s a collective on network net reaches: costs_share, or
 * the network's cap over the link where that is less, so the rate is min(share x link, cap).
 * Every share that scales a link goes through it (the platform's NICs, the analytic comm, the
 * allgather factor, the summary and the header). link_Bps <= 0: costs_share. */
double costs_link_share(const CostProfile *p, CostNet net, int allgather, double link_Bps);
/* The rule itself, min(share x link, cap) / link, for a caller that kept share and cap_Bps (0:
 * no cap) but not the profile. */
double costs_capped_share(double share, double cap_Bps, double link_Bps);

/* The share of the link (busbw over the measured link's rate) as a function of a call's bytes,
 * for a cluster of gpus_per_nic GPUs behind each NIC: the table of that many, or between the two
 * tables around it (linear in log GPUs per NIC, at the sizes of both), clamped to the first and
 * last tables. Returns 0 (out->n 0) when network net has no "busbw". */
int costs_busbw_curve(const CostProfile *p, CostNet net, int allgather, double gpus_per_nic,
                      CollShareCurve *out);

/* "TxS" (NCCL_SOCKET_NTHREADS x NCCL_NSOCKS_PERTHREAD, each >= 1, threads at most
 * COSTS_MAX_SOCKET_THREADS, the product at most COSTS_MAX_SOCKETS) into threads and socks:
 * NULL, or what was wrong ("expected THREADSxSOCKETS ..."), a static string. */
const char *costs_sockets_parse(const char *text, int *threads, int *socks);
/* Runs network net of p with threads x socks of NCCL's sockets: its cap becomes one stream's
 * times their product. Returns 0 (p unchanged) when net has no per-stream cap (ideal, busbw,
 * no "cap_gbps", absent). */
int costs_set_sockets(CostProfile *p, CostNet net, int threads, int socks);

/* The efficiency the profile gives for precision ("fp32", "tf32", "bf16"), or 0. */
double costs_efficiency(const CostProfile *p, const char *precision);
/* The same for the workload named workload (NULL: none): its own entry when the profile has
 * one for that precision, else costs_efficiency's. */
double costs_workload_efficiency(const CostProfile *p, const char *precision, const char *workload);

/* The seconds the profile gives a partition of the schedule named by spec ("NAME[:k=v,...]"),
 * or 0 (none given, ideal, NULL). */
double costs_partition_s(const CostProfile *p, const char *spec);

/* The hook of the compressor named by spec ("powersgd:ef=1" is powersgd) in p; NULL when p is
 * NULL or gives none. */
const CostHook *costs_hook(const CostProfile *p, const char *spec);
const char *costs_op_name(CostOp op);
const char *costs_net_name(CostNet n);
int costs_net_parse(const char *name); /* -1 if unknown */

/* What `bellows validate`'s rows and a run are compared on, to name the published rows near a
 * run (issue 48: a run's "validated" line named rows of another model, network and node). */
typedef struct {
    char family[32];    /* the workload's name up to its first '-' (resnet50-tf: resnet50); "" */
    char framework[16]; /* costs_framework: pytorch, tensorflow, horovod, roofline (ideal), other */
    int transport;      /* CostNet */
    int sockets;        /* NCCL's socket streams, threads x sockets per thread (tcp with a cap;
                           else 1) */
    double gbps;        /* the NIC's rate, Gbit/s */
    double gpus_per_nic;
    char gpu[16];     /* "" when the GPU is given by its rate */
    char sharding[8]; /* --sharding: zero1, zero2, zero3, hybrid; "" for none (DDP) */
    char zeropp[48];  /* --zeropp's canonical list (zeropp_name: "qwz:int8,hpz,qgz"); "" none */
} CostSetting;

/* The distance between two settings, each term 0 when they agree:
 *   1 for another model family, 1 for another framework, 1 for another transport, 1 for
 *   another GPU, |log10| of the bandwidths' ratio (10x apart: 1), |log2| of the GPUs per NIC's
 *   ratio / 3 (8x apart: 1), |log2| of the socket streams' ratio / 6 (1 against 64: 1),
 *   the ZeRO stages apart / 3 (DDP 0, zero1 1, zero2 2, zero3 3: DDP against ZeRO-3 is 1;
 *   hybrid against any other: 1), and ZeRO++'s collectives (qwz with its bits, hpz, qgz) in
 *   one setting and not the other, or at other bits, / 3 each (all three against none: 1).
 * A row is near a run below COSTS_NEAR_DISTANCE: one difference of kind, or a tenfold
 * bandwidth, is not near. why (n bytes, may be NULL) names what differs. */
#define COSTS_NEAR_DISTANCE 1.0
double costs_setting_distance(const CostSetting *run, const CostSetting *row, char *why, size_t n);

/* horovod (a profile with "horovod"), pytorch, tensorflow (the implementation names it),
 * roofline (ideal) or other. */
const char *costs_framework(const CostProfile *p);

/* The predicted rows of the built-in validation (sim/costs/validation/summary.json's "rows",
 * written by `bellows validate --write-summary`, each with its setting and error) near s, as
 * one line for the header and summary.json: "N published rows near this setting (median
 * error M%, worst W%); nearest: ID (+E%, distance D), ..." or "no published row near this
 * setting; the nearest, ID (+E%), at distance D: WHAT differs". */
void costs_validation_near(const CostSetting *s, char *buf, size_t n);

/* Horovod's tensor fusion (costs_horovod.c). The tensors in the order they become ready, each
 * at ready_s (seconds after the backward starts) with its bytes; a call of the background
 * thread: tensors t[first .. first + n), their bytes, when it starts and whether it is its
 * cycle's first (the cycle's negotiation comes before it). */
typedef struct {
    double ready_s, bytes;
} HvdTensor;
typedef struct {
    int first, n;
    double bytes, start_s;
    int opens_cycle;
} HvdCall;
/* The calls Horovod makes of n tensors (calls: room for n; returns how many): a cycle starts
 * with the backward (t = 0) and then every h->cycle_s, or as soon as a cycle's work ends when it
 * ran longer (costs_horovod_cycle_start); each cycle takes the tensors ready by its start, fused
 * in order while their bytes stay within h->fusion_bytes (a larger tensor alone), one call after
 * the other. busy_s(ctx, call): how long the thread works on a call (NULL: no time, a thread
 * that is never late). */
int costs_horovod_fuse(const CostHorovod *h, const HvdTensor *t, int n,
                       double (*busy_s)(void *ctx, const HvdCall *call), void *ctx, HvdCall *calls);
/* The thread's next cycle at or after now, its last one started at last: busy (its last work
 * ended at now), max(last + cycle_s, now); idle, the first last + m cycle_s >= now (m >= 0). */
double costs_horovod_cycle_start(double now, double last, double cycle_s, int busy);
/* --horovod RELEASE: the releases are the built-ins named horovod-RELEASE-GPU (gen_costs.py's
 * one table of each release's defaults, HOROVOD): the "horovod" of the one whose RELEASE, or
 * whose "version", is release ("0.21" or "0.21.0") into *h and its RELEASE into key (n bytes);
 * 0 when none is. costs_horovod_releases: "0.18, 0.21", those it knows. */
int costs_horovod_release(const char *release, CostHorovod *h, char *key, size_t n);
void costs_horovod_releases(char *buf, size_t n);
/* Runs p's allreduces under h (NULL: none, DDP's buckets) over p's rates and links: its cycle
 * with it; with Horovod no DDP communication hook (gen_costs.py's profile_horovod drops them
 * too); its name ("pytorch-h100+horovod-0.21", key the release), implementation and software
 * say so, and its validation line goes (its rows ran the profile's own framework). Returns 0,
 * p unchanged, when p already runs h. p must be neither ideal nor have a cycle of its own
 * ("fixed": "cycle_s") and, for h, must price "elementwise" (the fusion copies). */
int costs_set_horovod(CostProfile *p, const CostHorovod *h, const char *key);

/* The `bellows costs` listing. */
void costs_print_list(FILE *out);
/* `bellows costs NAME|FILE.json`: the profile's every rate (compute, fixed costs, each
 * operation's rates by size, the networks, interference, schedules) with its software
 * generation and source (costs_show.c). A bad name or file: a usage error naming it. */
int costs_print_profile(FILE *out, const char *spec, BwError *err);
const char *const *costs_builtin_names(void); /* NULL-terminated */

#endif
