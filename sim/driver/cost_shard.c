/* cost_shard.c: ZeRO-3's FSDP step on the clock of DDP's streams (exec_ddp, cost.c; issue 50
 * item 3): the plan's units (step_plan.h) walked by fsdp_walk (shard_sched.c), their
 * all-gathers and reduce-scatters run by communication lanes, actors beside the worker's
 * compute, as FSDP runs them on CUDA streams of their own beside the compute stream.
 *
 * The communicator model (--rs-comm): NCCL runs one collective at a time on a communicator
 * (pytorch#64803; #186335: "one NCCL communicator, which processes one collective at a time and
 * so serializes them on the wire"), so with the reduce-scatters on the all-gathers' process
 * group (`shared`, FSDP1's and FSDP2's default) both go through one lane, in the order they are
 * issued: a reduce-scatter issued before the next all-gather holds it back. With their own
 * (`own`: #186335's set_separate_reduce_scatter_group, #177011) the reduce-scatters run on a
 * second lane, on a sibling communicator (coll_comm_create_sibling: mailboxes of its own, the
 * run's books), beside the all-gathers. At the analytic level each collective takes its closed
 * form whatever else is in flight (two communicators' channels do not share the closed form's
 * bandwidth: own's gain is an upper bound where one link carries both); at the transfer level
 * SimGrid shares the links between their messages.
 *
 * The compute lane waits for its unit's all-gather and, at the backward's end, for every
 * reduce-scatter: those waits are the step's exposed communication (COST_COMM); the lanes'
 * collectives slow the compute beside them under a profile's interference (cost_comm_begin). */
#include "driver_impl.h"

#include <stdio.h>
#include <stdlib.h>

#include <simgrid/actor.h>
#include <simgrid/engine.h>
#include <simgrid/host.h>
#include <simgrid/semaphore.h>

#include "xalloc.h"

/* One lane of a worker: a queue of requests (fsdp_walk's) it runs in order. */
typedef struct {
    Worker *me;
    int lane;
    sg_sem_t ready; /* released once a request is queued */
    int *queue;     /* [cap] ring */
    int head, tail;
} FsdpLane;

typedef struct FsdpLanes {
    int n_lanes, cap, quit;
    FsdpLane lane[2];
    sg_sem_t *done; /* [cap]: request r is done (released once a step) */
} FsdpLanes;

/* The reduce-scatters' own communicator (--rs-comm own), priced as the run's is (driver.c): at
 * --price-workers' GPUs, on a cluster job's fabric, at the run's allgather factor and link share
 * curves. */
int fsdp_lanes_create(DriverRun *run, BwError *err)
{
    CostModel *cm = run->cost;
    const RunConfig *cfg = run->cfg;
    if (!cm->plan.n_units || !cfg->fsdp.rs_own) return BW_OK;
    cm->fsdp_rs_comm = coll_comm_create_sibling(&run->cluster, run->comm);
    if (!cm->fsdp_rs_comm) return bw_fail(err, BW_ERUNTIME, "out of memory");
    Cluster priced = run->cluster;
    if (cfg->price_workers > run->P) { /* the closed forms at N GPUs, as driver.c sets */
        priced.workers = cfg->price_workers;
        coll_comm_set_price(cm->fsdp_rs_comm, &priced);
    }
    if (run->job.place && run->job.place->layout) /* its ring's hops as placed, as driver.c */
        coll_comm_set_layout(cm->fsdp_rs_comm, &priced, run->job.place->layout);
    if (run->job.place && run->job.place->fabric) /* a job of bellows cluster's shared fabric */
        coll_comm_set_fabric(cm->fsdp_rs_comm, run->job.place->fabric, run->job.place->fabric_arg);
    const CostProfile *prof = cm->prof;
    if (prof)
        coll_comm_set_allgather_factor(cm->fsdp_rs_comm,
                                       driver_allgather_factor(prof, cfg, &run->cluster));
    CollShareCurve curve[2];
    const double per_nic = cluster_gpus_per_nic(&run->cluster);
    if (prof && costs_busbw_curve(prof, cfg->transport, 0, per_nic, &curve[0]) &&
        costs_busbw_curve(prof, cfg->transport, 1, per_nic, &curve[1]))
        coll_comm_set_share_curves(cm->fsdp_rs_comm, &curve[0], &curve[1]);
    return BW_OK;
}

/* A request's stages on the lane's communicator (a stage on the node's ring, --zeropp hpz's
 * backward all-gather or qgz's all-to-all inside the node, on the worker's node's): each
 * collective after its fixed cost of a call, the compressor's work (none: sharding sends dense
 * gradients) on the GPU. A bucket's rendezvous and rounds are not run: FSDP issues its collectives
 * itself, with no background thread's cycle (Horovod's), and a collective waits for every rank in
 * itself; cost_fast.c's fw_issue skips them too. */
static void lane_run(Worker *me, int lane, int req)
{
    DriverRun *run = me->run;
    const StepPlan *p = &run->cost->plan;
    Comm *comm = lane == 1 ? run->cost->fsdp_rs_comm : run->comm;
    int n;
    const PlanStage *s = fsdp_req_stages(p, req, &n);
    const double t0 = simgrid_get_clock();
    double bytes = 0;
    for (int i = 0; i < n; i++) {
        if (s[i].kind == STAGE_COLL) {
            int rank = me->rank; /* --zeropp's stages on the node's ring (hpZ, qgZ): zeropp.c's */
            Comm *c = s[i].comm == PLAN_COMM_RUN ? comm : islands_plan_comm(me, s[i].comm, &rank);
            if (s[i].call_s != PLAN_NO_CALL) sg_actor_sleep_for(s[i].call_s);
            cost_comm_begin(me);
            coll_cost_allgather(c, rank, s[i].msg.count);
            cost_comm_end(me);
            bytes += (double)s[i].msg.count;
        } else if ((s[i].kind == STAGE_ENCODE || s[i].kind == STAGE_BETWEEN ||
                    s[i].kind == STAGE_DECODE) &&
                   s[i].seconds > 0) {
            cost_gpu_exec(me, s[i].seconds * sg_host_get_speed(sg_host_self()));
        }
    }
    const double t1 = simgrid_get_clock();
    if (run->tl && timeline_wants(run->tl, me->cost_step)) {
        const int U = p->n_units, rs = req >= 2 * U;
        const int u = rs ? req - 2 * U : req < U ? req : 2 * U - 1 - req;
        char name[64], args[64];
        snprintf(name, sizeof name, "%s unit %d", rs ? "reduce-scatter" : "all-gather", u);
        snprintf(args, sizeof args, "\"bytes\":%.0f", bytes);
        cost_span(me, (TimelineLane)(TL_LANE_COMM + lane), "communication", name, t0, t1, args);
    }
}

static void lane_actor(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    FsdpLane *L = sg_actor_self_get_data();
    FsdpLanes *all = L->me->fsdp;
    for (;;) {
        sg_sem_acquire(L->ready);
        if (all->quit) break;
        const int req = L->queue[L->head++ % all->cap];
        lane_run(L->me, L->lane, req);
        sg_sem_release(all->done[req]);
    }
}

int fsdp_lanes(const DriverRun *run)
{
    return run->cost && run->cost->plan.n_units ? 1 + run->cfg->fsdp.rs_own : 0;
}

void fsdp_lanes_start(DriverRun *run)
{
    const StepPlan *p = &run->cost->plan;
    if (!p->n_units) return;
    for (int w = 0; w < run->P; w++) {
        Worker *me = &run->w[w];
        FsdpLanes *all = bw_xcalloc(1, sizeof *all, "ZeRO-3's lanes");
        me->fsdp = all;
        all->n_lanes = run->cfg->fsdp.rs_own ? 2 : 1;
        all->cap = 3 * p->n_units;
        all->done = bw_xcalloc((size_t)all->cap, sizeof *all->done, "ZeRO-3's lanes");
        for (int r = 0; r < all->cap; r++) all->done[r] = sg_sem_init(0);
        for (int k = 0; k < all->n_lanes; k++) {
            FsdpLane *L = &all->lane[k];
            *L = (FsdpLane){.me = me, .lane = k, .ready = sg_sem_init(0)};
            L->queue = bw_xcalloc((size_t)all->cap, sizeof *L->queue, "ZeRO-3's lanes");
            run_actor_start(run, w, k ? "fsdp-rs" : "fsdp", lane_actor, L);
        }
    }
}

void fsdp_lanes_stop(Worker *me)
{
    FsdpLanes *all = me->fsdp;
    if (!all) return;
    all->quit = 1;
    for (int k = 0; k < all->n_lanes; k++) sg_sem_release(all->lane[k].ready);
}

void fsdp_lanes_free(DriverRun *run)
{
    for (int w = 0; run->w && w < run->P; w++) {
        FsdpLanes *all = run->w[w].fsdp;
        if (!all) continue;
        for (int k = 0; k < all->n_lanes; k++) {
            sg_sem_destroy(all->lane[k].ready);
            free(all->lane[k].queue);
        }
        for (int r = 0; r < all->cap; r++) sg_sem_destroy(all->done[r]);
        free(all->done);
        free(all);
        run->w[w].fsdp = NULL;
    }
    if (run->cost) {
        coll_comm_free(run->cost->fsdp_rs_comm);
        run->cost->fsdp_rs_comm = NULL;
    }
}

/* ---- the compute lane: fsdp_walk's callbacks on the worker's actor ---- */

typedef struct {
    Worker *me;
    int b;
    double compute;
    double *split;
} ActorWalk;

static void walk_issue(void *arg, int req, int lane)
{
    Worker *me = ((ActorWalk *)arg)->me;
    FsdpLanes *all = me->fsdp;
    FsdpLane *L = &all->lane[lane < all->n_lanes ? lane : 0];
    L->queue[L->tail++ % all->cap] = req;
    sg_sem_release(L->ready);
}

static void walk_wait(void *arg, int req)
{
    ActorWalk *a = arg;
    const double t0 = simgrid_get_clock();
    sg_sem_acquire(a->me->fsdp->done[req]);
    const double t1 = simgrid_get_clock();
    if (!(t1 > t0)) return;
    a->split[COST_COMM] += t1 - t0;
    const int rs = req >= 2 * a->me->run->cost->plan.n_units;
    const char *name = rs ? "wait for the reduce-scatters" : "wait for the all-gather";
    cost_span(a->me, TL_LANE_COMPUTE, "wait", name, t0, t1, NULL);
}

/* A unit's forward or backward: its layers' flops as one execution. */
double fsdp_unit_flops(const DriverRun *run, int u, int backward, int b, double speed)
{
    const CostModel *cm = run->cost;
    const PlanUnit *un = &cm->plan.unit[u];
    double f = 0;
    for (int l = un->first_layer; l < un->first_layer + un->n_layers; l++)
        f += backward ? workload_bwd_flops(cm->wl, l, b, speed, cm->peak_ratio)
                      : workload_fwd_flops(cm->wl, l, b, speed, cm->peak_ratio);
    return f;
}

static void walk_compute(void *arg, int u, int backward)
{
    ActorWalk *a = arg;
    const double f =
        fsdp_unit_flops(a->me->run, u, backward, a->b, sg_host_get_speed(sg_host_self()));
    const double t0 = simgrid_get_clock();
    const double d = cost_gpu_exec(a->me, f);
    a->compute += d;
    char name[64];
    snprintf(name, sizeof name, "%s unit %d", backward ? "backward" : "forward", u);
    cost_span(a->me, TL_LANE_COMPUTE, "compute", name, t0, t0 + d, NULL);
}

/* The forward and backward of a plan with units, its collectives on the lanes; returns the
 * compute's seconds, the exposed communication into split. */
double fsdp_step(Worker *me, int b, double *split)
{
    ActorWalk a = {me, b, 0.0, split};
    const FsdpOps ops = {&a, walk_issue, walk_wait, walk_compute};
    fsdp_walk(&me->run->cost->plan, &me->run->cfg->fsdp, &ops);
    return a.compute;
}
