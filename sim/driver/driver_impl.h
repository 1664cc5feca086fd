/* driver_impl.h: what the files of sim/driver/ share, and nothing else includes: one run's state
 * (DriverRun), its workers and step, and the files' functions. Nothing is global; everything
 * hangs off the DriverRun. Actors run one at a time on one thread (SimGrid's contexts), so the
 * shared state needs no locks: only simulated time orders the workers. The exceptions, with a
 * pool (--compute-threads): a worker's forward/backward runs on a pool thread from its
 * submission (before sg_actor_execute, or early: after the previous step's data, while its
 * messages are replayed, worker_gradient_early) until its wait (after sg_actor_execute, or by
 * the rendezvous' leader), and touches only that worker's gradients, state, loss, norms, gsum,
 * idx and wall_model_s, the scratch of the thread it runs on (its ComputeSlot), and the
 * read-only dataset and parameters; the compressors' math between collectives runs as pool
 * jobs too (comp_parallel, on a zero-time communicator), each touching only its worker's
 * compressor and gradients; the collectives' sums, the shared update and the evaluations
 * spread their items over the pool (pool_for) while the calling actor waits. */
#ifndef BELLOWS_DRIVER_IMPL_H
#define BELLOWS_DRIVER_IMPL_H

#include <gsl/gsl_rng.h>
#include <simgrid/barrier.h>
#include <simgrid/semaphore.h>

#include "driver.h"
#include "compress.h"
#include "pool.h"
#include "step_plan.h"
#include "optim.h"
#include "policy.h"
#include "schedule.h"
#include "timeline.h"
#include "trace.h"
#include "workload.h"

/* How a step's rendezvous left the run: go on, or why it stops. STOP_DONE: the step just
 * decided is the last one, so it still runs; the others stop the workers at once. */
typedef enum { STOP_NO, STOP_DONE, STOP_DIVERGED, STOP_TARGET, STOP_ERROR } StopReason;

static inline int stop_now(StopReason s)
{
    return s == STOP_DIVERGED || s == STOP_TARGET || s == STOP_ERROR;
}

typedef struct DriverRun DriverRun;
typedef struct OuterLane OuterLane;     /* outer_lane.c */
typedef struct SchedEngine SchedEngine; /* a scheduled step's (sched_impl.h) */
typedef struct StepExec StepExec;       /* how a costed step is priced (exec_impl.h) */

/* What a costed step's time went to, besides compute (cost.c). */
enum { COST_COMPRESS, COST_COMM, COST_WAIT, COST_KINDS };

/* A stretch of a worker's communication stream doing one kind of work. */
typedef struct {
    double t0, t1;
    int kind;
} CostSpan;

/* A costed run's plan (cost.c): the real model's tensors as views, the small layer each follows,
 * this step's level of each, DDP's buckets, and the zero-time communicator of the real update. */
typedef struct {
    const Workload *wl;
    Workload *own; /* the small model's own profile, when no --workload was given */
    LayerView *views;
    int *follows;   /* [n_tensors]: small layer, or -1 (a vector: dense) */
    double *levels; /* [n_tensors]: this step's (cost_decided) */
    int *order;     /* [n_tensors]: tensor indices in backward (reverse) order */
    int n_buckets;
    int *bucket_start; /* [n_buckets + 1]: bucket k is order[bucket_start[k] .. [k+1]) */
    int *bucket_layer; /* [n_buckets]: the layer after whose backward bucket k is full */
    int ddp;           /* overlap ddp in gradient mode (periodic averaging cannot overlap) */
    double peak_ratio; /* measured profiles: their GPU's peak over the simulated one's */
    double opt_flops, opt_bytes; /* the optimiser's step over the real parameters */
    Comm *data;                  /* the small model's real reduction, at no simulated time */
    sg_bar_t stream_bar;         /* the streams' rendezvous before each bucket's collectives */
    /* a cost profile other than ideal (RunConfig.costs), or NULL: the roofline */
    const CostProfile *prof;
    StepPlan plan; /* this step's (step_plan.h): built by cost_decided, timed by the clock */
    /* how the step is priced (exec_impl.h), chosen by cost_create: exec_ddp (cost.c), exec_sched
     * or exec_fast */
    const StepExec *exec;
    /* exec_sched's state (a schedule other than fifo, or --overlap layer, in gradient mode:
     * partitions, priorities, credit, layer-wise dependencies; ddp is 0); NULL otherwise */
    SchedEngine *sched;
    Comm *fsdp_rs_comm; /* ZeRO-3's reduce-scatters' own communicator (--rs-comm own), or NULL */
} CostModel;

/* A worker's communication stream under DDP's overlap (cost.c's stream actor, exec_ddp). */
typedef struct {
    sg_sem_t ready;  /* a bucket is full (released once per bucket) */
    sg_sem_t done;   /* the stream has reduced the step's last bucket */
    int next, quit;  /* the next bucket it reduces; told to end */
    double hvd_last; /* a Horovod plan's: its thread's last cycle start (the backward's start) */
} DdpStream;

/* One simulated GPU: its replica, optimiser, compressor and buffers, what it reports at the
 * rendezvous (loss, norms), and its own books of where its time went. With shared replicas
 * (DriverRun.shared.replica) its model borrows the one set of parameters and its optimiser is
 * unused; its own are the gradients and the state (batch norm's running statistics). Its model
 * never computes a training step (a ComputeSlot's does, on its buffers), so it holds no
 * activations; only rank 0's evaluations give it some. */
typedef struct {
    DriverRun *run; /* the simulation it belongs to */
    int rank;
    Model *model;
    Sgd opt; /* per-worker replicas only */
    Compressor *comp;
    gsl_rng *rng; /* compute-time jitter */
    int *idx;
    int cap;          /* samples idx holds */
    float *before;    /* periodic: parameters before averaging */
    float *gsum;      /* the local gradients summed over the epoch so far (Accordion's signal) */
    float *gtemplate; /* replay: a fixed random gradient, each layer of norm 1 */
    double loss;
    double *norms; /* [n_layers] */
    double compute_s, comm_s, wait_s;
    double step_compute_s, step_comm_s, step_wait_s;
    double straggler_wait_s; /* this step's wait for the slowest worker (worker_compute) */
    double end_s;            /* when its last step ended: until the run's end it waits */
    double sq_dist;          /* periodic: ||x_w - xbar||^2 at the last averaging */
    PoolJob job;             /* its gradient on the pool (run->pool), submitted for job_b samples */
    int job_b;
    double wall_model_s;  /* wall seconds in its models' math (RunResult.wall_model_s) */
    double wall_policy_s; /* and in its gradients' norms and running sum (wall_policy_s) */
    int job_pending;      /* its gradient job is on the pool and not yet waited for */
    long early_step;      /* the step whose gradient went on the pool early (run->mirror), or -1 */

    /* costed steps (cost.c) */
    double compress_s, step_compress_s;
    double cost_mult;      /* this step's slowdown x jitter */
    long cost_step;        /* the step being costed (the stream's timeline events) */
    DdpStream stream;      /* exec_ddp under --overlap ddp (cost.c) */
    int comm_busy;         /* the worker's collectives in flight (cost_comm_begin) */
    sg_exec_t interfering; /* while comm_busy: the collectives' share of the GPU */
    CostSpan *spans;       /* what the stream did this step */
    int n_spans, cap_spans;
    float *zpp_w; /* --zeropp qwz: the gathered weights its forward and backward use (zeropp.c) */
    struct FsdpLanes *fsdp; /* ZeRO-3's collective lanes under exec_ddp (cost_shard.c) */
} Worker;

/* The scratch of one computing thread (pool.h's index: 0 the actors', 1 .. n-1 the pool's): a
 * model whose activations serve every gradient the thread computes, borrowing for each the
 * parameters, gradients and state of the worker it computes for, and the batch it gathers. */
typedef struct {
    Model *model;
    float *x;
    uint8_t *y;
    int cap; /* samples x and y hold */
} ComputeSlot;

/* What a step is: fixed at the previous step's rendezvous, copied by each worker at its start. */
typedef struct {
    long step;
    int epoch, pos, b; /* pos: samples of the shard already used this epoch; b: per worker */
    int epoch_start;
    double lr;
} StepState;

/* --record-trace: a step's record waits for the next rendezvous, which knows the variance
 * measured at its averaging; an evaluation that follows it waits with it. */
typedef struct {
    TraceWriter *writer; /* NULL: no trace is recorded */
    TraceStep pending;
    int has_pending;
    TraceEval queued_eval;
    int has_queued_eval;
} TraceRecorder;

/* Gradient mode's one shared replica (unless cfg->per_worker_replicas): every replica applies
 * the same decoded mean, so they are bit-identical and kept once: replica owns the parameters
 * every worker's model borrows, opt is their one optimiser, and the first worker to hold the
 * step's decoded mean applies it (updated_step). replica NULL: every worker keeps its own
 * (periodic mode). worker.c's shared_update; driver.c makes and frees them. */
typedef struct {
    Model *replica;
    Sgd opt;
    long updated_step; /* the last step whose update was applied to the shared replica */
    float *applied;    /* that update's decoded mean, which every worker's must equal (a dense
                          step's one mean itself on a communicator that sums once) */
} SharedReplica;

/* Periodic mode: the averaging of the workers' parameters, its variance, and the evaluation
 * of the replicas' mean (worker.c, rendezvous.c, record.c). */
typedef struct {
    long averaged_step; /* the last step whose averaging is done for every worker */
    double *eval_acc;   /* sum of the replicas' parameters */
    int eval_deposits;  /* replicas added to eval_acc this step */
    int avg_deposits;   /* replicas that measured their distance this step */
    int averaged_prev;  /* the previous step averaged, with this variance */
    double variance_prev;
} PeriodicAveraging;

/* A replay's cursor in its trace (rendezvous.c, run_info.c). */
typedef struct {
    double epoch_first_lr; /* the lr at the current epoch's first step */
    double trace_variance; /* the trace's latest parameter variance */
    long eval_cursor;      /* the first trace evaluation not yet passed */
} ReplayCursor;

/* Layer-wise steps (sched_step.c): the evaluation recorded after step eval_pending_step (row
 * eval_pending_row, -1: none), to be stamped when that step's update is applied, and whether
 * it set the time to accuracy (exec_sched's evaluated). */
typedef struct {
    long eval_pending_step;
    int eval_pending_row, eval_pending_tta;
} EvalStamps;

/* Where the run sits in its engine: a job of several (driver_job_create), or a run of its own
 * (place NULL). */
typedef struct {
    const DriverPlace *place;
    double start_s;   /* the engine's clock at the job's start (0 for a run of its own) */
    double end_clock; /* the engine's clock when its last actor ended */
    int actors_ended; /* worker actors that ran to their end (all P, unless SimGrid stalled) */
} JobPlacement;

/* One simulation. */
struct DriverRun {
    /* fixed for the run */
    const RunConfig *cfg;
    RunResult *res;
    /* the cluster as loaded (a --platform file's measured routes filled in, a job's ranks
     * measured on the engine's): what the run's files report is a copy, RunResult.cluster */
    Cluster cluster;
    int P;
    int shard;      /* samples per worker per epoch */
    int b0;         /* starting per-worker batch */
    int periodic;   /* the policy's mode is POLICY_PERIODIC */
    int want_norms; /* the workers compute their gradient norms (live runs that need them) */
    int fast;       /* the fast replay (driver_replay_fast): no SimGrid, no actors */
    Worker *w;      /* [P] */
    SharedReplica shared;
    ComputeSlot *slots; /* [n_slots]: live runs, one per computing thread */
    int n_slots;
    Comm *comm;
    /* runs on a ring or the analytic backend, without costed steps or a trace replay: the
     * step's data goes through this mirror of comm first and its messages are replayed on comm
     * after (coll_comm_create_mirror), so the next step's gradients can be on the pool while the
     * actors simulate them; else NULL */
    Comm *mirror;
    Policy *pol;
    const CompressorOps *cops;
    sg_bar_t bar;
    Pool *pool; /* live runs with --compute-threads > 1: the workers' gradients; else NULL */
    int *perm;  /* live: this epoch's sample order (changed only at a rendezvous, when no
                   gradient is being computed) */

    /* the step the workers take (fixed at the previous rendezvous), and what the last
     * rendezvous set for them to read until the next one */
    StepState cur;
    int arrived;     /* workers at the rendezvous so far */
    StopReason stop; /* what the last rendezvous decided */
    int eval_due, epoch_end;
    PolicyDecision dec;
    double loss_mean;
    double loss_limit; /* a mean loss above this is a divergence (set at the first step) */
    char state[64];    /* the policy's describe() */
    double *grad_norm_rank0, *grad_norm_mean;   /* [n_layers] each, as dec.level */
    double *epoch_norm_rank0, *epoch_norm_mean; /* [n_layers] each */
    long epoch_steps;                           /* live: steps summed into the workers' gsum */
    ReplayCursor cursor;                        /* replay */
    BwError err;                                /* STOP_ERROR: why (run_fail) */
    int err_status;

    /* evaluations with actors: the untrained model at time 0; in periodic mode, the mean of
     * the replicas (gradient mode evaluates rank 0's replica) */
    Model *eval_model;

    PeriodicAveraging avg; /* periodic mode */
    /* DiLoCo's outer step (policy_outer; outer.c): theta_global, its Nesterov optimizer, the
     * outer gradient's buffer and the last step whose outer step is done; on 0: averaging */
    struct {
        int on, streaming; /* streaming: by fragments (Streaming DiLoCo) */
        int asked;         /* the policy asked for an outer step (o holds it), on or not: a fast
                            * replay asks but runs none; the decisions' fingerprint covers it */
        PolicyOuter o;
        Sgd opt;
        float *global, *delta, *acc; /* acc: the replicas' quantised outer gradients, summed */
        size_t *lo, *hi;             /* [fragments]: each fragment's parameters [lo, hi) */
        long *apply_at;              /* [fragments]: the step its last outer step applies at */
        long *exchanges;             /* [fragments]: its outer steps done */
        size_t *wl_floats;           /* [fragments] with --workload: each fragment of the workload's
                                      * layers, its quantised floats (outer_exchange_floats) */
        long step;
        OuterLane *lanes; /* [P] overlapped exchanges (outer_lane.c), or NULL: blocking ones */
        int arrived;      /* live, overlapped: the workers whose outer gradient is in the sum */
        /* eager updates (outer_eager.c): each worker's copy of theta_global, its last outer
         * gradient and outer optimizer, the last round's mean and this round's sum */
        struct OuterEager {
            int on, replicas;
            float *global, *own_prev; /* [P x n] */
            float *mean_prev, *acc;   /* [n] */
            Sgd *opt;                 /* [P] */
        } eager;
    } outer;
    /* --topology islands (islands.c): run->comm is hierarchical over the islands; in periodic
     * mode each island's ring (comm[k], its ranks' books in run->comm's) reduces the gradients
     * every step, so an island's replicas stay one replica; NULL otherwise */
    Comm **island_comm;
    long *island_step; /* [K] costed steps: the last step whose island mean is done */
    double wan_step;   /* WAN bytes since the last islands_step_done */
    int island_size;
    /* --zeropp (zeropp.c): each node's communicator (hpZ's and qgZ's intra-node collectives,
     * its ranks' books in run->comm's) and the last step whose qgZ mean is in shared.applied */
    struct {
        Comm **node;
        int G, nodes;
        long mean_step;
    } zpp;
    /* --sharding hybrid on a costed step (shard_comms.c): each node's g GPUs (node_comm[k], its
     * books in run->comm's) and each local index's ranks across the m nodes (across_comm[l],
     * books of its own, folded into run->comm's after each call); NULL otherwise */
    Comm **node_comm, **across_comm;
    int node_size;

    /* results */
    long cap_steps; /* rows res->steps and res->evals hold */
    int cap_evals;
    int target_hit;
    TraceRecorder rec;

    double now; /* the fast replay's simulated clock */

    CostModel *cost;   /* costed steps (a workload or overlap ddp); NULL: charged as before */
    Timeline *tl;      /* --timeline, or NULL */
    EvalStamps stamps; /* layer-wise steps */
    JobPlacement job;
};

/* run_info.c: what every file asks of a run (a leaf of the call graph: it calls no other file
 * of sim/driver/). driver_price_batch, driver_costed, driver_scheduled and driver_replay_fast,
 * also defined there, are driver.h's. */
/* An error raised inside an actor (a policy's or a schedule's failure or bad decision, a
 * Ctrl-C): the run stops at once (STOP_ERROR) and run_finish returns status with why's message.
 * The first error is kept; every actor that stops a run with an error calls this. */
void run_fail(DriverRun *run, int status, const BwError *why);
/* The GPUs of a node, its --gpus-per-node (1 when unset): hybrid sharding's and ZeRO++'s nodes */
int run_node_gpus(const DriverRun *run);
/* Whether the gradients pass through --compressor (neither periodic mode nor sync); the policy
 * is created. */
int run_uses_compressor(const DriverRun *run);
double run_now(const DriverRun *run); /* simulated seconds since the start */
/* Parameter servers priced with fifo's partitions in flight on the analytic backend
 * (coll_comm_set_ps_partition): --allreduce ps, --overlap ddp, fifo, --collectives analytic. */
int driver_ps_inflight(const RunConfig *cfg);
/* The host of rank w: the loaded cluster's w-th, or its place's (a job of several). */
sg_host_t run_host(const DriverRun *run, int w);
/* Starts an actor named PREFIX<w> on rank w's host, running code with data as its data. */
void run_actor_start(const DriverRun *run, int w, const char *prefix, void (*code)(int, char **),
                     void *data);
/* A worker actor has ended: the run ends with its last (end_clock). */
void run_actor_ended(DriverRun *run);
/* The model of every replica: the configured one, or a replay's stand-in (replay_model_create:
 * the trace's layer table). */
int run_model_create(const RunConfig *cfg, Model **out, BwError *err);
int replay_model_create(const TraceHeader *h, unsigned long seed, Model **out, BwError *err);
/* Samples per worker per epoch: the data's shard, or what the trace's epochs held. */
int run_shard_of(const RunConfig *cfg);
/* A worker's simulated work for a step of b samples, as flops of a host of the given speed. */
double worker_step_flops(const RunConfig *cfg, double flops_per_sample, int b, double speed_flops,
                         int rank);
/* The trace's evaluation after `steps` steps, or NULL (a cursor, steps never decreasing); a
 * trace step's global batch shared by P workers. */
const TraceEval *replay_eval_at(DriverRun *run, long steps);
int replay_per_worker_batch(const TraceStep *ts, int P);

/* driver.c: the life of a run, in parts that a run of its own (driver_run) and the jobs of one
 * engine (driver_job.c) share: res made empty for cfg; the run created (place NULL: it loads the
 * platform); the untrained model's evaluation, the first step and the actors (SimGrid then
 * runs them: simgrid_run); its books once they are done; freed (also a partial one). */
void run_result_init(const RunConfig *cfg, RunResult *res);
int run_create(const RunConfig *cfg, const DriverPlace *place, RunResult *res, DriverRun **out,
               BwError *err);
void run_begin(DriverRun *run);
int run_finish(DriverRun *run, BwError *err);
void run_free(DriverRun *run);

/* worker.c */
/* A worker's model, optimiser, compressor, buffers and random stream; worker_free undoes it,
 * also a partial one, and is a no-op on a zeroed Worker. own: the worker keeps its own replica
 * and optimiser (made from run->shared.replica, still untrained), else it shares
 * run->shared.replica. */
int worker_init(Worker *me, DriverRun *run, int rank, int own, BwError *err);
void worker_free(Worker *me);

/* outer.c: DiLoCo's outer step. outer_init reads the policy's (policy_outer) and keeps
 * theta_global from m0's untrained parameters; outer_apply, in a periodic averaging, sets the
 * worker's parameters to theta_global after the step's outer step (done once, by the first
 * worker, from its sum of the replicas' parameters) and its sq_dist to ||x_w - mean||^2. */
int outer_init(DriverRun *run, const Model *m0, BwError *err);
void outer_free(DriverRun *run);
void outer_apply(DriverRun *run, Worker *me, const float *sum, long step);
/* Streaming DiLoCo (run->outer.streaming), each step of periodic mode after the local update:
 * at a fragment's exchange, the worker's quantised outer gradient into the sum and the
 * quantised bytes on comm (a dataless allreduce, which returns once every worker's is in), the
 * fragment's outer step once; then every fragment whose application falls at this step merged
 * into the worker's parameters. Returns whether it exchanged. */
int outer_stream(Worker *me, long step, Comm *comm);
/* The floats the outer exchange (or averaging) of a costed step `step` carries for a real model
 * of n_params, once the policy decided it (run->dec; the plan's builder asks, step_plan.c,
 * before the outer step itself runs): Streaming DiLoCo's fragment exchanged at `step`, with
 * --workload the workload's own fragment (its layers split as the small model's are), quantised,
 * else n_params x the small fragment's share; otherwise (and in the fast replay, which runs no
 * outer step) n_params. Times 2 with --average-momentum. */
size_t outer_exchange_floats(const DriverRun *run, long step, size_t n_params);
/* outer_lane.c: Streaming DiLoCo's exchanges overlapped with the tau inner steps that follow
 * (tau > 0, costed steps or live ones on islands: outer_lane_wanted). A lane per worker, an
 * actor that runs the exchanges posted to it on run->comm in order; the worker waits at the
 * fragment's application for what remains (outer_lane_wait) and at its end for the rest
 * (outer_lane_drain), each returning the seconds it waited. */
int outer_lane_wanted(const DriverRun *run);
int outer_lanes_alloc(DriverRun *run, BwError *err);
void outer_lanes_free(DriverRun *run);
void outer_lanes_start(DriverRun *run);
OuterLane *outer_lane_of(const Worker *me);
void outer_lane_post(Worker *me, size_t floats, double delay_s, long step);
double outer_lane_wait(Worker *me, long step);
double outer_lane_drain(Worker *me, long step);
void outer_lane_stop(Worker *me);
/* outer_eager.c: DiLoCo's eager updates (arXiv 2502.12996, diloco:eager=1; the step itself is
 * models/optim.h's outer_eager_step); outer_eager_apply, at an averaging, the worker's. */
int outer_eager_init(DriverRun *run, const Model *m0, BwError *err);
/* driver_check's: eager=1 needs islands or costed steps (its exchange on a lane). */
int outer_eager_check(const RunConfig *cfg, const Policy *p, BwError *err);
void outer_eager_free(DriverRun *run);
void outer_eager_apply(Worker *me, long step);
/* Whether a fragment's outer step is applied at this step (outer_stream merged it). */
int outer_applies_at(const DriverRun *run, long step);
/* At the run's end: what a periodic policy asked to exchange and never did (no averaging in
 * the whole run, or a Streaming DiLoCo fragment never exchanged) into res->never_exchanged,
 * "" when all was; such a run is no result of its policy (issue 49: DiLoCo's H = 500 on 174
 * steps, 4 fragments on a policy that averages only at the period's first step). */
void outer_check_exchanged(const DriverRun *run, RunResult *res);
/* islands.c: the run's communicator on --topology islands (hierarchical, an island a "node"),
 * else coll_comm_create's; islands_init counts the WAN's bytes and, in periodic mode, makes the
 * islands' rings; islands_reduce, in periodic mode, makes the worker's gradient its island's
 * mean (a no-op without islands; on a costed step, in memory, islands_cost charging it). */
Comm *islands_comm_create(const Cluster *cl, CollAlgo algo, CollBackend backend, int flat);
int islands_init(DriverRun *run, BwError *err);
void islands_free(DriverRun *run);
void islands_reduce(Worker *me, long step);
/* Once a step's messages are all sent: its WAN bytes into RunResult.wan_peak_step_bytes, and
 * the WAN bytes so far into its row (steps.csv's wan_bytes). */
void islands_step_done(DriverRun *run);
/* A costed step's island ring (dataless, n_params floats): its simulated seconds (0 without
 * islands; the plan's tail has it only when islands_bucketed does not hold, step_plan.c). */
double islands_cost(Worker *me, size_t n_params);
/* Periodic mode on islands with --workload or --overlap: the inner step is the workload's
 * data-parallel step inside the island, its DDP buckets (and overlap) on the island's ring, as
 * the same workload's step on one island alone (the plan's buckets on PLAN_COMM_ISLAND,
 * step_plan.c); without either flag, as before, one allreduce of the parameters in the plan's
 * tail (islands_cost). The plan's builder asks this; the clocks do not. */
int islands_bucketed(const DriverRun *run);
/* A clock's: the communicator a plan's stage names (step_plan.h) and the worker's rank on it:
 * the worker's island's ring (PLAN_COMM_ISLAND) or run->comm (PLAN_COMM_RUN). */
Comm *islands_plan_comm(const Worker *me, PlanComm which, int *rank);
void worker_actor(int argc, char **argv); /* a SimGrid actor whose data is its Worker */

/* exec.c: the cost model, its plan and its clock, created together */
int cost_create(DriverRun *run, const Model *m0, BwError *err);
void cost_free(DriverRun *run); /* also a partial one; NULL cost is a no-op */
/* The leader, once the policy has decided step `step` of b images per worker: its levels (and
 * under Horovod its calls, at b), and the executor's
 * (exec_decided: a scheduled step's plan; a plugin schedule's bad decision stops the run,
 * run->stop STOP_ERROR). */
void cost_decided(DriverRun *run, long step, int b);
/* What the run's files say of its schedule (its spec as resolved, its last state, partitions a
 * step) into run->res, for a scheduled run (sched_run.c; nothing otherwise); run_finish calls
 * it, before the files of a run or of a cluster's job are written (its jobs are freed after). */
void sched_record(DriverRun *run);
/* exec_ddp (exec_impl.h) is this file's: one stream actor per worker under --overlap ddp */

/* cost_shard.c: ZeRO-3's FSDP step on exec_ddp's clock (a plan with units, step_plan.h): the
 * workers' collective lanes (created with exec_ddp, started with its actors, told to stop with
 * the worker, freed with exec_ddp), the step's forward and backward with its collectives
 * (returns the compute's seconds, the exposed communication into split), and a unit's flops. */
int fsdp_lanes_create(DriverRun *run, BwError *err);
int fsdp_lanes(const DriverRun *run); /* the lanes a worker has (its timeline's), 0 without units */
void fsdp_lanes_start(DriverRun *run);
void fsdp_lanes_stop(Worker *me);
void fsdp_lanes_free(DriverRun *run);
double fsdp_step(Worker *me, int b, double *split);
double fsdp_unit_flops(const DriverRun *run, int u, int backward, int b, double speed);

/* cost_lane.c (a leaf, as run_info.c): the roofline seconds of flops and bytes on the cluster's
 * GPU. What cost.c and cost_fast.c share: the wait of a round of collectives for the profile's
 * cycle; a bucket's compressor work per phase (returns the last phase); the optimiser's
 * seconds on the GPU. */
double cost_gpu_seconds(const Cluster *cl, double flops, double bytes);
double cost_cycle_wait_s(const CostProfile *prof, int queued);
int cost_phases(const DriverRun *run, int nm, CompressCost *cc);
double cost_opt_seconds(const DriverRun *run);
/* What the scheduled step (sched_*.c) shares with cost.c: an execution of flops on the
 * worker's GPU (times this step's slowdown and jitter; returns its seconds), a timeline span of
 * the step being costed, a note in the worker's record of what its streams did (the books'
 * split), this step's slowdown and jitter, a measured profile's GPU peak over the cluster's. */
double cost_gpu_exec(Worker *me, double flops);
void cost_span(Worker *me, TimelineLane lane, const char *cat, const char *name, double t0,
               double t1, const char *args);
void cost_note(Worker *me, int kind, double t0, double t1);
/* Around each collective of a worker that overlaps its compute (DDP's stream, the scheduled
 * lanes): under a profile's interference s > 1, while any is in flight an execution bounded at
 * (1 - 1/s) of the GPU shares the worker's host, so the compute beside it runs at 1/s of its
 * rate (SimGrid shares a host max-min fairly; s <= 2). Nothing under s = 1 or `ideal`. */
void cost_comm_begin(Worker *me);
void cost_comm_end(Worker *me);
double cost_step_multiplier(Worker *me);
double cost_peak_ratio(const Workload *wl, const Cluster *cl);

/* sched_step.c: exec_sched (exec_impl.h), a scheduled step (CostModel.sched); its step's last: the
 * run's last step, which drains its partitions before it ends; its drain: a run stopped at a
 * rendezvous drains the previous step's (layer-wise: they may still be in flight); its
 * evaluated: an evaluation just recorded after step `step` is stamped again when that step's
 * update is applied (layer-wise it lands during the next forward). sched_check: driver_check's
 * checks of --schedule. */
int sched_check(const RunConfig *cfg, const Model *m, BwError *err);
/* sched_run.c: the schedule's state this step (its describe()), or NULL without a scheduled
 * step; the communication lanes a worker's timeline shows (1 unless a schedule runs parameter
 * servers). */
const char *sched_state(const DriverRun *run);
int sched_lanes(const DriverRun *run);

/* cost_fast.c: exec_fast (exec_impl.h), a costed step of identical workers on rank 0's clock
 * (run->now), as exec_ddp books it */
double cost_charge(Comm *comm, const CompressMsg *msg); /* offline: seconds of one message */

/* rendezvous.c */
void rendezvous_first_step(DriverRun *run);
void rendezvous_leader(DriverRun *run);
void rendezvous_averaged(DriverRun *run, const StepState *st);
int rendezvous_check_decision(const RunConfig *cfg, const Model *m, const CompressorOps *cops,
                              const PolicyDecision *d, int periodic, BwError *err);

/* replay.c */
int replay_template_create(Worker *me, unsigned long seed, BwError *err);
void replay_observation(Worker *me, const TraceStep *ts, int n_layers);
void replay_gradient(Worker *me, const TraceStep *ts);
int replay_fast_init(DriverRun *run, BwError *err);
void replay_fast(DriverRun *run);

/* record.c */
void record_eval(DriverRun *run, Model *m, const StepState *st, double now);
void record_step(DriverRun *run, const StepState *st, const Worker *w0, int averaged);
void record_step_variance(DriverRun *run);
void record_epoch_norm(DriverRun *run, const StepState *st);
void record_progress(const DriverRun *run, const StepState *st);
int record_trace_open(DriverRun *run, const Model *m0, BwError *err);
void record_trace_step(DriverRun *run, const PolicyObs *obs, const StepState *st);
/* The fingerprint of decision d (its n_layers levels' bits, batch, average and period) and of
 * the run's outer step (run->outer.o, asked once: a policy that reads the price there decides
 * differently too; not hashed without one, so other fingerprints are as before), 16 lower-case
 * hex digits and a NUL into out[17]: what a trace records (cfg->record_decisions) and a priced
 * twin compares. */
void record_decision_print(const DriverRun *run, const PolicyDecision *d, char *out);
/* The step's decision, into the step record_trace_step began (with cfg->record_decisions). */
void record_trace_decision(DriverRun *run, const PolicyDecision *d);
/* Layer-wise steps (DriverRun.stamps): the evaluation just recorded after step `step` waits for
 * that step's update (set_tta: it set the time to accuracy); record_applied, once rank 0 has
 * applied it, stamps the step's row (its bytes) and that evaluation (its time, bytes and any
 * time to accuracy) with the clock and bytes of now. */
void record_eval_pending(DriverRun *run, long step, int set_tta);
void record_applied(DriverRun *run, long step);
int record_trace_close(DriverRun *run, BwError *err);
void record_trace_abort(DriverRun *run);

/* estimate.c: refuses a run whose simulated time would pass CLUSTER_MAX_SIM_S (usage error
 * naming the flags that price it). shard: samples per worker per epoch (run_shard_of). */
int estimate_check_sim_time(const RunConfig *cfg, const Model *m, int shard, BwError *err);

/* shard_comms.c: hybrid sharding's communicators (DriverRun.node_comm, across_comm) for a costed
 * step, created after run->comm and freed before it; the one a plan stage on PLAN_COMM_NODE or
 * PLAN_COMM_ACROSS runs on, with the worker's rank in it; and a collective on it whose books it
 * folds into run->comm's (shard_comm_run). */
int shard_comms_init(DriverRun *run, BwError *err);
void shard_comms_free(DriverRun *run);
Comm *shard_plan_comm(const Worker *me, PlanComm which, int *rank);
void shard_comms_fold(const Worker *me, PlanComm which, const CollStats *before);
/* driver_check.c: what a policy knows of the run when it starts. cluster: as loaded, or NULL if
 * not known. layers: room for m's n_layers entries, which ctx->layers points at. */
void run_policy_context(PolicyContext *ctx, const RunConfig *cfg, const Cluster *cluster,
                        const Model *m, int shard, PolicyLayer *layers);

/* zeropp.c (--zeropp, ZeRO++): the nodes' communicators of a costed run (zpp_init, zpp_free);
 * the communicator of PLAN_COMM_NODE for a worker and its rank there; qwZ's gathered weights of
 * `params` (the model's layers) into out; the qgZ mean of every worker's gradients into out,
 * once a step (returns 1 when it was computed by this call). */
int zpp_init(DriverRun *run, BwError *err);
void zpp_free(DriverRun *run);
Comm *zpp_node_comm(const Worker *me, int *rank);
void zpp_qwz_weights(const DriverRun *run, const Model *m, const float *params, float *out);
int zpp_qgz_mean(DriverRun *run, long step, float *out);

#endif
