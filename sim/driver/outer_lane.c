/* outer_lane.c: an outer exchange that overlaps the inner steps (Streaming DiLoCo, Douillard et
 * al., arXiv 2501.18512, section 2.3 "overlapping communication": a fragment's exchange starts at
 * its step and its outer step is applied tau inner steps later, so the exchange runs while those
 * tau steps compute). Each worker gets a lane, an actor on its host that runs the exchanges
 * posted to it one after the other on the run's communicator (run->comm: on islands, the
 * hierarchical allreduce across the WAN), as a second communication stream would. The worker
 * posts an exchange and goes on; at the step its fragment is applied it waits only for what
 * remains of the exchange (outer_lane_wait), and at its end for every exchange still in flight
 * (outer_lane_drain: the run ends when its network is quiet). Used by costed steps (exec_ddp,
 * cost.c) and by live ones on islands (outer.c, outer_stream) when tau > 0, and by DiLoCo's
 * eager updates (outer_eager.c: each round's exchange waited for a round later); with tau = 0 the
 * exchange stays blocking, at its step, as before. The exchange's bytes and WAN bytes are in the
 * communicator's books as any other collective's; the timeline draws it on the worker's
 * communication lane, over the inner steps it overlaps. */
#include "driver_impl.h"
#include "xalloc.h"

#include <stdio.h>
#include <stdlib.h>

#include <simgrid/actor.h>
#include <simgrid/engine.h>
#include <simgrid/semaphore.h>

struct OuterLane {
    Worker *me;
    sg_sem_t posted, done;
    int cap, head, n;        /* a ring of the exchanges posted and not yet begun */
    long *step;              /* [cap]: the step each was posted at */
    size_t *floats;          /* [cap]: its floats */
    double *delay;           /* [cap]: seconds before it (a profile's fixed costs) */
    long n_posted, n_waited; /* exchanges posted; completions the worker has taken */
    int quit;
};

int outer_lane_wanted(const DriverRun *run)
{
    /* a replay too: its outer step runs on the stand-in model (no training), and says when a
     * fragment is applied, as the trained run's */
    return ((run->outer.streaming && run->outer.o.tau > 0) || run->outer.eager.on) && !run->fast &&
           (run->cost || run->cluster.topology == TOPO_ISLANDS);
}

int outer_lanes_alloc(DriverRun *run, BwError *err)
{
    if (!outer_lane_wanted(run)) return BW_OK;
    /* every fragment at most once in flight (tau < H), and one more */
    const int cap = run->outer.o.fragments + 1;
    run->outer.lanes =
        bw_xcalloc((size_t)run->P, sizeof *run->outer.lanes, "outer_lane.c: run->outer.lanes");
    for (int w = 0; run->outer.lanes && w < run->P; w++) {
        OuterLane *l = &run->outer.lanes[w];
        l->me = &run->w[w];
        l->cap = cap;
        l->step = bw_xmalloc(sizeof *l->step * (size_t)cap, "outer_lane.c: l->step");
        l->floats = bw_xmalloc(sizeof *l->floats * (size_t)cap, "outer_lane.c: l->floats");
        l->delay = bw_xmalloc(sizeof *l->delay * (size_t)cap, "outer_lane.c: l->delay");
        if (!l->step || !l->floats || !l->delay)
            return bw_fail(err, BW_ERUNTIME, "out of memory for the outer exchanges' lanes");
    }
    if (!run->outer.lanes) return bw_fail(err, BW_ERUNTIME, "out of memory for the lanes");
    return BW_OK;
}

void outer_lanes_free(DriverRun *run)
{
    for (int w = 0; run->outer.lanes && w < run->P; w++) {
        OuterLane *l = &run->outer.lanes[w];
        if (l->posted) sg_sem_destroy(l->posted);
        if (l->done) sg_sem_destroy(l->done);
        free(l->step);
        free(l->floats);
        free(l->delay);
    }
    free(run->outer.lanes);
    run->outer.lanes = NULL;
}

static void lane_actor(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    OuterLane *l = sg_actor_self_get_data();
    Worker *me = l->me;
    DriverRun *run = me->run;
    for (;;) {
        sg_sem_acquire(l->posted);
        if (l->quit && l->n == 0) break;
        const long step = l->step[l->head];
        const size_t floats = l->floats[l->head];
        const double delay = l->delay[l->head];
        l->head = (l->head + 1) % l->cap;
        l->n--;
        if (delay > 0) sg_actor_sleep_for(delay);
        const double t0 = simgrid_get_clock();
        coll_cost_allreduce(run->comm, me->rank, floats, 4);
        const double t1 = simgrid_get_clock();
        if (run->tl && t1 > t0 && timeline_wants(run->tl, step)) {
            char args[80];
            snprintf(args, sizeof args, "\"bytes\":%.0f,\"overlapped\":1", 4.0 * (double)floats);
            timeline_span(run->tl, me->rank, TL_LANE_COMM, "communication", "outer exchange", t0,
                          t1, step, args);
        }
        sg_sem_release(l->done);
    }
}

void outer_lanes_start(DriverRun *run)
{
    for (int w = 0; run->outer.lanes && w < run->P; w++) {
        OuterLane *l = &run->outer.lanes[w];
        l->posted = sg_sem_init(0);
        l->done = sg_sem_init(0);
        run_actor_start(run, w, "outer", lane_actor, l);
    }
}

OuterLane *outer_lane_of(const Worker *me)
{
    return me->run->outer.lanes ? &me->run->outer.lanes[me->rank] : NULL;
}

void outer_lane_post(Worker *me, size_t floats, double delay_s, long step)
{
    OuterLane *l = outer_lane_of(me);
    const int at = (l->head + l->n) % l->cap;
    l->step[at] = step;
    l->floats[at] = floats;
    l->delay[at] = delay_s;
    l->n++;
    l->n_posted++;
    sg_sem_release(l->posted);
}

/* Waits for the oldest exchange the worker has not taken yet, drawn as `name`; the seconds. */
static double lane_take(Worker *me, OuterLane *l, long step, const char *name)
{
    const double t0 = simgrid_get_clock();
    sg_sem_acquire(l->done);
    l->n_waited++;
    const double t1 = simgrid_get_clock();
    DriverRun *run = me->run;
    if (run->tl && t1 > t0 && timeline_wants(run->tl, step))
        timeline_span(run->tl, me->rank, TL_LANE_COMM, "communication", name, t0, t1, step, NULL);
    return t1 - t0;
}

double outer_lane_wait(Worker *me, long step)
{
    OuterLane *l = outer_lane_of(me);
    if (!l || l->n_waited == l->n_posted) return 0;
    return lane_take(me, l, step, "outer exchange's remainder");
}

double outer_lane_drain(Worker *me, long step)
{
    OuterLane *l = outer_lane_of(me);
    double s = 0;
    while (l && l->n_waited < l->n_posted)
        s += lane_take(me, l, step, "outer exchange in flight at the end");
    return s;
}

void outer_lane_stop(Worker *me)
{
    OuterLane *l = outer_lane_of(me);
    if (!l || !l->posted) return;
    l->quit = 1;
    sg_sem_release(l->posted);
}
