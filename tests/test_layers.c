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
    /* strided, as resnet downsamples: odd and even sides, 3x3 and 1x1 */
    conv_case(
        (ConvShape){.n = 2, .h = 7, .w = 7, .cin = 3, .cout = 4, .k = 3, .pad = 1, .stride = 2}, 7);
    conv_case(
        (ConvShape){.n = 3, .h = 8, .w = 6, .cin = 4, .cout = 5, .k = 3, .pad = 1, .stride = 2}, 8);
    conv_case(
        (ConvShape){.n = 2, .h = 6, .w = 6, .cin = 4, .cout = 3, .k = 1, .pad = 0, .stride = 2}, 9);
    conv_case(
        (ConvShape){.n = 2, .h = 9, .w = 9, .cin = 2, .cout = 2, .k = 3, .pad = 0, .stride = 3},
        10);
}

static void test_conv_output_shape_with_strides(void **state)
{
    (void)state;
    ConvShape s = {.n = 1, .h = 28, .w = 28, .cin = 1, .cout = 1, .k = 3, .pad = 1, .stride = 2};
    assert_int_equal(conv_out_h(&s), 14);
    s.h = s.w = 7; /* 7 -> 4: the last window starts at row 6 - 1 = 5 */
    assert_int_equal(conv_out_w(&s), 4);
    s.k = 1, s.pad = 0; /* a 1x1 shortcut picks rows 0, 2, 4, 6 */
    assert_int_equal(conv_out_h(&s), 4);
    /* a shape written without a stride has stride 1 */
    ConvShape old = {.n = 1, .h = 7, .w = 5, .cin = 1, .cout = 1, .k = 3, .pad = 1};
    assert_int_equal(conv_stride(&old), 1);
    assert_int_equal(conv_out_h(&old), 7);
    assert_int_equal(conv_out_w(&old), 5);
}

/* A NULL bias is a zero bias, and a NULL db is not written. */
static void test_conv_without_bias(void **state)
{
    (void)state;
    ConvShape s = {.n = 2, .h = 5, .w = 5, .cin = 3, .cout = 4, .k = 3, .pad = 1, .stride = 2};
    enum { IN = 2 * 5 * 5 * 3, OUT = 2 * 3 * 3 * 4, WS = 4 * 27, COL = 2 * 3 * 3 * 27 };
    float x[IN], w[WS], zero[4] = {0}, y1[OUT], y2[OUT], dy[OUT], col[COL], dcol[COL];
    float dx1[IN], dx2[IN], dw1[WS], dw2[WS], db[4];
    fill_uniform(x, IN, -1, 1, 71);
    fill_uniform(w, WS, -1, 1, 72);
    fill_uniform(dy, OUT, -1, 1, 73);
    conv2d_forward(y1, col, x, w, NULL, &s);
    conv2d_forward_naive(y2, x, w, zero, &s);
    assert_true(rel_err(y1, y2, OUT) < 1e-6);
    conv2d_forward_naive(y1, x, w, NULL, &s);
    assert_true(rel_err(y1, y2, OUT) < 1e-6);
    conv2d_backward(dx1, dw1, NULL, dcol, dy, col, w, &s);
    conv2d_backward_naive(dx2, dw2, db, dy, x, w, &s);
    assert_true(rel_err(dx1, dx2, IN) < 1e-5);
    assert_true(rel_err(dw1, dw2, WS) < 1e-5);
    conv2d_backward_naive(dx1, dw1, NULL, dy, x, w, &s);
    assert_true(rel_err(dw1, dw2, WS) < 1e-5);
}

static void conv_fd_case(int stride)
{
    ConvShape s = {.n = 2, .h = 5, .w = 4, .cin = 2, .cout = 3, .k = 3, .pad = 1, .stride = stride};
    enum { IN = 2 * 5 * 4 * 2, OUT = 2 * 5 * 4 * 3, WS = 3 * 9 * 2 }; /* OUT: stride 1's */
    float x[IN], w[WS], b[3], y[OUT], r[OUT], dx[IN], dw[WS], db[3];
    fill_uniform(x, IN, -1, 1, 21);
    fill_uniform(w, WS, -1, 1, 22);
    fill_uniform(b, 3, -1, 1, 23);
    fill_uniform(r, OUT, -1, 1, 24);
    size_t out = (size_t)s.n * conv_out_h(&s) * conv_out_w(&s) * s.cout;
    conv2d_backward_naive(dx, dw, db, r, x, w, &s);
    float *targets[3] = {x, w, b}, *grads[3] = {dx, dw, db};
    int sizes[3] = {IN, WS, 3};
    const float eps = 0.1f;
    for (int t = 0; t < 3; t++)
        for (int k = 0; k < sizes[t]; k++) {
            float keep = targets[t][k];
            targets[t][k] = keep + eps;
            conv2d_forward_naive(y, x, w, b, &s);
            double lp = probe(y, r, out);
            targets[t][k] = keep - eps;
            conv2d_forward_naive(y, x, w, b, &s);
            double lm = probe(y, r, out);
            targets[t][k] = keep;
            double fd = (lp - lm) / (2 * eps);
            assert_true(fabs(fd - grads[t][k]) <= 1e-4 * (1 + fabs(fd)));
        }
}

static void test_conv_backward_matches_finite_differences(void **state)
{
    (void)state;
    conv_fd_case(1);
    conv_fd_case(2);
}

/* ---- batch normalisation, average pooling ---- */

typedef struct {
    float *x, *gamma, *beta, *out, *xhat, *rstd, *rm, *rv, *dout, *dx, *dg, *db;
} BnBufs;

static BnBufs bn_alloc(int rows, int c, uint64_t seed)
{
    size_t n = (size_t)rows * c;
    BnBufs b = {malloc(sizeof(float) * n), malloc(sizeof(float) * c), malloc(sizeof(float) * c),
                malloc(sizeof(float) * n), malloc(sizeof(float) * n), malloc(sizeof(float) * c),
                malloc(sizeof(float) * c), malloc(sizeof(float) * c), malloc(sizeof(float) * n),
                malloc(sizeof(float) * n), malloc(sizeof(float) * c), malloc(sizeof(float) * c)};
    fill_uniform(b.x, n, -2, 3, seed);
    fill_uniform(b.gamma, c, 0.5, 1.5, seed + 1);
    fill_uniform(b.beta, c, -1, 1, seed + 2);
    fill_uniform(b.dout, n, -1, 1, seed + 3);
    fill_uniform(b.rm, c, -0.5, 0.5, seed + 4);
    fill_uniform(b.rv, c, 0.5, 2, seed + 5);
    return b;
}

static void bn_free(BnBufs *b)
{
    free(b->x), free(b->gamma), free(b->beta), free(b->out), free(b->xhat), free(b->rstd),
        free(b->rm), free(b->rv), free(b->dout), free(b->dx), free(b->dg), free(b->db);
}

static void bn_case(int rows, int c, uint64_t seed)
{
    BnBufs f = bn_alloc(rows, c, seed), n = bn_alloc(rows, c, seed);
    size_t count = (size_t)rows * c;
    batchnorm_forward(f.out, f.xhat, f.rstd, f.rm, f.rv, f.x, f.gamma, f.beta, rows, c, 0.1f,
                      1e-5f);
    batchnorm_forward_naive(n.out, n.xhat, n.rstd, n.rm, n.rv, n.x, n.gamma, n.beta, rows, c, 0.1f,
                            1e-5f);
    assert_true(rel_err(f.out, n.out, count) < 1e-6);
    assert_true(rel_err(f.xhat, n.xhat, count) < 1e-6);
    assert_true(rel_err(f.rstd, n.rstd, c) < 1e-6);
    assert_true(rel_err(f.rm, n.rm, c) < 1e-6);
    assert_true(rel_err(f.rv, n.rv, c) < 1e-6);
    batchnorm_backward(f.dx, f.dg, f.db, f.dout, f.xhat, f.rstd, f.gamma, rows, c);
    batchnorm_backward_naive(n.dx, n.dg, n.db, n.dout, n.xhat, n.rstd, n.gamma, rows, c);
    assert_true(rel_err(f.dx, n.dx, count) < 1e-5);
    assert_true(rel_err(f.dg, n.dg, c) < 1e-6);
    assert_true(rel_err(f.db, n.db, c) < 1e-6);
    /* in place: xhat over x, dx over dout */
    batchnorm_forward(f.out, f.x, f.rstd, f.rm, f.rv, f.x, f.gamma, f.beta, rows, c, 0.1f, 1e-5f);
    assert_true(rel_err(f.x, n.xhat, count) < 1e-6);
    batchnorm_backward(f.dout, f.dg, f.db, f.dout, f.x, f.rstd, f.gamma, rows, c);
    assert_true(rel_err(f.dout, n.dx, count) < 1e-5);
    bn_free(&f), bn_free(&n);
}

static void test_batchnorm_fast_matches_naive(void **state)
{
    (void)state;
    bn_case(1, 3, 1); /* one row: zero variance */
    bn_case(17, 5, 2);
    bn_case(200, 70, 3); /* more channels than one block of the fast kernel */
    bn_case(64 * 49, 32, 4);
}

/* Train mode: per channel, xhat has mean 0 and variance 1 (biased, as normalised), out is
 * gamma xhat + beta, and the running statistics move 0.1 of the way to the batch's mean and
 * unbiased variance (PyTorch's momentum 0.1). */
static void test_batchnorm_train_normalises_and_tracks(void **state)
{
    (void)state;
    enum { R = 40, C = 3 };
    BnBufs b = bn_alloc(R, C, 81);
    float rm0[C], rv0[C];
    memcpy(rm0, b.rm, sizeof rm0);
    memcpy(rv0, b.rv, sizeof rv0);
    batchnorm_forward(b.out, b.xhat, b.rstd, b.rm, b.rv, b.x, b.gamma, b.beta, R, C, 0.1f, 1e-5f);
    for (int ch = 0; ch < C; ch++) {
        double m = 0, v = 0, mx = 0, vx = 0;
        for (int r = 0; r < R; r++) m += b.xhat[r * C + ch], mx += b.x[r * C + ch];
        m /= R, mx /= R;
        for (int r = 0; r < R; r++) {
            v += (b.xhat[r * C + ch] - m) * (b.xhat[r * C + ch] - m);
            vx += (b.x[r * C + ch] - mx) * (b.x[r * C + ch] - mx);
            assert_float_equal(b.out[r * C + ch], b.gamma[ch] * b.xhat[r * C + ch] + b.beta[ch],
                               1e-5);
        }
        assert_true(fabs(m) < 1e-6);
        assert_true(fabs(v / R - vx / (vx + R * 1e-5)) < 1e-5); /* 1 but for eps */
        assert_float_equal(b.rm[ch], 0.9 * rm0[ch] + 0.1 * mx, 1e-5);
        assert_float_equal(b.rv[ch], 0.9 * rv0[ch] + 0.1 * vx / (R - 1), 1e-5);
        assert_float_equal(b.rstd[ch], 1 / sqrt(vx / R + 1e-5), 1e-4);
    }
    bn_free(&b);
}

/* Eval mode: gamma (x - running mean) / sqrt(running var + eps) + beta, by hand; and with the
 * batch's own mean and biased variance as running statistics it equals train mode. */
static void test_batchnorm_eval_uses_running_statistics(void **state)
{
    (void)state;
    enum { R = 30, C = 4 };
    BnBufs b = bn_alloc(R, C, 91);
    float out[R * C];
    batchnorm_forward_eval(out, b.x, b.gamma, b.beta, b.rm, b.rv, R, C, 1e-5f);
    for (int i = 0; i < R * C; i++) {
        int ch = i % C;
        double e = b.gamma[ch] * (b.x[i] - b.rm[ch]) / sqrt(b.rv[ch] + 1e-5) + b.beta[ch];
        assert_float_equal(out[i], e, 1e-5);
    }
    float mean[C], var[C];
    for (int ch = 0; ch < C; ch++) {
        double m = 0, v = 0;
        for (int r = 0; r < R; r++) m += b.x[r * C + ch];
        m /= R;
        for (int r = 0; r < R; r++) v += (b.x[r * C + ch] - m) * (b.x[r * C + ch] - m);
        mean[ch] = (float)m, var[ch] = (float)(v / R);
    }
    batchnorm_forward_eval(out, b.x, b.gamma, b.beta, mean, var, R, C, 1e-5f);
    batchnorm_forward(b.out, b.xhat, b.rstd, b.rm, b.rv, b.x, b.gamma, b.beta, R, C, 0.1f, 1e-5f);
    assert_true(rel_err(out, b.out, R * C) < 1e-5);
    bn_free(&b);
}

/* The train mode's backward against central differences of L = sum(r * out), where the
 * statistics move with x (the reason for its two correction terms). */
static void test_batchnorm_backward_matches_finite_differences(void **state)
{
    (void)state;
    enum { R = 6, C = 2 };
    BnBufs b = bn_alloc(R, C, 101);
    float g[R * C + 2 * C], fd[R * C + 2 * C];
    batchnorm_forward_naive(b.out, b.xhat, b.rstd, b.rm, b.rv, b.x, b.gamma, b.beta, R, C, 0.1f,
                            1e-5f);
    batchnorm_backward_naive(b.dx, b.dg, b.db, b.dout, b.xhat, b.rstd, b.gamma, R, C);
    memcpy(g, b.dx, sizeof(float) * R * C);
    memcpy(g + R * C, b.dg, sizeof(float) * C);
    memcpy(g + R * C + C, b.db, sizeof(float) * C);
    float *targets[3] = {b.x, b.gamma, b.beta};
    int sizes[3] = {R * C, C, C}, at = 0;
    const float eps = 1e-2f;
    for (int t = 0; t < 3; t++)
        for (int k = 0; k < sizes[t]; k++, at++) {
            float keep = targets[t][k];
            double l[2];
            for (int side = 0; side < 2; side++) {
                targets[t][k] = keep + (side ? -eps : eps);
                batchnorm_forward_naive(b.out, b.xhat, b.rstd, b.rm, b.rv, b.x, b.gamma, b.beta, R,
                                        C, 0.1f, 1e-5f);
                l[side] = probe(b.out, b.dout, R * C);
            }
            targets[t][k] = keep;
            fd[at] = (float)((l[0] - l[1]) / (2 * eps));
        }
    assert_true(rel_err(g, fd, R * C + 2 * C) < 1e-3);
    bn_free(&b);
}

static void test_avgpool_means_pixels_and_spreads_gradient(void **state)
{
    (void)state;
    /* 2 images of 3 pixels, 2 channels (NHWC) */
    float x[12] = {1, 10, 2, 20, 3, 30, /**/ -1, 0, 0, 0, 4, 3};
    float y[4], dy[4] = {3, 6, -3, 9}, dx[12];
    avgpool_forward(y, x, 2, 3, 2);
    float expect[4] = {2, 20, 1, 1};
    for (int i = 0; i < 4; i++) assert_float_equal(y[i], expect[i], 1e-6);
    avgpool_backward(dx, dy, 2, 3, 2);
    for (int i = 0; i < 12; i++) assert_float_equal(dx[i], dy[(i / 6) * 2 + i % 2] / 3, 1e-6);
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
        cmocka_unit_test(test_conv_output_shape_with_strides),
        cmocka_unit_test(test_conv_without_bias),
        cmocka_unit_test(test_conv_backward_matches_finite_differences),
        cmocka_unit_test(test_batchnorm_fast_matches_naive),
        cmocka_unit_test(test_batchnorm_train_normalises_and_tracks),
        cmocka_unit_test(test_batchnorm_eval_uses_running_statistics),
        cmocka_unit_test(test_batchnorm_backward_matches_finite_differences),
        cmocka_unit_test(test_avgpool_means_pixels_and_spreads_gradient),
        cmocka_unit_test(test_maxpool_picks_maximum_and_routes_gradient),
        cmocka_unit_test(test_maxpool_channels_are_independent),
        cmocka_unit_test(test_relu_backward_masks_by_output),
        cmocka_unit_test(test_softmax_xent_value_and_gradient),
        cmocka_unit_test(test_softmax_xent_is_stable_for_large_logits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
