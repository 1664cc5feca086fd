/* test_coll_ps.c: the parameter-server allreduce (--allreduce ps, sim/net/coll_ps.c) on real
 * SimGrid platforms, each scenario in a forked child (one engine per process). Checked: the
 * result is the exact sum (and mean) for 1..6 workers, servers colocated or on hosts of their
 * own, calls spread over the servers round-robin; with random floats it is the rank-order sum
 * bit for bit; a call's time equals the closed form 2 (a + r n b) on a star (r = p - 1
 * colocated, p on hosts of their own) at the transfer level and on the analytic backend; rank
 * r's bytes are a push, or the pulls of the call it serves; two calls in flight at once (a
 * sibling communicator) to two servers take as long as one, to one server twice as long; a
 * call's partitions in flight (fifo's, coll_comm_set_ps_partition) cost the closed form on the
 * analytic backend and (within a stated tolerance) what they take at the transfer level. */
#include "testutil.h"

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <simgrid/actor.h>
#include <simgrid/engine.h>

#include "coll.h"
#include "engine.h"

typedef struct {
    Cluster cl;
    CollBackend backend;
    size_t count;      /* floats per call */
    int calls;         /* allreduces one after the other */
    int mean;          /* coll_allreduce_mean */
    int random_values; /* random floats, compared with the rank-order sum bit for bit */
    int cost_servers;  /* > 0: dataless coll_cost_ps calls instead, to server = call % this */
    int concurrent;    /* 2: a second stream (a sibling) makes the same calls at once, to
                          server cost_servers - 1 - (call % cost_servers) */
    int inflight;      /* > 0: one call of count floats cut into partitions of part floats (the
                          last the rest): analytic, one coll_cost_allreduce priced in flight
                          (coll_comm_set_ps_partition); transfer, `inflight` streams at once,
                          stream i's coll_cost_ps of partition i to server i % servers */
    size_t part;
    int dataless; /* coll_cost_allreduce calls (no data) instead of coll_allreduce */
} Scenario;

typedef struct {
    double time_s, bytes[16], payload0;
    int wrong, done;
} Result;

static Scenario SC;
static Result *RES;
static Comm *COMM, *SIBLING, *STREAM[8];

static float value(int rank, size_t i, int call)
{
    if (!SC.random_values) return (float)((rank * 7 + (int)(i % 1000) * 3 + call) % 11);
    TestRng r = {(uint64_t)rank * 1000003 + i * 7919 + (uint64_t)call * 31 + 1};
    return (float)(trng_uniform(&r) * 2 - 1);
}

static void check(const float *buf, int P, int call)
{
    for (size_t i = 0; i < SC.count; i++) {
        float want = value(0, i, call); /* rank order: ((x0 + x1) + x2) + ... */
        for (int r = 1; r < P; r++) want += value(r, i, call);
        if (SC.mean) want = (want + 0.0f) / (float)P;
        if (memcmp(&buf[i], &want, sizeof want) != 0) RES->wrong++;
    }
}

static void sibling_stream(int argc, char **argv)
{
    (void)argc;
    const int rank = atoi(argv[1]);
    for (int k = 0; k < SC.calls; k++)
        coll_cost_ps(SIBLING, rank, SC.cost_servers - 1 - k % SC.cost_servers, SC.count, 4);
}

static void note_end(void)
{
    const double t = simgrid_get_clock();
    if (t > RES->time_s) RES->time_s = t;
}

/* Stream i's partition of an in-flight call at the transfer level (STREAM[0] is COMM). */
static void inflight_part(int rank, int i)
{
    const size_t lo = (size_t)i * SC.part, n = SC.count - lo < SC.part ? SC.count - lo : SC.part;
    coll_cost_ps(STREAM[i], rank, i % SC.cl.ps_servers, n, 4);
    note_end();
}

static void inflight_stream(int argc, char **argv)
{
    (void)argc;
    inflight_part(atoi(argv[1]), atoi(argv[2]));
}

static void worker(int argc, char **argv)
{
    (void)argc;
    const int rank = atoi(argv[1]), P = SC.cl.workers;
    if (SC.inflight && SC.backend == COLL_ANALYTIC)
        coll_cost_allreduce(COMM, rank, SC.count, 4);
    else if (SC.inflight)
        inflight_part(rank, 0);
    if (SC.inflight) {
        note_end(); /* the bytes once every stream is done (simulate) */
        RES->done++;
        return;
    }
    float *buf = malloc(sizeof(float) * (SC.count + 1));
    for (int k = 0; k < SC.calls; k++) {
        if (SC.cost_servers || SC.dataless) {
            if (SC.dataless)
                coll_cost_allreduce(COMM, rank, SC.count, 4);
            else
                coll_cost_ps(COMM, rank, k % SC.cost_servers, SC.count, 4);
            continue;
        }
        for (size_t i = 0; i < SC.count; i++) buf[i] = value(rank, i, k);
        if (SC.mean)
            coll_allreduce_mean(COMM, rank, buf, SC.count);
        else
            coll_allreduce(COMM, rank, buf, SC.count);
        check(buf, P, k);
    }
    free(buf);
    const double t = simgrid_get_clock();
    if (t > RES->time_s) RES->time_s = t;
    if (rank < 16) RES->bytes[rank] = coll_stats(COMM, rank)->bytes_sent;
    if (rank == 0) RES->payload0 = coll_stats(COMM, 0)->payload_bytes;
    RES->done++;
}

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
        if (cluster_resolve(&SC.cl, &err) || engine_init(0, NULL, "exact", &err) ||
            engine_load_cluster(&SC.cl, &err)) {
            fprintf(stderr, "child: %s\n", err.msg);
            _exit(3);
        }
        COMM = coll_comm_create(&SC.cl, COLL_PS, SC.backend);
        SIBLING = SC.concurrent ? coll_comm_create_sibling(&SC.cl, COMM) : NULL;
        const int streams = SC.inflight && SC.backend == COLL_TRANSFER ? SC.inflight : 1;
        STREAM[0] = COMM;
        for (int i = 1; i < streams; i++) STREAM[i] = coll_comm_create_sibling(&SC.cl, COMM);
        if (SC.inflight && SC.backend == COLL_ANALYTIC)
            coll_comm_set_ps_partition(COMM, 4.0 * (double)SC.part);
        for (int r = 0; r < SC.cl.workers; r++) {
            char arg[16], is[16];
            snprintf(arg, sizeof arg, "%d", r);
            char *av[] = {"worker", arg, NULL};
            sg_actor_create("worker", engine_host(r), worker, 2, av);
            if (SIBLING) sg_actor_create("sibling", engine_host(r), sibling_stream, 2, av);
            for (int i = 1; i < streams; i++) {
                snprintf(is, sizeof is, "%d", i);
                char *sv[] = {"stream", arg, is, NULL};
                sg_actor_create("stream", engine_host(r), inflight_stream, 3, sv);
            }
        }
        simgrid_run();
        for (int r = 0; SC.inflight && r < SC.cl.workers && r < 16; r++)
            RES->bytes[r] = coll_stats(COMM, r)->bytes_sent;
        for (int i = 1; i < streams; i++) coll_comm_free(STREAM[i]);
        coll_comm_free(SIBLING);
        coll_comm_free(COMM);
        _exit(0);
    }
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) fail_msg("simulation child failed (status %d)", st);
    Result out = *RES;
    munmap(RES, sizeof *RES);
    assert_int_equal(out.done, SC.cl.workers);
    return out;
}

static Cluster star_ps(int P, int servers, int own)
{
    Cluster c = cluster_default();
    c.workers = P;
    c.bandwidth_Bps = 1.25e9;
    c.latency_s = 5e-6;
    c.ps_servers = servers;
    c.ps_own_hosts = own;
    return c;
}

static void expect_close(double got, double want, double rel, const char *what)
{
    if (fabs(got - want) > rel * want)
        fail_msg("%s: simulated %.12g, expected %.12g (relative error %.2e)", what, got, want,
                 fabs(got - want) / want);
}

static void test_ps_allreduce_is_the_exact_sum_and_mean(void **state)
{
    (void)state;
    for (int own = 0; own <= 1; own++)
        for (int P = 1; P <= 6; P++)
            for (int servers = 1; servers <= 3 && (own || servers <= P); servers++) {
                SC = (Scenario){.cl = star_ps(P, servers, own),
                                .count = 1001,
                                .calls = 4,
                                .mean = (P + servers) % 2};
                Result r = simulate();
                if (r.wrong)
                    fail_msg("P=%d, %d servers (%s): %d wrong elements", P, servers,
                             own ? "own hosts" : "colocated", r.wrong);
            }
}

static void test_ps_sums_in_rank_order_bit_for_bit(void **state)
{
    (void)state;
    for (int own = 0; own <= 1; own++) {
        SC = (Scenario){.cl = star_ps(5, 2, own), .count = 5000, .calls = 3, .random_values = 1};
        assert_int_equal(simulate().wrong, 0);
        SC.mean = 1;
        assert_int_equal(simulate().wrong, 0);
    }
}

/* One call of n bytes: the r remote pushes share the server's NIC into it, then its r pulls
 * share it out of it; a route crosses two NIC links (latency 2 x 5 us). */
static void test_ps_time_equals_its_formula_on_a_star(void **state)
{
    (void)state;
    const int Ps[] = {2, 3, 5, 8};
    for (size_t k = 0; k < sizeof Ps / sizeof *Ps; k++)
        for (int own = 0; own <= 1; own++) {
            const int P = Ps[k], remote = own ? P : P - 1;
            SC = (Scenario){.cl = star_ps(P, 1, own), .count = 250000, .calls = 1};
            const double n = 250000.0 * 4, a = 2 * 5e-6, b = 1 / 1.25e9;
            const double want = 2 * (a + remote * n * b);
            assert_true(fabs(coll_allreduce_formula_s(COLL_PS, P, remote, n, a, b, 0, 0) - want) <
                        1e-15);
            char what[96];
            snprintf(what, sizeof what, "ps, P=%d, %s", P, own ? "own host" : "colocated");
            Result r = simulate();
            expect_close(r.time_s, want, 1e-9, what);
            SC.backend = COLL_ANALYTIC;
            Result an = simulate();
            expect_close(an.time_s, r.time_s, 1e-9, what);
            for (int w = 0; w < P; w++) {
                /* a push, or (colocated, rank 0 serves) the pulls to the others */
                const double sent = !own && w == 0 ? (P - 1) * n : n;
                expect_close(r.bytes[w], sent, 1e-12, "bytes at the transfer level");
                expect_close(an.bytes[w], sent, 1e-12, "bytes on the analytic backend");
            }
        }
}

/* Calls go to servers 0, 1, 2, 0, 1, ...: colocated, rank s serves calls s, s + 3, ... */
static void test_ps_calls_go_round_robin(void **state)
{
    (void)state;
    SC = (Scenario){.cl = star_ps(4, 3, 0), .count = 1000, .calls = 7};
    Result r = simulate();
    const double n = 4000;
    const int served[4] = {3, 2, 2, 0}; /* calls 0,3,6 / 1,4 / 2,5 */
    for (int w = 0; w < 4; w++)
        expect_close(r.bytes[w], served[w] * 3 * n + (7 - served[w]) * n, 1e-12, "round robin");
    expect_close(r.payload0, 7 * n, 1e-12, "payload");
}

/* Two streams at once: to two servers of their own, each server's NIC carries its own call (the
 * workers' NICs have room for both), so they take the time of one; to one server, its NIC
 * carries both: twice the bandwidth term, the latencies paid at the same time. */
static void test_ps_spreads_calls_in_flight_over_servers(void **state)
{
    (void)state;
    const int P = 4;
    const double n = 200000.0 * 4, a = 2 * 5e-6, b = 1 / 1.25e9;
    SC = (Scenario){
        .cl = star_ps(P, 2, 1), .count = 200000, .calls = 1, .cost_servers = 2, .concurrent = 1};
    expect_close(simulate().time_s, 2 * (a + P * n * b), 1e-9, "two servers");
    SC.cl = star_ps(P, 1, 1);
    SC.cost_servers = 1;
    expect_close(simulate().time_s, 2 * (a + 2 * P * n * b), 1e-9, "one server");
}

/* One call of N bytes, fifo's partitions in flight (coll_ps.c's closed form): on the analytic
 * backend, T = 2 (a + b L) with L the busiest NIC direction's bytes in a phase, written out here
 * for each case; at the transfer level, every partition on a stream of its own. An even spread
 * over p colocated servers is a ring's bandwidth term, 2 (a + (p - 1)/p N b), where the one-call
 * form (the analytic price before partitions were in flight) charged 2 (a + (p - 1) N b). */
static void test_ps_partitions_in_flight_share_the_links(void **state)
{
    (void)state;
    const double a = 2 * 5e-6, b = 1 / 1.25e9, n = 100000.0 * 4; /* a partition's bytes */
    struct {
        int P, servers, own, parts; /* partitions: parts / 2 (odd: the last one half) */
        double L, rel;              /* the closed form's load; transfer's tolerance */
        const char *what;
    } cases[] = {
        /* 4 partitions over 4 colocated servers: 3 pushes into each, 3 out of each */
        {4, 4, 0, 8, 3 * n, 1e-9, "4 colocated servers, 4 partitions"},
        /* 4 over 2 servers of their own: 2 each, 4 pushes into each server's NIC */
        {4, 2, 1, 8, 8 * n, 1e-9, "2 servers of their own, 4 partitions"},
        /* 3.5 over 4 colocated: host 3 serves the half; its pushes (3 n) and the others' pulls
         * (3 n) bound the phases. At the transfer level the half's pull starts once its pushes
         * are in and takes a share of host 3's NIC from its pushes: 24% longer (0.30 allowed) */
        {4, 4, 0, 7, 3 * n, 0.3, "4 colocated servers, 3.5 partitions"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        const double N = n * cases[k].parts / 2, want = 2 * (a + cases[k].L * b);
        SC = (Scenario){.cl = star_ps(cases[k].P, cases[k].servers, cases[k].own),
                        .count = 50000 * (size_t)cases[k].parts,
                        .part = 100000,
                        .inflight = (cases[k].parts + 1) / 2,
                        .backend = COLL_ANALYTIC};
        Result an = simulate();
        expect_close(an.time_s, want, 1e-9, cases[k].what);
        if (!cases[k].own && cases[k].parts % 2 == 0)
            expect_close(an.time_s, 2 * (a + (cases[k].P - 1.0) / cases[k].P * N * b), 1e-9,
                         "a ring's bandwidth term");
        SC.backend = COLL_TRANSFER;
        Result tr = simulate();
        expect_close(tr.time_s, an.time_s, cases[k].rel, cases[k].what);
        for (int w = 0; w < cases[k].P; w++)
            expect_close(an.bytes[w], tr.bytes[w], 1e-12, "bytes, analytic and transfer");
    }
}

/* BytePS's partition (coll.h), in floats */
#define PART_FLOATS ((size_t)(COLL_PS_PARTITION_BYTES / 4))

static Cluster fat_tree_ps(int P, int leaf, double o, int servers, int own)
{
    Cluster c = star_ps(P, servers, own);
    c.topology = TOPO_FAT_TREE;
    c.leaf_size = leaf;
    c.oversubscription = o;
    return c;
}

static Cluster hierarchical_ps(int P, int G, double intra_Bps, int servers, int own)
{
    Cluster c = star_ps(P, servers, own);
    c.topology = TOPO_HIERARCHICAL;
    c.gpus_per_node = G;
    c.intra_bandwidth_Bps = intra_Bps;
    c.intra_latency_s = 1e-6;
    return c;
}

/* A call larger than a partition is cut over the servers (coll_ps_parts.c): still the exact
 * sum, in rank order, on a fat-tree and a hierarchical cluster, colocated or on hosts of their
 * own (2 partitions and a short third). */
static void test_ps_partitioned_call_is_the_exact_sum(void **state)
{
    (void)state;
    for (int own = 0; own <= 1; own++) {
        SC = (Scenario){.cl = fat_tree_ps(4, 2, 2, 2, own),
                        .count = 2 * PART_FLOATS + 1000,
                        .calls = 1,
                        .random_values = 1};
        assert_int_equal(simulate().wrong, 0);
        SC.cl = hierarchical_ps(4, 2, 5e9, 2, own);
        SC.mean = 1;
        assert_int_equal(simulate().wrong, 0);
    }
}

/* One call of N bytes cut into partitions spread evenly over m colocated servers (placed one a
 * leaf or node, coll_ps_net.c), against coll_ps_net.c's closed form written out here:
 *   fat-tree, leaves of L, uplinks oversubscribed o, one server on each of m leaves:
 *     T = 2 (4 alpha + N/B max((P - 1)/m, 1, (P - L) o / (m L), (m - 1) o / m, o [m < P/L]))
 *   hierarchical, one NIC a node of G GPUs, one server a node (m = P / G):
 *     T = 2 (2 alpha + 2 alpha_i + N max(G (m - 1) / (m B), (P - 1) / (m B_i)))
 * at the transfer level and on the analytic backend, and every rank's bytes alike at both. */
static void test_ps_fat_tree_and_hierarchical_match_the_closed_form(void **state)
{
    (void)state;
    const double al = 5e-6, ali = 1e-6, B = 1.25e9, part = COLL_PS_PARTITION_BYTES;
    struct {
        Cluster cl;
        int parts;
        double T, slack; /* transfer's tolerance, seconds */
        const char *what;
    } cases[] = {
        /* P 8, L 2, o 4, m 2: into a leaf with a server, (P - L) o / (m L) = 6 */
        {fat_tree_ps(8, 2, 4, 2, 0), 2, 2 * (4 * al + 2 * part / B * 6), 0, "fat-tree, 2 servers"},
        /* m 4 (one a leaf): max(7/4, 1, 3, 3) = 3 */
        {fat_tree_ps(8, 2, 4, 4, 0), 4, 2 * (4 * al + 4 * part / B * 3), 0, "fat-tree, 4 servers"},
        /* o 1: the servers' NICs, (P - 1)/m = 3.5. At the transfer level the push from the
         * server's own leaf (2 alpha away) starts filling its NIC 2 alpha before the others
         * arrive: each phase 2 alpha shorter than the form's 4 alpha (measured: 4 alpha in all) */
        {fat_tree_ps(8, 2, 1, 2, 0), 2, 2 * (4 * al + 2 * part / B * 3.5), 4 * al + 1e-9,
         "fat-tree, o 1"},
        /* G 4, m 2, B_i = B: the intra links, (P - 1)/m = 3.5 > G (m - 1)/m = 2; the node's
         * own pushes (2 alpha_i away) fill the server's intra link 2 alpha early, as above */
        {hierarchical_ps(8, 4, B, 2, 0), 2, 2 * (2 * al + 2 * ali + 2 * part * 3.5 / B),
         4 * al + 1e-9, "hierarchical, intra links"},
        /* B_i = 40 B: the NICs, 2 / B > 3.5 / (40 B). (At 4 B the node's own pushes, 6 times
         * nearer, take 6 shares of the server's intra link for each far one (SimGrid shares a
         * link inversely to RTT), slowing the far ones below their NIC share: 6% longer.) */
        {hierarchical_ps(8, 4, 40 * B, 2, 0), 2, 2 * (2 * al + 2 * ali + 2 * part * 2 / B), 0,
         "hierarchical, NICs"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        SC = (Scenario){.cl = cases[k].cl,
                        .count = (size_t)cases[k].parts * PART_FLOATS,
                        .calls = 1,
                        .dataless = 1};
        Result tr = simulate();
        if (fabs(tr.time_s - cases[k].T) > cases[k].slack)
            expect_close(tr.time_s, cases[k].T, 1e-6, cases[k].what);
        SC.backend = COLL_ANALYTIC;
        Result an = simulate();
        expect_close(an.time_s, cases[k].T, 1e-12, cases[k].what);
        for (int w = 0; w < SC.cl.workers; w++)
            expect_close(an.bytes[w], tr.bytes[w], 1e-12, "bytes, analytic and transfer");
    }
}

/* --overlap none's fused call (one call of the whole gradient) is spread over every server, not
 * sent to one: with 4 partitions on a star of 4, each of m servers gets N/m from each worker, so
 * each host of a server sends 3 N/m of pulls and N - N/m of pushes, the others N, and the call
 * takes 2 (a + b N max(3/m, 1 [m < 4], 1 - 1/m)) (coll_ps_inflight.c), at both levels. */
static void test_ps_fused_call_spreads_over_every_server(void **state)
{
    (void)state;
    const double N = 4 * COLL_PS_PARTITION_BYTES, a = 2 * 5e-6, b = 1 / 1.25e9;
    for (int m = 2; m <= 4; m += 2)
        for (int backend = 0; backend <= 1; backend++) {
            SC = (Scenario){.cl = star_ps(4, m, 0),
                            .count = 4 * PART_FLOATS,
                            .calls = 1,
                            .dataless = 1,
                            .backend = backend ? COLL_ANALYTIC : COLL_TRANSFER};
            Result r = simulate();
            for (int w = 0; w < 4; w++)
                expect_close(r.bytes[w], w < m ? 3 * N / m + N - N / m : N, 1e-12,
                             "a server's share of the fused call");
            const double L = N * fmax(3.0 / m, m < 4 ? 1 : 1 - 1.0 / m);
            expect_close(r.time_s, 2 * (a + L * b), 1e-9, "the fused call's time");
        }
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ps_allreduce_is_the_exact_sum_and_mean),
        cmocka_unit_test(test_ps_sums_in_rank_order_bit_for_bit),
        cmocka_unit_test(test_ps_time_equals_its_formula_on_a_star),
        cmocka_unit_test(test_ps_calls_go_round_robin),
        cmocka_unit_test(test_ps_spreads_calls_in_flight_over_servers),
        cmocka_unit_test(test_ps_partitions_in_flight_share_the_links),
        cmocka_unit_test(test_ps_partitioned_call_is_the_exact_sum),
        cmocka_unit_test(test_ps_fat_tree_and_hierarchical_match_the_closed_form),
        cmocka_unit_test(test_ps_fused_call_spreads_over_every_server),
    };
    if (argc > 1) cmocka_set_test_filter(argv[1]); /* run one test alone */
    return cmocka_run_group_tests(tests, NULL, NULL);
}
