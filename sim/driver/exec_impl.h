/* exec_impl.h: the step executor, how a costed step is priced (issue 38), in the style of the
 * project's plug-ins (bellows_policy.h, bellows_schedule.h): a versioned table of callbacks,
 * one per way of pricing, chosen once when the run's cost model is created (exec_choose) and
 * called by the step loops of worker.c and replay.c through the wrappers below, which never ask
 * which one runs. Three implement it:
 *   exec_ddp   (cost.c)      DDP's streams: a stream actor per worker under --overlap ddp, the
 *                            collectives after the backward under none and tensor, periodic
 *                            averaging;
 *   exec_sched (sched_*.c)   the scheduled engine: partitions, priorities, credit, lanes and
 *                            layer-wise updates (driver_scheduled);
 *   exec_fast  (cost_fast.c) the closed form of identical workers, for the fast replay.
 * The three are clocks of the step's plan (step_plan.h, built once per decided step by
 * cost_decided; exec_sched's buckets once its schedule decided their caps, plan_build_units):
 * they walk its buckets' stages and its tail and ask nobody else what a step sends. exec_sched
 * cuts each message into the schedule's partitions and orders them (when, not what).
 * What they share lives once: the GPU lane, spans, notes, phases (cost_lane.c), and the books,
 * which every step's StepBooks adds to its worker by one function (exec_books_add).
 *
 * Fifo through the scheduled engine (a schedule that keeps fifo's decision but is not fifo by
 * name) gives DDP's streams' step times bit for bit under the ideal profile, but not under a
 * profile with a fixed cost per collective call: the engine's dispatcher pays a partition's
 * launch while the partition before it runs, cost.c before each message (resnet18-cifar under
 * pytorch-a100: 50 us a step less). The default profile is such a one, so both stay
 * (tests/test_exec.c). */
#ifndef BELLOWS_EXEC_IMPL_H
#define BELLOWS_EXEC_IMPL_H

#include "driver_impl.h"

#define STEP_EXEC_VERSION 1

/* What a step's (or a drain's) pricing found: its compute seconds, the rest split by COST_*. */
typedef struct {
    double compute;
    double split[COST_KINDS];
} StepBooks;

/* One way of pricing a step. Every callback but step may be NULL (nothing to do). */
struct StepExec {
    int version; /* STEP_EXEC_VERSION */
    const char *name;
    /* After cost_create's plan of the run (run->cost): the executor's own state; exec_free
     * undoes it, also a partial one. Not called for the fast replay's run (no SimGrid). */
    int (*create)(DriverRun *run, BwError *err);
    void (*free)(DriverRun *run);
    /* At the rendezvous, once the policy decided `step` and cost_decided set its levels; a bad
     * decision stops the run (run_fail). */
    void (*decided)(DriverRun *run, long step);
    void (*start)(DriverRun *run); /* with the worker actors: its own actors */
    /* The simulated part of a step after the real update: the worker's forward, backward,
     * collectives and optimiser, into books. averaged: periodic mode averaged the parameters;
     * last: the run's last step. The fast replay's runs it for rank 0, on run->now. */
    void (*step)(Worker *me, const StepState *st, int averaged, int last, StepBooks *books);
    /* A run stopped at a rendezvous: what the previous step left in flight, into books. */
    void (*drain)(Worker *me, const StepState *st, StepBooks *books);
    /* An evaluation was just recorded after step `step` (set_tta: it set the time to
     * accuracy): an executor that applies updates later stamps it then. */
    void (*evaluated)(DriverRun *run, long step, int set_tta);
    void (*stop)(Worker *me); /* the worker is done: its executor's actors end */
};

extern const StepExec exec_ddp, exec_sched, exec_fast;

/* cost.c: the plan's tail on the worker's own actor (the island's ring, the optimiser, a sharded
 * step's all-gathers, the averaging or the outer lane), into split; returns the compute's
 * seconds. exec_ddp's, and the schedule engine's after its units (but layer-wise). */
double cost_tail(Worker *me, long step, int averaged, double *split);

/* exec.c: the run's executor (run->fast, driver_scheduled, the policy's mode), and the step
 * loops' calls, each a no-op without a cost model (uncosted steps) where that makes sense. */
const StepExec *exec_choose(const DriverRun *run);
int exec_create(DriverRun *run, BwError *err);
void exec_free(DriverRun *run);
void exec_decided(DriverRun *run, long step);
void exec_start(DriverRun *run);
void exec_step(Worker *me, const StepState *st, int averaged, int last);
void exec_drain(Worker *me, const StepState *st);
void exec_evaluated(DriverRun *run, long step, int set_tta);
void exec_stop(Worker *me);
/* The books of a step (step: also its step_* fields) or of a drain (its totals only). */
void exec_books_add(Worker *me, const StepBooks *b, int step);

/* step_plan_hvd.c, for step_plan.c: the negotiation's message of the cycle Horovod bucket b
 * opens; one copy of b's messages (msgs) into the fusion buffer or out, in seconds (0 for a lone
 * tensor). */
void plan_hvd_negotiation(const CostModel *cm, const PlanBucket *b, CompressMsg *msg);
double plan_hvd_copy_s(const CostModel *cm, const PlanBucket *b, const CompressMsg *msgs, int nm);

#endif
