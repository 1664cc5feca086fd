/* test_sharding.c: sharded data parallel (--sharding, issue 50; docs/guide/sharded.md). Every
 * mode trains the small model to DDP's parameters bit for bit (sharding moves the same sums),
 * and each mode's bytes per step and GPU are the closed forms of ZeRO (Rajbhandari et al., SC
 * 2020, section 7; REFERENCES.md "Sharded data parallel"): the model's M bytes x (N-1)/N, twice
 * for DDP, ZeRO-1 and ZeRO-2, three times for ZeRO-3. Each run in a forked child (drivertest.h),
 * 4 workers of the mlp (and once the cnn), 4 steps. */
#include "testutil.h"

#include "costs.h"
#include "workload.h"
#include "drivertest.h"

#define P     4
#define STEPS 4

/* A tiny run of `sh` on the toy workload (drivertest.h: 600,000 floats in three tensors) under
 * DDP's overlap, or without costs at all when wl is NULL. */
static Shared *run_model(const char *model, Sharding sh, const Workload *wl, CollBackend backend,
                         int price_workers)
{
    RunConfig cfg = base_config(P, 512 / (P * STEPS), 1);
    if (strcmp(model, "mlp") != 0) {
        cfg.model = model_find(model);
        cfg.mc = model_config_default();
    }
    cfg.backend = backend;
    cfg.sharding = sh;
    cfg.workload = wl;
    cfg.overlap = wl ? OVERLAP_DDP : OVERLAP_NONE;
    cfg.price_workers = price_workers;
    Shared *r = simulate(cfg);
    if (r->rc != BW_OK) fail_msg("--sharding %d failed: %s", (int)sh, r->message);
    assert_int_equal(r->n_steps, STEPS);
    return r;
}

static Shared *run_mode(Sharding sh, const Workload *wl, CollBackend backend, int price_workers)
{
    return run_model("mlp", sh, wl, backend, price_workers);
}

static void assert_same_dynamics(const Shared *a, const Shared *b)
{
    assert_memory_equal(a->params, b->params, sizeof a->params);
    assert_memory_equal(a->step_loss, b->step_loss, sizeof a->step_loss);
    assert_int_equal(a->n_evals, b->n_evals);
    assert_memory_equal(a->eval_acc, b->eval_acc, sizeof a->eval_acc);
}

/* Every mode, costed or not (hybrid is not priced yet: uncosted only), gives DDP's parameters,
 * losses and accuracies bit for bit. */
static void test_every_mode_trains_as_ddp(void **state)
{
    (void)state;
    Workload *wl = toy_workload();
    Shared *ref = run_mode(SHARD_NONE, NULL, COLL_ANALYTIC, 0);
    Shared *ref_costed = run_mode(SHARD_NONE, wl, COLL_ANALYTIC, 0);
    assert_same_dynamics(ref, ref_costed);
    for (Sharding sh = SHARD_ZERO1; sh <= SHARD_HYBRID; sh++) {
        Shared *a = run_mode(sh, NULL, COLL_ANALYTIC, 0);
        assert_same_dynamics(ref, a);
        release(a);
        if (sh == SHARD_HYBRID) continue;
        a = run_mode(sh, wl, COLL_ANALYTIC, 0);
        assert_same_dynamics(ref, a);
        assert_true(a->comm_s > 0);
        release(a);
    }
    release(ref);
    release(ref_costed);
    ref = run_model("cnn", SHARD_NONE, wl, COLL_ANALYTIC, 0); /* the CNN too, under ZeRO-3 */
    Shared *a = run_model("cnn", SHARD_ZERO3, wl, COLL_ANALYTIC, 0);
    assert_same_dynamics(ref, a);
    assert_true(a->bytes > ref->bytes);
    release(a);
    release(ref);
    toy_free(wl);
}

/* Rank 0's bytes on the wire over the run against the closed form times the steps: `times`
 * passes of the model's M fp32 bytes x (N-1)/N; at the transfer level too (ring all-gathers of
 * one shard a rank, the ring allreduce's 2 (N-1)/N n). */
static void check_bytes(Sharding sh, double times, CollBackend backend, int price_workers)
{
    Workload *wl = toy_workload();
    const double n = price_workers ? price_workers : P, M = 4.0 * (double)wl->n_params;
    Shared *a = run_mode(sh, wl, backend, price_workers);
    const double want = STEPS * times * (n - 1) / n * M;
    if (fabs(a->bytes - want) > 1e-9 * want)
        fail_msg("--sharding %d: %.0f bytes, the closed form %.0f", (int)sh, a->bytes, want);
    release(a);
    toy_free(wl);
}

static void test_bytes_per_step_are_the_closed_forms(void **state)
{
    (void)state;
    check_bytes(SHARD_NONE, 2, COLL_ANALYTIC, 0);
    check_bytes(SHARD_ZERO1, 2, COLL_ANALYTIC, 0);
    check_bytes(SHARD_ZERO2, 2, COLL_ANALYTIC, 0);
    check_bytes(SHARD_ZERO3, 3, COLL_ANALYTIC, 0);
    check_bytes(SHARD_ZERO3, 3, COLL_ANALYTIC, 64); /* priced at 64 GPUs */
    check_bytes(SHARD_ZERO2, 2, COLL_TRANSFER, 0);
    check_bytes(SHARD_ZERO3, 3, COLL_TRANSFER, 0);
}

/* The sharded optimizer steps over 1/N of the parameters: less compute than DDP's. */
static void test_sharded_optimizer_is_cheaper(void **state)
{
    (void)state;
    Workload *wl = toy_workload();
    Shared *a = run_mode(SHARD_NONE, wl, COLL_ANALYTIC, 0);
    Shared *b = run_mode(SHARD_ZERO2, wl, COLL_ANALYTIC, 0);
    assert_true(b->compute_s < a->compute_s);
    release(a);
    release(b);
    toy_free(wl);
}

/* Memory per GPU (shard_mem.c) against the ZeRO paper's closed forms with AdamW in mixed
 * precision (section 3.1, Figure 1): DDP 16 Psi, ZeRO-1 4 Psi + 12 Psi/N, ZeRO-2 2 Psi + 14 Psi/N,
 * ZeRO-3 16 Psi/N (plus two of its largest layer's fp16 parameters in flight); SGD with momentum
 * keeps 8 Psi of optimizer state instead of 12. Llama-2-7B on 8 H100s (80 GB): DDP does not fit
 * (a usage error saying by how much), ZeRO-3 does. */
static void test_memory_per_gpu_and_the_7b_on_8_h100s(void **state)
{
    (void)state;
    Workload *wl = NULL;
    BwError err;
    assert_int_equal(workload_load("llama-2-7b", "--workload", &wl, &err), BW_OK);
    RunConfig cfg = base_config(8, 4, 1);
    cfg.workload = wl;
    cfg.cluster.gpu = cluster_gpu_find("H100");
    cfg.tc.sgd.kind = OPT_ADAMW;
    const double psi = (double)wl->n_params, n = 8;
    assert_true(psi == 6738415616.0);
    const double want[] = {16 * psi, 4 * psi + 12 * psi / n, 2 * psi + 14 * psi / n, 16 * psi / n};
    ShardMemory m;
    for (Sharding sh = SHARD_NONE; sh <= SHARD_ZERO3; sh++) {
        assert_int_equal(driver_shard_memory(&cfg, sh, &m), 1);
        assert_true(m.capacity == 80e9);
        if (fabs(m.total - m.gathered - want[sh]) > 1e-12 * want[sh])
            fail_msg("--sharding %s: %.0f bytes, the closed form %.0f", driver_sharding_name(sh),
                     m.total - m.gathered, want[sh]);
        assert_true(sh == SHARD_ZERO3 ? m.gathered > 0 : m.gathered == 0);
    }
    cfg.sharding = SHARD_NONE;
    assert_int_equal(driver_check_shard_memory(&cfg, &err), BW_EUSAGE);
    assert_non_null(strstr(err.msg, "107.8 GB per GPU with --sharding none"));
    assert_non_null(strstr(err.msg, "by 27.8 GB"));
    cfg.sharding = SHARD_ZERO3;
    assert_int_equal(driver_check_shard_memory(&cfg, &err), BW_OK);
    cfg.tc.sgd.kind = OPT_SGD; /* momentum 0.9: K = 8 */
    assert_int_equal(driver_shard_memory(&cfg, SHARD_ZERO2, &m), 1);
    assert_true(fabs(m.total - (2 * psi + 10 * psi / n)) < 1e-12 * m.total);
    workload_free(wl);
}

/* What the plan does not price yet is refused before the run, naming the flags (exit 2): a policy
 * that may compress the gradients (hybrid on a costed step is priced now: test_shard_price). */
static void test_what_is_not_priced_is_refused(void **state)
{
    (void)state;
    Workload *wl = toy_workload();
    RunConfig cfg = base_config(P, 512 / (P * STEPS), 1);
    cfg.backend = COLL_ANALYTIC;
    BwError err;
    cfg.sharding = SHARD_HYBRID;
    assert_int_equal(driver_check(&cfg, &err), BW_OK); /* uncosted: the same update */
    cfg.workload = wl;
    cfg.overlap = OVERLAP_DDP;
    assert_int_equal(driver_check(&cfg, &err), BW_OK); /* priced on its nodes: test_shard_price */
    cfg.sharding = SHARD_ZERO3;
    assert_int_equal(driver_check(&cfg, &err), BW_OK);
    cfg.policy = "static:level=1";
    cfg.compressor = "topk";
    assert_int_equal(driver_check(&cfg, &err), BW_EUSAGE);
    if (!strstr(err.msg, "--policy static:level=1")) fail_msg("%s", err.msg);
    toy_free(wl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_mode_trains_as_ddp),
        cmocka_unit_test(test_bytes_per_step_are_the_closed_forms),
        cmocka_unit_test(test_sharded_optimizer_is_cheaper),
        cmocka_unit_test(test_memory_per_gpu_and_the_7b_on_8_h100s),
        cmocka_unit_test(test_what_is_not_priced_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
