/* test_coll.c: what the collectives compute, on real SimGrid platforms (colltest.h: each
 * scenario in a forked child). Checked: results equal the exact sum for every algorithm and 1..9
 * workers (integer-valued floats, so bit-for-bit whatever the order), and random floats the
 * ring's or the ranks' order of additions bit for bit; callers may reuse their buffers; in-memory
 * sums keep their order over items and threads; allgather and broadcast; the analytic backend
 * agrees with the transfer-level one. The fp16 allreduce moves real halves (2 bytes each) and
 * rounds every addition to half; half conversion is checked against the IEEE rules
 * exhaustively. Every collective counts the payload it was handed (payload_bytes). A mirror and
 * its replay give the same bits, times and books as the calls themselves, and a mean into a
 * shared buffer equals the mean in place. Times against the closed forms: test_coll_time.c. */
#include "testutil.h"

#include "colltest.h"

/* SC's cluster made hierarchical, with gpus per node, when algo is the hierarchical allreduce. */
static void hierarchical_if(int algo, int gpus)
{
    if (algo != COLL_HIERARCHICAL) return;
    SC.cl.topology = TOPO_HIERARCHICAL;
    SC.cl.gpus_per_node = gpus;
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
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
