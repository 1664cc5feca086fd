/* sched_impl.h: what the files of a scheduled step share (sched_plan.c: the schedule's context,
 * each step's plan of units, stages and partitions, and their progress; sched_run.c: the
 * dispatcher, the lanes and the compute side). A step is scheduled when --schedule is not fifo
 * or --overlap is layer (driver_scheduled); otherwise cost.c prices it as it always has.
 *
 * A step's units, taken once for all workers when the policy and the schedule have decided it
 * from the step plan (step_plan.h, PLAN_SCHEDULED: its buckets at the schedule's caps, built by
 * plan_build_units): a unit is a bucket, and its stages are the bucket's, the compressor's work
 * on the GPU (WORK: the encode, the work between collectives, the decode) alternating with
 * groups of messages (GROUP), each message split into partitions of at most the schedule's
 * size. The plan says what is sent; the engine, a clock, when and in what order. A
 * WORK stage runs on each rank as soon as that rank finished the stage before (it is local); a
 * GROUP's partitions may go only once every rank has finished the stage before (the
 * negotiation of Horovod's coordinator, or BytePS's ready table: all-reduce needs every rank in
 * the same call). The dispatcher, one actor for all ranks (ByteScheduler's scheduling loop),
 * hands out the ready partition of the lowest priority while the credit allows, paying the cost
 * profile's fixed cost of a call (and the cycle of a background thread) before each; every rank
 * runs it on the same lane. Lanes run what they get in order: lane 0, a worker's one
 * communication stream (NCCL's), takes the compressor's work and every partition of the
 * all-reduce algorithms, which therefore go one at a time, a launch overlapping the partition
 * before it; with parameter servers each partition in flight has a lane of its own (pushes and
 * pulls are asynchronous) and they share the links. A unit is done on a rank when its last
 * stage is; a layer's update may run once every unit holding its tensors is done. */
#ifndef BELLOWS_SCHED_IMPL_H
#define BELLOWS_SCHED_IMPL_H

#include "driver_impl.h"
#include "schedule.h"

/* Lanes of a worker with parameter servers: lane 0 for the compressor's work, the others one
 * partition in flight each: at least SCHED_PS_LANES - 1, and as many as fifo's partitions of
 * the whole model (a unit per tensor, SCHEDULE_PS_PARTITION_BYTES each) up to
 * SCHED_PS_MAX_LANES - 1, so that fifo has every partition of a step in flight (a credit above
 * the lanes is capped there). */
#define SCHED_PS_LANES     17
#define SCHED_PS_MAX_LANES 1025

typedef enum { STAGE_WORK, STAGE_GROUP } SchedStageKind;

typedef struct {
    SchedStageKind kind;
    int unit;
    double seconds;                     /* WORK: the compressor's GPU seconds */
    const char *name;                   /* WORK: "encode", "between collectives" or "decode" */
    int first_part, n_parts, next_part; /* GROUP: its partitions, and how many went out */
    int ranks_done;                     /* ranks that finished it */
    int eligible;                       /* GROUP: every rank finished the stage before */
    int queued;     /* GROUP: became eligible while partitions were in flight (no cycle to wait) */
    double round_s; /* GROUP: the plan's round before it (STAGE_ROUND: the cycle's wait) */
    double call_s;  /* GROUP: the plan's fixed cost of a call (STAGE_COLL.call_s; 0: none) */
} SchedStage;

typedef struct {
    int op;       /* CompressOp */
    size_t count; /* elements (an allreduce) or bytes (an allgather) */
    double bytes; /* its payload */
    int unit, stage;
    int index, of; /* its place among its message's partitions */
    int server;    /* ps: where it goes (round robin at launch); -1 otherwise */
    int lane;      /* where every rank runs it (set at launch) */
    int ranks_done;
} SchedPart;

typedef struct {
    const int *tensors; /* its plan bucket's, in the backward's order (CostModel.order) */
    int n;
    double priority;
    int first_tensor; /* its lowest tensor index: the tie-break of equal priorities */
    int ready_layer;  /* full once this layer's backward is done */
    int defer;        /* handed over at the backward's end (an allgather that may not overlap) */
    int first_stage, n_stages;
    int handed; /* ranks that handed it over */
} SchedUnit;

typedef struct {
    long step; /* -1: unused */
    int n_units, n_stages, n_parts, n_elig;
    int cap_stages, cap_parts;
    SchedUnit *units;   /* [n_tensors] at most: the plan's buckets */
    SchedStage *stages; /* [cap_stages] */
    SchedPart *parts;   /* [cap_parts] */
    int *elig;          /* [cap_stages]: GROUP stages eligible with partitions left */
    int *rank_stage;    /* [n_tensors * P]: unit u's stage on rank r; -1: not handed over */
    int *work_queued;   /* [n_tensors * P]: its current WORK stage is on rank r's lane */
    double *handed_at;  /* [n_tensors * P]: when rank r handed unit u over */
    int *parts_done;    /* [cap_stages * P]: a GROUP's partitions done on rank r */
    double *stage_end;  /* [cap_stages * P]: when rank r finished the stage */
    int *layer_left;    /* [P * n_layers]: units holding the layer's tensors not done on rank r */
    int *units_left;    /* [P] */
} SchedPlan;

typedef enum { ITEM_WORK, ITEM_PART } SchedItemKind;

typedef struct {
    SchedItemKind kind;
    int plan;  /* 0 or 1: SchedEngine.plans */
    int index; /* the stage (WORK) or the partition (PART) */
} SchedItem;

/* One lane's queue on one rank: what the lane runs, in order. */
typedef struct {
    SchedItem *items;
    int head, n, cap;
    sg_sem_t sem; /* one release per item, and one to quit */
} SchedQueue;

typedef struct {
    SchedQueue *q;    /* [SchedEngine.lanes] */
    long *layer_done; /* [n_layers]: the last step whose gradients of the layer are reduced here */
    int waiting;      /* the compute actor waits on progress */
    sg_sem_t progress;
    int quit;
} SchedRank;

struct SchedEngine {
    Schedule *sched;
    ScheduleDecision dec; /* this step's (dec.priority: [n_tensors]) */
    double *tensor_bytes; /* [n_tensors]: the observation's */
    BellowsScheduleTensor *tensors;
    BellowsScheduleLayer *layers;
    char state[64]; /* the schedule's describe() */
    int layerwise;  /* --overlap layer */
    int ps;         /* parameter servers: a lane per partition in flight */
    int servers;
    int lanes;
    Comm **lane_comm; /* [lanes]: lane 0 the run's communicator, the others its siblings */
    SchedPlan plans[2];
    SchedRank *ranks; /* [P] */
    sg_sem_t wake;    /* the dispatcher's */
    int quit_workers, quit;
    double in_flight_bytes;
    int in_flight_parts;
    int *lane_busy; /* [lanes] (ps) */
    long next_server;
    double *opt_s;      /* [n_layers]: a layer's update on the GPU (0 without tensors) */
    int last_updated;   /* the last layer with an update (opt_s > 0) */
    double parts_total; /* partitions handed out, over the run */
    double partition_s; /* the profile's cost of one of this schedule's partitions */
    long steps_planned;
};

/* sched_plan.c */
/* The schedule's context for a run's workload and cluster; tensors and layers are malloc'd
 * tables ctx points at (the caller frees them). speed: the GPU's flop rate for the layers'
 * seconds (0: not known yet, every fwd_s and bwd_s 0). */
int sched_context(const RunConfig *cfg, const Workload *wl, double speed, double peak_ratio,
                  ScheduleContext *ctx, BellowsScheduleTensor **tensors,
                  BellowsScheduleLayer **layers, BwError *err);
/* Step `step`'s plan, in plans[step & 1], after the schedule decided it. */
int sched_plan_build(DriverRun *run, long step, BwError *err);
SchedPlan *sched_plan_of(SchedEngine *E, long step); /* NULL: none (step < 0 or not planned) */
/* Progress, from the actors (each runs to its end before another actor runs): unit u handed
 * over on rank r; a WORK stage or a partition done on rank r. Each may queue work on r's lane
 * and wakes the dispatcher. */
void sched_release(DriverRun *run, int r, SchedPlan *plan, int u);
void sched_work_done(DriverRun *run, int r, SchedPlan *plan, int stage);
void sched_part_done(DriverRun *run, int r, SchedPlan *plan, int part);
/* The dispatcher's choice: the eligible GROUP of the lowest (step, priority, first tensor,
 * stage) with partitions left, and its plan; -1 when there is none. */
int sched_best_group(SchedEngine *E, SchedPlan **plan);
/* Takes a GROUP off its plan's eligible list once its last partition went out. */
void sched_group_exhausted(SchedPlan *plan, int stage);
void sched_queue_push(SchedQueue *q, SchedItem it);
void sched_plans_free(SchedEngine *E);

/* sched_run.c */
int sched_create(DriverRun *run, BwError *err); /* after cost_create's plan of the run */
void sched_free(DriverRun *run);
void sched_start(DriverRun *run); /* the dispatcher and the lanes */
void sched_stop(Worker *me);      /* the worker is done: its lanes end */

#endif
