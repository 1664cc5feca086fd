/* step_plan.h: a decided step as one plan (issue 47, DESIGN.md "Step plan and clocks"). The plan
 * says what a costed step sends, where and in what order; a clock (exec_impl.h: DDP's streams in
 * cost.c, the closed form in cost_fast.c) says when. It is built in one place (step_plan.c), the
 * only file that asks the compressor for its messages, reads the profile's fixed costs and
 * hooks, the islands' communicator, the outer lanes and the outer exchange's size: a clock only
 * walks the plan.
 *
 * A step is: the forward (every layer, one slice), the backward in slices that end where a
 * bucket fills (PlanBucket.layer), the buckets' stages (each bucket: an encode, a rendezvous, a
 * round of collectives, its collectives with the compressor's work between them, a decode), then
 * the tail (an island's allreduce, the optimiser, periodic averaging or an outer exchange posted
 * or awaited). Under PLAN_OVERLAP the buckets run beside the backward (DDP's stream), under
 * PLAN_AFTER after it, one after the other; PLAN_NO_GRADIENTS sends no gradient (periodic mode).
 * On islands with --workload or --overlap (islands_bucketed) the inner step's buckets run on the
 * worker's island (StepPlan.grad_comm, PLAN_COMM_ISLAND) in periodic mode too.
 *
 * To add a feature: a stage kind (a new StageKind, and a case in each clock's switch) or a
 * builder rule (step_plan.c), so that every clock prices it. */
#ifndef BELLOWS_STEP_PLAN_H
#define BELLOWS_STEP_PLAN_H

#include <stddef.h>

#include "compress.h"
#include "driver.h"

typedef enum {
    /* a bucket's */
    STAGE_ENCODE,     /* the compressor's work before the first collective (seconds) */
    STAGE_RENDEZVOUS, /* the ranks meet: the time the others wait for the slowest */
    STAGE_ROUND,      /* a round of collectives submitted: the profile's cycle (seconds), none
                       * for the bucket's first round when it was queued (queueable) */
    STAGE_COLL,       /* one collective (msg) on a communicator, after a fixed call cost */
    STAGE_BETWEEN,    /* the compressor's work between two collectives (seconds) */
    STAGE_DECODE,     /* after the last collective (seconds) */
    /* the tail's */
    STAGE_OPTIMIZER,  /* the optimiser over the real parameters (seconds at the full rate) */
    STAGE_AVERAGE,    /* periodic averaging: a rendezvous, a round (seconds), msg dense */
    STAGE_OUTER_WAIT, /* wait for what remains of an outer exchange on the worker's lane */
    STAGE_OUTER_POST, /* post an outer exchange (msg) to the lane, after a delay (seconds) */
    /* a Horovod bucket's (step_plan_hvd.c) */
    STAGE_CYCLE,     /* wait for the background thread's next cycle (seconds: the cycle), from
                      * its last (costs_horovod_cycle_start) */
    STAGE_NEGOTIATE, /* the cycle's negotiation: msg on the run's communicator, no call cost */
    STAGE_FUSE       /* the fusion buffer's copy in or out (seconds, on the stream) */
} StageKind;

/* The communicator a collective runs on. */
typedef enum {
    PLAN_COMM_RUN,    /* the run's (all workers; parameter servers, islands' hierarchy) */
    PLAN_COMM_ISLAND, /* the worker's island (--topology islands, periodic mode): its ring */
    PLAN_COMM_NODE,   /* the worker's node, its GPUs' ring on the node's fabric: --zeropp hpz,
                       * qgz (zeropp.c) or --sharding hybrid (shard_comms.c) */
    PLAN_COMM_ACROSS, /* --sharding hybrid: the ranks of the worker's local index, one a node */
} PlanComm;

/* What a sharded step's collective is (--sharding, issue 50): none (DDP's, or a compressor's
 * message), a reduce-scatter of gradients or an all-gather of parameters. Both are priced as the
 * ring all-gather of one shard a rank, msg {COMPRESS_ALLGATHER, the shard's bytes}: the ring
 * reduce-scatter moves the same P-1 blocks of n/P to the same neighbours (Patarasuk and Yuan,
 * JPDC 2009; closed form (p-1) a + (p-1)/p n b for both, REFERENCES.md "Collectives"). */
typedef enum { PLAN_SHARD_NONE, PLAN_SHARD_RS, PLAN_SHARD_AG, PLAN_SHARD_A2A } PlanShard;
/* PLAN_SHARD_A2A (--zeropp qgz, zeropp.c): one stage of the hierarchical all-to-all, whose X bytes
 * a rank sends (P-1)/P of over its communicator of P ranks: priced as the all-gather of X/P a
 * rank, the same bytes a rank and, on a non-blocking switch, the same closed form
 * (P-1) a + (P-1)/P X b (REFERENCES.md "Collectives"). */

typedef struct {
    StageKind kind;
    PlanComm comm;
    PlanShard shard; /* STAGE_COLL: a sharded step's reduce-scatter or all-gather */
    int queueable;   /* STAGE_ROUND: the bucket's first round (no cycle when queued) */
    int if_averaged; /* a tail stage: only when the step averages */
    CompressMsg msg; /* STAGE_COLL, STAGE_AVERAGE, STAGE_OUTER_POST (the outer exchange's
                      * floats this step: outer_exchange_floats) */
    double seconds;  /* work at the GPU's full rate, a cycle (STAGE_ROUND, STAGE_AVERAGE's), a
                      * delay (STAGE_OUTER_POST) */
    double call_s;   /* STAGE_COLL, STAGE_AVERAGE: the profile's fixed cost of a call, paid before
                      * it; PLAN_NO_CALL (the roofline, the island's ring): none at all */
} PlanStage;

typedef struct {
    const int *tensors; /* the bucket's tensors, in the order they are reduced */
    int n_tensors;
    int layer;  /* PLAN_OVERLAP: ready after this layer's backward */
    int defer;  /* PLAN_OVERLAP: waits for the backward's end, and so do the buckets after it:
                 * an allgather the profile does not overlap with it, or a compressed tensor
                 * under a hook that synchronises (CostHook.synchronizes, PowerSGD's in
                 * PyTorch: it holds the backward until the bucket is reduced) */
    int queued; /* PLAN_AFTER: its first round was queued; PLAN_OVERLAP: the clock decides */
    /* a Horovod plan's (StepPlan.horovod): the bucket is its cycle's first call, and each rank's
     * bytes of the cycle's negotiation (the response cache's bit vector, or the requests) */
    int opens_cycle;
    double negotiate_bytes;
    int first_stage, n_stages;
} PlanBucket;

/* PLAN_SCHEDULED: the schedule engine's clock (sched_*.c). Its buckets are the schedule's units,
 * whose caps the schedule decides each step from an observation of the tensors' payloads: so
 * plan_build sets the levels only, and the engine, once the schedule decided, has the buckets,
 * their stages and the tail built by plan_build_units; it then cuts each STAGE_COLL's message
 * into the schedule's partitions and hands them out in the schedule's order (when, not what). */
enum { PLAN_OVERLAP, PLAN_AFTER, PLAN_NO_GRADIENTS, PLAN_SCHEDULED };
#define PLAN_NO_CALL (-1.0)

typedef struct {
    int mode;
    int n_buckets;
    PlanBucket *bucket; /* [n_buckets] */
    PlanStage *stage;   /* every bucket's stages, then the tail's */
    int n_stages, cap_stages;
    int tail_first;     /* stage[tail_first .. n_stages): after the gradients */
    PlanComm grad_comm; /* the buckets' collectives' communicator (fixed for the run) */
    int *identity;      /* [n_tensors]: 0 .. n-1, --overlap tensor's buckets */
    int horovod;        /* PLAN_OVERLAP's buckets are the calls of the profile's Horovod */
    int hvd_batch;      /* the images per GPU Horovod's calls were planned at (its backward's) */
    /* ZeRO-3 beside the compute (shard_sched.c): its FSDP units, in the forward's order; the
     * buckets are then the units' reduce-scatters, in the backward's order (unit u's is bucket
     * n_units - 1 - u). 0 units: no FSDP schedule (every other plan). */
    int n_units;
    struct PlanUnit *unit;
} StepPlan;

/* An FSDP unit (--fsdp-unit): consecutive layers whose parameters are gathered by one all-gather
 * and whose gradients are reduce-scattered by one reduce-scatter (FSDP's FlatParameter). */
typedef struct PlanUnit {
    int first_layer, n_layers;
    int first_tensor, n_tensors; /* its tensors, consecutive */
    size_t floats;
    /* the all-gather before its forward ([0]) and before its backward ([1]): one STAGE_COLL,
     * PLAN_SHARD_AG, one shard a rank of the unit's parameters; under --zeropp qwz an encode
     * before it and a decode after it, under hpz the backward's on PLAN_COMM_NODE
     * (zpp_plan_unit_gathers) */
    PlanStage gather[2][3];
    int n_gather[2];
} PlanUnit;

typedef struct DriverRun DriverRun;

/* step_plan.c. plan_create, from cost_create: the run's fixed part (DDP's buckets, its arrays);
 * plan_build, from cost_decided: this step's stages at its levels and its batch b per worker
 * (Horovod's calls re-planned when the priced batch changed); plan_free undoes create (also a
 * partial one). plan_outer_waits: whether a worker waits at its STAGE_OUTER_WAIT (a fragment is
 * applied at `step`, or eager updates' last round). */
int plan_create(DriverRun *run, BwError *err);
void plan_build(DriverRun *run, long step, int b);
void plan_free(StepPlan *p);
int plan_outer_waits(const DriverRun *run, long step, int averaged);
/* step_plan_hvd.c: under a profile with "horovod" and DDP's overlap, the buckets are the calls
 * Horovod's background thread makes (costs_horovod_fuse) over the workload's backward at b
 * images per GPU, the step's priced batch (its pricing of a bucket's stages: exec_impl.h). */
void plan_hvd_buckets(DriverRun *run, int b);

/* The bytes of one rank's shard of `floats` fp32 values over the priced GPUs (--sharding). */
size_t plan_shard_bytes(const DriverRun *run, size_t floats);
/* PLAN_SCHEDULED (step_plan_units.c). plan_tensor_bytes: each tensor's payload at this step's
 * levels (the schedule's observation; after plan_build). plan_build_units: this step's buckets,
 * the tensors in the backward's order closed once a bucket holds its cap of fp32 bytes
 * (first_cap, when > 0, for the first; cap 0: a tensor a bucket), their stages and the tail. */
void plan_tensor_bytes(const DriverRun *run, double *bytes);
void plan_build_units(DriverRun *run, long step, double first_cap, double cap);
/* --overlap layer: each layer's update in place of STAGE_OPTIMIZER, seconds at the GPU's full
 * rate into opt_s[n_layers] (0: a layer without tensors). */
void plan_layer_updates(const DriverRun *run, double *opt_s);
/* The builder's own rules, shared by its two files (step_plan.c): bucket b's stages (syncs: a
 * synchronising hook defers it) and the tail after the gradients. */
void plan_bucket(DriverRun *run, StepPlan *p, PlanBucket *b, int syncs);
void plan_tail(DriverRun *run, StepPlan *p, long step);
/* zeropp.c's builder rules (--zeropp): a bucket's reduce-scatter of `floats` under qgZ (returns
 * 0 when qgZ is off: the caller pushes the plain one), and ZeRO-3's two all-gathers of the
 * parameters after the optimiser under qwZ and hpZ (returns 0 when both are off). The bytes that
 * cross a node boundary in one step of the plan, per node (zpp_cross_node_bytes). */
int zpp_plan_bucket_rs(DriverRun *run, StepPlan *p, PlanBucket *b, size_t floats);
int zpp_plan_gathers(DriverRun *run, StepPlan *p);
double zpp_cross_node_bytes(const DriverRun *run);
/* A unit's two all-gathers under --zeropp qwz or hpz (returns 0 when both are off: the caller
 * sets the plain ones). */
int zpp_plan_unit_gathers(DriverRun *run, PlanUnit *un);
/* step_plan.c for step_plan_hybrid.c: a new stage at the plan's end. step_plan_hybrid.c: hybrid
 * sharding's rules (the stage at index rs, a bucket's reduce-scatter, moved onto the node and
 * followed by the allreduce of its shard across the nodes; the tail's gathers on the node). */
PlanStage *plan_push_stage(StepPlan *p, StageKind kind);
void plan_hybrid_bucket(DriverRun *run, StepPlan *p, int rs, size_t floats);
void plan_hybrid_tail(DriverRun *run, StepPlan *p);

/* shard_sched.c: ZeRO-3's FSDP schedule (issue 50 items 1-3). fsdp_units: the layers grouped
 * into units as --fsdp-unit says (first[u] .. first[u + 1] - 1, first [n_layers + 1]); returns
 * their number. fsdp_plan_create: the units and their buckets (plan_create, under
 * --sharding zero3 beside the compute). fsdp_gathered_bytes: the most fp16 bytes of gathered
 * units a GPU holds at once under the schedule (shard_mem.c). */
int fsdp_units(const Workload *wl, const FsdpSched *s, int *first);
void fsdp_plan_create(DriverRun *run, StepPlan *p);
double fsdp_gathered_bytes(const Workload *wl, const FsdpSched *s);

/* The step of a plan with units as one walk that every clock shares, so that they decide the
 * same: the turns (each unit's forward in order, then each unit's backward in reverse), at each
 * turn the all-gathers it issues (its own unless prefetched, the next turn's as the prefetch
 * knobs and the limit allow), its wait for its own, its compute, and after a backward turn its
 * reduce-scatter; then the waits for every reduce-scatter. A request is a turn's all-gather
 * (0 .. 2 n_units - 1) or a unit's reduce-scatter (2 n_units + u); lane: 0, or 1 for a
 * reduce-scatter on its own communicator (--rs-comm own). */
typedef struct {
    void *arg;
    void (*issue)(void *arg, int req, int lane);
    void (*wait)(void *arg, int req);
    void (*compute)(void *arg, int unit, int backward);
} FsdpOps;
void fsdp_walk(const StepPlan *p, const FsdpSched *s, const FsdpOps *ops);
/* A request's collective stages: the unit's gather, or its reduce-scatter's bucket. */
const PlanStage *fsdp_req_stages(const StepPlan *p, int req, int *n);

#endif
