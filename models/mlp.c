/* mlp.c: the multilayer perceptron (ReLU hidden layers, linear output) and, as its special case
 * with no hidden layer, multinomial logistic regression ("softmax"). Layers are named
 * fc1.weight, fc1.bias, ..., out.weight, out.bias, in that order in the flat buffer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layers.h"
#include "xalloc.h"
#include "model.h"

#define MLP_MAX_HIDDEN 8
_Static_assert(MLP_MAX_HIDDEN <= MODEL_OPTION_MAX_INTS, "--hidden's widths fit a ModelInts");

enum { OPT_HIDDEN };
static const ModelOption MLP_OPTIONS[] = {
    [OPT_HIDDEN] = {.name = "hidden",
                    .def = "128",
                    .unit = "units",
                    .help = "hidden layer widths",
                    .min = 1,
                    .max = 65536,
                    .min_count = 1,
                    .max_count = MLP_MAX_HIDDEN,
                    .summary = 1},
};

typedef struct {
    ModelInts hidden;           /* the hidden layer widths (none for softmax) */
    int cap;                    /* batch capacity of the buffers */
    float *act[MLP_MAX_HIDDEN]; /* post-ReLU output of hidden layer l [cap, hidden[l]] */
    float *logits;              /* [cap, classes] */
    float *dbuf[2];             /* ping-pong activation gradients [cap, widest] */
} Mlp;

static int mlp_in_dim(const Model *m)
{
    return m->cfg.in_channels * m->cfg.in_rows * m->cfg.in_cols;
}

/* The layers for these hidden widths (checked: at most MLP_MAX_HIDDEN, each positive). */
static int mlp_build(Model *m, const ModelInts *hidden, BwError *err)
{
    Mlp *s = bw_xcalloc(1, sizeof(Mlp), "mlp.c: s");
    if (!s) return bw_fail(err, BW_ERUNTIME, "out of memory");
    m->impl = s;
    s->hidden = *hidden;
    int in = mlp_in_dim(m);
    char name[32];
    for (int l = 0; l < hidden->n; l++) {
        snprintf(name, sizeof name, "fc%d.weight", l + 1);
        model_add_layer(m, name, hidden->v[l], in, 2);
        snprintf(name, sizeof name, "fc%d.bias", l + 1);
        model_add_layer(m, name, hidden->v[l], 1, 1);
        in = hidden->v[l];
    }
    model_add_layer(m, "out.weight", m->cfg.classes, in, 2);
    model_add_layer(m, "out.bias", m->cfg.classes, 1, 1);
    return BW_OK;
}

static int mlp_setup(Model *m, BwError *err)
{
    return mlp_build(m, &m->cfg.opt[OPT_HIDDEN], err);
}

static int softmax_setup(Model *m, BwError *err)
{
    const ModelInts none = {0};
    return mlp_build(m, &none, err);
}

static void mlp_free_impl(Model *m)
{
    Mlp *s = m->impl;
    if (!s) return;
    for (int l = 0; l < MLP_MAX_HIDDEN; l++) free(s->act[l]);
    free(s->logits);
    free(s->dbuf[0]);
    free(s->dbuf[1]);
    free(s);
    m->impl = NULL;
}

static int mlp_reserve(Model *m, int n)
{
    Mlp *s = m->impl;
    if (n <= s->cap) return 1;
    const ModelConfig *c = &m->cfg;
    const ModelInts *hidden = &s->hidden;
    int widest = c->classes;
    for (int l = 0; l < hidden->n; l++) {
        widest = hidden->v[l] > widest ? hidden->v[l] : widest;
        float *p = bw_xrealloc(s->act[l], (size_t)n * hidden->v[l] * sizeof(float), "mlp.c: p");
        if (!p) return 0;
        s->act[l] = p;
    }
    float *p = bw_xrealloc(s->logits, (size_t)n * c->classes * sizeof(float), "mlp.c: p");
    if (!p) return 0;
    s->logits = p;
    for (int k = 0; k < 2; k++) {
        p = bw_xrealloc(s->dbuf[k], (size_t)n * widest * sizeof(float), "mlp.c: p");
        if (!p) return 0;
        s->dbuf[k] = p;
    }
    s->cap = n;
    return 1;
}

static const float *mlp_forward(Model *m, const float *x, int n)
{
    if (!mlp_reserve(m, n)) return NULL;
    Mlp *s = m->impl;
    const float *in = x;
    int in_dim = mlp_in_dim(m);
    const LayerView *v = m->layers;
    for (int l = 0; l < s->hidden.n; l++, v += 2) {
        int h = s->hidden.v[l];
        linear_forward(s->act[l], in, m->params + v[0].offset, m->params + v[1].offset, n, in_dim,
                       h);
        relu_forward(s->act[l], (size_t)n * h);
        in = s->act[l];
        in_dim = h;
    }
    linear_forward(s->logits, in, m->params + v[0].offset, m->params + v[1].offset, n, in_dim,
                   m->cfg.classes);
    return s->logits;
}

static void mlp_backward(Model *m, const float *x, const float *dlogits, int n)
{
    Mlp *s = m->impl;
    const float *dout = dlogits;
    int out_dim = m->cfg.classes;
    for (int l = s->hidden.n; l >= 0; l--) {
        const LayerView *v = &m->layers[2 * l];
        const float *in = l > 0 ? s->act[l - 1] : x;
        int in_dim = l > 0 ? s->hidden.v[l - 1] : mlp_in_dim(m);
        float *din = l > 0 ? s->dbuf[l & 1] : NULL;
        linear_backward(din, m->grads + v[0].offset, m->grads + v[1].offset, dout, in,
                        m->params + v[0].offset, n, in_dim, out_dim);
        if (din) relu_backward(din, s->act[l - 1], (size_t)n * in_dim);
        dout = din;
        out_dim = in_dim;
    }
}

static double mlp_flops_per_sample(const Model *m)
{
    /* Per linear layer: forward in*out multiply-adds, weight gradient the same, input gradient
     * the same except for the first layer. */
    const ModelInts *hidden = &((const Mlp *)m->impl)->hidden;
    double flops = 0.0;
    int in = mlp_in_dim(m);
    for (int l = 0; l <= hidden->n; l++) {
        int out = l < hidden->n ? hidden->v[l] : m->cfg.classes;
        double macs = (double)in * out;
        flops += 2.0 * macs * (l == 0 ? 2.0 : 3.0);
        in = out;
    }
    return flops;
}

const ModelOps model_mlp_ops = {
    .name = "mlp",
    .help = "multilayer perceptron, ReLU hidden layers (--hidden, default 128)",
    .options = MLP_OPTIONS,
    .n_options = (int)(sizeof MLP_OPTIONS / sizeof *MLP_OPTIONS),
    .setup = mlp_setup,
    .forward = mlp_forward,
    .backward = mlp_backward,
    .flops_per_sample = mlp_flops_per_sample,
    .free_impl = mlp_free_impl,
};

const ModelOps model_softmax_ops = {
    .name = "softmax",
    .help = "multinomial logistic regression (one linear layer)",
    .setup = softmax_setup,
    .forward = mlp_forward,
    .backward = mlp_backward,
    .flops_per_sample = mlp_flops_per_sample,
    .free_impl = mlp_free_impl,
};
