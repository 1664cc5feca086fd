/* optim.c: SGD and the learning-rate schedules (see optim.h for the update rule; it follows
 * torch.optim.SGD, including its placement of weight decay and of the Nesterov correction). */
#include "optim.h"
#include "xalloc.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>

int sgd_init(Sgd *opt, size_t n, SgdConfig cfg, BwError *err)
{
    if (cfg.kind == OPT_ADAMW) { /* PyTorch's defaults where not given */
        if (cfg.beta1 == 0) cfg.beta1 = 0.9;
        if (cfg.beta2 == 0) cfg.beta2 = 0.999;
        if (cfg.eps == 0) cfg.eps = 1e-8;
    }
    opt->cfg = cfg;
    opt->n = n;
    opt->t = 0;
    opt->velocity = NULL;
    opt->exp_avg_sq = NULL;
    if (cfg.momentum != 0.0 || cfg.kind == OPT_ADAMW) {
        opt->velocity = bw_xcalloc(n, sizeof(float), "optim.c: opt->velocity");
        if (!opt->velocity) return bw_fail(err, BW_ERUNTIME, "optimizer: out of memory");
    }
    if (cfg.kind == OPT_ADAMW) {
        opt->exp_avg_sq = bw_xcalloc(n, sizeof(float), "optim.c: opt->exp_avg_sq");
        if (!opt->exp_avg_sq) {
            sgd_free(opt);
            return bw_fail(err, BW_ERUNTIME, "optimizer: out of memory");
        }
    }
    return BW_OK;
}

void sgd_free(Sgd *opt)
{
    if (!opt) return;
    free(opt->velocity);
    free(opt->exp_avg_sq);
    opt->velocity = NULL;
    opt->exp_avg_sq = NULL;
}

void sgd_step(Sgd *opt, float *params, const float *grads, double lr)
{
    sgd_tick(opt);
    sgd_step_range(opt, params, grads, lr, 0, opt->n);
}

void sgd_tick(Sgd *opt)
{
    opt->t++;
}

void outer_step(Sgd *outer, float *global, const float *sum, int replicas, float *delta, double lr)
{
    const float inv = 1.0f / (float)replicas; /* the mean as parameter averaging takes it */
    for (size_t i = 0; i < outer->n; i++) delta[i] = global[i] - sum[i] * inv;
    sgd_step(outer, global, delta, lr);
}

void outer_eager_step(Sgd *opt, float *global, float *own_prev, const float *mean_prev,
                      const float *own, int replicas, double lr, float *g)
{
    const float inv = 1.0f / (float)replicas;
    for (size_t i = 0; i < opt->n; i++) {
        g[i] = mean_prev[i] + (own[i] - own_prev[i]) * inv;
        own_prev[i] = own[i];
    }
    sgd_step(opt, global, g, lr);
}

void outer_quantise(float *x, size_t n, int bits)
{
    if (bits >= 32 || n == 0) return;
    double amax = 0, asum = 0;
    for (size_t i = 0; i < n; i++) {
        double a = fabs((double)x[i]);
        asum += a;
        amax = a > amax ? a : amax;
    }
    if (bits == 1) {
        const float m = (float)(asum / (double)n);
        for (size_t i = 0; i < n; i++) x[i] = x[i] > 0 ? m : x[i] < 0 ? -m : 0.0f;
        return;
    }
    if (!(amax > 0)) return;
    const double levels = (double)((1 << (bits - 1)) - 1), step = amax / levels;
    for (size_t i = 0; i < n; i++) {
        double q = nearbyint((double)x[i] / step);
        q = q > levels ? levels : q < -levels ? -levels : q;
        x[i] = (float)(q * step);
    }
}

size_t outer_quantised_floats(size_t n, int bits)
{
    if (bits >= 32) return n;
    return (n * (size_t)bits + 31) / 32 + 1;
}

const char *opt_kind_name(OptKind k)
{
    return k == OPT_ADAMW ? "adamw" : "sgd";
}

/* AdamW over [lo, hi) at step opt->t, in float as PyTorch's CPU kernels: the scalars computed in
 * double as Python does (torch/optim/adamw.py, _single_tensor_adamw), then rounded to float. */
static void adamw_range(Sgd *opt, float *params, const float *grads, double lr, size_t lo,
                        size_t hi)
{
    const SgdConfig *c = &opt->cfg;
    const double t = (double)(opt->t > 0 ? opt->t : 1);
    const float decay = (float)(1.0 - lr * c->weight_decay);
    const float b1 = (float)c->beta1, b2 = (float)c->beta2;
    const float a1 = (float)(1.0 - c->beta1), a2 = (float)(1.0 - c->beta2);
    const float step_size = (float)(lr / (1.0 - pow(c->beta1, t)));
    const float bc2_sqrt = (float)sqrt(1.0 - pow(c->beta2, t));
    const float eps = (float)c->eps;
    float *m = opt->velocity, *v = opt->exp_avg_sq;
    for (size_t i = lo; i < hi; i++) {
        const float g = grads[i];
        params[i] *= decay;
        m[i] = m[i] * b1 + a1 * g;
        v[i] = v[i] * b2 + a2 * (g * g);
        const float denom = sqrtf(v[i]) / bc2_sqrt + eps;
        params[i] += -step_size * (m[i] / denom);
    }
}

void sgd_step_range(Sgd *opt, float *params, const float *grads, double lr, size_t lo, size_t hi)
{
    assert(lo <= hi && hi <= opt->n);
    if (opt->cfg.kind == OPT_ADAMW) {
        adamw_range(opt, params, grads, lr, lo, hi);
        return;
    }
    const float mu = (float)opt->cfg.momentum, wd = (float)opt->cfg.weight_decay;
    const float flr = (float)lr;
    float *v = opt->velocity;
    if (!v) {
        for (size_t i = lo; i < hi; i++) params[i] -= flr * (grads[i] + wd * params[i]);
        return;
    }
    if (opt->cfg.nesterov) {
        for (size_t i = lo; i < hi; i++) {
            float g = grads[i] + wd * params[i];
            v[i] = mu * v[i] + g;
            params[i] -= flr * (g + mu * v[i]);
        }
    } else {
        for (size_t i = lo; i < hi; i++) {
            float g = grads[i] + wd * params[i];
            v[i] = mu * v[i] + g;
            params[i] -= flr * v[i];
        }
    }
}

void sgd_cost(size_t n_params, const SgdConfig *cfg, double *flops, double *bytes)
{
    if (cfg->kind == OPT_ADAMW) {
        *flops = (cfg->weight_decay != 0.0 ? 14.0 : 12.0) * (double)n_params;
        *bytes = 28.0 * (double)n_params;
        return;
    }
    double per_flops = 2, per_bytes = 12; /* p -= lr g: read p and grad, write p */
    if (cfg->weight_decay != 0.0) per_flops += 2;
    if (cfg->momentum != 0.0) {
        per_flops += cfg->nesterov ? 4 : 2;
        per_bytes += 8; /* read and write the velocity */
    }
    *flops = per_flops * (double)n_params;
    *bytes = per_bytes * (double)n_params;
}

/* The warm-up's factor on the peak rate at progress `epoch` (1 after the warm-up). */
static double warmup_factor(const LrSchedule *s, double epoch, double steps_per_epoch, double scale)
{
    if (!(s->warmup_epochs > 0)) return 1.0;
    if (s->warmup_shape == WARMUP_EPOCH) { /* the Accordion code's, one epoch late */
        double e = floor(epoch + 1e-9) - 1.0;
        double frac = e <= 0 ? 0.0 : (e >= s->warmup_epochs ? 1.0 : e / s->warmup_epochs);
        return (1.0 + (scale - 1.0) * frac) / scale;
    }
    if (epoch >= s->warmup_epochs) return 1.0;
    double warm_steps = s->warmup_epochs * steps_per_epoch;
    double k = floor(epoch * steps_per_epoch + 1e-9);
    if (scale > 1.0) { /* from base_lr to the peak: step k at base_lr (1 + (scale - 1) k / S) */
        double frac = warm_steps > 0 ? k / warm_steps : 1.0;
        return frac < 1.0 ? (1.0 + (scale - 1.0) * frac) / scale : 1.0;
    }
    /* Step k (from 0) of the warm-up uses (k + 1) / warm-up steps of the rate. */
    double f = warm_steps > 0 ? (k + 1.0) / warm_steps : 1.0;
    return f < 1.0 ? f : 1.0;
}

double lr_at(const LrSchedule *s, double epoch, double steps_per_epoch)
{
    const double scale = s->peak_scale > 0 ? s->peak_scale : 1.0;
    double lr = s->base_lr * scale;
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
    return lr * warmup_factor(s, epoch, steps_per_epoch, scale);
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

const char *lr_warmup_shape_name(WarmupShape w)
{
    return w == WARMUP_EPOCH ? "epoch" : "step";
}
