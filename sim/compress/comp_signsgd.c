/* comp_signsgd.c: EF-signSGD (Karimireddy, Rebjock, Stich, Jaggi, "Error Feedback Fixes SignSGD
 * and other Gradient Compression Schemes", ICML 2019, Algorithm 1 with the scaled sign
 * compressor C(p) = ||p||_1 / d sign(p) of Section 3; as epfml/powersgd gradient_reducers.py
 * SignAndNormReducer): per layer, p = g + e, the fp32 scale ||p||_1 / d and one sign bit per
 * element packed 8 to a byte; every worker's message is allgathered, and each decodes every
 * scale * sign and averages them; e = p - scale sign(p). Zero counts as positive (GRACE).
 * wire=bytes sends a byte per sign instead, as GRACE's TensorFlow signSGD sends its tf.bool
 * tensor (sands-lab/grace grace_dl/tensorflow/compressor/signsgd.py: no bit packing): the same
 * values, eight times the bytes. */
#include "compress_impl.h"
#include "xalloc.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    unsigned char *msg; /* [sum over matrices of layer_bytes] */
    int bytes;          /* wire=bytes: a byte per sign */
} SignSgd;

static const SpecOpt OPTS[] = {
    {"ef", SPEC_INT, "1", 0, 1, NULL, "1: error feedback, EF-signSGD (0: scaled signSGD alone)"},
    {"wire", SPEC_CHOICE, "bits", 0, 0, "bits|bytes",
     "signs packed 8 to a byte, or a byte each (GRACE's TensorFlow signSGD)"},
};

size_t comp_sign_pack(const float *p, size_t n, uint8_t *out)
{
    size_t i = 0, o = 0;
    for (; i + 8 <= n; i += 8) { /* branch-free: random signs would defeat a branch predictor */
        unsigned b = 0;
        for (unsigned j = 0; j < 8; j++) b |= (unsigned)(p[i + j] >= 0) << j;
        out[o++] = (uint8_t)b;
    }
    if (i < n) {
        unsigned b = 0;
        for (unsigned j = 0; i + j < n; j++) b |= (unsigned)(p[i + j] >= 0) << j;
        out[o++] = (uint8_t)b;
    }
    return o;
}

/* One layer's message: the fp32 scale, then ceil(n / 8) bytes of signs (comp_sign_pack), or n
 * bytes with wire=bytes. */
static size_t layer_bytes(const Compressor *c, size_t n)
{
    const SignSgd *s = c->state;
    return sizeof(float) + (s->bytes ? n : (n + 7) / 8);
}

/* The sign of element i of a layer's signs q: a bit, or a byte with wire=bytes. */
static inline unsigned sign_at(const unsigned char *q, size_t i, int bytes)
{
    return bytes ? q[i] : (unsigned)(q[i >> 3] >> (i & 7) & 1);
}

static int sign_init(Compressor *c, const SpecVal *vals, BwError *err)
{
    SignSgd *s = bw_xcalloc(1, sizeof *s, "comp_signsgd.c: s");
    if (!s) return bw_fail(err, BW_ERUNTIME, "signsgd: out of memory");
    c->state = s;
    s->bytes = vals[1].choice == 1;
    size_t cap = 1;
    for (int l = 0; l < c->n_layers; l++)
        if (c->layers[l].ndim == 2) cap += layer_bytes(c, layer_size(&c->layers[l]));
    s->msg = bw_xmalloc(cap, "comp_signsgd.c: s->msg");
    if (!s->msg) return bw_fail(err, BW_ERUNTIME, "signsgd: out of memory");
    return vals[0].num != 0 ? comp_enable_memory(c, err) : BW_OK;
}

static void sign_free(Compressor *c)
{
    SignSgd *s = c->state;
    if (s) free(s->msg);
    free(s);
}

/* Every layer's scale and packed signs; with memory, e = M - what this worker sent. */
static void sign_encode(Compressor *c, void *arg)
{
    SignSgd *s = c->state;
    CompWork *wk = arg;
    size_t bytes = 0;
    for (int t = 0; t < wk->n; t++) {
        size_t len = layer_size(&c->layers[wk->todo[t]]);
        float *p = comp_feedback(c, wk->grads, wk->todo[t]);
        const float scale = (float)(comp_sum_abs(p, len) / (double)len);
        memcpy(s->msg + bytes, &scale, sizeof scale);
        bytes += sizeof scale;
        if (s->bytes)
            for (size_t i = 0; i < len; i++) s->msg[bytes++] = p[i] >= 0;
        else
            bytes += comp_sign_pack(p, len, s->msg + bytes);
        const float pm[2] = {-scale, scale};
        if (c->memory)
            for (size_t i = 0; i < len; i++) p[i] -= pm[p[i] >= 0];
    }
    wk->size = bytes;
}

/* Every worker's scaled signs summed in rank order, then divided by the workers. */
static void sign_decode(Compressor *c, void *arg)
{
    const CompWork *wk = arg;
    const int by = ((const SignSgd *)c->state)->bytes;
    const unsigned char *q = wk->all;
    for (int w = 0; w < c->world; w++) {
        assert(c->sizes[w] == wk->size);
        for (int t = 0; t < wk->n; t++) {
            const LayerView *v = &c->layers[wk->todo[t]];
            size_t len = layer_size(v);
            float *g = wk->grads + v->offset, scale;
            memcpy(&scale, q, sizeof scale);
            q += sizeof scale;
            const float pm[2] = {-scale, scale}; /* a bit picks its value without a branch */
            if (w == 0)
                for (size_t i = 0; i < len; i++) g[i] = pm[sign_at(q, i, by)];
            else
                for (size_t i = 0; i < len; i++) g[i] += pm[sign_at(q, i, by)];
            q += layer_bytes(c, len) - sizeof scale;
        }
    }
    comp_divide_layers(c, wk->grads, wk->todo, wk->n);
}

static double sign_reduce(Compressor *c, Comm *comm, float *grads, const int *todo, int n,
                          const double *levels)
{
    CompWork wk = {grads, todo, n, levels, 0, NULL};
    return comp_reduce_allgather(c, comm, &wk, sign_encode, sign_decode,
                                 ((SignSgd *)c->state)->msg);
}

/* One allgather of every layer's scale and signs. */
static int sign_plan(const Compressor *c, const LayerView *layers, const int *todo, int n,
                     const double *levels, CompressMsg *msgs)
{
    (void)levels;
    size_t bytes = 0;
    for (int t = 0; t < n; t++) bytes += layer_bytes(c, layer_size(&layers[todo[t]]));
    msgs[0] = (CompressMsg){COMPRESS_ALLGATHER, bytes};
    return 1;
}

/* The stages of sign_reduce on n elements, B = layer_bytes(n) the message, W workers:
 *   error feedback p = g + e (ef=1):   n flops, 12 n bytes (comp_cost_feedback)
 *   the scale ||p||_1 / n (comp_sum_abs):  2 n flops, 4 n bytes
 *   pack the signs (a comparison each), p read, B written:  n flops, 4 n + B bytes
 *   e = p - scale sign(p) (ef=1):      n flops, 8 n bytes
 *   decode: the first message sets g (B + 4 n bytes), each other adds to it (n flops,
 *     B + 8 n bytes):                  (W - 1) n flops, W B + 4 n + 8 (W - 1) n bytes
 *   g /= workers (comp_divide_layers): n flops, 8 n bytes */
static void sign_cost(const Compressor *c, const LayerView *v, double level, CompressCost *cost)
{
    (void)level;
    const double n = (double)layer_size(v), w = c->world;
    const double B = (double)layer_bytes(c, layer_size(v));
    comp_cost_feedback(c, layer_size(v), cost);
    comp_cost_add(cost, 2 * n, 4 * n);
    comp_price(c, cost, 0, COST_OP_ELEMENTWISE, 4 * n, 1); /* the scale */
    comp_cost_add(cost, n, 4 * n + B);
    comp_price(c, cost, 0, COST_OP_PACK, n, 1);
    if (c->memory) {
        comp_cost_add(cost, n, 8 * n);
        comp_price(c, cost, 0, COST_OP_ELEMENTWISE, 8 * n, 1);
    }
    comp_cost_add(cost, (w - 1) * n, w * B + 4 * n + 8 * (w - 1) * n); /* after the allgather */
    comp_price(c, cost, 1, COST_OP_PACK, n, w); /* every worker's signs unpacked */
    comp_price(c, cost, 1, COST_OP_ELEMENTWISE, 8 * n, w - 1);
    comp_cost_add(cost, n, 8 * n);
    comp_price(c, cost, 1, COST_OP_ELEMENTWISE, 8 * n, 1);
}

const CompressorOps comp_signsgd_ops = {
    .name = "signsgd",
    .help = "EF-signSGD: the sign of each element (1 bit) times the layer's mean |value|, "
            "error feedback",
    .source = "Karimireddy et al., ICML 2019, Algorithm 1 and Section 3; epfml/powersgd "
              "gradient_reducers.py SignAndNormReducer",
    .wire = "allgather of an fp32 scale + ceil(n / 8) bytes of sign bits per matrix (wire=bytes: n "
            "bytes)",
    .level_name = NULL,
    .level_default = 1,
    .level_min = 0,
    .level_max = 1,
    .opts = OPTS,
    .n_opts = SPEC_N(OPTS),
    .init = sign_init,
    .reduce = sign_reduce,
    .plan = sign_plan,
    .cost = sign_cost,
    .cost_ops = COST_OP_BIT(COST_OP_ELEMENTWISE) | COST_OP_BIT(COST_OP_PACK),
    .free_state = sign_free,
};
