/* test_driver_policies.c: the policies in simulated training end to end, on synthetic data
 * (drivertest.h: one simulation per forked child). Checked: periodic averaging happens every
 * period steps with the variance measured, and --average-momentum doubles what it moves; ADPSGD
 * lengthens its period on cpsgd's budget and at an lr decay; Accordion's batch mode changes the
 * batch at epoch starts, and paper=1 runs as its options one by one; bad policy specs are usage
 * errors. The training itself: test_driver.c. */
#include "testutil.h"

#include "blas_cpu.h"

#include "drivertest.h"

static void test_cpsgd_averages_every_period_steps_and_measures_variance(void **state)
{
    (void)state;
    RunConfig cfg = base_config(4, 8, 1);
    cfg.policy = "cpsgd:period=4";
    Shared *sh = simulate(cfg);
    assert_int_equal(sh->rc, BW_OK);
    assert_int_equal(sh->n_steps, 16);
    long count = 0;
    for (long s = 0; s < sh->n_steps; s++) {
        assert_int_equal(sh->step_averaged[s], (s + 1) % 4 == 0);
        count += sh->step_averaged[s];
        /* the variance of an averaging is filled in at the next step (not after the last) */
        if (sh->step_averaged[s] && s + 1 < sh->n_steps) assert_true(sh->step_variance[s] > 0);
    }
    assert_int_equal(sh->averagings, count);
    release(sh);
}

/* --average-momentum: the momentum buffers ride in the averaging's allreduce, which moves twice
 * the bytes and changes the dynamics; a gradient-mode policy ignores it (its buffers are equal). */
static void test_average_momentum_doubles_the_averaging(void **state)
{
    (void)state;
    RunConfig cfg = base_config(4, 8, 1);
    cfg.policy = "cpsgd:period=4";
    Shared *a = simulate(cfg);
    cfg.average_momentum = 1;
    Shared *b = simulate(cfg);
    assert_int_equal(a->rc, BW_OK);
    assert_int_equal(b->rc, BW_OK);
    assert_int_equal(b->averagings, a->averagings);
    assert_float_equal(b->bytes, 2 * a->bytes, 1e-9 * a->bytes);
    assert_true(b->comm_s > a->comm_s);
    assert_true(memcmp(a->params, b->params, sizeof a->params) != 0);
    release(a);
    release(b);
    cfg = base_config(4, 8, 1);
    a = simulate(cfg);
    cfg.average_momentum = 1;
    b = simulate(cfg);
    assert_float_equal(b->bytes, a->bytes, 0);
    assert_memory_equal(a->params, b->params, sizeof a->params);
    release(a);
    release(b);
}

/* The mean period over steps [lo, hi). */
static double mean_period(const Shared *sh, long lo, long hi)
{
    double sum = 0;
    for (long s = lo; s < hi; s++) sum += sh->step_period[s];
    return sum / (double)(hi - lo);
}

/* ADPSGD under a constant lr, on data the mlp learns by heart (the gradients' disagreement, so
 * the parameter variance, falls as the loss does): the period lengthens, and the run averages as
 * often as cpsgd with the same period (equal bytes). 400 steps. */
static void test_adpsgd_lengthens_its_period_on_cpsgd_s_budget(void **state)
{
    (void)state;
    /* end-to-end properties, slow under valgrind (scripts/valgrind.sh); their code paths'
     * memory is checked there by the shorter tests, and here under ASan */
    if (getenv("BELLOWS_VALGRIND")) skip();
    RunConfig cfg = base_config(4, 16, 50); /* 512 samples / 64 = 8 steps an epoch */
    cfg.eval_every = 400;
    cfg.tc.lr.base_lr = 0.003;
    cfg.policy = "adpsgd:period=4";
    Shared *ad = simulate(cfg);
    cfg.policy = "cpsgd:period=4";
    Shared *cp = simulate(cfg);
    assert_int_equal(ad->rc, BW_OK);
    assert_int_equal(cp->rc, BW_OK);
    const long T = ad->n_steps;
    assert_int_equal(T, 400);
    assert_int_equal(cp->averagings, 100);
    const double first = mean_period(ad, 0, T / 10), last = mean_period(ad, T - T / 3, T);
    printf("adpsgd: %ld averagings (cpsgd %ld), mean period %.2f over the first tenth, %.2f over "
           "the last third\n",
           ad->averagings, cp->averagings, first, last);
    assert_true(fabs((double)ad->averagings - (double)cp->averagings) <= 0.1 * cp->averagings);
    assert_true(last >= 2 * first);
    release(ad);
    release(cp);
}

/* ADPSGD across a 10x lr decay: the variance falls ~100x (it goes as lr^2), so the period
 * lengthens ~100^(1/(g+1)) = 6.3x (g = 1.5, policies/adpsgd.c), on cpsgd's budget. */
static void test_adpsgd_lengthens_its_period_at_an_lr_decay(void **state)
{
    (void)state;
    /* end-to-end properties, slow under valgrind (scripts/valgrind.sh); their code paths'
     * memory is checked there by the shorter tests, and here under ASan */
    if (getenv("BELLOWS_VALGRIND")) skip();
    RunConfig cfg = base_config(4, 16, 20); /* 160 steps, the decay at step 80 */
    cfg.eval_every = 160;
    cfg.tc.lr.base_lr = 0.003;
    cfg.tc.lr.kind = LR_STEP;
    cfg.tc.lr.decay_factor = 0.1;
    cfg.tc.lr.n_milestones = 1;
    cfg.tc.lr.milestones[0] = 10;
    cfg.policy = "adpsgd:period=4";
    Shared *ad = simulate(cfg);
    assert_int_equal(ad->rc, BW_OK);
    assert_int_equal(ad->n_steps, 160);
    const double before = mean_period(ad, 40, 80), after = mean_period(ad, 100, 140);
    printf("adpsgd: %ld averagings (cpsgd 40), mean period %.2f before the decay, %.2f after\n",
           ad->averagings, before, after);
    assert_true(fabs((double)ad->averagings - 40) <= 4);
    assert_true(after >= 3.5 * before && after <= 12 * before);
    release(ad);
}

/* Accordion's batch mode with interval=1 and an eta no change reaches: epoch 0 is critical
 * (small batch, 16 global: 32 steps of 8 per worker over the 256 samples each holds), the check
 * at its end has no reference and keeps it critical (32 more steps), the check after epoch 1
 * finds the change below eta and turns normal: epochs 2 and 3 at the large batch (64 global,
 * 8 steps each). The learning rate follows the batch linearly. */
static void test_accordion_batch_mode_changes_the_batch_at_epoch_starts(void **state)
{
    (void)state;
    RunConfig cfg = base_config(2, 8, 4);
    cfg.policy = "accordion:mode=batch,interval=1,critical=16,normal=64,eta=1000000";
    Shared *sh = simulate(cfg);
    assert_int_equal(sh->rc, BW_OK);
    assert_string_equal(sh->status, "completed");
    assert_int_equal(sh->n_steps, 32 + 32 + 8 + 8);
    for (long s = 0; s < sh->n_steps; s++) assert_int_equal(sh->step_batch[s], s < 64 ? 16 : 64);
    for (long s = 0; s < sh->n_steps; s++)
        assert_true(fabs(sh->step_lr[s] - (s < 64 ? 0.05 : 0.2)) < 1e-12);
    release(sh);
}

/* The Accordion authors' run on 4 epochs (accordion.c's paper=1 scales their 300): their TopK
 * wire, one collective per tensor after the backward, lr x 2 workers warmed up per epoch over
 * round(5 x 4 / 300) -> 1 epoch, decays at round(152 x 4 / 300) = 2 and round(252 x 4 / 300) =
 * 3. accordion:paper=1 must run exactly as its options set one by one: the same decisions, the
 * same bytes, the same times and the same final model. */
static void test_accordion_paper_runs_as_its_options_one_by_one(void **state)
{
    (void)state;
    /* end-to-end properties, slow under valgrind (scripts/valgrind.sh); their code paths'
     * memory is checked there by the shorter tests, and here under ASan */
    if (getenv("BELLOWS_VALGRIND")) skip();
    RunConfig cfg = base_config(2, 16, 4);
    cfg.compressor = "topk:ef=0,divide=0,index=int64,count=trunc";
    cfg.overlap = OVERLAP_TENSOR;
    cfg.backend = COLL_ANALYTIC;
    cfg.tc.lr = (LrSchedule){.kind = LR_STEP,
                             .base_lr = 0.02,
                             .warmup_epochs = 1,
                             .warmup_shape = WARMUP_EPOCH,
                             .peak_scale = 2,
                             .scale_by_workers = 1,
                             .decay_factor = 0.1,
                             .n_milestones = 2,
                             .milestones = {2, 3}};
    BwError err = {{0}};
    cfg.policy = "accordion:paper=1";
    assert_int_equal(driver_check(&cfg, &err), BW_OK);
    Shared *a = simulate(cfg);
    cfg.policy = "accordion:decider=rank0,interval=1,eta=0.5";
    Shared *b = simulate(cfg);
    assert_int_equal(a->rc, BW_OK);
    assert_int_equal(b->rc, BW_OK);
    assert_int_equal(a->n_steps, 4 * 16);
    assert_int_equal(a->n_steps, b->n_steps);
    int critical = 0;
    for (long s = 0; s < a->n_steps; s++) {
        assert_true(a->step_level[s] == b->step_level[s]);
        assert_true(a->step_bytes[s] == b->step_bytes[s]);
        assert_true(a->step_end[s] == b->step_end[s]);
        assert_true(a->step_lr[s] == b->step_lr[s]);
        critical += a->step_level[s] == 0.99;
    }
    assert_true(critical > 0); /* epoch 0 at least, and the decays */
    assert_true(a->bytes == b->bytes && a->sim_time_s == b->sim_time_s);
    assert_memory_equal(a->params, b->params, sizeof a->params);
    /* the rate: 0.02 for epochs 0 and 1, x 2 workers from epoch 2, then the decays at 2 and 3 */
    assert_true(fabs(a->step_lr[0] - 0.02) < 1e-15 && fabs(a->step_lr[31] - 0.02) < 1e-15);
    assert_true(fabs(a->step_lr[32] - 0.004) < 1e-15 && fabs(a->step_lr[48] - 0.0004) < 1e-15);
    release(a);
    release(b);
    /* without the authors' settings, paper=1 is a usage error naming what to add */
    cfg.policy = "accordion:paper=1";
    cfg.overlap = OVERLAP_NONE;
    cfg.compressor = "topk";
    assert_int_equal(driver_check(&cfg, &err), BW_EUSAGE);
    if (!strstr(err.msg, "add: --compressor topk:ef=0,divide=0,index=int64,count=trunc "
                         "--overlap tensor"))
        fail_msg("%s", err.msg);
}

static void test_bad_policy_specs_are_usage_errors(void **state)
{
    (void)state;
    BwError err;
    RunConfig cfg = base_config(2, 16, 1);
    const char *bad[] = {"nosuch", "static:level=0.5", "cpsgd:period=0", "sync:x=1"};
    cfg.compressor = "powersgd";
    for (int i = 0; i < 4; i++) {
        cfg.policy = bad[i];
        err.msg[0] = 0;
        assert_int_equal(driver_check(&cfg, &err), BW_EUSAGE);
        assert_true(strstr(err.msg, "--policy") != NULL);
    }
    cfg.policy = "sync";
    cfg.compressor = "topk:nosuch=1";
    assert_int_equal(driver_check(&cfg, &err), BW_EUSAGE);
    cfg.compressor = "none";
    cfg.tc.batch = 1000; /* more than the 256 samples each of 2 workers has */
    assert_int_equal(driver_check(&cfg, &err), BW_EUSAGE);
    assert_true(strstr(err.msg, "--batch") != NULL);
}

int main(int argc, char **argv)
{
    blas_cpu_fix_kernels(argv); /* the kernels bellows itself uses */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cpsgd_averages_every_period_steps_and_measures_variance),
        cmocka_unit_test(test_average_momentum_doubles_the_averaging),
        cmocka_unit_test(test_adpsgd_lengthens_its_period_on_cpsgd_s_budget),
        cmocka_unit_test(test_adpsgd_lengthens_its_period_at_an_lr_decay),
        cmocka_unit_test(test_accordion_batch_mode_changes_the_batch_at_epoch_starts),
        cmocka_unit_test(test_accordion_paper_runs_as_its_options_one_by_one),
        cmocka_unit_test(test_bad_policy_specs_are_usage_errors),
    };
    if (argc > 1) cmocka_set_test_filter(argv[1]); /* run one test alone */
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    dataset_free(&TRAIN);
    dataset_free(&TEST);
    return rc;
}
