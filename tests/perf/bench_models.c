/* bench_models.c: wall time of one training step (forward + backward + SGD update) of a
 * bellows model, and OpenBLAS sgemm's own rate on this machine. Prints one machine-readable
 * line per measurement; tests/perf/run_all.sh puts them beside PyTorch's.
 *   bench_models step MODEL BATCH THREADS [SECONDS]
 *   bench_models sgemm N THREADS [SECONDS] */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "optim.h"
#include "blas_cpu.h"
#include "wallclock.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median seconds per call of fn over blocks of `per_block` calls, for at least `seconds`. */
static double median_time(void (*fn)(void *), void *ctx, int per_block, double seconds)
{
    enum { MAX_BLOCKS = 4096 };
    static double blocks[MAX_BLOCKS];
    for (int i = 0; i < 3; i++) fn(ctx); /* warm-up */
    int n = 0;
    double start = wallclock_s();
    while (n < MAX_BLOCKS && (n < 5 || wallclock_s() - start < seconds)) {
        double t0 = wallclock_s();
        for (int i = 0; i < per_block; i++) fn(ctx);
        blocks[n++] = (wallclock_s() - t0) / per_block;
    }
    qsort(blocks, (size_t)n, sizeof *blocks, cmp_double);
    return blocks[n / 2];
}

typedef struct {
    Model *m;
    Sgd opt;
    float *x;
    uint8_t *y;
    int batch, n_batches, at;
} StepCtx;

static void one_step(void *p)
{
    StepCtx *c = p;
    int b = c->at++ % c->n_batches;
    model_forward_backward(c->m, c->x + (size_t)b * c->batch * 784, c->y + (size_t)b * c->batch,
                           c->batch);
    sgd_step(&c->opt, c->m->params, c->m->grads, 0.02);
}

typedef struct {
    int n;
    float *a, *b, *c;
} GemmCtx;

static void one_gemm(void *p)
{
    GemmCtx *g = p;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, g->n, g->n, g->n, 1.0f, g->a, g->n, g->b,
                g->n, 0.0f, g->c, g->n);
}

static int usage(void)
{
    fprintf(stderr, "usage: bench_models step MODEL BATCH THREADS [SECONDS]\n"
                    "       bench_models sgemm N THREADS [SECONDS]\n");
    return 2;
}

int main(int argc, char **argv)
{
    blas_cpu_fix_kernels(argv); /* as bellows itself does */
    if (argc < 4) return usage();
    if (strcmp(argv[1], "step") == 0 && argc >= 5) {
        const ModelOps *ops = model_find(argv[2]);
        int batch = atoi(argv[3]), threads = atoi(argv[4]);
        double seconds = argc > 5 ? atof(argv[5]) : 2.0;
        if (!ops || batch <= 0 || threads <= 0) return usage();
        openblas_set_num_threads(threads);
        ModelConfig mc = model_config_default();
        StepCtx c = {.batch = batch, .n_batches = 8};
        BwError err;
        if (model_create(ops, &mc, 1, &c.m, &err) ||
            sgd_init(&c.opt, c.m->n_params, (SgdConfig){.momentum = 0.9}, &err)) {
            fprintf(stderr, "bench_models: %s\n", err.msg);
            return 1;
        }
        size_t n = (size_t)c.n_batches * batch;
        c.x = malloc(n * 784 * sizeof(float));
        c.y = malloc(n);
        srand(1);
        for (size_t i = 0; i < n * 784; i++) c.x[i] = (float)rand() / RAND_MAX - 0.5f;
        for (size_t i = 0; i < n; i++) c.y[i] = (uint8_t)(rand() % 10);
        double t = median_time(one_step, &c, 10, seconds);
        double gflops = model_flops_per_sample(c.m) * batch / t / 1e9;
        printf("bellows model=%s batch=%d threads=%d core=%s step_us=%.1f gflops=%.2f\n", ops->name,
               batch, threads, blas_cpu_core(), t * 1e6, gflops);
        free(c.x), free(c.y);
        sgd_free(&c.opt);
        model_free(c.m);
        return 0;
    }
    if (strcmp(argv[1], "sgemm") == 0) {
        GemmCtx g = {.n = atoi(argv[2])};
        int threads = atoi(argv[3]);
        double seconds = argc > 4 ? atof(argv[4]) : 2.0;
        if (g.n <= 0 || threads <= 0) return usage();
        openblas_set_num_threads(threads);
        size_t nn = (size_t)g.n * g.n;
        g.a = malloc(nn * sizeof(float)), g.b = malloc(nn * sizeof(float));
        g.c = malloc(nn * sizeof(float));
        for (size_t i = 0; i < nn; i++) g.a[i] = g.b[i] = (float)(i % 7) * 0.1f;
        double t = median_time(one_gemm, &g, 1, seconds);
        printf("sgemm n=%d threads=%d core=%s us=%.1f gflops=%.2f\n", g.n, threads, blas_cpu_core(),
               t * 1e6, 2.0 * g.n * (double)g.n * g.n / t / 1e9);
        free(g.a), free(g.b), free(g.c);
        return 0;
    }
    return usage();
}
