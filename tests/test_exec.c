/* test_exec.c: the step executor (sim/driver/exec_impl.h). Fifo can price a step two ways: DDP's
 * streams (exec_ddp, cost.c; --schedule fifo) and the scheduled engine (exec_sched, sched_*.c;
 * any schedule that is not fifo by name, here a plug-in that keeps the pre-filled fifo decision).
 * Under the ideal profile the two give the same step times bit for bit; under a profile with a
 * fixed cost per collective call they differ (the engine's dispatcher pays a partition's launch
 * while the one before it runs, cost.c before each message), so neither is a duplicate of the
 * other and both stay. Each run in a forked child (one SimGrid engine per process). */
#include "testutil.h"

#include "costs.h"
#include <gsl/gsl_integration.h>
#include <gsl/gsl_cdf.h>
#include <gsl/gsl_randist.h>
#include "drivertest.h"

/* 4 workers of the softmax on a 1 Gbps star under the toy profile and DDP's overlap, 16 steps;
 * schedule: fifo by name (exec_ddp) or the fifo plug-in (exec_sched). */
static Shared *run_fifo_cv(const Workload *wl, const CostProfile *prof, const char *schedule,
                           double cv)
{
    RunConfig cfg = base_config(4, 8, 1);
    cfg.straggler_cv = cv;
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

static Shared *run_fifo(const Workload *wl, const CostProfile *prof, const char *schedule)
{
    return run_fifo_cv(wl, prof, schedule, 0);
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

/* Stragglers (driver_straggler_max): the mean of the inverse-CDF sample over u in (0, 1) is the
 * expected maximum of n normal draws. n = 2: 1 + cv / sqrt(pi) (the closed form); larger n: the
 * integral of x n phi(x) Phi(x)^(n-1) over the line, computed by GSL apart from the sampler. */
typedef struct {
    double cv, n;
} StragglerArgs;

static double straggler_at(double u, void *p)
{
    const StragglerArgs *a = p;
    return driver_straggler_max(a->cv, a->n, u);
}

static double max_density_moment(double x, void *p)
{
    const double n = *(const double *)p;
    return x * n * gsl_ran_ugaussian_pdf(x) * pow(gsl_cdf_ugaussian_P(x), n - 1);
}

static double integrate_sampler(double cv, double n)
{
    StragglerArgs a = {cv, n};
    gsl_function f = {straggler_at, &a};
    gsl_integration_workspace *ws = gsl_integration_workspace_alloc(1000);
    double v, e;
    assert_int_equal(gsl_integration_qags(&f, 0, 1, 1e-12, 1e-10, 1000, ws, &v, &e), 0);
    gsl_integration_workspace_free(ws);
    return v;
}

static void test_straggler_expected_maximum(void **state)
{
    (void)state;
    const double cv = 0.2; /* below zero under 1e-13 of the time: the clamp does not show */
    assert_float_equal(integrate_sampler(cv, 2), 1 + cv / sqrt(M_PI), 1e-8);
    const double ns[] = {8, 64, 65536};
    for (int i = 0; i < 3; i++) {
        double n = ns[i], v, e;
        gsl_function f = {max_density_moment, &n};
        gsl_integration_workspace *ws = gsl_integration_workspace_alloc(1000);
        assert_int_equal(gsl_integration_qagi(&f, 1e-12, 1e-10, 1000, ws, &v, &e), 0);
        gsl_integration_workspace_free(ws);
        assert_float_equal(integrate_sampler(cv, n), 1 + cv * v, 1e-7);
    }
    assert_true(driver_straggler_max(5, 2, 1e-9) == 0); /* clamped at zero */
    /* the run's seeded draws (one per step, the seed and the step alone) have that mean: 4,000
     * steps of 8 workers, within 4 standard errors (the maximum of 8 has sd 0.586 cv) */
    RunConfig cfg = base_config(8, 8, 1);
    cfg.straggler_cv = 0.3;
    double sum = 0;
    for (long s = 0; s < 4000; s++) sum += driver_straggler_factor(&cfg, s);
    assert_float_equal(sum / 4000, integrate_sampler(0.3, 8), 4 * 0.586 * 0.3 / sqrt(4000));
    cfg.straggler_cv = 0;
    assert_true(driver_straggler_factor(&cfg, 7) == 1.0);
}

/* A run with stragglers: every worker's compute books the same seconds (the slowest's extra is
 * waiting), the wait and the run grow, under DDP's streams and the scheduled engine alike. */
static void test_straggler_extra_is_waiting(void **state)
{
    (void)state;
    Workload *wl = toy_workload();
    const char *scheds[2] = {"fifo", PLUGIN_FIFO};
    for (int i = 0; i < 2; i++) {
        Shared *a = run_fifo_cv(wl, costs_ideal(), scheds[i], 0);
        Shared *b = run_fifo_cv(wl, costs_ideal(), scheds[i], 0.3);
        assert_float_equal(b->compute_s, a->compute_s, 1e-9 * a->compute_s);
        assert_true(b->wait_s > a->wait_s + 0.1 * a->compute_s);
        assert_true(b->sim_time_s > a->sim_time_s);
        assert_memory_equal(a->params, b->params, sizeof a->params); /* a price, not dynamics */
        release(a);
        release(b);
    }
    toy_free(wl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fifo_on_the_engine_is_ddp_streams_under_the_ideal_profile),
        cmocka_unit_test(test_fifo_on_the_engine_is_not_ddp_streams_under_a_fixed_call_cost),
        cmocka_unit_test(test_straggler_expected_maximum),
        cmocka_unit_test(test_straggler_extra_is_waiting),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
