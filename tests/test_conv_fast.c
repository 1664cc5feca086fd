/* test_conv_fast.c: the fused convolution + ReLU + 2x2 max pooling kernels (conv_fast.h), both
 * ways (direct, gemm), against their naive twin, layers.h's unfused naive kernels in turn, on
 * random inputs and shapes that exercise the edges: odd sides (the pooling drops a row and a
 * column), channel counts that are not a multiple of the 16-lane blocks, several input
 * channels, other kernel sizes and paddings, and batches that span several gemm blocks. */
#include "testutil.h"

#include <cblas.h>
#include <pthread.h>

#include "conv_fast.h"
#include "conv_simd.h"
#include "layers.h"
#include "model.h"

/* Window position (0..3) of a flat input index from maxpool2_forward. */
static int window_pos(int32_t at, int h, int w, int c)
{
    int32_t pix = at / c, x = pix % w, y = (pix / w) % h;
    (void)h;
    return (y & 1) * 2 + (x & 1);
}

typedef void (*ForwardFn)(float *, uint8_t *, const float *, const float *, const float *,
                          const ConvShape *, float *);

/* The fused forward against the naive twin: the pooled values, and the window position of
 * every maximum the ReLU passes (where it does not, the gradient is zero either way). */
static void check_forward(ForwardFn fwd, size_t scratch_floats, ConvShape s, uint64_t seed)
{
    const int oh = conv_out_h(&s), ow = conv_out_w(&s);
    size_t in = (size_t)s.n * s.h * s.w * s.cin, ws = (size_t)s.cout * s.k * s.k * s.cin;
    size_t act = (size_t)s.n * oh * ow * s.cout, out = convpool_out_size(&s);
    float *x = malloc(in * sizeof(float)), *w = malloc(ws * sizeof(float));
    float *b = malloc((size_t)s.cout * sizeof(float)), *a = malloc(act * sizeof(float));
    float *y1 = malloc(out * sizeof(float) + 1), *y2 = malloc(out * sizeof(float) + 1);
    float *scratch = malloc(scratch_floats * sizeof(float));
    uint8_t *arg = malloc(out + 1);
    int32_t *at = malloc(act * sizeof(int32_t) + 1);
    fill_uniform(x, in, -1, 1, seed);
    fill_uniform(w, ws, -1, 1, seed + 1);
    fill_uniform(b, (size_t)s.cout, -0.5, 0.5, seed + 2);
    fwd(y1, arg, x, w, b, &s, scratch);
    convpool_forward_naive(y2, x, w, b, &s, a, at);
    assert_true(rel_err(y1, y2, out) < 1e-6);
    size_t passed = 0;
    for (size_t o = 0; o < out; o++) {
        if (!(y2[o] > 0)) continue;
        assert_int_equal(arg[o], window_pos(at[o], oh, ow, s.cout));
        passed++;
    }
    assert_true(out == 0 || passed > 0); /* the check above ran */
    free(x), free(w), free(b), free(a), free(y1), free(y2), free(scratch), free(arg), free(at);
}

/* The backward of both ways against the naive twin's, given the fused forward's out and arg;
 * the gemm way with and without the input gradient. */
static void check_backward(ConvShape s, uint64_t seed, int direct)
{
    const int oh = conv_out_h(&s), ow = conv_out_w(&s);
    size_t in = (size_t)s.n * s.h * s.w * s.cin, ws = (size_t)s.cout * s.k * s.k * s.cin;
    size_t act = (size_t)s.n * oh * ow * s.cout, out = convpool_out_size(&s);
    size_t sc = direct ? convpool_direct_scratch(&s) : convpool_gemm_scratch(&s);
    float *x = malloc(in * sizeof(float)), *w = malloc(ws * sizeof(float));
    float *b = malloc((size_t)s.cout * sizeof(float)), *a = malloc(2 * act * sizeof(float) + 1);
    float *y = malloc(out * sizeof(float) + 1), *dy = malloc(out * sizeof(float) + 1);
    float *scratch = malloc(sc * sizeof(float));
    float *dx1 = malloc(in * sizeof(float)), *dx2 = malloc(in * sizeof(float));
    float *dw1 = malloc(ws * sizeof(float)), *dw2 = malloc(ws * sizeof(float));
    float *db1 = malloc((size_t)s.cout * sizeof(float)),
          *db2 = malloc((size_t)s.cout * sizeof(float));
    uint8_t *arg = malloc(out + 1);
    int32_t *at = malloc(act * sizeof(int32_t) + 1);
    fill_uniform(x, in, -1, 1, seed);
    fill_uniform(w, ws, -1, 1, seed + 1);
    fill_uniform(b, (size_t)s.cout, -0.5, 0.5, seed + 2);
    fill_uniform(dy, out, -1, 1, seed + 3);
    convpool_backward_naive(dx2, dw2, db2, dy, x, w, b, &s, a, at);
    if (direct) {
        convpool_direct_forward(y, arg, x, w, b, &s, scratch);
        convpool_direct_backward(dw1, db1, dy, y, arg, x, &s, scratch);
    } else {
        convpool_gemm_forward(y, arg, x, w, b, &s, scratch);
        convpool_gemm_backward(dx1, dw1, db1, dy, y, arg, x, w, &s, scratch);
        assert_true(rel_err(dx1, dx2, in) < 1e-5);
    }
    assert_true(rel_err(dw1, dw2, ws) < 1e-5);
    assert_true(rel_err(db1, db2, (size_t)s.cout) < 1e-5);
    if (!direct) { /* without the input gradient: the same weight and bias gradients */
        float *dw3 = malloc(ws * sizeof(float)), *db3 = malloc((size_t)s.cout * sizeof(float));
        convpool_gemm_backward(NULL, dw3, db3, dy, y, arg, x, w, &s, scratch);
        assert_memory_equal(dw3, dw1, ws * sizeof(float));
        assert_memory_equal(db3, db1, (size_t)s.cout * sizeof(float));
        free(dw3), free(db3);
    }
    free(x), free(w), free(b), free(a), free(y), free(dy), free(scratch), free(dx1), free(dx2),
        free(dw1), free(dw2), free(db1), free(db2), free(arg), free(at);
}

/* The cnn's two blocks (small batches), then the edges. */
static const ConvShape SHAPES[] = {
    {.n = 3, .h = 28, .w = 28, .cin = 1, .cout = 16, .k = 3, .pad = 1},
    {.n = 7, .h = 14, .w = 14, .cin = 16, .cout = 32, .k = 3, .pad = 1}, /* gemm blocks of 2 images
                                                                          */
    {.n = 2, .h = 7, .w = 9, .cin = 1, .cout = 5, .k = 3, .pad = 1},     /* odd sides */
    {.n = 2, .h = 9, .w = 6, .cin = 3, .cout = 35, .k = 3, .pad = 1},    /* 3 lane blocks */
    {.n = 1, .h = 11, .w = 11, .cin = 2, .cout = 17, .k = 5, .pad = 2},
    {.n = 2, .h = 8, .w = 7, .cin = 4, .cout = 8, .k = 3, .pad = 0}, /* no padding: 6x5 */
    {.n = 3, .h = 6, .w = 6, .cin = 5, .cout = 3, .k = 1, .pad = 0},
    {.n = 40, .h = 4, .w = 4, .cin = 2, .cout = 4, .k = 3, .pad = 1}, /* 32 images a block */
    {.n = 1, .h = 1, .w = 1, .cin = 1, .cout = 2, .k = 1, .pad = 0},  /* nothing to pool */
    {.n = 2, .h = 6, .w = 5, .cin = 8, .cout = 4, .k = 3, .pad = 1},  /* vectors of 8 inputs */
    {.n = 1, .h = 5, .w = 6, .cin = 24, .cout = 9, .k = 3, .pad = 1},
    {.n = 1, .h = 4, .w = 4, .cin = 32, .cout = 16, .k = 3, .pad = 1},
};
#define N_SHAPES (sizeof SHAPES / sizeof *SHAPES)

static void test_direct_forward_matches_naive(void **state)
{
    (void)state;
    for (size_t i = 0; i < N_SHAPES; i++)
        check_forward(convpool_direct_forward, convpool_direct_scratch(&SHAPES[i]), SHAPES[i],
                      10 * i + 1);
}

static void test_gemm_forward_matches_naive(void **state)
{
    (void)state;
    for (size_t i = 0; i < N_SHAPES; i++)
        check_forward(convpool_gemm_forward, convpool_gemm_scratch(&SHAPES[i]), SHAPES[i],
                      10 * i + 2);
}

static void test_direct_backward_matches_naive(void **state)
{
    (void)state;
    for (size_t i = 0; i < N_SHAPES; i++) check_backward(SHAPES[i], 10 * i + 3, 1);
}

static void test_gemm_backward_matches_naive(void **state)
{
    (void)state;
    for (size_t i = 0; i < N_SHAPES; i++) check_backward(SHAPES[i], 10 * i + 4, 0);
}

/* The fused ReLU + pooling equals relu_forward then maxpool2_forward, and its backward
 * maxpool2_backward then relu_backward, to the bit (they do the same operations). */
static void test_relu_maxpool_equals_unfused_kernels(void **state)
{
    (void)state;
    const int dims[][4] = {{2, 4, 4, 1}, {1, 5, 7, 3}, {3, 6, 3, 16}, {2, 3, 3, 33}};
    for (size_t t = 0; t < sizeof dims / sizeof *dims; t++) {
        int n = dims[t][0], h = dims[t][1], w = dims[t][2], c = dims[t][3];
        size_t in = (size_t)n * h * w * c, out = (size_t)n * (h / 2) * (w / 2) * c;
        float *x = malloc(in * sizeof(float)), *r = malloc(in * sizeof(float));
        float *y1 = malloc(out * sizeof(float)), *y2 = malloc(out * sizeof(float));
        float *dy = malloc(out * sizeof(float)), *dx1 = malloc(in * sizeof(float));
        float *dx2 = malloc(in * sizeof(float));
        uint8_t *arg = malloc(out);
        int32_t *at = malloc(out * sizeof(int32_t));
        fill_uniform(x, in, -1, 1, 100 + t);
        fill_uniform(dy, out, -1, 1, 200 + t);
        for (size_t i = 0; i < in; i += 5) x[i] = x[i + (i + 1 < in)]; /* some ties */
        memcpy(r, x, in * sizeof(float));
        relu_forward(r, in);
        maxpool2_forward(y2, at, r, n, h, w, c);
        relu_maxpool2_forward(y1, arg, x, n, h, w, c);
        assert_memory_equal(y1, y2, out * sizeof(float));
        for (size_t o = 0; o < out; o++)
            if (y2[o] > 0) assert_int_equal(arg[o], window_pos(at[o], h, w, c));
        maxpool2_backward(dx2, dy, at, n, h, w, c);
        relu_backward(dx2, r, in);
        relu_maxpool2_backward(dx1, dy, y1, arg, n, h, w, c);
        assert_memory_equal(dx1, dx2, in * sizeof(float));
        free(x), free(r), free(y1), free(y2), free(dy), free(dx1), free(dx2), free(arg), free(at);
    }
}

/* Same inputs, same bits: twice the same call, and one image alone equals that image within a
 * batch (the direct kernels work image by image; the result must not depend on the batch). */
static void test_direct_results_do_not_depend_on_the_batch(void **state)
{
    (void)state;
    ConvShape s = {.n = 4, .h = 10, .w = 10, .cin = 1, .cout = 16, .k = 3, .pad = 1};
    ConvShape one = s;
    one.n = 1;
    size_t in = 400, out = convpool_out_size(&s), per = out / 4;
    float x[400], w[144], b[16], *y = malloc(out * sizeof(float)), y1[400];
    float *scratch = malloc(convpool_direct_scratch(&s) * sizeof(float));
    uint8_t *arg = malloc(out), arg1[400];
    fill_uniform(x, in, -1, 1, 61);
    fill_uniform(w, 144, -1, 1, 62);
    fill_uniform(b, 16, -1, 1, 63);
    convpool_direct_forward(y, arg, x, w, b, &s, scratch);
    convpool_direct_forward(y1, arg1, x + 200, w, b, &one, scratch);
    assert_memory_equal(y1, y + 2 * per, per * sizeof(float));
    assert_memory_equal(arg1, arg + 2 * per, per);
    free(y), free(scratch), free(arg);
}

/* The direct kernels give the same bits in portable C as with AVX2 (on a CPU without AVX2
 * both calls run the portable code and the test holds trivially). */
static void test_direct_kernels_give_the_same_bits_on_every_cpu(void **state)
{
    (void)state;
    for (size_t i = 0; i < N_SHAPES; i++) {
        const ConvShape *s = &SHAPES[i];
        size_t in = (size_t)s->n * s->h * s->w * s->cin,
               ws = (size_t)s->cout * s->k * s->k * s->cin;
        size_t out = convpool_out_size(s), sc = convpool_direct_scratch(s);
        float *x = malloc(in * sizeof(float)), *w = malloc(ws * sizeof(float));
        float *b = malloc((size_t)s->cout * sizeof(float)), *scratch = malloc(sc * sizeof(float));
        float *y1 = malloc(out * sizeof(float) + 1), *y2 = malloc(out * sizeof(float) + 1);
        float *dy = malloc(out * sizeof(float) + 1), *dw1 = malloc(ws * sizeof(float));
        float *dw2 = malloc(ws * sizeof(float)), *db1 = malloc((size_t)s->cout * sizeof(float));
        float *db2 = malloc((size_t)s->cout * sizeof(float));
        uint8_t *a1 = malloc(out + 1), *a2 = malloc(out + 1);
        fill_uniform(x, in, -1, 1, 70 + i);
        fill_uniform(w, ws, -1, 1, 80 + i);
        fill_uniform(b, (size_t)s->cout, -0.5, 0.5, 90 + i);
        fill_uniform(dy, out, -1, 1, 100 + i);
        convpool_direct_forward(y1, a1, x, w, b, s, scratch);
        convpool_direct_forward_portable(y2, a2, x, w, b, s, scratch);
        assert_memory_equal(y1, y2, out * sizeof(float));
        assert_memory_equal(a1, a2, out);
        convpool_direct_backward(dw1, db1, dy, y1, a1, x, s, scratch);
        convpool_direct_backward_portable(dw2, db2, dy, y1, a1, x, s, scratch);
        assert_memory_equal(dw1, dw2, ws * sizeof(float));
        assert_memory_equal(db1, db2, (size_t)s->cout * sizeof(float));
        free(x), free(w), free(b), free(scratch), free(y1), free(y2), free(dy), free(dw1),
            free(dw2), free(db1), free(db2), free(a1), free(a2);
    }
}

/* The other AVX2 loops (unpooling, im2col, col2im) against their portable twins, to the bit,
 * and im2col and col2im against layers.c's. */
static void test_simd_loops_give_the_same_bits_as_portable_c(void **state)
{
    (void)state;
    const int avx2 = conv_simd_have_avx2();
    for (size_t i = 0; i < N_SHAPES; i++) {
        ConvShape s = SHAPES[i];
        const int oh = conv_out_h(&s), ow = conv_out_w(&s);
        size_t in = (size_t)s.n * s.h * s.w * s.cin, cs = conv_col_size(&s);
        size_t act = (size_t)s.n * oh * ow * s.cout, out = convpool_out_size(&s);
        float *x = malloc(in * sizeof(float)), *c1 = malloc(cs * sizeof(float) + 1);
        float *c2 = malloc(cs * sizeof(float) + 1), *d1 = malloc(in * sizeof(float));
        float *d2 = malloc(in * sizeof(float)), *a1 = malloc(act * sizeof(float));
        float *a2 = malloc(act * sizeof(float)), *y = malloc(out * sizeof(float) + 1);
        float *dy = malloc(out * sizeof(float) + 1);
        uint8_t *arg = malloc(out + 1);
        fill_uniform(x, in, -1, 1, 110 + i);
        conv_simd_im2col(c1, x, &s, avx2);
        conv_simd_im2col(c2, x, &s, 0);
        assert_memory_equal(c1, c2, cs * sizeof(float));
        im2col(c2, x, &s);
        assert_memory_equal(c1, c2, cs * sizeof(float));
        fill_uniform(c1, cs, -1, 1, 120 + i);
        conv_simd_col2im(d1, c1, &s, avx2);
        conv_simd_col2im(d2, c1, &s, 0);
        assert_memory_equal(d1, d2, in * sizeof(float));
        col2im(d2, c1, &s);
        assert_memory_equal(d1, d2, in * sizeof(float));
        fill_uniform(a1, act, -1, 1, 130 + i);
        fill_uniform(dy, out, -1, 1, 140 + i);
        relu_maxpool2_forward(y, arg, a1, s.n, oh, ow, s.cout);
        conv_simd_unpool(a1, dy, y, arg, s.n, oh, ow, s.cout, avx2);
        conv_simd_unpool(a2, dy, y, arg, s.n, oh, ow, s.cout, 0);
        assert_memory_equal(a1, a2, act * sizeof(float));
        free(x), free(c1), free(c2), free(d1), free(d2), free(a1), free(a2), free(y), free(dy),
            free(arg);
    }
}

/* The cnn splits its batch in blocks over as many threads as OpenBLAS has and sums the blocks'
 * gradients in block order: 1, 2 and 3 threads give the same loss and gradient, to the bit (a
 * batch of 12: six blocks of 2 images). */
static void test_cnn_gives_the_same_bits_on_any_thread_count(void **state)
{
    (void)state;
    enum { N = 12 };
    ModelConfig c = model_config_default();
    Model *m = NULL;
    assert_int_equal(model_create(model_find("cnn"), &c, 7, &m, NULL), BW_OK);
    float *x = malloc((size_t)N * 784 * sizeof(float));
    float *g1 = malloc(m->n_params * sizeof(float));
    uint8_t y[N];
    fill_uniform(x, (size_t)N * 784, -1, 1, 150);
    for (int i = 0; i < N; i++) y[i] = (uint8_t)(i % 10);
    int was = openblas_get_num_threads();
    double loss1 = 0;
    for (int t = 1; t <= 3; t++) {
        openblas_set_num_threads(t);
        double loss = model_forward_backward(m, x, y, N);
        assert_int_equal(openblas_get_num_threads(), t); /* restored */
        if (t == 1) {
            loss1 = loss;
            memcpy(g1, m->grads, m->n_params * sizeof(float));
            continue;
        }
        assert_memory_equal(&loss, &loss1, sizeof loss);
        assert_memory_equal(m->grads, g1, m->n_params * sizeof(float));
    }
    openblas_set_num_threads(was);
    free(x), free(g1);
    model_free(m);
}

/* Two workers' cnn steps at once, on their own threads, as the driver's pool runs them, with
 * OpenBLAS on 2 threads: each gets the gradient it gets alone, and OpenBLAS's count is 2 again
 * afterwards (the passes share the switch to one OpenBLAS thread). */
typedef struct {
    Model *m;
    const float *x;
    const uint8_t *y;
    float *g;
} StepJob;

static void *step_job(void *p)
{
    StepJob *j = p;
    for (int r = 0; r < 20; r++) model_forward_backward(j->m, j->x, j->y, 12);
    memcpy(j->g, j->m->grads, j->m->n_params * sizeof(float));
    return NULL;
}

static void test_cnn_steps_on_two_threads_at_once_match_alone(void **state)
{
    (void)state;
    enum { N = 12 };
    ModelConfig c = model_config_default();
    Model *m[2] = {NULL, NULL};
    for (int k = 0; k < 2; k++)
        assert_int_equal(model_create(model_find("cnn"), &c, 11 + k, &m[k], NULL), BW_OK);
    size_t np = m[0]->n_params;
    float *x = malloc((size_t)N * 784 * sizeof(float));
    float *alone = malloc(2 * np * sizeof(float)), *both = malloc(2 * np * sizeof(float));
    uint8_t y[N];
    fill_uniform(x, (size_t)N * 784, -1, 1, 160);
    for (int i = 0; i < N; i++) y[i] = (uint8_t)((3 * i) % 10);
    int was = openblas_get_num_threads();
    openblas_set_num_threads(2);
    StepJob jobs[2];
    for (int k = 0; k < 2; k++) {
        jobs[k] = (StepJob){.m = m[k], .x = x, .y = y, .g = alone + k * np};
        step_job(&jobs[k]);
        jobs[k].g = both + k * np;
    }
    pthread_t t[2];
    for (int k = 0; k < 2; k++)
        assert_int_equal(pthread_create(&t[k], NULL, step_job, &jobs[k]), 0);
    for (int k = 0; k < 2; k++) pthread_join(t[k], NULL);
    assert_memory_equal(alone, both, 2 * np * sizeof(float));
    assert_int_equal(openblas_get_num_threads(), 2);
    openblas_set_num_threads(was);
    free(x), free(alone), free(both);
    model_free(m[0]), model_free(m[1]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_direct_forward_matches_naive),
        cmocka_unit_test(test_gemm_forward_matches_naive),
        cmocka_unit_test(test_direct_backward_matches_naive),
        cmocka_unit_test(test_gemm_backward_matches_naive),
        cmocka_unit_test(test_relu_maxpool_equals_unfused_kernels),
        cmocka_unit_test(test_direct_results_do_not_depend_on_the_batch),
        cmocka_unit_test(test_direct_kernels_give_the_same_bits_on_every_cpu),
        cmocka_unit_test(test_simd_loops_give_the_same_bits_as_portable_c),
        cmocka_unit_test(test_cnn_gives_the_same_bits_on_any_thread_count),
        cmocka_unit_test(test_cnn_steps_on_two_threads_at_once_match_alone),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
