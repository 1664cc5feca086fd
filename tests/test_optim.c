/* test_optim.c: SGD against the update rule written out in double (torch.optim.SGD's), and the
 * learning-rate schedules at their defining points. */
#include "testutil.h"

#include "optim.h"

/* Runs `steps` updates of SGD and of the reference rule on the same gradients. */
static void check_sgd(SgdConfig cfg)
{
    enum { N = 6, STEPS = 5 };
    float p[N], g[N];
    double rp[N], rv[N] = {0};
    fill_uniform(p, N, -1, 1, 71);
    for (int i = 0; i < N; i++) rp[i] = p[i];
    Sgd opt;
    assert_int_equal(sgd_init(&opt, N, cfg, NULL), BW_OK);
    const double lr = 0.1;
    for (int s = 0; s < STEPS; s++) {
        fill_uniform(g, N, -1, 1, 80 + (uint64_t)s);
        sgd_step(&opt, p, g, lr);
        for (int i = 0; i < N; i++) {
            double d = g[i] + cfg.weight_decay * rp[i];
            if (cfg.momentum != 0) {
                rv[i] = cfg.momentum * rv[i] + d;
                d = cfg.nesterov ? d + cfg.momentum * rv[i] : rv[i];
            }
            rp[i] -= lr * d;
        }
    }
    for (int i = 0; i < N; i++) assert_true(fabs(p[i] - rp[i]) < 1e-6);
    sgd_free(&opt);
    sgd_free(&opt);
}

static void test_sgd_plain(void **state)
{
    (void)state;
    check_sgd((SgdConfig){0});
}
static void test_sgd_momentum_and_weight_decay(void **state)
{
    (void)state;
    check_sgd((SgdConfig){.momentum = 0.9, .weight_decay = 5e-4});
}
static void test_sgd_nesterov(void **state)
{
    (void)state;
    check_sgd((SgdConfig){.momentum = 0.9, .weight_decay = 1e-4, .nesterov = 1});
}

/* AdamW against torch.optim.AdamW's rule written out in double (torch/optim/adamw.py,
 * _single_tensor_adamw): decoupled decay, both moments, bias correction at step t; in ranges,
 * as a shared replica updates, after one sgd_tick per step. */
static void test_adamw_against_the_rule_in_double(void **state)
{
    (void)state;
    enum { N = 7, STEPS = 30 };
    const double lr = 0.01, wd = 0.05, b1 = 0.9, b2 = 0.999, eps = 1e-8;
    float p[N], g[N];
    double rp[N], rm[N] = {0}, rv[N] = {0};
    fill_uniform(p, N, -1, 1, 72);
    for (int i = 0; i < N; i++) rp[i] = p[i];
    Sgd opt;
    assert_int_equal(sgd_init(&opt, N, (SgdConfig){.weight_decay = wd, .kind = OPT_ADAMW}, NULL),
                     BW_OK);
    for (int s = 1; s <= STEPS; s++) {
        fill_uniform(g, N, -1, 1, 180 + (uint64_t)s);
        if (s % 2) {
            sgd_step(&opt, p, g, lr);
        } else {
            sgd_tick(&opt);
            sgd_step_range(&opt, p, g, lr, 0, 3);
            sgd_step_range(&opt, p, g, lr, 3, N);
        }
        for (int i = 0; i < N; i++) {
            rp[i] *= 1 - lr * wd;
            rm[i] = b1 * rm[i] + (1 - b1) * g[i];
            rv[i] = b2 * rv[i] + (1 - b2) * g[i] * g[i];
            double denom = sqrt(rv[i]) / sqrt(1 - pow(b2, s)) + eps;
            rp[i] -= lr / (1 - pow(b1, s)) * rm[i] / denom;
        }
    }
    assert_int_equal(opt.t, STEPS);
    for (int i = 0; i < N; i++) assert_true(fabs(p[i] - rp[i]) < 1e-6);
    double flops, bytes;
    sgd_cost(1000, &opt.cfg, &flops, &bytes);
    assert_float_equal(flops, 14000, 0);
    assert_float_equal(bytes, 28000, 0);
    sgd_free(&opt);
    sgd_free(&opt);
}

/* DiLoCo's outer step against a naive reference: two replicas with known parameters, the
 * outer gradient delta = theta_g - (theta_1 + theta_2) / 2, then torch.optim.SGD's Nesterov
 * step (buf = delta at the first step; theta_g -= lr (delta + mu buf)), twice, to 1e-7. */
static void test_outer_nesterov_step_two_replicas(void **state)
{
    (void)state;
    enum { N = 3 };
    const double lr = 0.7, mu = 0.9;
    float g[N] = {1.0f, -2.0f, 0.5f}, th1[N] = {0.5f, -1.0f, 0.25f}, th2[N] = {1.5f, -2.5f, 1.0f};
    float sum[N], delta[N];
    double rg[N], rbuf[N] = {0};
    for (int i = 0; i < N; i++) rg[i] = g[i];
    Sgd outer;
    assert_int_equal(sgd_init(&outer, N, (SgdConfig){.momentum = mu, .nesterov = 1}, NULL), BW_OK);
    for (int k = 0; k < 2; k++) {
        for (int i = 0; i < N; i++) sum[i] = th1[i] + th2[i];
        outer_step(&outer, g, sum, 2, delta, lr);
        for (int i = 0; i < N; i++) {
            double d = rg[i] - ((double)th1[i] + th2[i]) / 2;
            assert_true(fabs(delta[i] - d) < 1e-7);
            rbuf[i] = mu * rbuf[i] + d;
            rg[i] -= lr * (d + mu * rbuf[i]);
            assert_true(fabs(g[i] - rg[i]) < 1e-7);
        }
        if (k == 0) { /* by hand: delta = (0, -0.25, -0.125); theta_g -= 0.7 x 1.9 delta */
            assert_true(fabs(g[0] - 1.0) < 1e-7);
            assert_true(fabs(g[1] - -1.6675) < 1e-7);
            assert_true(fabs(g[2] - 0.66625) < 1e-7);
        }
        for (int i = 0; i < N; i++) th1[i] = g[i] - 0.25f, th2[i] = g[i] + 0.125f * (float)i;
    }
    sgd_free(&outer);
}

/* Streaming DiLoCo's quantiser: 2 bits are -step, 0, step with step = max|x|; 1 bit the sign
 * times the mean magnitude; 32 bits change nothing; the floats sent per fragment. */
static void test_outer_quantise(void **state)
{
    (void)state;
    float x[4] = {0.9f, -0.2f, 0.7f, -1.2f};
    outer_quantise(x, 4, 2);
    const float two[4] = {1.2f, 0.0f, 1.2f, -1.2f};
    for (int i = 0; i < 4; i++) assert_float_equal(x[i], two[i], 1e-7);
    float y[4] = {0.9f, -0.2f, 0.7f, -1.2f};
    outer_quantise(y, 4, 1);
    for (int i = 0; i < 4; i++) assert_float_equal(fabs(y[i]), 0.75, 1e-7);
    assert_true(y[1] < 0 && y[0] > 0);
    float z[4] = {0.9f, -0.2f, 0.7f, -1.2f};
    outer_quantise(z, 4, 4); /* 7 levels a side, step 1.2 / 7: -0.2 is 1.17 steps, so -1 */
    assert_float_equal(z[1], -1.2 / 7, 1e-7);
    assert_float_equal(z[0], 5 * 1.2 / 7, 1e-7); /* 0.9 is 5.25 steps */
    outer_quantise(z, 4, 32);
    assert_float_equal(z[3], -1.2, 1e-7);
    assert_int_equal(outer_quantised_floats(100, 4), 14); /* 400 bits: 13 words, and a scale */
    assert_int_equal(outer_quantised_floats(100, 32), 100);
}

/* The optimiser's cost by hand, per parameter: p -= lr g is 2 flops and 12 bytes (p and grad
 * read, p written); weight decay adds 2 flops; momentum 2 flops and 8 bytes (v read and
 * written); Nesterov 2 more flops. */
static void test_sgd_cost_by_hand(void **state)
{
    (void)state;
    double flops, bytes;
    sgd_cost(1000, &(SgdConfig){0}, &flops, &bytes);
    assert_float_equal(flops, 2000, 0);
    assert_float_equal(bytes, 12000, 0);
    sgd_cost(1000, &(SgdConfig){.weight_decay = 5e-4}, &flops, &bytes);
    assert_float_equal(flops, 4000, 0);
    assert_float_equal(bytes, 12000, 0);
    sgd_cost(1000, &(SgdConfig){.momentum = 0.9, .weight_decay = 5e-4}, &flops, &bytes);
    assert_float_equal(flops, 6000, 0);
    assert_float_equal(bytes, 20000, 0);
    sgd_cost(1000, &(SgdConfig){.momentum = 0.9}, &flops, &bytes);
    assert_float_equal(flops, 4000, 0);
    assert_float_equal(bytes, 20000, 0);
    sgd_cost(1000, &(SgdConfig){.momentum = 0.9, .weight_decay = 1e-4, .nesterov = 1}, &flops,
             &bytes);
    assert_float_equal(flops, 8000, 0);
    assert_float_equal(bytes, 20000, 0);
    /* ResNet-50's 25,557,032 parameters with momentum and weight decay: 511 MB of traffic */
    sgd_cost(25557032, &(SgdConfig){.momentum = 0.9, .weight_decay = 1e-4}, &flops, &bytes);
    assert_float_equal(bytes, 511140640.0, 0);
    sgd_cost(0, &(SgdConfig){.momentum = 0.9}, &flops, &bytes);
    assert_float_equal(flops + bytes, 0, 0);
}

static void test_lr_constant_and_step(void **state)
{
    (void)state;
    LrSchedule s = {.kind = LR_CONSTANT, .base_lr = 0.1};
    assert_float_equal(lr_at(&s, 0, 100), 0.1, 1e-15);
    assert_float_equal(lr_at(&s, 57.3, 100), 0.1, 1e-15);
    s = (LrSchedule){.kind = LR_STEP,
                     .base_lr = 0.1,
                     .decay_factor = 0.1,
                     .n_milestones = 2,
                     .milestones = {30, 60}};
    assert_float_equal(lr_at(&s, 29.99, 100), 0.1, 1e-15);
    assert_float_equal(lr_at(&s, 30.0, 100), 0.01, 1e-15);
    assert_float_equal(lr_at(&s, 59.5, 100), 0.01, 1e-15);
    assert_float_equal(lr_at(&s, 60.0, 100), 0.001, 1e-15);
}

static void test_lr_cosine_endpoints(void **state)
{
    (void)state;
    LrSchedule s = {.kind = LR_COSINE, .base_lr = 0.2, .total_epochs = 10};
    assert_float_equal(lr_at(&s, 0, 10), 0.2, 1e-12);
    assert_float_equal(lr_at(&s, 5, 10), 0.1, 1e-12);
    assert_float_equal(lr_at(&s, 10, 10), 0.0, 1e-12);
}

static void test_lr_warmup_ramps_per_step(void **state)
{
    (void)state;
    /* 2 warm-up epochs of 50 steps: step k uses (k+1)/100 of the rate, then the schedule */
    LrSchedule s = {.kind = LR_CONSTANT, .base_lr = 1.0, .warmup_epochs = 2};
    assert_float_equal(lr_at(&s, 0.0, 50), 0.01, 1e-12);
    assert_float_equal(lr_at(&s, 1.0, 50), 0.51, 1e-12);
    assert_float_equal(lr_at(&s, 99.0 / 50, 50), 1.0, 1e-12);
    assert_float_equal(lr_at(&s, 2.0, 50), 1.0, 1e-12);
    /* cosine after warm-up starts from the full rate */
    s.kind = LR_COSINE;
    s.total_epochs = 12;
    assert_float_equal(lr_at(&s, 2.0, 50), 1.0, 1e-12);
    assert_float_equal(lr_at(&s, 7.0, 50), 0.5, 1e-12);
}

/* The Accordion authors' rate, transcribed from uw-mad-dash/Accordion main.py:218-233 (get_lr,
 * the CIFAR "CNN" config: init_lr 0.1, warmup_epochs 5) and main.py:327,594 (epoch 0 runs at
 * init_lr; each later epoch at get_lr of the previous epoch's index). */
static double accordion_epoch_lr(int epoch, int workers)
{
    if (epoch == 0) return 0.1;
    int epoch_num = epoch - 1;
    double factor = 1.0 + (workers - 1.0) * fmin(epoch_num / 5.0, 1.0);
    if (epoch_num <= 150) return 0.1 * factor;
    if (epoch_num <= 250) return 0.1 / 10.0 * factor;
    return 0.1 / 100.0 * factor;
}

static void test_lr_epoch_warmup_to_workers_x_lr_is_the_accordion_code_s(void **state)
{
    (void)state;
    /* --lr 0.1 --lr-scale workers (4) --warmup-epochs 5 --warmup-shape epoch --lr-schedule step
     * --lr-decay-epochs 152,252 --lr-decay-factor 0.1: every step of the 300 epochs */
    LrSchedule s = {.kind = LR_STEP,
                    .base_lr = 0.1,
                    .warmup_epochs = 5,
                    .warmup_shape = WARMUP_EPOCH,
                    .peak_scale = 4,
                    .decay_factor = 0.1,
                    .n_milestones = 2,
                    .milestones = {152, 252}};
    for (int e = 0; e < 300; e++)
        for (int k = 0; k < 10; k += 3)
            assert_float_equal(lr_at(&s, e + k / 10.0, 10), accordion_epoch_lr(e, 4),
                               1e-12 * accordion_epoch_lr(e, 4));
    /* by hand: epochs 0 and 1 at 0.1, then +0.06 an epoch to 0.4 at epoch 6 */
    assert_float_equal(lr_at(&s, 1.9, 10), 0.1, 1e-15);
    assert_float_equal(lr_at(&s, 2.0, 10), 0.16, 1e-15);
    assert_float_equal(lr_at(&s, 5.5, 10), 0.34, 1e-15);
    assert_float_equal(lr_at(&s, 6.0, 10), 0.4, 1e-15);
    assert_float_equal(lr_at(&s, 151.9, 10), 0.4, 1e-15);
    assert_float_equal(lr_at(&s, 152.0, 10), 0.04, 1e-15);
    /* one worker: no warm-up at all, as the code's factor 1 + 0 */
    s.peak_scale = 1;
    assert_float_equal(lr_at(&s, 0.0, 10), 0.1, 1e-15);
    assert_float_equal(lr_at(&s, 3.0, 10), 0.1, 1e-15);
}

static void test_lr_step_warmup_to_workers_x_lr_is_goyal_s(void **state)
{
    (void)state;
    /* Goyal et al.: from lr to k lr linearly per step: 2 epochs of 50 steps, k = 4, so step j
     * runs at 0.1 (1 + 3 j / 100) */
    LrSchedule s = {.kind = LR_CONSTANT, .base_lr = 0.1, .warmup_epochs = 2, .peak_scale = 4};
    assert_float_equal(lr_at(&s, 0.0, 50), 0.1, 1e-15);
    assert_float_equal(lr_at(&s, 1.0, 50), 0.25, 1e-15);
    assert_float_equal(lr_at(&s, 99.0 / 50, 50), 0.1 * (1 + 3 * 0.99), 1e-15);
    assert_float_equal(lr_at(&s, 2.0, 50), 0.4, 1e-15);
    assert_float_equal(lr_at(&s, 9.0, 50), 0.4, 1e-15);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sgd_plain),
        cmocka_unit_test(test_sgd_momentum_and_weight_decay),
        cmocka_unit_test(test_sgd_nesterov),
        cmocka_unit_test(test_sgd_cost_by_hand),
        cmocka_unit_test(test_adamw_against_the_rule_in_double),
        cmocka_unit_test(test_outer_nesterov_step_two_replicas),
        cmocka_unit_test(test_outer_quantise),
        cmocka_unit_test(test_lr_constant_and_step),
        cmocka_unit_test(test_lr_cosine_endpoints),
        cmocka_unit_test(test_lr_warmup_ramps_per_step),
        cmocka_unit_test(test_lr_epoch_warmup_to_workers_x_lr_is_the_accordion_code_s),
        cmocka_unit_test(test_lr_step_warmup_to_workers_x_lr_is_goyal_s),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
