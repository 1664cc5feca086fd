/* compress_impl.h: what the compressor core (compress.c) shares with its plug-in files
 * (comp_*.c) and with the compressor suites' harness (tests/compresstest.h); nothing else
 * includes it. A plug-in is one const
 * CompressorOps whose hooks (declared there, in compress.h) work on the struct Compressor below
 * with the helpers below. The core parses the spec, allocates the Compressor, reduces the
 * vectors and the level-0 layers dense in one fused fp32 allreduce, and hands the other layers
 * to the reduce hook. */
#ifndef BELLOWS_COMPRESS_IMPL_H
#define BELLOWS_COMPRESS_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include <gsl/gsl_rng.h>

#include "compress.h"
#include "pool.h"

struct Compressor {
    const CompressorOps *ops;
    char spec[SPEC_MAX_TEXT]; /* name:k=v,... as given */
    int world, rank;
    unsigned long seed;
    long step; /* completed calls to compress_reduce */
    int n_layers;
    LayerView *layers;    /* [n_layers], a copy */
    size_t n_params;      /* floats spanned by the layers: max(offset + size) */
    size_t max_layer;     /* largest layer, in floats */
    size_t matrix_params; /* floats in the matrix (ndim 2) layers */
    float *memory;        /* [n_params] error feedback, same layout as grads; NULL without */
    /* [n_layers] with memory: 1 once comp_feedback has written the layer's memory since it was
     * last emptied; 0: it is all zeros, and the dense path leaves it untouched (no memory of
     * a worker that sends everything dense is ever made resident) */
    unsigned char *memory_used;
    float *dense;  /* [n_params] the fused dense allreduce */
    int *todo;     /* [n_layers] */
    size_t *sizes; /* [world] scratch for coll_allgather */
    void *state;   /* the plug-in's: set by init, freed by free_state */
    /* wall seconds compress_reduce spent in its own math, not in the collectives (whose wait
     * lets the other actors run): the clock runs from math_t0 until the next collective */
    double math_s, math_t0;
    /* comp_parallel: the pool (compress_set_pool; NULL: none), this worker's job on it, and
     * the section it runs */
    Pool *pool;
    PoolJob job;
    void (*section)(Compressor *c, void *arg);
    void *section_arg;
    double section_s; /* the section's wall seconds, on whichever thread ran it */
};

/* What a reduce hook's stretches of math share (comp_parallel's argument): the hook's own
 * arguments, what its encoding made, and for an allgather every worker's message. */
typedef struct {
    float *grads;
    const int *todo;
    int n;
    const double *levels;
    size_t size;              /* what the encoding made: bytes, values or halves */
    const unsigned char *all; /* comp_reduce_allgather: every worker's message, in rank order */
} CompWork;

/* A reduce hook made of an encoding into msg (setting wk->size, in bytes; msg is the plug-in's
 * buffer, not moved by the encoding), one allgather of it,
 * and a decoding of every worker's message (wk->all, freed after): each stretch through
 * comp_parallel. Returns the bytes this worker sent. */
double comp_reduce_allgather(Compressor *c, Comm *comm, CompWork *wk,
                             void (*encode)(Compressor *c, void *wk),
                             void (*decode)(Compressor *c, void *wk), const unsigned char *msg);

/* Runs section(c, arg), a stretch of this worker's compressor math between two collectives: on
 * the compressor's pool (compress_set_pool) as a job, once the actor has yielded so that the
 * other workers' actors, at the same simulated instant, can submit theirs, and then waited for;
 * or at once without a pool. The section must touch only c's own data and what every worker
 * only reads; its wall time counts as the compressor's math. No simulated time passes. */
void comp_parallel(Compressor *c, void (*section)(Compressor *c, void *arg), void *arg);

/* The collectives as the plug-ins call them: the same as coll_*, with the compressor's math
 * clock stopped while they run. */
void comp_allreduce(Compressor *c, Comm *comm, float *buf, size_t count);
void comp_allreduce_f16(Compressor *c, Comm *comm, uint16_t *buf, size_t count);
unsigned char *comp_allgather(Compressor *c, Comm *comm, const void *send, size_t bytes);

/* Allocates the error-feedback memory (zeros). BW_ERUNTIME when out of memory. */
int comp_enable_memory(Compressor *c, BwError *err);

/* Error feedback for one layer: with memory, memory[layer] += grads[layer] and returns the
 * memory's slice, which now holds M = g + e; without, returns the grads' slice (M = g). */
float *comp_feedback(Compressor *c, float *grads, int layer);

/* The costs of the cost hooks: each stage of a compressor (a loop of its reduce, which follows
 * the reference implementations) counts as one GPU kernel's pass over its operands: its flops,
 * and the bytes it reads and writes in memory, 4 per fp32 element (8 for a read-modify-write),
 * 2 per half, the message's own size for packed bits. Small per-layer scalars (a norm, a scale)
 * are not counted. Each hook's comment lists its stages. These counts are the roofline (the
 * `ideal` profile); comp_price prices the same stages as a cost profile's operations. */
static inline void comp_cost_add(CompressCost *cost, double flops, double bytes)
{
    cost->flops += flops;
    cost->bytes += bytes;
}

/* Prices `times` stages of operation op over size units (the op's unit, costs.h) in phase p,
 * under cost->prof (nothing for NULL or ideal). op must be one of c's cost_ops. */
void comp_price(const Compressor *c, CompressCost *cost, int phase, CostOp op, double size,
                double times);

/* The error-feedback add M = g + e (comp_feedback) over n floats when c keeps memory: n flops,
 * 12 n bytes (read g and e, write e), an elementwise pass in phase 0; nothing without memory. */
void comp_cost_feedback(const Compressor *c, size_t n, CompressCost *cost);

/* Seeds for GSL generators: a 64-bit mix (splitmix64's finaliser) of the run's seed, a stream
 * tag and two numbers. Streams shared by all workers use (seed, tag, layer, step); private ones
 * put the rank in. PowerSGD draws from MT19937, RandomK and QSGD (a draw per element) from the
 * faster taus2; both take the low 32 bits of the seed. */
enum { COMP_STREAM_POWERSGD = 1, COMP_STREAM_RANDOMK = 2, COMP_STREAM_QSGD = 3 };
unsigned long comp_seed(unsigned long seed, int tag, long a, long b);

/* x[i] = N(0, 1) draws (GSL's ziggurat, gsl_ran_gaussian_ziggurat), i ascending. Lives in
 * compress.c because gsl_randist.h and OpenBLAS's cblas.h cannot share a file. */
void comp_gaussian_fill(gsl_rng *rng, float *x, size_t n);

/* sum of x[i]^2 and of |x[i]|, in double, over 8 interleaved partial sums added in a fixed
 * order (deterministic, and not bound by the latency of one chain of additions). */
double comp_sum_squares(const float *x, size_t n);
double comp_sum_abs(const float *x, size_t n);

/* The allgather compressors' last step: the summed layers todo[0..n) divided by the workers. */
void comp_divide_layers(const Compressor *c, float *grads, const int *todo, int n);

/* Elements kept at fraction f of n (TopK, RandomK): k = max(1, ceil(f n)), computed as
 * ceil(f n - 1e-9) so that binary round-off (0.07 * 100 = 7.000000000000001) does not add one. */
size_t comp_keep_count(double fraction, size_t n);

/* signSGD's packing: bit (i mod 8) of byte i / 8, least significant first, is set when
 * p[i] >= 0 (a positive or zero sign, as GRACE's efsignsgd.py encodes it); the unused high
 * bits of the last byte are zero. Returns the bytes written, ceil(n / 8). */
size_t comp_sign_pack(const float *p, size_t n, uint8_t *out);

/* QSGD's level width: the smallest b with 2^b >= s + 1 (levels 0..s). */
int comp_qsgd_level_bits(int s);

/* Bits of one element's QSGD code at s levels: a sign and the level, or that padded to whole
 * bytes (bytes: qsgd:wire=bytes). */
int comp_qsgd_code_bits(int s, int bytes);

/* Bytes of one layer's QSGD message: the fp32 norm, then the codes. */
size_t comp_qsgd_layer_bytes(size_t n, int s, int bytes);

#endif
