/* driver.h: simulated data-parallel training. One SimGrid actor per simulated GPU trains its
 * own replica of the model on its own shard with real floats; each step it is charged
 * flops/rate of simulated compute on its host, the policy decides (once, for all workers), and
 * the gradient goes through the compressor and the collectives at the decided levels (gradient
 * mode), or the workers step locally and average their parameters when the policy says so
 * (periodic mode). Evaluations on the real test set are free in simulated time.
 *
 * Where the time goes, per worker: compute (sg_actor_execute), waiting at the step's
 * rendezvous for the slowest worker (stragglers), and communication (inside collectives).
 * The three add up to the simulated time. */
#ifndef BELLOWS_DRIVER_H
#define BELLOWS_DRIVER_H

#include "dataset.h"
#include "model.h"
#include "trainer.h"
#include "cluster.h"
#include "trace.h"
#include "coll.h"
#include "costs.h"
#include "workload.h"

#define DRIVER_MAX_WORKERS 4096

/* A run has diverged (status "diverged", and it stops) when the workers' mean loss is not
 * finite or exceeds this many times max(the first step's loss, ln 10), or when rank 0's final
 * parameters are not finite. */
#define DRIVER_DIVERGENCE_FACTOR 10.0

/* How a replay is simulated (--replay-engine). */
typedef enum {
    REPLAY_AUTO,   /* the fast path whenever it gives the actors' answer, else the actors */
    REPLAY_ACTORS, /* one SimGrid actor per worker, payloads through the compressors */
    REPLAY_FAST    /* the fast path, or a usage error saying why it cannot be taken */
} ReplayEngine;

/* How the backward pass overlaps the gradients' collectives (--overlap). */
typedef enum {
    OVERLAP_NONE,   /* compute, then every collective (today's runs without a profile) */
    OVERLAP_DDP,    /* PyTorch DDP: buckets in reverse layer order, each reduced once full */
    OVERLAP_TENSOR, /* no overlap, and each tensor's collectives on their own (the Accordion
                       authors' code: one allreduce per tensor after the backward) */
    OVERLAP_LAYER   /* the backward hands gradients over as DDP's does, and the next step's
                       forward of layer l waits only for layer l's update (a per-layer optimiser
                       step, as ByteScheduler and P3 hook it), so what is reduced last overlaps
                       the next forward (sim/driver/sched_run.c) */
} Overlap;

/* Sharded data parallel (--sharding, issue 50; ZeRO, Rajbhandari et al., SC 2020, section 5;
 * PyTorch FSDP, Zhao et al., VLDB 2023): what each GPU keeps a shard of. The small model's update
 * is DDP's in every mode (sharding moves the same sums, not other ones), so only the price and
 * the memory change. */
typedef enum {
    SHARD_NONE,  /* DDP: every GPU holds everything, gradients allreduced */
    SHARD_ZERO1, /* optimizer state sharded: reduce-scatter, sharded step, all-gather */
    SHARD_ZERO2, /* and gradients (FSDP SHARD_GRAD_OP): the same messages as ZeRO-1 */
    SHARD_ZERO3, /* and parameters (FSDP FULL_SHARD): gathered before forward and backward */
    SHARD_HYBRID /* ZeRO-3 inside a node, replicated across nodes (FSDP HYBRID_SHARD) */
} Sharding;

/* ZeRO++'s quantized collectives under --sharding zero3 (--zeropp, issue 50 item 4; Wang et al.,
 * "ZeRO++", 2023, arXiv:2306.10209; zeropp.c, docs/guide/sharded.md). All zero: off. */
typedef struct {
    int qwz_bits; /* qwZ: the gathered weights block-quantized to 8 or 4 bits; 0: off */
    int hpz;      /* hpZ: a secondary shard in each node; the backward's gather inside it */
    int qgz;      /* qgZ: int4 gradients through a hierarchical all-to-all reduce-scatter */
} ZeroPP;
/* How ZeRO-3's all-gathers and reduce-scatters are scheduled (issue 50 item 2; shard_sched.c,
 * docs/guide/sharded.md): FSDP's knobs as schedule parameters over the step plan. Zero is every
 * default, which is PyTorch FSDP's (torch/distributed/fsdp/fully_sharded_data_parallel.py,
 * FullyShardedDataParallel.__init__: backward_prefetch=BACKWARD_PRE, forward_prefetch=False,
 * limit_all_gathers=True with _limiter_utils.py's _max_num_inflight_all_gathers = 2;
 * ShardingStrategy.FULL_SHARD reshards after the forward; one process group for both
 * collectives) but for the unit: FSDP wraps nothing without an auto_wrap_policy, bellows wraps
 * each layer (transformer_auto_wrap_policy's choice for a transformer's blocks). */
typedef enum {
    FSDP_PREFETCH_PRE,  /* BACKWARD_PRE: the next unit's all-gather before this one's gradients */
    FSDP_PREFETCH_POST, /* BACKWARD_POST: after them, before this unit's reduce-scatter */
    FSDP_PREFETCH_NONE  /* none: each all-gather when its unit's backward starts */
} FsdpPrefetch;

#define FSDP_DEFAULT_LIMIT 2 /* _limiter_utils.py: _max_num_inflight_all_gathers */
#define FSDP_NO_LIMIT      (-1)

typedef struct {
    int unit_layers;        /* --fsdp-unit N: N layers with parameters a unit; 0: one a layer */
    int unit_blocks;        /* --fsdp-unit block: one a block (layers named PREFIX.K.*) */
    double unit_min_params; /* --fsdp-unit size:MB: fp32 MB a unit at least (as
                             * size_based_auto_wrap_policy's min_num_params), in parameters */
    FsdpPrefetch backward;  /* --backward-prefetch */
    int forward;            /* --forward-prefetch on */
    int limit;              /* --limit-all-gathers: 0 the default (2), FSDP_NO_LIMIT none */
    int keep_after_forward; /* --reshard-after-forward off (SHARD_GRAD_OP-like) */
    int rs_own;             /* --rs-comm own: the reduce-scatters on a communicator of their own */
} FsdpSched;

/* Memory per GPU of the workload's training state (shard_mem.c): bytes. */
typedef struct {
    double params, grads, optimizer, gathered, total;
    double secondary; /* --zeropp hpz: the secondary shard of the fp16 parameters, 2 Psi / G */
    double capacity;  /* the GPU's memory (its profile), 0 when the cluster has none */
} ShardMemory;

/* PyTorch DDP's bucket sizes (torch/nn/parallel/distributed.py: bucket_cap_mb = 25, MiB, and
 * dist._DEFAULT_FIRST_BUCKET_BYTES = 1 MiB for the first bucket, the last layers' gradients). */
#define DRIVER_BUCKET_BYTES       (25.0 * 1024 * 1024)
#define DRIVER_FIRST_BUCKET_BYTES (1.0 * 1024 * 1024)

typedef struct {
    const ModelOps *model;
    ModelConfig mc;
    const Dataset *train, *test;
    TrainConfig tc; /* epochs, per-worker batch, seed, optimiser, schedule */
    Cluster cluster;
    CollAlgo algo;
    CollBackend backend;
    /* --topology islands with --allreduce ring given: one flat ring over every rank, crossing the
     * WAN between islands (islands.c); 0: the hierarchical allreduce over the islands */
    int islands_flat;
    const char *compressor;       /* spec, "name[:k=v,...]" */
    const char *policy;           /* spec */
    int eval_every;               /* steps between evaluations; 0: at the end of every epoch */
    int eval_sparse_after_target; /* once the target is reached, evaluate at epoch ends only:
                                     the step evaluations exist to time the crossing */
    double target_accuracy;       /* time-to-accuracy threshold; 0: none */
    int stop_at_target;           /* stop once the target is reached */
    double jitter_sigma;          /* lognormal compute-time noise (mean 1); 0: none */
    const double *slowdown;       /* [cluster.workers] compute-time multipliers, or NULL */
    /* stragglers (--straggler-cv): each step's compute time of a worker varies with this
     * coefficient of variation, and a synchronous step waits for the slowest of the priced
     * workers (driver_straggler_factor); 0: none */
    double straggler_cv;
    int progress;             /* progress line on stderr */
    const char *label;        /* for the progress line */
    float *params_out;        /* [n_params] or NULL: the final model (tests) */
    const char *record_trace; /* write the run's gradient trace here (traces/trace.h), or NULL */
    /* record each step's decision's fingerprint in it (a sweep's training run: its priced twins
     * check that a price-blind policy decides the same at their price) */
    int record_decisions;
    const char *model_name; /* for the trace's header */
    /* Replay: the trace's steps, losses, norms and evaluations stand in for training; the model
     * is the trace's layer table, gradients are fixed random tensors scaled to the trace's norms
     * (so compressors and collectives move what they would), and accuracy comes from the trace.
     * model, mc, train and test are then unused. */
    const Trace *replay;
    ReplayEngine replay_engine;
    /* A priced run (bellows sweep: train once, price the rest): replay is the trace that a live
     * run of the same flags but for the price recorded (a run of a policy that cannot see the
     * price, bellows_policy.h), and the run is that live run on this scenario's cluster and
     * costs. The model, data, schedule and evaluations are the flags' (model, mc, train and test
     * stay set); the policy is shown what training would show it, decides what it decided there,
     * and the results are written as a live run's, which they are bit for bit (tested). */
    int priced;
    /* A replay of a policy's own trace (bellows compare --traces): each step's decision is the
     * trace's recorded one (its levels, or its averaging and period), not the policy's; the
     * policy (a stand-in of the trace's mode) only sets the run up. */
    int follow_decisions;
    int simgrid_cfg; /* --cfg= options given to SimGrid (they may change simulated times) */
    char *const *simgrid_args; /* [n_simgrid_args] the --cfg= and --log= options, as given (the
                                  --cfg= ones go into summary.json's scenario) */
    int n_simgrid_args;
    /* Threads computing the workers' real gradients of a step in parallel (capped at the
     * workers; a replay needs none); <= 1: one at a time in the actors. Results do not depend
     * on it. */
    int compute_threads;
    /* Gradient mode keeps one replica (parameters and optimiser) that every worker shares,
     * since they would all apply the same decoded mean; 1: every worker keeps its own, as
     * periodic mode does (the same results, bit for bit; tests compare the two). */
    int per_worker_replicas;
    /* A ring or analytic run reduces a step's data first, on a zero-time mirror, and simulates
     * its messages after (the next gradients meanwhile on the pool); 1: data and messages
     * together, as the other algorithms do (the same results, bit for bit; tests compare). */
    int direct_collectives;
    /* Costs (sim/driver/cost.c). workload: the real model whose tensors and per-layer compute
     * are charged (NULL: the small model's own). With a workload, or with overlap DDP, a step
     * is costed layer by layer: forward, backward in reverse, the collectives of the real
     * tensors at the levels of the small layers they follow (overlapped with the backward in
     * buckets under DDP), the compressors' encode/decode and the optimiser on the GPU. With
     * neither, a step is charged as before: flops_per_sample x b, then the small model's
     * collectives. */
    const Workload *workload;
    Overlap overlap;
    Sharding sharding;   /* --sharding (default SHARD_NONE) */
    ZeroPP zeropp;       /* --zeropp (zero3 only; default all off) */
    FsdpSched fsdp;      /* ZeRO-3's schedule (--fsdp-unit, --backward-prefetch, ...) */
    double bucket_bytes; /* DDP bucket cap; 0: DRIVER_BUCKET_BYTES */
    /* What is sent when (schedules/bellows_schedule.h): NAME[:k=v,...] or a plugin's path; NULL
     * or "fifo": DDP's buckets as they fill, priced by cost.c as before schedules existed */
    const char *schedule;
    /* images per GPU a costed step's compute is charged for at the configured batch (0: the
     * small model's per-worker batch, tc.batch); a step of b samples is charged price_batch x
     * b / tc.batch (a policy that changes the batch changes it in proportion) */
    int price_batch;
    /* GPUs each step's communication is priced for (--price-workers; analytic collectives):
     * the small model trains on cluster.workers, and its collectives take the closed-form time
     * of the same cluster with this many GPUs (coll_comm_set_price); 0: cluster.workers */
    int price_workers;
    int free_compression; /* charge no encode/decode time */
    /* What the implementation pays beside the roofline (sim/costs/): NULL or `ideal`, the
     * roofline (the runs as before profiles existed). Any other profile costs every step (as a
     * workload does, with the small model's own profile when none is given), prices the
     * compressors' stages, the optimiser and each collective call from it, and runs the links
     * at its share for the network kind `transport` (cluster.link_share, set by the driver). */
    const CostProfile *costs;
    CostNet transport;
    /* periodic mode: average the momentum buffers with the parameters, in one allreduce of
     * 2 n_params floats (driver_average_floats); gradient mode keeps the buffers equal */
    int average_momentum;
    /* --timeline: Chrome trace events of the steps [timeline_lo, timeline_hi] (hi < 0: all) */
    const char *timeline;
    long timeline_lo, timeline_hi;
} RunConfig;

typedef struct {
    double sim_time_s;
    int epoch; /* completed epochs (fractional progress not shown) */
    long step; /* steps done */
    double train_loss, test_loss, test_accuracy;
    double bytes_per_worker; /* rank 0's bytes on the wire so far (evals.csv: bytes_rank0) */
    double wan_bytes;        /* islands: RunResult.wan_bytes so far (evals.csv: wan_bytes) */
    char state[64];          /* the policy's describe() */
} EvalRow;

typedef struct {
    long step;
    int epoch;
    int batch; /* global */
    double lr, loss;
    double end_s;                     /* simulated time at the end of the step (rank 0) */
    double compute_s, comm_s, wait_s; /* rank 0's, this step */
    double compress_s;                /* rank 0's encode/decode time not hidden by overlap */
    double bytes;                     /* rank 0's bytes on the wire so far */
    double wan_bytes;                 /* islands: RunResult.wan_bytes so far (all ranks) */
    int averaged;
    double variance;   /* parameter variance at this step's averaging */
    char schedule[64]; /* a scheduled step's schedule state (describe); "" otherwise */
    double level_mean; /* gradient mode: the mean decided level over matrix layers (0 dense) */
    int period;        /* periodic mode: the averaging period in force */
    char state[64];
} StepRow;

typedef struct {
    const char *status; /* "completed", "diverged", "reached_target" */
    char message[512];  /* why it diverged (DRIVER_DIVERGENCE_FACTOR) */
    /* periodic mode: what the policy asked to exchange and never did in the whole run ("" when
     * all was; outer_check_exchanged): such a run is no result of its policy, and says so */
    char never_exchanged[320];
    EvalRow *evals;
    int n_evals;
    StepRow *steps;
    long n_steps;
    /* means over workers */
    double sim_time_s, compute_s, communication_s, wait_s;
    double compression_s;            /* encode/decode not hidden by overlap (costed steps only) */
    double bytes_per_worker;         /* sent on the wire, as the collective algorithms move them */
    double payload_bytes_per_worker; /* handed to the collectives (encoded sizes) */
    double final_accuracy, best_accuracy;
    double time_to_accuracy_s; /* NAN when never reached */
    int epochs_done;
    long averagings;
    /* --topology islands: bytes every message between two islands put on the WAN, summed over
     * all ranks (transfer-level collectives: each message counted once, as sent) */
    double wan_bytes;
    double wan_peak_step_bytes; /* the most WAN bytes of one step: the peak the WAN must carry */
    /* --sharding on a costed step: the bytes one node sends across its boundary in a step of
     * the plan (zpp_cross_node_bytes; the last step's), nodes of --gpus-per-node GPUs */
    double cross_node_bytes_per_step;
    size_t n_params;
    double flops_per_sample;
    int policy_mode;         /* PolicyMode */
    int accuracy_from_trace; /* replay: accuracies are the trace's, not re-simulated (2: the
                                policy's own trace, whose decisions it follows) */
    Cluster cluster;         /* as loaded, for the files (the run reads its own, not this copy) */
    /* Accordion's signal, for policies that read gradient norms: per epoch, the whole model's
     * norm of the epoch's mean gradient, sqrt(sum over layers of the workers' mean of
     * ||(1/T) sum_t g_t||^2); NULL otherwise */
    double *epoch_norm;
    long *epoch_last_step; /* the step that ended each of those epochs */
    int *epoch_index;      /* and its number */
    int n_epoch_norms;
    /* Largest |x_w - x_0| over workers and parameters at the end; with a shared replica, the
     * largest difference between a worker's decoded mean and the one applied, over all steps
     * (what would have made per-worker replicas differ; a step sent all dense on a communicator
     * that sums once has one mean, stored once, and nothing to compare). 0 in gradient mode. */
    double replica_max_diff;
    double wall_model_s;    /* wall seconds inside the models' own math (forward, backward,
                               optimiser, evaluation), summed over the threads that did it;
                               for benchmarks, not written out */
    double wall_compress_s; /* wall seconds inside the compressors' own math, summed over the
                               workers (compress_math_seconds); for benchmarks, not written */
    double wall_policy_s;   /* wall seconds inside the math on the real gradients that the
                               policy reads (the per-layer norms and the epoch's running sum
                               Accordion reads, as a real job computes them every step; also
                               for --record-trace), summed over the threads; for benchmarks,
                               not written */
    char policy_spec[256], compressor_spec[256];
    const char *workload; /* the profile's name, or NULL (the small model's own costs) */
    const char *overlap;  /* "none" or "ddp" */
    size_t workload_params;
    int buckets; /* DDP buckets of a step (0 without overlap) */
    /* the schedule with every option spelled out ("fifo" when none was given), and for a
     * scheduled step (driver_scheduled) its partitions handed out per step, on average */
    char schedule[512];
    char schedule_state[64]; /* a scheduled run's schedule as its last step had it (describe) */
    int scheduled;
    double partitions_per_step;
    /* A file the run wrote beside its results that could not be written (--record-trace,
     * --timeline: a full disk, say): the run's results stand, and the caller, once it has
     * written them, fails with this message; "" when all went well */
    char output_error[512];
    const char *replay_engine;   /* a replay: "fast" or "actors"; NULL for live training */
    char replay_engine_why[160]; /* a replay with actors: why not the fast path */
} RunResult;

/* Floats moved per parameter at a parameter averaging: 2 when the momentum buffers are averaged
 * too (--average-momentum with a momentum), else 1. */
static inline size_t driver_average_floats(const RunConfig *cfg)
{
    return cfg->average_momentum && cfg->tc.sgd.momentum > 0 ? 2 : 1;
}

/* Checks the policy and compressor specs against the model and cluster, and the cost profile
 * against what the run needs (usage errors), without simulating anything. Run it before
 * creating any output. */
int driver_check(const RunConfig *cfg, BwError *err);
/* Stragglers (--straggler-cv cv): a worker's step compute time is normal of mean mu and
 * standard deviation cv mu, and a synchronous step waits for the slowest of n workers. The
 * maximum of n such draws is sampled directly by the inverse CDF of the maximum,
 * M = 1 + cv Phi^-1(u^(1/n)), so it costs O(1) at any n; clamped at zero. Returns M, the step's
 * compute multiplier, for u in (0, 1). The normal law of step times is an approximation
 * (/work/shared/REFERENCES.md, "Horovod and stragglers"); no default cv is measured. */
double driver_straggler_max(double cv, double n, double u);
/* This step's multiplier for the run (1 without stragglers): driver_straggler_max at the priced
 * workers (price_workers or cluster.workers) and a u drawn from the run's seed and the step
 * alone, so every worker and every way of pricing a step (actors, the scheduled engine, the
 * fast replay) sees the same slowest worker. */
double driver_straggler_factor(const RunConfig *cfg, long step);
/* Whether every step is costed layer by layer (cost.c): a workload, an overlap, or a cost
 * profile other than ideal. */
int driver_costed(const RunConfig *cfg);
/* Whether every step is scheduled (sim/driver/sched_run.c): a --schedule other than fifo, or
 * --overlap layer. Periodic policies average parameters without a schedule. */
int driver_scheduled(const RunConfig *cfg);
/* The samples per worker a costed step of b samples charges compute for (price_batch). */
int driver_price_batch(const RunConfig *cfg, int b);
/* The memory the run will take, estimated (bytes; 0 if unknown); *machine: physical memory. */
double driver_memory_bytes(const RunConfig *cfg, double *machine);
/* Whether a replay of cfg's training prices it as the live run: not when its policy's outer
 * steps overlap inner steps (Streaming DiLoCo's tau > 0, eager updates) and the replay would
 * take the fast path, whose closed form does not price the overlap (a plugin's such policy; the
 * built-ins' replays take the actors, driver_replay_fast, whose outer lanes price it as the live
 * run, outer_lane.c); a sweep trains such a policy in every scenario. */
int driver_replay_exact(const RunConfig *cfg);
/* The kind of cfg's policy, as the run will create it (the compatibility table's, sim/cli/
 * compat.def): gradient, periodic, outer steps (DiLoCo's) or eager outer steps. *rc: BW_OK, or
 * the policy's or model's own failure (then gradient). */
typedef enum {
    DRIVER_POLICY_GRADIENT,
    DRIVER_POLICY_PERIODIC,
    DRIVER_POLICY_OUTER,
    DRIVER_POLICY_EAGER_OUTER
} DriverPolicyKind;
DriverPolicyKind driver_policy_kind(const RunConfig *cfg, BwError *err, int *rc);
/* The wall time the run will take on this host, estimated (seconds; 0 if unknown) from the
 * point-to-point messages SimGrid will simulate (*messages) and the real gradients it will
 * compute; constants measured in tests/perf/README.md. */
double driver_wall_estimate_s(const RunConfig *cfg, double *messages);

/* Replay: whether driver_run takes the fast path, which needs no SimGrid engine, no actors, no
 * payloads and no compressor math: each step costs the trace's compute time plus the analytic
 * collectives' closed-form times for the messages the compressor would send at the decided
 * levels (compress_plan, coll_charge_*). It gives the actors' results (tests/test_trace_replay.c)
 * when every worker is the same: analytic collectives, no jitter, one slowdown for all, a
 * generated platform, no --cfg= options for SimGrid. Returns 1 if so; else 0, with why (when
 * not NULL) saying what prevents it. */
int driver_replay_fast(const RunConfig *cfg, char *why, size_t n);

/* The order in which a live run adds its workers' gradients (and averages their parameters):
 * "rank" (rank 0's, then + rank 1's, ...: the analytic backend, and the zero-time reduction of
 * every costed step, --workload or --overlap), "ring" (a transfer-level ring's order), or another
 * transfer-level algorithm's ("halving-doubling", "tree", "hierarchical/G" for G GPUs a node);
 * across islands ", islands transfer" or ", islands analytic" follows (the outer exchanges').
 * Floating-point addition is not associative: runs that add in different orders differ in the
 * last bits of their gradients, so in everything after. */
void driver_sum_order(const RunConfig *cfg, char *buf, size_t n);

/* Runs the simulation. SimGrid must be initialised (engine_init) and nothing loaded yet: once
 * per process (not needed when driver_replay_fast says so). BW_OK also when training diverged
 * (res->status says so); BW_ERUNTIME or BW_EUSAGE on failures, with err set. */
/* What the published validation rows are compared on (costs_setting_distance): the workload's
 * family, the profile's framework, the transport and its sockets, the NIC's rate, the GPUs per
 * NIC and the GPU of cfg (results.c). */
void driver_cost_setting(const RunConfig *cfg, CostSetting *s);

int driver_run(const RunConfig *cfg, RunResult *res, BwError *err);
void driver_result_free(RunResult *res);

/* The cluster as cfg's run loads it into SimGrid: cfg->cluster with its links at the cost
 * profile's share for its transport (Cluster.link_share, intra_link_share). */
void driver_cluster_loaded(const RunConfig *cfg, Cluster *out);
/* The allreduce's share of the cluster's NIC over the allgather's (costs_link_share at c's
 * bandwidth): how many times its bytes a dataless allgather's message takes on the wire. */
double driver_allgather_factor(const CostProfile *prof, const RunConfig *cfg, const Cluster *c);

/* ---- several jobs in one simulation (bellows cluster) ----
 * Each job is a run with its own dynamics, policy, seeds and results; all are actors of one
 * SimGrid engine, on hosts of their own, so their messages share the links as SimGrid shares
 * them. The caller loads the cluster's platform (engine_load_cluster), creates every job, starts
 * them, runs the engine once (simgrid_run) and finishes each. A job's figures (steps, evaluations,
 * time to accuracy, sim_time_s) are in its own simulated time, from its start; its timeline
 * (--timeline) in the engine's. A run of its own is a job placed on ranks 0..P-1 at time 0. */
typedef struct Pool Pool;
typedef struct DriverPlace {
    const int *gpus; /* [cfg->cluster.workers]: rank r runs on the loaded cluster's rank gpus[r] */
    double start_s;  /* the engine's clock when its workers start */
    int tag;         /* > 0, different for every job: its collectives' mailboxes (coll.h) */
    Pool *pool;      /* threads shared by the jobs (gradients, sums), or NULL: its own */
    CollWireFn wire; /* sees each message of its collectives (coll_comm_set_wire), or NULL */
    void *wire_arg;
    CollFabricFn fabric; /* a priced job's flows on the shared links (coll_comm_set_fabric) */
    void *fabric_arg;
    int layout; /* a priced job's ring as placed (coll_comm_set_layout), or 0: in rank order */
} DriverPlace;
typedef struct DriverRun DriverRun;
/* Checks cfg (driver_check) and creates the job; place must outlive it. On failure *out may
 * hold a partial job: driver_job_free it. */
int driver_job_create(const RunConfig *cfg, const DriverPlace *place, RunResult *res,
                      DriverRun **out, BwError *err);
void driver_job_start(DriverRun *run);               /* its actors; simgrid_run then runs them */
int driver_job_finish(DriverRun *run, BwError *err); /* once simgrid_run has returned */
void driver_job_free(DriverRun *run);                /* NULL is a no-op */

/* Memory per GPU of cfg's workload under sharding sh (shard_mem.c); 0 without a workload. Its
 * model in words: ZeRO's mixed precision at --precision bf16 and fp16, fp32 state otherwise. */
int driver_shard_memory(const RunConfig *cfg, Sharding sh, ShardMemory *m);
const char *driver_shard_memory_model(const RunConfig *cfg);
/* A usage error when it does not fit the GPU's memory; the mode's name. */
int driver_check_shard_memory(const RunConfig *cfg, BwError *err);
const char *driver_sharding_name(Sharding sh);
/* --zeropp's value (zeropp.c): a comma-separated list of qwz[:int8|int4] (qwz alone: int8), hpz
 * and qgz; a usage error naming --zeropp otherwise. */
int zeropp_parse(const char *spec, ZeroPP *z, BwError *err);
/* --zeropp against the rest of the run (zero3, a costed step): a usage error naming --zeropp. */
int zeropp_check(const RunConfig *cfg, BwError *err);
/* Whether any of --zeropp's collectives is on. */
int zeropp_on(const ZeroPP *z);
/* The canonical spelling of z ("qwz:int8,hpz,qgz"), "" when off, into buf. */
const char *zeropp_name(const ZeroPP *z, char *buf, size_t n);
/* The activations a GPU keeps for the backward at its batch (--price-batch, else --batch), in
 * bytes: an estimate from the workload profile's weighted layers (act_mem.c says what it counts
 * and what not); 0 without a workload or with a measured one. */
double driver_activation_bytes(const RunConfig *cfg);
/* shard_estimate.c, for estimate.c: a sharded step's collectives in closed form, n the model's
 * fp32 bytes and c the cluster at the profile's link shares (driver_cluster_loaded): seconds a
 * step (0 under --sharding none); and its calls, replacing the dense allreduce estimate.c counts
 * (left as they are under --sharding none). */
double estimate_shard_comm_s(const RunConfig *cfg, const Cluster *c, double n);
void estimate_shard_calls(const RunConfig *cfg, double *allreduces, double *allgathers);
/* Bytes a value of a sharded step's collectives: 2 at --precision bf16 or fp16, else 4. */
size_t driver_shard_elem_bytes(const RunConfig *cfg);

#endif
