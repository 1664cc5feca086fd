/* test_exec.c: the step executor (sim/driver/exec_impl.h). Fifo can price a step two ways: DDP's
 * streams (exec_ddp, cost.c; --schedule fifo) and the scheduled engine (exec_sched, sched_*.c;
 * any schedule that is not fifo by name, here a plug-in that keeps the pre-filled fifo decision).
 * Under the ideal profile the two give the same step times bit for bit; under a profile with a
 * fixed cost per collective call they differ (the engine's dispatcher pays a partition's launch
 * while the one before it runs, cost.c before each message), so neither is a duplicate of the
 * other and both stay. Each run in a forked child (one SimGrid engine per process). */
#include "testutil.h"

#include "costs.h"
#include "drivertest.h"

/* 4 workers of the softmax on a 1 Gbps star under the toy profile and DDP's overlap, 16 steps;
 * schedule: fifo by name (exec_ddp) or the fifo plug-in (exec_sched). */
static Shared *run_fifo(const Workload *wl, const CostProfile *prof, const char *schedule)
{
    RunConfig cfg = base_config(4, 8, 1);
    cfg.model = model_find("softmax");
    cfg.mc = model_config_default();
    cfg.cluster.bandwidth_Bps = 1e9 / 8;
    BwError err;
    assert_int_equal(cluster_resolve(&cfg.cluster, &err), BW_OK);
    cfg.backend = COLL_ANALYTIC;
    cfg.workload = wl;
    cfg.overlap = OVERLAP_DDP;
    cfg.costs = prof;
    cfg.schedule = schedule;
    Shared *sh = simulate(cfg);
    if (sh->rc != BW_OK) fail_msg("run failed (%s): %s", schedule, sh->message);
    return sh;
}

static void test_fifo_on_the_engine_is_ddp_streams_under_the_ideal_profile(void **state)
{
    (void)state;
    Workload *wl = toy_workload();
    Shared *a = run_fifo(wl, costs_ideal(), "fifo");
    Shared *b = run_fifo(wl, costs_ideal(), PLUGIN_FIFO);
    assert_int_equal(a->n_steps, b->n_steps);
    assert_true(a->n_steps > 1);
    assert_memory_equal(a->step_end, b->step_end, sizeof a->step_end);
    assert_memory_equal(&a->comm_s, &b->comm_s, sizeof a->comm_s);
    assert_memory_equal(&a->wait_s, &b->wait_s, sizeof a->wait_s);
    assert_memory_equal(a->params, b->params, sizeof a->params);
    release(a);
    release(b);
    toy_free(wl);
}

static void test_fifo_on_the_engine_is_not_ddp_streams_under_a_fixed_call_cost(void **state)
{
    (void)state;
    Workload *wl = toy_workload();
    CostProfile *prof = NULL;
    BwError err;
    assert_int_equal(costs_load("pytorch-v100", "--costs", "V100", &prof, &err), BW_OK);
    assert_true(prof->collective_s > 0);
    Shared *a = run_fifo(wl, prof, "fifo");
    Shared *b = run_fifo(wl, prof, PLUGIN_FIFO);
    assert_int_equal(a->n_steps, b->n_steps);
    assert_memory_equal(a->params, b->params, sizeof a->params); /* the same dynamics */
    assert_true(b->sim_time_s < a->sim_time_s);                  /* a launch hidden a step */
    assert_true(a->sim_time_s - b->sim_time_s < 0.01 * a->sim_time_s);
    release(a);
    release(b);
    costs_free(prof);
    toy_free(wl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fifo_on_the_engine_is_ddp_streams_under_the_ideal_profile),
        cmocka_unit_test(test_fifo_on_the_engine_is_not_ddp_streams_under_a_fixed_call_cost),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
