/* comp_fp16.c: half precision on the wire. Each layer is rounded to IEEE binary16 (nearest,
 * ties to even), all layers' halves go in one fp16 allreduce whose additions are rounded to half
 * (coll_allreduce_f16), and the sum is converted back and divided by the workers. As GRACE's
 * FP16Compressor (sands-lab/grace, grace_dl/dist/compressor/fp16.py) and PyTorch's
 * fp16_compress_hook do, with no error feedback by default; ef=1 keeps the rounding error. */
#include "compress_impl.h"
#include "xalloc.h"

#include <stdlib.h>

#include "half.h"

typedef struct {
    int ef;
    uint16_t *half; /* [matrix_params] */
} Fp16;

static const SpecOpt OPTS[] = {
    {"ef", SPEC_INT, "0", 0, 1, NULL,
     "1: error feedback (keep each element's rounding error for the next step)"},
};

static int fp16_init(Compressor *c, const SpecVal *vals, BwError *err)
{
    Fp16 *s = bw_xcalloc(1, sizeof *s, "comp_fp16.c: s");
    if (!s) return bw_fail(err, BW_ERUNTIME, "fp16: out of memory");
    c->state = s;
    s->ef = (int)vals[0].num;
    s->half = bw_xmalloc(sizeof *s->half * (c->matrix_params ? c->matrix_params : 1),
                         "comp_fp16.c: s->half");
    if (!s->half) return bw_fail(err, BW_ERUNTIME, "fp16: out of memory");
    return s->ef ? comp_enable_memory(c, err) : BW_OK;
}

static void fp16_free(Compressor *c)
{
    Fp16 *s = c->state;
    if (s) free(s->half);
    free(s);
}

/* Every layer's M in halves; with memory, e = M - half(M), exact in float (Sterbenz). */
static void fp16_encode(Compressor *c, void *arg)
{
    Fp16 *s = c->state;
    CompWork *wk = arg;
    size_t at = 0;
    for (int t = 0; t < wk->n; t++) {
        const float *m = comp_feedback(c, wk->grads, wk->todo[t]);
        size_t len = layer_size(&c->layers[wk->todo[t]]);
        half_encode(m, s->half + at, len);
        if (c->memory) {
            float *e = c->memory + c->layers[wk->todo[t]].offset;
            for (size_t i = 0; i < len; i++) e[i] -= half_to_float(s->half[at + i]);
        }
        at += len;
    }
    wk->size = at;
}

/* The summed halves back in float, divided by the workers. */
static void fp16_decode(Compressor *c, void *arg)
{
    const Fp16 *s = c->state;
    const CompWork *wk = arg;
    const float w = (float)c->world;
    size_t at = 0;
    for (int t = 0; t < wk->n; t++) {
        float *g = wk->grads + c->layers[wk->todo[t]].offset;
        size_t len = layer_size(&c->layers[wk->todo[t]]);
        for (size_t i = 0; i < len; i++) g[i] = half_to_float(s->half[at + i]) / w;
        at += len;
    }
}

static double fp16_reduce(Compressor *c, Comm *comm, float *grads, const int *todo, int n,
                          const double *levels)
{
    CompWork wk = {grads, todo, n, levels, 0, NULL};
    comp_parallel(c, fp16_encode, &wk);
    comp_allreduce_f16(c, comm, ((Fp16 *)c->state)->half, wk.size);
    comp_parallel(c, fp16_decode, &wk);
    return (double)wk.size * sizeof(uint16_t);
}

/* One fp16 allreduce of every layer's halves. */
static int fp16_plan(const Compressor *c, const LayerView *layers, const int *todo, int n,
                     const double *levels, CompressMsg *msgs)
{
    (void)c, (void)levels;
    size_t halves = 0;
    for (int t = 0; t < n; t++) halves += layer_size(&layers[todo[t]]);
    msgs[0] = (CompressMsg){COMPRESS_ALLREDUCE_F16, halves};
    return 1;
}

/* The stages of fp16_reduce on n elements:
 *   error feedback M = g + e (ef=1):  n flops, 12 n bytes (comp_cost_feedback)
 *   encode h = half(M):               n flops (a conversion), 6 n bytes (read 4 n, write 2 n)
 *   e -= float(h) (ef=1):           2 n flops, 10 n bytes (read h, read and write e)
 *   decode g = float(h) / workers:  2 n flops, 6 n bytes (read 2 n, write 4 n) */
static void fp16_cost(const Compressor *c, const LayerView *v, double level, CompressCost *cost)
{
    (void)level;
    const double n = (double)layer_size(v);
    comp_cost_feedback(c, layer_size(v), cost);
    comp_cost_add(cost, n, 6 * n);
    comp_price(c, cost, 0, COST_OP_ELEMENTWISE, 6 * n, 1);
    if (c->memory) {
        comp_cost_add(cost, 2 * n, 10 * n);
        comp_price(c, cost, 0, COST_OP_ELEMENTWISE, 10 * n, 1);
    }
    comp_cost_add(cost, 2 * n, 6 * n);
    comp_price(c, cost, 1, COST_OP_ELEMENTWISE, 6 * n, 1); /* after the allreduce */
}

const CompressorOps comp_fp16_ops = {
    .name = "fp16",
    .help = "IEEE half precision on the wire: round each element to binary16, fp16 allreduce",
    .source = "sands-lab/grace grace_dl/dist/compressor/fp16.py; IEEE 754-2008 binary16",
    .wire = "allreduce of 2 bytes per element (sums rounded to half at every addition)",
    .level_name = NULL,
    .level_default = 1,
    .level_min = 0,
    .level_max = 1,
    .opts = OPTS,
    .n_opts = SPEC_N(OPTS),
    .init = fp16_init,
    .reduce = fp16_reduce,
    .plan = fp16_plan,
    .cost = fp16_cost,
    .cost_ops = COST_OP_BIT(COST_OP_ELEMENTWISE),
    .free_state = fp16_free,
};
