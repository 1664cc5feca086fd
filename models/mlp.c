/* mlp.c: the multilayer perceptron (ReLU hidden layers, linear output) and, as its special case
 * with no hidden layer, multinomial logistic regression ("softmax"). Layers are named
 * fc1.weight, fc1.bias, ..., out.weight, out.bias, in that order in the flat buffer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layers.h"
#include "model.h"

typedef struct {
    int cap;                      /* batch capacity of the buffers */
    float *act[MODEL_MAX_HIDDEN]; /* post-ReLU output of hidden layer l [cap, hidden[l]] */
    float *logits;                /* [cap, classes] */
    float *dbuf[2];               /* ping-pong activation gradients [cap, widest] */
} Mlp;

static int mlp_in_dim(const Model *m)
{
    return m->cfg.in_channels * m->cfg.in_rows * m->cfg.in_cols;
}

static int mlp_setup(Model *m, BwError *err)
{
    const ModelConfig *c = &m->cfg;
    if (c->n_hidden < 0 || c->n_hidden > MODEL_MAX_HIDDEN)
        return bw_fail(err, BW_EUSAGE, "--hidden: between 0 and %d layers", MODEL_MAX_HIDDEN);
    for (int l = 0; l < c->n_hidden; l++)
        if (c->hidden[l] <= 0 || c->hidden[l] > 65536)
            return bw_fail(err, BW_EUSAGE, "--hidden: layer widths must be in [1, 65536], got %d",
                           c->hidden[l]);
    int in = mlp_in_dim(m);
    char name[32];
    for (int l = 0; l < c->n_hidden; l++) {
        snprintf(name, sizeof name, "fc%d.weight", l + 1);
        model_add_layer(m, name, c->hidden[l], in, 2);
        snprintf(name, sizeof name, "fc%d.bias", l + 1);
        model_add_layer(m, name, c->hidden[l], 1, 1);
        in = c->hidden[l];
    }
    model_add_layer(m, "out.weight", c->classes, in, 2);
    model_add_layer(m, "out.bias", c->classes, 1, 1);
    m->impl = calloc(1, sizeof(Mlp));
    return m->impl ? BW_OK : bw_fail(err, BW_ERUNTIME, "out of memory");
}

static int softmax_setup(Model *m, BwError *err)
{
    m->cfg.n_hidden = 0;
    return mlp_setup(m, err);
}

static void mlp_free_impl(Model *m)
{
    Mlp *s = m->impl;
    if (!s) return;
    for (int l = 0; l < MODEL_MAX_HIDDEN; l++) free(s->act[l]);
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
    int widest = c->classes;
    for (int l = 0; l < c->n_hidden; l++) {
        widest = c->hidden[l] > widest ? c->hidden[l] : widest;
        float *p = realloc(s->act[l], (size_t)n * c->hidden[l] * sizeof(float));
        if (!p) return 0;
        s->act[l] = p;
    }
    float *p = realloc(s->logits, (size_t)n * c->classes * sizeof(float));
    if (!p) return 0;
    s->logits = p;
    for (int k = 0; k < 2; k++) {
        p = realloc(s->dbuf[k], (size_t)n * widest * sizeof(float));
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
    for (int l = 0; l < m->cfg.n_hidden; l++, v += 2) {
        int h = m->cfg.hidden[l];
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
    const ModelConfig *c = &m->cfg;
    const float *dout = dlogits;
    int out_dim = c->classes;
    for (int l = c->n_hidden; l >= 0; l--) {
        const LayerView *v = &m->layers[2 * l];
        const float *in = l > 0 ? s->act[l - 1] : x;
        int in_dim = l > 0 ? c->hidden[l - 1] : mlp_in_dim(m);
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
    double flops = 0.0;
    int in = mlp_in_dim(m);
    for (int l = 0; l <= m->cfg.n_hidden; l++) {
        int out = l < m->cfg.n_hidden ? m->cfg.hidden[l] : m->cfg.classes;
        double macs = (double)in * out;
        flops += 2.0 * macs * (l == 0 ? 2.0 : 3.0);
        in = out;
    }
    return flops;
}

const ModelOps model_mlp_ops = {
    .name = "mlp",
    .help = "multilayer perceptron, ReLU hidden layers (--hidden, default 128)",
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
