/* comp_qsgd.c: QSGD stochastic quantisation (Alistarh, Grubic, Li, Tomioka, Vojnovic, "QSGD:
 * Communication-Efficient SGD via Gradient Quantization and Encoding", NeurIPS 2017, Section 3.1)
 * with s levels and the whole layer as one bucket: Q_s(v_i) = ||v||_2 sign(v_i) xi_i / s, where
 * xi_i = l + 1 with probability |v_i| s / ||v|| - l and l otherwise (l = floor(|v_i| s / ||v||)),
 * which is unbiased. The random numbers come from a GSL generator (taus2) private to the worker,
 * seeded from the run's seed and the rank. Encoding, per layer: the norm as fp32, then per element
 * a sign bit and b = ceil(log2(s + 1)) level bits, packed least significant bit first and padded to
 * a byte; no Elias coding (the paper's Section 3.2), so the size is fixed. Every worker's message
 * is allgathered, decoded and averaged, as GRACE's QSGDCompressor with allgather (sands-lab/grace
 * grace_dl/dist/compressor/qsgd.py). No error feedback by default (ef=1 adds it). wire=bytes
 * pads each element's code to a byte, or two above 127 levels, as GRACE's TensorFlow QSGD sends
 * int8 or int16 (grace_dl/tensorflow/compressor/qsgd.py): the same values, more bytes.
 */
#include "compress_impl.h"
#include "xalloc.h"

#include <assert.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    gsl_rng *rng;
    unsigned char *msg; /* [sum of the matrices' largest messages] */
    int bytes;          /* wire=bytes: codes padded to whole bytes */
} Qsgd;

enum { QSGD_MAX_LEVELS = 65535 };

static const SpecOpt OPTS[] = {
    {"ef", SPEC_INT, "0", 0, 1, NULL,
     "1: error feedback (keep M - decoded(M)); the paper has none"},
    {"wire", SPEC_CHOICE, "bits", 0, 0, "bits|bytes",
     "codes packed bit by bit, or padded to whole bytes (one up to 127 levels, two up to 32767: "
     "GRACE's TensorFlow QSGD, int8 or int16)"},
};

int comp_qsgd_level_bits(int s)
{
    int b = 0;
    while ((1L << b) < (long)s + 1) b++;
    return b;
}

int comp_qsgd_code_bits(int s, int bytes)
{
    int w = 1 + comp_qsgd_level_bits(s);
    return bytes ? (w + 7) / 8 * 8 : w;
}

size_t comp_qsgd_layer_bytes(size_t n, int s, int bytes)
{
    return sizeof(float) + (n * (size_t)comp_qsgd_code_bits(s, bytes) + 7) / 8;
}

static int qsgd_init(Compressor *c, const SpecVal *vals, BwError *err)
{
    Qsgd *s = bw_xcalloc(1, sizeof *s, "comp_qsgd.c: s");
    if (!s) return bw_fail(err, BW_ERUNTIME, "qsgd: out of memory");
    c->state = s;
    size_t cap = 1;
    for (int l = 0; l < c->n_layers; l++)
        if (c->layers[l].ndim == 2)
            cap += comp_qsgd_layer_bytes(layer_size(&c->layers[l]), QSGD_MAX_LEVELS, 1);
    s->rng = gsl_rng_alloc(gsl_rng_taus2); /* one draw per element: the fastest GSL generator of
                                            * simulation quality, 2.5x faster than MT19937 here */
    s->msg = bw_xmalloc(cap, "comp_qsgd.c: s->msg");
    if (!s->rng || !s->msg) return bw_fail(err, BW_ERUNTIME, "qsgd: out of memory");
    gsl_rng_set(s->rng, comp_seed(c->seed, COMP_STREAM_QSGD, c->rank, 0));
    s->bytes = vals[1].choice == 1;
    return vals[0].num != 0 ? comp_enable_memory(c, err) : BW_OK;
}

static void qsgd_free(Compressor *c)
{
    Qsgd *s = c->state;
    if (!s) return;
    if (s->rng) gsl_rng_free(s->rng);
    free(s->msg);
    free(s);
}

/* Bits are written least significant first into a 64-bit accumulator and stored 32 at a time
 * (little-endian, so the byte stream is the same on any machine). */
static inline void put_u32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)v, p[1] = (unsigned char)(v >> 8), p[2] = (unsigned char)(v >> 16);
    p[3] = (unsigned char)(v >> 24);
}

/* Encodes m [n] at s levels, each code `width` bits, into out; returns the bytes written. */
static size_t encode(gsl_rng *rng, const float *m, size_t n, int s, int width, unsigned char *out)
{
    const float norm = (float)sqrt(comp_sum_squares(m, n));
    memcpy(out, &norm, sizeof norm);
    unsigned char *p = out + sizeof norm;
    const double to_level = norm > 0 ? s / (double)norm : 0;
    uint64_t acc = 0;
    int fill = 0;
    for (size_t i = 0; i < n; i++) {
        double x = fabs((double)m[i]) * to_level;
        uint32_t level = (uint32_t)x; /* floor, x >= 0 */
        /* up with probability x - floor(x), from a uniform 32-bit draw (bias below 2^-32) */
        level += (double)gsl_rng_get(rng) < (x - level) * 4294967296.0;
        if (level > (uint32_t)s) level = (uint32_t)s; /* |m_i| above the rounded norm by an ulp */
        acc |= (uint64_t)((uint32_t)(m[i] < 0) | level << 1) << fill;
        fill += width;
        if (fill >= 32) {
            put_u32(p, (uint32_t)acc);
            p += 4;
            acc >>= 32;
            fill -= 32;
        }
    }
    for (; fill > 0; fill -= 8, acc >>= 8) *p++ = (unsigned char)acc;
    return (size_t)(p - out);
}

/* The code of element i: width bits at bit i * width, little-endian. A 32-bit window holds
 * them (width <= 17, offset in the byte <= 7); near the end the window is read byte by byte so
 * that nothing past the message is touched. */
static inline uint32_t code_at(const unsigned char *p, size_t bytes, size_t i, int width)
{
    size_t pos = i * (size_t)width, b = pos >> 3;
    uint32_t win = 0;
    if (b + 4 <= bytes)
        win = (uint32_t)p[b] | (uint32_t)p[b + 1] << 8 | (uint32_t)p[b + 2] << 16 |
              (uint32_t)p[b + 3] << 24;
    else
        for (size_t k = 0; b + k < bytes; k++) win |= (uint32_t)p[b + k] << (8 * k);
    return win >> (pos & 7) & ((1u << width) - 1);
}

/* Adds the decoded layer (norm sign level / s, codes of `width` bits) into g [n]; returns the
 * bytes read. Elements are independent (no running bit cursor), so the loop pipelines. */
static size_t decode_add(const unsigned char *in, size_t n, int s, int width, float *g)
{
    float norm;
    memcpy(&norm, in, sizeof norm);
    const unsigned char *p = in + sizeof norm;
    const size_t bytes = (n * (size_t)width + 7) / 8;
    const double unit = (double)norm / s;
    for (size_t i = 0; i < n; i++) {
        uint32_t code = code_at(p, bytes, i, width);
        float v = (float)(unit * (code >> 1));
        g[i] += code & 1 ? -v : v;
    }
    return sizeof norm + bytes;
}

/* Every layer's norm and codes into the message; with memory, e = M - what this worker sent. */
static void qsgd_encode(Compressor *c, void *arg)
{
    Qsgd *s = c->state;
    CompWork *wk = arg;
    size_t bytes = 0;
    for (int t = 0; t < wk->n; t++) {
        const LayerView *v = &c->layers[wk->todo[t]];
        size_t len = layer_size(v);
        int lv = (int)wk->levels[wk->todo[t]], width = comp_qsgd_code_bits(lv, s->bytes);
        float *m = comp_feedback(c, wk->grads, wk->todo[t]);
        size_t got = encode(s->rng, m, len, lv, width, s->msg + bytes);
        if (c->memory) {                      /* e = M - what this worker sent */
            float *e = wk->grads + v->offset; /* grads is overwritten below anyway: scratch */
            memset(e, 0, len * sizeof(float));
            decode_add(s->msg + bytes, len, lv, width, e);
            for (size_t i = 0; i < len; i++) m[i] -= e[i];
        }
        bytes += got;
    }
    wk->size = bytes;
}

/* Every worker's decoded values summed in rank order (every worker gets the same floats), then
 * divided by the workers. */
static void qsgd_decode(Compressor *c, void *arg)
{
    const CompWork *wk = arg;
    const int by = ((const Qsgd *)c->state)->bytes;
    for (int t = 0; t < wk->n; t++) {
        const LayerView *v = &c->layers[wk->todo[t]];
        memset(wk->grads + v->offset, 0, layer_size(v) * sizeof(float));
    }
    const unsigned char *p = wk->all;
    for (int w = 0; w < c->world; w++) {
        assert(c->sizes[w] == wk->size);
        for (int t = 0; t < wk->n; t++) {
            const LayerView *v = &c->layers[wk->todo[t]];
            int lv = (int)wk->levels[wk->todo[t]];
            p += decode_add(p, layer_size(v), lv, comp_qsgd_code_bits(lv, by),
                            wk->grads + v->offset);
        }
    }
    comp_divide_layers(c, wk->grads, wk->todo, wk->n);
}

static double qsgd_reduce(Compressor *c, Comm *comm, float *grads, const int *todo, int n,
                          const double *levels)
{
    CompWork wk = {grads, todo, n, levels, 0, NULL};
    return comp_reduce_allgather(c, comm, &wk, qsgd_encode, qsgd_decode, ((Qsgd *)c->state)->msg);
}

/* One allgather of every layer's norm and codes (encode writes comp_qsgd_layer_bytes). */
static int qsgd_plan(const Compressor *c, const LayerView *layers, const int *todo, int n,
                     const double *levels, CompressMsg *msgs)
{
    const int by = ((const Qsgd *)c->state)->bytes;
    size_t bytes = 0;
    for (int t = 0; t < n; t++)
        bytes += comp_qsgd_layer_bytes(layer_size(&layers[todo[t]]), (int)levels[todo[t]], by);
    msgs[0] = (CompressMsg){COMPRESS_ALLGATHER, bytes};
    return 1;
}

/* Flops per element of encode(): |m_i| times s / norm (2), its floor and fraction (2), the
 * comparison with a uniform draw and the rounding up (2). The draw itself (integer operations
 * of the generator) is not counted. */
enum { QSGD_ENCODE_FLOPS = 6 };

/* The stages of qsgd_reduce on n elements at s levels, B = comp_qsgd_layer_bytes(n, s) the
 * message, W workers:
 *   error feedback M = g + e (ef=1):                   n flops, 12 n bytes (comp_cost_feedback)
 *   the norm ||M||_2 (comp_sum_squares):             2 n flops, 4 n bytes
 *   encode (QSGD_ENCODE_FLOPS each), M read, B written:  6 n flops, 4 n + B bytes
 *   ef=1: e' = 0 (4 n bytes), decode_add into it (read B, read and write e': 2 n flops,
 *     B + 8 n bytes), M -= e' (n flops, 12 n bytes):    3 n flops, 24 n + B bytes
 *   decode: g = 0 (4 n bytes), then W messages decode_add'ed (unit * level, add):
 *                                                    2 W n flops, 4 n + W (B + 8 n) bytes
 *   g /= workers (comp_divide_layers):                 n flops, 8 n bytes */
static void qsgd_cost(const Compressor *c, const LayerView *v, double level, CompressCost *cost)
{
    const double n = (double)layer_size(v), w = c->world;
    const double B =
        (double)comp_qsgd_layer_bytes(layer_size(v), (int)level, ((const Qsgd *)c->state)->bytes);
    comp_cost_feedback(c, layer_size(v), cost);
    comp_cost_add(cost, 2 * n, 4 * n);
    comp_price(c, cost, 0, COST_OP_ELEMENTWISE, 4 * n, 1); /* the norm */
    comp_cost_add(cost, QSGD_ENCODE_FLOPS * n, 4 * n + B);
    comp_price(c, cost, 0, COST_OP_QUANTISE, n, 1);
    if (c->memory) {
        comp_cost_add(cost, 3 * n, 24 * n + B);
        comp_price(c, cost, 0, COST_OP_QUANTISE, n, 1); /* decoded back */
        comp_price(c, cost, 0, COST_OP_ELEMENTWISE, 16 * n, 1);
    }
    comp_cost_add(cost, 2 * w * n, 4 * n + w * (B + 8 * n)); /* after the allgather */
    comp_price(c, cost, 1, COST_OP_ELEMENTWISE, 4 * n, 1);
    comp_price(c, cost, 1, COST_OP_QUANTISE, n, w); /* every worker's message decoded */
    comp_cost_add(cost, n, 8 * n);
    comp_price(c, cost, 1, COST_OP_ELEMENTWISE, 8 * n, 1);
}

const CompressorOps comp_qsgd_ops = {
    .name = "qsgd",
    .help = "stochastic quantisation to s levels of the layer's L2 norm, unbiased",
    .source = "Alistarh et al., NeurIPS 2017, Section 3.1 (one bucket per layer, no Elias "
              "coding); sands-lab/grace grace_dl/dist/compressor/qsgd.py",
    .wire = "allgather of an fp32 norm + (1 + ceil(log2(s + 1))) bits per element, per matrix "
            "(wire=bytes: padded to whole bytes)",
    .level_name = "levels",
    .level_default = 127,
    .level_min = 1,
    .level_max = QSGD_MAX_LEVELS,
    .level_integer = 1,
    .opts = OPTS,
    .n_opts = SPEC_N(OPTS),
    .init = qsgd_init,
    .reduce = qsgd_reduce,
    .plan = qsgd_plan,
    .cost = qsgd_cost,
    .cost_ops = COST_OP_BIT(COST_OP_ELEMENTWISE) | COST_OP_BIT(COST_OP_QUANTISE),
    .free_state = qsgd_free,
};
