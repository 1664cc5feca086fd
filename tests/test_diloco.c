/* test_diloco.c: DiLoCo in simulated training on synthetic data (drivertest.h). Its outer step
 * on the real replicas: after H local steps from theta_0, theta = theta_0 - lr (1 + mu) delta,
 * delta = theta_0 - mean_i theta_i (one Nesterov step from a zero buffer), the mean being what
 * cpsgd's averaging gives after the same H steps; the outer exchange costs the same allreduce
 * as an averaging; AdamW runs as the inner optimizer; eager updates (arXiv 2502.12996) mix the
 * replica's own outer gradient with the last round's mean, their exchange overlapping the next
 * round; bad options are usage errors. */
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

/* Eager updates' outer step (sim/driver/outer_eager.c) against a naive reference: two rounds
 * of two replicas' known outer gradients, g1 = a / 2 (nothing from a round before), then
 * g2 = mean(round 1) + (b - a) / 2, each a Nesterov step (v = mu v + g; x -= lr (g + mu v)). */
static void test_eager_step_mixes_own_with_the_last_rounds_mean(void **state)
{
    (void)state;
    const double lr = 0.7, mu = 0.9;
    const float a[3] = {0.5f, -1.0f, 0.25f}, other[3] = {0.1f, 0.3f, -0.2f};
    const float b[3] = {-0.4f, 0.2f, 0.6f}, x0[3] = {1.0f, 2.0f, -3.0f};
    float mean1[3], x[3], own_prev[3] = {0}, zero[3] = {0}, g[3];
    for (int i = 0; i < 3; i++) mean1[i] = 0.5f * (a[i] + other[i]), x[i] = x0[i];
    Sgd opt;
    assert_int_equal(sgd_init(&opt, 3, (SgdConfig){.momentum = mu, .nesterov = 1}, NULL), BW_OK);
    outer_eager_step(&opt, x, own_prev, zero, a, 2, lr, g);
    outer_eager_step(&opt, x, own_prev, mean1, b, 2, lr, g);
    for (int i = 0; i < 3; i++) {
        double g1 = a[i] / 2.0, v = g1, want = x0[i] - lr * (g1 + mu * v);
        double g2 = (double)mean1[i] + (b[i] - a[i]) / 2.0;
        v = mu * v + g2;
        want -= lr * (g2 + mu * v);
        if (fabs(x[i] - want) > 1e-6 || own_prev[i] != b[i])
            fail_msg("[%d] %.9g, naive %.9g", i, x[i], want);
    }
    sgd_free(&opt);
}

/* Eager updates on 2 islands of one GPU, H = 4, 16 steps of C seconds: each round's exchange
 * (dense, E the closed form of the ring of two over NIC, WAN, NIC) is waited for a round later,
 * max(0, E - 4 C), and the last one at the end, E; DiLoCo blocks: 16 C + 4 E. The replicas
 * diverge and are averaged, to another trajectory than DiLoCo's, and learn. */
static Shared *eager_run(int eager, double gpu_flops)
{
    RunConfig cfg = base_config(2, 16, 1);
    cfg.cluster.topology = TOPO_ISLANDS;
    cfg.cluster.islands = 2;
    cfg.cluster.wan_latency_s = 2e-3;
    cfg.cluster.wan_bandwidth_Bps = 1.25e9;
    BwError err;
    assert_int_equal(cluster_resolve(&cfg.cluster, &err), BW_OK);
    cfg.cluster.gpu_flops = gpu_flops; /* after the GPU's profile */
    cfg.policy = eager ? "diloco:H=4,eager=1" : "diloco:H=4";
    Shared *sh = simulate(cfg);
    if (sh->rc != BW_OK) fail_msg("eager=%d: %s", eager, sh->message);
    assert_int_equal(sh->averagings, 4);
    return sh;
}

static void test_eager_exchange_overlaps_the_next_round(void **state)
{
    (void)state;
    RunConfig cfg = base_config(2, 16, 1);
    Model *m = NULL;
    assert_int_equal(model_create(cfg.model, &cfg.mc, cfg.tc.seed, &m, NULL), BW_OK);
    const double chunk = 4.0 * ceil((double)m->n_params / 2);
    model_free(m);
    const double E =
        2 * (2e-3 + 2 * cfg.cluster.latency_s + chunk / fmin(1.25e9, cfg.cluster.bandwidth_Bps));
    /* 4 C about 3.3 ms, E about 4 ms: 0.8 ms remain (test_islands' overlap reaches 0 too) */
    Shared *b = eager_run(0, 2e9), *e = eager_run(1, 2e9);
    const double C = b->compute_s / 16;
    assert_float_equal(b->sim_time_s, b->compute_s + 4 * E, 1e-9);
    assert_float_equal(e->compute_s, b->compute_s, 1e-12);
    const double want = e->compute_s + 3 * fmax(0, E - 4 * C) + E;
    if (fabs(e->sim_time_s - want) > 1e-9)
        fail_msg("C %g, E %g: %.12g s, closed form %.12g", C, E, e->sim_time_s, want);
    assert_float_equal(e->wan_bytes, b->wan_bytes, 0); /* the same exchanges */
    assert_true(memcmp(e->params, b->params, sizeof e->params) != 0);
    for (long s = 0; s + 1 < e->n_steps; s++)
        if (e->step_averaged[s]) assert_true(e->step_variance[s] > 0);
    assert_true(e->final_acc > 0.2);
    release(b);
    release(e);
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
                         "streaming-diloco:h=8,tau=8",
                         "diloco:eager=2",
                         "diloco:eager=1"}; /* a star, uncosted: nothing to overlap on */
    const char *key[] = {
        "h=0", "outer_lr=0", "outer_momentum=1", "fragments=5", "bits=17", "bits=0",
        "h=0", "tau=8",      "eager=2",          "eager=1"};
    RunConfig cfg = base_config(2, 16, 1); /* an mlp of 4 layers */
    for (int i = 0; i < 10; i++) {
        BwError err = {{0}};
        cfg.policy = bad[i];
        assert_int_equal(driver_check(&cfg, &err), BW_EUSAGE);
        if (!strstr(err.msg, "--policy") || !strstr(err.msg, key[i])) fail_msg("%s", err.msg);
    }
}

int main(int argc, char **argv)
{
    blas_cpu_fix_kernels(argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_outer_step_on_the_replicas_mean),
        cmocka_unit_test(test_diloco_rounds_with_adamw_inside),
        cmocka_unit_test(test_eager_step_mixes_own_with_the_last_rounds_mean),
        cmocka_unit_test(test_eager_exchange_overlaps_the_next_round),
        cmocka_unit_test(test_bad_diloco_options_are_usage_errors),
    };
    if (argc > 1) cmocka_set_test_filter(argv[1]); /* run one test alone */
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    dataset_free(&TRAIN);
    dataset_free(&TEST);
    return rc;
}
