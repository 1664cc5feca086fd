/* comp_topk.c: TopK sparsification with error feedback (Stich, Cordonnier, Jaggi, "Sparsified
 * SGD with Memory", NeurIPS 2018; as epfml/powersgd gradient_reducers.py TopKReducer): keep the
 * k = max(1, ceil(f n)) largest-magnitude entries of M = g + e, ties to the lower index; e keeps
 * the rest. Each worker's indices (int32) and values (fp32) are allgathered, and every worker
 * adds them up and divides by the workers.
 * ef=0,divide=0,index=int64,count=trunc is the Accordion code's variant (uw-mad-dash/Accordion
 * powersgd_grad.py TopKReducer, lines 198-230; sparsify_gradient_topk.py applySparsify):
 *   ef=0:        reduce never writes memory_out (lines 203-230), so the memory that
 *                apply_method adds (sparsify_gradient_topk.py:95) stays zero: no error feedback;
 *   divide=0:    the gathered values are summed, grad_accum[idx] += vals (lines 218-221), and
 *                never divided by the workers;
 *   index=int64: the indices come from torch.argsort (line 206), int64, and are allgathered as
 *                they are (line 210): 8 bytes each beside the 4 of a value;
 *   count=trunc: k = int(f n) (line 205), truncated, so 0 for a layer with f n < 1 (nothing of
 *                it is sent). In double, as the code's start k and its lr-decay rule pass f; the
 *                checks' k went through a float32 broadcast (main_bash_topk.py:564, 599), which
 *                may keep one more entry when f n is a whole number in exact arithmetic.
 * Selection is a two-pass radix select on the magnitudes' bit patterns: O(n), deterministic. */
#include "compress_impl.h"
#include "xalloc.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int divide;
    int trunc;          /* count=trunc: k = floor(f n), possibly 0 */
    size_t index_bytes; /* 4 (int32) or 8 (int64) per index on the wire */
    uint32_t *hist;     /* [65536] */
    int32_t *sel;       /* [max_layer + 1] the selected indices, and select_top's scratch slot */
    unsigned char *msg; /* [(index_bytes + 4) * matrix_params] */
} TopK;

enum { OPT_EF, OPT_DIVIDE, OPT_INDEX, OPT_COUNT };

static const SpecOpt OPTS[] = {
    [OPT_EF] = {"ef", SPEC_INT, "1", 0, 1, NULL,
                "1: error feedback (the paper); 0: dropped entries are lost (Accordion's code: 0)"},
    [OPT_DIVIDE] = {"divide", SPEC_INT, "1", 0, 1, NULL,
                    "1: average the gathered sum over the workers; 0: use the sum (Accordion's "
                    "code: 0)"},
    [OPT_INDEX] = {"index", SPEC_CHOICE, "int32", 0, 0, "int32|int64",
                   "width of an index on the wire (Accordion's code: int64, torch.argsort's)"},
    [OPT_COUNT] = {"count", SPEC_CHOICE, "ceil", 0, 0, "ceil|trunc",
                   "k = max(1, ceil(f n)), or int(f n), 0 for a small layer (Accordion's code: "
                   "trunc)"},
};

static int topk_init(Compressor *c, const SpecVal *vals, BwError *err)
{
    TopK *s = bw_xcalloc(1, sizeof *s, "comp_topk.c: s");
    if (!s) return bw_fail(err, BW_ERUNTIME, "topk: out of memory");
    c->state = s;
    s->divide = vals[OPT_DIVIDE].num != 0;
    s->index_bytes = vals[OPT_INDEX].choice == 1 ? sizeof(int64_t) : sizeof(int32_t);
    s->trunc = vals[OPT_COUNT].choice == 1;
    s->hist = bw_xmalloc(65536 * sizeof *s->hist, "comp_topk.c: s->hist");
    s->sel = bw_xmalloc((c->max_layer + 1) * sizeof *s->sel, "comp_topk.c: s->sel");
    s->msg =
        bw_xmalloc((s->index_bytes + sizeof(float)) * (c->matrix_params ? c->matrix_params : 1),
                   "comp_topk.c: s->msg");
    if (!s->hist || !s->sel || !s->msg) return bw_fail(err, BW_ERUNTIME, "topk: out of memory");
    return vals[OPT_EF].num != 0 ? comp_enable_memory(c, err) : BW_OK;
}

static void topk_free(Compressor *c)
{
    TopK *s = c->state;
    if (s) free(s->hist), free(s->sel), free(s->msg);
    free(s);
}

/* The entries kept of a layer of n at fraction f: max(1, ceil(f n)), or (count=trunc) Python's
 * int(f * n) on doubles, floor for f n >= 0. */
static size_t keep_count(const TopK *s, double f, size_t n)
{
    if (!s->trunc) return comp_keep_count(f, n);
    double k = floor(f * (double)n);
    return k < 0 ? 0 : (k > (double)n ? n : (size_t)k);
}

/* The magnitude's bit pattern: for floats without their sign bit, integer order is numeric
 * order (a NaN sorts above infinity, deterministically). */
static uint32_t mag_key(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u & 0x7fffffffu;
}

/* Writes the indices (ascending) of the k largest |x[i]|, ties to the lower index, into idx
 * [k + 1]: the last slot is scratch (the branch-free emit loop stores every index at idx[got]
 * and advances got only for a kept one). */
static void select_top(const float *x, size_t n, size_t k, uint32_t *hist, int32_t *idx)
{
    /* the k-th largest key T: its high 16 bits from a histogram of every key, then its low 16
     * bits from a histogram of the keys in that bucket; `above` counts keys greater than T */
    memset(hist, 0, 65536 * sizeof *hist);
    for (size_t i = 0; i < n; i++) hist[mag_key(x[i]) >> 16]++;
    size_t above = 0;
    uint32_t hi = 65535;
    while (above + hist[hi] < k) above += hist[hi--];
    memset(hist, 0, 65536 * sizeof *hist);
    for (size_t i = 0; i < n; i++) {
        uint32_t key = mag_key(x[i]);
        if (key >> 16 == hi) hist[key & 0xffff]++;
    }
    uint32_t lo = 65535;
    while (above + hist[lo] < k) above += hist[lo--];
    const uint32_t T = hi << 16 | lo;
    size_t ties = k - above, got = 0; /* keys equal to T to take, lowest indices first */
    for (size_t i = 0; i < n; i++) {
        uint32_t key = mag_key(x[i]);
        idx[got] = (int32_t)i; /* kept if key > T: a store and an add, no branch to mispredict */
        got += key > T;
        if (key == T && ties > 0) /* rare: an exact tie with the k-th largest */
            idx[got++] = (int32_t)i, ties--;
    }
}

/* One layer's message: k indices (int32 or int64) then k fp32 values. */
static size_t layer_bytes(const TopK *s, size_t k)
{
    return k * (s->index_bytes + sizeof(float));
}

/* Index j of a layer's message at p (k indices of s->index_bytes each). */
static size_t read_index(const TopK *s, const unsigned char *p, size_t j)
{
    if (s->index_bytes == sizeof(int64_t)) {
        int64_t i;
        memcpy(&i, p + j * sizeof i, sizeof i);
        return (size_t)i;
    }
    int32_t i;
    memcpy(&i, p + j * sizeof i, sizeof i);
    return (size_t)i;
}

/* The message: for each layer in todo order, k indices (ascending) then k fp32 values; with
 * memory, e = M minus what was sent. */
static void topk_encode(Compressor *c, void *arg)
{
    TopK *s = c->state;
    CompWork *wk = arg;
    size_t bytes = 0;
    for (int t = 0; t < wk->n; t++) {
        const LayerView *v = &c->layers[wk->todo[t]];
        size_t len = layer_size(v), k = keep_count(s, wk->levels[wk->todo[t]], len);
        float *m = comp_feedback(c, wk->grads, wk->todo[t]);
        unsigned char *p = s->msg + bytes;
        select_top(m, len, k, s->hist, s->sel);
        for (size_t j = 0; j < k; j++) {
            float val = m[s->sel[j]];
            if (s->index_bytes == sizeof(int64_t)) {
                int64_t i = s->sel[j];
                memcpy(p + j * sizeof i, &i, sizeof i);
            } else {
                memcpy(p + j * sizeof(int32_t), &s->sel[j], sizeof(int32_t));
            }
            memcpy(p + k * s->index_bytes + j * sizeof val, &val, sizeof val);
            if (c->memory) m[s->sel[j]] = 0;
        }
        bytes += layer_bytes(s, k);
    }
    wk->size = bytes;
}

/* The layers' sum of every worker's values, added in rank order, so that every worker gets the
 * same floats; then divided by the workers (divide=1). */
static void topk_decode(Compressor *c, void *arg)
{
    TopK *s = c->state;
    const CompWork *wk = arg;
    for (int t = 0; t < wk->n; t++) {
        const LayerView *v = &c->layers[wk->todo[t]];
        memset(wk->grads + v->offset, 0, layer_size(v) * sizeof(float));
    }
    const unsigned char *p = wk->all;
    for (int w = 0; w < c->world; w++) {
        assert(c->sizes[w] == wk->size); /* same levels everywhere, so the same k */
        for (int t = 0; t < wk->n; t++) {
            const LayerView *v = &c->layers[wk->todo[t]];
            size_t k = keep_count(s, wk->levels[wk->todo[t]], layer_size(v));
            float *g = wk->grads + v->offset;
            for (size_t j = 0; j < k; j++) {
                float val;
                memcpy(&val, p + k * s->index_bytes + j * sizeof val, sizeof val);
                g[read_index(s, p, j)] += val;
            }
            p += layer_bytes(s, k);
        }
    }
    if (s->divide) comp_divide_layers(c, wk->grads, wk->todo, wk->n);
}

static double topk_reduce(Compressor *c, Comm *comm, float *grads, const int *todo, int n,
                          const double *levels)
{
    CompWork wk = {grads, todo, n, levels, 0, NULL};
    return comp_reduce_allgather(c, comm, &wk, topk_encode, topk_decode, ((TopK *)c->state)->msg);
}

/* One allgather of every layer's indices and values. */
static int topk_plan(const Compressor *c, const LayerView *layers, const int *todo, int n,
                     const double *levels, CompressMsg *msgs)
{
    const TopK *s = c->state;
    size_t bytes = 0;
    for (int t = 0; t < n; t++)
        bytes += layer_bytes(s, keep_count(s, levels[todo[t]], layer_size(&layers[todo[t]])));
    msgs[0] = (CompressMsg){COMPRESS_ALLGATHER, bytes};
    return 1;
}

/* Reads of the tensor that selecting its k largest magnitudes takes on a GPU: PyTorch's
 * torch.topk on one large slice (multi-block radix select, aten/src/ATen/native/cuda/
 * TensorTopK.cu, mbtopk) finds the k-th value 8 bits at a time (RADIX_BITS = 8: 4 passes of
 * radixFindKthValues over a 32-bit key), then gatherTopK reads the slice once more. (select_top
 * here, on a CPU, takes 3: two 16-bit histograms and the emit.) */
enum { TOPK_SELECT_READS = 5 };

/* The stages of topk_reduce on n elements keeping k, with W workers:
 *   error feedback M = g + e (ef=1):   n flops, 12 n bytes (comp_cost_feedback)
 *   select the k largest |M|:         TOPK_SELECT_READS reads of M, one operation (a key's
 *                                     digit or comparison) per element each: 5 n, 20 n bytes
 *   gather: k indices (i bytes each: 4, or 8 with index=int64) and k values written, k values
 *     of M read:                                                 (i + 8) k bytes
 *   e[kept] = 0 (ef=1):                                                  4 k bytes
 *   decode: g = 0 (4 n bytes), then W k scatter-adds g[i] += v (read index and value, read and
 *     write g: i + 12 bytes each):   W k flops, 4 n + (i + 12) W k bytes
 *   g /= workers (divide=1):           n flops, 8 n bytes */
static void topk_cost(const Compressor *c, const LayerView *v, double level, CompressCost *cost)
{
    const TopK *s = c->state;
    const double n = (double)layer_size(v), k = (double)keep_count(s, level, layer_size(v));
    const double w = c->world, ib = (double)s->index_bytes;
    comp_cost_feedback(c, layer_size(v), cost);
    comp_cost_add(cost, TOPK_SELECT_READS * n, TOPK_SELECT_READS * 4 * n);
    comp_price(c, cost, 0, COST_OP_TOPK, n, 1);
    comp_cost_add(cost, 0, (ib + 8) * k);
    comp_price(c, cost, 0, COST_OP_SCATTER, k, 1); /* the gather */
    if (c->memory) {
        comp_cost_add(cost, 0, 4 * k);
        comp_price(c, cost, 0, COST_OP_SCATTER, k, 1);
    }
    comp_cost_add(cost, w * k, 4 * n + (ib + 12) * w * k); /* after the allgather */
    comp_price(c, cost, 1, COST_OP_ELEMENTWISE, 4 * n, 1);
    comp_price(c, cost, 1, COST_OP_SCATTER, k, w); /* every worker's entries, one at a time */
    if (s->divide) {
        comp_cost_add(cost, n, 8 * n);
        comp_price(c, cost, 1, COST_OP_ELEMENTWISE, 8 * n, 1);
    }
}

const CompressorOps comp_topk_ops = {
    .name = "topk",
    .help = "keep the k = max(1, ceil(fraction n)) largest magnitudes of each matrix, error "
            "feedback",
    .source = "Stich, Cordonnier, Jaggi, NeurIPS 2018; epfml/powersgd gradient_reducers.py "
              "TopKReducer; uw-mad-dash/Accordion powersgd_grad.py TopKReducer "
              "(ef=0,divide=0,index=int64,count=trunc)",
    .wire = "allgather of k int32 indices + k fp32 values per matrix (8 k bytes; 12 k with "
            "index=int64)",
    .level_name = "fraction",
    .level_default = 0.1,
    .level_min = 0,
    .level_max = 1,
    .opts = OPTS,
    .n_opts = SPEC_N(OPTS),
    .init = topk_init,
    .reduce = topk_reduce,
    .plan = topk_plan,
    .cost = topk_cost,
    .cost_ops =
        COST_OP_BIT(COST_OP_ELEMENTWISE) | COST_OP_BIT(COST_OP_TOPK) | COST_OP_BIT(COST_OP_SCATTER),
    .free_state = topk_free,
};
