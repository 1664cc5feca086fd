/* outer.c: DiLoCo's outer step in periodic mode (Douillard et al., arXiv 2311.08105,
 * Algorithm 1; the policy diloco decides when). The run keeps theta_global, the parameters every
 * replica started the round from, and an outer optimizer over it, Nesterov SGD
 * (torch.optim.SGD(nesterov=True), as pytorch/torchft's DiLoCo). At an averaging the replicas'
 * parameters are summed as for plain averaging (the same allreduce: the same bytes and time),
 * then the outer gradient, the mean of theta_global - theta_i, takes one outer step
 * (models/optim.h outer_step) and every replica restarts from the new theta_global. */
#include "driver_impl.h"

#include <stdlib.h>
#include <string.h>

int outer_init(DriverRun *run, const float *params, size_t n, BwError *err)
{
    double lr, momentum;
    if (!run->periodic || !policy_outer(run->pol, &lr, &momentum)) return BW_OK;
    SgdConfig cfg = {.momentum = momentum, .nesterov = momentum > 0};
    int rc = sgd_init(&run->outer.opt, n, cfg, err);
    if (rc) return rc;
    run->outer.global = malloc(sizeof(float) * n);
    run->outer.delta = malloc(sizeof(float) * n);
    if (!run->outer.global || !run->outer.delta)
        return bw_fail(err, BW_ERUNTIME, "out of memory for the outer optimizer");
    memcpy(run->outer.global, params, sizeof(float) * n);
    run->outer.on = 1;
    run->outer.lr = lr;
    run->outer.step = -1;
    return BW_OK;
}

void outer_free(DriverRun *run)
{
    sgd_free(&run->outer.opt);
    free(run->outer.global);
    free(run->outer.delta);
    run->outer.global = run->outer.delta = NULL;
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
                   run->outer.lr);
    }
    memcpy(p, run->outer.global, sizeof(float) * n);
}
