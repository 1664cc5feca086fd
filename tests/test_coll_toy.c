/* test_coll_toy.c: an algorithm added to the collectives' table by one file and one line
 * (issue 38: tests/coll_toy.c and tests/coll_toy.def, built into this test's own copy of the
 * collectives with BELLOWS_COLL_EXTRA_DEF; CMakeLists.txt, bw_net_toy). Checked: the table
 * knows it (its name, its place after the built-in algorithms, what coll.h's accessors say);
 * at both levels it sums to the bits of rank order; its transfer-level time on a star equals
 * its own closed form, 2 (p-1) (a + n b), written here apart from its file, to 1e-6, and so
 * does the analytic level's; rank 0's bytes are (p-1) n at both. */
#include "testutil.h"

#include "colltest.h"

static double toy_form(int p, double n, double a, double b)
{
    return 2.0 * (p - 1) * (a + n * b);
}

static void test_table_knows_the_toy(void **state)
{
    (void)state;
    assert_int_equal(COLL_TOY, COLL_PS + 1);
    assert_int_equal(COLL_N_ALGOS, COLL_TOY + 1);
    assert_int_equal(coll_algo_parse("toy"), COLL_TOY);
    assert_string_equal(coll_algo_name(COLL_TOY), "toy");
    assert_int_equal(coll_algo_parse("ring"), COLL_RING); /* the built-ins keep their places */
    assert_false(coll_algo_servers(COLL_TOY));
    assert_false(coll_algo_per_node(COLL_TOY));
    assert_false(coll_algo_sums_once(COLL_TOY));
    Cluster c = star(5, 1e9, 1e-6);
    assert_int_equal(coll_algo_group(COLL_TOY, &c), c.gpus_per_node);
    assert_true(coll_algo_messages(COLL_TOY, &c) == 8);
    char order[32];
    coll_algo_sum_order(COLL_TOY, COLL_TRANSFER, 1, order, sizeof order);
    assert_string_equal(order, "toy");
    coll_algo_sum_order(COLL_TOY, COLL_ANALYTIC, 1, order, sizeof order);
    assert_string_equal(order, "rank");
    assert_true(coll_allreduce_formula_s(COLL_TOY, 5, 1, 1e6, 2e-6, 1e-9, 0, 0) ==
                toy_form(5, 1e6, 2e-6, 1e-9));
    assert_true(coll_allreduce_formula_s(COLL_TOY, 1, 1, 1e6, 2e-6, 1e-9, 0, 0) == 0);
}

static void test_toy_time_equals_its_closed_form_at_both_levels(void **state)
{
    (void)state;
    const int Ps[] = {2, 3, 5, 8};
    const double bw = 1.25e9, lat = 10e-6;
    for (size_t i = 0; i < sizeof Ps / sizeof *Ps; i++) {
        const int P = Ps[i];
        SC = (Scenario){.cl = star(P, bw, lat), .algo = COLL_TOY, .count = 50000};
        const double n = 50000.0 * sizeof(float), want = toy_form(P, n, 2 * lat, 1 / bw);
        char what[64];
        snprintf(what, sizeof what, "toy on a star, P=%d, transfer", P);
        Result t = simulate();
        expect_close(t.time_s, want, 1e-6, what);
        assert_true(t.bytes0 == (P - 1) * n);
        SC.backend = COLL_ANALYTIC;
        Result a = simulate();
        snprintf(what, sizeof what, "toy on a star, P=%d, analytic", P);
        expect_close(a.time_s, want, 1e-6, what);
        expect_close(a.time_s, t.time_s, 1e-6, "toy: analytic against transfer");
        assert_true(a.bytes0 == t.bytes0);
    }
}

static void test_toy_sums_in_rank_order_at_both_levels(void **state)
{
    (void)state;
    for (int level = 0; level < 2; level++) {
        SC = (Scenario){.cl = star(5, 1e9, 1e-6),
                        .algo = COLL_TOY,
                        .backend = level ? COLL_ANALYTIC : COLL_TRANSFER,
                        .count = 3001,
                        .random_values = 1,
                        .rank_order = 1,
                        .scribble = 1};
        assert_int_equal(simulate().wrong, 0);
        SC.mean = 1;
        assert_int_equal(simulate().wrong, 0);
        SC = (Scenario){.cl = star(3, 1e9, 1e-6),
                        .algo = COLL_TOY,
                        .backend = SC.backend,
                        .count = 77,
                        .op = OP_ALLREDUCE_F16};
        assert_int_equal(simulate().wrong, 0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table_knows_the_toy),
        cmocka_unit_test(test_toy_time_equals_its_closed_form_at_both_levels),
        cmocka_unit_test(test_toy_sums_in_rank_order_at_both_levels),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
