/* outer.c: DiLoCo's outer step in periodic mode (Douillard et al., arXiv 2311.08105,
 * Algorithm 1; the policy diloco decides when). The run keeps theta_global, the parameters every
 * replica started the round from, and an outer optimizer over it, Nesterov SGD
 * (torch.optim.SGD(nesterov=True), as pytorch/torchft's DiLoCo). At an averaging the replicas'
 * parameters are summed as for plain averaging (the same allreduce: the same bytes and time),
 * then the outer gradient, the mean of theta_global - theta_i, takes one outer step
 * (models/optim.h outer_step) and every replica restarts from the new theta_global.
 *
 * Streaming DiLoCo (arXiv 2501.18512; policies/streaming_diloco.c): the same by fragments of
 * contiguous layers, each at its own steps; a replica's outer gradient is quantised
 * (outer_quantise) before it is summed, the exchange priced at the quantised size, and the
 * fragment's outer step applied tau steps later, merged as alpha local + (1 - alpha) global.
 * With tau > 0 the exchange overlaps those tau steps (outer_lane.c): on live steps across
 * islands the worker posts it to its lane and goes on, the last worker in takes the fragment's
 * outer step, and the application waits for what remains of the exchange; costed steps price it
 * so in exec_ddp (cost.c). With tau = 0 it blocks at its step. */
#include "driver_impl.h"
#include "xalloc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* With --workload, the real model's fragments, as the small model's: fragment f holds the
 * workload's layers [f L / F, (f + 1) L / F), each layer's tensors together (Streaming DiLoCo,
 * arXiv 2501.18512 section 2.2: a fragment is a set of the model's layers, the paper's
 * "sequential" pattern of consecutive blocks; pytorch/torchft torchft/local_sgd.py StreamingDiLoCo
 * takes the fragments as given modules and syncs each one's parameters). Its exchange is priced
 * at that fragment's quantised floats. */
static int wl_fragments_init(DriverRun *run, BwError *err)
{
    const Workload *wl = run->cfg->workload;
    const int F = run->outer.o.fragments;
    if (!wl || !run->outer.streaming) return BW_OK;
    if (F > wl->n_layers)
        return bw_fail(err, BW_EUSAGE,
                       "--policy: %d fragments, more than --workload %s's %d layers", F, wl->name,
                       wl->n_layers);
    run->outer.wl_floats = bw_xmalloc(sizeof(size_t) * (size_t)F, "outer.c: run->outer.wl_floats");
    for (int f = 0; f < F; f++) {
        size_t n = 0;
        for (int l = f * wl->n_layers / F; l < (f + 1) * wl->n_layers / F; l++)
            for (int t = 0; t < wl->layers[l].n_tensors; t++)
                n += wl->tensors[wl->layers[l].first_tensor + t].numel;
        run->outer.wl_floats[f] = outer_quantised_floats(n, run->outer.o.bits);
    }
    return BW_OK;
}

/* Fragment f: layers [f L / F, (f + 1) L / F), contiguous in the flat buffer. */
static int fragments_init(DriverRun *run, const Model *m0)
{
    const int F = run->outer.o.fragments, L = m0->n_layers;
    run->outer.lo = bw_xmalloc(sizeof(size_t) * (size_t)F, "outer.c: run->outer.lo");
    run->outer.hi = bw_xmalloc(sizeof(size_t) * (size_t)F, "outer.c: run->outer.hi");
    run->outer.apply_at = bw_xmalloc(sizeof(long) * (size_t)F, "outer.c: run->outer.apply_at");
    run->outer.exchanges = bw_xcalloc((size_t)F, sizeof(long), "outer.c: run->outer.exchanges");
    run->outer.acc = bw_xcalloc(m0->n_params, sizeof(float), "outer.c: run->outer.acc");
    if (!run->outer.lo || !run->outer.hi || !run->outer.apply_at || !run->outer.acc ||
        !run->outer.exchanges)
        return 0;
    for (int f = 0; f < F; f++) {
        const LayerView *a = &m0->layers[f * L / F], *b = &m0->layers[(f + 1) * L / F - 1];
        run->outer.lo[f] = a->offset;
        run->outer.hi[f] = b->offset + layer_size(b);
        run->outer.apply_at[f] = -1;
    }
    return 1;
}

int outer_init(DriverRun *run, const Model *m0, BwError *err)
{
    const size_t n = m0->n_params;
    if (!run->periodic || !policy_outer(run->pol, &run->outer.o)) return BW_OK;
    const PolicyOuter *o = &run->outer.o;
    SgdConfig cfg = {.momentum = o->momentum, .nesterov = o->momentum > 0};
    int rc = sgd_init(&run->outer.opt, n, cfg, err);
    if (rc) return rc;
    run->outer.global = bw_xmalloc(sizeof(float) * n, "outer.c: run->outer.global");
    run->outer.delta = bw_xmalloc(sizeof(float) * n, "outer.c: run->outer.delta");
    run->outer.streaming = o->fragments > 1 || o->bits < 32 || o->tau > 0;
    if (!run->outer.global || !run->outer.delta ||
        (run->outer.streaming && !fragments_init(run, m0)))
        return bw_fail(err, BW_ERUNTIME, "out of memory for the outer optimizer");
    memcpy(run->outer.global, m0->params, sizeof(float) * n);
    run->outer.on = run->outer.asked = 1;
    run->outer.step = -1;
    if ((rc = wl_fragments_init(run, err))) return rc;
    return o->eager ? outer_eager_init(run, m0, err) : BW_OK;
}

void outer_free(DriverRun *run)
{
    sgd_free(&run->outer.opt);
    free(run->outer.global);
    free(run->outer.delta);
    free(run->outer.acc);
    free(run->outer.lo);
    free(run->outer.hi);
    free(run->outer.apply_at);
    free(run->outer.wl_floats);
    free(run->outer.exchanges);
    outer_lanes_free(run);
    outer_eager_free(run);
    memset(&run->outer, 0, sizeof run->outer);
}

void outer_apply(DriverRun *run, Worker *me, const float *sum, long step)
{
    float *p = me->model->params;
    const size_t n = me->model->n_params;
    const float inv = 1.0f / (float)run->P;
    double d2 = 0; /* ||x_w - xbar||^2, what plain averaging reports */
    for (size_t i = 0; i < n; i++) {
        double d = (double)p[i] - sum[i] * inv;
        d2 += d * d;
    }
    me->sq_dist = d2;
    if (run->outer.step != step) {
        run->outer.step = step;
        outer_step(&run->outer.opt, run->outer.global, sum, run->P, run->outer.delta,
                   run->outer.o.lr);
    }
    memcpy(p, run->outer.global, sizeof(float) * n);
}

/* The fragment exchanged at step (0-based), or -1: counted from 1, c >= H, c % H = f H / F. */
static int fragment_at(const PolicyOuter *o, long step)
{
    const long c = step + 1, h = o->h;
    for (int f = 0; f < o->fragments; f++)
        if (c >= h && c % h == (long)f * h / o->fragments) return f;
    return -1;
}

size_t outer_exchange_floats(const DriverRun *run, long step, size_t n_params)
{
    const size_t avg = driver_average_floats(run->cfg);
    /* the fast replay runs no outer step: its exchange is the whole model's, as before */
    const int f = run->outer.streaming && !run->fast && run->dec.average
                      ? fragment_at(&run->outer.o, step)
                      : -1;
    if (f < 0) return (size_t)ceil((double)n_params * (double)avg);
    if (run->outer.wl_floats) return run->outer.wl_floats[f] * avg;
    /* the small fragment's share of the small model, which fragment_exchange sends */
    const size_t floats =
        outer_quantised_floats(run->outer.hi[f] - run->outer.lo[f], run->outer.o.bits);
    const double share = (double)floats / (double)run->w[0].model->n_params;
    return (size_t)ceil((double)n_params * (double)avg * share);
}

/* The fragment's outer step, once (the first worker back from the exchange): the mean of the
 * quantised outer gradients, Nesterov on theta_global's fragment; the sum is reset. */
static void fragment_step(DriverRun *run, int f, long step)
{
    const size_t lo = run->outer.lo[f], hi = run->outer.hi[f];
    const float inv = 1.0f / (float)run->P;
    for (size_t i = lo; i < hi; i++) {
        run->outer.delta[i] = run->outer.acc[i] * inv;
        run->outer.acc[i] = 0;
    }
    sgd_step_range(&run->outer.opt, run->outer.global, run->outer.delta, run->outer.o.lr, lo, hi);
    run->outer.step = step;
    run->outer.apply_at[f] = step + run->outer.o.tau;
    run->outer.exchanges[f]++;
}

void outer_check_exchanged(const DriverRun *run, RunResult *res)
{
    res->never_exchanged[0] = '\0';
    if (!run->periodic || res->n_steps == 0) return;
    if (res->averagings == 0) {
        snprintf(
            res->never_exchanged, sizeof res->never_exchanged,
            "the policy %.120s never averaged in the run's %ld steps (a period longer than the "
            "run?)",
            res->policy_spec, res->n_steps);
        return;
    }
    const int F = run->outer.streaming ? run->outer.o.fragments : 0;
    int never = 0, first = -1;
    for (int f = 0; f < F; f++)
        if (run->outer.exchanges[f] == 0 && never++ == 0) first = f;
    if (never)
        snprintf(
            res->never_exchanged, sizeof res->never_exchanged,
            "the policy %.120s asked for %d fragments and never exchanged %d of them (fragment %d "
            "first): it averages at steps that are not theirs",
            res->policy_spec, F, never, first + 1);
}

/* The worker's distance to the mean of fragment f's quantised outer gradients (its own in
 * `before`), once the fragment's outer step has made the mean. */
static void fragment_dist(Worker *me, int f)
{
    const DriverRun *run = me->run;
    const size_t lo = run->outer.lo[f], hi = run->outer.hi[f];
    double d2 = 0;
    for (size_t i = lo; i < hi; i++) {
        double d = (double)me->before[i - lo] - run->outer.delta[i];
        d2 += d * d;
    }
    me->sq_dist = d2;
}

/* The worker's part of fragment f's exchange: its quantised outer gradient (in `before`) into
 * the sum, the quantised floats on comm (or posted to its lane, live with tau > 0), and its
 * distance to the mean. */
static void fragment_exchange(Worker *me, int f, long step, Comm *comm)
{
    DriverRun *run = me->run;
    const size_t lo = run->outer.lo[f], hi = run->outer.hi[f];
    const float *p = me->model->params, *g = run->outer.global;
    float *dq = me->before;
    for (size_t i = lo; i < hi; i++) dq[i - lo] = g[i] - p[i];
    outer_quantise(dq, hi - lo, run->outer.o.bits);
    for (size_t i = lo; i < hi; i++) run->outer.acc[i] += dq[i - lo];
    const size_t floats = outer_quantised_floats(hi - lo, run->outer.o.bits);
    if (outer_lane_of(me) && !run->cost) { /* overlapped: the sum is done with the last one */
        outer_lane_post(me, floats, 0, step);
        if (++run->outer.arrived < run->P) return;
        run->outer.arrived = 0;
        fragment_step(run, f, step);
        for (int w = 0; w < run->P; w++) fragment_dist(&run->w[w], f);
        return;
    }
    coll_cost_allreduce(comm, me->rank, floats, 4); /* every worker's is in once it returns */
    if (run->outer.step != step) fragment_step(run, f, step);
    fragment_dist(me, f);
}

int outer_applies_at(const DriverRun *run, long step)
{
    for (int k = 0; run->outer.apply_at && k < run->outer.o.fragments; k++)
        if (run->outer.apply_at[k] == step) return 1;
    return 0;
}

int outer_stream(Worker *me, long step, Comm *comm)
{
    DriverRun *run = me->run;
    const PolicyOuter *o = &run->outer.o;
    const int f = run->dec.average ? fragment_at(o, step) : -1;
    if (f >= 0) fragment_exchange(me, f, step, comm);
    float *p = me->model->params;
    const float a = (float)o->alpha, b = (float)(1.0 - o->alpha);
    for (int k = 0; k < o->fragments; k++) {
        if (run->outer.apply_at[k] != step) continue;
        if (!run->cost && outer_lane_of(me)) outer_lane_wait(me, step); /* in the step's comm */
        for (size_t i = run->outer.lo[k]; i < run->outer.hi[k]; i++)
            p[i] = a * p[i] + b * run->outer.global[i];
    }
    return f >= 0;
}
