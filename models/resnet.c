/* resnet.c: a small residual network with batch normalisation, after He, Zhang, Ren, Sun, "Deep
 * residual learning for image recognition", CVPR 2016: the CIFAR ResNets of section 4.2 (3x3
 * convolutions, stages of BasicBlocks whose widths double as the resolution halves, global
 * average pooling, one linear layer) with option B's projection shortcuts (a 1x1 strided conv +
 * BN where the shape changes), and torchvision's layer names:
 *   conv1 3x3 stride 2 (w1 channels) - bn1 - ReLU
 *   stage s (w_s channels, `blocks` BasicBlocks; stages after the first start with stride 2):
 *     conv1 3x3 - bn1 - ReLU - conv2 3x3 - bn2, + shortcut (identity, or downsample: 1x1
 *     conv + BN where the shape changes), ReLU
 *   global average pool - fc.
 * Unlike the CIFAR nets (and like the ImageNet ones) the stem has stride 2: at 28x28 the stem's
 * output and the first stage cost four times as much, and one epoch must fit in a minute on two
 * cores. The defaults (widths 16,32,64, one block per stage: 28 -> 14 -> 14 -> 7 -> 4 pixels)
 * have 10 weight layers (7 convs on the main path, 2 projections, fc) and 77,754 parameters.
 * Convolutions have no bias (BN's beta is one). Batch norm follows PyTorch's BatchNorm2d
 * (momentum 0.1, eps 1e-5); its running statistics are the model's state, never parameters:
 * m->state holds, for each BN in the layer table's order, its running mean [c] then its running
 * variance [c]. Activations are NHWC; convolutions are im2col + sgemm (layers.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layers.h"
#include "xalloc.h"
#include "model.h"

#define RESNET_MAX_STAGES 4
_Static_assert(RESNET_MAX_STAGES <= MODEL_OPTION_MAX_INTS, "--widths fit a ModelInts");

enum { OPT_WIDTHS, OPT_BLOCKS };
static const ModelOption RESNET_OPTIONS[] = {
    [OPT_WIDTHS] = {.name = "widths",
                    .def = "16,32,64",
                    .unit = "channels",
                    .help = "channels of each stage (the stem has the first); one stage per count",
                    .min = 1,
                    .max = 512,
                    .min_count = 1,
                    .max_count = RESNET_MAX_STAGES,
                    .summary = 0},
    [OPT_BLOCKS] = {.name = "blocks",
                    .def = "1",
                    .unit = "blocks",
                    .help = "residual blocks per stage",
                    .min = 1,
                    .max = 8,
                    .min_count = 1,
                    .max_count = 1,
                    .summary = 0},
};

static const float BN_MOMENTUM = 0.1f, BN_EPS = 1e-5f; /* PyTorch's BatchNorm2d defaults */
enum { EVAL_CHUNK = 64 }; /* samples per pass in prediction mode, at least */

/* A convolution without bias followed by batch norm. */
typedef struct {
    ConvShape s;  /* s.n: the current pass's samples */
    int layer;    /* its weight in m->layers; BN's gamma and beta follow */
    size_t state; /* its running mean in m->state; the running variance follows */
    float *col;   /* [rows, k*k*cin], rows = n*oh*ow: im2col of its input */
    float *xhat;  /* [rows, cout]: the conv's output, normalised in place */
    float *y;     /* [rows, cout]: after BN (and the ReLU, or the residual sum) */
    float *rstd;  /* [cout] */
} ConvBn;

typedef struct {
    ConvBn c1, c2, down;
    int has_down; /* 0: the shortcut is the identity */
} Block;

typedef struct {
    int cap; /* samples the activation buffers hold */
    int n_blocks;
    ConvBn stem;
    Block *blk;                   /* [n_blocks] */
    int fc;                       /* fc.weight in m->layers */
    int c_last, hw_last;          /* the last stage's channels and pixels */
    size_t col_max, act_max;      /* per sample: the largest im2col and activation */
    float *pool, *logits, *dpool; /* [cap, c_last], [cap, classes], [cap, c_last] */
    float *dcol;                  /* [cap * col_max] */
    float *g[4];                  /* [cap * act_max] gradient scratch */
    float *pred;                  /* [pred_cap, classes]: prediction mode's logits */
    int pred_cap;
} ResNet;

static int grow(void *pp, size_t bytes)
{
    void **p = pp;
    void *q = bw_xrealloc(*p, bytes ? bytes : 1, "resnet.c: q");
    if (!q) return 0;
    *p = q;
    return 1;
}

static size_t conv_rows(const ConvShape *s)
{
    return (size_t)s->n * (size_t)conv_out_h(s) * (size_t)conv_out_w(s);
}

/* Appends a conv (no bias) and its BN to the layer table and the state. */
static void convbn_add(Model *m, ConvBn *u, ConvShape s, const char *conv, const char *bn)
{
    char name[64];
    u->s = s;
    u->layer = m->n_layers;
    u->state = m->n_state;
    m->n_state += 2 * (size_t)s.cout;
    model_add_layer(m, conv, s.cout, s.k * s.k * s.cin, 2);
    snprintf(name, sizeof name, "%.48s.weight", bn);
    model_add_layer(m, name, s.cout, 1, 1);
    snprintf(name, sizeof name, "%.48s.bias", bn);
    model_add_layer(m, name, s.cout, 1, 1);
}

static ConvShape conv_shape(int h, int w, int cin, int cout, int k, int stride)
{
    return (ConvShape){
        .n = 1, .h = h, .w = w, .cin = cin, .cout = cout, .k = k, .pad = k / 2, .stride = stride};
}

/* Every conv of the net in order (stem, then each block's c1, c2, down): the i-th, or NULL. */
static ConvBn *unit_at(ResNet *r, int i)
{
    if (i == 0) return &r->stem;
    i--;
    if (i >= 3 * r->n_blocks) return NULL;
    Block *b = &r->blk[i / 3];
    ConvBn *u[3] = {&b->c1, &b->c2, b->has_down ? &b->down : NULL};
    return u[i % 3];
}
#define FOR_UNITS(r, u)                                                                            \
    for (int u##_i = 0, u##_n = 1 + 3 * (r)->n_blocks; u##_i < u##_n; u##_i++)                     \
        for (ConvBn *u = unit_at((r), u##_i); u; u = NULL)

static void resnet_setup_stages(Model *m, ResNet *r)
{
    const ModelConfig *c = &m->cfg;
    const ModelInts *wd = &c->opt[OPT_WIDTHS];
    const int per = c->opt[OPT_BLOCKS].v[0];
    int h = c->in_rows, w = c->in_cols, cin = wd->v[0];
    char conv[64], bn[64];
    convbn_add(m, &r->stem, conv_shape(h, w, c->in_channels, cin, 3, 2), "conv1.weight", "bn1");
    h = conv_out_h(&r->stem.s), w = conv_out_w(&r->stem.s);
    for (int st = 0, i = 0; st < wd->n; st++)
        for (int k = 0; k < per; k++, i++) {
            Block *b = &r->blk[i];
            int cout = wd->v[st], stride = k == 0 && st > 0 ? 2 : 1;
            ConvShape s1 = conv_shape(h, w, cin, cout, 3, stride);
            snprintf(conv, sizeof conv, "layer%d.%d.conv1.weight", st + 1, k);
            snprintf(bn, sizeof bn, "layer%d.%d.bn1", st + 1, k);
            convbn_add(m, &b->c1, s1, conv, bn);
            int oh = conv_out_h(&s1), ow = conv_out_w(&s1);
            snprintf(conv, sizeof conv, "layer%d.%d.conv2.weight", st + 1, k);
            snprintf(bn, sizeof bn, "layer%d.%d.bn2", st + 1, k);
            convbn_add(m, &b->c2, conv_shape(oh, ow, cout, cout, 3, 1), conv, bn);
            b->has_down = stride != 1 || cin != cout;
            if (b->has_down) {
                snprintf(conv, sizeof conv, "layer%d.%d.downsample.0.weight", st + 1, k);
                snprintf(bn, sizeof bn, "layer%d.%d.downsample.1", st + 1, k);
                convbn_add(m, &b->down, conv_shape(h, w, cin, cout, 1, stride), conv, bn);
            }
            h = oh, w = ow, cin = cout;
        }
    r->c_last = cin;
    r->hw_last = h * w;
}

static int resnet_setup(Model *m, BwError *err)
{
    ResNet *r = bw_xcalloc(1, sizeof *r, "resnet.c: r");
    m->impl = r;
    if (!r) return bw_fail(err, BW_ERUNTIME, "out of memory");
    const ModelConfig *c = &m->cfg;
    r->n_blocks = c->opt[OPT_WIDTHS].n * c->opt[OPT_BLOCKS].v[0];
    r->blk = bw_xcalloc((size_t)r->n_blocks, sizeof *r->blk, "resnet.c: r->blk");
    if (!r->blk) return bw_fail(err, BW_ERUNTIME, "out of memory");
    resnet_setup_stages(m, r);
    r->fc = m->n_layers;
    model_add_layer(m, "fc.weight", c->classes, r->c_last, 2);
    model_add_layer(m, "fc.bias", c->classes, 1, 1);
    r->act_max = (size_t)c->in_channels * c->in_rows * c->in_cols;
    FOR_UNITS(r, u)
    {
        size_t col = conv_col_size(&u->s), act = conv_rows(&u->s) * (size_t)u->s.cout;
        r->col_max = col > r->col_max ? col : r->col_max;
        r->act_max = act > r->act_max ? act : r->act_max;
        if (!grow(&u->rstd, sizeof(float) * (size_t)u->s.cout))
            return bw_fail(err, BW_ERUNTIME, "out of memory");
    }
    return BW_OK;
}

/* BN's gamma 1 and beta 0, running mean 0 and variance 1, as PyTorch initialises them. */
static void resnet_init(Model *m)
{
    ResNet *r = m->impl;
    FOR_UNITS(r, u)
    {
        int c = u->s.cout;
        float *gamma = m->params + m->layers[u->layer + 1].offset;
        float *beta = m->params + m->layers[u->layer + 2].offset;
        float *run_var = m->state + u->state + c;
        for (int j = 0; j < c; j++) gamma[j] = 1.0f, beta[j] = 0.0f, run_var[j] = 1.0f;
        memset(m->state + u->state, 0, sizeof(float) * (size_t)c);
    }
}

static void resnet_free_impl(Model *m)
{
    ResNet *r = m->impl;
    if (!r) return;
    if (!r->blk) r->n_blocks = 0; /* setup ran out of memory: only the stem's fields to free */
    FOR_UNITS(r, u)
    {
        free(u->col), free(u->xhat), free(u->y), free(u->rstd);
    }
    free(r->blk);
    free(r->pool), free(r->logits), free(r->dpool), free(r->dcol), free(r->pred);
    for (int i = 0; i < 4; i++) free(r->g[i]);
    free(r);
    m->impl = NULL;
}

/* Buffers for n samples, and every shape set to n. */
static int resnet_reserve(Model *m, int n)
{
    ResNet *r = m->impl;
    const size_t f = sizeof(float);
    if (n > r->cap) {
        int ok = 1;
        FOR_UNITS(r, u)
        {
            u->s.n = n;
            size_t act = conv_rows(&u->s) * (size_t)u->s.cout * f;
            ok = ok && grow(&u->col, conv_col_size(&u->s) * f) && grow(&u->xhat, act) &&
                 grow(&u->y, act);
        }
        size_t nn = (size_t)n;
        ok = ok && grow(&r->pool, nn * r->c_last * f) && grow(&r->dpool, nn * r->c_last * f) &&
             grow(&r->logits, nn * m->cfg.classes * f) && grow(&r->dcol, nn * r->col_max * f);
        for (int i = 0; i < 4; i++) ok = ok && grow(&r->g[i], nn * r->act_max * f);
        if (!ok) {
            r->cap = 0; /* some buffers may be short now */
            return 0;
        }
        r->cap = n;
    }
    FOR_UNITS(r, u) u->s.n = n;
    return 1;
}

/* conv -> BN (the batch's statistics in train mode, the running ones otherwise) [-> ReLU]. */
static void convbn_forward(Model *m, ConvBn *u, const float *x, int relu)
{
    const float *P = m->params;
    const LayerView *L = m->layers + u->layer;
    const float *gamma = P + L[1].offset, *beta = P + L[2].offset;
    float *run_mean = m->state + u->state, *run_var = run_mean + u->s.cout;
    int rows = (int)conv_rows(&u->s), c = u->s.cout;
    conv2d_forward(u->xhat, u->col, x, P + L[0].offset, NULL, &u->s);
    if (m->train)
        batchnorm_forward(u->y, u->xhat, u->rstd, run_mean, run_var, u->xhat, gamma, beta, rows, c,
                          BN_MOMENTUM, BN_EPS);
    else
        batchnorm_forward_eval(u->y, u->xhat, gamma, beta, run_mean, run_var, rows, c, BN_EPS);
    if (relu) relu_forward(u->y, (size_t)rows * c);
}

/* d: dL/d(BN's output) [rows, cout], overwritten; fills the unit's gradients and, unless dinp
 * is NULL, dL/d(input) into dinp. */
static void convbn_backward(Model *m, ResNet *r, ConvBn *u, float *d, float *dinp)
{
    const LayerView *L = m->layers + u->layer;
    float *G = m->grads;
    int rows = (int)conv_rows(&u->s), c = u->s.cout;
    batchnorm_backward(d, G + L[1].offset, G + L[2].offset, d, u->xhat, u->rstd,
                       m->params + L[1].offset, rows, c);
    conv2d_backward(dinp, G + L[0].offset, NULL, r->dcol, d, u->col, m->params + L[0].offset,
                    &u->s);
}

static size_t unit_count(const ConvBn *u)
{
    return conv_rows(&u->s) * (size_t)u->s.cout;
}

/* out = ReLU(c2(ReLU(c1(x))) + shortcut(x)), left in c2.y. */
static const float *block_forward(Model *m, Block *b, const float *x)
{
    convbn_forward(m, &b->c1, x, 1);
    convbn_forward(m, &b->c2, b->c1.y, 0);
    const float *sc = x;
    if (b->has_down) {
        convbn_forward(m, &b->down, x, 0);
        sc = b->down.y;
    }
    size_t count = unit_count(&b->c2);
    float *y = b->c2.y;
    for (size_t i = 0; i < count; i++) y[i] += sc[i];
    relu_forward(y, count);
    return y;
}

/* d: dL/d(block output), overwritten; dx receives dL/d(block input); t and u are scratch. */
static void block_backward(Model *m, ResNet *r, Block *b, float *d, float *dx, float *t, float *u)
{
    size_t count = unit_count(&b->c2);
    relu_backward(d, b->c2.y, count);
    if (b->has_down) {
        memcpy(t, d, count * sizeof(float));
        convbn_backward(m, r, &b->down, t, dx);
    } else {
        memcpy(dx, d, count * sizeof(float));
    }
    convbn_backward(m, r, &b->c2, d, u);
    relu_backward(u, b->c1.y, unit_count(&b->c1));
    convbn_backward(m, r, &b->c1, u, t);
    size_t in = (size_t)b->c1.s.n * b->c1.s.h * b->c1.s.w * b->c1.s.cin;
    for (size_t i = 0; i < in; i++) dx[i] += t[i];
}

/* The whole net on n samples (buffers reserved), logits into out [n, classes]. */
static void resnet_pass(Model *m, const float *x, int n, float *out)
{
    ResNet *r = m->impl;
    convbn_forward(m, &r->stem, x, 1);
    const float *a = r->stem.y;
    for (int i = 0; i < r->n_blocks; i++) a = block_forward(m, &r->blk[i], a);
    avgpool_forward(r->pool, a, n, r->hw_last, r->c_last);
    const LayerView *L = m->layers + r->fc;
    linear_forward(out, r->pool, m->params + L[0].offset, m->params + L[1].offset, n, r->c_last,
                   m->cfg.classes);
}

/* Train mode: one pass over the batch, whose statistics BN uses. Prediction: passes of at
 * least EVAL_CHUNK samples, so the buffers stay the size of a training batch. */
static const float *resnet_forward(Model *m, const float *x, int n)
{
    ResNet *r = m->impl;
    if (m->train) {
        if (!resnet_reserve(m, n)) return NULL;
        resnet_pass(m, x, n, r->logits);
        return r->logits;
    }
    const int classes = m->cfg.classes;
    const size_t dim = (size_t)m->cfg.in_channels * m->cfg.in_rows * m->cfg.in_cols;
    if (n > r->pred_cap) {
        if (!grow(&r->pred, (size_t)n * classes * sizeof(float))) return NULL;
        r->pred_cap = n;
    }
    int chunk = r->cap > EVAL_CHUNK ? r->cap : EVAL_CHUNK;
    for (int at = 0; at < n; at += chunk) {
        int k = n - at < chunk ? n - at : chunk;
        if (!resnet_reserve(m, k)) return NULL;
        resnet_pass(m, x + (size_t)at * dim, k, r->pred + (size_t)at * classes);
    }
    return r->pred;
}

static void resnet_backward(Model *m, const float *x, const float *dlogits, int n)
{
    (void)x; /* the stem's patches (col) hold what its weight gradient needs */
    ResNet *r = m->impl;
    const LayerView *L = m->layers + r->fc;
    linear_backward(r->dpool, m->grads + L[0].offset, m->grads + L[1].offset, dlogits, r->pool,
                    m->params + L[0].offset, n, r->c_last, m->cfg.classes);
    float *d = r->g[0], *dx = r->g[1];
    avgpool_backward(d, r->dpool, n, r->hw_last, r->c_last);
    for (int i = r->n_blocks - 1; i >= 0; i--) {
        block_backward(m, r, &r->blk[i], d, dx, r->g[2], r->g[3]);
        float *t = d;
        d = dx, dx = t;
    }
    relu_backward(d, r->stem.y, unit_count(&r->stem));
    convbn_backward(m, r, &r->stem, d, NULL);
}

/* Multiply-adds of the convolutions and fc, 2 flops each: forward and weight gradient for all,
 * input gradient for all but the stem. BN, ReLU, the sums and the pooling are not counted
 * (a few flops per activation against hundreds per conv output). */
static double resnet_flops_per_sample(const Model *m)
{
    ResNet *r = m->impl;
    double total = 0.0;
    FOR_UNITS(r, u)
    {
        ConvShape s = u->s;
        s.n = 1;
        double macs = (double)conv_out_h(&s) * conv_out_w(&s) * s.cout * s.k * s.k * s.cin;
        total += (u == &r->stem ? 2.0 : 3.0) * macs;
    }
    total += 3.0 * r->c_last * m->cfg.classes;
    return 2.0 * total;
}

const ModelOps model_resnet_ops = {
    .name = "resnet",
    .help = "residual net with batch norm: strided 3x3 stem, stages of BasicBlocks, average "
            "pool, linear (--widths, --blocks)",
    .options = RESNET_OPTIONS,
    .n_options = (int)(sizeof RESNET_OPTIONS / sizeof *RESNET_OPTIONS),
    .setup = resnet_setup,
    .init = resnet_init,
    .forward = resnet_forward,
    .backward = resnet_backward,
    .flops_per_sample = resnet_flops_per_sample,
    .free_impl = resnet_free_impl,
};
