/* optim.c: SGD and the learning-rate schedules (see optim.h for the update rule; it follows
 * torch.optim.SGD, including its placement of weight decay and of the Nesterov correction). */
#include "optim.h"

#include <math.h>
#include <stdlib.h>

int sgd_init(Sgd *opt, size_t n, SgdConfig cfg, BwError *err)
{
    opt->cfg = cfg;
    opt->n = n;
    opt->velocity = NULL;
    if (cfg.momentum != 0.0) {
        opt->velocity = calloc(n, sizeof(float));
        if (!opt->velocity) return bw_fail(err, BW_ERUNTIME, "optimizer: out of memory");
    }
    return BW_OK;
}

void sgd_free(Sgd *opt)
{
    if (!opt) return;
    free(opt->velocity);
    opt->velocity = NULL;
}

void sgd_step(Sgd *opt, float *params, const float *grads, double lr)
{
    const float mu = (float)opt->cfg.momentum, wd = (float)opt->cfg.weight_decay;
    const float flr = (float)lr;
    float *v = opt->velocity;
    const size_t n = opt->n;
    if (!v) {
        for (size_t i = 0; i < n; i++) params[i] -= flr * (grads[i] + wd * params[i]);
        return;
    }
    if (opt->cfg.nesterov) {
        for (size_t i = 0; i < n; i++) {
            float g = grads[i] + wd * params[i];
            v[i] = mu * v[i] + g;
            params[i] -= flr * (g + mu * v[i]);
        }
    } else {
        for (size_t i = 0; i < n; i++) {
            float g = grads[i] + wd * params[i];
            v[i] = mu * v[i] + g;
            params[i] -= flr * v[i];
        }
    }
}

void sgd_cost(size_t n_params, const SgdConfig *cfg, double *flops, double *bytes)
{
    double per_flops = 2, per_bytes = 12; /* p -= lr g: read p and grad, write p */
    if (cfg->weight_decay != 0.0) per_flops += 2;
    if (cfg->momentum != 0.0) {
        per_flops += cfg->nesterov ? 4 : 2;
        per_bytes += 8; /* read and write the velocity */
    }
    *flops = per_flops * (double)n_params;
    *bytes = per_bytes * (double)n_params;
}

double lr_at(const LrSchedule *s, double epoch, double steps_per_epoch)
{
    double lr = s->base_lr;
    switch (s->kind) {
    case LR_CONSTANT:
        break;
    case LR_STEP:
        for (int i = 0; i < s->n_milestones; i++)
            if (epoch >= s->milestones[i]) lr *= s->decay_factor;
        break;
    case LR_COSINE: {
        double span = s->total_epochs - s->warmup_epochs;
        double t = span > 0 ? (epoch - s->warmup_epochs) / span : 1.0;
        t = t < 0 ? 0 : (t > 1 ? 1 : t);
        lr *= 0.5 * (1.0 + cos(M_PI * t));
        break;
    }
    }
    if (s->warmup_epochs > 0 && epoch < s->warmup_epochs) {
        /* Step k (from 0) of the warm-up uses (k + 1) / warm-up steps of the rate. */
        double warm_steps = s->warmup_epochs * steps_per_epoch;
        double k = floor(epoch * steps_per_epoch + 1e-9);
        double f = warm_steps > 0 ? (k + 1.0) / warm_steps : 1.0;
        lr *= f < 1.0 ? f : 1.0;
    }
    return lr;
}

const char *lr_kind_name(LrKind k)
{
    switch (k) {
    case LR_CONSTANT:
        return "constant";
    case LR_STEP:
        return "step";
    case LR_COSINE:
        return "cosine";
    }
    return "?";
}
