/* test_resnet.c: the resnet model against a reference written here from the architecture (He et
 * al. 2016's BasicBlocks; see models/resnet.c) with the naive convolution and batch norm by its
 * definition, in both modes: training (the batch's statistics, and the running ones moved by
 * momentum 0.1 towards the batch's mean and unbiased variance, as PyTorch) and prediction (the
 * running statistics). Also: the layer table and the state, BN's initial values, the running
 * statistics untouched by evaluation, and what normalisation implies (train-mode logits do not
 * see the input's scale; prediction's do). The gradient is checked in test_models.c. */
#include "testutil.h"

#include "layers.h"
#include "model.h"

#define EPS 1e-5 /* BN's eps */

typedef struct {
    const Model *m;
    int train;
    size_t state;     /* the next BN's running mean in m->state (BNs in layer-table order) */
    float *new_state; /* train mode: the running statistics the step should leave */
} Ref;

static const float *param(const Model *m, const char *name)
{
    for (int l = 0; l < m->n_layers; l++)
        if (strcmp(m->layers[l].name, name) == 0) return m->params + m->layers[l].offset;
    fail_msg("no layer %s", name);
    return NULL;
}

/* x [rows, c] in place: BN by its definition, with the batch's statistics (train) or the
 * running ones. */
static void ref_bn(Ref *r, float *x, int rows, int c, const char *bn)
{
    char name[64];
    snprintf(name, sizeof name, "%s.weight", bn);
    const float *gamma = param(r->m, name);
    snprintf(name, sizeof name, "%s.bias", bn);
    const float *beta = param(r->m, name);
    const float *run_mean = r->m->state + r->state, *run_var = run_mean + c;
    for (int ch = 0; ch < c; ch++) {
        double mean = run_mean[ch], var = run_var[ch];
        if (r->train) {
            double s = 0, ss = 0;
            for (int i = 0; i < rows; i++) s += x[i * c + ch];
            mean = s / rows;
            for (int i = 0; i < rows; i++) ss += (x[i * c + ch] - mean) * (x[i * c + ch] - mean);
            var = ss / rows;
            r->new_state[r->state + ch] = (float)(0.9 * run_mean[ch] + 0.1 * mean);
            r->new_state[r->state + c + ch] =
                (float)(0.9 * run_var[ch] + 0.1 * ss / (rows > 1 ? rows - 1 : 1));
        }
        for (int i = 0; i < rows; i++)
            x[i * c + ch] =
                (float)(gamma[ch] * (x[i * c + ch] - mean) / sqrt(var + EPS) + beta[ch]);
    }
    r->state += 2 * (size_t)c;
}

/* conv (no bias) then BN: out [n, oh, ow, cout] (malloc'd), its sides in *h and *w. */
static float *ref_conv_bn(Ref *r, const float *x, int n, int *h, int *w, int cin, int cout, int k,
                          int stride, const char *conv, const char *bn)
{
    ConvShape s = {
        .n = n, .h = *h, .w = *w, .cin = cin, .cout = cout, .k = k, .pad = k / 2, .stride = stride};
    int oh = conv_out_h(&s), ow = conv_out_w(&s);
    float *out = malloc(sizeof(float) * (size_t)n * oh * ow * cout);
    conv2d_forward_naive(out, x, param(r->m, conv), NULL, &s);
    ref_bn(r, out, n * oh * ow, cout, bn);
    *h = oh, *w = ow;
    return out;
}

static void ref_relu(float *x, size_t n)
{
    for (size_t i = 0; i < n; i++) x[i] = x[i] > 0 ? x[i] : 0;
}

/* One BasicBlock on x [n, h, w, cin]; returns its output (malloc'd) and updates h, w. */
static float *ref_block(Ref *r, const float *x, int n, int *h, int *w, int cin, int cout,
                        int stride, const char *pre)
{
    char conv[64], bn[64];
    int h1 = *h, w1 = *w, h2, w2;
    snprintf(conv, sizeof conv, "%s.conv1.weight", pre), snprintf(bn, sizeof bn, "%s.bn1", pre);
    float *a = ref_conv_bn(r, x, n, &h1, &w1, cin, cout, 3, stride, conv, bn);
    ref_relu(a, (size_t)n * h1 * w1 * cout);
    h2 = h1, w2 = w1;
    snprintf(conv, sizeof conv, "%s.conv2.weight", pre), snprintf(bn, sizeof bn, "%s.bn2", pre);
    float *b = ref_conv_bn(r, a, n, &h2, &w2, cout, cout, 3, 1, conv, bn);
    size_t count = (size_t)n * h2 * w2 * cout;
    if (stride != 1 || cin != cout) {
        int hs = *h, ws = *w;
        snprintf(conv, sizeof conv, "%s.downsample.0.weight", pre);
        snprintf(bn, sizeof bn, "%s.downsample.1", pre);
        float *sc = ref_conv_bn(r, x, n, &hs, &ws, cin, cout, 1, stride, conv, bn);
        for (size_t i = 0; i < count; i++) b[i] += sc[i];
        free(sc);
    } else {
        for (size_t i = 0; i < count; i++) b[i] += x[i];
    }
    ref_relu(b, count);
    free(a);
    *h = h2, *w = w2;
    return b;
}

/* The logits [n, classes] of the model's configuration on x, into logits. */
static void ref_forward(Ref *r, const float *x, int n, float *logits)
{
    const Model *m = r->m;
    ModelInts widths, blocks;
    assert_true(model_config_get(&m->cfg, m->ops, "widths", &widths));
    assert_true(model_config_get(&m->cfg, m->ops, "blocks", &blocks));
    r->state = 0;
    int h = m->cfg.in_rows, w = m->cfg.in_cols, c = widths.v[0];
    float *a = ref_conv_bn(r, x, n, &h, &w, m->cfg.in_channels, c, 3, 2, "conv1.weight", "bn1");
    ref_relu(a, (size_t)n * h * w * c);
    for (int st = 0; st < widths.n; st++)
        for (int k = 0; k < blocks.v[0]; k++) {
            char pre[32];
            snprintf(pre, sizeof pre, "layer%d.%d", st + 1, k);
            float *b = ref_block(r, a, n, &h, &w, c, widths.v[st], k == 0 && st > 0 ? 2 : 1, pre);
            free(a);
            a = b;
            c = widths.v[st];
        }
    assert_int_equal(r->state, m->n_state);
    const float *fw = param(m, "fc.weight"), *fb = param(m, "fc.bias");
    for (int i = 0; i < n; i++)
        for (int j = 0; j < m->cfg.classes; j++) {
            double z = fb[j];
            for (int ch = 0; ch < c; ch++) {
                double mean = 0;
                for (int p = 0; p < h * w; p++) mean += a[((size_t)i * h * w + p) * c + ch];
                z += fw[j * c + ch] * mean / (h * w);
            }
            logits[i * m->cfg.classes + j] = (float)z;
        }
    free(a);
}

/* 10x10 inputs, 4 classes, stages of 3 and 4 channels with 2 blocks each: 10 -> 5 -> 5 -> 3. */
static Model *small_model(unsigned long seed)
{
    const ModelOps *ops = model_find("resnet");
    ModelConfig c = model_config_default();
    c.in_rows = c.in_cols = 10;
    c.classes = 4;
    model_config_set(&c, ops, "widths", 2, (const int[]){3, 4});
    model_config_set(&c, ops, "blocks", 1, (const int[]){2});
    Model *m = NULL;
    BwError err;
    assert_int_equal(model_create(ops, &c, seed, &m, &err), BW_OK);
    /* gamma and beta away from 1 and 0, so a mix-up of the two shows */
    for (int l = 0; l < m->n_layers; l++)
        if (m->layers[l].ndim == 1 && strstr(m->layers[l].name, "bn"))
            fill_uniform(m->params + m->layers[l].offset, layer_size(&m->layers[l]), 0.5, 1.5,
                         seed + (uint64_t)l);
    return m;
}

/* A few SGD steps on random batches, so the running statistics are the model's own. */
static void train_steps(Model *m, int steps, int n)
{
    int dim = m->cfg.in_rows * m->cfg.in_cols;
    float *x = malloc(sizeof(float) * (size_t)n * dim);
    uint8_t *y = malloc((size_t)n);
    for (int s = 0; s < steps; s++) {
        fill_uniform(x, (size_t)n * dim, -1, 2, 500 + (uint64_t)s);
        for (int i = 0; i < n; i++) y[i] = (uint8_t)((i + s) % m->cfg.classes);
        assert_true(isfinite(model_forward_backward(m, x, y, n)));
        for (size_t k = 0; k < m->n_params; k++) m->params[k] -= 0.05f * m->grads[k];
    }
    free(x), free(y);
}

static void test_default_layer_table_and_state(void **state)
{
    (void)state;
    Model *m = NULL;
    BwError err;
    ModelConfig c = model_config_default();
    assert_int_equal(model_create(model_find("resnet"), &c, 1, &m, &err), BW_OK);
    const char *first[] = {"conv1.weight", "bn1.weight", "bn1.bias", "layer1.0.conv1.weight"};
    for (int i = 0; i < 4; i++) assert_string_equal(m->layers[i].name, first[i]);
    assert_string_equal(m->layers[m->n_layers - 1].name, "fc.bias");
    int weights = 0, bn_channels = 0;
    for (int l = 0; l < m->n_layers; l++) {
        const LayerView *v = &m->layers[l];
        const float *p = m->params + v->offset;
        weights += v->ndim == 2;
        if (strstr(v->name, "bn") || strstr(v->name, "downsample.1")) {
            int gamma = strstr(v->name, ".weight") != NULL;
            assert_int_equal(v->ndim, 1);
            bn_channels += gamma * v->rows;
            for (int j = 0; j < v->rows; j++) assert_float_equal(p[j], gamma ? 1 : 0, 0);
        }
    }
    /* stem, 2 convs per block, the projections of stages 2 and 3, fc */
    assert_int_equal(weights, 1 + 3 * 2 + 2 + 1);
    assert_int_equal(bn_channels, 16 + 16 * 2 + 32 * 3 + 64 * 3);
    assert_int_equal(m->n_state, 2 * (size_t)bn_channels);
    /* running mean 0 and variance 1, BN by BN */
    for (size_t at = 0, l = 0; l < (size_t)m->n_layers; l++) {
        const LayerView *v = &m->layers[l];
        if (v->ndim != 1 || !strstr(v->name, ".weight")) continue;
        for (int j = 0; j < v->rows; j++) {
            assert_float_equal(m->state[at + j], 0, 0);
            assert_float_equal(m->state[at + v->rows + j], 1, 0);
        }
        at += 2 * (size_t)v->rows;
    }
    model_free(m);
}

/* Training mode: the logits with the batch's statistics, and the running statistics moved. */
static void test_train_mode_matches_reference(void **state)
{
    (void)state;
    Model *m = small_model(3);
    train_steps(m, 2, 6);
    enum { N = 5, DIM = 100 };
    float x[N * DIM], ref[N * 4], got[N * 4];
    fill_uniform(x, N * DIM, -1, 2, 7);
    float *before = malloc(sizeof(float) * m->n_state), *after = malloc(sizeof(float) * m->n_state);
    memcpy(before, m->state, sizeof(float) * m->n_state);
    Ref r = {.m = m, .train = 1, .new_state = after};
    ref_forward(&r, x, N, ref);
    m->train = 1;
    memcpy(got, m->ops->forward(m, x, N), sizeof got);
    m->train = 0;
    assert_true(rel_err(got, ref, N * 4) < 1e-4);
    assert_true(rel_err(m->state, after, m->n_state) < 1e-5);
    assert_true(rel_err(m->state, before, m->n_state) > 1e-3); /* they did move */
    free(before), free(after);
    model_free(m);
}

/* Prediction: the running statistics, so one sample alone gets the reference's logits (a
 * batch of one in train mode would normalise it by itself), and evaluating changes no state. */
static void test_prediction_uses_running_statistics(void **state)
{
    (void)state;
    Model *m = small_model(4);
    train_steps(m, 5, 8);
    enum { N = 3, DIM = 100 };
    float x[N * DIM], ref[4], got[4], train[4];
    uint8_t y[N] = {0, 1, 2};
    fill_uniform(x, N * DIM, -1, 2, 9);
    float *st = malloc(sizeof(float) * m->n_state);
    memcpy(st, m->state, sizeof(float) * m->n_state);
    Ref r = {.m = m, .train = 0};
    ref_forward(&r, x + DIM, 1, ref);
    memcpy(got, m->ops->forward(m, x + DIM, 1), sizeof got);
    assert_true(rel_err(got, ref, 4) < 1e-4);
    double loss, acc;
    BwError err;
    assert_int_equal(model_evaluate(m, x, y, N, DIM, &loss, &acc, &err), BW_OK);
    assert_memory_equal(m->state, st, sizeof(float) * m->n_state);
    /* train mode on the same sample differs */
    m->train = 1;
    memcpy(train, m->ops->forward(m, x + DIM, 1), sizeof train);
    m->train = 0;
    assert_true(rel_err(train, ref, 4) > 1e-2);
    free(st);
    model_free(m);
}

/* Prediction in passes: 150 samples (more than one pass of the buffers) give each sample the
 * logits it gets alone. */
static void test_prediction_of_many_samples_is_per_sample(void **state)
{
    (void)state;
    Model *m = small_model(5);
    train_steps(m, 2, 4);
    enum { N = 150, DIM = 100 };
    float *x = malloc(sizeof(float) * N * DIM), *all = malloc(sizeof(float) * N * 4);
    fill_uniform(x, (size_t)N * DIM, -1, 2, 13);
    memcpy(all, m->ops->forward(m, x, N), sizeof(float) * N * 4);
    for (int i = 0; i < N; i += 37) {
        float one[4];
        memcpy(one, m->ops->forward(m, x + (size_t)i * DIM, 1), sizeof one);
        assert_true(max_abs_diff(one, all + i * 4, 4) < 1e-5);
    }
    free(x), free(all);
    model_free(m);
}

/* Per-channel normalisation with the batch's statistics makes the train-mode logits blind to
 * the input's scale (the stem has no bias); prediction with fixed statistics is not. */
static void test_train_mode_does_not_see_the_input_scale(void **state)
{
    (void)state;
    Model *m = small_model(6);
    train_steps(m, 3, 6);
    enum { N = 4, DIM = 100 };
    float x[N * DIM], big[N * DIM], a[N * 4], b[N * 4];
    fill_uniform(x, N * DIM, -1, 2, 17);
    for (int i = 0; i < N * DIM; i++) big[i] = 8.0f * x[i];
    m->train = 1;
    memcpy(a, m->ops->forward(m, x, N), sizeof a);
    memcpy(b, m->ops->forward(m, big, N), sizeof b);
    assert_true(rel_err(a, b, N * 4) < 1e-4);
    m->train = 0;
    memcpy(a, m->ops->forward(m, x, N), sizeof a);
    memcpy(b, m->ops->forward(m, big, N), sizeof b);
    assert_true(rel_err(a, b, N * 4) > 1e-2);
    model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_layer_table_and_state),
        cmocka_unit_test(test_train_mode_matches_reference),
        cmocka_unit_test(test_prediction_uses_running_statistics),
        cmocka_unit_test(test_prediction_of_many_samples_is_per_sample),
        cmocka_unit_test(test_train_mode_does_not_see_the_input_scale),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
