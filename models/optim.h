/* optim.h: SGD with momentum (heavy ball or Nesterov) and weight decay, with PyTorch's
 * torch.optim.SGD semantics, AdamW with torch.optim.AdamW's (Loshchilov & Hutter, "Decoupled
 * Weight Decay Regularization", ICLR 2019; the inner optimizer of DiLoCo), and learning-rate
 * schedules with linear warm-up. The schedules are functions of training progress measured in
 * epochs (a fraction within an epoch), so they stay right when the batch size, and so the steps per
 * epoch, changes during a run. */
#ifndef BELLOWS_OPTIM_H
#define BELLOWS_OPTIM_H

#include <stddef.h>

#include "status.h"

typedef enum { OPT_SGD = 0, OPT_ADAMW = 1 } OptKind;

/* The step's rule. SGD (kind OPT_SGD, the zero value) reads momentum, weight_decay and nesterov;
 * AdamW reads weight_decay (decoupled: p *= 1 - lr wd) and beta1, beta2, eps (0 each: PyTorch's
 * defaults 0.9, 0.999, 1e-8). */
typedef struct {
    double momentum;     /* 0 disables the velocity buffer */
    double weight_decay; /* SGD: L2 coefficient added to the gradient; AdamW: decoupled */
    int nesterov;
    OptKind kind;
    double beta1, beta2, eps;
} SgdConfig;

typedef struct {
    SgdConfig cfg;
    size_t n;
    float *velocity;   /* [n], zero at start; AdamW: the first moment (exp_avg) */
    float *exp_avg_sq; /* [n] AdamW's second moment, else NULL */
    long t;            /* steps begun (sgd_tick), AdamW's bias correction */
} Sgd;

int sgd_init(Sgd *opt, size_t n, SgdConfig cfg, BwError *err);
void sgd_free(Sgd *opt); /* safe twice */
/* One update of params [n] from grads [n] at learning rate lr:
 *   g = grad + wd * p;  v = mu * v + g;  g = nesterov ? g + mu * v : v;  p -= lr * g */
/* AdamW (torch.optim.AdamW, foreach=False, amsgrad=False; torch/optim/adamw.py
 * _single_tensor_adamw), at step t (from 1):
 *   p *= 1 - lr wd;  m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2;
 *   p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
 * sgd_step is sgd_tick then sgd_step_range over all n. */
void sgd_step(Sgd *opt, float *params, const float *grads, double lr);
/* Begins a step (AdamW's t += 1); the ranges of one step follow it. */
void sgd_tick(Sgd *opt);
/* The update on the parameters [lo, hi) only, of the step sgd_tick began (each parameter's
 * update is its own: steps over disjoint ranges, on any threads, give sgd_step's bits). */
void sgd_step_range(Sgd *opt, float *params, const float *grads, double lr, size_t lo, size_t hi);
/* DiLoCo's outer step (Douillard et al., arXiv 2311.08105, Algorithm 1) on theta_global [n]
 * from the sum over `replicas` replicas of their parameters: the outer gradient
 * delta = theta_global - sum / replicas (the replicas' mean of theta_global - theta_i, into
 * delta [n]), then sgd_step(outer, theta_global, delta, lr): with outer's Nesterov momentum,
 * torch.optim.SGD(nesterov=True)'s step, as pytorch/torchft's DiLoCo applies it. */
void outer_step(Sgd *outer, float *global, const float *sum, int replicas, float *delta, double lr);
/* DiLoCo's eager updates (Kale, Douillard, Donchev, arXiv 2502.12996; sim/driver/outer_eager.c):
 * the outer gradient g = mean_prev + (own - own_prev) / replicas, this round's own outer
 * gradient standing for the replica's share and the last round's mean for the others' (into
 * g [n]; own_prev := own), then sgd_step(outer, global, g, lr). */
void outer_eager_step(Sgd *opt, float *global, float *own_prev, const float *mean_prev,
                      const float *own, int replicas, double lr, float *g);
/* Streaming DiLoCo's quantisation of an outer gradient x [n] to `bits` (1 to 16; 32: none), in
 * place, as the receivers decode it: a uniform symmetric quantiser of L = 2^(bits-1) - 1 levels
 * each side, step max|x| / L, round to nearest; 1 bit: sign(x) x mean|x|. What it sends:
 * outer_quantised_floats, ceil(n bits / 32) words and one for the scale. */
void outer_quantise(float *x, size_t n, int bits);
size_t outer_quantised_floats(size_t n, int bits);
/* The kind's name ("sgd", "adamw"). */
const char *opt_kind_name(OptKind k);
/* What one sgd_step over n_params parameters costs a GPU, for a roofline time
 * max(flops / rate, bytes / memory bandwidth), counted as one fused pass (torch.optim.SGD with
 * fused=True or foreach, each tensor read and written once): per parameter, 2 flops for
 * p -= lr g, 2 more for the weight decay (when nonzero: g += wd p), 2 for the momentum
 * (v = mu v + g) and 2 for Nesterov's g + mu v; 12 bytes (read p and grad, write p), 8 more with
 * momentum (read and write v). E.g. momentum and weight decay: 6 flops, 20 bytes. AdamW: 2 for
 * the decay (when nonzero), 3 for m, 4 for v, 5 for the update (sqrt, scale, eps, divide,
 * p -= ...): 12 to 14 flops, 28 bytes (read p, grad, m, v; write p, m, v). */
void sgd_cost(size_t n_params, const SgdConfig *cfg, double *flops, double *bytes);

typedef enum { LR_CONSTANT, LR_STEP, LR_COSINE } LrKind;
#define LR_MAX_MILESTONES 16

/* The warm-up's shape (--warmup-shape). Without a peak scale the rate climbs from
 * base_lr / (warm-up steps) to base_lr; with one (peak_scale > 1, --lr-scale workers) it climbs
 * from base_lr to base_lr x peak_scale, as Goyal et al. ("Accurate, Large Minibatch SGD", 2017,
 * section 2.2, gradual warm-up: from eta to k eta) do:
 *   WARMUP_STEP:  linearly per step over warmup_epochs (Goyal et al.'s per-iteration ramp);
 *   WARMUP_EPOCH: once per epoch, one epoch late, as the Accordion authors' code sets each
 *                 epoch's rate at the end of the previous one from that epoch's index
 *                 (uw-mad-dash/Accordion main.py:222-223, get_lr, called at main.py:594): epoch
 *                 e runs at base_lr (1 + (peak_scale - 1) min(max(e - 1, 0) / warmup_epochs, 1)),
 *                 so epochs 0 and 1 at base_lr and the peak from epoch warmup_epochs + 1. */
typedef enum { WARMUP_STEP, WARMUP_EPOCH } WarmupShape;

typedef struct {
    LrKind kind;
    double base_lr;
    double warmup_epochs; /* the warm-up's length (0: none); WarmupShape says its shape */
    WarmupShape warmup_shape;
    /* The rate after the warm-up (and before any decay or cosine) is base_lr x peak_scale; 0
     * reads as 1. scale_by_workers (--lr-scale workers): the simulated run sets peak_scale to
     * its worker count, Goyal et al.'s linear scaling rule with k = workers (the Accordion code:
     * main.py:222, max_factor = world size). */
    double peak_scale;
    int scale_by_workers;
    /* step: multiply by decay_factor at each milestone epoch (sorted ascending) */
    double decay_factor;
    int n_milestones;
    double milestones[LR_MAX_MILESTONES];
    double total_epochs; /* cosine: reaches 0 at the end */
} LrSchedule;

/* The learning rate at training progress `epoch` (e.g. 2.5 = halfway through the third epoch),
 * for a run with steps_per_epoch steps (used by the warm-up, which ramps per step). */
double lr_at(const LrSchedule *s, double epoch, double steps_per_epoch);
const char *lr_kind_name(LrKind k);
const char *lr_warmup_shape_name(WarmupShape w);

#endif
