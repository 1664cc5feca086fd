/* cost_fast.c: a costed step of identical workers in closed form, for the fast replay (no
 * SimGrid, no actors). Without DDP's overlap it is the actors' own arithmetic on rank 0's
 * clock: every execution the same flops over the host's speed, every wait and collective added
 * in cost.c's order, every book the same difference of clock readings, so it gives the actors'
 * times to the bit and a sweep can price its runs with it. Under DDP's buckets (with
 * --free-compression only: an encode would share the GPU with the backward, which only the
 * actors simulate) each bucket's collectives start at max(its last gradient, the previous
 * bucket's end), max-plus arithmetic that equals the actors to about 1e-9; under a profile's
 * interference s the backward runs at 1/s of its rate while a collective is in flight, as the
 * actors share the GPU (cost_comm_begin). */
#include "exec_impl.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>

#include "xalloc.h"

/* When a worker's collectives are in flight (under DDP and a profile's interference): the
 * intervals [t0[i], t1[i]), in the order they happen. */
typedef struct {
    double *t0, *t1;
    int n, cap;
} Busy;

/* Rank 0's simulated clock, and what turns work into its seconds. */
typedef struct {
    double now;
    double speed;     /* every generated host's flop rate */
    double mult;      /* the workers' one slowdown */
    Busy *busy;       /* where each collective's interval goes, or NULL */
    double *hvd_last; /* a Horovod plan's thread's last cycle start (cost.c's DdpStream) */
} FastClock;

static void busy_add(Busy *b, double t0, double t1)
{
    if (!b || !(t1 > t0)) return;
    if (b->n == b->cap) {
        b->cap = b->cap ? 2 * b->cap : 64;
        b->t0 = bw_xrealloc_n(b->t0, (size_t)b->cap, sizeof *b->t0, "collectives in flight");
        b->t1 = bw_xrealloc_n(b->t1, (size_t)b->cap, sizeof *b->t1, "collectives in flight");
    }
    b->t0[b->n] = t0;
    b->t1[b->n++] = t1;
}

/* When compute of w seconds (at the GPU's full rate) started at t ends, if it runs at 1/s of its
 * rate inside the busy intervals (cost_comm_begin's sharing); *cur: the first interval that may
 * still matter (t only grows). */
static double busy_advance(const Busy *b, int *cur, double t, double w, double s)
{
    while (w > 0) {
        while (*cur < b->n && b->t1[*cur] <= t) (*cur)++;
        if (*cur == b->n) return t + w;
        const double a = b->t0[*cur], e = b->t1[*cur];
        if (t < a) {
            if (w <= a - t) return t + w;
            w -= a - t;
            t = a;
        }
        if (w <= (e - t) / s) return t + w * s;
        w -= (e - t) / s;
        t = e;
    }
    return t;
}

/* An execution of flops (times the slowdown) on the GPU, as gpu_exec runs it; its seconds, as
 * the actors read them off the clock. */
static double fc_exec(FastClock *c, double flops)
{
    if (!(flops > 0)) return 0.0;
    double t0 = c->now;
    c->now = t0 + flops * c->mult / c->speed;
    return c->now - t0;
}

/* A wait (a sleep of the actors, or an analytic collective's time). */
static void fc_wait(FastClock *c, double s)
{
    if (s > 0) c->now += s;
}

/* A message charged to every rank at once on the offline communicator; its seconds. */
double cost_charge(Comm *comm, const CompressMsg *msg)
{
    switch (msg->op) {
    case COMPRESS_ALLREDUCE_F32:
        return coll_charge_allreduce(comm, msg->count, sizeof(float));
    case COMPRESS_ALLREDUCE_F16:
        return coll_charge_allreduce(comm, msg->count, sizeof(uint16_t));
    case COMPRESS_ALLGATHER:
        return coll_charge_allgather(comm, msg->count);
    }
    return 0.0;
}

/* A collective stage after its fixed cost of a call (cost_message); on the run's communicator:
 * the fast replay has no islands (driver_replay_fast). */
static void fc_message(DriverRun *run, FastClock *c, const PlanStage *s)
{
    assert(s->comm == PLAN_COMM_RUN);
    if (s->call_s != PLAN_NO_CALL) fc_wait(c, s->call_s);
    const double t0 = c->now;
    fc_wait(c, cost_charge(run->comm, &s->msg));
    busy_add(c->busy, t0, c->now);
}

/* Bucket b of the plan on the clock, as cost_reduce walks it: the encode, the (empty)
 * rendezvous, the rounds, the messages with the work between them, the decode; adds its books
 * to split as cost_reduce does. queued: its first round waits for no cycle. */
static void fc_reduce(DriverRun *run, FastClock *c, const PlanBucket *b, int queued, double *split)
{
    const StepPlan *p = &run->cost->plan;
    double t2 = c->now;
    int open = 1; /* communication since t2 not booked yet */
    for (int i = b->first_stage; i < b->first_stage + b->n_stages; i++) {
        const PlanStage *s = &p->stage[i];
        switch (s->kind) {
        case STAGE_ENCODE:
            split[COST_COMPRESS] += fc_exec(c, s->seconds * c->speed);
            break;
        case STAGE_RENDEZVOUS:
            t2 = c->now;
            split[COST_WAIT] += t2 - t2; /* every worker arrives at once */
            break;
        case STAGE_ROUND:
            fc_wait(c, s->queueable && queued ? 0.0 : s->seconds);
            break;
        case STAGE_BETWEEN:
            split[COST_COMM] += c->now - t2;
            split[COST_COMPRESS] += fc_exec(c, s->seconds * c->speed);
            t2 = c->now;
            break;
        case STAGE_COLL:
            fc_message(run, c, s);
            break;
        case STAGE_CYCLE: { /* Horovod's (step_plan_hvd.c), as cost.c's hvd_stage */
            const double at = costs_horovod_cycle_start(c->now, *c->hvd_last, s->seconds, queued);
            fc_wait(c, at - c->now);
            *c->hvd_last = at;
            break;
        }
        case STAGE_NEGOTIATE:
            fc_wait(c, cost_charge(run->comm, &s->msg));
            break;
        case STAGE_FUSE:
            fc_wait(c, s->seconds);
            break;
        case STAGE_DECODE:
            split[COST_COMM] += c->now - t2;
            open = 0;
            split[COST_COMPRESS] += fc_exec(c, s->seconds * c->speed);
            break;
        default:
            break;
        }
    }
    if (open) split[COST_COMM] += c->now - t2;
}

/* Bucket k, ready at `ready`, reduced once the previous buckets end (prev); when it ends. */
static double fc_bucket(DriverRun *run, const FastClock *c, int k, double ready, double prev)
{
    FastClock b = {fmax(prev, ready), c->speed, c->mult, c->busy, c->hvd_last};
    double ignored[COST_KINDS] = {0};
    fc_reduce(run, &b, &run->cost->plan.bucket[k], k > 0 && ready <= prev, ignored);
    return b.now;
}

/* The forward and the backward under DDP (free compression): each bucket's collectives from
 * max(its last gradient, the previous bucket's end), those that wait for the backward's end
 * after it; the clock ends at the later of the backward and the last bucket. Returns the
 * compute's seconds; split gets the exposed communication. */
static double fc_ddp(DriverRun *run, FastClock *c, int b, double *split)
{
    CostModel *cm = run->cost;
    const Workload *wl = cm->wl;
    const StepPlan *p = &cm->plan;
    const double t0 = c->now;
    const double s = cm->prof && cm->prof->interference > 1 ? cm->prof->interference : 1.0;
    Busy busy = {0};
    int cur = 0;
    c->busy = s > 1 ? &busy : NULL;
    double t = t0, comm_end = t0;
    for (int l = 0; l < wl->n_layers; l++)
        t += workload_fwd_flops(wl, l, b, c->speed, cm->peak_ratio) * c->mult / c->speed;
    double hvd_last = t; /* Horovod's cycles start with the backward */
    c->hvd_last = &hvd_last;
    int k = 0, deferred = -1; /* the first bucket that waits for the backward's end */
    for (int l = wl->n_layers - 1; l >= 0; l--) {
        const double w =
            workload_bwd_flops(wl, l, b, c->speed, cm->peak_ratio) * c->mult / c->speed;
        t = s > 1 ? busy_advance(&busy, &cur, t, w, s) : t + w;
        for (; k < p->n_buckets && p->bucket[k].layer == l; k++) {
            if (deferred < 0 && p->bucket[k].defer) deferred = k;
            if (deferred < 0) comm_end = fc_bucket(run, c, k, t, comm_end);
        }
    }
    for (k = deferred; k >= 0 && k < p->n_buckets; k++)
        comm_end = fc_bucket(run, c, k, t, comm_end);
    split[COST_COMM] += fmax(0.0, comm_end - t); /* free compression: all communication */
    c->now = fmax(t, comm_end);
    c->busy = NULL;
    c->hvd_last = NULL;
    free(busy.t0);
    free(busy.t1);
    return t - t0;
}

/* ZeRO-3's units on the clock (fsdp_walk, as cost_shard.c's lanes run it): a lane runs its
 * requests in order, each from max(its issue, the lane's previous end), its collectives after
 * their fixed cost; the compute waits for its unit's all-gather and, at the end, for the
 * reduce-scatters, and books those waits as communication. Max-plus arithmetic on identical
 * workers, which equals the actors to rounding (their analytic collectives take their closed
 * form whatever else is in flight). No interference (driver_replay_fast). */
typedef struct {
    DriverRun *run;
    FastClock *c;
    int b;
    double lane_end[2], compute;
    double *done, *split;
} FastWalk;

static void fw_issue(void *arg, int req, int lane)
{
    FastWalk *w = arg;
    int n;
    const PlanStage *s = fsdp_req_stages(&w->run->cost->plan, req, &n);
    double t = fmax(w->c->now, w->lane_end[lane]);
    for (int i = 0; i < n; i++) {
        if (s[i].kind == STAGE_COLL) {
            if (s[i].call_s != PLAN_NO_CALL) t += s[i].call_s;
            t += cost_charge(w->run->comm, &s[i].msg);
        } else if (s[i].kind == STAGE_ENCODE || s[i].kind == STAGE_BETWEEN ||
                   s[i].kind == STAGE_DECODE) {
            t += s[i].seconds * w->c->mult;
        }
    }
    w->lane_end[lane] = w->done[req] = t;
}

static void fw_wait(void *arg, int req)
{
    FastWalk *w = arg;
    if (w->done[req] > w->c->now) {
        w->split[COST_COMM] += w->done[req] - w->c->now;
        w->c->now = w->done[req];
    }
}

static void fw_compute(void *arg, int u, int backward)
{
    FastWalk *w = arg;
    w->compute += fc_exec(w->c, fsdp_unit_flops(w->run, u, backward, w->b, w->c->speed));
}

static double fc_fsdp(DriverRun *run, FastClock *c, int b, double *split)
{
    const StepPlan *p = &run->cost->plan;
    FastWalk w = {run, c, b, {c->now, c->now}, 0.0, NULL, split};
    w.done = bw_xcalloc((size_t)(3 * p->n_units), sizeof *w.done, "ZeRO-3's requests");
    const FsdpOps ops = {&w, fw_issue, fw_wait, fw_compute};
    fsdp_walk(p, &run->cfg->fsdp, &ops);
    free(w.done);
    return w.compute;
}

/* The plan's tail on the clock: the optimiser, and at an averaging the parameters, dense
 * (nothing to overlap with). The fast replay has no islands and no outer lanes
 * (driver_replay_fast, outer_lane_wanted). Returns the compute's seconds. */
static double fc_tail(DriverRun *run, FastClock *c, int averaged, double *split)
{
    const StepPlan *p = &run->cost->plan;
    double comp = 0;
    for (int i = p->tail_first; i < p->n_stages; i++) {
        const PlanStage *s = &p->stage[i];
        if (s->if_averaged && !averaged) continue;
        assert(s->kind == STAGE_OPTIMIZER || s->kind == STAGE_AVERAGE || s->kind == STAGE_ENCODE ||
               s->kind == STAGE_DECODE || (s->kind == STAGE_COLL && s->shard == PLAN_SHARD_AG));
        if (s->kind == STAGE_ENCODE || s->kind == STAGE_DECODE) { /* --zeropp qwz */
            split[COST_COMPRESS] += fc_exec(c, s->seconds * c->speed);
        } else if (s->kind == STAGE_OPTIMIZER) {
            comp += fc_exec(c, s->seconds * c->speed);
        } else if (s->kind == STAGE_COLL) { /* a sharded step's all-gather (step_plan.c) */
            const double t2 = c->now;
            fc_message(run, c, s);
            split[COST_COMM] += c->now - t2;
        } else if (s->kind == STAGE_AVERAGE) {
            const double t2 = c->now;
            split[COST_WAIT] += t2 - t2;
            fc_wait(c, s->seconds);
            fc_message(run, c, s);
            split[COST_COMM] += c->now - t2;
        }
    }
    return comp;
}

/* A costed step of identical workers from `now` on rank 0's clock: returns when it ends; the
 * compute's seconds into *compute, the rest into split (COST_*), as exec_ddp books them. */
static double cost_step_fast(DriverRun *run, const StepState *st, int averaged, double now,
                             double *compute, double *split)
{
    CostModel *cm = run->cost;
    const Workload *wl = cm->wl;
    const StepPlan *p = &cm->plan;
    FastClock c = {now, run->cluster.gpu_flops,
                   (run->cfg->slowdown ? run->cfg->slowdown[0] : 1.0) *
                       driver_straggler_factor(run->cfg, st->step),
                   NULL, NULL};
    const int b = driver_price_batch(run->cfg, st->b);
    double comp;
    if (p->n_units) {
        comp = fc_fsdp(run, &c, b, split);
    } else if (p->mode == PLAN_OVERLAP) {
        comp = fc_ddp(run, &c, b, split);
    } else { /* cost_forward and cost_backward: one execution each */
        double f = 0, total = 0;
        for (int l = 0; l < wl->n_layers; l++)
            f += workload_fwd_flops(wl, l, b, c.speed, cm->peak_ratio);
        comp = fc_exec(&c, f);
        f = 0;
        for (int l = wl->n_layers - 1; l >= 0; l--)
            f += workload_bwd_flops(wl, l, b, c.speed, cm->peak_ratio);
        total += fc_exec(&c, f);
        comp += total;
        for (int k = 0; p->mode == PLAN_AFTER && k < p->n_buckets; k++)
            fc_reduce(run, &c, &p->bucket[k], p->bucket[k].queued, split);
    }
    comp += fc_tail(run, &c, averaged, split);
    *compute = comp;
    return c.now;
}

/* Every worker's step at once, on rank 0's books and the run's clock. */
static void fast_step(Worker *me, const StepState *st, int averaged, int last, StepBooks *books)
{
    (void)last;
    DriverRun *run = me->run;
    run->now = cost_step_fast(run, st, averaged, run->now, &books->compute, books->split);
}

const StepExec exec_fast = {
    .version = STEP_EXEC_VERSION,
    .name = "fast",
    .step = fast_step,
};
