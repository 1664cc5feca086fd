/* test_sched.c: scheduled steps (--schedule, --overlap layer; sim/driver/sched_*.c) end to end,
 * each run in a forked child (one SimGrid engine per process). On a three-layer toy profile whose
 * communication is slower than its compute, the step times of every built-in schedule equal the
 * schedule worked out by hand below to 1e-9: which partition goes when (priority, partitions,
 * credit), when each layer's gradients are reduced, and the next step's forward waiting for each
 * layer's update (cross-step overlap). Then the properties: with the communication hidden no
 * schedule shortens the step and tiny partitions lengthen it (bytedance/byteps#339); a schedule
 * changes the prices, never the dynamics. */
#include "testutil.h"

#include "drivertest.h"
#include "optim.h"

/* The scheduled runs' cluster: 4 workers of the softmax on a 1 Gbps star, so the toy's
 * communication is its bottleneck, the analytic collectives. */
static RunConfig sched_config(void)
{
    RunConfig cfg = base_config(4, 8, 1); /* 16 steps */
    cfg.model = model_find("softmax");
    cfg.mc = model_config_default();
    cfg.cluster.bandwidth_Bps = 1e9 / 8;
    BwError err;
    assert_int_equal(cluster_resolve(&cfg.cluster, &err), BW_OK);
    cfg.backend = COLL_ANALYTIC;
    return cfg;
}

/* simulate(), which must succeed. */
static Shared *run_ok(RunConfig cfg)
{
    Shared *sh = simulate(cfg);
    if (sh->rc != BW_OK) fail_msg("run failed: %s", sh->message);
    return sh;
}

/* The toy's times on the cluster of sched_config: each layer's forward, backward and update, and
 * a ring allreduce of n bytes on the analytic backend. */
typedef struct {
    double fwd[3], bwd[3], opt[3], F, B, a, b;
} Toy;

static Toy toy_times(const RunConfig *cfg, const Workload *wl)
{
    Toy t;
    const double rate = cfg->cluster.gpu_flops, b = 8;
    t.F = t.B = 0;
    for (int l = 0; l < 3; l++) {
        t.fwd[l] = wl->layers[l].fwd_flops * b / rate;
        t.bwd[l] = wl->layers[l].bwd_flops * b / rate;
        double flops, bytes;
        sgd_cost(wl->tensors[l].numel, &cfg->tc.sgd, &flops, &bytes);
        t.opt[l] = fmax(flops / rate, bytes / cfg->cluster.gpu_mem_Bps);
        t.F += t.fwd[l];
        t.B += t.bwd[l];
    }
    t.a = 2 * cfg->cluster.latency_s;
    t.b = 1 / cfg->cluster.bandwidth_Bps;
    return t;
}

static double ring(const Toy *t, double bytes)
{
    const double P = 4;
    return 2 * (P - 1) * t->a + 2 * (P - 1) / P * bytes * t->b;
}

/* Steps 0, 1 and 2 end where the hand-computed schedule says: step 0 after its forward and
 * backward, then every step `period` later (the same schedule each step). */
static void expect_steps(const Shared *sh, double end0, double period, const char *what)
{
    const double want[3] = {end0, end0 + period, end0 + 2 * period};
    for (int k = 0; k < 3; k++)
        if (fabs(sh->step_end[k] - want[k]) > 1e-9 * want[k])
            fail_msg("%s: step %d ends at %.12g s, by hand %.12g s", what, k, sh->step_end[k],
                     want[k]);
}

/* fifo, layer-wise: DDP's buckets, {layer 2, layer 1} (1.2 MB, full after layer 1's backward)
 * and {layer 0}; the second queues behind the first. The next forward waits for layer 0's
 * update, when the second bucket is done: its wait, then update 0, forward 0, update 1,
 * forward 1, update 2, forward 2 (layers 1 and 2 were done long before). */
static void test_fifo_layerwise_is_the_hand_computed_schedule(void **state)
{
    (void)state;
    Workload *wl = toy_workload();
    RunConfig cfg = sched_config();
    cfg.workload = wl;
    cfg.overlap = OVERLAP_LAYER;
    cfg.schedule = "fifo";
    Shared *sh = run_ok(cfg);
    const Toy t = toy_times(&cfg, wl);
    const double ready1 = t.F + t.bwd[2] + t.bwd[1], end0 = t.F + t.B;
    const double layer0_done = ready1 + 2 * ring(&t, 1.2e6);
    const double end1 = layer0_done + t.opt[0] + t.opt[1] + t.opt[2] + t.F + t.B;
    expect_steps(sh, end0, end1 - end0, "fifo, --overlap layer");
    release(sh);
    toy_free(wl);
}

/* bytescheduler, partitions of 0.4 MB (one for layer 2, two for layer 1, three for layer 0),
 * credit 1: layer 2's partition goes when its backward ends; layer 1's first when it is done;
 * layer 0 is ready while it runs, and its three overtake layer 1's second (priority by layer):
 * layer 0 is reduced after 5 partitions, layer 1 after 6. */
static void test_bytescheduler_preempts_at_partition_boundaries(void **state)
{
    (void)state;
    Workload *wl = toy_workload();
    RunConfig cfg = sched_config();
    cfg.workload = wl;
    cfg.overlap = OVERLAP_LAYER;
    const char *specs[] = {"bytescheduler:partition=400000,credit=1", "p3:slice=400000"};
    const Toy t = toy_times(&cfg, wl);
    const double R = ring(&t, 0.4e6), ready2 = t.F + t.bwd[2];
    assert_true(ready2 + t.bwd[1] + t.bwd[0] < ready2 + 2 * R); /* layer 0 ready in time */
    for (int k = 0; k < 2; k++) {
        cfg.schedule = specs[k];
        Shared *sh = run_ok(cfg);
        const double layer0 = ready2 + 5 * R, layer1 = ready2 + 6 * R;
        const double fwd1 = fmax(layer0 + t.opt[0] + t.fwd[0], layer1);
        const double end1 = fwd1 + t.opt[1] + t.fwd[1] + t.opt[2] + t.fwd[2] + t.B;
        expect_steps(sh, t.F + t.B, end1 - (t.F + t.B), specs[k]);
        release(sh);
    }
    toy_free(wl);
}

/* A credit of 2 partitions lets layer 1's second partition go before layer 0 is ready; then
 * layer 0's wait behind it: reduced after 6 partitions, not 5 (credit costs priority). */
static void test_a_larger_credit_loses_priority(void **state)
{
    (void)state;
    Workload *wl = toy_workload();
    RunConfig cfg = sched_config();
    cfg.workload = wl;
    cfg.overlap = OVERLAP_LAYER;
    cfg.schedule = "bytescheduler:partition=400000,credit=2";
    const Toy t = toy_times(&cfg, wl);
    const double R = ring(&t, 0.4e6), ready2 = t.F + t.bwd[2];
    assert_true(ready2 + R < ready2 + t.bwd[1] + t.bwd[0]); /* layer 1's 2nd goes first */
    Shared *sh = run_ok(cfg);
    const double layer0 = ready2 + 6 * R;
    const double end1 = layer0 + t.opt[0] + t.opt[1] + t.opt[2] + t.F + t.B;
    expect_steps(sh, t.F + t.B, end1 - (t.F + t.B), "bytescheduler, credit=2");
    release(sh);
    toy_free(wl);
}

/* tictac: whole tensors one at a time in the order the forward needs them; layer 1's 0.8 MB has
 * started when layer 0 is ready, and is not overtaken. */
static void test_tictac_sends_whole_tensors_in_forward_order(void **state)
{
    (void)state;
    Workload *wl = toy_workload();
    RunConfig cfg = sched_config();
    cfg.workload = wl;
    cfg.overlap = OVERLAP_LAYER;
    cfg.schedule = "tictac";
    const Toy t = toy_times(&cfg, wl);
    const double ready2 = t.F + t.bwd[2];
    Shared *sh = run_ok(cfg);
    const double layer0 = ready2 + ring(&t, 0.4e6) + ring(&t, 0.8e6) + ring(&t, 1.2e6);
    const double end1 = layer0 + t.opt[0] + t.opt[1] + t.opt[2] + t.F + t.B;
    expect_steps(sh, t.F + t.B, end1 - (t.F + t.B), "tictac");
    release(sh);
    toy_free(wl);
}

/* --overlap ddp: the same partitions and order, but the optimiser waits for all of them and the
 * next step for the optimiser; a step is its compute, layer 1's last partition and the update. */
static void test_a_schedule_under_ddp_overlap_waits_for_every_partition(void **state)
{
    (void)state;
    Workload *wl = toy_workload();
    RunConfig cfg = sched_config();
    cfg.workload = wl;
    cfg.overlap = OVERLAP_DDP;
    cfg.schedule = "bytescheduler:partition=400000,credit=1";
    const Toy t = toy_times(&cfg, wl);
    Shared *sh = run_ok(cfg);
    const double step = t.F + t.bwd[2] + 6 * ring(&t, 0.4e6) + t.opt[0] + t.opt[1] + t.opt[2];
    expect_steps(sh, step, step, "bytescheduler, --overlap ddp");
    release(sh);
    toy_free(wl);
}

/* The steady step (steps 1 to 2) of cfg with schedule spec and overlap. */
static double period_of(RunConfig cfg, const char *spec, Overlap overlap)
{
    /* 4 steps, not 16: step 2's period is all it reads, and no later step moves it (a run is
     * causal); 1 KB partitions made the 16 steps 37 s under valgrind */
    static Dataset four_steps;
    four_steps = *cfg.train;
    four_steps.n = 4 * cfg.cluster.workers * cfg.tc.batch;
    cfg.train = &four_steps;
    cfg.schedule = spec;
    cfg.overlap = overlap;
    Shared *sh = run_ok(cfg);
    const double p = sh->step_end[2] - sh->step_end[1];
    release(sh);
    return p;
}

/* At 100 Gbps the toy's communication hides behind its backward but for layer 0's, which only
 * its update waits for: no schedule makes the step shorter than DDP's (compute, layer 0's
 * allreduce, the update), and partitions of 1 KB, each a collective of its own with its
 * latencies, make it longer (bytedance/byteps#339: slower than a plain ring when communication
 * is hidden). */
static void test_hidden_communication_no_schedule_shortens_tiny_partitions_lengthen(void **state)
{
    (void)state;
    Workload *wl = toy_workload();
    RunConfig cfg = sched_config();
    cfg.workload = wl;
    cfg.cluster.bandwidth_Bps = 100e9 / 8;
    const Toy t = toy_times(&cfg, wl);
    const double ddp = period_of(cfg, "fifo", OVERLAP_DDP);
    const double hidden = t.F + t.B + t.opt[0] + t.opt[1] + t.opt[2];
    assert_true(ddp < 1.02 * hidden); /* compute-bound: within 2% of the compute alone */
    const char *specs[] = {"fifo", "bytescheduler", "p3", "tictac"};
    for (int k = 0; k < 4; k++)
        for (int layer = 0; layer <= 1; layer++) {
            if (k == 0 && !layer) continue; /* fifo under ddp is the baseline itself */
            const double p = period_of(cfg, specs[k], layer ? OVERLAP_LAYER : OVERLAP_DDP);
            if (p < ddp * (1 - 1e-9))
                fail_msg("%s (%s): a step of %.9g s, shorter than DDP's %.9g s", specs[k],
                         layer ? "layer" : "ddp", p, ddp);
        }
    const double tiny = period_of(cfg, "bytescheduler:partition=1024", OVERLAP_LAYER);
    if (!(tiny > 1.5 * ddp)) fail_msg("1 KB partitions: a step of %.9g s, DDP's %.9g s", tiny, ddp);
    toy_free(wl);
}

/* A schedule changes when gradients move, not what they are: the same losses and final model
 * as DDP's, bit for bit (both reduce the real gradients on the same zero-time communicator). */
static void test_a_schedule_changes_the_prices_not_the_dynamics(void **state)
{
    (void)state;
    Workload *wl = toy_workload();
    RunConfig cfg = sched_config();
    cfg.workload = wl;
    cfg.overlap = OVERLAP_DDP;
    Shared *a = run_ok(cfg);
    cfg.overlap = OVERLAP_LAYER;
    cfg.schedule = "bytescheduler:partition=100000,credit=3";
    Shared *b = run_ok(cfg);
    assert_int_equal(a->n_steps, b->n_steps);
    assert_memory_equal(a->step_loss, b->step_loss, sizeof a->step_loss);
    assert_memory_equal(a->params, b->params, sizeof a->params);
    assert_true(b->sim_time_s != a->sim_time_s); /* and the price did change */
    release(a);
    release(b);
    toy_free(wl);
}

/* Layer-wise, step t's update lands during step t+1's forward (its last layer's update), and an
 * evaluation after step t is stamped then, not when step t's backward ended: with fifo on the
 * toy, at step t+1's end less its last forward and its backward. A run that stops at the target
 * drains its last partitions first (the books add up, driver_run asserts it). */
static void test_layerwise_evaluations_wait_for_the_update(void **state)
{
    (void)state;
    Workload *wl = toy_workload();
    RunConfig cfg = sched_config();
    cfg.workload = wl;
    cfg.overlap = OVERLAP_LAYER;
    cfg.schedule = "fifo";
    cfg.eval_every = 4;
    const Toy t = toy_times(&cfg, wl);
    Shared *sh = run_ok(cfg);
    assert_true(sh->n_evals >= 3);
    for (int k = 1; k < 3; k++) {
        const long step = 4L * k - 1; /* evaluated after step 3, 7 */
        const double want = sh->step_end[step + 1] - t.fwd[2] - t.B;
        if (fabs(sh->eval_time[k] - want) > 1e-9 * want)
            fail_msg("evaluation %d: at %.12g s, expected %.12g s", k, sh->eval_time[k], want);
    }
    release(sh);
    cfg.target_accuracy = 1e-9; /* reached at the first evaluation after a step */
    cfg.stop_at_target = 1;
    sh = run_ok(cfg);
    assert_true(sh->n_steps == 4 && isfinite(sh->tta));
    assert_true(sh->tta == sh->eval_time[1] && sh->sim_time_s >= sh->tta);
    release(sh);
    toy_free(wl);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fifo_layerwise_is_the_hand_computed_schedule),
        cmocka_unit_test(test_bytescheduler_preempts_at_partition_boundaries),
        cmocka_unit_test(test_a_larger_credit_loses_priority),
        cmocka_unit_test(test_tictac_sends_whole_tensors_in_forward_order),
        cmocka_unit_test(test_a_schedule_under_ddp_overlap_waits_for_every_partition),
        cmocka_unit_test(test_hidden_communication_no_schedule_shortens_tiny_partitions_lengthen),
        cmocka_unit_test(test_a_schedule_changes_the_prices_not_the_dynamics),
        cmocka_unit_test(test_layerwise_evaluations_wait_for_the_update),
    };
    if (argc > 1) cmocka_set_test_filter(argv[1]); /* run one test alone */
    return cmocka_run_group_tests(tests, NULL, NULL);
}
