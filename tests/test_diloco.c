/* test_diloco.c: DiLoCo in simulated training on synthetic data (drivertest.h). Its outer step
 * on the real replicas: after H local steps from theta_0, theta = theta_0 - lr (1 + mu) delta,
 * delta = theta_0 - mean_i theta_i (one Nesterov step from a zero buffer), the mean being what
 * cpsgd's averaging gives after the same H steps; the outer exchange costs the same allreduce
 * as an averaging; AdamW runs as the inner optimizer; bad options are usage errors. */
#include "testutil.h"

#include "blas_cpu.h"

#include "drivertest.h"

/* One round: 4 workers x 32 samples, 4 steps (one epoch of 512), H = 4. */
static void test_one_outer_step_on_the_replicas_mean(void **state)
{
    (void)state;
    RunConfig cfg = base_config(4, 32, 1);
    cfg.policy = "cpsgd:period=4";
    Shared *avg = simulate(cfg);
    cfg.policy = "diloco:H=4,outer_lr=0.7,outer_momentum=0.9";
    Shared *dl = simulate(cfg);
    assert_int_equal(avg->rc, BW_OK);
    assert_int_equal(dl->rc, BW_OK);
    assert_int_equal(dl->n_steps, 4);
    assert_int_equal(dl->averagings, 1);
    assert_float_equal(dl->bytes, avg->bytes, 0); /* the same allreduce of the parameters */
    Model *m0 = NULL;
    assert_int_equal(model_create(cfg.model, &cfg.mc, cfg.tc.seed, &m0, NULL), BW_OK);
    double worst = 0, moved = 0;
    for (size_t i = 0; i < m0->n_params; i++) {
        double delta = (double)m0->params[i] - avg->params[i];
        double want = m0->params[i] - 0.7 * (1 + 0.9) * delta;
        worst = fmax(worst, fabs(dl->params[i] - want));
        moved = fmax(moved, fabs(delta));
    }
    assert_true(moved > 1e-3); /* the replicas trained: a real outer gradient */
    if (worst > 1e-6) fail_msg("outer step off by %g", worst);
    model_free(m0);
    release(avg);
    release(dl);
}

/* Several rounds: H steps between outer steps, the replicas' variance measured at each, and a
 * trajectory of its own (not local SGD's), with SGD or AdamW inside. */
static void test_diloco_rounds_with_adamw_inside(void **state)
{
    (void)state;
    RunConfig cfg = base_config(4, 8, 1); /* 16 steps */
    cfg.policy = "diloco:H=4";
    Shared *sgd = simulate(cfg);
    cfg.tc.sgd = (SgdConfig){.kind = OPT_ADAMW, .weight_decay = 0.01};
    cfg.tc.lr.base_lr = 1e-3;
    Shared *adam = simulate(cfg);
    assert_int_equal(sgd->rc, BW_OK);
    assert_int_equal(adam->rc, BW_OK);
    for (long s = 0; s < adam->n_steps; s++) {
        assert_int_equal(adam->step_averaged[s], (s + 1) % 4 == 0);
        if (adam->step_averaged[s] && s + 1 < adam->n_steps)
            assert_true(adam->step_variance[s] > 0); /* the replicas diverged */
    }
    assert_int_equal(adam->averagings, 4);
    assert_true(memcmp(sgd->params, adam->params, sizeof sgd->params) != 0);
    assert_true(adam->final_acc > 0.2); /* it learns (10 classes: chance is 0.1) */
    release(sgd);
    release(adam);
}

static void test_bad_diloco_options_are_usage_errors(void **state)
{
    (void)state;
    const char *bad[] = {"diloco:H=0",
                         "diloco:outer_lr=0",
                         "diloco:outer_momentum=1",
                         "streaming-diloco:fragments=5",
                         "streaming-diloco:bits=17",
                         "streaming-diloco:bits=0",
                         "streaming-diloco:H=0",
                         "streaming-diloco:h=8,tau=8"};
    const char *key[] = {"h=0",         "outer_lr=0", "outer_momentum=1",
                         "fragments=5", "bits=17",    "bits=0",
                         "h=0",         "tau=8"};
    RunConfig cfg = base_config(2, 16, 1); /* an mlp of 4 layers */
    for (int i = 0; i < 8; i++) {
        BwError err = {{0}};
        cfg.policy = bad[i];
        assert_int_equal(driver_check(&cfg, &err), BW_EUSAGE);
        if (!strstr(err.msg, "--policy") || !strstr(err.msg, key[i])) fail_msg("%s", err.msg);
    }
}

int main(int argc, char **argv)
{
    (void)argc;
    blas_cpu_fix_kernels(argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_outer_step_on_the_replicas_mean),
        cmocka_unit_test(test_diloco_rounds_with_adamw_inside),
        cmocka_unit_test(test_bad_diloco_options_are_usage_errors),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    dataset_free(&TRAIN);
    dataset_free(&TEST);
    return rc;
}
