/* test_coll.c: the collectives on real SimGrid platforms. Each scenario runs in a forked child
 * (SimGrid allows one engine per process) that writes its findings to shared memory.
 * Checked: results equal the exact sum for every algorithm and 1..9 workers (integer-valued
 * floats, so bit-for-bit whatever the order); times equal the closed-form costs of
 * REFERENCES.md to 1e-6 on contention-free platforms; the analytic backend agrees with the
 * transfer-level one; an oversubscribed fat-tree and a node-shared NIC are slower by exactly
 * the bottleneck the test states. The fp16 allreduce moves real halves (2 bytes each) and rounds
 * every addition to half; half conversion is checked against the IEEE rules exhaustively. Every
 * collective counts the payload it was handed (payload_bytes). A mirror and its replay give the
 * same bits, times and books as the calls themselves. */
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
static Result *RES;
static Comm *COMM;
static Comm *MIRROR;  /* SC.mirror */
static float *SHARED; /* SC.shared_out */

static void check_sums(const float *buf, int P);

/* The communicator a rank's call goes to: the mirror when there is one (coll_replay after). */
static Comm *data_comm(void)
{
    return MIRROR ? MIRROR : COMM;
}

static float value(int rank, size_t i)
{
    return (float)((rank * 7 + (int)(i % 1000) * 3) % 11);
}

static float random_value(int rank, size_t i)
{
    TestRng r = {(uint64_t)rank * 1000003 + i * 7919 + 1};
    return (float)(trng_uniform(&r) * 2 - 1);
}

/* The ring allreduce's sum for element i: chunk j (of P equal parts) starts at rank j, and each
 * next rank around the ring adds its own value to the partial sum it receives. */
static float ring_order_sum(int P, size_t count, size_t i)
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
static float rank_order_sum(int P, size_t i)
{
    float s = random_value(0, i);
    for (int r = 1; r < P; r++) s += random_value(r, i);
    return s;
}

static void *scribble(void *buf, size_t n)
{
    if (!SC.scribble) return buf;
    void *copy = malloc(n ? n : 1);
    memcpy(copy, buf, n);
    memset(buf, 0xff, n);
    free(buf);
    return copy;
}

static float input(int rank, size_t i)
{
    return SC.neg_zeros ? -0.0f : SC.random_values ? random_value(rank, i) : value(rank, i);
}

/* Rank `rank`'s allreduce of SC (or its mean): its result checked element by element; with
 * SC.shared_out, the one shared result, and its own input left as it was. */
static void check_allreduce(int rank, int P)
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
static void check_sums(const float *buf, int P)
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
static void run_op(int op, int rank, int P)
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

static void worker(int argc, char **argv)
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
static Result simulate(void)
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

static Cluster star(int P, double bw_Bps, double lat_s)
{
    Cluster c = cluster_default();
    c.workers = P;
    c.bandwidth_Bps = bw_Bps;
    c.latency_s = lat_s;
    return c;
}

/* SC's cluster made hierarchical, with gpus per node, when algo is the hierarchical allreduce. */
static void hierarchical_if(int algo, int gpus)
{
    if (algo != COLL_HIERARCHICAL) return;
    SC.cl.topology = TOPO_HIERARCHICAL;
    SC.cl.gpus_per_node = gpus;
}

static void expect_close(double got, double want, double rel, const char *what)
{
    if (fabs(got - want) > rel * want)
        fail_msg("%s: simulated %.12g s, formula %.12g s (relative error %.2e)", what, got, want,
                 fabs(got - want) / want);
}

/* ---- correctness ---- */

static void test_allreduce_is_exact_sum_for_every_algorithm_and_1_to_9_workers(void **state)
{
    (void)state;
    for (int algo = 0; algo < 4; algo++)
        for (int P = 1; P <= 9; P++) {
            SC = (Scenario){.cl = star(P, 1.25e9, 5e-6), .algo = algo, .count = 1001};
            hierarchical_if(algo, P % 2 == 0 ? 2 : (P % 3 == 0 ? 3 : 1));
            Result r = simulate();
            if (r.wrong)
                fail_msg("%s, %d workers: %d wrong elements", coll_algo_name(algo), P, r.wrong);
        }
}

static void test_allreduce_of_random_floats_matches_double_sum(void **state)
{
    (void)state;
    for (int algo = 0; algo < 4; algo++) {
        SC = (Scenario){
            .cl = star(6, 1.25e9, 5e-6), .algo = algo, .count = 4099, .random_values = 1};
        hierarchical_if(algo, 3);
        Result r = simulate();
        if (r.max_rel_err > 1e-6)
            fail_msg("%s: relative error %g", coll_algo_name(algo), r.max_rel_err);
    }
}

/* The messages point at the senders' buffers (zero-copy): the sums are still the ring's order
 * bit for bit, and every algorithm's results survive each caller overwriting and freeing its
 * buffers the moment its call returns (the last messages' readers may not have run yet). */
static void test_zero_copy_ring_sums_in_ring_order_and_callers_may_reuse_buffers(void **state)
{
    (void)state;
    for (int P = 2; P <= 9; P++) {
        SC = (Scenario){.cl = star(P, 1.25e9, 5e-6),
                        .count = 1003,
                        .random_values = 1,
                        .ring_order = 1,
                        .scribble = 1};
        Result r = simulate();
        if (r.wrong) fail_msg("ring, %d workers: %d elements not in ring order", P, r.wrong);
        /* the analytic backend sums block by block (8 KB) into every buffer: rank order still,
         * over several blocks and a partial one */
        SC.backend = COLL_ANALYTIC;
        SC.ring_order = 0;
        SC.rank_order = 1;
        SC.count = 5003;
        r = simulate();
        if (r.wrong) fail_msg("analytic, %d workers: %d elements not in rank order", P, r.wrong);
    }
    for (int algo = 0; algo < 4; algo++)
        for (int P = 2; P <= 7; P += 5) {
            SC = (Scenario){.cl = star(P, 1.25e9, 5e-6), .algo = algo, .count = 501, .scribble = 1};
            hierarchical_if(algo, P % 2 == 0 ? 2 : 1);
            Result r = simulate();
            if (r.wrong)
                fail_msg("%s, %d workers: %d wrong after the callers' reuse", coll_algo_name(algo),
                         P, r.wrong);
        }
    for (int op = OP_ALLGATHER; op <= OP_BROADCAST; op++) {
        SC = (Scenario){.cl = star(6, 1.25e9, 5e-6), .count = 77, .op = op, .scribble = 1};
        assert_int_equal(simulate().wrong, 0);
    }
}

/* The sums done in memory (coll_sum.c) over several blocks and items, with the ring's chunk ends
 * inside them, on one thread and on a pool: the ring's order and the analytic rank order bit
 * for bit, and the mean variant's (sum + 0.0f) / P, whose sum of negative zeros is +0. */
static void test_in_memory_sums_keep_their_order_over_items_and_threads(void **state)
{
    (void)state;
    for (int threads = 1; threads <= 3; threads += 2)
        for (int P = 3; P <= 7; P += 4)
            for (int backend = 0; backend < 2; backend++)
                for (int mean = 0; mean < 2; mean++) {
                    SC = (Scenario){.cl = star(P, 1.25e9, 5e-6),
                                    .backend = backend,
                                    .count = 70001,
                                    .random_values = 1,
                                    .ring_order = backend == COLL_TRANSFER,
                                    .rank_order = backend == COLL_ANALYTIC,
                                    .mean = mean,
                                    .threads = threads};
                    Result r = simulate();
                    if (r.wrong)
                        fail_msg("%s, %d workers, %d threads, mean %d: %d elements wrong",
                                 backend ? "analytic" : "ring", P, threads, mean, r.wrong);
                }
    for (int algo = 0; algo < 4; algo++) { /* the mean of the other algorithms, after the sum */
        SC = (Scenario){.cl = star(4, 1.25e9, 5e-6), .algo = algo, .count = 333, .mean = 1};
        hierarchical_if(algo, 2);
        assert_int_equal(simulate().wrong, 0);
        for (int backend = 0; backend < 2; backend++)
            for (SC.mean = 0; SC.mean < 2; SC.mean++) {
                SC.backend = backend;
                SC.neg_zeros = 1;
                assert_int_equal(simulate().wrong, 0);
            }
    }
}

static void test_allgather_concatenates_variable_sizes_and_broadcast_copies(void **state)
{
    (void)state;
    for (int P = 1; P <= 7; P += 3) {
        SC = (Scenario){.cl = star(P, 1.25e9, 5e-6), .count = 17, .op = OP_ALLGATHER};
        assert_int_equal(simulate().wrong, 0);
        SC.backend = COLL_ANALYTIC;
        assert_int_equal(simulate().wrong, 0);
        SC = (Scenario){.cl = star(P, 1.25e9, 5e-6), .count = 333, .op = OP_BROADCAST};
        assert_int_equal(simulate().wrong, 0);
    }
}

static void test_analytic_backend_reduces_exactly(void **state)
{
    (void)state;
    for (int algo = 0; algo < 4; algo++) {
        SC = (Scenario){
            .cl = star(5, 1.25e9, 5e-6), .algo = algo, .count = 999, .backend = COLL_ANALYTIC};
        hierarchical_if(algo, SC.cl.gpus_per_node);
        assert_int_equal(simulate().wrong, 0);
    }
}

static void test_f16_allreduce_sums_halves_for_every_algorithm_and_backend(void **state)
{
    (void)state;
    for (int algo = 0; algo < 4; algo++)
        for (int backend = 0; backend < 2; backend++)
            for (int P = 1; P <= 6; P += 5) {
                SC = (Scenario){.cl = star(P, 1.25e9, 5e-6),
                                .algo = algo,
                                .backend = backend,
                                .count = 1001,
                                .op = OP_ALLREDUCE_F16};
                hierarchical_if(algo, P % 2 == 0 ? 2 : 1);
                Result r = simulate();
                if (r.wrong)
                    fail_msg("%s, %s, %d workers: %d wrong elements", coll_algo_name(algo),
                             backend ? "analytic" : "transfer", P, r.wrong);
                for (int k = 0; k < P; k++) assert_true(r.payload[k] == 1001 * 2);
            }
    /* the wire carries half the bytes of the fp32 allreduce, and takes less time */
    SC = (Scenario){.cl = star(4, 1.25e9, 5e-6), .count = 100000, .op = OP_ALLREDUCE_F16};
    Result h = simulate();
    SC.op = OP_ALLREDUCE;
    Result f = simulate();
    expect_close(h.bytes0, f.bytes0 / 2, 1e-12, "fp16 bytes sent by rank 0");
    assert_true(h.time_s < 0.6 * f.time_s);
}

static void test_payload_bytes_count_what_each_call_was_handed(void **state)
{
    (void)state;
    SC = (Scenario){.cl = star(5, 1.25e9, 5e-6), .algo = COLL_TREE, .count = 77};
    Result r = simulate();
    for (int k = 0; k < 5; k++) assert_true(r.payload[k] == 77 * 4);
    SC.op = OP_ALLGATHER; /* rank r sends 77 + r ints */
    r = simulate();
    for (int k = 0; k < 5; k++) assert_true(r.payload[k] == (77 + k) * 4);
    SC.op = OP_BROADCAST;
    SC.backend = COLL_ANALYTIC;
    r = simulate();
    for (int k = 0; k < 5; k++) assert_true(r.payload[k] == 77 * 4);
}

/* ---- binary16 ---- */

/* The half nearest to x (ties to even), by looking at the neighbours of a first guess. */
static uint16_t nearest_half(double x)
{
    uint16_t g = half_from_float((float)x), best = g;
    double bd = fabs((double)half_to_float(g) - x);
    for (int d = -1; d <= 1; d += 2) {
        uint16_t h = (uint16_t)(g + d);
        if ((h & 0x7c00) == 0x7c00 || ((h ^ g) & 0x8000)) continue; /* inf/NaN, sign change */
        double hd = fabs((double)half_to_float(h) - x);
        if (hd < bd || (hd == bd && (h & 1) == 0)) best = h, bd = hd;
    }
    return best;
}

/* SC on the communicator itself, then on a mirror of it and replayed: the same results (the
 * scenario's own checks) and the same messages: every rank's finishing time and books equal. */
static void expect_mirror_equal(const char *what)
{
    SC.mirror = 0;
    Result direct = simulate();
    SC.mirror = 1;
    Result mirrored = simulate();
    if (direct.wrong || mirrored.wrong)
        fail_msg("%s: %d wrong elements on the communicator, %d with a mirror", what, direct.wrong,
                 mirrored.wrong);
    for (int r = 0; r < SC.cl.workers && r < 16; r++) {
        if (direct.end[r] != mirrored.end[r] || direct.bytes[r] != mirrored.bytes[r] ||
            direct.comm_s[r] != mirrored.comm_s[r] || direct.calls[r] != mirrored.calls[r] ||
            direct.payload[r] != mirrored.payload[r])
            fail_msg("%s: rank %d ends at %.17g s, sends %.17g bytes in %ld calls of %.17g s, "
                     "payload %.17g (a mirror: %.17g s, %.17g, %ld, %.17g s, %.17g)",
                     what, r, direct.end[r], direct.bytes[r], direct.calls[r], direct.comm_s[r],
                     direct.payload[r], mirrored.end[r], mirrored.bytes[r], mirrored.calls[r],
                     mirrored.comm_s[r], mirrored.payload[r]);
    }
}

/* Whether a mirror of a communicator of this algorithm and backend can be made (in a child: the
 * communicator needs the engine). */
static int mirror_made(CollAlgo algo, CollBackend backend)
{
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        BwError err;
        Cluster cl = star(4, 1.25e9, 5e-6);
        if (cluster_resolve(&cl, &err) || engine_init(0, NULL, "exact", &err) ||
            engine_load_cluster(&cl, &err))
            _exit(3);
        Comm *c = coll_comm_create(&cl, algo, backend), *m = coll_comm_create_mirror(&cl, c);
        const int made = m != NULL;
        coll_comm_free(m); /* freed: valgrind's leak check would fail the child */
        coll_comm_free(c);
        _exit(made ? 0 : 1);
    }
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) <= 1);
    return WEXITSTATUS(st) == 0;
}

/* The collectives taken apart (coll_comm_create_mirror): the data on the mirror, in the order
 * the communicator's sums would take (a ring's, rank order when analytic: checked bit for bit),
 * then the messages replayed on the communicator, every operation and backend, on a star and on
 * an oversubscribed fat-tree (whose flows share links), with and without a pool. */
static void test_a_mirror_and_its_replay_equal_the_calls_themselves(void **state)
{
    (void)state;
    const int ops[5] = {OP_ALLREDUCE, OP_ALLGATHER, OP_BROADCAST, OP_ALLREDUCE_F16, OP_MIXED};
    for (int b = 0; b < 2; b++)
        for (int k = 0; k < 5; k++)
            for (int mean = 0; mean <= (ops[k] == OP_ALLREDUCE); mean++) {
                SC = (Scenario){.cl = star(6, 1.25e9, 5e-6), .algo = COLL_RING, .count = 4099};
                SC.backend = b ? COLL_ANALYTIC : COLL_TRANSFER;
                SC.op = ops[k];
                SC.mean = mean;
                SC.random_values = SC.op == OP_ALLREDUCE || SC.op == OP_MIXED;
                SC.ring_order = SC.random_values && !b;
                SC.rank_order = SC.random_values && b;
                SC.threads = 1 + (k + mean) % 2;
                if (k == 0 && mean) { /* flows that share links */
                    SC.cl.topology = TOPO_FAT_TREE;
                    SC.cl.leaf_size = 2;
                    SC.cl.oversubscription = 4;
                }
                char what[64];
                snprintf(what, sizeof what, "%s op %d mean %d", b ? "analytic" : "transfer", k,
                         mean);
                expect_mirror_equal(what);
            }
    /* one rank: no messages, the same results */
    SC = (Scenario){.cl = star(1, 1.25e9, 5e-6), .algo = COLL_RING, .count = 100};
    SC.op = OP_MIXED;
    SC.random_values = SC.ring_order = 1;
    expect_mirror_equal("one rank");
    assert_true(mirror_made(COLL_RING, COLL_TRANSFER));
    assert_true(mirror_made(COLL_TREE, COLL_ANALYTIC));
    assert_false(mirror_made(COLL_HALVING_DOUBLING, COLL_TRANSFER));
    assert_false(mirror_made(COLL_TREE, COLL_TRANSFER));
    assert_false(mirror_made(COLL_HIERARCHICAL, COLL_TRANSFER));
}

/* A mean into one buffer that every rank shares (a shared replica's, coll_allreduce_mean_into),
 * and a sum into a buffer of each rank's own (coll_allreduce_into), on the communicators that
 * sum once (a ring, the analytic backend, either one's mirror), with and without a pool, and on
 * one rank: the bits of the same call in place, each rank's input left as it was, and the same
 * messages (every rank's end, books and payload). */
static void test_a_mean_into_a_shared_buffer_equals_the_mean_in_place(void **state)
{
    (void)state;
    for (int into = 1; into <= 2; into++)
        for (int b = 0; b < 2; b++)
            for (int k = 0; k < 4; k++) {
                const int P = k == 3 ? 1 : 5;
                SC = (Scenario){.cl = star(P, 1.25e9, 5e-6), .algo = COLL_RING, .count = 4099};
                SC.backend = b ? COLL_ANALYTIC : COLL_TRANSFER;
                SC.mean = into == 1;
                SC.random_values = 1;
                SC.ring_order = !b;
                SC.rank_order = b;
                SC.mirror = k == 1;
                SC.threads = k == 2 ? 2 : 1;
                Result in_place = simulate();
                SC.shared_out = into;
                Result shared = simulate();
                if (in_place.wrong || shared.wrong)
                    fail_msg("%s case %d: %d wrong in place, %d into a shared buffer",
                             b ? "analytic" : "transfer", k, in_place.wrong, shared.wrong);
                for (int r = 0; r < P; r++)
                    if (in_place.end[r] != shared.end[r] || in_place.bytes[r] != shared.bytes[r] ||
                        in_place.comm_s[r] != shared.comm_s[r] ||
                        in_place.payload[r] != shared.payload[r])
                        fail_msg(
                            "%s case %d, rank %d: ends at %.17g s after %.17g bytes in place, at "
                            "%.17g s after %.17g into a shared buffer",
                            b ? "analytic" : "transfer", k, r, in_place.end[r], in_place.bytes[r],
                            shared.end[r], shared.bytes[r]);
            }
}

static void test_half_conversion_is_exact_and_rounds_to_nearest_even(void **state)
{
    (void)state;
    /* every finite half survives the round trip; NaNs stay NaNs */
    for (uint32_t h = 0; h < 65536; h++) {
        float f = half_to_float((uint16_t)h);
        if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) {
            assert_true(isnan(f));
            assert_true((half_from_float(f) & 0x7c00) == 0x7c00 && (half_from_float(f) & 0x3ff));
        } else {
            assert_int_equal(half_from_float(f), h);
        }
    }
    /* known values: 1, the largest half, the smallest subnormal, overflow, -0 */
    assert_int_equal(half_from_float(1.0f), 0x3c00);
    assert_int_equal(half_from_float(65504.0f), 0x7bff);
    assert_int_equal(half_from_float(65519.0f), 0x7bff);
    assert_int_equal(half_from_float(65520.0f), 0x7c00);
    assert_int_equal(half_from_float(0x1p-24f), 0x0001);
    assert_int_equal(half_from_float(0x1p-25f), 0x0000);      /* tie: to even (zero) */
    assert_int_equal(half_from_float(0x1.8p-24f), 0x0002);    /* tie: to even (2) */
    assert_int_equal(half_from_float(0x1.0p-25f * 1.01f), 1); /* above the tie */
    assert_int_equal(half_from_float(-0.0f), 0x8000);
    assert_int_equal(half_from_float(1.0f + 0x1p-11f), 0x3c00); /* tie to even */
    assert_int_equal(half_from_float(1.0f + 3 * 0x1p-11f), 0x3c02);
    assert_int_equal(half_from_float(-INFINITY), 0xfc00);
    /* random floats over the whole half range round to the nearest half */
    TestRng r = {12345};
    for (int i = 0; i < 200000; i++) {
        double x = ldexp(trng_uniform(&r) * 2 - 1, (int)(trng_uniform(&r) * 42) - 26);
        float f = (float)x;
        if (fabs(f) >= 65504) continue;
        assert_int_equal(half_from_float(f), nearest_half((double)f));
    }
    /* the sum of two halves computed in float and rounded to half is the correctly rounded
     * half sum (the double sum is exact), which is what the fp16 allreduce relies on */
    for (int i = 0; i < 200000; i++) {
        uint16_t a = (uint16_t)(trng_uniform(&r) * 0x7bff),
                 b = (uint16_t)(trng_uniform(&r) * 0x7bff);
        if (trng_uniform(&r) < 0.5) b |= 0x8000;
        double exact = (double)half_to_float(a) + (double)half_to_float(b);
        if (fabs(exact) >= 65504) continue;
        assert_int_equal(half_from_float(half_to_float(a) + half_to_float(b)), nearest_half(exact));
    }
}

/* ---- times against the closed forms, contention-free platforms ---- */

static void check_formula_on_star(CollAlgo algo, int P, size_t count, double bw, double lat)
{
    SC = (Scenario){.cl = star(P, bw, lat), .algo = algo, .count = count};
    Result r = simulate();
    double n = (double)count * sizeof(float);
    double want = coll_allreduce_formula_s(algo, P, 1, n, 2 * lat, 1 / bw, 0, 0);
    char what[96];
    snprintf(what, sizeof what, "%s on a star, P=%d, %zu floats, %g s latency",
             coll_algo_name(algo), P, count, lat);
    expect_close(r.time_s, want, 1e-6, what);
    /* and the analytic backend */
    SC.backend = COLL_ANALYTIC;
    Result a = simulate();
    expect_close(a.time_s, r.time_s, 1e-6, what);
    if (algo == COLL_RING || algo == COLL_HALVING_DOUBLING)
        expect_close(a.bytes0, r.bytes0, 1e-9, "bytes sent by rank 0");
}

static void test_ring_time_equals_formula_on_star(void **state)
{
    (void)state;
    int Ps[] = {2, 3, 5, 8, 12};
    for (size_t i = 0; i < sizeof Ps / sizeof *Ps; i++) {
        check_formula_on_star(COLL_RING, Ps[i], 1000 * (size_t)Ps[i], 1.25e9, 5e-6);
        check_formula_on_star(COLL_RING, Ps[i], 262144 * (size_t)Ps[i], 12.5e9, 50e-6);
    }
}

static void test_halving_doubling_time_equals_formula_on_star(void **state)
{
    (void)state;
    int Ps[] = {2, 3, 4, 6, 8, 16};
    for (size_t i = 0; i < sizeof Ps / sizeof *Ps; i++) {
        check_formula_on_star(COLL_HALVING_DOUBLING, Ps[i], 4096 * 16, 1.25e9, 5e-6);
        check_formula_on_star(COLL_HALVING_DOUBLING, Ps[i], 1 << 20, 12.5e9, 1e-6);
    }
}

static void test_tree_time_equals_formula_on_star(void **state)
{
    (void)state;
    int Ps[] = {2, 3, 5, 8};
    for (size_t i = 0; i < sizeof Ps / sizeof *Ps; i++)
        check_formula_on_star(COLL_TREE, Ps[i], 50000, 1.25e9, 10e-6);
}

static Cluster hier(int P, int G, int nic_per_gpu)
{
    Cluster c = star(P, 12.5e9, 5e-6);
    c.topology = TOPO_HIERARCHICAL;
    c.gpus_per_node = G;
    c.nic_per_gpu = nic_per_gpu;
    c.intra_bandwidth_Bps = 150e9;
    c.intra_latency_s = 1e-6;
    return c;
}

static void test_hierarchical_time_equals_two_level_formula(void **state)
{
    (void)state;
    int cfg[][2] = {{8, 4}, {12, 3}, {8, 2}};
    for (int k = 0; k < 3; k++) {
        int P = cfg[k][0], G = cfg[k][1];
        SC = (Scenario){.cl = hier(P, G, 1), .algo = COLL_HIERARCHICAL, .count = 240000};
        Result r = simulate();
        double n = 240000.0 * 4;
        double want = coll_allreduce_formula_s(COLL_HIERARCHICAL, P, G, n, 2 * 5e-6, 1 / 12.5e9,
                                               2 * 1e-6, 1 / 150e9);
        expect_close(r.time_s, want, 1e-6, "hierarchical allreduce, NIC per GPU");
        SC.backend = COLL_ANALYTIC;
        expect_close(simulate().time_s, r.time_s, 1e-6, "analytic hierarchical");
    }
    /* one GPU per node: the hierarchical platform is a star */
    check_formula_on_star(COLL_RING, 6, 6000, 1.25e9, 5e-6);
    SC.cl.topology = TOPO_HIERARCHICAL;
    SC.backend = COLL_TRANSFER;
    expect_close(simulate().time_s,
                 coll_allreduce_formula_s(COLL_RING, 6, 1, 24000, 10e-6, 0.8e-9, 0, 0), 1e-6,
                 "ring on hierarchical with G=1");
}

/* ---- bottlenecks ---- */

static void test_oversubscribed_fat_tree_slows_cross_leaf_steps(void **state)
{
    (void)state;
    /* 8 GPUs, leaves of 4, uplinks of 4 B / 4 = B. Halving-doubling's first and last steps
     * (distance 4) send the four GPUs of a leaf across at once: they share the uplink, so
     * each gets B/4, and the route has four links (nic, up, up, nic). The other steps stay in
     * the leaf. */
    const double B = 1.25e9, l = 5e-6, n = 65536.0 * 4;
    SC = (Scenario){.cl = star(8, B, l), .algo = COLL_HALVING_DOUBLING, .count = 65536};
    SC.cl.topology = TOPO_FAT_TREE;
    SC.cl.leaf_size = 4;
    SC.cl.oversubscription = 4;
    double want =
        2 * (4 * l + (n / 2) / (B / 4)) + 2 * (2 * l + (n / 4) / B) + 2 * (2 * l + (n / 8) / B);
    double fat = simulate().time_s;
    expect_close(fat, want, 1e-6, "halving-doubling on an oversubscribed fat-tree");
    /* not oversubscribed: only the extra latency of the cross-leaf route remains */
    SC.cl.oversubscription = 1;
    double flat = simulate().time_s;
    expect_close(flat,
                 2 * (4 * l + (n / 2) / B) + 2 * (2 * l + (n / 4) / B) + 2 * (2 * l + (n / 8) / B),
                 1e-6, "halving-doubling on a non-blocking fat-tree");
    assert_true(fat > 2 * flat);
}

static void test_node_shared_nic_divides_inter_node_bandwidth(void **state)
{
    (void)state;
    /* 2 nodes of 4 GPUs with one NIC each: in the inter-node phase the 4 rings (one per local
     * GPU index) share each NIC, so each flow gets B/4; the route is nvl, nic, nic, nvl. */
    const int P = 8, G = 4, m = 2;
    const double B = 12.5e9, l = 5e-6, Bi = 150e9, li = 1e-6, n = 240000.0 * 4;
    SC = (Scenario){.cl = hier(P, G, 0), .algo = COLL_HIERARCHICAL, .count = 240000};
    double shared = simulate().time_s;
    double want = 2.0 * (G - 1) * 2 * li + 2.0 * (G - 1) / G * n / Bi +
                  2.0 * (m - 1) * (2 * l + 2 * li) + 2.0 * (m - 1) / m * (n / G) / (B / G);
    expect_close(shared, want, 1e-6, "hierarchical allreduce, one NIC per node");
    SC.cl.nic_per_gpu = 1;
    double own = simulate().time_s;
    assert_true(shared > own);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_allreduce_is_exact_sum_for_every_algorithm_and_1_to_9_workers),
        cmocka_unit_test(test_allreduce_of_random_floats_matches_double_sum),
        cmocka_unit_test(test_zero_copy_ring_sums_in_ring_order_and_callers_may_reuse_buffers),
        cmocka_unit_test(test_in_memory_sums_keep_their_order_over_items_and_threads),
        cmocka_unit_test(test_allgather_concatenates_variable_sizes_and_broadcast_copies),
        cmocka_unit_test(test_analytic_backend_reduces_exactly),
        cmocka_unit_test(test_f16_allreduce_sums_halves_for_every_algorithm_and_backend),
        cmocka_unit_test(test_payload_bytes_count_what_each_call_was_handed),
        cmocka_unit_test(test_a_mirror_and_its_replay_equal_the_calls_themselves),
        cmocka_unit_test(test_a_mean_into_a_shared_buffer_equals_the_mean_in_place),
        cmocka_unit_test(test_half_conversion_is_exact_and_rounds_to_nearest_even),
        cmocka_unit_test(test_ring_time_equals_formula_on_star),
        cmocka_unit_test(test_halving_doubling_time_equals_formula_on_star),
        cmocka_unit_test(test_tree_time_equals_formula_on_star),
        cmocka_unit_test(test_hierarchical_time_equals_two_level_formula),
        cmocka_unit_test(test_oversubscribed_fat_tree_slows_cross_leaf_steps),
        cmocka_unit_test(test_node_shared_nic_divides_inter_node_bandwidth),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
