/* test_models.c: one table-driven suite over every registered model: layer tables, seeded
 * initialisation, flop counts, and the whole model's gradient against central finite
 * differences of its loss. ReLU and max pooling have kinks; a parameter whose perturbation
 * crosses one shows up as disagreeing one-sided differences and is left out of the comparison
 * (and the test fails if more than 3% are). */
#include "testutil.h"

#include "grad_norms.h"
#include "layers.h"
#include "model.h"

/* Sets ops's option called name, if ops has it. */
static void set_option(ModelConfig *c, const ModelOps *ops, const char *name, int n, const int *v)
{
    if (model_option_index(ops, name) >= 0) model_config_set(c, ops, name, n, v);
}

/* Tiny shapes so every parameter can be perturbed: 8x8 inputs, 4 classes; mlp 64-7-5-4, cnn 3
 * and 4 channels, resnet stages of 2 and 3 channels (8 -> 4 -> 4 -> 2 pixels: an identity and a
 * projection shortcut). */
static ModelConfig tiny_config(const char *name)
{
    const ModelOps *ops = model_find(name);
    ModelConfig c = model_config_default();
    c.in_rows = 8;
    c.in_cols = 8;
    c.classes = 4;
    set_option(&c, ops, "hidden", 2, (const int[]){7, 5});
    set_option(&c, ops, "channels", 2, (const int[]){3, 4});
    set_option(&c, ops, "kernel", 1, (const int[]){3});
    set_option(&c, ops, "widths", 2, (const int[]){2, 3});
    set_option(&c, ops, "blocks", 1, (const int[]){1});
    return c;
}

static Model *make(const char *name, ModelConfig c, unsigned long seed)
{
    Model *m = NULL;
    BwError err;
    assert_int_equal(model_create(model_find(name), &c, seed, &m, &err), BW_OK);
    return m;
}

static const char *const NAMES[] = {"softmax", "mlp", "cnn", "resnet"};
#define N_NAMES 4

static void test_every_registered_model_is_tested(void **state)
{
    (void)state;
    int n = 0;
    for (const ModelOps *const *r = model_registry(); *r; r++, n++) {
        int found = 0;
        for (int i = 0; i < N_NAMES; i++) found |= strcmp(NAMES[i], (*r)->name) == 0;
        assert_true(found);
    }
    assert_int_equal(n, N_NAMES);
    assert_null(model_find("resnet18"));
}

static void test_layer_tables_tile_the_buffer(void **state)
{
    (void)state;
    for (int i = 0; i < N_NAMES; i++) {
        Model *m = make(NAMES[i], model_config_default(), 1);
        size_t at = 0;
        int matrix = -1; /* the last matrix so far */
        for (int l = 0; l < m->n_layers; l++) {
            const LayerView *v = &m->layers[l];
            assert_int_equal(v->offset, at);
            at += layer_size(v);
            if (v->ndim == 1) {
                assert_int_equal(v->cols, 1);
                /* a bias (or batch norm's gamma and beta) follows its weight and has one entry
                 * per output row */
                assert_true(matrix >= 0 && l - matrix <= 2);
                assert_int_equal(v->rows, m->layers[matrix].rows);
            } else {
                matrix = l;
                assert_true(v->rows > 0 && v->cols > 0);
            }
        }
        assert_int_equal(at, m->n_params);
        model_free(m);
    }
}

/* No cap on the layers: a layer table of 300 entries (the table grows as layers are added)
 * tiles its buffer in order and keeps every shape and name. */
static void test_a_layer_table_takes_any_number_of_layers(void **state)
{
    (void)state;
    enum { N = 300 };
    LayerView *in = calloc(N, sizeof *in);
    assert_non_null(in);
    for (int l = 0; l < N; l++) {
        snprintf(in[l].name, sizeof in[l].name, "t%d", l);
        in[l].rows = 1 + l % 5;
        in[l].cols = l % 2 ? 1 : 3 + l % 4;
        in[l].ndim = l % 2 ? 1 : 2;
    }
    Model *m = NULL;
    BwError err;
    assert_int_equal(model_create_from_layers(in, N, 10.0, 1, &m, &err), BW_OK);
    assert_int_equal(m->n_layers, N);
    size_t at = 0;
    for (int l = 0; l < N; l++) {
        assert_string_equal(m->layers[l].name, in[l].name);
        assert_int_equal(m->layers[l].offset, at);
        assert_int_equal(m->layers[l].rows, in[l].rows);
        assert_int_equal(m->layers[l].cols, in[l].cols);
        at += layer_size(&in[l]);
    }
    assert_int_equal(m->n_params, at);
    model_free(m);
    free(in);
}

/* The per-layer gradient norms and running sum Accordion reads: the fast pass (several blocks'
 * chains at once) has its naive twin's bits, norms and sums, over layers of every size around
 * the block and the group of blocks, of gradients spanning many magnitudes. */
static void test_gradient_norms_equal_their_naive_twin(void **state)
{
    (void)state;
    const int sizes[] = {1, 3, 1023, 1024, 1025, 4096, 16 * 1024, 16 * 1024 + 5, 40000, 70001};
    enum { N = sizeof sizes / sizeof *sizes };
    LayerView in[N];
    memset(in, 0, sizeof in);
    for (int l = 0; l < N; l++) {
        snprintf(in[l].name, sizeof in[l].name, "t%d", l);
        in[l].rows = sizes[l];
        in[l].cols = 1;
        in[l].ndim = 1;
    }
    Model *m = NULL;
    BwError err;
    assert_int_equal(model_create_from_layers(in, N, 10.0, 1, &m, &err), BW_OK);
    TestRng r = {7};
    for (size_t i = 0; i < m->n_params; i++) /* magnitudes from 1e-6 to 1e2 */
        m->grads[i] = (float)((trng_uniform(&r) - 0.5) * pow(10, -6 + 8 * trng_uniform(&r)));
    float *fast = malloc(sizeof(float) * m->n_params), *naive = malloc(sizeof(float) * m->n_params);
    for (size_t i = 0; i < m->n_params; i++) fast[i] = naive[i] = (float)trng_uniform(&r);
    double nf[N], nn[N];
    for (int round = 0; round < 2; round++) { /* twice: the sums accumulate */
        grad_norms_and_sum(m, nf, fast);
        grad_norms_and_sum_naive(m, nn, naive);
        assert_memory_equal(nf, nn, sizeof nf);
        assert_memory_equal(fast, naive, sizeof(float) * m->n_params);
    }
    /* and against a plain double sum, to rounding */
    for (int l = 0; l < N; l++) {
        double ss = 0;
        for (size_t i = 0; i < layer_size(&m->layers[l]); i++) {
            double g = m->grads[m->layers[l].offset + i];
            ss += g * g;
        }
        assert_true(fabs(nf[l] - sqrt(ss)) <= 1e-5 * sqrt(ss));
    }
    free(fast), free(naive);
    model_free(m);
}

static void test_parameter_counts_of_defaults(void **state)
{
    (void)state;
    /* resnet: conv weights, BN's gamma and beta per conv, fc; stage 1 has an identity shortcut,
     * stages 2 and 3 a 1x1 projection */
    size_t resnet = (16 * 9 + 2 * 16) + 2 * (16 * 144 + 2 * 16) +
                    (32 * 144 + 32 * 288 + 32 * 16 + 3 * 2 * 32) +
                    (64 * 288 + 64 * 576 + 64 * 32 + 3 * 2 * 64) + (64 * 10 + 10);
    size_t expect[N_NAMES] = {784 * 10 + 10, 784 * 128 + 128 + 128 * 10 + 10,
                              16 * 9 + 16 + 32 * 9 * 16 + 32 + 7 * 7 * 32 * 10 + 10, resnet};
    for (int i = 0; i < N_NAMES; i++) {
        Model *m = make(NAMES[i], model_config_default(), 1);
        assert_int_equal(m->n_params, expect[i]);
        model_free(m);
    }
}

static void test_flops_per_sample_count_multiply_adds(void **state)
{
    (void)state;
    /* 2 flops per multiply-add; forward + weight gradient everywhere, + input gradient except
     * for the first layer */
    double mlp = 2.0 * (2.0 * 784 * 128 + 3.0 * 128 * 10);
    double c1 = 28.0 * 28 * 16 * 9 * 1, c2 = 14.0 * 14 * 32 * 9 * 16, fc = 7.0 * 7 * 32 * 10;
    double cnn = 2.0 * (2 * c1 + 3 * c2 + 3 * fc);
    /* resnet: the stem 28 -> 14, stage 1 at 14x14, 2 at 7x7, 3 at 4x4 */
    double stem = 14.0 * 14 * 16 * 9, s1 = 2 * 14.0 * 14 * 16 * 144;
    double s2 = 7.0 * 7 * 32 * (144 + 288 + 16), s3 = 4.0 * 4 * 64 * (288 + 576 + 32);
    double resnet = 2.0 * (2 * stem + 3 * (s1 + s2 + s3 + 64 * 10));
    double expect[N_NAMES] = {2.0 * 2 * 784 * 10, mlp, cnn, resnet};
    for (int i = 0; i < N_NAMES; i++) {
        Model *m = make(NAMES[i], model_config_default(), 1);
        assert_float_equal(model_flops_per_sample(m), expect[i], 0.5);
        model_free(m);
    }
}

static void test_initialisation_is_seeded_and_bounded(void **state)
{
    (void)state;
    for (int i = 0; i < N_NAMES; i++) {
        Model *a = make(NAMES[i], model_config_default(), 7);
        Model *b = make(NAMES[i], model_config_default(), 7);
        Model *c = make(NAMES[i], model_config_default(), 8);
        assert_memory_equal(a->params, b->params, a->n_params * sizeof(float));
        assert_true(memcmp(a->params, c->params, a->n_params * sizeof(float)) != 0);
        const LayerView *v = &a->layers[0];
        float bound = 1.0f / sqrtf((float)v->cols);
        for (size_t k = 0; k < layer_size(v); k++) assert_true(fabsf(a->params[k]) <= bound);
        model_free(a), model_free(b), model_free(c);
    }
}

/* A copy of an untrained model (model_create_copy: how a run makes its replicas) is the model
 * its seed makes: the same parameters and state (resnet's batch norm statistics), in buffers of
 * its own, and it trains as that model does: the same loss, gradient and state after a step. */
static void test_a_copy_is_the_model_its_seed_makes(void **state)
{
    (void)state;
    for (int i = 0; i < N_NAMES; i++) {
        ModelConfig c = tiny_config(NAMES[i]);
        Model *a = make(NAMES[i], c, 9), *owner = make(NAMES[i], c, 9), *b = NULL;
        BwError err;
        assert_int_equal(model_create_copy(owner, &b, &err), BW_OK);
        model_free(owner); /* the copy keeps nothing of it */
        assert_int_equal(b->n_params, a->n_params);
        assert_int_equal(b->n_state, a->n_state);
        assert_memory_equal(b->params, a->params, a->n_params * sizeof(float));
        if (a->n_state) assert_memory_equal(b->state, a->state, a->n_state * sizeof(float));
        enum { N = 3 };
        float x[N * 64];
        uint8_t y[N] = {2, 0, 3};
        fill_uniform(x, N * 64, -1, 1, 77);
        double la = model_forward_backward(a, x, y, N), lb = model_forward_backward(b, x, y, N);
        assert_memory_equal(&la, &lb, sizeof la);
        assert_memory_equal(b->grads, a->grads, a->n_params * sizeof(float));
        if (a->n_state) assert_memory_equal(b->state, a->state, a->n_state * sizeof(float));
        model_free(a), model_free(b);
    }
}

static void test_bad_configs_are_usage_errors(void **state)
{
    (void)state;
    Model *m = NULL;
    BwError err;
    const ModelOps *mlp = model_find("mlp"), *cnn = model_find("cnn");
    ModelConfig c = model_config_default();
    model_config_set(&c, mlp, "hidden", 1, (const int[]){0});
    assert_int_equal(model_create(mlp, &c, 1, &m, &err), BW_EUSAGE);
    assert_non_null(strstr(err.msg, "--hidden"));
    c = model_config_default();
    model_config_set(&c, cnn, "kernel", 1, (const int[]){4});
    assert_int_equal(model_create(cnn, &c, 1, &m, &err), BW_EUSAGE);
    assert_non_null(strstr(err.msg, "--kernel"));
    /* the model's own message comes before the generic count check's */
    c = model_config_default();
    model_config_set(&c, cnn, "channels", 1, (const int[]){8});
    assert_int_equal(model_create(cnn, &c, 1, &m, &err), BW_EUSAGE);
    assert_string_equal(err.msg, "--channels: expected two counts (conv1,conv2)");
    c = model_config_default();
    model_config_set(&c, cnn, "channels", 2, (const int[]){8, 1025});
    assert_int_equal(model_check(cnn, &c, &err), BW_EUSAGE);
    assert_non_null(strstr(err.msg, "--channels"));
    c = model_config_default();
    model_config_set(&c, cnn, "kernel", 2, (const int[]){3, 3});
    assert_int_equal(model_check(cnn, &c, &err), BW_EUSAGE);
    assert_non_null(strstr(err.msg, "--kernel"));
    c = model_config_default();
    c.in_rows = 30;
    assert_int_equal(model_create(model_find("cnn"), &c, 1, &m, &err), BW_EUSAGE);
    assert_null(m);
    const ModelOps *resnet = model_find("resnet");
    c = model_config_default();
    model_config_set(&c, resnet, "widths", 5, (const int[]){8, 8, 8, 8, 8});
    assert_int_equal(model_create(resnet, &c, 1, &m, &err), BW_EUSAGE);
    assert_non_null(strstr(err.msg, "--widths"));
    c = model_config_default();
    model_config_set(&c, resnet, "blocks", 1, (const int[]){0});
    assert_int_equal(model_create(resnet, &c, 1, &m, &err), BW_EUSAGE);
    assert_non_null(strstr(err.msg, "--blocks"));
    assert_null(m);
}

/* The options come from the models' tables: each name once, in registry order, and a
 * configuration that leaves an option empty gets its default. */
static void test_options_come_from_the_registry(void **state)
{
    (void)state;
    const char *names[] = {"hidden", "channels", "kernel", "widths", "blocks"};
    int n = 0;
    for (const ModelOption *o; (o = model_registry_option(n)); n++) {
        assert_true(n < 5);
        assert_string_equal(o->name, names[n]);
        ModelInts d = model_option_default(o);
        assert_true(d.n >= o->min_count && d.n <= o->max_count);
    }
    assert_int_equal(n, 5);
    const ModelOps *mlp = model_find("mlp"), *cnn = model_find("cnn");
    assert_int_equal(model_option_index(model_find("softmax"), "hidden"), -1);
    assert_int_equal(model_option_index(cnn, "kernel"), 1);
    ModelConfig c = model_config_default();
    ModelInts v;
    assert_int_equal(model_config_get(&c, mlp, "channels", &v), 0);
    assert_int_equal(model_config_get(&c, NULL, "hidden", &v), 0);
    assert_int_equal(model_config_get(&c, cnn, "channels", &v), 1);
    assert_int_equal(v.n, 2);
    assert_int_equal(v.v[0], 16);
    assert_int_equal(v.v[1], 32);
    model_config_set(&c, mlp, "hidden", 3, (const int[]){9, 8, 7});
    assert_int_equal(model_config_get(&c, mlp, "hidden", &v), 1);
    assert_int_equal(v.n, 3);
    assert_int_equal(v.v[2], 7);
    Model *m = make("mlp", c, 1);
    assert_int_equal(m->n_layers, 8);
    assert_int_equal(m->layers[4].rows, 7);
    model_free(m);
}

static double loss_at(Model *m, const float *x, const uint8_t *y, int n)
{
    return model_forward_backward(m, x, y, n);
}

static void check_gradient_of(const char *name, ModelConfig c)
{
    enum { N = 3 };
    Model *m = make(name, c, 3);
    int dim = c.in_rows * c.in_cols;
    float x[N * 64];
    uint8_t y[N] = {0, 2, 3};
    fill_uniform(x, (size_t)N * dim, -1, 1, 41);
    /* scale weights up a little so the loss is not flat */
    for (size_t k = 0; k < m->n_params; k++) m->params[k] *= 2.0f;
    loss_at(m, x, y, N);
    float *g = malloc(m->n_params * sizeof(float)), *fd = malloc(m->n_params * sizeof(float));
    float *gk = malloc(m->n_params * sizeof(float));
    memcpy(g, m->grads, m->n_params * sizeof(float));
    const float eps = 1e-3f;
    size_t kept = 0, skipped = 0;
    for (size_t k = 0; k < m->n_params; k++) {
        float keep = m->params[k];
        double l0 = loss_at(m, x, y, N);
        m->params[k] = keep + eps;
        double lp = loss_at(m, x, y, N);
        m->params[k] = keep - eps;
        double lm = loss_at(m, x, y, N);
        m->params[k] = keep;
        double right = (lp - l0) / eps, left = (l0 - lm) / eps;
        if (fabs(right - left) > 0.05 * (fabs(right) + fabs(left)) + 2e-3) {
            skipped++; /* a kink lies within eps */
            continue;
        }
        fd[kept] = (float)((lp - lm) / (2 * eps));
        gk[kept] = g[k];
        kept++;
    }
    double e = rel_err(gk, fd, kept);
    print_message("%-8s %zu params, %zu compared, %zu at kinks, relative error %.2e\n", name,
                  m->n_params, kept, skipped, e);
    assert_true(skipped * 100 <= 3 * m->n_params);
    assert_true(e < 1e-3);
    free(g), free(fd), free(gk);
    model_free(m);
}

static void check_gradient(const char *name)
{
    check_gradient_of(name, tiny_config(name));
}

static void test_softmax_gradient_matches_finite_differences(void **state)
{
    (void)state;
    check_gradient("softmax");
}
static void test_mlp_gradient_matches_finite_differences(void **state)
{
    (void)state;
    check_gradient("mlp");
}
static void test_cnn_gradient_matches_finite_differences(void **state)
{
    (void)state;
    check_gradient("cnn");
}
/* In train mode: batch norm with the batch's statistics, which move with every parameter. */
static void test_resnet_gradient_matches_finite_differences(void **state)
{
    (void)state;
    check_gradient("resnet");
    /* two blocks per stage (identity blocks after a projection) on 5x5 inputs: 5 -> 3 -> 3 -> 2
     * pixels, odd sides whose strided windows hang over the padding. Small inputs, because
     * with BN every weight moves every activation of its channel: at 8x8, 7% of these
     * parameters have a ReLU kink within eps. */
    ModelConfig c = tiny_config("resnet");
    c.in_rows = c.in_cols = 5;
    model_config_set(&c, model_find("resnet"), "blocks", 1, (const int[]){2});
    check_gradient_of("resnet", c);
}

/* The gradient of a batch is the mean of its samples' gradients: what makes averaging the
 * workers' gradients equal to one large batch. Not with batch norm (a model with state), whose
 * batch statistics couple the samples. */
static void test_batch_gradient_is_mean_of_sample_gradients(void **state)
{
    (void)state;
    for (int i = 0; i < N_NAMES; i++) {
        ModelConfig c = tiny_config(NAMES[i]);
        Model *m = make(NAMES[i], c, 5);
        if (m->n_state) {
            model_free(m);
            continue;
        }
        enum { N = 4 };
        float x[N * 64];
        uint8_t y[N] = {1, 0, 3, 2};
        fill_uniform(x, N * 64, -1, 1, 51);
        float *mean = calloc(m->n_params, sizeof(float));
        for (int s = 0; s < N; s++) {
            model_forward_backward(m, x + s * 64, y + s, 1);
            for (size_t k = 0; k < m->n_params; k++) mean[k] += m->grads[k] / N;
        }
        model_forward_backward(m, x, y, N);
        assert_true(rel_err(m->grads, mean, m->n_params) < 1e-5);
        free(mean);
        model_free(m);
    }
}

/* In prediction mode (batch norm with its running statistics). */
static void test_logits_do_not_depend_on_batch_neighbours(void **state)
{
    (void)state;
    for (int i = 0; i < N_NAMES; i++) {
        Model *m = make(NAMES[i], model_config_default(), 9);
        enum { N = 5 };
        float *x = malloc(sizeof(float) * N * 784);
        fill_uniform(x, (size_t)N * 784, -1, 1, 61);
        float one[10], all[N * 10];
        memcpy(all, m->ops->forward(m, x, N), sizeof all);
        memcpy(one, m->ops->forward(m, x + 2 * 784, 1), sizeof one);
        assert_true(max_abs_diff(one, all + 2 * 10, 10) < 1e-5);
        free(x);
        model_free(m);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_registered_model_is_tested),
        cmocka_unit_test(test_layer_tables_tile_the_buffer),
        cmocka_unit_test(test_a_layer_table_takes_any_number_of_layers),
        cmocka_unit_test(test_gradient_norms_equal_their_naive_twin),
        cmocka_unit_test(test_parameter_counts_of_defaults),
        cmocka_unit_test(test_flops_per_sample_count_multiply_adds),
        cmocka_unit_test(test_initialisation_is_seeded_and_bounded),
        cmocka_unit_test(test_a_copy_is_the_model_its_seed_makes),
        cmocka_unit_test(test_bad_configs_are_usage_errors),
        cmocka_unit_test(test_options_come_from_the_registry),
        cmocka_unit_test(test_softmax_gradient_matches_finite_differences),
        cmocka_unit_test(test_mlp_gradient_matches_finite_differences),
        cmocka_unit_test(test_cnn_gradient_matches_finite_differences),
        cmocka_unit_test(test_resnet_gradient_matches_finite_differences),
        cmocka_unit_test(test_batch_gradient_is_mean_of_sample_gradients),
        cmocka_unit_test(test_logits_do_not_depend_on_batch_neighbours),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
