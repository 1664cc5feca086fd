/* test_compress_methods.c: each gradient compressor against its definition, on
 * compresstest.h's harness (W workers in a forked child): PowerSGD against a plain-loop
 * implementation through rank changes and exact recovery of low-rank matrices, TopK's exact
 * selection (ties to the lower index) and the Accordion code's variant, RandomK's indices shared
 * across workers, QSGD's unbiasedness over seeded draws, signSGD's and QSGD's bit packing,
 * fp16's rounding. The contract every compressor meets: test_compress.c. */
#include "testutil.h"

#include <gsl/gsl_rng.h>

#include "compresstest.h"
#include "half.h"

static void set_levels(Run *r, double w1, double w2, double w3, double w4)
{
    r->n_rows = 1;
    double row[NL] = {w1, 0, w2, 0, w3, w4};
    memcpy(r->levels[0], row, sizeof row);
}

/* ---- PowerSGD ---- */

/* Same matrix on every worker: w1 of rank 2, w2 of rank 1, w3 and w4 arbitrary; the vectors
 * arbitrary. */
static void fill_low_rank(int rank, int step, float *g, size_t np)
{
    (void)rank;
    (void)step;
    fill_uniform(g, np, -1, 1, 5);
    float u[24 * 2], v[17 * 2];
    fill_uniform(u, 48, -1, 1, 6);
    fill_uniform(v, 34, -1, 1, 7);
    for (int i = 0; i < 24; i++)
        for (int j = 0; j < 17; j++)
            g[i * 17 + j] = u[2 * i] * v[2 * j] + u[2 * i + 1] * v[2 * j + 1];
    for (int i = 0; i < 10; i++)
        for (int j = 0; j < 24; j++) g[432 + i * 24 + j] = u[i] * v[j % 17] * (j < 17 ? 1 : -2);
}

static void test_powersgd_recovers_low_rank_matrices_in_one_step(void **state)
{
    (void)state;
    /* rank 2 at r = 2; rank 1 at r = 3 (P rank-deficient); 1 x 30 and 33 x 3 at r >= min(n, m),
     * where P Q^T can represent any matrix */
    Run r = base_run("powersgd", 4, 1);
    r.input = IN_FUNC;
    r.fill = fill_low_rank;
    set_levels(&r, 2, 3, 1, 3);
    Shared *s = simulate(&r);
    for (int l = 0; l < NL; l++) {
        const LayerView *v = &LAYERS[l];
        double e = rel_err(OUT(s, 0, 0) + v->offset, IN(s, 0, 0) + v->offset, layer_size(v));
        if (e > 1e-5) fail_msg("layer %s: relative error %g after one step", v->name, e);
        /* and the memory is empty, to the same precision */
        assert_true(layer_max_abs(MEM1(s, 0, 0) + v->offset, NULL, layer_size(v)) <
                    1e-5 * layer_max_abs(IN(s, 0, 0) + v->offset, NULL, layer_size(v)));
    }
    release(s);
}

/* step 0: a zero gradient; step 1: the low-rank matrices scaled by 1e-12 */
static void fill_zero_then_tiny(int rank, int step, float *g, size_t np)
{
    fill_low_rank(rank, step, g, np);
    for (size_t i = 0; i < np; i++) g[i] *= step == 0 ? 0.0f : 1e-12f;
}

static void test_powersgd_survives_a_zero_gradient_and_keeps_tiny_ones_exact(void **state)
{
    (void)state;
    /* a zero gradient makes P and then Q zero: the output must be zero (not NaN), and the next
     * step must redraw Q and recover the (tiny) low-rank matrices exactly: no epsilon in the
     * normalisation may shrink them */
    Run r = base_run("powersgd", 2, 2);
    r.input = IN_FUNC;
    r.fill = fill_zero_then_tiny;
    set_levels(&r, 2, 3, 1, 3);
    Shared *s = simulate(&r);
    for (size_t i = 0; i < NP; i++) assert_true(OUT(s, 0, 0)[i] == 0);
    for (int l = 0; l < NL; l++) {
        const LayerView *v = &LAYERS[l];
        double e = rel_err(OUT(s, 1, 0) + v->offset, IN(s, 1, 0) + v->offset, layer_size(v));
        if (e > 1e-5) fail_msg("layer %s: relative error %g at 1e-12 scale", v->name, e);
    }
    release(s);
}

static void test_powersgd_wire_size_is_r_n_plus_m_floats_plus_vectors(void **state)
{
    (void)state;
    Run r = base_run("powersgd", 2, 1);
    set_levels(&r, 3, 2, 4, 5); /* w3 is 1 x 30: r = 1; w4 is 33 x 3: r = 3 */
    Shared *s = simulate(&r);
    double floats = 3 * (24 + 17) + 2 * (10 + 24) + 1 * (1 + 30) + 3 * (33 + 3) + 24 + 10;
    assert_true(*BYTES(s, 0, 0) == 4 * floats);
    release(s);
}

/* comm=none skips the two allreduces, and nothing else: on the analytic ring its collectives
 * take the time of the dense vectors' alone, which is PowerSGD's less the ring's closed form
 * (Patarasuk and Yuan, JPDC 2009: 2 (P - 1) a + 2 (P - 1) / P n b) for P's floats and Q's. */
static void test_powersgd_comm_none_saves_the_ring_time_of_p_and_q(void **state)
{
    (void)state;
    double t[2];
    for (int k = 0; k < 2; k++) {
        Run r = base_run(k ? "powersgd:comm=none" : "powersgd", 4, 1);
        set_levels(&r, 3, 2, 4, 5); /* as the wire size above */
        r.backend = COLL_ANALYTIC;
        r.algo = COLL_RING;
        Shared *s = simulate(&r);
        t[k] = *BOOK(s, B_TIME, 0, 0);
        assert_true(*BOOK(s, B_CALLS, 0, 0) == (k ? 1 : 3));
        check_plan_matches_reduce(&r, s);
        release(s);
    }
    Cluster cl = cluster_default();
    const double P = 4, a = 2 * cl.latency_s; /* a star: two NIC links a route */
    const double b = 1 / (cl.bandwidth_Bps * cluster_link_share(&cl));
    const double p_bytes = 4.0 * (3 * 24 + 2 * 10 + 1 * 1 + 3 * 33);
    const double q_bytes = 4.0 * (3 * 17 + 2 * 24 + 1 * 30 + 3 * 3);
    const double ring = 2 * (P - 1) * a + 2 * (P - 1) / P * p_bytes * b + 2 * (P - 1) * a +
                        2 * (P - 1) / P * q_bytes * b;
    assert_true(t[1] > 0);
    assert_float_equal(t[0] - t[1], ring, 1e-12 * ring);
}

/* PowerSGD for all workers at once, in plain loops with double sums, following the same rules
 * for drawing Q (compress_impl.h: the stream of (seed, layer, step), columns in order). */
typedef struct {
    double *qt[MAXL]; /* [rank x m] */
    int qrank[MAXL];
    double *mem[MAXW]; /* [NP] */
} NaivePsgd;

static void naive_orthogonalise(double *pt, int r, size_t n)
{
    for (int i = 0; i < r; i++) {
        double *v = pt + (size_t)i * n, before = 0, after;
        for (size_t k = 0; k < n; k++) before += v[k] * v[k];
        after = before;
        for (int pass = 0; pass < 2 && i > 0; pass++) {
            for (int j = 0; j < i; j++) {
                double dot = 0;
                for (size_t k = 0; k < n; k++) dot += pt[(size_t)j * n + k] * v[k];
                for (size_t k = 0; k < n; k++) v[k] -= dot * pt[(size_t)j * n + k];
            }
            double prev = after;
            after = 0;
            for (size_t k = 0; k < n; k++) after += v[k] * v[k];
            if (after >= 0.25 * prev) break;
        }
        if (after > 0)
            for (size_t k = 0; k < n; k++) v[k] /= sqrt(after);
    }
}

/* One step of the W workers w0 .. w0 + W - 1 (st->mem[0 .. W)): all of the run's for PowerSGD,
 * one alone for comm=none, whose workers each run PowerSGD by themselves. */
static void naive_psgd_step(NaivePsgd *st, const Run *r, Shared *s, int t, int w0, int W,
                            const int flags[2], double *out)
{
    const int ef = flags[0], reset = flags[1];
    const double *lv = levels_at(r, t);
    static double M[MAXW][NP];
    for (int w = 0; w < W; w++)
        for (size_t i = 0; i < NP; i++) M[w][i] = IN(s, t, w0 + w)[i] + (ef ? st->mem[w][i] : 0);
    for (int l = 0; l < NL; l++) {
        const LayerView *v = &LAYERS[l];
        const size_t off = v->offset, n = (size_t)v->rows, m = (size_t)v->cols;
        if (v->ndim == 1 || lv[l] == 0) {
            for (size_t i = off; i < off + n * m; i++) {
                double sum = 0;
                for (int w = 0; w < W; w++) sum += M[w][i];
                out[i] = sum / W;
                for (int w = 0; w < W; w++) st->mem[w][i] = 0;
            }
            continue;
        }
        int rk = (int)fmin(lv[l], fmin((double)n, (double)m));
        st->qt[l] = realloc(st->qt[l], (size_t)rk * m * sizeof(double));
        int keep = st->qrank[l] == 0 || (reset && st->qrank[l] != rk)
                       ? 0
                       : (st->qrank[l] < rk ? st->qrank[l] : rk);
        gsl_rng *g = NULL;
        for (int j = 0; j < rk; j++) {
            double *col = st->qt[l] + (size_t)j * m;
            int draw = j >= keep;
            if (!draw) {
                draw = 1;
                for (size_t i = 0; i < m; i++) draw &= col[i] == 0;
            }
            if (!draw) continue;
            if (!g) {
                g = gsl_rng_alloc(gsl_rng_mt19937);
                gsl_rng_set(g, comp_seed(r->seed, COMP_STREAM_POWERSGD, l, t));
            }
            float tmp[64];
            assert_true(m <= 64);
            comp_gaussian_fill(g, tmp, m);
            for (size_t i = 0; i < m; i++) col[i] = tmp[i];
        }
        if (g) gsl_rng_free(g);
        st->qrank[l] = rk;
        double *pt = calloc((size_t)rk * n, sizeof(double));
        double *qt = calloc((size_t)rk * m, sizeof(double));
        for (int w = 0; w < W; w++) /* P = sum_w M_w Q */
            for (int j = 0; j < rk; j++)
                for (size_t i = 0; i < n; i++)
                    for (size_t k = 0; k < m; k++)
                        pt[(size_t)j * n + i] +=
                            M[w][off + i * m + k] * st->qt[l][(size_t)j * m + k];
        naive_orthogonalise(pt, rk, n);
        for (int w = 0; w < W; w++) /* Q = mean_w M_w^T P */
            for (int j = 0; j < rk; j++)
                for (size_t k = 0; k < m; k++)
                    for (size_t i = 0; i < n; i++)
                        qt[(size_t)j * m + k] += M[w][off + i * m + k] * pt[(size_t)j * n + i] / W;
        for (size_t i = 0; i < n; i++) /* M' = P Q^T; e_w = M_w - M' */
            for (size_t k = 0; k < m; k++) {
                double x = 0;
                for (int j = 0; j < rk; j++) x += pt[(size_t)j * n + i] * qt[(size_t)j * m + k];
                out[off + i * m + k] = x;
                for (int w = 0; w < W; w++)
                    st->mem[w][off + i * m + k] = ef ? M[w][off + i * m + k] - x : 0;
            }
        memcpy(st->qt[l], qt, (size_t)rk * m * sizeof(double));
        free(pt);
        free(qt);
    }
}

/* The run's workers w0 .. w0 + W - 1 against the plain loops of those workers alone. */
static void check_naive(const char *spec, const Run *r, Shared *s, int w0, int W,
                        const int flags[2])
{
    NaivePsgd st = {0};
    for (int w = 0; w < W; w++) st.mem[w] = calloc(NP, sizeof(double));
    double out[NP];
    float outf[NP], memf[NP];
    for (int t = 0; t < r->steps; t++) {
        naive_psgd_step(&st, r, s, t, w0, W, flags, out);
        for (int l = 0; l < NL; l++) {
            const LayerView *v = &LAYERS[l];
            size_t n = layer_size(v);
            for (size_t i = 0; i < n; i++) outf[i] = (float)out[v->offset + i];
            /* dense layers are every worker's mean whatever W: comm=none's checked apart */
            const int dense = v->ndim == 1 || levels_at(r, t)[l] == 0;
            double e = W < r->workers && dense ? 0 : rel_err(OUT(s, t, w0) + v->offset, outf, n);
            if (e > 1e-4)
                fail_msg("%s step %d layer %s rank %d: relative error %g", spec, t, v->name, w0, e);
            for (int w = w0; w < w0 + W; w++) {
                for (size_t i = 0; i < n; i++) memf[i] = (float)st.mem[w - w0][v->offset + i];
                double scale = layer_max_abs(IN(s, t, w) + v->offset, MEM0(s, t, w) + v->offset, n);
                if (max_abs_diff(MEM1(s, t, w) + v->offset, memf, n) > 1e-4 * scale)
                    fail_msg("%s step %d layer %s rank %d: memory differs", spec, t, v->name, w);
            }
        }
    }
    for (int l = 0; l < MAXL; l++) free(st.qt[l]);
    for (int w = 0; w < W; w++) free(st.mem[w]);
}

static Run naive_run(const char *spec)
{
    Run r = base_run(spec, 3, 5);
    double rows[5][NL] = {{2, 0, 2, 0, 1, 3},
                          {1, 0, 3, 0, 1, 0},
                          {3, 0, 0, 0, 2, 3},
                          {3, 0, 2, 0, 1, 2},
                          {1, 0, 1, 0, 1, 1}};
    set_schedule(&r, 5, rows);
    return r;
}

static void compare_with_naive(const char *spec, int ef, int reset)
{
    Run r = naive_run(spec);
    Shared *s = simulate(&r);
    check_naive(spec, &r, s, 0, r.workers, (int[]){ef, reset});
    release(s);
}

static void test_powersgd_matches_plain_loops_through_rank_changes(void **state)
{
    (void)state;
    compare_with_naive("powersgd", 1, 0);
    compare_with_naive("powersgd:rank_change=reset", 1, 1);
    compare_with_naive("powersgd:ef=0", 0, 0);
}

/* comm=none (pytorch#74148's ablation): each worker's matrices are what PowerSGD on that worker
 * alone gives (its own P, Q and memory, no division of its Q), while the vectors are still the
 * workers' mean; the workers' matrices differ, and the collectives carry only the vectors. */
static void test_powersgd_comm_none_leaves_each_worker_its_own_low_rank_gradient(void **state)
{
    (void)state;
    const char *spec = "powersgd:comm=none";
    Run r = naive_run(spec);
    Shared *s = simulate(&r);
    for (int w = 0; w < r.workers; w++) check_naive(spec, &r, s, w, 1, (int[]){1, 0});
    for (int t = 0; t < r.steps; t++) {
        double dense = 0; /* floats of the vectors and the level-0 matrices */
        for (int l = 0; l < NL; l++)
            if (LAYERS[l].ndim == 1 || levels_at(&r, t)[l] == 0) dense += layer_size(&LAYERS[l]);
        for (int w = 0; w < r.workers; w++) {
            assert_true(*BYTES(s, t, w) == 4 * dense && *GROWTH(s, t, w) == 4 * dense);
            for (size_t i = LAYERS[1].offset; i < LAYERS[1].offset + 24; i++) { /* b1 */
                double mean = 0;
                for (int k = 0; k < r.workers; k++) mean += IN(s, t, k)[i];
                assert_true(fabs(OUT(s, t, w)[i] - mean / r.workers) < 1e-6);
            }
        }
        assert_true(max_abs_diff(OUT(s, t, 0), OUT(s, t, 1), 408) > 0); /* w1 differs */
    }
    release(s);
}

/* ---- TopK ---- */

static int cmp_mag_desc(const void *a, const void *b, const float *x)
{
    int i = *(const int *)a, j = *(const int *)b;
    float fi = fabsf(x[i]), fj = fabsf(x[j]);
    if (fi != fj) return fi < fj ? 1 : -1;
    return i - j;
}
static const float *SORT_X;
static int cmp_sort(const void *a, const void *b)
{
    return cmp_mag_desc(a, b, SORT_X);
}

/* 1 where x's entry is among its k largest magnitudes (ties to the lower index). */
static void top_mask(const float *x, size_t n, size_t k, int *mask)
{
    int idx[NP];
    for (size_t i = 0; i < n; i++) idx[i] = (int)i, mask[i] = 0;
    SORT_X = x;
    qsort(idx, n, sizeof *idx, cmp_sort);
    for (size_t j = 0; j < k; j++) mask[idx[j]] = 1;
}

/* magnitudes from a small set, so many ties straddle every k */
static void fill_ties(int rank, int step, float *g, size_t np)
{
    for (size_t i = 0; i < np; i++) {
        int q = (int)((i * 37 + (size_t)rank * 11 + (size_t)step * 5) % 13);
        g[i] = (float)(q / 4) * ((i + (size_t)rank) % 3 == 0 ? -0.5f : 0.5f);
    }
}

static void test_topk_keeps_exactly_the_k_largest_ties_to_lower_index(void **state)
{
    (void)state;
    assert_int_equal(comp_keep_count(0.07, 100), 7);
    assert_int_equal(comp_keep_count(0.29, 100), 29);
    assert_int_equal(comp_keep_count(0.001, 100), 1);
    assert_int_equal(comp_keep_count(0.5, 3), 2);
    assert_int_equal(comp_keep_count(1, 100), 100);
    Run r = base_run("topk", 1, 1);
    r.input = IN_FUNC;
    r.fill = fill_ties;
    set_levels(&r, 0.25, 0.1, 0.07, 1);
    Shared *s = simulate(&r);
    double bytes = 4 * 34.0; /* the vectors */
    for (int l = 0; l < NL; l++) {
        const LayerView *v = &LAYERS[l];
        if (v->ndim == 1) continue;
        size_t n = layer_size(v), k = comp_keep_count(r.levels[0][l], n);
        const float *in = IN(s, 0, 0) + v->offset, *out = OUT(s, 0, 0) + v->offset;
        const float *mem = MEM1(s, 0, 0) + v->offset;
        int mask[NP];
        top_mask(in, n, k, mask);
        for (size_t i = 0; i < n; i++) {
            if (out[i] != (mask[i] ? in[i] : 0) || mem[i] != (mask[i] ? 0 : in[i]))
                fail_msg("layer %s, k = %zu: entry %zu (|x| = %g) %s", v->name, k, i, fabs(in[i]),
                         mask[i] ? "should be kept" : "should be dropped");
        }
        bytes += 8.0 * k;
    }
    assert_true(*BYTES(s, 0, 0) == bytes);
    release(s);
}

static void test_topk_accordion_variant_sums_without_memory(void **state)
{
    (void)state;
    Run r = base_run("topk:ef=0,divide=0", 3, 2);
    set_levels(&r, 0.1, 0.2, 0.1, 0.5);
    Shared *s = simulate(&r);
    for (int t = 0; t < r.steps; t++)
        for (int l = 0; l < NL; l++) {
            const LayerView *v = &LAYERS[l];
            if (v->ndim == 1) continue;
            size_t n = layer_size(v), k = comp_keep_count(r.levels[0][l], n);
            double want[NP] = {0};
            for (int w = 0; w < r.workers; w++) {
                int mask[NP];
                const float *in = IN(s, t, w) + v->offset; /* no memory: M = g */
                top_mask(in, n, k, mask);
                for (size_t i = 0; i < n; i++) want[i] += mask[i] ? in[i] : 0;
            }
            for (size_t i = 0; i < n; i++)
                assert_true(fabs(OUT(s, t, 0)[v->offset + i] - want[i]) < 1e-6);
        }
    for (size_t i = 0; i < NP; i++) assert_true(MEM1(s, 1, 2)[i] == 0);
    release(s);
}

/* The Accordion code's TopK wire (uw-mad-dash/Accordion powersgd_grad.py:205-230): k = int(f n)
 * entries a layer (0 for w3: 0.01 x 30 = 0.3), int64 indices from torch.argsort, the sum of
 * every worker's entries, no memory. Each of the two wire options alone changes only its part:
 * the bytes are the 34 vector floats dense plus (index bytes + 4) per kept entry. */
static void test_topk_accordion_code_s_int64_indices_and_truncated_counts(void **state)
{
    (void)state;
    static const struct {
        const char *spec;
        size_t k[4]; /* w1 (408 at 0.1), w2 (240 at 0.2), w3 (30 at 0.01), w4 (99 at 0.99) */
        double entry_bytes;
    } cases[] = {
        {"topk:ef=0,divide=0,index=int64,count=trunc", {40, 48, 0, 98}, 12},
        {"topk:ef=0,divide=0,index=int32,count=trunc", {40, 48, 0, 98}, 8},
        {"topk:ef=0,divide=0,index=int64", {41, 48, 1, 99}, 12},
        {"topk:ef=0,divide=0", {41, 48, 1, 99}, 8},
    };
    const int mats[4] = {0, 2, 4, 5};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        Run r = base_run(cases[c].spec, 3, 2);
        set_levels(&r, 0.1, 0.2, 0.01, 0.99);
        r.backend = COLL_ANALYTIC;
        Shared *s = simulate(&r);
        double want_bytes = 4 * 34.0;
        for (int j = 0; j < 4; j++) want_bytes += cases[c].entry_bytes * (double)cases[c].k[j];
        for (int t = 0; t < r.steps; t++) {
            if (*BYTES(s, t, 0) != want_bytes)
                fail_msg("%s: %.0f bytes, want %.0f", cases[c].spec, *BYTES(s, t, 0), want_bytes);
            for (int j = 0; j < 4; j++) {
                const LayerView *v = &LAYERS[mats[j]];
                size_t n = layer_size(v);
                double want[NP] = {0};
                for (int w = 0; w < r.workers; w++) {
                    int mask[NP];
                    const float *in = IN(s, t, w) + v->offset; /* no memory: M = g */
                    top_mask(in, n, cases[c].k[j], mask);
                    for (size_t i = 0; i < n; i++) want[i] += mask[i] ? in[i] : 0;
                }
                for (size_t i = 0; i < n; i++)
                    if (fabs(OUT(s, t, 0)[v->offset + i] - want[i]) > 1e-6)
                        fail_msg("%s, %s[%zu]: %g, want the sum %g", cases[c].spec, v->name, i,
                                 OUT(s, t, 0)[v->offset + i], want[i]);
            }
        }
        check_bytes_and_agreement(&r, s);
        check_plan_matches_reduce(&r, s);
        release(s);
    }
}

/* ---- RandomK ---- */

static void test_randomk_shares_indices_across_workers_and_draws_new_ones_each_step(void **state)
{
    (void)state;
    Run r = base_run("randomk", 3, 2);
    set_levels(&r, 0.25, 0.1, 0.2, 0.5);
    Shared *s = simulate(&r);
    double bytes = 4 * 34.0;
    int chosen[2][NP];
    for (int t = 0; t < 2; t++)
        for (int l = 0; l < NL; l++) {
            const LayerView *v = &LAYERS[l];
            if (v->ndim == 1) continue;
            size_t n = layer_size(v), k = comp_keep_count(r.levels[0][l], n), kept = 0;
            for (size_t i = v->offset; i < v->offset + n; i++) {
                double mean = 0;
                for (int w = 0; w < 3; w++) mean += IN(s, t, w)[i] + MEM0(s, t, w)[i];
                mean /= 3;
                chosen[t][i] = OUT(s, t, 0)[i] != 0;
                kept += (size_t)chosen[t][i];
                /* a kept entry is the mean of M = g + e, and leaves every memory */
                for (int w = 0; w < 3; w++) {
                    float m = IN(s, t, w)[i] + MEM0(s, t, w)[i];
                    assert_true(MEM1(s, t, w)[i] == (chosen[t][i] ? 0 : m));
                }
                if (chosen[t][i]) assert_true(fabs(OUT(s, t, 0)[i] - mean) < 1e-6);
            }
            assert_int_equal(kept, k);
            if (t == 0) bytes += 4.0 * k;
        }
    assert_true(*BYTES(s, 0, 0) == bytes);
    assert_true(memcmp(chosen[0], chosen[1], sizeof chosen[0]) != 0);
    release(s);
}

/* ---- QSGD ---- */

static void test_qsgd_is_unbiased_over_seeded_draws(void **state)
{
    (void)state;
    /* one 8 x 8 layer, s = 4, the same input at every step, 3000 independent draws: each
     * element's decode is norm/s times a level that is l or l + 1, so its standard deviation is
     * at most norm / (2 s); the mean of N draws must be within 5 standard errors of the input */
    const int N = 3000, s_levels = 4;
    Run r = {.workers = 1, .steps = N, .n_layers = 1, .seed = 9, .n_rows = 1, .input = IN_FIXED};
    snprintf(r.spec, sizeof r.spec, "qsgd");
    r.layers[0] = (LayerView){"w", 0, 8, 8, 2};
    r.levels[0][0] = s_levels;
    Shared *s = simulate(&r);
    const float *x = IN(s, 0, 0);
    double sq = 0;
    for (int i = 0; i < 64; i++) sq += (double)x[i] * x[i];
    const double norm = sqrt(sq), tol = 5 * norm / (2 * s_levels * sqrt((double)N));
    int exact_draws = 0;
    for (int i = 0; i < 64; i++) {
        double mean = 0;
        for (int t = 0; t < N; t++) {
            double q = OUT(s, t, 0)[i];
            mean += q;
            /* on the grid: sign(x) norm l / s, l an integer in 0..s */
            double l = fabs(q) * s_levels / norm;
            assert_true(fabs(l - round(l)) < 1e-4 && round(l) <= s_levels);
            assert_true(q == 0 || (q < 0) == (x[i] < 0));
            exact_draws += q == x[i];
        }
        mean /= N;
        if (fabs(mean - x[i]) > tol)
            fail_msg("element %d: mean of %d decodes %g, input %g (tolerance %g)", i, N, mean, x[i],
                     tol);
    }
    assert_true(exact_draws < N);                   /* it is random */
    assert_true(*BYTES(s, 0, 0) == 4 + 64 * 4 / 8); /* norm + (1 + 3) bits each */
    release(s);
}

static void test_qsgd_wire_size_is_norm_plus_sign_and_level_bits(void **state)
{
    (void)state;
    assert_int_equal(comp_qsgd_level_bits(1), 1);
    assert_int_equal(comp_qsgd_level_bits(3), 2);
    assert_int_equal(comp_qsgd_level_bits(4), 3);
    assert_int_equal(comp_qsgd_level_bits(127), 7);
    assert_int_equal(comp_qsgd_level_bits(128), 8);
    assert_int_equal(comp_qsgd_level_bits(65535), 16);
    Run r = base_run("qsgd", 2, 1);
    set_levels(&r, 127, 1, 4, 65535);
    Shared *s = simulate(&r);
    /* w1 408 x 8 bits; w2 240 x 2 bits; w3 30 x 4 bits; w4 99 x 17 bits, each + 4 */
    double bytes = (4 + 408) + (4 + 60) + (4 + 15) + (4 + (99 * 17 + 7) / 8) + 4 * 34;
    assert_true(*BYTES(s, 0, 0) == bytes);
    check_bytes_and_agreement(&r, s);
    release(s);
}

/* ---- signSGD ---- */

static void test_signsgd_packs_8_signs_per_byte_least_significant_first(void **state)
{
    (void)state;
    const float p[19] = {1,  -1, 0,   -0.5f, 2,  3,  -4, 5, /* byte 0 */
                         -1, -1, -1,  -1,    -1, -1, -1, 1, /* byte 1 */
                         7,  -7, 0.0f};
    uint8_t out[4] = {0xaa, 0xaa, 0xaa, 0xaa};
    assert_int_equal(comp_sign_pack(p, 19, out), 3);
    assert_int_equal(out[0], 0xb5); /* bits 0,2,4,5,7: 1 0 1 0 1 1 0 1 */
    assert_int_equal(out[1], 0x80);
    assert_int_equal(out[2], 0x05); /* 7, -7, 0; the unused bits are zero */
    assert_int_equal(out[3], 0xaa); /* untouched */
    assert_int_equal(comp_sign_pack(p, 8, out), 1);
}

static void test_signsgd_averages_every_workers_scaled_signs(void **state)
{
    (void)state;
    Run r = base_run("signsgd", 3, 1);
    set_levels(&r, 1, 1, 1, 1);
    Shared *s = simulate(&r);
    double bytes = 4 * 34.0;
    for (int l = 0; l < NL; l++) {
        const LayerView *v = &LAYERS[l];
        if (v->ndim == 1) continue;
        size_t n = layer_size(v);
        bytes += 4 + (n + 7) / 8;
        double want[NP] = {0};
        for (int w = 0; w < 3; w++) {
            const float *x = IN(s, 0, w) + v->offset;
            double l1 = 0;
            for (size_t i = 0; i < n; i++) l1 += fabs(x[i]);
            float scale = (float)(l1 / n);
            for (size_t i = 0; i < n; i++) {
                want[i] += (x[i] >= 0 ? scale : -scale) / 3.0;
                /* EF-signSGD's memory: p - scale sign(p) */
                assert_true(fabs(MEM1(s, 0, w)[v->offset + i] -
                                 (x[i] - (x[i] >= 0 ? scale : -scale))) < 1e-6);
            }
        }
        for (size_t i = 0; i < n; i++)
            assert_true(fabs(OUT(s, 0, 0)[v->offset + i] - want[i]) < 1e-6);
    }
    assert_true(*BYTES(s, 0, 0) == bytes);
    release(s);
}

/* ---- fp16 ---- */

static void fill_eighths(int rank, int step, float *g, size_t np)
{
    for (size_t i = 0; i < np; i++)
        g[i] = (float)((int)((i * 7 + (size_t)rank * 3 + (size_t)step) % 41) - 20) / 8;
}

static void test_fp16_moves_halves_and_rounds_to_nearest(void **state)
{
    (void)state;
    /* multiples of 1/8: exact in half, and so are their sums, so the mean is exact */
    Run r = base_run("fp16", 4, 1);
    r.input = IN_FUNC;
    r.fill = fill_eighths;
    set_levels(&r, 1, 1, 0, 1);
    Shared *s = simulate(&r);
    for (size_t i = 0; i < NP; i++) {
        double mean = 0;
        for (int w = 0; w < 4; w++) mean += IN(s, 0, w)[i];
        assert_true(OUT(s, 0, 0)[i] == (float)(mean / 4));
    }
    assert_true(*BYTES(s, 0, 0) == 2.0 * (408 + 240 + 99) + 4.0 * (24 + 10 + 30));
    release(s);
    /* one worker, random floats: each element is its nearest half (vectors stay exact) */
    r = base_run("fp16", 1, 1);
    set_levels(&r, 1, 1, 1, 1);
    s = simulate(&r);
    for (int l = 0; l < NL; l++)
        for (size_t i = LAYERS[l].offset; i < LAYERS[l].offset + layer_size(&LAYERS[l]); i++) {
            float x = IN(s, 0, 0)[i];
            float want = LAYERS[l].ndim == 1 ? x : half_to_float(half_from_float(x));
            assert_true(OUT(s, 0, 0)[i] == want);
        }
    release(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_powersgd_recovers_low_rank_matrices_in_one_step),
        cmocka_unit_test(test_powersgd_survives_a_zero_gradient_and_keeps_tiny_ones_exact),
        cmocka_unit_test(test_powersgd_wire_size_is_r_n_plus_m_floats_plus_vectors),
        cmocka_unit_test(test_powersgd_matches_plain_loops_through_rank_changes),
        cmocka_unit_test(test_powersgd_comm_none_leaves_each_worker_its_own_low_rank_gradient),
        cmocka_unit_test(test_powersgd_comm_none_saves_the_ring_time_of_p_and_q),
        cmocka_unit_test(test_topk_keeps_exactly_the_k_largest_ties_to_lower_index),
        cmocka_unit_test(test_topk_accordion_variant_sums_without_memory),
        cmocka_unit_test(test_topk_accordion_code_s_int64_indices_and_truncated_counts),
        cmocka_unit_test(test_randomk_shares_indices_across_workers_and_draws_new_ones_each_step),
        cmocka_unit_test(test_qsgd_is_unbiased_over_seeded_draws),
        cmocka_unit_test(test_qsgd_wire_size_is_norm_plus_sign_and_level_bits),
        cmocka_unit_test(test_signsgd_packs_8_signs_per_byte_least_significant_first),
        cmocka_unit_test(test_signsgd_averages_every_workers_scaled_signs),
        cmocka_unit_test(test_fp16_moves_halves_and_rounds_to_nearest),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
