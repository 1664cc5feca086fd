/* test_sharding.c: sharded data parallel (--sharding, issue 50; docs/guide/sharded.md). Every
 * mode trains the small model to DDP's parameters bit for bit (sharding moves the same sums),
 * and each mode's bytes per step and GPU are the closed forms of ZeRO (Rajbhandari et al., SC
 * 2020, section 7; REFERENCES.md "Sharded data parallel"): the model's M bytes x (N-1)/N, twice
 * for DDP, ZeRO-1 and ZeRO-2, three times for ZeRO-3. Each run in a forked child (drivertest.h),
 * 4 workers of the mlp (and once the cnn), 4 steps. */
#include "testutil.h"

#include "costs.h"
#include "step_plan.h"
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

/* ZeRO-3 on the toy workload under DDP's streams (analytic collectives, ideal costs) with FSDP's
 * schedule s, on NIC links of bw bytes per second. */
static Shared *run_fsdp_priced(const Workload *wl, FsdpSched s, double bw, int price_workers)
{
    RunConfig cfg = base_config(P, 512 / (P * STEPS), 1);
    cfg.price_workers = price_workers;
    cfg.backend = COLL_ANALYTIC;
    cfg.sharding = SHARD_ZERO3;
    cfg.workload = wl;
    cfg.overlap = OVERLAP_DDP;
    cfg.fsdp = s;
    cfg.cluster.bandwidth_Bps = bw;
    Shared *r = simulate(cfg);
    if (r->rc != BW_OK) fail_msg("zero3 failed: %s", r->message);
    return r;
}

static Shared *run_fsdp(const Workload *wl, FsdpSched s, double bw)
{
    return run_fsdp_priced(wl, s, bw, 0);
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
 * precision (section 3.1, Figure 1; --precision bf16): DDP 16 Psi, ZeRO-1 4 Psi + 12 Psi/N, ZeRO-2
 * 2 Psi + 14 Psi/N, ZeRO-3 16 Psi/N (plus two of its largest layer's fp16 parameters in flight);
 * SGD with momentum keeps 8 Psi of optimizer state instead of 12. At fp32 there is no master
 * copy: parameters and gradients 4 Psi each, Adam's moments 8 Psi, so ZeRO-1 8 Psi + 8 Psi/N and
 * ZeRO-2 4 Psi + 12 Psi/N (it once counted the mixed split at fp32: 4 Psi + 12 Psi/N for ZeRO-1),
 * and the units gathered in fp32, twice the bytes. Llama-2-7B on 8 H100s (80 GB): DDP does not
 * fit (a usage error saying by how much), ZeRO-3 does. */
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
    cfg.cluster.precision = "bf16";
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
    const double gathered16 = m.gathered;
    cfg.tc.sgd.kind = OPT_SGD; /* momentum 0.9: K = 8 */
    assert_int_equal(driver_shard_memory(&cfg, SHARD_ZERO2, &m), 1);
    assert_true(fabs(m.total - (2 * psi + 10 * psi / n)) < 1e-12 * m.total);
    /* fp32 (the default precision) */
    cfg.cluster.precision = "fp32";
    cfg.tc.sgd.kind = OPT_ADAMW;
    const double want32[] = {16 * psi, 8 * psi + 8 * psi / n, 4 * psi + 12 * psi / n, 16 * psi / n};
    for (Sharding sh = SHARD_NONE; sh <= SHARD_ZERO3; sh++) {
        assert_int_equal(driver_shard_memory(&cfg, sh, &m), 1);
        if (fabs(m.total - m.gathered - want32[sh]) > 1e-12 * want32[sh])
            fail_msg("fp32, --sharding %s: %.0f bytes, the closed form %.0f",
                     driver_sharding_name(sh), m.total - m.gathered, want32[sh]);
    }
    assert_true(m.params == 4 * psi / n && m.optimizer == 8 * psi / n);
    assert_true(m.gathered == 2 * gathered16);
    cfg.tc.sgd.kind = OPT_SGD; /* momentum: 4 Psi of state, no master copy */
    assert_int_equal(driver_shard_memory(&cfg, SHARD_ZERO1, &m), 1);
    assert_true(fabs(m.total - (8 * psi + 4 * psi / n)) < 1e-12 * m.total);
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

/* ---- ZeRO-3's FSDP schedule (shard_sched.c, issue 50 items 1-3) ---- */

/* A max-plus clock of fsdp_walk's requests, as cost_fast.c's: each lane runs its requests in
 * order, each from max(its issue, the lane's end), every collective g seconds; a unit's forward
 * F, its backward B. */
#define WU 3
typedef struct {
    double now, lane[2], done[3 * WU], F, B, g;
    int gathers, scatters;
} WalkClock;

static void wc_issue(void *arg, int req, int lane)
{
    WalkClock *c = arg;
    const double t = fmax(c->now, c->lane[lane]) + c->g;
    c->lane[lane] = c->done[req] = t;
    if (req < 2 * WU)
        c->gathers++;
    else
        c->scatters++;
}

static void wc_wait(void *arg, int req)
{
    WalkClock *c = arg;
    c->now = fmax(c->now, c->done[req]);
}

static void wc_compute(void *arg, int unit, int backward)
{
    WalkClock *c = arg;
    (void)unit;
    c->now += backward ? c->B : c->F;
}

static WalkClock walk(FsdpSched s, double F, double B, double g)
{
    WalkClock c = {.F = F, .B = B, .g = g};
    StepPlan p = {.n_units = WU};
    const FsdpOps ops = {&c, wc_issue, wc_wait, wc_compute};
    fsdp_walk(&p, &s, &ops);
    return c;
}

static void assert_end(FsdpSched s, double F, double B, double g, double want)
{
    const WalkClock c = walk(s, F, B, g);
    if (fabs(c.now - want) > 1e-12)
        fail_msg("F %g B %g g %g (prefetch %d, forward %d, limit %d, own %d): the step ends at %g, "
                 "the closed form %g",
                 F, B, g, (int)s.backward, s.forward, s.limit, s.rs_own, c.now, want);
}

/* The schedule against closed forms on U = 3 units of F = 1, B = 2 (sum F = 3, sum B = 6):
 * without prefetch every collective waits for the one before and the compute for each: sum F +
 * sum B + 3 U g; BACKWARD_PRE with 2g <= B hides every collective of the backward but its first
 * all-gather and its last reduce-scatter: U (g + F) + g + sum B + g, on one communicator or two;
 * forward prefetch with g <= F hides the forward's too (g + sum F); where the network is the
 * bottleneck (no compute) one communicator carries all 3 U g, two carry the all-gathers' 2 U g
 * and the last reduce-scatter after them; a limit of 1 leaves no room for a prefetch; without
 * resharding the backward gathers nothing. Each unit's all-gather and reduce-scatter are one
 * request each: 2 U and U. */
static void test_fsdp_walk_closed_forms(void **state)
{
    (void)state;
    const FsdpSched pre = {0}, none = {.backward = FSDP_PREFETCH_NONE};
    const FsdpSched own = {.rs_own = 1}, fwd = {.forward = 1}, one = {.limit = 1};
    const FsdpSched keep = {.keep_after_forward = 1, .backward = FSDP_PREFETCH_NONE};
    assert_end(none, 1, 2, 1, 3 + 6 + 9 * 1);
    assert_end(one, 1, 2, 1, 3 + 6 + 9 * 1);
    assert_end(pre, 1, 2, 0.5, 3 * 1.5 + 0.5 + 6 + 0.5);
    assert_end(own, 1, 2, 0.5, 3 * 1.5 + 0.5 + 6 + 0.5);
    assert_end(fwd, 1, 2, 0.5, 0.5 + 3 + 0.5 + 6 + 0.5);
    assert_end(pre, 0, 0, 1, 9);
    assert_end(own, 0, 0, 1, 6 + 1);
    assert_end(keep, 1, 2, 1, 3 * 2 + 6 + 1);
    WalkClock c = walk(pre, 1, 2, 1);
    assert_int_equal(c.gathers, 2 * WU);
    assert_int_equal(c.scatters, WU);
    c = walk(keep, 1, 2, 1);
    assert_int_equal(c.gathers, WU);
    assert_int_equal(c.scatters, WU);
    /* BACKWARD_POST issues the next all-gather before this unit's reduce-scatter: between none
     * and pre where the backward's collectives are exposed */
    const double t_pre = walk(pre, 1, 2, 1).now, t_none = walk(none, 1, 2, 1).now;
    const double t_post = walk((FsdpSched){.backward = FSDP_PREFETCH_POST}, 1, 2, 1).now;
    assert_true(t_pre < t_post && t_post < t_none);
}

/* --fsdp-unit: the toy's layers of 300,000, 200,000 and 100,000 parameters grouped as
 * auto_wrap_policy would: one a layer, two layers a unit, closed at a size, or one a block. */
static void test_fsdp_units(void **state)
{
    (void)state;
    Workload *wl = toy_workload();
    int first[4];
    assert_int_equal(fsdp_units(wl, &(FsdpSched){0}, first), 3);
    assert_int_equal(first[1], 1);
    assert_int_equal(first[2], 2);
    assert_int_equal(fsdp_units(wl, &(FsdpSched){.unit_layers = 2}, first), 2);
    assert_int_equal(first[1], 2);
    assert_int_equal(first[2], 3);
    assert_int_equal(fsdp_units(wl, &(FsdpSched){.unit_layers = 9}, first), 1);
    assert_int_equal(fsdp_units(wl, &(FsdpSched){.unit_min_params = 350000}, first), 2);
    assert_int_equal(first[1], 2); /* 300k + 200k closes it; the last 100k its own */
    assert_int_equal(fsdp_units(wl, &(FsdpSched){.unit_min_params = 250000}, first), 2);
    assert_int_equal(first[1], 1); /* 300k; then 200k + 100k */
    /* one a block, as transformer_auto_wrap_policy: layers named PREFIX.K.* share unit K */
    assert_int_equal(fsdp_units(wl, &(FsdpSched){.unit_blocks = 1}, first), 3); /* no blocks */
    snprintf(wl->layers[0].name, sizeof wl->layers[0].name, "model.layers.0.attn");
    snprintf(wl->layers[1].name, sizeof wl->layers[1].name, "model.layers.0.mlp");
    snprintf(wl->layers[2].name, sizeof wl->layers[2].name, "lm_head");
    assert_int_equal(fsdp_units(wl, &(FsdpSched){.unit_blocks = 1}, first), 2);
    assert_int_equal(first[1], 2);
    snprintf(wl->layers[1].name, sizeof wl->layers[1].name, "model.layers.1.mlp");
    assert_int_equal(fsdp_units(wl, &(FsdpSched){.unit_blocks = 1}, first), 3);
    toy_free(wl);
}

/* The same bytes whatever the units (3 (N-1)/N of the model, each unit's shard a rank divides
 * here) or the reduce-scatters' communicator (at --price-workers 64 too), 2 (N-1)/N without
 * resharding after the forward; the same update as DDP. */
static void test_fsdp_units_move_the_same_bytes(void **state)
{
    (void)state;
    Workload *wl = toy_workload();
    const double M = 4.0 * (double)wl->n_params, n = P;
    Shared *ref = run_mode(SHARD_NONE, NULL, COLL_ANALYTIC, 0);
    const FsdpSched kinds[] = {
        {0},           {.unit_layers = 2}, {.unit_min_params = 350000}, {.keep_after_forward = 1},
        {.rs_own = 1}, {.rs_own = 1}};
    for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++) {
        const int pw = k == 5 ? 64 : 0;
        Shared *a = run_fsdp_priced(wl, kinds[k], 10e9 / 8, pw);
        const double N = pw ? pw : n;
        const double want = STEPS * (kinds[k].keep_after_forward ? 2 : 3) * (N - 1) / N * M;
        if (fabs(a->bytes - want) > 1e-9 * want)
            fail_msg("schedule %zu: %.0f bytes, the closed form %.0f", k, a->bytes, want);
        assert_same_dynamics(ref, a);
        release(a);
    }
    release(ref);
    toy_free(wl);
}

/* The issue's "done when": the reduce-scatters on their own communicator or on the
 * all-gathers' give different step times where the network is the bottleneck (0.1 Gbps: own
 * is faster, the all-gathers no longer queue behind them) and the same where it is not
 * (400 Gbps: every collective hides behind the compute but the first all-gather and the last
 * reduce-scatter, on an idle communicator either way). And prefetching in the backward is
 * faster than none where the collectives are exposed (1 Gbps). */
static void test_fsdp_comm_and_prefetch_step_times(void **state)
{
    (void)state;
    Workload *wl = toy_workload();
    const FsdpSched shared = {0}, own = {.rs_own = 1}, none = {.backward = FSDP_PREFETCH_NONE};
    Shared *a = run_fsdp(wl, shared, 0.1e9 / 8), *b = run_fsdp(wl, own, 0.1e9 / 8);
    if (!(b->sim_time_s < 0.95 * a->sim_time_s))
        fail_msg("network-bound: own %g s, shared %g s", b->sim_time_s, a->sim_time_s);
    release(a);
    release(b);
    a = run_fsdp(wl, shared, 400e9 / 8);
    b = run_fsdp(wl, own, 400e9 / 8);
    if (fabs(a->sim_time_s - b->sim_time_s) > 1e-9 * a->sim_time_s)
        fail_msg("compute-bound: own %.12g s, shared %.12g s", b->sim_time_s, a->sim_time_s);
    release(a);
    release(b);
    a = run_fsdp(wl, shared, 1e9 / 8);
    b = run_fsdp(wl, none, 1e9 / 8);
    if (!(a->sim_time_s < b->sim_time_s))
        fail_msg("BACKWARD_PRE %g s, none %g s", a->sim_time_s, b->sim_time_s);
    release(a);
    release(b);
    toy_free(wl);
}

/* Memory: the gathered units a GPU holds at once (fsdp_gathered_bytes), on Llama-2-7B: two of
 * its largest unit under FSDP's defaults (the one computing and the one BACKWARD_PRE
 * prefetched), one without a prefetch (none, post, or a limit of 1), two with forward prefetch,
 * the whole fp16 model without resharding after the forward; larger units hold more. */
static void test_fsdp_memory_counts_the_units_in_flight(void **state)
{
    (void)state;
    Workload *wl = NULL;
    BwError err;
    assert_int_equal(workload_load("llama-2-7b", "--workload", &wl, &err), BW_OK);
    const double two = fsdp_gathered_bytes(wl, &(FsdpSched){0});
    const double one = fsdp_gathered_bytes(wl, &(FsdpSched){.backward = FSDP_PREFETCH_NONE});
    assert_true(one > 0 && fabs(two - 2 * one) < 1e-9 * two);
    assert_true(fsdp_gathered_bytes(wl, &(FsdpSched){.backward = FSDP_PREFETCH_POST}) == one);
    assert_true(fsdp_gathered_bytes(wl, &(FsdpSched){.limit = 1}) == one);
    assert_true(
        fsdp_gathered_bytes(wl, &(FsdpSched){.backward = FSDP_PREFETCH_NONE, .forward = 1}) == two);
    assert_true(fsdp_gathered_bytes(wl, &(FsdpSched){.keep_after_forward = 1}) ==
                2.0 * (double)wl->n_params);
    assert_true(fsdp_gathered_bytes(wl, &(FsdpSched){.unit_layers = 4}) > two);
    RunConfig cfg = base_config(8, 4, 1);
    cfg.workload = wl;
    cfg.cluster.gpu = cluster_gpu_find("H100");
    cfg.fsdp.keep_after_forward = 1;
    cfg.cluster.precision = "bf16";
    ShardMemory m;
    assert_int_equal(driver_shard_memory(&cfg, SHARD_ZERO3, &m), 1);
    assert_true(m.gathered == 2.0 * (double)wl->n_params);
    cfg.cluster.precision = NULL; /* fp32: the whole fp32 model */
    assert_int_equal(driver_shard_memory(&cfg, SHARD_ZERO3, &m), 1);
    assert_true(m.gathered == 4.0 * (double)wl->n_params);
    workload_free(wl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_mode_trains_as_ddp),
        cmocka_unit_test(test_bytes_per_step_are_the_closed_forms),
        cmocka_unit_test(test_sharded_optimizer_is_cheaper),
        cmocka_unit_test(test_memory_per_gpu_and_the_7b_on_8_h100s),
        cmocka_unit_test(test_what_is_not_priced_is_refused),
        cmocka_unit_test(test_fsdp_walk_closed_forms),
        cmocka_unit_test(test_fsdp_units),
        cmocka_unit_test(test_fsdp_units_move_the_same_bytes),
        cmocka_unit_test(test_fsdp_comm_and_prefetch_step_times),
        cmocka_unit_test(test_fsdp_memory_counts_the_units_in_flight),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
