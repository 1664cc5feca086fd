/* compresstest.h: the harness of the compressor suites (test_compress.c,
 * test_compress_methods.c). simulate() runs W workers in a forked child (one SimGrid engine per
 * process) on a star cluster; every worker records, per step, its input, its error-feedback
 * memory before and after, its decoded gradient, the bytes compress_reduce reported and the
 * growth of its collectives' books (payload, calls, bytes sent, simulated seconds), in shared
 * memory. Then the layer table, level schedules, and the checks both suites make: bytes equal to
 * the payload with every rank agreeing, and compress_plan's messages equal to those reduce really
 * sent. Header-only; every function is static inline so each suite takes what it uses. */
#ifndef BELLOWS_COMPRESSTEST_H
#define BELLOWS_COMPRESSTEST_H

#include "testutil.h"

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <simgrid/actor.h>
#include <simgrid/engine.h>

#include "compress_impl.h"
#include "engine.h"

#define MAXL     8
#define MAXW     8
#define MAX_ROWS 8 /* level schedules: step s uses row min(s, n_rows - 1) */

typedef enum { IN_RANDOM, IN_SAME, IN_FIXED, IN_FUNC } InputKind;

typedef struct {
    char spec[128];
    int workers, steps;
    CollAlgo algo;
    CollBackend backend;
    int n_layers;
    LayerView layers[MAXL];
    int n_rows;
    double levels[MAX_ROWS][MAXL];
    unsigned long seed;
    InputKind input;
    void (*fill)(int rank, int step, float *g, size_t n);
    int into; /* compress_reduce_into one mean buffer that every rank shares */
} Run;

/* The child's findings: a header, then per (step, rank) the bytes and the growth of the
 * collectives' books (payload, calls, bytes sent, simulated seconds), and per (step, rank) np
 * floats each of input, memory before, memory after and output. */
typedef struct {
    int done;
    char error[512];
    size_t np;
    int steps, workers;
    double data[]; /* see the accessors */
} Shared;

enum { B_BYTES, B_PAYLOAD, B_CALLS, B_SENT, B_TIME, B_INTO, N_BOOKS };

static inline size_t shared_size(size_t np, int steps, int W)
{
    size_t cells = (size_t)steps * (size_t)W;
    return sizeof(Shared) + N_BOOKS * cells * sizeof(double) + 4 * cells * np * sizeof(float);
}
static inline double *BOOK(Shared *s, int which, int step, int w)
{
    return s->data + ((size_t)which * s->steps + (size_t)step) * s->workers + w;
}
#define BYTES(s, t, w)  BOOK(s, B_BYTES, t, w)
#define GROWTH(s, t, w) BOOK(s, B_PAYLOAD, t, w)
static inline float *ARR(Shared *s, int which, int step, int w)
{
    float *base = (float *)(s->data + N_BOOKS * (size_t)s->steps * s->workers);
    size_t cells = (size_t)s->steps * s->workers;
    return base + ((size_t)which * cells + (size_t)step * s->workers + w) * s->np;
}
enum { A_IN, A_MEM0, A_MEM1, A_OUT };
#define IN(s, t, w)   ARR(s, A_IN, t, w)
#define MEM0(s, t, w) ARR(s, A_MEM0, t, w)
#define MEM1(s, t, w) ARR(s, A_MEM1, t, w)
#define OUT(s, t, w)  ARR(s, A_OUT, t, w)

static Run R;
static Shared *SH;
static Comm *COMM;
static Compressor *COMP[MAXW];
static float *MEAN; /* Run.into: the mean every rank's compress_reduce_into may fill */

static inline size_t n_params(const Run *r)
{
    size_t np = 0;
    for (int l = 0; l < r->n_layers; l++) {
        size_t end = r->layers[l].offset + layer_size(&r->layers[l]);
        np = end > np ? end : np;
    }
    return np;
}

static inline const double *levels_at(const Run *r, int step)
{
    return r->levels[step < r->n_rows ? step : r->n_rows - 1];
}

static inline void make_input(int rank, int step, float *g, size_t np)
{
    switch (R.input) {
    case IN_RANDOM:
        fill_uniform(g, np, -1, 1, 1000 + (uint64_t)rank * 7919 + (uint64_t)step * 104729);
        break;
    case IN_SAME:
        fill_uniform(g, np, -1, 1, 2000 + (uint64_t)step * 104729);
        break;
    case IN_FIXED:
        fill_uniform(g, np, -1, 1, 77);
        break;
    case IN_FUNC:
        R.fill(rank, step, g, np);
        break;
    }
}

static inline void worker(int argc, char **argv)
{
    (void)argc;
    int rank = atoi(argv[1]);
    size_t np = SH->np;
    float *g = malloc(np * sizeof(float));
    for (int t = 0; t < R.steps; t++) {
        make_input(rank, t, g, np);
        memcpy(IN(SH, t, rank), g, np * sizeof(float));
        const float *mem = compress_memory(COMP[rank]);
        if (mem) memcpy(MEM0(SH, t, rank), mem, np * sizeof(float));
        const CollStats before = *coll_stats(COMM, rank);
        int into = 0;
        *BYTES(SH, t, rank) = compress_reduce_into(COMP[rank], COMM, g, levels_at(&R, t),
                                                   R.into ? MEAN : NULL, &into);
        *BOOK(SH, B_INTO, t, rank) = into;
        const CollStats *after = coll_stats(COMM, rank);
        *GROWTH(SH, t, rank) = after->payload_bytes - before.payload_bytes;
        *BOOK(SH, B_CALLS, t, rank) = (double)(after->calls - before.calls);
        *BOOK(SH, B_SENT, t, rank) = after->bytes_sent - before.bytes_sent;
        *BOOK(SH, B_TIME, t, rank) = after->time_s - before.time_s;
        memcpy(OUT(SH, t, rank), into ? MEAN : g, np * sizeof(float));
        if (mem) memcpy(MEM1(SH, t, rank), mem, np * sizeof(float));
    }
    free(g);
    SH->done++;
}

/* Runs r in a child; the caller releases the result with release(). */
static inline Shared *simulate(const Run *r)
{
    R = *r;
    size_t np = n_params(r), size = shared_size(np, r->steps, r->workers);
    assert_true(r->workers <= MAXW && r->steps >= 1);
    SH = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    assert_true(SH != MAP_FAILED);
    memset(SH, 0, size); /* memories stay zero when a compressor keeps none */
    SH->np = np;
    SH->steps = r->steps;
    SH->workers = r->workers;
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        BwError err;
        Cluster cl = cluster_default();
        cl.workers = r->workers;
        int rc = cluster_resolve(&cl, &err);
        if (!rc) rc = engine_init(0, NULL, "exact", &err);
        if (!rc) rc = engine_load_cluster(&cl, &err);
        for (int w = 0; w < r->workers && !rc; w++)
            rc = compress_create(r->spec, "--compressor", r->layers, r->n_layers, r->workers, w,
                                 r->seed, &COMP[w], &err);
        if (rc) {
            snprintf(SH->error, sizeof SH->error, "%s", err.msg);
            _exit(3);
        }
        COMM = coll_comm_create(&cl, r->algo, r->backend);
        MEAN = malloc(sizeof(float) * np);
        for (int w = 0; w < r->workers; w++) {
            char arg[16];
            snprintf(arg, sizeof arg, "%d", w);
            char *av[] = {"worker", arg, NULL};
            sg_actor_create("worker", engine_host(w), worker, 2, av);
        }
        simgrid_run();
        for (int w = 0; w < r->workers; w++) compress_free(COMP[w]);
        coll_comm_free(COMM);
        free(MEAN);
        _exit(0); /* skip SimGrid's exit-time teardown */
    }
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        fail_msg("%s: simulation child failed (status %d) %s", r->spec, st, SH->error);
    assert_int_equal(SH->done, r->workers);
    return SH;
}

static inline void release(Shared *s)
{
    munmap(s, shared_size(s->np, s->steps, s->workers));
}

/* ---- the layer table and level schedules ---- */

static const LayerView LAYERS[] = {
    {"w1", 0, 24, 17, 2},  {"b1", 408, 24, 1, 1}, {"w2", 432, 10, 24, 2},
    {"b2", 672, 10, 1, 1}, {"w3", 682, 1, 30, 2}, {"w4", 712, 33, 3, 2},
};
enum { NL = 6, NP = 811 };

static inline Run base_run(const char *spec, int workers, int steps)
{
    Run r = {.workers = workers, .steps = steps, .n_layers = NL, .seed = 42, .n_rows = 1};
    snprintf(r.spec, sizeof r.spec, "%s", spec);
    memcpy(r.layers, LAYERS, sizeof LAYERS);
    return r;
}

/* Steps 0 .. n-1 at the levels rows[0 .. n-1] (row by row: a row of r->levels holds MAXL). */
static inline void set_schedule(Run *r, int n, const double (*rows)[NL])
{
    assert_true(n <= MAX_ROWS);
    r->n_rows = n;
    for (int t = 0; t < n; t++) memcpy(r->levels[t], rows[t], sizeof rows[t]);
}

static inline double layer_max_abs(const float *a, const float *b, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++) m = fmax(m, fabs((double)a[i] + (b ? b[i] : 0)));
    return m;
}

static inline void check_bytes_and_agreement(const Run *r, Shared *s)
{
    for (int t = 0; t < r->steps; t++) {
        for (int w = 0; w < r->workers; w++) {
            if (*BYTES(s, t, w) != *GROWTH(s, t, w) || *BYTES(s, t, w) <= 0)
                fail_msg("%s, %d workers, step %d, rank %d: reported %.0f bytes, the collectives "
                         "were handed %.0f",
                         r->spec, r->workers, t, w, *BYTES(s, t, w), *GROWTH(s, t, w));
            assert_true(*BYTES(s, t, w) == *BYTES(s, t, 0));
            if (memcmp(OUT(s, t, w), OUT(s, t, 0), NP * sizeof(float)) != 0)
                fail_msg("%s, step %d: rank %d decoded a different gradient from rank 0", r->spec,
                         t, w);
        }
        for (size_t i = 0; i < NP; i++) assert_true(isfinite(OUT(s, t, 0)[i]));
        /* vectors are the exact mean of the inputs plus memories (zero for vectors) */
        for (int l = 0; l < NL; l++) {
            if (LAYERS[l].ndim != 1) continue;
            for (size_t i = LAYERS[l].offset; i < LAYERS[l].offset + layer_size(&LAYERS[l]); i++) {
                double mean = 0;
                for (int w = 0; w < r->workers; w++) mean += IN(s, t, w)[i];
                mean /= r->workers;
                assert_true(fabs(OUT(s, t, 0)[i] - mean) < 1e-6);
            }
        }
    }
}

/* The analytic backend's run of r against compress_plan: each step's planned messages, charged
 * to an offline communicator of the same cluster, must grow every rank's books (calls, payload,
 * bytes sent, simulated seconds) exactly as the real reduce did. This is what the fast replay
 * relies on. */
static inline void check_plan_matches_reduce(const Run *r, Shared *s)
{
    BwError err;
    Cluster cl = cluster_default();
    cl.workers = r->workers;
    assert_int_equal(cluster_resolve(&cl, &err), BW_OK);
    Comm *books = coll_comm_create_offline(&cl, r->algo);
    Compressor *c;
    assert_int_equal(compress_create(r->spec, "--compressor", r->layers, r->n_layers, r->workers, 0,
                                     r->seed, &c, &err),
                     BW_OK);
    assert_non_null(books);
    for (int t = 0; t < r->steps; t++) {
        CompressMsg msgs[COMPRESS_MAX_MSGS];
        int n = compress_plan(c, levels_at(r, t), msgs);
        CollStats before[MAXW];
        for (int w = 0; w < r->workers; w++) before[w] = *coll_stats(books, w);
        double planned_s = 0, planned_bytes = 0;
        for (int i = 0; i < n; i++) {
            if (msgs[i].op == COMPRESS_ALLGATHER) {
                planned_s += coll_charge_allgather(books, msgs[i].count);
                planned_bytes += (double)msgs[i].count;
            } else {
                size_t es = msgs[i].op == COMPRESS_ALLREDUCE_F16 ? 2 : 4;
                planned_s += coll_charge_allreduce(books, msgs[i].count, es);
                planned_bytes += (double)(msgs[i].count * es);
            }
        }
        for (int w = 0; w < r->workers; w++) {
            const CollStats *a = coll_stats(books, w);
            double calls = (double)(a->calls - before[w].calls);
            double sent = a->bytes_sent - before[w].bytes_sent;
            double payload = a->payload_bytes - before[w].payload_bytes;
            if (calls != *BOOK(s, B_CALLS, t, w) || payload != *GROWTH(s, t, w) ||
                planned_bytes != *BYTES(s, t, w) || sent != *BOOK(s, B_SENT, t, w) ||
                fabs(planned_s - *BOOK(s, B_TIME, t, w)) > 1e-12 * planned_s)
                fail_msg("%s, %d workers, step %d, rank %d: planned %.0f calls, %.0f payload "
                         "bytes, %.0f sent, %.12g s; reduce made %.0f calls, %.0f payload bytes, "
                         "%.0f sent, %.12g s",
                         r->spec, r->workers, t, w, calls, payload, sent, planned_s,
                         *BOOK(s, B_CALLS, t, w), *GROWTH(s, t, w), *BOOK(s, B_SENT, t, w),
                         *BOOK(s, B_TIME, t, w));
        }
    }
    compress_free(c);
    coll_comm_free(books);
}

#endif
