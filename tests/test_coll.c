/* test_coll.c: the collectives on real SimGrid platforms. Each scenario runs in a forked child
 * (SimGrid allows one engine per process) that writes its findings to shared memory.
 * Checked: results equal the exact sum for every algorithm and 1..9 workers (integer-valued
 * floats, so bit-for-bit whatever the order); times equal the closed-form costs of
 * REFERENCES.md to 1e-6 on contention-free platforms; the analytic backend agrees with the
 * transfer-level one; an oversubscribed fat-tree and a node-shared NIC are slower by exactly
 * the bottleneck the test states. */
#include "testutil.h"

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <simgrid/actor.h>
#include <simgrid/engine.h>

#include "../sim/coll.h"
#include "../sim/engine.h"

enum { OP_ALLREDUCE, OP_ALLGATHER, OP_BROADCAST };

typedef struct {
    Cluster cl;
    CollAlgo algo;
    CollBackend backend;
    size_t count; /* floats per rank (allgather: rank r sends count + r floats) */
    int op;
    int random_values; /* allreduce: random floats checked to tolerance instead of integers */
} Scenario;

typedef struct {
    double time_s;      /* latest finish over ranks */
    double bytes0;      /* bytes rank 0 sent */
    int wrong;          /* elements that differ from the expected result */
    double max_rel_err; /* random_values */
    int done;           /* ranks that finished */
} Result;

static Scenario SC;
static Result *RES;
static Comm *COMM;

static float value(int rank, size_t i)
{
    return (float)((rank * 7 + (int)(i % 1000) * 3) % 11);
}

static float random_value(int rank, size_t i)
{
    TestRng r = {(uint64_t)rank * 1000003 + i * 7919 + 1};
    return (float)(trng_uniform(&r) * 2 - 1);
}

static void worker(int argc, char **argv)
{
    (void)argc;
    int rank = atoi(argv[1]), P = SC.cl.workers;
    if (SC.op == OP_ALLREDUCE) {
        float *buf = malloc(SC.count * sizeof(float));
        for (size_t i = 0; i < SC.count; i++)
            buf[i] = SC.random_values ? random_value(rank, i) : value(rank, i);
        coll_allreduce(COMM, rank, buf, SC.count);
        for (size_t i = 0; i < SC.count; i++) {
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
            } else if (buf[i] != (float)want) {
                RES->wrong++;
            }
        }
        free(buf);
    } else if (SC.op == OP_ALLGATHER) {
        size_t mine = SC.count + (size_t)rank;
        int *send = malloc(mine * sizeof(int) + 1);
        for (size_t i = 0; i < mine; i++) send[i] = rank * 100000 + (int)i;
        size_t *sizes = malloc(sizeof(size_t) * (size_t)P);
        unsigned char *all = coll_allgather(COMM, rank, send, mine * sizeof(int), sizes);
        const int *got = (const int *)all;
        for (int r = 0; r < P; r++) {
            size_t theirs = SC.count + (size_t)r;
            if (sizes[r] != theirs * sizeof(int)) RES->wrong++;
            for (size_t i = 0; i < theirs; i++)
                if (*got++ != r * 100000 + (int)i) RES->wrong++;
        }
        free(all), free(sizes), free(send);
    } else {
        int root = 2 % P;
        float *buf = malloc(SC.count * sizeof(float));
        for (size_t i = 0; i < SC.count; i++) buf[i] = rank == root ? value(root, i) : -1.0f;
        coll_broadcast(COMM, rank, root, buf, SC.count * sizeof(float));
        for (size_t i = 0; i < SC.count; i++)
            if (buf[i] != value(root, i)) RES->wrong++;
        free(buf);
    }
    double t = simgrid_get_clock();
    if (t > RES->time_s) RES->time_s = t;
    if (rank == 0) RES->bytes0 = coll_stats(COMM, 0)->bytes_sent;
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
        for (int r = 0; r < SC.cl.workers; r++) {
            char arg[16];
            snprintf(arg, sizeof arg, "%d", r);
            char *av[] = {"worker", arg, NULL};
            sg_actor_create("worker", engine_host(r), worker, 2, av);
        }
        simgrid_run();
        coll_comm_free(COMM);
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
            if (algo == COLL_HIERARCHICAL) {
                SC.cl.topology = TOPO_HIERARCHICAL;
                SC.cl.gpus_per_node = P % 2 == 0 ? 2 : (P % 3 == 0 ? 3 : 1);
            }
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
        if (algo == COLL_HIERARCHICAL) {
            SC.cl.topology = TOPO_HIERARCHICAL;
            SC.cl.gpus_per_node = 3;
        }
        Result r = simulate();
        if (r.max_rel_err > 1e-6)
            fail_msg("%s: relative error %g", coll_algo_name(algo), r.max_rel_err);
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
        if (algo == COLL_HIERARCHICAL) SC.cl.topology = TOPO_HIERARCHICAL;
        assert_int_equal(simulate().wrong, 0);
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
        cmocka_unit_test(test_allgather_concatenates_variable_sizes_and_broadcast_copies),
        cmocka_unit_test(test_analytic_backend_reduces_exactly),
        cmocka_unit_test(test_ring_time_equals_formula_on_star),
        cmocka_unit_test(test_halving_doubling_time_equals_formula_on_star),
        cmocka_unit_test(test_tree_time_equals_formula_on_star),
        cmocka_unit_test(test_hierarchical_time_equals_two_level_formula),
        cmocka_unit_test(test_oversubscribed_fat_tree_slows_cross_leaf_steps),
        cmocka_unit_test(test_node_shared_nic_divides_inter_node_bandwidth),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
