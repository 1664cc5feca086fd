/* bench_compress.c: wall time of each compressor's encode + decode (compress_reduce with one
 * worker, so the collectives move nothing over the simulated network and the time is the
 * compressor's own work plus the copies the collectives make) on one ROWS x COLS layer, beside
 * a dense memcpy and a dense sum y += x of the same layer: the memory-bandwidth limit. All
 * candidates are timed call by call, interleaved over several rounds in one process, and
 * reported as medians with their ratios to memcpy and to the sum.
 *   bench_compress [ROWS COLS] [ROUNDS] [SECONDS_PER_ROUND] [THREADS]
 * (defaults 1000 1000 3 0.3 1); tests/perf/run_compress.sh runs it. */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <simgrid/actor.h>
#include <simgrid/engine.h>

#include "blas_cpu.h"
#include "compress.h"
#include "engine.h"
#include "wallclock.h"

typedef struct {
    const char *spec; /* NULL: a baseline */
    const char *label;
    double level;
} Candidate;

static const Candidate CANDIDATES[] = {
    {NULL, "memcpy", 0},          {NULL, "sum y += x", 0},     {"none", "none", 0},
    {"fp16", "fp16", 1},          {"powersgd", "powersgd", 1}, {"powersgd", "powersgd", 4},
    {"topk", "topk", 0.1},        {"topk", "topk", 0.01},      {"randomk", "randomk", 0.1},
    {"randomk", "randomk", 0.01}, {"qsgd", "qsgd", 127},       {"qsgd", "qsgd", 4},
    {"signsgd", "signsgd", 1},
};
enum { NC = sizeof CANDIDATES / sizeof *CANDIDATES, MAX_SAMPLES = 100000 };

static int ROWS = 1000, COLS = 1000, ROUNDS = 3, THREADS = 1;
static double SECONDS = 0.3;
static Comm *COMM;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void worker(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    const size_t n = (size_t)ROWS * COLS;
    LayerView layer = {"w", 0, ROWS, COLS, 2};
    float *src = malloc(n * sizeof(float)), *g = malloc(n * sizeof(float));
    float *y = calloc(n, sizeof(float));
    srand(1);
    for (size_t i = 0; i < n; i++) src[i] = (float)rand() / RAND_MAX - 0.5f;
    Compressor *comp[NC] = {0};
    double *samples[NC], bytes[NC] = {0};
    int count[NC] = {0};
    for (int c = 0; c < NC; c++) {
        samples[c] = malloc(MAX_SAMPLES * sizeof(double));
        BwError err;
        if (CANDIDATES[c].spec &&
            compress_create(CANDIDATES[c].spec, "bench", &layer, 1, 1, 0, 1, &comp[c], &err)) {
            fprintf(stderr, "bench_compress: %s\n", err.msg);
            exit(1);
        }
    }
    for (int round = 0; round < ROUNDS; round++)
        for (int c = 0; c < NC; c++) {
            double start = wallclock_s();
            int calls = 0;
            while (calls < 3 || wallclock_s() - start < SECONDS) {
                memcpy(g, src, n * sizeof(float)); /* a fresh gradient, outside the timing */
                double t0 = wallclock_s();
                if (c == 0)
                    memcpy(y, g, n * sizeof(float));
                else if (c == 1)
                    for (size_t i = 0; i < n; i++) y[i] += g[i];
                else
                    bytes[c] = compress_reduce(comp[c], COMM, g, &CANDIDATES[c].level);
                double t = wallclock_s() - t0;
                if (round > 0 || calls > 0) /* the first call warms caches and buffers */
                    if (count[c] < MAX_SAMPLES) samples[c][count[c]++] = t;
                calls++;
            }
        }
    double med[NC];
    for (int c = 0; c < NC; c++) {
        qsort(samples[c], (size_t)count[c], sizeof(double), cmp_double);
        med[c] = samples[c][count[c] / 2];
    }
    printf("encode + decode of one %d x %d layer (%zu floats, %.1f MB), 1 worker, OpenBLAS %s "
           "%d thread(s); median wall time per call over %d rounds\n",
           ROWS, COLS, n, n * 4 / 1e6, blas_cpu_core(), THREADS, ROUNDS);
    printf("%-12s %8s %11s %9s %9s %12s %10s %7s\n", "candidate", "level", "us_per_call",
           "x_memcpy", "x_sum", "wire_bytes", "vs_fp32", "calls");
    for (int c = 0; c < NC; c++) {
        char level[16] = "-";
        if (CANDIDATES[c].spec) snprintf(level, sizeof level, "%g", CANDIDATES[c].level);
        char wire[24] = "-", ratio[16] = "-";
        if (CANDIDATES[c].spec) {
            snprintf(wire, sizeof wire, "%.0f", bytes[c]);
            snprintf(ratio, sizeof ratio, "%.1fx", n * 4.0 / bytes[c]);
        }
        printf("%-12s %8s %11.1f %9.2f %9.2f %12s %10s %7d\n", CANDIDATES[c].label, level,
               med[c] * 1e6, med[c] / med[0], med[c] / med[1], wire, ratio, count[c]);
    }
    printf("(x_memcpy, x_sum: the call's time over a memcpy / a y += x of the same layer; "
           "vs_fp32: dense fp32 bytes over wire bytes; checksum %g)\n",
           (double)y[n / 2]);
    for (int c = 0; c < NC; c++) {
        compress_free(comp[c]);
        free(samples[c]);
    }
    free(src), free(g), free(y);
}

int main(int argc, char **argv)
{
    blas_cpu_fix_kernels(argv); /* as bellows itself does */
    if (argc > 2) ROWS = atoi(argv[1]), COLS = atoi(argv[2]);
    if (argc > 3) ROUNDS = atoi(argv[3]);
    if (argc > 4) SECONDS = atof(argv[4]);
    if (argc > 5) THREADS = atoi(argv[5]);
    if (ROWS <= 0 || COLS <= 0 || ROUNDS <= 0 || SECONDS <= 0 || THREADS <= 0) {
        fprintf(stderr, "usage: bench_compress [ROWS COLS] [ROUNDS] [SECONDS] [THREADS]\n");
        return 2;
    }
    openblas_set_num_threads(THREADS);
    Cluster cl = cluster_default();
    cl.workers = 1;
    BwError err;
    if (cluster_resolve(&cl, &err) || engine_init(0, NULL, "exact", &err) ||
        engine_load_cluster(&cl, &err)) {
        fprintf(stderr, "bench_compress: %s\n", err.msg);
        return 1;
    }
    COMM = coll_comm_create(&cl, COLL_RING, COLL_TRANSFER);
    sg_actor_create("worker", engine_host(0), worker, 0, NULL);
    simgrid_run();
    coll_comm_free(COMM);
    return 0;
}
