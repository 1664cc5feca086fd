/* comp_qsgd.c: QSGD stochastic quantisation (Alistarh, Grubic, Li, Tomioka, Vojnovic, "QSGD:
 * Communication-Efficient SGD via Gradient Quantization and Encoding", NeurIPS 2017, Section 3.1)
 * with s levels and the whole layer as one bucket: Q_s(v_i) = ||v||_2 sign(v_i) xi_i / s, where
 * xi_i = l + 1 with probability |v_i| s / ||v|| - l and l otherwise (l = floor(|v_i| s / ||v||)),
 * which is unbiased. The random numbers come from a GSL generator private to the worker (seeded
 * from the run's seed and the rank). Encoding, per layer: the norm as fp32, then per element a
 * sign bit and b = ceil(log2(s + 1)) level bits, packed least significant bit first and padded
 * to a byte; no Elias coding (the paper's Section 3.2), so the size is fixed. Every worker's
 * message is allgathered, decoded and averaged, as GRACE's QSGDCompressor with allgather
 * (sands-lab/grace grace_dl/dist/compressor/qsgd.py). No error feedback by default (ef=1 adds it).
 */
#include "compress_impl.h"

#include <assert.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    gsl_rng *rng;
    unsigned char *msg; /* [sum of the matrices' largest messages] */
} Qsgd;

enum { QSGD_MAX_LEVELS = 65535 };

static const SpecOpt OPTS[] = {
    {"ef", SPEC_INT, "0", 0, 1, NULL,
     "1: error feedback (keep M - decoded(M)); the paper has none"},
};

int comp_qsgd_level_bits(int s)
{
    int b = 0;
    while ((1L << b) < (long)s + 1) b++;
    return b;
}

size_t comp_qsgd_layer_bytes(size_t n, int s)
{
    return sizeof(float) + (n * (size_t)(1 + comp_qsgd_level_bits(s)) + 7) / 8;
}

static int qsgd_init(Compressor *c, const SpecVal *vals, BwError *err)
{
    Qsgd *s = calloc(1, sizeof *s);
    if (!s) return bw_fail(err, BW_ERUNTIME, "qsgd: out of memory");
    c->state = s;
    size_t cap = 1;
    for (int l = 0; l < c->n_layers; l++)
        if (c->layers[l].ndim == 2)
            cap += comp_qsgd_layer_bytes(layer_size(&c->layers[l]), QSGD_MAX_LEVELS);
    s->rng = gsl_rng_alloc(gsl_rng_mt19937);
    s->msg = malloc(cap);
    if (!s->rng || !s->msg) return bw_fail(err, BW_ERUNTIME, "qsgd: out of memory");
    gsl_rng_set(s->rng, comp_seed(c->seed, COMP_STREAM_QSGD, c->rank, 0));
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

/* Appends the low `bits` bits of v to the stream (acc holds `*fill` pending bits). */
static inline void put_bits(unsigned char **out, uint64_t *acc, int *fill, uint32_t v, int bits)
{
    *acc |= (uint64_t)v << *fill;
    *fill += bits;
    while (*fill >= 8) {
        *(*out)++ = (unsigned char)*acc;
        *acc >>= 8;
        *fill -= 8;
    }
}

/* Encodes m [n] at s levels into out; returns the bytes written. */
static size_t encode(gsl_rng *rng, const float *m, size_t n, int s, unsigned char *out)
{
    double sq = 0;
    for (size_t i = 0; i < n; i++) sq += (double)m[i] * m[i];
    const float norm = (float)sqrt(sq);
    memcpy(out, &norm, sizeof norm);
    unsigned char *p = out + sizeof norm;
    const int b = comp_qsgd_level_bits(s);
    uint64_t acc = 0;
    int fill = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t level = 0;
        if (norm > 0) {
            double x = fabs((double)m[i]) / norm * s;
            double l = floor(x);
            if (gsl_rng_uniform(rng) < x - l) l += 1;
            level = l > s ? (uint32_t)s : (uint32_t)l; /* |m_i| > the rounded norm by an ulp */
        }
        put_bits(&p, &acc, &fill, (uint32_t)(m[i] < 0) | level << 1, 1 + b);
    }
    if (fill) *p++ = (unsigned char)acc;
    return (size_t)(p - out);
}

/* Adds the decoded layer (norm sign level / s) into g [n], or writes it (add = 0); returns the
 * bytes read. */
static size_t decode(const unsigned char *in, size_t n, int s, float *g, int add)
{
    float norm;
    memcpy(&norm, in, sizeof norm);
    const unsigned char *p = in + sizeof norm;
    const int b = comp_qsgd_level_bits(s), width = 1 + b;
    const uint64_t mask = (1ULL << width) - 1;
    const double unit = (double)norm / s;
    uint64_t acc = 0;
    int fill = 0;
    for (size_t i = 0; i < n; i++) {
        while (fill < width) {
            acc |= (uint64_t)*p++ << fill;
            fill += 8;
        }
        uint32_t code = (uint32_t)(acc & mask);
        acc >>= width;
        fill -= width;
        float v = (float)(unit * (code >> 1));
        if (code & 1) v = -v;
        g[i] = add ? g[i] + v : v;
    }
    return sizeof norm + (n * (size_t)width + 7) / 8;
}

static double qsgd_reduce(Compressor *c, Comm *comm, float *grads, const int *todo, int n,
                          const double *levels)
{
    Qsgd *s = c->state;
    size_t bytes = 0;
    for (int t = 0; t < n; t++) {
        const LayerView *v = &c->layers[todo[t]];
        size_t len = layer_size(v);
        int lv = (int)levels[todo[t]];
        float *m = comp_feedback(c, grads, todo[t]);
        size_t got = encode(s->rng, m, len, lv, s->msg + bytes);
        if (c->memory) {                  /* e = M - what this worker sent */
            float *e = grads + v->offset; /* grads is overwritten below anyway: scratch */
            decode(s->msg + bytes, len, lv, e, 0);
            for (size_t i = 0; i < len; i++) m[i] -= e[i];
        }
        bytes += got;
    }
    unsigned char *all = coll_allgather(comm, c->rank, s->msg, bytes, c->sizes);
    const unsigned char *p = all;
    for (int w = 0; w < c->world; w++) {
        assert(c->sizes[w] == bytes);
        for (int t = 0; t < n; t++) {
            const LayerView *v = &c->layers[todo[t]];
            p += decode(p, layer_size(v), (int)levels[todo[t]], grads + v->offset, w > 0);
        }
    }
    free(all);
    const float wf = (float)c->world;
    for (int t = 0; t < n; t++) {
        const LayerView *v = &c->layers[todo[t]];
        float *g = grads + v->offset;
        for (size_t i = 0, len = layer_size(v); i < len; i++) g[i] /= wf;
    }
    return (double)bytes;
}

static const CompressorImpl IMPL = {qsgd_init, qsgd_reduce, qsgd_free};

const CompressorOps comp_qsgd_ops = {
    .name = "qsgd",
    .help = "stochastic quantisation to s levels of the layer's L2 norm, unbiased",
    .source = "Alistarh et al., NeurIPS 2017, Section 3.1 (one bucket per layer, no Elias "
              "coding); sands-lab/grace grace_dl/dist/compressor/qsgd.py",
    .wire = "allgather of an fp32 norm + (1 + ceil(log2(s + 1))) bits per element, per matrix",
    .level_name = "levels",
    .level_default = 127,
    .level_min = 1,
    .level_max = QSGD_MAX_LEVELS,
    .level_integer = 1,
    .opts = OPTS,
    .n_opts = 1,
    .impl = &IMPL,
};
