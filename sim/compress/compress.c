/* compress.c: the compressor core (see compress.h): the registry, spec parsing, level checks,
 * the fused dense allreduce of vectors and level-0 layers, error-feedback helpers and the
 * `bellows compressors` listing. Error feedback follows Karimireddy et al., "Error Feedback
 * Fixes SignSGD and other Gradient Compression Schemes", ICML 2019, Algorithm 2 (EF-SGD) in
 * gradient space, as epfml/powersgd's reducers do (gradient_reducers.py): M = g + e is
 * compressed and e' = M - C(M). A layer sent dense has C(M) = M, so its memory empties.
 *
 * Adding a compressor NAME takes one new file and one line:
 *   1. sim/compress/comp_NAME.c, opening with what it is and the paper and code it follows,
 *      defining `const CompressorOps comp_NAME_ops = {...}`: name, help, source, wire, level,
 *      `.opts = OPTS, .n_opts = SPEC_N(OPTS)` if it has options, and its hooks (init, reduce,
 *      plan, cost, free_state; compress.h says what each must do, compress_impl.h what they
 *      share);
 *   2. the line COMPRESSOR(NAME) in sim/compress/compressors.def, where it should be listed.
 * CMake compiles every sim/compress/comp_*.c by itself, and tests/test_compress.c runs every
 * registered compressor through its contract; add tests of the new one's own definition to
 * tests/test_compress_methods.c. */
#include "compress_impl.h"
#include "splitmix.h"
#include "wallclock.h"
#include "xalloc.h"

#include <assert.h>
#include <gsl/gsl_randist.h>
#include <simgrid/actor.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Every compressor's ops, defined in its own comp_NAME.c, then the registry in the order of
 * compressors.def. */
#define COMPRESSOR(name) extern const CompressorOps comp_##name##_ops;
#include "compressors.def"
#undef COMPRESSOR

static const CompressorOps *const REGISTRY[] = {
#define COMPRESSOR(name) &comp_##name##_ops,
#include "compressors.def"
#undef COMPRESSOR
    NULL,
};

const CompressorOps *const *compress_registry(void)
{
    return REGISTRY;
}

const CompressorOps *compress_find(const char *name)
{
    for (const CompressorOps *const *r = REGISTRY; *r; r++)
        if (strcmp((*r)->name, name) == 0) return *r;
    return NULL;
}

/* "a fraction in (0, 1]", "an integer in [1, 4096]", "1 (compress)": what a level may be. */
static void level_expected(const CompressorOps *ops, char *buf, size_t n)
{
    if (!ops->level_name)
        snprintf(buf, n, "1 (compress) or 0 (dense fp32); %s takes no level", ops->name);
    else if (ops->level_integer)
        snprintf(buf, n, "an integer %s in [%g, %g], or 0 (dense fp32)", ops->level_name,
                 ops->level_min, ops->level_max);
    else if (ops->level_min == 0)
        snprintf(buf, n, "a %s in (0, %g], or 0 (dense fp32)", ops->level_name, ops->level_max);
    else
        snprintf(buf, n, "a %s in [%g, %g], or 0 (dense fp32)", ops->level_name, ops->level_min,
                 ops->level_max);
}

int compress_check_level(const CompressorOps *ops, double level, const char *what, BwError *err)
{
    int ok;
    if (!isfinite(level) || level < 0)
        ok = 0;
    else if (level == 0)
        ok = 1;
    else if (!ops->level_name)
        ok = level == 1;
    else
        ok = level >= ops->level_min && level <= ops->level_max &&
             (!ops->level_integer || level == floor(level));
    if (ok) return BW_OK;
    char expected[160];
    level_expected(ops, expected, sizeof expected);
    return bw_fail(err, BW_EUSAGE, "%s%s%s level %g: expected %s", what ? what : "",
                   what && *what ? ": " : "", ops->name, level, expected);
}

int comp_enable_memory(Compressor *c, BwError *err)
{
    c->memory = bw_xcalloc(c->n_params ? c->n_params : 1, sizeof(float), "compress.c: c->memory");
    c->memory_used =
        bw_xcalloc(c->n_layers ? (size_t)c->n_layers : 1, 1, "compress.c: c->memory_used");
    if (!c->memory || !c->memory_used)
        return bw_fail(err, BW_ERUNTIME, "compressor: out of memory");
    return BW_OK;
}

void comp_cost_feedback(const Compressor *c, size_t n, CompressCost *cost)
{
    if (!c->memory) return;
    comp_cost_add(cost, (double)n, 12.0 * (double)n);
    comp_price(c, cost, 0, COST_OP_ELEMENTWISE, 12.0 * (double)n, 1);
}

void comp_price(const Compressor *c, CompressCost *cost, int phase, CostOp op, double size,
                double times)
{
    assert(phase >= 0 && phase < COMPRESS_MAX_PHASES && times >= 0);
    /* every operation a hook prices is declared; QR is the orthogonalisation a profile's hook
     * may run instead of Gram-Schmidt (costs.h CostHook), checked when the profile is read */
    assert(c->ops->cost_ops & COST_OP_BIT(op == COST_OP_QR ? COST_OP_ORTHOGONALISE : op));
    (void)c;
    if (cost->prof && !cost->prof->ideal && times > 0)
        cost->phase_s[phase] += times * costs_op_seconds(cost->prof, op, size);
}

float *comp_feedback(Compressor *c, float *grads, int layer)
{
    const LayerView *v = &c->layers[layer];
    float *g = grads + v->offset;
    if (!c->memory) return g;
    float *m = c->memory + v->offset;
    c->memory_used[layer] = 1;
    size_t n = layer_size(v);
    for (size_t i = 0; i < n; i++) m[i] += g[i];
    return m;
}

unsigned long comp_seed(unsigned long seed, int tag, long a, long b)
{
    uint64_t z = (uint64_t)seed;
    const uint64_t parts[3] = {(uint64_t)tag, (uint64_t)a, (uint64_t)b};
    for (int i = 0; i < 3; i++) z = splitmix64(z + parts[i]);
    return (unsigned long)z;
}

double comp_sum_squares(const float *x, size_t n)
{
    double acc[8] = {0};
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++) acc[j] += (double)x[i + j] * x[i + j];
    for (; i < n; i++) acc[0] += (double)x[i] * x[i];
    return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

void comp_divide_layers(const Compressor *c, float *grads, const int *todo, int n)
{
    const float wf = (float)c->world;
    for (int t = 0; t < n; t++) {
        const LayerView *v = &c->layers[todo[t]];
        float *g = grads + v->offset;
        for (size_t i = 0, len = layer_size(v); i < len; i++) g[i] /= wf;
    }
}

double comp_sum_abs(const float *x, size_t n)
{
    double acc[8] = {0};
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++) acc[j] += fabs((double)x[i + j]);
    for (; i < n; i++) acc[0] += fabs((double)x[i]);
    return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

void comp_gaussian_fill(gsl_rng *rng, float *x, size_t n)
{
    for (size_t i = 0; i < n; i++) x[i] = (float)gsl_ran_gaussian_ziggurat(rng, 1.0);
}

size_t comp_keep_count(double fraction, size_t n)
{
    double k = ceil(fraction * (double)n - 1e-9);
    if (k < 1) return 1;
    return k > (double)n ? n : (size_t)k;
}

/* ---- the hooks: the core calls them only through these wrappers, which hold the asserts on
 * what a plug-in declares and returns, and stand in for the optional hooks ---- */

/* A plug-in's ops as the core relies on them; checked once per compress_create. */
static void ops_assert_valid(const CompressorOps *ops)
{
    assert(ops->name && ops->help && ops->source && ops->wire);
    assert(ops->n_opts >= 0 && ops->n_opts <= SPEC_MAX_KV && (ops->opts || !ops->n_opts));
    assert(!ops->reduce == !ops->plan); /* the fast replay plans what reduce would send */
    assert(!ops->reduce == !ops->cost); /* and charges what encoding and decoding cost */
    assert(compress_check_level(ops, ops->level_default, NULL, NULL) == BW_OK);
    (void)ops; /* unused when NDEBUG */
}

/* Whether the plug-in compresses at all: without reduce every layer goes dense. */
static int ops_compresses(const CompressorOps *ops)
{
    return ops->reduce != NULL;
}

static int ops_init(Compressor *c, const SpecVal *vals, BwError *err)
{
    if (!c->ops->init) return BW_OK; /* no options to read, no state */
    int rc = c->ops->init(c, vals, err);
    assert(rc == BW_OK || rc == BW_EUSAGE || rc == BW_ERUNTIME);
    return rc;
}

static double ops_reduce(Compressor *c, Comm *comm, float *grads, int n, const double *levels)
{
    assert(ops_compresses(c->ops) && n >= 1);
    double bytes = c->ops->reduce(c, comm, grads, c->todo, n, levels);
    assert(isfinite(bytes) && bytes >= 0);
    return bytes;
}

/* Plans into a buffer of its own, so a plug-in that writes too many messages trips the assert
 * here instead of writing past the caller's room. */
static int ops_plan(const Compressor *c, const LayerView *layers, const int *todo, int n,
                    const double *levels, CompressMsg *msgs, int room)
{
    (void)room; /* read by the assert only */
    assert(ops_compresses(c->ops) && n >= 1);
    CompressMsg own[COMPRESS_MAX_MSGS];
    int got = c->ops->plan(c, layers, todo, n, levels, own);
    assert(got >= 0 && got <= room); /* 0: nothing of its own (powersgd:comm=none) */
    memcpy(msgs, own, sizeof *own * (size_t)got);
    return got;
}

/* One matrix's cost, counted from zero under prof. */
static CompressCost ops_cost(const Compressor *c, const LayerView *layer, double level,
                             const CostProfile *prof)
{
    assert(ops_compresses(c->ops) && layer->ndim == 2 && level != 0);
    CompressCost got = {.prof = prof};
    c->ops->cost(c, layer, level, &got);
    assert(isfinite(got.flops) && got.flops >= 0 && isfinite(got.bytes) && got.bytes >= 0);
    for (int p = 0; p < COMPRESS_MAX_PHASES; p++)
        assert(isfinite(got.phase_s[p]) && got.phase_s[p] >= 0);
    return got;
}

static void ops_free_state(Compressor *c)
{
    if (c->ops->free_state)
        c->ops->free_state(c);
    else
        free(c->state);
}

int compress_create(const char *spec, const char *flag, const LayerView *layers, int n_layers,
                    int world, int rank, unsigned long seed, Compressor **out, BwError *err)
{
    assert(world >= 1 && rank >= 0 && rank < world && n_layers >= 0);
    *out = NULL;
    Spec s;
    int rc = spec_parse(spec, flag, &s, err);
    if (rc) return rc;
    const CompressorOps *ops = compress_find(s.name);
    if (!ops) {
        char known[256] = "";
        size_t used = 0;
        for (const CompressorOps *const *r = REGISTRY; *r && used < sizeof known; r++)
            used += (size_t)snprintf(known + used, sizeof known - used, "%s%s",
                                     r == REGISTRY ? "" : ", ", (*r)->name);
        return bw_fail(err, BW_EUSAGE, "%s: unknown compressor '%s' (known: %s)", flag, s.name,
                       known);
    }
    ops_assert_valid(ops);
    SpecVal vals[SPEC_MAX_KV];
    rc = spec_resolve(&s, ops->opts, ops->n_opts, vals, err);
    if (rc) return rc;

    Compressor *c = bw_xcalloc(1, sizeof *c, "compress.c: c");
    if (!c) return bw_fail(err, BW_ERUNTIME, "compressor: out of memory");
    c->ops = ops;
    snprintf(c->spec, sizeof c->spec, "%s", spec);
    c->world = world;
    c->rank = rank;
    c->seed = seed;
    c->n_layers = n_layers;
    c->layers =
        bw_xmalloc(sizeof *c->layers * (size_t)(n_layers ? n_layers : 1), "compress.c: c->layers");
    c->todo =
        bw_xmalloc(sizeof *c->todo * (size_t)(n_layers ? n_layers : 1), "compress.c: c->todo");
    c->sizes = bw_xmalloc(sizeof *c->sizes * (size_t)world, "compress.c: c->sizes");
    if (!c->layers || !c->todo || !c->sizes) goto oom;
    for (int l = 0; l < n_layers; l++) {
        const LayerView *v = &layers[l];
        assert(v->ndim == 1 || v->ndim == 2);
        c->layers[l] = *v;
        size_t n = layer_size(v);
        if (v->offset + n > c->n_params) c->n_params = v->offset + n;
        if (n > c->max_layer) c->max_layer = n;
        if (v->ndim == 2) c->matrix_params += n;
    }
    c->dense = bw_xmalloc(sizeof(float) * (c->n_params ? c->n_params : 1), "compress.c: c->dense");
    if (!c->dense) goto oom;
    rc = ops_init(c, vals, err);
    if (rc) {
        compress_free(c);
        return rc;
    }
    *out = c;
    return BW_OK;
oom:
    compress_free(c);
    return bw_fail(err, BW_ERUNTIME, "compressor: out of memory");
}

/* Choice i of "a|b|c" into buf. */
static void choice_word(const char *choices, int i, char *buf, size_t n)
{
    const char *p = choices;
    for (; i > 0 && p; i--) {
        p = strchr(p, '|');
        if (p) p++;
    }
    size_t len = p ? strcspn(p, "|") : 0;
    snprintf(buf, n, "%.*s", (int)len, p ? p : "");
}

int compress_spec_resolved(const char *spec, const char *flag, char *buf, size_t n, BwError *err)
{
    assert(buf && n > 0);
    Spec s;
    int rc = spec_parse(spec, flag, &s, err);
    const CompressorOps *ops = rc ? NULL : compress_find(s.name);
    if (!rc && !ops) rc = bw_fail(err, BW_EUSAGE, "%s: unknown compressor '%s'", flag, s.name);
    SpecVal vals[SPEC_MAX_KV];
    if (!rc) rc = spec_resolve(&s, ops->opts, ops->n_opts, vals, err);
    if (rc) {
        buf[0] = '\0';
        return rc;
    }
    size_t used = (size_t)snprintf(buf, n, "%s", ops->name);
    for (int i = 0, k = 0; i < ops->n_opts && used < n; i++) {
        char v[64];
        if (!vals[i].set) continue; /* no default and not given (powersgd's comm) */
        if (ops->opts[i].type == SPEC_CHOICE)
            choice_word(ops->opts[i].choices, vals[i].choice, v, sizeof v);
        else
            snprintf(v, sizeof v, "%.17g", vals[i].num);
        used +=
            (size_t)snprintf(buf + used, n - used, "%c%s=%s", k++ ? ',' : ':', ops->opts[i].key, v);
    }
    return BW_OK;
}

void compress_free(Compressor *c)
{
    if (!c) return;
    ops_free_state(c);
    free(c->layers);
    free(c->todo);
    free(c->sizes);
    free(c->dense);
    free(c->memory);
    free(c->memory_used);
    free(c);
}

const float *compress_memory(const Compressor *c)
{
    return c->memory;
}

const char *compress_spec(const Compressor *c)
{
    return c->spec;
}

/* Whether a layer (of any shape) goes through the compressor at this level (else: the fused
 * dense allreduce). */
static int view_compressed(const CompressorOps *ops, const LayerView *v, double level)
{
    return ops_compresses(ops) && v->ndim == 2 && level != 0;
}

/* Whether layer l of c's own goes through the compressor at these levels. */
static int compressed(const Compressor *c, int l, const double *levels)
{
    return view_compressed(c->ops, &c->layers[l], levels[l]);
}

/* The math clock (Compressor.math_s). */
static void math_resume(Compressor *c)
{
    c->math_t0 = wallclock_s();
}

static void math_pause(Compressor *c)
{
    c->math_s += wallclock_s() - c->math_t0;
}

void compress_set_pool(Compressor *c, Pool *pool)
{
    c->pool = pool;
}

static void section_job(void *arg, int thread)
{
    (void)thread;
    Compressor *c = arg;
    double t0 = wallclock_s();
    c->section(c, c->section_arg);
    c->section_s = wallclock_s() - t0;
}

void comp_parallel(Compressor *c, void (*section)(Compressor *c, void *arg), void *arg)
{
    if (!c->pool) {
        section(c, arg);
        return;
    }
    math_pause(c);
    c->section = section;
    c->section_arg = arg;
    pool_submit(c->pool, &c->job, section_job, c);
    sg_actor_yield(); /* the others submit theirs */
    pool_wait(c->pool, &c->job);
    c->math_s += c->section_s;
    math_resume(c);
}

void comp_allreduce(Compressor *c, Comm *comm, float *buf, size_t count)
{
    math_pause(c);
    coll_allreduce(comm, c->rank, buf, count);
    math_resume(c);
}

void comp_allreduce_f16(Compressor *c, Comm *comm, uint16_t *buf, size_t count)
{
    math_pause(c);
    coll_allreduce_f16(comm, c->rank, buf, count);
    math_resume(c);
}

unsigned char *comp_allgather(Compressor *c, Comm *comm, const void *send, size_t bytes)
{
    math_pause(c);
    unsigned char *all = coll_allgather(comm, c->rank, send, bytes, c->sizes);
    math_resume(c);
    return all;
}

double comp_reduce_allgather(Compressor *c, Comm *comm, CompWork *wk,
                             void (*encode)(Compressor *c, void *wk),
                             void (*decode)(Compressor *c, void *wk), const unsigned char *msg)
{
    comp_parallel(c, encode, wk);
    unsigned char *all = comp_allgather(c, comm, msg, wk->size);
    wk->all = all;
    comp_parallel(c, decode, wk);
    free(all);
    wk->all = NULL;
    return (double)wk->size;
}

/* Whether the layers that go dense at these levels lie end to end in grads (every layer, in the
 * usual layouts, when all go dense); *first: where they start. */
static int dense_contiguous(const Compressor *c, const double *levels, size_t *first)
{
    size_t next = 0;
    int any = 0;
    for (int l = 0; l < c->n_layers; l++) {
        const LayerView *v = &c->layers[l];
        if (compressed(c, l, levels)) continue;
        if (any && v->offset != next) return 0;
        if (!any) *first = v->offset;
        any = 1;
        next = v->offset + layer_size(v);
    }
    return any;
}

/* M = g + e of dense layer l into out[0 .. size), and e = 0. A memory never written is zeros,
 * and M = g is left where it is when out is the layer's own slice of grads (the mean's + 0 in
 * coll_allreduce_mean gives the sum's zeros the sign an addition of e = +0 would have). */
static void dense_feedback(Compressor *c, float *grads, int l, float *out)
{
    const LayerView *v = &c->layers[l];
    const size_t n = layer_size(v);
    const float *g = grads + v->offset;
    if (c->memory && !c->memory_used[l]) {
        if (out != g) memcpy(out, g, n * sizeof(float));
        return;
    }
    const float *m = comp_feedback(c, grads, l);
    if (out != m) memmove(out, m, n * sizeof(float));
    if (c->memory) {
        memset(c->memory + v->offset, 0, n * sizeof(float));
        c->memory_used[l] = 0;
    }
}

/* Vectors and level-0 layers: M = g + e, one fused allreduce to their mean, e = 0. The fused
 * buffer is the dense layers' own span of grads when they lie end to end (no copy, and the
 * buffer c->dense is never touched), else c->dense, copied back; the same sums either way. With
 * mean (compress_reduce_into), a whole dense gradient's mean goes there instead: *into. */
static double reduce_dense(Compressor *c, Comm *comm, float *grads, const double *levels,
                           float *mean, int *into)
{
    size_t first = 0, n_dense = 0;
    const int in_place = dense_contiguous(c, levels, &first);
    float *buf = in_place ? grads + first : c->dense;
    for (int l = 0; l < c->n_layers; l++) {
        if (compressed(c, l, levels)) continue;
        dense_feedback(c, grads, l, buf + n_dense);
        n_dense += layer_size(&c->layers[l]);
    }
    if (!n_dense) return 0;
    *into = mean && in_place && first == 0 && n_dense == c->n_params && coll_sums_once(comm);
    math_pause(c);
    if (*into)
        coll_allreduce_mean_into(comm, c->rank, buf, mean, n_dense);
    else
        coll_allreduce_mean(comm, c->rank, buf, n_dense);
    math_resume(c);
    size_t at = 0;
    for (int l = 0; l < c->n_layers && !in_place; l++) {
        const LayerView *v = &c->layers[l];
        if (compressed(c, l, levels)) continue;
        memcpy(grads + v->offset, buf + at, layer_size(v) * sizeof(float));
        at += layer_size(v);
    }
    return (double)n_dense * sizeof(float);
}

double compress_reduce_into(Compressor *c, Comm *comm, float *grads, const double *levels,
                            float *mean, int *into)
{
    math_resume(c);
    int n_todo = 0, in_mean = 0;
    for (int l = 0; l < c->n_layers; l++)
        if (compressed(c, l, levels)) {
            assert(compress_check_level(c->ops, levels[l], "", NULL) == BW_OK);
            c->todo[n_todo++] = l;
        }
    double bytes = reduce_dense(c, comm, grads, levels, n_todo ? NULL : mean, &in_mean);
    if (n_todo) bytes += ops_reduce(c, comm, grads, n_todo, levels);
    c->step++;
    math_pause(c);
    if (into) *into = in_mean;
    return bytes;
}

double compress_reduce(Compressor *c, Comm *comm, float *grads, const double *levels)
{
    return compress_reduce_into(c, comm, grads, levels, NULL, NULL);
}

double compress_math_seconds(const Compressor *c)
{
    return c->math_s;
}

/* The compressed layers' indices of a plan: on the stack for up to PLAN_ON_STACK layers (every
 * small model, one DDP bucket), on the heap beyond (a whole real model's tensors at once). */
enum { PLAN_ON_STACK = 512 };

int compress_plan_views(const Compressor *c, const LayerView *layers, const int *todo, int n,
                        const double *levels, CompressMsg *msgs, CompressCost *cost)
{
    assert(n >= 0 && (layers || n == 0));
    int on_stack[PLAN_ON_STACK], *sel = on_stack, n_sel = 0, n_msgs = 0;
    if (n > PLAN_ON_STACK) {
        /* a plan has no error to return */
        sel = bw_xrealloc_n(NULL, (size_t)n, sizeof *sel, "a compressor's plan");
    }
    const CostProfile *prof = cost && cost->prof && !cost->prof->ideal ? cost->prof : NULL;
    CompressCost total = {.prof = cost ? cost->prof : NULL};
    size_t n_dense = 0;
    for (int t = 0; t < n; t++) {
        int l = todo[t];
        const LayerView *v = &layers[l];
        assert(v->ndim == 1 || v->ndim == 2);
        if (!view_compressed(c->ops, v, levels[l])) {
            n_dense += layer_size(v);
            continue;
        }
        assert(compress_check_level(c->ops, levels[l], "", NULL) == BW_OK);
        sel[n_sel++] = l;
        if (cost) {
            CompressCost one = ops_cost(c, v, levels[l], prof);
            comp_cost_add(&total, one.flops, one.bytes);
            for (int p = 0; prof && p < COMPRESS_MAX_PHASES; p++)
                total.phase_s[p] += one.phase_s[p];
            if (prof) total.phase_s[0] += prof->tensor_s; /* the hook's own dispatch */
        }
    }
    total.first_msg = n_dense ? 1 : 0;
    total.n_compressed = n_sel;
    if (n_dense) msgs[n_msgs++] = (CompressMsg){COMPRESS_ALLREDUCE_F32, n_dense};
    if (n_sel)
        n_msgs +=
            ops_plan(c, layers, sel, n_sel, levels, msgs + n_msgs, COMPRESS_MAX_MSGS - n_msgs);
    assert(n_msgs <= COMPRESS_MAX_MSGS);
    /* work only in the phases its messages make: none after the last (a decode) */
    for (int p = n_msgs - total.first_msg + 1; p < COMPRESS_MAX_PHASES; p++)
        assert(total.phase_s[p] == 0);
    if (sel != on_stack) free(sel);
    if (cost) *cost = total;
    return n_msgs;
}

/* Every layer's index goes into c->todo, the scratch compress_reduce also fills: a compressor
 * serves one worker, which plans or reduces one at a time. */
int compress_plan(const Compressor *c, const double *levels, CompressMsg *msgs)
{
    for (int l = 0; l < c->n_layers; l++) c->todo[l] = l;
    return compress_plan_views(c, c->layers, c->todo, c->n_layers, levels, msgs, NULL);
}

const char *compress_spec_note(const char *spec)
{
    Spec s;
    BwError ignore;
    SpecVal vals[SPEC_MAX_KV];
    const CompressorOps *ops =
        spec_parse(spec, "--compressor", &s, &ignore) ? NULL : compress_find(s.name);
    if (!ops || !ops->note || spec_resolve(&s, ops->opts, ops->n_opts, vals, &ignore)) return NULL;
    return ops->note(vals);
}

unsigned compress_cost_ops(const char *spec)
{
    char name[64];
    size_t n = strcspn(spec, ":");
    snprintf(name, sizeof name, "%.*s", (int)(n < sizeof name ? n : sizeof name - 1), spec);
    const CompressorOps *ops = compress_find(name);
    return ops ? ops->cost_ops : 0;
}

void compress_print_list(FILE *out)
{
    fprintf(out,
            "compressors (--compressor NAME[:key=value,...]). A policy gives every matrix a level "
            "at every\nstep; level 0 sends it dense. Vectors (biases) and level-0 layers go dense "
            "fp32 in one fused\nallreduce. Bytes are what each worker hands to the collectives, "
            "bit packing included.\n");
    for (const CompressorOps *const *r = REGISTRY; *r; r++) {
        const CompressorOps *o = *r;
        fprintf(out, "\n%-9s %s\n", o->name, o->help);
        if (o->level_name)
            fprintf(out, "  level    %s, %s in %s%g, %g], default %g\n", o->level_name,
                    o->level_integer ? "integer" : "number", o->level_min == 0 ? "(" : "[",
                    o->level_min, o->level_max, o->level_default);
        else
            fprintf(out, "  level    none (1: compress, 0: dense), default %g\n", o->level_default);
        fprintf(out, "  wire     %s\n", o->wire);
        if (o->n_opts) {
            fprintf(out, "  options\n");
            spec_print_opts(out, o->opts, o->n_opts);
        }
        fprintf(out, "  source   %s\n", o->source);
    }
}
