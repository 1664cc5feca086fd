/* outer_eager.c: DiLoCo with eager updates (Kale, Douillard, Donchev, "Eager Updates For
 * Overlapped Communication and Computation in DiLoCo", arXiv 2502.12996; --policy
 * diloco:...,eager=1). DiLoCo's outer step blocks on the allreduce of the outer gradients; here
 * each replica sends its outer gradient and goes straight on to the next H inner steps, the
 * allreduce running meanwhile (outer_lane.c), and its outer step does not wait for it: it uses
 * its own outer gradient of this round as the proxy of its share and the others' from the
 * previous round, which has arrived by now (the paper's "eager" variant: the mixture of the
 * current local outer gradient with the delayed ones of the other replicas). With M replicas:
 *
 *   g_m(t) = (1/M) Delta_m(t) + (1/M) sum_{m' != m} Delta_m'(t-1)
 *          = mean Delta(t-1) + (Delta_m(t) - Delta_m(t-1)) / M
 *
 * (at the first round mean Delta(0) = Delta_m(0) = 0), applied by the replica's outer Nesterov
 * optimizer to its own copy of theta_global, from which it restarts: the replicas' global
 * parameters differ by their own terms, so each keeps its copy and its optimizer's state. The
 * replicas are the islands on --topology islands (an island's GPUs are one replica, M = K),
 * else the workers. What we read of the paper is its abstract and its method's summary (the
 * proxy mixture above); check the algorithm box before relying on details beyond it.
 *
 * The exchange of round t is waited for at round t + 1 (H inner steps later): the step pays only
 * what remains of it, and the run's end what is in flight (outer_lane_drain). Costed steps post
 * it from exec_ddp (cost.c, cost_average); live steps on islands from here. */
#include "driver_impl.h"
#include "xalloc.h"

#include <stdlib.h>
#include <string.h>

int outer_eager_check(const RunConfig *cfg, const Policy *p, BwError *err)
{
    PolicyOuter o;
    if (!policy_outer(p, &o) || !o.eager) return BW_OK;
    if (!driver_costed(cfg) && cfg->cluster.topology != TOPO_ISLANDS)
        return bw_fail(err, BW_EUSAGE,
                       "--policy diloco:eager=1: needs --topology islands or costed steps "
                       "(--costs other than ideal, --workload or --overlap), where its exchange "
                       "can overlap the inner steps");
    return BW_OK;
}

int outer_eager_init(DriverRun *run, const Model *m0, BwError *err)
{
    const size_t n = m0->n_params, P = (size_t)run->P;
    struct OuterEager *e = &run->outer.eager;
    e->global = bw_xmalloc(sizeof(float) * n * P, "outer_eager.c: e->global");
    e->own_prev = bw_xcalloc(n * P, sizeof(float), "outer_eager.c: e->own_prev");
    e->mean_prev = bw_xcalloc(n, sizeof(float), "outer_eager.c: e->mean_prev");
    e->acc = bw_xcalloc(n, sizeof(float), "outer_eager.c: e->acc");
    e->opt = bw_xcalloc(P, sizeof *e->opt, "outer_eager.c: e->opt");
    if (!e->global || !e->own_prev || !e->mean_prev || !e->acc || !e->opt)
        return bw_fail(err, BW_ERUNTIME, "out of memory for eager updates' %zu replicas", P);
    const SgdConfig sc = {.momentum = run->outer.o.momentum, .nesterov = run->outer.o.momentum > 0};
    for (size_t w = 0; w < P; w++) {
        memcpy(e->global + w * n, m0->params, sizeof(float) * n);
        int rc = sgd_init(&e->opt[w], n, sc, err);
        if (rc) return rc;
    }
    e->replicas = run->cluster.topology == TOPO_ISLANDS && run->cluster.islands > 1
                      ? run->cluster.islands
                      : run->P;
    e->on = 1;
    return BW_OK;
}

void outer_eager_free(DriverRun *run)
{
    struct OuterEager *e = &run->outer.eager;
    for (int w = 0; e->opt && w < run->P; w++) sgd_free(&e->opt[w]);
    free(e->opt);
    free(e->global);
    free(e->own_prev);
    free(e->mean_prev);
    free(e->acc);
    memset(e, 0, sizeof *e);
}

void outer_eager_apply(Worker *me, long step)
{
    DriverRun *run = me->run;
    struct OuterEager *e = &run->outer.eager;
    const size_t n = me->model->n_params, off = (size_t)me->rank * n;
    float *p = me->model->params, *own = me->before, *global = e->global + off;
    if (run->outer.step != step) { /* the first this round: last round's sum is complete */
        run->outer.step = step;
        const float inv = 1.0f / (float)run->P;
        for (size_t i = 0; i < n; i++) {
            e->mean_prev[i] = e->acc[i] * inv;
            e->acc[i] = 0;
        }
    }
    if (!run->cost && outer_lane_of(me)) { /* live: last round's exchange, then this one's */
        outer_lane_wait(me, step);
        outer_lane_post(me, n, 0, step);
    }
    double d2 = 0; /* its outer gradient's distance to the last known mean */
    for (size_t i = 0; i < n; i++) {
        own[i] = global[i] - p[i];
        e->acc[i] += own[i];
        double d = (double)own[i] - e->mean_prev[i];
        d2 += d * d;
    }
    me->sq_dist = d2;
    outer_eager_step(&e->opt[me->rank], global, e->own_prev + off, e->mean_prev, own, e->replicas,
                     run->outer.o.lr, run->outer.delta);
    memcpy(p, global, sizeof(float) * n);
}
