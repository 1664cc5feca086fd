/* test_zeropp.c: ZeRO++'s collectives under --sharding zero3 (--zeropp; Wang et al., "ZeRO++",
 * 2023, arXiv:2306.10209; sim/driver/zeropp.c, zeropp_plan.c, sim/compress/blockq.c). The quantizer
 * against a naive reference; qwZ and qgZ change the small model's training (they are not no-ops)
 * while their bytes are the closed forms; hpZ's backward all-gather crosses no node boundary;
 * the flag's refusals. Each run in a forked child (drivertest.h): 4 workers of the mlp, 4 steps,
 * the toy workload (three 2-D tensors of 300, 200 and 100 x 1000), the analytic level. */
#include "testutil.h"

#include "blockq.h"
#include "costs.h"
#include "workload.h"
#include "drivertest.h"

#define P     4
#define STEPS 4

/* The naive reference: each block's step absmax / (2^(bits-1) - 1), each value rounded to the
 * nearest multiple of it (ties to even, as rintf), in double. */
static void naive_roundtrip(const float *x, double *y, size_t n, size_t block, int bits)
{
    for (size_t lo = 0; lo < n; lo += block) {
        const size_t hi = lo + block < n ? lo + block : n;
        double m = 0;
        for (size_t i = lo; i < hi; i++) m = fabs(x[i]) > m ? fabs(x[i]) : m;
        const double s = (double)(float)(m / ((1 << (bits - 1)) - 1));
        for (size_t i = lo; i < hi; i++) y[i] = s > 0 ? nearbyint((double)x[i] / s) * s : 0.0;
    }
}

static void test_blockq_against_a_naive_reference(void **state)
{
    (void)state;
    enum { N = 10007 };
    static float x[N], y[N];
    static double ref[N];
    uint64_t r = 12345;
    for (size_t i = 0; i < N; i++) { /* magnitudes over six decades, both signs */
        r = r * 6364136223846793005ULL + 1442695040888963407ULL;
        const double u = (double)(r >> 11) / 9007199254740992.0;
        x[i] = (float)((u - 0.5) * pow(10.0, (double)(i % 7) - 3.0));
    }
    x[5] = 0.0f;
    for (int bits = 4; bits <= 8; bits += 4)
        for (size_t block = 1; block <= 4096; block *= 8) {
            blockq_roundtrip(x, y, N, block, bits);
            naive_roundtrip(x, ref, N, block, bits);
            for (size_t lo = 0; lo < N; lo += block) {
                const size_t len = N - lo < block ? N - lo : block;
                const double s = blockq_scale(x + lo, len, bits);
                for (size_t i = lo; i < lo + len; i++) {
                    const double t = (double)x[i] / s; /* a tie: float and double may differ */
                    const int tie = fabs(t - floor(t) - 0.5) < 1e-4;
                    if (fabs(y[i] - ref[i]) > 1e-6 * fabs(ref[i]) &&
                        !tie) /* the float product q s */
                        fail_msg("bits %d block %zu: y[%zu] %g, naive %g", bits, block, i, y[i],
                                 ref[i]);
                    if (fabs((double)y[i] - x[i]) > 0.5 * s + 1e-6 * fabs(x[i]))
                        fail_msg("bits %d block %zu: error %g over s/2 = %g", bits, block,
                                 fabs((double)y[i] - x[i]), 0.5 * s);
                }
            }
        }
    /* DeepSpeed's qwZ groups: ceil(n / 8000) of them, equal; the wire bytes */
    assert_int_equal(blockq_qwz_block(8000), 8000);
    assert_int_equal(blockq_qwz_block(8001), 4001);
    assert_int_equal(blockq_qwz_block(20000), 6667);
    assert_true(blockq_bytes(20000, 6667, 8) == 20000 + 4 * 3);
    assert_true(blockq_bytes(20002, 6667, 4) == 10001 + 4 * 4);
    assert_true(blockq_bytes(20001, 6667, 4) == 10001 + 4 * 3);
}

static RunConfig zpp_config(const Workload *wl, int G, ZeroPP z)
{
    RunConfig cfg = base_config(P, 512 / (P * STEPS), 1);
    cfg.backend = COLL_ANALYTIC;
    cfg.sharding = SHARD_ZERO3;
    cfg.zeropp = z;
    cfg.workload = wl;
    cfg.overlap = OVERLAP_DDP;
    if (G > 1) { /* nodes of G GPUs behind fast intra-node links */
        cfg.cluster.topology = TOPO_HIERARCHICAL;
        cfg.cluster.gpus_per_node = G;
        BwError err;
        assert_int_equal(cluster_resolve(&cfg.cluster, &err), BW_OK);
    }
    return cfg;
}

static Shared *run_zpp(const Workload *wl, int G, ZeroPP z)
{
    Shared *r = simulate(zpp_config(wl, G, z));
    if (r->rc != BW_OK) fail_msg("--zeropp failed: %s", r->message);
    assert_int_equal(r->n_steps, STEPS);
    return r;
}

/* The largest difference between two runs' parameters, relative to the largest parameter. */
static double param_diff(const Shared *a, const Shared *b)
{
    double d = 0, m = 0;
    for (size_t i = 0; i < MAX_PARAMS; i++) {
        d = fmax(d, fabs((double)a->params[i] - b->params[i]));
        m = fmax(m, fabs((double)a->params[i]));
    }
    return d / m;
}

/* qwZ int8: the forward and backward use the decoded weights, so the losses and the parameters
 * move (a little: int8 of blocks of <= 8000); the all-gathers' bytes a rank are (N-1) times the
 * quantized shard, sum over tensors of ceil(numel/N) + 4 per block, twice (forward, backward),
 * beside the fp32 reduce-scatter's (N-1)/N 4n. */
static void test_qwz_changes_training_and_prices_its_bytes(void **state)
{
    (void)state;
    Workload *wl = toy_workload();
    Shared *ref = run_zpp(wl, 1, (ZeroPP){0});
    Shared *q = run_zpp(wl, 1, (ZeroPP){.qwz_bits = 8});
    const double d = param_diff(ref, q);
    if (!(d > 0 && d < 0.05)) fail_msg("qwZ int8 moved the parameters by %g of the largest", d);
    assert_true(memcmp(ref->step_loss, q->step_loss, sizeof ref->step_loss) != 0);
    double shard = 0;
    for (int t = 0; t < wl->n_tensors; t++) {
        const double s = ceil((double)wl->tensors[t].numel / P);
        shard += s + 4 * ceil(s / 8000);
    }
    const double n = (double)wl->n_params;
    const double want = STEPS * ((P - 1) * 2 * shard + (P - 1.0) / P * 4 * n);
    if (fabs(q->bytes - want) > 1e-9 * want)
        fail_msg("qwZ: %.0f bytes, the closed form %.0f", q->bytes, want);
    assert_true(q->bytes < 0.51 * ref->bytes); /* each gather about a quarter of fp32's */
    release(ref);
    release(q);
    toy_free(wl);
}

/* hpZ on 2 nodes of 2: the backward's all-gather runs on the node's ring ((G-1)/G 4n a rank over
 * the intra-node links), so a node sends across its boundary only the forward's all-gather and
 * the reduce-scatter, (N-1) 4n/N each (a ring over all N crosses each boundary once); the step
 * is faster, and the small model trains as ZeRO-3 does (hpZ quantizes nothing). */
static void test_hpz_backward_gather_stays_in_the_node(void **state)
{
    (void)state;
    Workload *wl = toy_workload();
    Shared *ref = run_zpp(wl, 2, (ZeroPP){0});
    Shared *h = run_zpp(wl, 2, (ZeroPP){.hpz = 1});
    const double n = 4.0 * (double)wl->n_params, N = P, G = 2;
    assert_true(fabs(ref->cross_node_bytes - 3 * (N - 1) * n / N) < 1e-9 * n);
    assert_true(fabs(h->cross_node_bytes - 2 * (N - 1) * n / N) < 1e-9 * n);
    const double want = STEPS * (2 * (N - 1) / N * n + (G - 1) / G * n);
    if (fabs(h->bytes - want) > 1e-9 * want)
        fail_msg("hpZ: %.0f bytes, the closed form %.0f", h->bytes, want);
    assert_true(h->comm_s < ref->comm_s);
    assert_memory_equal(ref->params, h->params, sizeof ref->params);
    /* its memory: the secondary shard of the fp16 parameters, 2 Psi / G a GPU, on top */
    RunConfig cfg = zpp_config(wl, 2, (ZeroPP){.hpz = 1});
    ShardMemory with, without;
    assert_int_equal(driver_shard_memory(&cfg, SHARD_ZERO3, &with), 1);
    cfg.zeropp.hpz = 0;
    assert_int_equal(driver_shard_memory(&cfg, SHARD_ZERO3, &without), 1);
    assert_true(with.secondary == 2.0 * (double)wl->n_params / G && without.secondary == 0);
    assert_true(with.total == without.total + with.secondary);
    release(ref);
    release(h);
    toy_free(wl);
}

/* qgZ on 2 nodes of 2: the gradients really pass through int4 twice (the parameters move from
 * ZeRO-3's, and stay near them); a node sends across its boundary the two fp32 all-gathers and
 * the all-to-all's G (m-1)/m Y, Y a GPU's 1/G slice of each tensor at int4: numel/(2G) bytes and
 * 4 a block (max(rows, cols, N) = 1000 blocks a tensor, 1000/G in a slice). */
static void test_qgz_changes_training_and_its_cross_node_bytes(void **state)
{
    (void)state;
    Workload *wl = toy_workload();
    Shared *ref = run_zpp(wl, 2, (ZeroPP){0});
    Shared *g = run_zpp(wl, 2, (ZeroPP){.qgz = 1});
    const double d = param_diff(ref, g);
    if (!(d > 0 && d < 0.05)) fail_msg("qgZ moved the parameters by %g of the largest", d);
    const double N = P, G = 2, m = N / G, n = 4.0 * (double)wl->n_params;
    double y2 = 0;
    for (int t = 0; t < wl->n_tensors; t++)
        y2 += (double)wl->tensors[t].numel / (2 * G) + 4 * 1000 / G;
    const double want = 2 * (N - 1) * n / N + G * (m - 1) / m * y2;
    /* each bucket's count rounded up to whole bytes a rank: G (N-1) bytes a bucket at most */
    if (fabs(g->cross_node_bytes - want) > wl->n_tensors * G * (N - 1))
        fail_msg("qgZ: %.0f bytes across a node, the closed form %.0f", g->cross_node_bytes, want);
    release(ref);
    release(g);
    toy_free(wl);
}

/* The flag: its values, and where it does not apply (a usage error naming --zeropp). */
static void test_zeropp_refusals(void **state)
{
    (void)state;
    BwError err;
    ZeroPP z;
    assert_int_equal(zeropp_parse("qwz:int4,hpz,qgz", &z, &err), BW_OK);
    assert_true(z.qwz_bits == 4 && z.hpz && z.qgz);
    assert_int_equal(zeropp_parse("qwz", &z, &err), BW_OK);
    assert_true(z.qwz_bits == 8 && !z.hpz && !z.qgz);
    const char *bad[] = {"", "qwz:int2", "hpz,hpz", "qgz,", "qwz,,hpz", "zero"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        assert_int_equal(zeropp_parse(bad[i], &z, &err), BW_EUSAGE);
        assert_non_null(strstr(err.msg, "--zeropp"));
    }
    Workload *wl = toy_workload();
    RunConfig cfg = zpp_config(wl, 1, (ZeroPP){.qgz = 1});
    assert_int_equal(driver_check(&cfg, &err), BW_OK);
    cfg.sharding = SHARD_ZERO2;
    assert_int_equal(driver_check(&cfg, &err), BW_EUSAGE);
    assert_non_null(strstr(err.msg, "--zeropp"));
    assert_non_null(strstr(err.msg, "--sharding zero3"));
    cfg.sharding = SHARD_ZERO3;
    cfg.workload = NULL; /* uncosted */
    cfg.overlap = OVERLAP_NONE;
    assert_int_equal(driver_check(&cfg, &err), BW_EUSAGE);
    assert_non_null(strstr(err.msg, "--zeropp"));
    toy_free(wl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_blockq_against_a_naive_reference),
        cmocka_unit_test(test_qwz_changes_training_and_prices_its_bytes),
        cmocka_unit_test(test_hpz_backward_gather_stays_in_the_node),
        cmocka_unit_test(test_qgz_changes_training_and_its_cross_node_bytes),
        cmocka_unit_test(test_zeropp_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
