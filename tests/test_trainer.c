/* test_trainer.c: the reference trainer on synthetic data: every model learns (loss falls,
 * accuracy rises well above chance), the same seed gives bit-identical parameters, divergence
 * and an oversized batch are reported. */
#include "testutil.h"

#include "blas_cpu.h"

#include "trainer.h"

typedef struct {
    EpochStats first, last;
    int epochs;
} Seen;

static int remember(const EpochStats *s, void *ctx)
{
    Seen *seen = ctx;
    if (seen->epochs++ == 0) seen->first = *s;
    seen->last = *s;
    return 0;
}

static Dataset TRAIN, TEST;

static int setup(void **state)
{
    (void)state;
    /* 8x8 images, 4 classes, noisy enough that one epoch does not solve it; the last 256 of
     * 768 samples are held out as the test set */
    assert_int_equal(dataset_synthetic(&TRAIN, 768, 8, 8, 4, 1.5, 1, NULL), BW_OK);
    TEST = TRAIN;
    TEST.n = 256;
    TEST.x = malloc(sizeof(float) * 256 * 64);
    TEST.y = malloc(256);
    memcpy(TEST.x, TRAIN.x + 512 * 64, sizeof(float) * 256 * 64);
    memcpy(TEST.y, TRAIN.y + 512, 256);
    TRAIN.n = 512;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    dataset_free(&TRAIN);
    dataset_free(&TEST);
    return 0;
}

/* 8x8 inputs, 4 classes; mlp 64-32-4, cnn 4 and 8 channels, resnet stages of 4 and 8. */
static ModelConfig small(const ModelOps *ops)
{
    ModelConfig c = model_config_default();
    c.in_rows = c.in_cols = 8;
    c.classes = 4;
    if (model_option_index(ops, "hidden") >= 0)
        model_config_set(&c, ops, "hidden", 1, (const int[]){32});
    if (model_option_index(ops, "channels") >= 0)
        model_config_set(&c, ops, "channels", 2, (const int[]){4, 8});
    if (model_option_index(ops, "widths") >= 0)
        model_config_set(&c, ops, "widths", 2, (const int[]){4, 8});
    return c;
}

static TrainConfig config(void)
{
    TrainConfig t = {.epochs = 4, .batch = 16, .seed = 3};
    t.sgd = (SgdConfig){.momentum = 0.9};
    t.lr = (LrSchedule){.kind = LR_CONSTANT, .base_lr = 0.03};
    return t;
}

static void test_every_model_learns(void **state)
{
    (void)state;
    for (const ModelOps *const *r = model_registry(); *r; r++) {
        ModelConfig mc = small(*r);
        Model *m;
        assert_int_equal(model_create(*r, &mc, 1, &m, NULL), BW_OK);
        TrainConfig tc = config();
        Seen seen = {0};
        TrainHooks hooks = {.on_epoch = remember, .ctx = &seen};
        BwError err;
        assert_int_equal(train_single(m, &TRAIN, &TEST, &tc, &hooks, &err), BW_OK);
        print_message("%-8s train loss %.3f -> %.3f, test accuracy %.3f -> %.3f\n", (*r)->name,
                      seen.first.train_loss, seen.last.train_loss, seen.first.test_accuracy,
                      seen.last.test_accuracy);
        assert_int_equal(seen.epochs, 4);
        assert_int_equal(seen.last.step, 4 * (512 / 16));
        assert_true(seen.last.train_loss < 0.7 * seen.first.train_loss);
        assert_true(seen.last.test_accuracy > 0.8); /* chance is 0.25 */
        model_free(m);
    }
}

static void test_same_seed_gives_identical_parameters(void **state)
{
    (void)state;
    ModelConfig mc = small(model_find("cnn"));
    Model *a, *b;
    assert_int_equal(model_create(model_find("cnn"), &mc, 2, &a, NULL), BW_OK);
    assert_int_equal(model_create(model_find("cnn"), &mc, 2, &b, NULL), BW_OK);
    TrainConfig tc = config();
    tc.epochs = 1;
    assert_int_equal(train_single(a, &TRAIN, &TEST, &tc, NULL, NULL), BW_OK);
    assert_int_equal(train_single(b, &TRAIN, &TEST, &tc, NULL, NULL), BW_OK);
    assert_memory_equal(a->params, b->params, a->n_params * sizeof(float));
    model_free(a), model_free(b);
}

static void test_divergence_is_a_runtime_error(void **state)
{
    (void)state;
    ModelConfig mc = small(model_find("mlp"));
    Model *m;
    assert_int_equal(model_create(model_find("mlp"), &mc, 1, &m, NULL), BW_OK);
    TrainConfig tc = config();
    tc.lr.base_lr = 1e6;
    BwError err;
    assert_int_equal(train_single(m, &TRAIN, &TEST, &tc, NULL, &err), BW_ERUNTIME);
    assert_non_null(strstr(err.msg, "diverged"));
    model_free(m);
}

static void test_batch_larger_than_data_is_usage_error(void **state)
{
    (void)state;
    ModelConfig mc = small(model_find("softmax"));
    Model *m;
    assert_int_equal(model_create(model_find("softmax"), &mc, 1, &m, NULL), BW_OK);
    TrainConfig tc = config();
    tc.batch = 513;
    BwError err;
    assert_int_equal(train_single(m, &TRAIN, &TEST, &tc, NULL, &err), BW_EUSAGE);
    assert_non_null(strstr(err.msg, "--batch"));
    model_free(m);
}

int main(int argc, char **argv)
{
    (void)argc;
    blas_cpu_fix_kernels(argv); /* the kernels bellows itself uses */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_model_learns),
        cmocka_unit_test(test_same_seed_gives_identical_parameters),
        cmocka_unit_test(test_divergence_is_a_runtime_error),
        cmocka_unit_test(test_batch_larger_than_data_is_usage_error),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
