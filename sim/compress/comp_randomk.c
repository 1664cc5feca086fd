/* comp_randomk.c: RandomK sparsification with error feedback (Stich, Cordonnier, Jaggi,
 * "Sparsified SGD with Memory", NeurIPS 2018, rand_k; as epfml/powersgd gradient_reducers.py
 * UniformRandomSparseReducer): every worker keeps the same k = max(1, ceil(f n)) random entries
 * of M = g + e, because the indices come from a stream shared by all workers (seeded from the
 * run's seed, the layer and the step), so only the values travel, in one fp32 allreduce over
 * all layers, divided by the workers. e keeps the entries not sent. No rescaling by n / k: with
 * error feedback the dropped mass comes back later, as in the epfml reducer. */
#include "compress_impl.h"
#include "xalloc.h"

#include <gsl/gsl_rng.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    gsl_rng *rng;
    uint32_t *perm; /* [max_layer] the identity permutation between calls */
    uint32_t *swap; /* [max_layer] the partial Fisher-Yates swaps, to undo them */
    uint32_t *idx;  /* [matrix_params] this step's indices, layer after layer */
    float *val;     /* [matrix_params] their values */
} RandomK;

static const SpecOpt OPTS[] = {
    {"ef", SPEC_INT, "1", 0, 1, NULL, "1: error feedback (entries not sent stay in memory)"},
};

static int randomk_init(Compressor *c, const SpecVal *vals, BwError *err)
{
    RandomK *s = bw_xcalloc(1, sizeof *s, "comp_randomk.c: s");
    if (!s) return bw_fail(err, BW_ERUNTIME, "randomk: out of memory");
    c->state = s;
    size_t big = c->max_layer ? c->max_layer : 1, all = c->matrix_params ? c->matrix_params : 1;
    s->rng = gsl_rng_alloc(gsl_rng_taus2); /* k draws per layer and step: GSL's fastest */
    s->perm = bw_xmalloc(big * sizeof *s->perm, "comp_randomk.c: s->perm");
    s->swap = bw_xmalloc(big * sizeof *s->swap, "comp_randomk.c: s->swap");
    s->idx = bw_xmalloc(all * sizeof *s->idx, "comp_randomk.c: s->idx");
    s->val = bw_xmalloc(all * sizeof *s->val, "comp_randomk.c: s->val");
    if (!s->rng || !s->perm || !s->swap || !s->idx || !s->val)
        return bw_fail(err, BW_ERUNTIME, "randomk: out of memory");
    for (size_t i = 0; i < big; i++) s->perm[i] = (uint32_t)i;
    return vals[0].num != 0 ? comp_enable_memory(c, err) : BW_OK;
}

static void randomk_free(Compressor *c)
{
    RandomK *s = c->state;
    if (!s) return;
    if (s->rng) gsl_rng_free(s->rng);
    free(s->perm);
    free(s->swap);
    free(s->idx);
    free(s->val);
    free(s);
}

/* k distinct indices of [0, n), uniformly, from the stream of (seed, layer, step): the first k
 * steps of a Fisher-Yates shuffle of the identity (O(k) draws), undone afterwards. */
static void choose(Compressor *c, RandomK *s, int layer, size_t n, size_t k, uint32_t *out)
{
    gsl_rng_set(s->rng, comp_seed(c->seed, COMP_STREAM_RANDOMK, layer, c->step));
    for (size_t j = 0; j < k; j++) {
        size_t r = j + gsl_rng_uniform_int(s->rng, n - j);
        uint32_t t = s->perm[j];
        s->perm[j] = s->perm[r];
        s->perm[r] = t;
        s->swap[j] = (uint32_t)r;
    }
    memcpy(out, s->perm, k * sizeof *out);
    for (size_t j = k; j-- > 0;) {
        uint32_t r = s->swap[j], t = s->perm[j];
        s->perm[j] = s->perm[r];
        s->perm[r] = t;
    }
}

/* Every layer's k indices and the values of M there; with memory, e = M minus what was sent. */
static void randomk_encode(Compressor *c, void *arg)
{
    RandomK *s = c->state;
    CompWork *wk = arg;
    size_t at = 0;
    for (int t = 0; t < wk->n; t++) {
        const LayerView *v = &c->layers[wk->todo[t]];
        size_t len = layer_size(v), k = comp_keep_count(wk->levels[wk->todo[t]], len);
        float *m = comp_feedback(c, wk->grads, wk->todo[t]);
        choose(c, s, wk->todo[t], len, k, s->idx + at);
        for (size_t j = 0; j < k; j++) {
            s->val[at + j] = m[s->idx[at + j]];
            if (c->memory) m[s->idx[at + j]] = 0;
        }
        at += k;
    }
    wk->size = at;
}

/* The summed values, divided by the workers, back at their indices (zeros elsewhere). */
static void randomk_decode(Compressor *c, void *arg)
{
    RandomK *s = c->state;
    const CompWork *wk = arg;
    const float w = (float)c->world;
    size_t at = 0;
    for (int t = 0; t < wk->n; t++) {
        const LayerView *v = &c->layers[wk->todo[t]];
        size_t len = layer_size(v), k = comp_keep_count(wk->levels[wk->todo[t]], len);
        float *g = wk->grads + v->offset;
        memset(g, 0, len * sizeof(float));
        for (size_t j = 0; j < k; j++) g[s->idx[at + j]] = s->val[at + j] / w;
        at += k;
    }
}

static double randomk_reduce(Compressor *c, Comm *comm, float *grads, const int *todo, int n,
                             const double *levels)
{
    CompWork wk = {grads, todo, n, levels, 0, NULL};
    comp_parallel(c, randomk_encode, &wk);
    comp_allreduce(c, comm, ((RandomK *)c->state)->val, wk.size);
    comp_parallel(c, randomk_decode, &wk);
    return (double)wk.size * sizeof(float);
}

/* One allreduce of every layer's k values. */
static int randomk_plan(const Compressor *c, const LayerView *layers, const int *todo, int n,
                        const double *levels, CompressMsg *msgs)
{
    (void)c;
    size_t values = 0;
    for (int t = 0; t < n; t++)
        values += comp_keep_count(levels[todo[t]], layer_size(&layers[todo[t]]));
    msgs[0] = (CompressMsg){COMPRESS_ALLREDUCE_F32, values};
    return 1;
}

/* The stages of randomk_reduce on n elements keeping k (the values' allreduce sums them, so
 * the decode does not grow with the workers):
 *   error feedback M = g + e (ef=1):   n flops, 12 n bytes (comp_cost_feedback)
 *   k indices drawn (one draw each, counted as one operation) and written:  k flops, 4 k bytes
 *   gather v = M[idx] (read index and value, write value):                    12 k bytes
 *   e[idx] = 0 (ef=1):                                                          4 k bytes
 *   decode: g = 0 (4 n bytes), then g[idx] = v / workers (read index and value, write g):
 *                                      k flops, 4 n + 12 k bytes */
static void randomk_cost(const Compressor *c, const LayerView *v, double level, CompressCost *cost)
{
    const double n = (double)layer_size(v), k = (double)comp_keep_count(level, layer_size(v));
    comp_cost_feedback(c, layer_size(v), cost);
    comp_cost_add(cost, k, 4 * k); /* the indices, a pass writing them */
    comp_price(c, cost, 0, COST_OP_RANDOM, n, 1);
    comp_cost_add(cost, 0, 12 * k);
    comp_price(c, cost, 0, COST_OP_SCATTER, k, 1); /* the gather */
    if (c->memory) {
        comp_cost_add(cost, 0, 4 * k);
        comp_price(c, cost, 0, COST_OP_SCATTER, k, 1);
    }
    comp_cost_add(cost, k, 4 * n + 12 * k); /* after the allreduce */
    comp_price(c, cost, 1, COST_OP_ELEMENTWISE, 4 * n, 1);
    comp_price(c, cost, 1, COST_OP_SCATTER, k, 1);
}

const CompressorOps comp_randomk_ops = {
    .name = "randomk",
    .help = "keep k = max(1, ceil(fraction n)) random entries, the same on every worker, "
            "error feedback",
    .source = "Stich, Cordonnier, Jaggi, NeurIPS 2018 (rand_k); epfml/powersgd "
              "gradient_reducers.py UniformRandomSparseReducer",
    .wire = "allreduce of k fp32 values per matrix (indices from the shared seed, not sent)",
    .level_name = "fraction",
    .level_default = 0.1,
    .level_min = 0,
    .level_max = 1,
    .opts = OPTS,
    .n_opts = SPEC_N(OPTS),
    .init = randomk_init,
    .reduce = randomk_reduce,
    .plan = randomk_plan,
    .cost = randomk_cost,
    .cost_ops = COST_OP_BIT(COST_OP_ELEMENTWISE) | COST_OP_BIT(COST_OP_SCATTER) |
                COST_OP_BIT(COST_OP_RANDOM),
    .free_state = randomk_free,
};
