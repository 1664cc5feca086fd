/* test_layers.c: each fast kernel against its naive twin, and every backward kernel against
 * central finite differences of a scalar probe loss L = sum(r * out) computed in double. The
 * kernels are (piecewise) linear in what is perturbed, so central differences are exact but
 * for rounding; max pooling is checked on inputs whose entries are well apart. */
#include "testutil.h"

#include "layers.h"

static double probe(const float *out, const float *r, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++) s += (double)out[i] * r[i];
    return s;
}

/* ---- linear ---- */

static void linear_case(int n, int i, int o, uint64_t seed)
{
    float *x = malloc(sizeof(float) * n * i), *w = malloc(sizeof(float) * o * i),
          *b = malloc(sizeof(float) * o), *y1 = malloc(sizeof(float) * n * o),
          *y2 = malloc(sizeof(float) * n * o), *dy = malloc(sizeof(float) * n * o),
          *dx1 = malloc(sizeof(float) * n * i), *dx2 = malloc(sizeof(float) * n * i),
          *dw1 = malloc(sizeof(float) * o * i), *dw2 = malloc(sizeof(float) * o * i),
          *db1 = malloc(sizeof(float) * o), *db2 = malloc(sizeof(float) * o);
    fill_uniform(x, (size_t)n * i, -1, 1, seed);
    fill_uniform(w, (size_t)o * i, -1, 1, seed + 1);
    fill_uniform(b, (size_t)o, -1, 1, seed + 2);
    fill_uniform(dy, (size_t)n * o, -1, 1, seed + 3);
    linear_forward(y1, x, w, b, n, i, o);
    linear_forward_naive(y2, x, w, b, n, i, o);
    assert_true(rel_err(y1, y2, (size_t)n * o) < 1e-6);
    linear_backward(dx1, dw1, db1, dy, x, w, n, i, o);
    linear_backward_naive(dx2, dw2, db2, dy, x, w, n, i, o);
    assert_true(rel_err(dx1, dx2, (size_t)n * i) < 1e-6);
    assert_true(rel_err(dw1, dw2, (size_t)o * i) < 1e-6);
    assert_true(rel_err(db1, db2, (size_t)o) < 1e-6);
    free(x), free(w), free(b), free(y1), free(y2), free(dy), free(dx1), free(dx2), free(dw1),
        free(dw2), free(db1), free(db2);
}

static void test_linear_fast_matches_naive(void **state)
{
    (void)state;
    linear_case(1, 1, 1, 1);
    linear_case(7, 13, 5, 2);
    linear_case(64, 784, 128, 3);
    linear_case(33, 100, 10, 4);
}

/* Finite differences through the naive forward, in the parameters and the input. */
static void test_linear_backward_matches_finite_differences(void **state)
{
    (void)state;
    enum { N = 4, I = 6, O = 3 };
    float x[N * I], w[O * I], b[O], y[N * O], r[N * O], dx[N * I], dw[O * I], db[O];
    fill_uniform(x, N * I, -1, 1, 11);
    fill_uniform(w, O * I, -1, 1, 12);
    fill_uniform(b, O, -1, 1, 13);
    fill_uniform(r, N * O, -1, 1, 14);
    linear_backward(dx, dw, db, r, x, w, N, I, O); /* dL/dy = r */
    const float eps = 0.1f;                        /* exact for a linear map */
    float *targets[3] = {x, w, b};
    float *grads[3] = {dx, dw, db};
    int sizes[3] = {N * I, O * I, O};
    for (int t = 0; t < 3; t++)
        for (int k = 0; k < sizes[t]; k++) {
            float keep = targets[t][k];
            targets[t][k] = keep + eps;
            linear_forward_naive(y, x, w, b, N, I, O);
            double lp = probe(y, r, N * O);
            targets[t][k] = keep - eps;
            linear_forward_naive(y, x, w, b, N, I, O);
            double lm = probe(y, r, N * O);
            targets[t][k] = keep;
            double fd = (lp - lm) / (2 * eps);
            assert_true(fabs(fd - grads[t][k]) <= 1e-4 * (1 + fabs(fd)));
        }
}

/* ---- convolution ---- */

static void conv_case(ConvShape s, uint64_t seed)
{
    size_t in = (size_t)s.n * s.h * s.w * s.cin;
    size_t out = (size_t)s.n * conv_out_h(&s) * conv_out_w(&s) * s.cout;
    size_t ws = (size_t)s.cout * s.k * s.k * s.cin;
    float *x = malloc(sizeof(float) * in), *w = malloc(sizeof(float) * ws),
          *b = malloc(sizeof(float) * s.cout), *y1 = malloc(sizeof(float) * out),
          *y2 = malloc(sizeof(float) * out), *dy = malloc(sizeof(float) * out),
          *col = malloc(sizeof(float) * conv_col_size(&s)),
          *dcol = malloc(sizeof(float) * conv_col_size(&s)), *dx1 = malloc(sizeof(float) * in),
          *dx2 = malloc(sizeof(float) * in), *dw1 = malloc(sizeof(float) * ws),
          *dw2 = malloc(sizeof(float) * ws), *db1 = malloc(sizeof(float) * s.cout),
          *db2 = malloc(sizeof(float) * s.cout);
    fill_uniform(x, in, -1, 1, seed);
    fill_uniform(w, ws, -1, 1, seed + 1);
    fill_uniform(b, s.cout, -1, 1, seed + 2);
    fill_uniform(dy, out, -1, 1, seed + 3);
    conv2d_forward(y1, col, x, w, b, &s);
    conv2d_forward_naive(y2, x, w, b, &s);
    assert_true(rel_err(y1, y2, out) < 1e-6);
    conv2d_backward(dx1, dw1, db1, dcol, dy, col, w, &s);
    conv2d_backward_naive(dx2, dw2, db2, dy, x, w, &s);
    assert_true(rel_err(dx1, dx2, in) < 1e-5);
    assert_true(rel_err(dw1, dw2, ws) < 1e-5);
    assert_true(rel_err(db1, db2, s.cout) < 1e-5);
    /* without the input gradient, the others are unchanged */
    conv2d_backward(NULL, dw1, db1, NULL, dy, col, w, &s);
    assert_true(rel_err(dw1, dw2, ws) < 1e-5);
    free(x), free(w), free(b), free(y1), free(y2), free(dy), free(col), free(dcol), free(dx1),
        free(dx2), free(dw1), free(dw2), free(db1), free(db2);
}

static void test_conv_fast_matches_naive(void **state)
{
    (void)state;
    conv_case((ConvShape){.n = 1, .h = 5, .w = 5, .cin = 1, .cout = 1, .k = 3, .pad = 1}, 1);
    conv_case((ConvShape){.n = 3, .h = 8, .w = 6, .cin = 4, .cout = 5, .k = 3, .pad = 1}, 2);
    conv_case((ConvShape){.n = 2, .h = 7, .w = 7, .cin = 3, .cout = 2, .k = 5, .pad = 2}, 3);
    conv_case((ConvShape){.n = 2, .h = 6, .w = 6, .cin = 2, .cout = 3, .k = 3, .pad = 0}, 4);
    conv_case((ConvShape){.n = 4, .h = 4, .w = 4, .cin = 8, .cout = 8, .k = 1, .pad = 0}, 5);
    conv_case((ConvShape){.n = 8, .h = 14, .w = 14, .cin = 16, .cout = 32, .k = 3, .pad = 1}, 6);
}

static void test_conv_backward_matches_finite_differences(void **state)
{
    (void)state;
    ConvShape s = {.n = 2, .h = 5, .w = 4, .cin = 2, .cout = 3, .k = 3, .pad = 1};
    enum { IN = 2 * 5 * 4 * 2, OUT = 2 * 5 * 4 * 3, WS = 3 * 9 * 2 };
    float x[IN], w[WS], b[3], y[OUT], r[OUT], dx[IN], dw[WS], db[3];
    fill_uniform(x, IN, -1, 1, 21);
    fill_uniform(w, WS, -1, 1, 22);
    fill_uniform(b, 3, -1, 1, 23);
    fill_uniform(r, OUT, -1, 1, 24);
    conv2d_backward_naive(dx, dw, db, r, x, w, &s);
    float *targets[3] = {x, w, b}, *grads[3] = {dx, dw, db};
    int sizes[3] = {IN, WS, 3};
    const float eps = 0.1f;
    for (int t = 0; t < 3; t++)
        for (int k = 0; k < sizes[t]; k++) {
            float keep = targets[t][k];
            targets[t][k] = keep + eps;
            conv2d_forward_naive(y, x, w, b, &s);
            double lp = probe(y, r, OUT);
            targets[t][k] = keep - eps;
            conv2d_forward_naive(y, x, w, b, &s);
            double lm = probe(y, r, OUT);
            targets[t][k] = keep;
            double fd = (lp - lm) / (2 * eps);
            assert_true(fabs(fd - grads[t][k]) <= 1e-4 * (1 + fabs(fd)));
        }
}

/* ---- pooling, relu, softmax ---- */

static void test_maxpool_picks_maximum_and_routes_gradient(void **state)
{
    (void)state;
    /* one image 4x4, 1 channel; the maxima of the four 2x2 windows are 5, 7, 9, 8 */
    float x[16] = {1, 5, 2, 0, /**/ 3, 4, 7, 1, /**/ 9, 0, 2, 8, /**/ 1, 1, 3, 3};
    float y[4], dy[4] = {1, 2, 3, 4}, dx[16];
    int32_t arg[4];
    maxpool2_forward(y, arg, x, 1, 4, 4, 1);
    float expect[4] = {5, 7, 9, 8};
    for (int i = 0; i < 4; i++) assert_float_equal(y[i], expect[i], 0);
    maxpool2_backward(dx, dy, arg, 1, 4, 4, 1);
    float dexpect[16] = {0, 1, 0, 0, 0, 0, 2, 0, 3, 0, 0, 4, 0, 0, 0, 0};
    for (int i = 0; i < 16; i++) assert_float_equal(dx[i], dexpect[i], 0);
}

static void test_maxpool_channels_are_independent(void **state)
{
    (void)state;
    /* 2x2 image with 2 channels (NHWC): channel 0 max at pixel 3, channel 1 at pixel 0 */
    float x[8] = {0, 9, 1, 2, 2, 3, 5, 4};
    float y[2];
    int32_t arg[2];
    maxpool2_forward(y, arg, x, 1, 2, 2, 2);
    assert_float_equal(y[0], 5, 0);
    assert_float_equal(y[1], 9, 0);
    assert_int_equal(arg[0], 6);
    assert_int_equal(arg[1], 1);
}

static void test_relu_backward_masks_by_output(void **state)
{
    (void)state;
    float x[4] = {-1, 0, 2, 3}, d[4] = {1, 1, 1, 1};
    relu_forward(x, 4);
    relu_backward(d, x, 4);
    float expect[4] = {0, 0, 1, 1};
    for (int i = 0; i < 4; i++) assert_float_equal(d[i], expect[i], 0);
}

static void test_softmax_xent_value_and_gradient(void **state)
{
    (void)state;
    enum { N = 3, C = 4 };
    float z[N * C], dz[N * C], tmp[N * C];
    uint8_t y[N] = {0, 3, 1};
    fill_uniform(z, N * C, -2, 2, 31);
    double loss = softmax_xent(dz, z, y, N, C);
    /* value: -mean log softmax(z)[y], computed directly */
    double ref = 0;
    for (int r = 0; r < N; r++) {
        double s = 0;
        for (int j = 0; j < C; j++) s += exp(z[r * C + j]);
        ref += log(s) - z[r * C + y[r]];
    }
    assert_true(fabs(loss - ref / N) < 1e-6);
    /* gradient: central differences of the loss (smooth) */
    const float eps = 1e-2f;
    for (int k = 0; k < N * C; k++) {
        float keep = z[k];
        z[k] = keep + eps;
        double lp = softmax_xent(tmp, z, y, N, C);
        z[k] = keep - eps;
        double lm = softmax_xent(tmp, z, y, N, C);
        z[k] = keep;
        double fd = (lp - lm) / (2 * eps);
        assert_true(fabs(fd - dz[k]) < 1e-3 * (1 + fabs(fd)) + 2e-5);
    }
}

static void test_softmax_xent_is_stable_for_large_logits(void **state)
{
    (void)state;
    float z[2] = {1000.0f, -1000.0f}, dz[2];
    uint8_t y[1] = {1};
    double loss = softmax_xent(dz, z, y, 1, 2);
    assert_true(isfinite(loss));
    assert_true(fabs(loss - 2000.0f) < 1e-2);
    assert_true(fabs(dz[0] - 1.0f) < 1e-6 && fabs(dz[1] + 1.0f) < 1e-6);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_linear_fast_matches_naive),
        cmocka_unit_test(test_linear_backward_matches_finite_differences),
        cmocka_unit_test(test_conv_fast_matches_naive),
        cmocka_unit_test(test_conv_backward_matches_finite_differences),
        cmocka_unit_test(test_maxpool_picks_maximum_and_routes_gradient),
        cmocka_unit_test(test_maxpool_channels_are_independent),
        cmocka_unit_test(test_relu_backward_masks_by_output),
        cmocka_unit_test(test_softmax_xent_value_and_gradient),
        cmocka_unit_test(test_softmax_xent_is_stable_for_large_logits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
