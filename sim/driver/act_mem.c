/* act_mem.c: an estimate of the activations a GPU keeps for the backward (issue 50's memory per
 * GPU, `bellows bench`), from the workload profile alone: the profiles give each layer's flops
 * and its weights' shapes, not its activations' sizes. A layer with a weight of shape [a, b, ...]
 * (a linear layer's, either way the framework stores it; a convolution's [out, in, kh, kw]) and
 * c bias values doing F flops a sample applies it at T = F / (2 numel + c) positions (tokens, or
 * output pixels), from an input of T x one dimension to an output of T x the other (a
 * convolution's input T in values at stride 1); the estimate keeps T (a + b) values,
 * in the training's 16 bits (4 bytes at fp32 or tf32), at the batch per GPU. For a GPT block
 * that is 16 s b h values, 32 s b h bytes: Korthikanti et al. (MLSys 2023, "Reducing Activation
 * Recomputation in Large Transformer Models", section 4.1) count 34 s b h + 5 a s^2 b bytes a
 * layer, the last term the attention scores, which FlashAttention does not keep and this
 * estimate does not count; nor the parameter-free layers' own tensors, nor a head tied to the
 * embedding (no shape of its own), nor an embedding lookup (T < 1: not a product), nor what
 * activation checkpointing drops. A measured profile (seconds, no flops) gets
 * none: 0. */
#include "driver_impl.h"

#include <string.h>

static double layer_activations(const Workload *wl, const WorkloadLayer *l)
{
    const WorkloadTensor *w = NULL;
    double bias = 0; /* the vectors' values: a bias adds one flop an output */
    for (int t = 0; t < l->n_tensors; t++) {
        const WorkloadTensor *x = &wl->tensors[l->first_tensor + t];
        if (x->ndim >= 2 && !w) w = x;
        if (x->ndim < 2) bias += (double)x->numel;
    }
    if (!w) return 0;
    /* positions (tokens, output pixels): F = (2 x weights + bias) x positions */
    const double positions = l->fwd_flops / (2 * (double)w->numel + bias);
    if (positions < 1) return 0; /* a lookup (embedding), not a product */
    return positions * ((double)w->shape[0] + (double)w->shape[1]);
}

double driver_activation_bytes(const RunConfig *cfg)
{
    const Workload *wl = cfg->workload;
    if (!wl || wl->measured_batch > 0) return 0;
    const char *prec = cfg->cluster.precision;
    const double bytes = prec && (!strcmp(prec, "fp32") || !strcmp(prec, "tf32")) ? 4 : 2;
    double values = 0;
    for (int l = 0; l < wl->n_layers; l++) values += layer_activations(wl, &wl->layers[l]);
    return values * bytes * driver_price_batch(cfg, cfg->tc.batch);
}
