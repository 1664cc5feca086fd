/* compress.h: gradient compressors with error feedback. A compressor reduces a worker's whole
 * gradient (the model's flat buffer, cut into layer views) across all workers through the
 * collectives, at a level per layer that the policy may change at any step, and keeps its own
 * per-worker error-feedback memory. Compressors are plug-ins: one const CompressorOps each, its
 * description and its typed hooks, registered by one line in compressors.def (compress.c says
 * how to add one).
 *
 * compress_reduce, called by every rank from inside its actor with the same levels:
 *   - vectors (ndim 1) and layers at level 0 go dense fp32, in one fused allreduce;
 *   - the other layers go through the compressor, which may batch all layers' messages into
 *     one collective per round (PowerSGD: one allreduce of every P, one of every Q);
 *   - on return grads holds the decoded gradient averaged over the workers (except for the
 *     option that reproduces Accordion's TopK code, topk:divide=0, which leaves the sum, and
 *     powersgd:comm=none, an ablation that leaves each worker its own low-rank gradient).
 * It returns the payload bytes this worker handed to the collectives (the encoded sizes, bit
 * packing included), which equals the growth of coll_stats(..)->payload_bytes. */
#ifndef BELLOWS_COMPRESS_H
#define BELLOWS_COMPRESS_H

#include <stdio.h>

#include "spec.h"
#include "status.h"
#include "model.h"
#include "coll.h"
#include "costs.h"

typedef struct Compressor Compressor;

/* One collective call of compress_reduce: what it reduces and how big the message is. */
typedef enum {
    COMPRESS_ALLREDUCE_F32, /* coll_allreduce of count floats */
    COMPRESS_ALLREDUCE_F16, /* coll_allreduce_f16 of count halves */
    COMPRESS_ALLGATHER      /* coll_allgather of count bytes from every rank */
} CompressCollective;

typedef struct {
    CompressCollective op;
    size_t count; /* elements (allreduce) or bytes per rank (allgather) */
} CompressMsg;

#define COMPRESS_MAX_MSGS 8

/* The phases of a compressor's work between its collectives: phase p runs just before its
 * p-th collective (0: the encode), and the last after its last collective (the decode). */
#define COMPRESS_MAX_PHASES (COMPRESS_MAX_MSGS + 1)

/* What a compressor's encode and decode cost one worker's GPU for some layers. Always the
 * roofline's counts: floating-point operations and bytes of memory traffic (reads + writes),
 * for a time max(flops / rate, bytes / memory bandwidth) (the `ideal` cost profile). Under any
 * other profile (prof), also the seconds of each phase: every stage priced as its operation
 * (costs_op_seconds) and, in phase 0, the profile's fixed cost of each tensor handed to the
 * compressor. The caller sets prof (NULL: counts only) and zeroes the rest. */
typedef struct {
    double flops, bytes;
    const CostProfile *prof;
    double phase_s[COMPRESS_MAX_PHASES];
    int first_msg;    /* compress_plan_views: msgs[first_msg] is the compressor's first message
                         (1 when the dense allreduce comes first) */
    int n_compressed; /* compress_plan_views: the tensors handed to the compressor (it may send
                         nothing of its own for them: powersgd:comm=none) */
} CompressCost;

/* A compressor: its description (the listing, the level checks, the option table), then its
 * hooks. The hooks are declared here because they are members of this one struct, but they are
 * for the compressor's own file (comp_NAME.c): they work on struct Compressor and its helpers,
 * which compress_impl.h keeps out of sight of everyone else, and only the wrappers in
 * compress.c call them (asserting on what they return and standing in for the optional ones).
 * Every other caller goes through compress_create, compress_reduce, compress_plan,
 * compress_plan_views and compress_free. */
typedef struct {
    const char *name;
    const char *help;
    const char *source;
    const char *wire;       /* what goes on the wire, with which collective */
    const char *level_name; /* "rank", "fraction" (kept), "levels"; NULL: no level */
    double level_default, level_min, level_max;
    int level_integer;
    const SpecOpt *opts;
    int n_opts; /* SPEC_N(opts) */

    /* Reads the resolved options (vals[i] for opts[i]), allocates c->state and the per-worker
     * scratch, and calls comp_enable_memory if it keeps error feedback. On failure it returns
     * the status, and free_state still runs on whatever it set up. NULL: nothing to set up. */
    int (*init)(Compressor *c, const SpecVal *vals, BwError *err);
    /* Reduces the layers todo[0..n) (matrices at nonzero levels, ascending, n >= 1) across the
     * workers: on return grads holds their decoded mean (or what the variant defines) and the
     * memory their new error. Every rank calls it with the same todo and levels. Returns the
     * payload bytes handed to the collectives. NULL: the compressor sends every layer dense. */
    double (*reduce)(Compressor *c, Comm *comm, float *grads, const int *todo, int n,
                     const double *levels);
    /* The collectives reduce would call for the layers todo[0..n) of `layers` (matrices at
     * nonzero levels, n >= 1; levels indexed like layers), in its order, written into msgs (room
     * for COMPRESS_MAX_MSGS - 1: the dense allreduce may come first); returns how many, however
     * large n (one collective per round for all the layers). `layers` may be other shapes than
     * c's own (a real model's tensors), so a plan reads only the options and the world size of
     * c. Given exactly when reduce is, and derived from the same size helpers. 0 when reduce
     * sends nothing of its own (powersgd:comm=none); the cost hook then prices every stage in
     * phase 0, as it must every stage after its last message in that message's phase. */
    int (*plan)(const Compressor *c, const LayerView *layers, const int *todo, int n,
                const double *levels, CompressMsg *msgs);
    /* What encoding and decoding one matrix of this shape at this level (nonzero) costs one
     * worker, counted from the passes of reduce over its data (the comment of each says which):
     * adds each pass's flops and bytes to cost (comp_cost_add) and prices it as an operation
     * of cost->prof in its phase (comp_price); reads only the options and the world size of
     * c, as plan. Given exactly when reduce is. */
    void (*cost)(const Compressor *c, const LayerView *layer, double level, CompressCost *cost);
    /* The operations cost prices (COST_OP_BIT of each): a cost profile must have them all. */
    unsigned cost_ops;
    void (*free_state)(Compressor *c); /* NULL: free(c->state) is enough */
    /* A caution for the run's header when the resolved options (vals[i] for opts[i]) make it
     * something other than its method (powersgd:comm=none), else NULL. NULL: never. */
    const char *(*note)(const SpecVal *vals);
} CompressorOps;

const CompressorOps *compress_find(const char *name);
const CompressorOps *const *compress_registry(void); /* NULL-terminated */

/* One compressor for one worker (rank of world). seed is the run's seed: streams shared by all
 * workers (PowerSGD's first Q, RandomK's indices) derive from it alone, private ones (QSGD's
 * rounding) from it and the rank. spec is "name[:k=v,...]"; flag names the CLI flag. */
int compress_create(const char *spec, const char *flag, const LayerView *layers, int n_layers,
                    int world, int rank, unsigned long seed, Compressor **out, BwError *err);
void compress_free(Compressor *c); /* NULL is a no-op */

/* Checks a level for this compressor: usage error naming what was expected, prefixed by
 * `what` (a flag or a layer; may be NULL). 0 (dense) is valid for every compressor; a
 * compressor without a level_name takes 1 (compress) or 0. */
int compress_check_level(const CompressorOps *ops, double level, const char *what, BwError *err);

double compress_reduce(Compressor *c, Comm *comm, float *grads, const double *levels);
/* compress_reduce, except that a step sending every layer dense, end to end, on a communicator
 * that sums once (coll_sums_once) puts the mean into `mean` [n_params] instead of grads: ranks
 * that share one replica pass the same buffer, written once (coll_allreduce_mean_into). Sets
 * *into to whether it did (grads then hold what was sent: g plus the error-feedback memory). */
double compress_reduce_into(Compressor *c, Comm *comm, float *grads, const double *levels,
                            float *mean, int *into);

/* The collectives compress_reduce(c, ..., levels) calls, in its order, without touching any
 * data: their sizes depend only on the layers' shapes, the levels, the worker count and the
 * options. Writes at most COMPRESS_MAX_MSGS into msgs and returns how many; their payload
 * bytes add up to what compress_reduce returns (tests/test_compress.c checks both against the
 * collectives' own books). The fast trace replay charges these instead of reducing. It uses the
 * compressor's scratch, so one compressor plans or reduces one call at a time. */
int compress_plan(const Compressor *c, const double *levels, CompressMsg *msgs);

/* The collectives compress_reduce would issue for the layers todo[0..n) of `layers` (any
 * shapes, not necessarily the compressor's own: a real model's tensors), at levels[] indexed
 * like layers, with the compressor's options and world size, and what encoding and decoding
 * them costs (cost may be NULL; else its prof is read, and the rest filled). Layers that are
 * vectors or at level 0 go in one dense fp32 allreduce first, as compress_reduce does; it
 * costs nothing here (no encode). Returns how many messages (<= COMPRESS_MAX_MSGS; 0 for
 * n == 0). compress_plan is this on c's own layers, all of them. */
int compress_plan_views(const Compressor *c, const LayerView *layers, const int *todo, int n,
                        const double *levels, CompressMsg *msgs, CompressCost *cost);

/* The worker's error-feedback memory [n_params], laid out like grads (the residual each layer
 * carries into the next step; zero for vectors and for layers last sent dense); NULL when the
 * compressor keeps none (none, fp16 and qsgd by default, topk:ef=0). Owned by c. */
const float *compress_memory(const Compressor *c);

/* Lets c's math between its collectives run on pool's threads (comp_parallel), in parallel with
 * the other workers' (NULL: on the calling actor). Only for a communicator whose collectives
 * take no simulated time (a mirror, or a costed step's), on which the workers reach each stretch
 * of math at the same simulated instant; the same bits either way. */
typedef struct Pool Pool;
void compress_set_pool(Compressor *c, Pool *pool);

/* Wall seconds compress_reduce has spent in c's own math (encoding, decoding, error feedback,
 * the dense layers' packing), not in the collectives; for benchmarks. */
double compress_math_seconds(const Compressor *c);

/* The spec as given ("topk:ef=0"). */
const char *compress_spec(const Compressor *c);

/* The spec with every option spelled out in its table's order, defaults included: "topk:ef=0"
 * gives "topk:ef=0,divide=1,index=int32,count=ceil" ("none" stays "none"); an option without a
 * default appears only when given (powersgd's comm). Usage errors as
 * compress_create's (flag names the CLI flag); buf is "" then. */
int compress_spec_resolved(const char *spec, const char *flag, char *buf, size_t n, BwError *err);

/* The compressor's note (CompressorOps.note) on spec, or NULL: none, or a bad spec. */
const char *compress_spec_note(const char *spec);

/* The operations the cost hook of the compressor `spec` names prices (COST_OP_BIT of each),
 * for costs_check; 0 for an unknown name. */
unsigned compress_cost_ops(const char *spec);

/* The `bellows compressors` listing. */
void compress_print_list(FILE *out);

#endif
