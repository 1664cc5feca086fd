/* test_compress_cost.c: the compressors' plans on shapes other than their own (a real model's
 * tensors, a DDP bucket of them) and what encoding and decoding costs (compress_plan_views).
 * Plans need no collective, so no SimGrid engine runs here: the compressors are created and
 * asked. Message sizes are computed by hand from each compressor's wire format, and each
 * cost against its closed form, summed here from the stage list in its comp_NAME.c comment
 * independently of the code's stage-by-stage sums. */
#include "testutil.h"

#include "compress_impl.h"

enum { WORLD = 4 };

static Compressor *make(const char *spec, const LayerView *layers, int n, int world)
{
    Compressor *c = NULL;
    BwError err = {0};
    int rc = compress_create(spec, "--compressor", layers, n, world, 0, 7, &c, &err);
    if (rc) fail_msg("%s: %s", spec, err.msg);
    return c;
}

static LayerView matrix(const char *name, size_t offset, int rows, int cols)
{
    LayerView v = {.offset = offset, .rows = rows, .cols = cols, .ndim = 2};
    snprintf(v.name, sizeof v.name, "%s", name);
    return v;
}

static LayerView vector(const char *name, size_t offset, int rows)
{
    LayerView v = matrix(name, offset, rows, 1);
    v.ndim = 1;
    return v;
}

/* The small model a compressor is created on: its own layers, which the toy below is not. */
static const LayerView *own_layers(int *n)
{
    static LayerView own[3];
    own[0] = matrix("fc1", 0, 4, 6);
    own[1] = vector("fc1.bias", 24, 4);
    own[2] = matrix("fc2", 28, 3, 4);
    *n = 3;
    return own;
}

/* A 3-tensor toy of a real model's shapes: a conv weight [64, 3*3*3], its bias, a classifier
 * [10 x 64]. */
static void toy(LayerView *t)
{
    t[0] = matrix("conv1.weight", 0, 64, 27);
    t[1] = vector("conv1.bias", 1728, 64);
    t[2] = matrix("fc.weight", 1792, 10, 64);
}

static CompressCost cost_of(const Compressor *c, const LayerView *layers, const int *todo, int n,
                            const double *levels)
{
    CompressMsg msgs[COMPRESS_MAX_MSGS];
    CompressCost cost = {.flops = -1, .bytes = -1};
    compress_plan_views(c, layers, todo, n, levels, msgs, &cost);
    return cost;
}

/* One n x m matrix at `level` by itself: its cost. */
static CompressCost cost_one(const char *spec, int rows, int cols, double level)
{
    int n_own;
    const LayerView *own = own_layers(&n_own);
    Compressor *c = make(spec, own, n_own, WORLD);
    LayerView v = matrix("w", 0, rows, cols);
    CompressCost got = cost_of(c, &v, (int[]){0}, 1, &level);
    compress_free(c);
    return got;
}

static void test_powersgd_cost_by_hand(void **state)
{
    (void)state;
    /* 64 x 32 at rank 2 with error feedback, by hand: EF add 2048; P = M Q 2*64*32*2 = 8192;
     * orthogonalise 2*64*4 + 64*2 = 640; Q = M^T P 8192; Q /= W 32*2 = 64; P Q^T 8192; e = M - M'
     * 2048: 29376 flops. Bytes: 36 * 2048 = 73728 on M's passes, 20 * (64 + 32) * 2 = 3840 on
     * P's and Q's: 77568. */
    CompressCost c = cost_one("powersgd", 64, 32, 2);
    assert_float_equal(c.flops, 29376, 0);
    assert_float_equal(c.bytes, 77568, 0);
    /* the closed form, for other shapes and ranks (r = min(level, n, m)), with and without ef */
    const int shapes[][3] = {{64, 32, 2}, {10, 64, 4}, {7, 3, 8}, {512, 4608, 1}};
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
        double n = shapes[i][0], m = shapes[i][1], lv = shapes[i][2];
        double r = lv < n ? lv : n;
        r = r < m ? r : m;
        double core_f = 6 * n * m * r + 2 * n * r * r + n * r + m * r;
        double core_b = 12 * n * m + 20 * (n + m) * r;
        CompressCost ef = cost_one("powersgd", (int)n, (int)m, lv);
        CompressCost no = cost_one("powersgd:ef=0", (int)n, (int)m, lv);
        assert_float_equal(ef.flops, core_f + 2 * n * m, 0);
        assert_float_equal(ef.bytes, core_b + 24 * n * m, 0);
        assert_float_equal(no.flops, core_f, 0);
        assert_float_equal(no.bytes, core_b, 0);
    }
}

/* The other compressors' closed forms on one 10 x 20 matrix (n = 200) with 4 workers. */
static void test_other_costs_closed_form(void **state)
{
    (void)state;
    const double n = 200, W = WORLD;
    /* topk keeps k = 20 at 0.1: EF, 5 select reads, gather, e[kept] = 0, decode, divide */
    double k = 20;
    CompressCost c = cost_one("topk", 10, 20, 0.1);
    assert_float_equal(c.flops, 7 * n + W * k, 0);
    assert_float_equal(c.bytes, 44 * n + 16 * k + 16 * W * k, 0);
    assert_float_equal(c.bytes, 10400, 0); /* 8800 + 320 + 1280, by hand */
    c = cost_one("topk:ef=0,divide=0", 10, 20, 0.1);
    assert_float_equal(c.flops, 5 * n + W * k, 0);
    assert_float_equal(c.bytes, 24 * n + 12 * k + 16 * W * k, 0);
    /* the Accordion code's: 8-byte indices written and read back (4 more bytes each way) */
    c = cost_one("topk:ef=0,divide=0,index=int64,count=trunc", 10, 20, 0.1);
    assert_float_equal(c.flops, 5 * n + W * k, 0);
    assert_float_equal(c.bytes, 24 * n + 16 * k + 20 * W * k, 0);
    /* randomk keeps k = 50 at 0.25: EF, draws, gather, e[idx] = 0, decode (no W: allreduce) */
    k = 50;
    c = cost_one("randomk", 10, 20, 0.25);
    assert_float_equal(c.flops, n + 2 * k, 0);
    assert_float_equal(c.bytes, 16 * n + 32 * k, 0);
    /* qsgd at 127 levels: 8 bits per element, B = 4 + 200 = 204 bytes per message */
    double B = 204;
    c = cost_one("qsgd", 10, 20, 127);
    assert_float_equal(c.flops, 9 * n + 2 * W * n, 0);
    assert_float_equal(c.bytes, 20 * n + B + W * (B + 8 * n), 0);
    c = cost_one("qsgd:ef=1", 10, 20, 127);
    assert_float_equal(c.flops, 13 * n + 2 * W * n, 0);
    assert_float_equal(c.bytes, 56 * n + 2 * B + W * (B + 8 * n), 0);
    /* signsgd: B = 4 + 25 bytes */
    B = 29;
    c = cost_one("signsgd", 10, 20, 1);
    assert_float_equal(c.flops, (5 + W) * n, 0);
    assert_float_equal(c.bytes, 40 * n + 8 * (W - 1) * n + (W + 1) * B, 0);
    c = cost_one("signsgd:ef=0", 10, 20, 1);
    assert_float_equal(c.flops, (3 + W) * n, 0);
    assert_float_equal(c.bytes, 20 * n + 8 * (W - 1) * n + (W + 1) * B, 0);
    /* fp16: encode, decode; ef=1 adds the EF add and e -= float(h) */
    c = cost_one("fp16", 10, 20, 1);
    assert_float_equal(c.flops, 3 * n, 0);
    assert_float_equal(c.bytes, 12 * n, 0);
    c = cost_one("fp16:ef=1", 10, 20, 1);
    assert_float_equal(c.flops, 6 * n, 0);
    assert_float_equal(c.bytes, 34 * n, 0);
}

/* none sends everything dense: one allreduce, no cost; and for every compressor, vectors and
 * level-0 matrices cost nothing. */
static void test_dense_costs_nothing(void **state)
{
    (void)state;
    int n_own;
    const LayerView *own = own_layers(&n_own);
    LayerView t[3];
    toy(t);
    const int all[] = {0, 1, 2};
    CompressMsg msgs[COMPRESS_MAX_MSGS];
    for (const CompressorOps *const *r = compress_registry(); *r; r++) {
        Compressor *c = make((*r)->name, own, n_own, WORLD);
        const double lv = (*r)->level_default;
        double levels[3] = {(*r)->reduce ? 0 : lv, lv, 0}; /* none's level is 0 */
        CompressCost cost = {.flops = -1, .bytes = -1};
        int got = compress_plan_views(c, t, all, 3, levels, msgs, &cost);
        assert_int_equal(got, 1);
        assert_int_equal(msgs[0].op, COMPRESS_ALLREDUCE_F32);
        assert_int_equal(msgs[0].count, 1728 + 64 + 640);
        assert_float_equal(cost.flops, 0, 0);
        assert_float_equal(cost.bytes, 0, 0);
        if (!(*r)->reduce) { /* none: at any level everything is dense and free */
            levels[0] = levels[2] = 1;
            cost = (CompressCost){.flops = -1, .bytes = -1};
            got = compress_plan_views(c, t, all, 3, levels, msgs, &cost);
            assert_int_equal(got, 1);
            assert_int_equal(msgs[0].count, 1728 + 64 + 640);
            assert_float_equal(cost.flops + cost.bytes, 0, 0);
        }
        compress_free(c);
    }
}

/* compress_plan is compress_plan_views on the compressor's own layers, all of them. */
static void test_views_of_own_layers_equal_plan(void **state)
{
    (void)state;
    int n_own;
    const LayerView *own = own_layers(&n_own);
    const int all[] = {0, 1, 2};
    for (const CompressorOps *const *r = compress_registry(); *r; r++) {
        Compressor *c = make((*r)->name, own, n_own, WORLD);
        const double lv = (*r)->level_default, hi = (*r)->level_max;
        const double rows[][3] = {{lv, lv, lv}, {0, lv, lv}, {lv, 0, 0}, {0, 0, 0}, {hi, 0, hi}};
        for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
            CompressMsg a[COMPRESS_MAX_MSGS], b[COMPRESS_MAX_MSGS];
            int na = compress_plan(c, rows[i], a);
            int nb = compress_plan_views(c, own, all, n_own, rows[i], b, NULL);
            assert_int_equal(na, nb);
            assert_true(na >= 1);
            for (int j = 0; j < na; j++) { /* field by field: the struct has padding */
                assert_int_equal(a[j].op, b[j].op);
                assert_int_equal(a[j].count, b[j].count);
            }
        }
        compress_free(c);
    }
}

/* PowerSGD on the toy, shapes its compressor never saw: the dense vector first, then one
 * allreduce of every P (sum of n_i r_i floats) and one of every Q (sum of m_i r_i). */
static void test_powersgd_plan_on_other_shapes(void **state)
{
    (void)state;
    int n_own;
    const LayerView *own = own_layers(&n_own);
    Compressor *c = make("powersgd", own, n_own, WORLD);
    LayerView t[3];
    toy(t);
    const double levels[3] = {2, 4, 4}; /* the vector's level is ignored */
    CompressMsg m[COMPRESS_MAX_MSGS];
    CompressCost cost = {0}; /* its prof is read: none, the roofline */
    int n = compress_plan_views(c, t, (int[]){0, 1, 2}, 3, levels, m, &cost);
    assert_int_equal(n, 3);
    assert_int_equal(m[0].op, COMPRESS_ALLREDUCE_F32);
    assert_int_equal(m[0].count, 64);
    assert_int_equal(m[1].op, COMPRESS_ALLREDUCE_F32);
    assert_int_equal(m[1].count, 64 * 2 + 10 * 4); /* P: 168 floats */
    assert_int_equal(m[2].op, COMPRESS_ALLREDUCE_F32);
    assert_int_equal(m[2].count, 27 * 2 + 64 * 4); /* Q: 310 floats */
    /* the cost is the two matrices' costs, the vector's nothing */
    CompressCost a = cost_of(c, t, (int[]){0}, 1, levels);
    CompressCost b = cost_of(c, t, (int[]){2}, 1, levels);
    assert_float_equal(cost.flops, a.flops + b.flops, 0);
    assert_float_equal(cost.bytes, a.bytes + b.bytes, 0);
    assert_true(a.flops > 0 && b.flops > 0);
    /* a bucket without the vector has no dense message; one with only the vector, only it */
    n = compress_plan_views(c, t, (int[]){2}, 1, levels, m, NULL);
    assert_int_equal(n, 2);
    assert_int_equal(m[0].count, 10 * 4);
    assert_int_equal(m[1].count, 64 * 4);
    n = compress_plan_views(c, t, (int[]){1}, 1, levels, m, &cost);
    assert_int_equal(n, 1);
    assert_int_equal(m[0].count, 64);
    assert_float_equal(cost.flops + cost.bytes, 0, 0);
    assert_int_equal(compress_plan_views(c, t, NULL, 0, levels, m, &cost), 0);
    assert_float_equal(cost.flops + cost.bytes, 0, 0);
    compress_free(c);
}

/* powersgd:comm=none on the toy: only the dense vector's message, for the two matrices the
 * hook still compresses; the same stages less Q's division (m r flops, 8 m r bytes a matrix),
 * and under a calibrated profile all of them in phase 0, there being no collective between. */
static void test_powersgd_comm_none_plans_no_factors(void **state)
{
    (void)state;
    int n_own;
    const LayerView *own = own_layers(&n_own);
    Compressor *pq = make("powersgd", own, n_own, WORLD);
    Compressor *none = make("powersgd:comm=none", own, n_own, WORLD);
    LayerView t[3];
    toy(t);
    const double levels[3] = {2, 4, 4};
    const int all[] = {0, 1, 2};
    CompressMsg m[COMPRESS_MAX_MSGS];
    CostProfile *prof = NULL;
    assert_int_equal(costs_load("pytorch-v100", "--costs", "V100", &prof, NULL), BW_OK);
    CompressCost a = {.prof = prof}, b = {.prof = prof};
    assert_int_equal(compress_plan_views(pq, t, all, 3, levels, m, &a), 3);
    assert_int_equal(compress_plan_views(none, t, all, 3, levels, m, &b), 1);
    assert_int_equal(m[0].op, COMPRESS_ALLREDUCE_F32);
    assert_int_equal(m[0].count, 64);
    assert_int_equal(a.n_compressed, 2);
    assert_int_equal(b.n_compressed, 2);
    assert_int_equal(b.first_msg, 1);
    const double mr = 27 * 2 + 64 * 4; /* Q's floats: conv1 at rank 2, fc at rank 4 */
    assert_float_equal(b.flops, a.flops - mr, 0);
    assert_float_equal(b.bytes, a.bytes - 8 * mr, 0);
    double sum = 0;
    for (int p = 0; p < COMPRESS_MAX_PHASES; p++) sum += a.phase_s[p];
    assert_true(a.phase_s[1] > 0 && a.phase_s[2] > 0);
    const double div = costs_op_seconds(prof, COST_OP_ELEMENTWISE, 8 * 27 * 2) +
                       costs_op_seconds(prof, COST_OP_ELEMENTWISE, 8 * 64 * 4);
    assert_float_equal(b.phase_s[0], sum - div, 1e-12 * sum);
    for (int p = 1; p < COMPRESS_MAX_PHASES; p++) assert_true(b.phase_s[p] == 0);
    /* a bucket of the matrices alone sends nothing at all */
    assert_int_equal(compress_plan_views(none, t, (int[]){0, 2}, 2, levels, m, NULL), 0);
    /* the option resolves only when given, so every other spec reads as it did */
    char buf[SPEC_MAX_TEXT];
    assert_int_equal(compress_spec_resolved("powersgd", "--compressor", buf, sizeof buf, NULL), 0);
    assert_string_equal(buf, "powersgd:ef=1,rank_change=warm");
    assert_int_equal(
        compress_spec_resolved("powersgd:comm=none", "--compressor", buf, sizeof buf, NULL), 0);
    assert_string_equal(buf, "powersgd:ef=1,rank_change=warm,comm=none");
    assert_null(compress_spec_note("powersgd:comm=allreduce"));
    assert_non_null(strstr(compress_spec_note("powersgd:comm=none"), "pytorch#74148"));
    costs_free(prof);
    compress_free(pq);
    compress_free(none);
}

/* The other compressors' messages on the toy (conv1 at level a, fc at level b), by hand. */
static void test_other_plans_on_other_shapes(void **state)
{
    (void)state;
    int n_own;
    const LayerView *own = own_layers(&n_own);
    LayerView t[3];
    toy(t);
    const struct {
        const char *spec;
        double a, b;
        CompressCollective op;
        size_t count;
    } cases[] = {
        /* k = ceil(0.1 * 1728) = 173 and ceil(0.1 * 640) = 64, 8 bytes each */
        {"topk", 0.1, 0.1, COMPRESS_ALLGATHER, (173 + 64) * 8},
        /* k = int(0.1 * 1728) = 172 and 64, 12 bytes each (int64 indices) */
        {"topk:index=int64,count=trunc", 0.1, 0.1, COMPRESS_ALLGATHER, (172 + 64) * 12},
        /* k = 1728 * 0.5 = 864 and max(1, ceil(0.001 * 640)) = 1 values */
        {"randomk", 0.5, 0.001, COMPRESS_ALLREDUCE_F32, 864 + 1},
        /* 4-byte norm + ceil(n * (1 + bits) / 8): 127 levels 8 bits, 1 level 2 bits */
        {"qsgd", 127, 1, COMPRESS_ALLGATHER, (4 + 1728) + (4 + 160)},
        /* 4-byte scale + ceil(n / 8) */
        {"signsgd", 1, 1, COMPRESS_ALLGATHER, (4 + 216) + (4 + 80)},
        {"fp16", 1, 1, COMPRESS_ALLREDUCE_F16, 1728 + 640},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        Compressor *c = make(cases[i].spec, own, n_own, WORLD);
        const double levels[3] = {cases[i].a, 0, cases[i].b};
        CompressMsg m[COMPRESS_MAX_MSGS];
        int n = compress_plan_views(c, t, (int[]){0, 1, 2}, 3, levels, m, NULL);
        assert_int_equal(n, 2);
        assert_int_equal(m[0].op, COMPRESS_ALLREDUCE_F32);
        assert_int_equal(m[0].count, 64);
        if (m[1].op != cases[i].op || m[1].count != cases[i].count)
            fail_msg("%s: message %d of %zu, expected %d of %zu", cases[i].spec, m[1].op,
                     m[1].count, cases[i].op, cases[i].count);
        compress_free(c);
    }
}

/* A whole real model at once (more layers than fit on the stack): still one message per
 * round, the sizes and the costs the sums of the layers'. */
static void test_many_layers_batch_into_few_messages(void **state)
{
    (void)state;
    enum { L = 700 };
    static LayerView v[L];
    static int all[L];
    static double levels[L];
    size_t off = 0, dense = 0;
    for (int i = 0; i < L; i++) {
        v[i] = i % 7 == 6 ? vector("b", off, 5) : matrix("w", off, 3 + i % 5, 4 + i % 3);
        off += layer_size(&v[i]);
        all[i] = i;
        levels[i] = 2;
        if (v[i].ndim == 1) dense += layer_size(&v[i]);
    }
    int n_own;
    const LayerView *own = own_layers(&n_own);
    Compressor *c = make("powersgd", own, n_own, WORLD);
    CompressMsg m[COMPRESS_MAX_MSGS];
    CompressCost cost = {0}; /* its prof is read: none, the roofline */
    int n = compress_plan_views(c, v, all, L, levels, m, &cost);
    assert_int_equal(n, 3);
    size_t p = 0, q = 0;
    double flops = 0, bytes = 0;
    for (int i = 0; i < L; i++) {
        if (v[i].ndim == 1) continue;
        p += 2 * (size_t)v[i].rows;
        q += 2 * (size_t)v[i].cols;
        CompressCost one = cost_of(c, v, &all[i], 1, levels);
        flops += one.flops;
        bytes += one.bytes;
    }
    assert_int_equal(m[0].count, dense);
    assert_int_equal(m[1].count, p);
    assert_int_equal(m[2].count, q);
    assert_float_equal(cost.flops, flops, 1e-9 * flops);
    assert_float_equal(cost.bytes, bytes, 1e-9 * bytes);
    compress_free(c);
}

/* PowerSGD's orthogonalisation as a profile's hook runs it: pytorch-h200's hook (PyTorch 2.11)
 * orthogonalises by one torch.linalg.qr call a factor above rank 2 (ops.qr), so at rank 4 a
 * [3072 x 768] matrix pays qr(768) in the encode (Q, orthogonalised again before P = M Q) and
 * qr(3072) after P's allreduce where Gram-Schmidt would pay 4 columns of each; at rank 2 the
 * hook runs Gram-Schmidt, bit for bit as a profile without QR prices it. */
static void test_powersgd_orthogonalises_by_qr_above_the_hooks_rank(void **state)
{
    (void)state;
    CostProfile *h200 = NULL;
    BwError err = {0};
    if (costs_load("pytorch-h200", "--costs", "H200", &h200, &err)) fail_msg("%s", err.msg);
    const CostHook *hook = costs_hook(h200, "powersgd");
    assert_non_null(hook);
    assert_int_equal(hook->qr_above_rank, 2);
    CostProfile gs = *h200; /* the same profile, its hook running Gram-Schmidt at every rank */
    for (int i = 0; i < gs.n_hooks; i++) gs.hooks[i].qr_above_rank = 0;
    int n_own;
    const LayerView *own = own_layers(&n_own);
    Compressor *c = make("powersgd", own, n_own, WORLD);
    const double n = 3072, m = 768;
    LayerView v = matrix("mlp.c_proj.weight", 0, (int)n, (int)m);
    for (double level = 2; level <= 4; level += 2) {
        CompressMsg msgs[COMPRESS_MAX_MSGS];
        CompressCost qr = {.prof = h200}, col = {.prof = &gs};
        compress_plan_views(c, &v, (int[]){0}, 1, &level, msgs, &qr);
        compress_plan_views(c, &v, (int[]){0}, 1, &level, msgs, &col);
        double want[2] = {0, 0}; /* QR's price less Gram-Schmidt's, encode and after P */
        if (level > 2) {
            want[0] = costs_op_seconds(h200, COST_OP_QR, m) -
                      level * costs_op_seconds(h200, COST_OP_ORTHOGONALISE, m);
            want[1] = costs_op_seconds(h200, COST_OP_QR, n) -
                      level * costs_op_seconds(h200, COST_OP_ORTHOGONALISE, n);
        }
        for (int ph = 0; ph < 2; ph++)
            if (!(fabs(qr.phase_s[ph] - col.phase_s[ph] - want[ph]) <= 1e-12))
                fail_msg("rank %g, phase %d: QR %.12g s, Gram-Schmidt %.12g s: %.12g apart, "
                         "expected %.12g",
                         level, ph, qr.phase_s[ph], col.phase_s[ph],
                         qr.phase_s[ph] - col.phase_s[ph], want[ph]);
        assert_true(qr.phase_s[2] == col.phase_s[2]);
        assert_true(qr.flops == col.flops && qr.bytes == col.bytes); /* the roofline's counts */
    }
    /* at rank 4 the QR is the cheaper on the H200, as measured (0.17 against 4 columns) */
    assert_true(costs_op_seconds(h200, COST_OP_QR, m) <
                4 * costs_op_seconds(h200, COST_OP_ORTHOGONALISE, m));
    compress_free(c);
    costs_free(h200);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_powersgd_cost_by_hand),
        cmocka_unit_test(test_other_costs_closed_form),
        cmocka_unit_test(test_dense_costs_nothing),
        cmocka_unit_test(test_views_of_own_layers_equal_plan),
        cmocka_unit_test(test_powersgd_plan_on_other_shapes),
        cmocka_unit_test(test_other_plans_on_other_shapes),
        cmocka_unit_test(test_powersgd_comm_none_plans_no_factors),
        cmocka_unit_test(test_many_layers_batch_into_few_messages),
        cmocka_unit_test(test_powersgd_orthogonalises_by_qr_above_the_hooks_rank),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
