/* bench_coll.c: wall-clock cost of simulating collectives. One measurement per process (one
 * SimGrid engine per process); tests/perf/run_coll.sh runs them side by side.
 *   bench_coll ring|analytic|bare|memory|replay WORKERS ITERATIONS FLOATS [THREADS]
 * ring: coll_allreduce, transfer level; analytic: the analytic backend; bare: the same ring
 * pattern with raw SimGrid transfers (no payload, no reduction), the engine's own cost;
 * replay: the ring's messages alone, without data (coll_cost_allreduce), as a run replays them
 * after its mirror has done the sums (sim/net/coll_mirror.c): the collective layer's own cost;
 * memory: the reduction alone, without SimGrid, as the ring does it (sim/net/coll_sum.c: block
 * by block, each chunk's blocks summed over the ranks in the ring's order and stored to every
 * rank's buffer), the floor any ring that returns the real sums pays on top of bare transfers.
 * THREADS (1): ring and analytic with a pool of that many for their in-memory sums.
 * Prints wall seconds per allreduce and per simulated transfer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <simgrid/actor.h>
#include <simgrid/comm.h>
#include <simgrid/engine.h>
#include <simgrid/mailbox.h>

#include "coll.h"
#include "engine.h"
#include "pool.h"
#include "wallclock.h"

static int P, ITERS, MODE; /* 0 ring, 1 analytic, 2 bare, 3 memory, 4 replay */
static size_t FLOATS;
static Comm *COMM;
static sg_mailbox_t *MB;

static void worker(int argc, char **argv)
{
    (void)argc;
    int rank = atoi(argv[1]);
    if (MODE == 2) {
        static char token;
        for (int it = 0; it < ITERS; it++)
            for (int s = 0; s < 2 * (P - 1); s++) {
                void *got;
                sg_comm_t c[2] = {sg_mailbox_put_async(MB[(rank + 1) % P], &token,
                                                       (long)(FLOATS / P * sizeof(float))),
                                  sg_mailbox_get_async(MB[rank], &got)};
                sg_comm_wait_all(c, 2);
            }
        return;
    }
    if (MODE == 4) {
        for (int it = 0; it < ITERS; it++) coll_cost_allreduce(COMM, rank, FLOATS, sizeof(float));
        return;
    }
    float *buf = calloc(FLOATS, sizeof(float));
    for (int it = 0; it < ITERS; it++) coll_allreduce(COMM, rank, buf, FLOATS);
    free(buf);
}

/* The ring's reduction for all ranks at once, as coll_sum.c does it: chunk j's elements, block
 * by block (8 KB), summed over ranks j, j + 1, ... and stored to every rank's buffer. */
static void memory_floor(void)
{
    enum { BLOCK = 2048 };
    float **b = malloc(sizeof *b * (size_t)P);
    for (int r = 0; r < P; r++) b[r] = calloc(FLOATS, sizeof(float));
    static float blk[BLOCK];
    for (int it = 0; it < ITERS; it++)
        for (int j = 0; j < P; j++) {
            size_t a = FLOATS * (size_t)j / (size_t)P, e = FLOATS * (size_t)(j + 1) / (size_t)P;
            for (size_t lo = a; lo < e; lo += BLOCK) {
                size_t n = e - lo < BLOCK ? e - lo : BLOCK;
                memcpy(blk, b[j] + lo, n * sizeof(float));
                for (int k = 1; k < P; k++) {
                    const float *x = b[(j + k) % P] + lo;
                    for (size_t i = 0; i < n; i++) blk[i] += x[i];
                }
                for (int r = 0; r < P; r++) memcpy(b[r] + lo, blk, n * sizeof(float));
            }
        }
    for (int r = 0; r < P; r++) free(b[r]);
    free(b);
}

int main(int argc, char **argv)
{
    if (argc != 5 && argc != 6) {
        fprintf(stderr,
                "usage: bench_coll ring|analytic|bare|memory|replay WORKERS ITERATIONS FLOATS "
                "[THREADS]\n");
        return 2;
    }
    const int threads = argc == 6 ? atoi(argv[5]) : 1;
    MODE = strcmp(argv[1], "ring") == 0       ? 0
           : strcmp(argv[1], "analytic") == 0 ? 1
           : strcmp(argv[1], "bare") == 0     ? 2
           : strcmp(argv[1], "replay") == 0   ? 4
                                              : 3;
    P = atoi(argv[2]);
    ITERS = atoi(argv[3]);
    FLOATS = (size_t)atol(argv[4]);
    if (MODE == 3) {
        double t0 = wallclock_s();
        memory_floor();
        double wall = wallclock_s() - t0;
        printf("memory workers=%d iterations=%d floats=%zu wall_s=%.4f per_allreduce_ms=%.4f "
               "per_transfer_us=%.3f\n",
               P, ITERS, FLOATS, wall, wall / ITERS * 1e3,
               wall / ((double)ITERS * P * 2.0 * (P - 1)) * 1e6);
        return 0;
    }
    Cluster cl = cluster_default();
    cl.workers = P;
    BwError err;
    char *sg[] = {"--cfg=contexts/factory:raw", NULL};
    if (cluster_resolve(&cl, &err) || engine_init(1, sg, "exact", &err) ||
        engine_load_cluster(&cl, &err)) {
        fprintf(stderr, "bench_coll: %s\n", err.msg);
        return 1;
    }
    COMM = coll_comm_create(&cl, COLL_RING, MODE == 1 ? COLL_ANALYTIC : COLL_TRANSFER);
    Pool *pool = threads > 1 ? pool_create(threads) : NULL;
    coll_comm_set_pool(COMM, pool);
    MB = calloc((size_t)P, sizeof *MB);
    for (int r = 0; r < P; r++) {
        char name[32];
        snprintf(name, sizeof name, "bare%d", r);
        MB[r] = sg_mailbox_by_name(name);
        char arg[16];
        snprintf(arg, sizeof arg, "%d", r);
        char *av[] = {"worker", arg, NULL};
        sg_actor_create("worker", engine_host(r), worker, 2, av);
    }
    double t0 = wallclock_s();
    simgrid_run();
    double wall = wallclock_s() - t0;
    double transfers = (double)ITERS * P * 2.0 * (P - 1);
    printf("%s workers=%d threads=%d iterations=%d floats=%zu wall_s=%.4f per_allreduce_ms=%.4f "
           "per_transfer_us=%.3f sim_s=%.6g\n",
           argv[1], P, threads, ITERS, FLOATS, wall, wall / ITERS * 1e3,
           MODE == 1 ? 0.0 : wall / transfers * 1e6, simgrid_get_clock());
    coll_comm_free(COMM);
    pool_free(pool);
    free(MB);
    return 0;
}
