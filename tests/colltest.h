/* colltest.h: the harness of the collectives suites (test_coll.c, test_coll_time.c). Each
 * scenario (SC) runs in a forked child (SimGrid allows one engine per process) that writes its
 * findings (RES: times, bytes, books, wrong elements) to shared memory; the expected sums are
 * computed in the order each algorithm adds. star() makes a contention-free star and
 * expect_close() compares a simulated time with its formula. Header-only; every function is
 * static inline so each suite takes what it uses. */
#ifndef BELLOWS_COLLTEST_H
#define BELLOWS_COLLTEST_H

#include "testutil.h"

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <simgrid/actor.h>
#include <simgrid/engine.h>

#include "coll.h"
#include "engine.h"
#include "half.h"
#include "pool.h"

enum { OP_ALLREDUCE, OP_ALLGATHER, OP_BROADCAST, OP_ALLREDUCE_F16, OP_MIXED };

typedef struct {
    Cluster cl;
    CollAlgo algo;
    CollBackend backend;
    size_t count; /* floats per rank (allgather: rank r sends count + r floats) */
    int op;
    int random_values; /* allreduce: random floats checked to tolerance instead of integers */
    int ring_order;    /* with random_values: bit for bit against the ring's summation order */
    int rank_order;    /* with random_values: bit for bit against ((x0 + x1) + x2) + ... */
    int scribble;      /* each rank overwrites and frees its buffers as soon as the call returns */
    int mean;          /* coll_allreduce_mean: the expected sums become (sum + 0.0f) / P */
    int threads;       /* > 1: the communicator's in-memory sums on a pool of that many */
    int neg_zeros;     /* every value -0.0f: the sum is -0, the mean +0 */
    int mirror;        /* the data on a mirror of the communicator, then the replay on it */
    int shared_out;    /* 1, with mean: coll_allreduce_mean_into one buffer all ranks share;
                          2, without: coll_allreduce_into a buffer of each rank's own */
} Scenario;

typedef struct {
    double time_s;      /* latest finish over ranks */
    double bytes0;      /* bytes rank 0 sent */
    double payload[16]; /* payload_bytes of each rank (the first 16) */
    int wrong;          /* elements that differ from the expected result */
    double max_rel_err; /* random_values */
    int done;           /* ranks that finished */
    /* each rank's (the first 16): its clock when done, and its books */
    double end[16], bytes[16], comm_s[16];
    long calls[16];
} Result;

static Scenario SC;
static CollShareCurve CURVE[2]; /* n > 0: set on the communicator (coll_comm_set_share_curves) */
static Result *RES;
static Comm *COMM;
static Comm *MIRROR;  /* SC.mirror */
static float *SHARED; /* SC.shared_out */

static inline void check_sums(const float *buf, int P);

/* The communicator a rank's call goes to: the mirror when there is one (coll_replay after). */
static inline Comm *data_comm(void)
{
    return MIRROR ? MIRROR : COMM;
}

static inline float value(int rank, size_t i)
{
    return (float)((rank * 7 + (int)(i % 1000) * 3) % 11);
}

static inline float random_value(int rank, size_t i)
{
    TestRng r = {(uint64_t)rank * 1000003 + i * 7919 + 1};
    return (float)(trng_uniform(&r) * 2 - 1);
}

/* The ring allreduce's sum for element i: chunk j (of P equal parts) starts at rank j, and each
 * next rank around the ring adds its own value to the partial sum it receives. */
static inline float ring_order_sum(int P, size_t count, size_t i)
{
    int j = 0;
    while (count * (size_t)(j + 1) / (size_t)P <= i) j++;
    float s = random_value(j, i);
    for (int k = 1; k < P; k++) s = random_value((j + k) % P, i) + s;
    return s;
}

/* Scenario.scribble: a copy of the n bytes of *buf is returned in its place, and the original is
 * filled with 0xff (NaN as floats) and freed, as a caller reusing its buffer at once would. Any
 * rank still reading it afterwards gets wrong values (and AddressSanitizer a use after free). */
/* The analytic backend's sum for element i: the ranks' values added in rank order. */
static inline float rank_order_sum(int P, size_t i)
{
    float s = random_value(0, i);
    for (int r = 1; r < P; r++) s += random_value(r, i);
    return s;
}

static inline void *scribble(void *buf, size_t n)
{
    if (!SC.scribble) return buf;
    void *copy = malloc(n ? n : 1);
    memcpy(copy, buf, n);
    memset(buf, 0xff, n);
    free(buf);
    return copy;
}

static inline float input(int rank, size_t i)
{
    return SC.neg_zeros ? -0.0f : SC.random_values ? random_value(rank, i) : value(rank, i);
}

/* Rank `rank`'s allreduce of SC (or its mean): its result checked element by element; with
 * SC.shared_out, the one shared result, and its own input left as it was. */
static inline void check_allreduce(int rank, int P)
{
    float *buf = malloc(SC.count * sizeof(float)), *res = buf, *own = NULL;
    for (size_t i = 0; i < SC.count; i++) buf[i] = input(rank, i);
    if (SC.shared_out) {
        if (SC.shared_out == 2)
            coll_allreduce_into(data_comm(), rank, buf, own = malloc(sizeof(float) * SC.count),
                                SC.count);
        else
            coll_allreduce_mean_into(data_comm(), rank, buf, SHARED, SC.count);
        for (size_t i = 0; i < SC.count; i++) {
            float in = input(rank, i);
            if (memcmp(&buf[i], &in, sizeof in)) RES->wrong++;
        }
        res = own ? own : SHARED;
    } else if (SC.mean) {
        coll_allreduce_mean(data_comm(), rank, buf, SC.count);
    } else {
        coll_allreduce(data_comm(), rank, buf, SC.count);
    }
    if (res == buf) res = buf = scribble(buf, SC.count * sizeof(float));
    check_sums(res, P);
    free(buf);
    free(own);
}

/* The checks of check_allreduce on one result. */
static inline void check_sums(const float *buf, int P)
{
    for (size_t i = 0; i < SC.count; i++) {
        if (SC.ring_order || SC.rank_order) {
            float want = SC.ring_order ? ring_order_sum(P, SC.count, i) : rank_order_sum(P, i);
            if (SC.mean) want = (want + 0.0f) / (float)P;
            if (memcmp(&buf[i], &want, sizeof want) != 0) RES->wrong++;
            continue;
        }
        if (SC.neg_zeros) {
            int negative = signbit(buf[i]) != 0;
            if (buf[i] != 0 || negative == SC.mean) RES->wrong++;
            continue;
        }
        double want = 0, mass = 0;
        for (int r = 0; r < P; r++) {
            double v = SC.random_values ? random_value(r, i) : value(r, i);
            want += v;
            mass += fabs(v);
        }
        if (SC.random_values) {
            /* relative to the sum of magnitudes: float rounding scales with it, and the
             * sum itself may cancel to near zero */
            double e = fabs(buf[i] - want) / mass;
            if (e > RES->max_rel_err) RES->max_rel_err = e;
        } else if (buf[i] != (SC.mean ? ((float)want + 0.0f) / (float)P : (float)want)) {
            RES->wrong++;
        }
    }
}

/* Rank `rank`'s call of operation op, its result checked. */
static inline void run_op(int op, int rank, int P)
{
    if (op == OP_ALLREDUCE) {
        check_allreduce(rank, P);
    } else if (SC.op == OP_ALLGATHER) {
        size_t mine = SC.count + (size_t)rank;
        int *send = malloc(mine * sizeof(int) + 1);
        for (size_t i = 0; i < mine; i++) send[i] = rank * 100000 + (int)i;
        size_t *sizes = malloc(sizeof(size_t) * (size_t)P);
        unsigned char *all = coll_allgather(data_comm(), rank, send, mine * sizeof(int), sizes);
        send = scribble(send, mine * sizeof(int));
        const int *got = (const int *)all;
        for (int r = 0; r < P; r++) {
            size_t theirs = SC.count + (size_t)r;
            if (sizes[r] != theirs * sizeof(int)) RES->wrong++;
            for (size_t i = 0; i < theirs; i++)
                if (*got++ != r * 100000 + (int)i) RES->wrong++;
        }
        free(all), free(sizes), free(send);
    } else if (SC.op == OP_ALLREDUCE_F16) {
        /* small integers: every partial sum is exact in half, so the result is exact */
        uint16_t *buf = malloc(SC.count * sizeof(uint16_t) + 1);
        for (size_t i = 0; i < SC.count; i++) buf[i] = half_from_float(value(rank, i) - 5);
        coll_allreduce_f16(data_comm(), rank, buf, SC.count);
        for (size_t i = 0; i < SC.count; i++) {
            double want = 0;
            for (int r = 0; r < P; r++) want += value(r, i) - 5;
            if (half_to_float(buf[i]) != (float)want) RES->wrong++;
        }
        free(buf);
    } else {
        int root = 2 % P;
        float *buf = malloc(SC.count * sizeof(float));
        for (size_t i = 0; i < SC.count; i++) buf[i] = rank == root ? value(root, i) : -1.0f;
        coll_broadcast(data_comm(), rank, root, buf, SC.count * sizeof(float));
        buf = scribble(buf, SC.count * sizeof(float));
        for (size_t i = 0; i < SC.count; i++)
            if (buf[i] != value(root, i)) RES->wrong++;
        free(buf);
    }
}

static inline void worker(int argc, char **argv)
{
    (void)argc;
    int rank = atoi(argv[1]), P = SC.cl.workers;
    if (SC.op == OP_MIXED) /* several calls, one replay: the log keeps them apart */
        for (int k = 0; k < 5; k++)
            run_op((const int[]){OP_ALLGATHER, OP_ALLREDUCE, OP_ALLGATHER, OP_ALLREDUCE_F16,
                                 OP_BROADCAST}[k],
                   rank, P);
    else
        run_op(SC.op, rank, P);
    if (MIRROR) coll_replay(COMM, MIRROR, rank);
    double t = simgrid_get_clock();
    if (t > RES->time_s) RES->time_s = t;
    const CollStats *cs = coll_stats(COMM, rank);
    if (rank == 0) RES->bytes0 = cs->bytes_sent;
    if (rank < 16) {
        RES->payload[rank] = cs->payload_bytes;
        RES->end[rank] = t;
        RES->bytes[rank] = cs->bytes_sent;
        RES->comm_s[rank] = cs->time_s;
        RES->calls[rank] = cs->calls;
    }
    RES->done++;
}

/* Runs SC in a child process and returns its result. */
static inline Result simulate(void)
{
    RES = mmap(NULL, sizeof *RES, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    assert_true(RES != MAP_FAILED);
    memset(RES, 0, sizeof *RES);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        BwError err;
        /* SGLOG=--log=root.thres:info shows SimGrid's log when debugging a scenario */
        char *sg_args[] = {getenv("SGLOG"), NULL};
        if (cluster_resolve(&SC.cl, &err) ||
            engine_init(sg_args[0] ? 1 : 0, sg_args, "exact", &err) ||
            engine_load_cluster(&SC.cl, &err)) {
            fprintf(stderr, "child: %s\n", err.msg);
            _exit(3);
        }
        COMM = coll_comm_create(&SC.cl, SC.algo, SC.backend);
        if (CURVE[0].n > 0) coll_comm_set_share_curves(COMM, &CURVE[0], &CURVE[1]);
        Pool *pool = SC.threads > 1 ? pool_create(SC.threads) : NULL;
        coll_comm_set_pool(COMM, pool);
        MIRROR = SC.mirror ? coll_comm_create_mirror(&SC.cl, COMM) : NULL;
        if (SC.mirror && !MIRROR) _exit(4);
        if (MIRROR) coll_comm_set_pool(MIRROR, pool);
        SHARED = SC.shared_out ? malloc(sizeof(float) * SC.count) : NULL;
        for (int r = 0; r < SC.cl.workers; r++) {
            char arg[16];
            snprintf(arg, sizeof arg, "%d", r);
            char *av[] = {"worker", arg, NULL};
            sg_actor_create("worker", engine_host(r), worker, 2, av);
        }
        simgrid_run();
        coll_comm_free(MIRROR);
        coll_comm_free(COMM);
        pool_free(pool);
        free(SHARED);
        _exit(0); /* skip SimGrid's exit-time teardown */
    }
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) fail_msg("simulation child failed (status %d)", st);
    Result out = *RES;
    munmap(RES, sizeof *RES);
    assert_int_equal(out.done, SC.cl.workers);
    return out;
}

static inline Cluster star(int P, double bw_Bps, double lat_s)
{
    Cluster c = cluster_default();
    c.workers = P;
    c.bandwidth_Bps = bw_Bps;
    c.latency_s = lat_s;
    return c;
}

static inline void expect_close(double got, double want, double rel, const char *what)
{
    if (fabs(got - want) > rel * want)
        fail_msg("%s: simulated %.12g s, formula %.12g s (relative error %.2e)", what, got, want,
                 fabs(got - want) / want);
}

#endif
