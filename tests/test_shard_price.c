/* test_shard_price.c: what --sharding costs before and beside the run (issue 50): estimate.c's
 * closed forms of a sharded step (shard_estimate.c) against the ring formulas written out here,
 * the simulated-time check that uses them, and the activations' estimate (act_mem.c) against
 * its closed form on GPT-2 XL: a few formulas each; and the bytes a 16-bit sharded step sends,
 * over 4 steps of the toy workload (three tiny runs, each in a forked child: drivertest.h). */
#include "testutil.h"

#include "drivertest.h"
#include "workload.h"

#define P 8

/* A star of P GPUs at 10 Gbit/s and 5 us, or a hierarchical cluster of nodes of g GPUs. */
static RunConfig star(Sharding sh)
{
    RunConfig cfg = base_config(P, 4, 1);
    cfg.sharding = sh;
    cfg.cluster.bandwidth_Bps = 1.25e9;
    cfg.cluster.latency_s = 5e-6;
    return cfg;
}

/* zero1 and zero2: a reduce-scatter and an all-gather, each (N-1) a + (N-1)/N n b with a = 2
 * latencies (two NIC links) and b = 1 / bandwidth: the ring allreduce's 2 (N-1) a + 2 (N-1)/N n
 * b; zero3: 3 of them; at --price-workers N the priced GPUs' count. */
static void test_estimate_zero_closed_forms(void **state)
{
    (void)state;
    const double n = 4e8, a = 2 * 5e-6, b = 1 / 1.25e9;
    for (int priced = 0; priced <= 64; priced += 64) {
        const double N = priced ? priced : P, ring = (N - 1) * a + (N - 1) / N * n * b;
        for (Sharding sh = SHARD_ZERO1; sh <= SHARD_ZERO3; sh++) {
            RunConfig cfg = star(sh);
            cfg.price_workers = priced;
            const double want = (sh == SHARD_ZERO3 ? 3 : 2) * ring;
            const double got = estimate_shard_comm_s(&cfg, &cfg.cluster, n);
            if (fabs(got - want) > 1e-12 * want)
                fail_msg("--sharding %s at %g GPUs: %.9g s, the closed form %.9g",
                         driver_sharding_name(sh), N, got, want);
        }
    }
    RunConfig cfg = star(SHARD_NONE);
    assert_true(estimate_shard_comm_s(&cfg, &cfg.cluster, n) == 0);
}

/* hybrid on 4 nodes of 4 GPUs, one NIC a node: ZeRO-3 inside a node on its fabric, 3 [(g-1) a_l +
 * (g-1)/g n b_l], and the shard n/g allreduced across the m nodes by g rings sharing the NIC,
 * 2 (m-1) a + 2 (m-1)/m (n/g) b g. Written out for g = m = 4. */
static void test_estimate_hybrid_closed_form(void **state)
{
    (void)state;
    RunConfig cfg = base_config(16, 4, 1);
    cfg.sharding = SHARD_HYBRID;
    cfg.cluster.topology = TOPO_HIERARCHICAL;
    cfg.cluster.gpus_per_node = 4;
    cfg.cluster.bandwidth_Bps = 1.25e9; /* 10 Gbit/s NIC */
    cfg.cluster.latency_s = 5e-6;
    cfg.cluster.intra_bandwidth_Bps = 100e9;
    cfg.cluster.intra_latency_s = 1e-6;
    const double n = 4e8;
    const double inside = 3 * (3 * 2e-6 + 0.75 * n / 100e9);
    const double across = 2 * 3 * 1e-5 + 2 * 0.75 * (n / 4) / 1.25e9 * 4;
    const double got = estimate_shard_comm_s(&cfg, &cfg.cluster, n);
    if (fabs(got - (inside + across)) > 1e-12 * got)
        fail_msg("hybrid: %.9g s, the closed form %.9g", got, inside + across);
}

/* The simulated-time check (estimate.c, in driver_check) prices the sharded step: at a bandwidth
 * where DDP's dense allreduce keeps the run under CLUSTER_MAX_SIM_S, ZeRO-2's same bytes do too
 * and ZeRO-3's 3/2 of them take it over (no latency, and compute at a rate that makes it
 * negligible, so only the bytes count). */
static void test_sim_time_check_prices_sharding(void **state)
{
    (void)state;
    Workload *wl = toy_workload();
    RunConfig cfg = star(SHARD_NONE);
    cfg.workload = wl;
    cfg.overlap = OVERLAP_DDP;
    cfg.backend = COLL_ANALYTIC;
    cfg.cluster.latency_s = 0;
    cfg.cluster.gpu_flops = 1e30;
    const double steps = (double)(TRAIN.n / P / cfg.tc.batch), n = 4.0 * (double)wl->n_params;
    /* DDP's 2 (N-1)/N n b a step at 0.8 x the limit */
    cfg.cluster.bandwidth_Bps = steps * 2 * (P - 1.0) / P * n / (0.8 * CLUSTER_MAX_SIM_S);
    BwError err;
    assert_int_equal(driver_check(&cfg, &err), BW_OK);
    cfg.sharding = SHARD_ZERO2; /* the same bytes */
    assert_int_equal(driver_check(&cfg, &err), BW_OK);
    cfg.sharding = SHARD_ZERO3; /* 1.2 x the limit */
    assert_int_equal(driver_check(&cfg, &err), BW_EUSAGE);
    if (!strstr(err.msg, "--bandwidth")) fail_msg("%s", err.msg);
    double ar = 1, ag = 0;
    estimate_shard_calls(&cfg, &ar, &ag);
    assert_true(ar == 0 && ag == 3);
    toy_free(wl);
}

/* GPT-2 XL's activations: each block's four matrix layers keep their inputs and outputs, (d + 3d)
 * + (d + d) + (d + 4d) + (4d + d) = 16 d values a token; 48 blocks, T = 1024, the tied head
 * none; 2 bytes at bf16, 4 at fp32, times the batch per GPU. */
static void test_activations_closed_form(void **state)
{
    (void)state;
    Workload *wl;
    assert_int_equal(workload_load("gpt2-xl", "--workload", &wl, NULL), BW_OK);
    RunConfig cfg = star(SHARD_ZERO3);
    cfg.workload = wl;
    cfg.tc.batch = 2;
    const double values = 48.0 * 16 * 1024 * 1600;
    cfg.cluster.precision = "bf16";
    assert_float_equal(driver_activation_bytes(&cfg), 2 * 2 * values, 1e-6);
    cfg.cluster.precision = "fp32";
    assert_float_equal(driver_activation_bytes(&cfg), 4 * 2 * values, 1e-6);
    cfg.workload = NULL;
    assert_true(driver_activation_bytes(&cfg) == 0);
    workload_free(wl);
}

/* A sharded step's collectives carry the training's data type (driver_shard_elem_bytes): at
 * --precision bf16 or fp16, 2 bytes a value, so ZeRO-3's bytes a step and GPU are 3 (N-1)/N of
 * the model's 16-bit bytes, half of fp32's; the estimate halves with them. Rank 0's bytes over 4
 * steps of the toy workload, analytic collectives. */
static void test_sixteen_bit_collectives(void **state)
{
    (void)state;
    Workload *wl = toy_workload();
    const int steps = 4;
    const char *prec[] = {"fp32", "bf16", "fp16"};
    for (int k = 0; k < 3; k++) {
        RunConfig cfg = base_config(P, 512 / (P * steps), 1);
        cfg.backend = COLL_ANALYTIC;
        cfg.sharding = SHARD_ZERO3;
        cfg.workload = wl;
        cfg.overlap = OVERLAP_DDP;
        cfg.cluster.precision = prec[k];
        Shared *r = simulate(cfg);
        if (r->rc != BW_OK) fail_msg("%s: %s", prec[k], r->message);
        const double es = k ? 2 : 4, want = steps * 3 * (P - 1.0) / P * es * (double)wl->n_params;
        if (fabs(r->bytes - want) > 1e-9 * want)
            fail_msg("--precision %s: %.0f bytes, the closed form %.0f", prec[k], r->bytes, want);
        release(r);
        assert_true(driver_shard_elem_bytes(&cfg) == es);
    }
    RunConfig cfg = star(SHARD_ZERO3);
    cfg.cluster.latency_s = 0;
    const double full = estimate_shard_comm_s(&cfg, &cfg.cluster, 4e8);
    cfg.cluster.precision = "bf16";
    assert_float_equal(estimate_shard_comm_s(&cfg, &cfg.cluster, 4e8), full / 2, 1e-12 * full);
    toy_free(wl);
}

/* hybrid (FSDP's HYBRID_SHARD) on 2 nodes of 2 GPUs of the toy workload, DDP's overlap: the small
 * model's update is DDP's bit for bit, and rank 0's bytes over 4 steps are the closed form, 3
 * (g-1)/g M inside the node and 2 (m-1)/m M/g across the nodes a step (M the model's fp32 bytes),
 * at the analytic and the transfer level, and with m priced at 64 GPUs / g. */
static Shared *run_hybrid(Sharding sh, const Workload *wl, CollBackend backend, int price_workers)
{
    RunConfig cfg = base_config(4, 512 / (4 * 4), 1);
    cfg.cluster.topology = TOPO_HIERARCHICAL;
    cfg.cluster.gpus_per_node = 2;
    cfg.backend = backend;
    cfg.sharding = sh;
    cfg.workload = wl;
    cfg.overlap = OVERLAP_DDP;
    cfg.price_workers = price_workers;
    Shared *r = simulate(cfg);
    if (r->rc != BW_OK) fail_msg("--sharding %s: %s", driver_sharding_name(sh), r->message);
    assert_int_equal(r->n_steps, 4);
    return r;
}

static void test_hybrid_is_priced_on_its_nodes(void **state)
{
    (void)state;
    Workload *wl = toy_workload();
    Shared *ddp = run_hybrid(SHARD_NONE, wl, COLL_ANALYTIC, 0);
    const double M = 4.0 * (double)wl->n_params, g = 2;
    const struct {
        CollBackend backend;
        int priced;
    } cases[] = {{COLL_ANALYTIC, 0}, {COLL_TRANSFER, 0}, {COLL_ANALYTIC, 64}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        Shared *h = run_hybrid(SHARD_HYBRID, wl, cases[i].backend, cases[i].priced);
        assert_memory_equal(h->params, ddp->params, sizeof h->params);
        assert_memory_equal(h->step_loss, ddp->step_loss, sizeof h->step_loss);
        const double m = (cases[i].priced ? cases[i].priced : 4) / g;
        const double want = 4 * (3 * (g - 1) / g * M + 2 * (m - 1) / m * M / g);
        if (fabs(h->bytes - want) > 1e-9 * want)
            fail_msg("hybrid (case %zu): %.0f bytes, the closed form %.0f", i, h->bytes, want);
        release(h);
    }
    release(ddp);
    toy_free(wl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_estimate_zero_closed_forms),
        cmocka_unit_test(test_estimate_hybrid_closed_form),
        cmocka_unit_test(test_sim_time_check_prices_sharding),
        cmocka_unit_test(test_activations_closed_form),
        cmocka_unit_test(test_sixteen_bit_collectives),
        cmocka_unit_test(test_hybrid_is_priced_on_its_nodes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
