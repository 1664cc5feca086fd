/* cnn.c: a small convolutional network in the LeNet pattern:
 *   conv1 (k x k, same padding) -> ReLU -> 2x2 max pool -> conv2 -> ReLU -> 2x2 max pool -> fc.
 * Activations are NHWC. Each conv block is one fused kernel (conv_fast.h): conv1, whose patch
 * is small (k*k*cin = 9 by default), a direct loop; conv2 im2col + sgemm. Only the pooled
 * outputs and their window positions are kept for the backward. With the defaults on 28x28
 * inputs: conv1 1->16, conv2 16->32 (3x3), fc 7*7*32 -> 10: 20,490 parameters.
 * The batch goes through both conv blocks in blocks of a few images (conv2's gemm block), on
 * as many threads as OpenBLAS was given (blas_cpu_threads), each taking the next block; OpenBLAS
 * itself runs single-threaded meanwhile. Each block's weight gradients are kept apart and
 * summed in block order, so the results do not depend on the thread count. */
#include <cblas.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blas_cpu.h"
#include "xalloc.h"
#include "conv_fast.h"
#include "layers.h"
#include "model.h"
#include "parallel.h"

enum { OPT_CHANNELS, OPT_KERNEL };
static const ModelOption CNN_OPTIONS[] = {
    [OPT_CHANNELS] = {.name = "channels",
                      .def = "16,32",
                      .unit = "channels",
                      .help = "output channels of the two conv blocks",
                      .min = 1,
                      .max = 1024,
                      .min_count = 2,
                      .max_count = 2,
                      .summary = 1},
    /* summary.json has never recorded the kernel side */
    [OPT_KERNEL] = {.name = "kernel",
                    .def = "3",
                    .unit = "pixels",
                    .help = "square kernel side (odd)",
                    .min = 1,
                    .max = 11,
                    .min_count = 1,
                    .max_count = 1,
                    .summary = 0},
};

typedef struct {
    int cap, cap_threads;
    ConvShape s1, s2; /* shapes for the current batch */
    int direct1;      /* conv1 by the direct kernels (a small patch) */
    int per;          /* images per block */
    float *p1 /* [n, h/2, w/2, c1] */, *p2 /* [n, h/4, w/4, c2] */, *logits /* [n, classes] */;
    uint8_t *arg1, *arg2; /* window position of each pooled maximum, as p1, p2 */
    float *dp2, *dp1;     /* gradients of p2, p1 */
    float *scratch;       /* [cap_threads, scratch_floats]: the conv kernels', per thread */
    size_t scratch_floats;
    /* [blocks, conv_params]: each block's gradients of the conv layers, laid out as the
     * model's first four layers */
    float *parts;
} Cnn;

/* One pass (forward or backward) over the blocks of a batch. */
typedef struct {
    Model *m;
    const float *x;
    int n, blocks;
    atomic_int next; /* the next block to take */
} CnnPass;

enum { L_C1W, L_C1B, L_C2W, L_C2B, L_FCW, L_FCB };

static int cnn_kernel(const Model *m)
{
    return m->cfg.opt[OPT_KERNEL].v[0];
}

/* Output channels of conv block 0 or 1. */
static int cnn_channels(const Model *m, int block)
{
    return m->cfg.opt[OPT_CHANNELS].v[block];
}

static ConvShape cnn_shape(const Model *m, int block, int n)
{
    const ModelConfig *c = &m->cfg;
    int k = cnn_kernel(m);
    ConvShape s = {.n = n, .k = k, .pad = k / 2};
    if (block == 0) {
        s.h = c->in_rows;
        s.w = c->in_cols;
        s.cin = c->in_channels;
        s.cout = cnn_channels(m, 0);
    } else {
        s.h = c->in_rows / 2;
        s.w = c->in_cols / 2;
        s.cin = cnn_channels(m, 0);
        s.cout = cnn_channels(m, 1);
    }
    return s;
}

static int cnn_fc_in(const Model *m)
{
    return (m->cfg.in_rows / 4) * (m->cfg.in_cols / 4) * cnn_channels(m, 1);
}

/* What the option table cannot say: exactly one count per conv block (said first, as the CLI
 * always has), an odd kernel for "same" padding, and inputs that two 2x2 pools divide. */
static int cnn_check(const ModelConfig *c, BwError *err)
{
    if (c->opt[OPT_CHANNELS].n != 2)
        return bw_fail(err, BW_EUSAGE, "--channels: expected two counts (conv1,conv2)");
    int k = c->opt[OPT_KERNEL].v[0];
    if (k < 1 || k % 2 == 0 || k > 11)
        return bw_fail(err, BW_EUSAGE, "--kernel: expected an odd size in [1, 11], got %d", k);
    if (c->in_rows < 4 || c->in_cols < 4 || c->in_rows % 4 || c->in_cols % 4)
        return bw_fail(err, BW_EUSAGE, "cnn: input sides must be multiples of 4, got %dx%d",
                       c->in_rows, c->in_cols);
    return BW_OK;
}

static int cnn_setup(Model *m, BwError *err)
{
    const ModelConfig *c = &m->cfg;
    int k2 = cnn_kernel(m) * cnn_kernel(m), c1 = cnn_channels(m, 0), c2 = cnn_channels(m, 1);
    model_add_layer(m, "conv1.weight", c1, k2 * c->in_channels, 2);
    model_add_layer(m, "conv1.bias", c1, 1, 1);
    model_add_layer(m, "conv2.weight", c2, k2 * c1, 2);
    model_add_layer(m, "conv2.bias", c2, 1, 1);
    model_add_layer(m, "fc.weight", c->classes, cnn_fc_in(m), 2);
    model_add_layer(m, "fc.bias", c->classes, 1, 1);
    m->impl = bw_xcalloc(1, sizeof(Cnn), "cnn.c: m->impl");
    return m->impl ? BW_OK : bw_fail(err, BW_ERUNTIME, "out of memory");
}

static void cnn_free_impl(Model *m)
{
    Cnn *s = m->impl;
    if (!s) return;
    float *bufs[] = {s->p1, s->p2, s->logits, s->dp2, s->dp1, s->scratch, s->parts};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++) free(bufs[i]);
    free(s->arg1);
    free(s->arg2);
    free(s);
    m->impl = NULL;
}

static int grow(void *pp, size_t bytes)
{
    void **p = pp;
    void *q = bw_xrealloc(*p, bytes, "cnn.c: q");
    if (!q) return 0;
    *p = q;
    return 1;
}

static size_t conv_scratch(const ConvShape *s, int direct)
{
    return direct ? convpool_direct_scratch(s) : convpool_gemm_scratch(s);
}

/* Parameters of the conv layers: the model's first four layers. */
static size_t conv_params(const Model *m)
{
    return m->layers[L_FCW].offset;
}

static int cnn_reserve(Model *m, int n, int threads)
{
    Cnn *s = m->impl;
    ConvShape a = cnn_shape(m, 0, n), b = cnn_shape(m, 1, n);
    if (!s->per) {
        s->direct1 = a.k * a.k * a.cin <= CONVPOOL_DIRECT_MAX_PATCH;
        s->per = convpool_gemm_block_images(&b);
        size_t sa = conv_scratch(&a, s->direct1), sb = conv_scratch(&b, 0);
        s->scratch_floats = sa > sb ? sa : sb;
    }
    size_t f = sizeof(float);
    if (n > s->cap) {
        size_t p1 = convpool_out_size(&a), p2 = convpool_out_size(&b);
        size_t blocks = (size_t)(n + s->per - 1) / s->per;
        int ok = grow(&s->p1, p1 * f) && grow(&s->arg1, p1) && grow(&s->p2, p2 * f) &&
                 grow(&s->arg2, p2) && grow(&s->logits, (size_t)n * m->cfg.classes * f) &&
                 grow(&s->dp2, p2 * f) && grow(&s->dp1, p1 * f) &&
                 grow(&s->parts, blocks * conv_params(m) * f);
        if (!ok) return 0;
        s->cap = n;
    }
    if (threads > s->cap_threads) {
        if (!grow(&s->scratch, (size_t)threads * s->scratch_floats * f)) return 0;
        s->cap_threads = threads;
    }
    s->s1 = a;
    s->s2 = b;
    return 1;
}

/* OpenBLAS runs single-threaded during a pass: the pass's own threads call it, its threads
 * would compete with them for the cores, and a multi-threaded sgemm may round differently.
 * Its thread count is the process's, so the first pass to begin (of any cnn, on any thread:
 * the driver may run several workers' steps at once) sets it to 1 and the last to end restores
 * it. blas_single_begin returns the count the user gave (--threads), which is how many
 * threads a pass may use. */
static pthread_mutex_t blas_mu = PTHREAD_MUTEX_INITIALIZER;
static int blas_passes, blas_user_threads;

static int blas_single_begin(void)
{
    pthread_mutex_lock(&blas_mu);
    if (blas_passes++ == 0) {
        blas_user_threads = blas_cpu_threads();
        if (blas_user_threads > 1) openblas_set_num_threads(1);
    }
    int t = blas_user_threads;
    pthread_mutex_unlock(&blas_mu);
    return t;
}

static void blas_single_end(void)
{
    pthread_mutex_lock(&blas_mu);
    if (--blas_passes == 0 && blas_user_threads > 1) openblas_set_num_threads(blas_user_threads);
    pthread_mutex_unlock(&blas_mu);
}

/* Threads for a pass over `blocks` blocks: the user's count, at most one per block. */
static int pass_threads(int user, int blocks)
{
    int t = user < blocks ? user : blocks;
    return t > 1 ? t : 1;
}

/* The images of block b: the first, the count, and the shapes for them. */
static int block_images(const Cnn *s, int n, int b, ConvShape *a, ConvShape *c)
{
    int first = b * s->per;
    *a = s->s1;
    *c = s->s2;
    a->n = c->n = n - first < s->per ? n - first : s->per;
    return first;
}

static void forward_blocks(void *ctx, int thread)
{
    CnnPass *p = ctx;
    Cnn *s = p->m->impl;
    const float *P = p->m->params;
    const LayerView *L = p->m->layers;
    const float *w1 = P + L[L_C1W].offset, *b1 = P + L[L_C1B].offset;
    float *scratch = s->scratch + (size_t)thread * s->scratch_floats;
    for (int b; (b = atomic_fetch_add(&p->next, 1)) < p->blocks;) {
        ConvShape a, c;
        int i = block_images(s, p->n, b, &a, &c);
        size_t in = (size_t)i * a.h * a.w * a.cin;
        size_t o1 = (size_t)i * (convpool_out_size(&a) / a.n);
        size_t o2 = (size_t)i * (convpool_out_size(&c) / c.n);
        if (s->direct1)
            convpool_direct_forward(s->p1 + o1, s->arg1 + o1, p->x + in, w1, b1, &a, scratch);
        else
            convpool_gemm_forward(s->p1 + o1, s->arg1 + o1, p->x + in, w1, b1, &a, scratch);
        convpool_gemm_forward(s->p2 + o2, s->arg2 + o2, s->p1 + o1, P + L[L_C2W].offset,
                              P + L[L_C2B].offset, &c, scratch);
    }
}

static void backward_blocks(void *ctx, int thread)
{
    CnnPass *p = ctx;
    Cnn *s = p->m->impl;
    const float *P = p->m->params;
    const LayerView *L = p->m->layers;
    float *scratch = s->scratch + (size_t)thread * s->scratch_floats;
    for (int b; (b = atomic_fetch_add(&p->next, 1)) < p->blocks;) {
        ConvShape a, c;
        int i = block_images(s, p->n, b, &a, &c);
        size_t in = (size_t)i * a.h * a.w * a.cin;
        size_t o1 = (size_t)i * (convpool_out_size(&a) / a.n);
        size_t o2 = (size_t)i * (convpool_out_size(&c) / c.n);
        float *g = s->parts + (size_t)b * conv_params(p->m); /* laid out as m->grads */
        convpool_gemm_backward(s->dp1 + o1, g + L[L_C2W].offset, g + L[L_C2B].offset, s->dp2 + o2,
                               s->p2 + o2, s->arg2 + o2, s->p1 + o1, P + L[L_C2W].offset, &c,
                               scratch);
        float *dw1 = g + L[L_C1W].offset, *db1 = g + L[L_C1B].offset;
        if (s->direct1)
            convpool_direct_backward(dw1, db1, s->dp1 + o1, s->p1 + o1, s->arg1 + o1, p->x + in, &a,
                                     scratch);
        else
            convpool_gemm_backward(NULL, dw1, db1, s->dp1 + o1, s->p1 + o1, s->arg1 + o1, p->x + in,
                                   P + L[L_C1W].offset, &a, scratch);
    }
}

static const float *cnn_forward(Model *m, const float *x, int n)
{
    Cnn *s = m->impl;
    ConvShape b = cnn_shape(m, 1, n);
    int blocks = (n + convpool_gemm_block_images(&b) - 1) / convpool_gemm_block_images(&b);
    int threads = pass_threads(blas_single_begin(), blocks);
    if (!cnn_reserve(m, n, threads)) {
        blas_single_end();
        return NULL;
    }
    const float *P = m->params;
    const LayerView *L = m->layers;
    CnnPass pass = {.m = m, .x = x, .n = n, .blocks = blocks};
    atomic_init(&pass.next, 0);
    (void)parallel_run(threads, forward_blocks, &pass); /* a thread not started: others work */
    linear_forward(s->logits, s->p2, P + L[L_FCW].offset, P + L[L_FCB].offset, n, cnn_fc_in(m),
                   m->cfg.classes);
    blas_single_end();
    return s->logits;
}

static void cnn_backward(Model *m, const float *x, const float *dlogits, int n)
{
    Cnn *s = m->impl;
    const float *P = m->params;
    float *G = m->grads;
    const LayerView *L = m->layers;
    const int blocks = (n + s->per - 1) / s->per;
    const int threads = pass_threads(blas_single_begin(), blocks);
    linear_backward(s->dp2, G + L[L_FCW].offset, G + L[L_FCB].offset, dlogits, s->p2,
                    P + L[L_FCW].offset, n, cnn_fc_in(m), m->cfg.classes);
    CnnPass pass = {.m = m, .x = x, .n = n, .blocks = blocks};
    atomic_init(&pass.next, 0);
    (void)parallel_run(threads, backward_blocks, &pass);
    blas_single_end();
    /* the blocks' gradients, in block order */
    const size_t k = conv_params(m);
    memset(G, 0, k * sizeof(float));
    for (int b = 0; b < blocks; b++) {
        const float *g = s->parts + (size_t)b * k;
        if (b == 0)
            memcpy(G, g, k * sizeof(float));
        else
            for (size_t j = 0; j < k; j++) G[j] += g[j];
    }
}

static double cnn_flops_per_sample(const Model *m)
{
    ConvShape a = cnn_shape(m, 0, 1), b = cnn_shape(m, 1, 1);
    double c1 = (double)a.h * a.w * a.cout * a.k * a.k * a.cin; /* multiply-adds */
    double c2 = (double)b.h * b.w * b.cout * b.k * b.k * b.cin;
    double fc = (double)cnn_fc_in(m) * m->cfg.classes;
    /* forward + weight gradient for all three; input gradient for conv2 and fc only */
    return 2.0 * (2.0 * c1 + 3.0 * c2 + 3.0 * fc);
}

const ModelOps model_cnn_ops = {
    .name = "cnn",
    .help = "two conv+ReLU+maxpool blocks and a linear layer (--channels, --kernel)",
    .options = CNN_OPTIONS,
    .n_options = (int)(sizeof CNN_OPTIONS / sizeof *CNN_OPTIONS),
    .check = cnn_check,
    .setup = cnn_setup,
    .forward = cnn_forward,
    .backward = cnn_backward,
    .flops_per_sample = cnn_flops_per_sample,
    .free_impl = cnn_free_impl,
};
