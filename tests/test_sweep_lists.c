/* test_sweep_lists.c: a train-once sweep prices what its runs saw, and sweeps every price flag.
 * A run too short for ADPSGD to average records no param_variance, and its priced twin sees
 * what the live run saw: the sweep succeeds with the rows --train-each gives (it failed, and
 * --resume failed again). --costs, a price flag, takes a list of built-ins and files. A policy
 * that declares itself price-blind but reads the price is refused when priced. */
#include "testutil.h"

#include "clitest.h"

#define SHORT "--train-samples 512 --test-samples 64 --epochs 1 --workers 2 --seed 1 --no-plots"

/* The field k (0-based) of every line of csv, joined: a column to compare. */
static void column(const char *csv, int k, char *out, size_t n)
{
    size_t used = 0;
    out[0] = '\0';
    for (const char *line = csv; line && *line;
         line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
        const char *f = line;
        for (int i = 0; i < k && f; i++) {
            f = strchr(f, ',');
            if (f) f++;
        }
        if (!f) continue;
        size_t len = strcspn(f, ",\n");
        used += (size_t)snprintf(out + used, n - used, "%.*s|", (int)len, f);
        if (used >= n) break;
    }
}

static void test_a_priced_twin_of_a_run_too_short_to_average_succeeds(void **state)
{
    (void)state;
    const char *sweep = "sweep " SHORT " --bandwidth 1Gbps,10Gbps --policies sync,adpsgd";
    assert_int_equal(bw("%s --out @/once", sweep), 0);
    assert_int_equal(bw("%s --train-each --out @/each", sweep), 0);
    char *once = tmp_file("once/sweep.csv"), *each = tmp_file("each/sweep.csv");
    assert_true(once && each);
    /* status, the accuracies, bytes, the simulated times, steps: columns 4 to 16 */
    for (int k = 4; k <= 16; k++) {
        char a[4096], b[4096];
        column(once, k, a, sizeof a);
        column(each, k, b, sizeof b);
        if (strcmp(a, b) != 0) fail_msg("column %d: %s (train once) vs %s (--train-each)", k, a, b);
    }
    assert_null(strstr(once, "failed"));
    free(once);
    free(each);
    /* --resume finds nothing to do again */
    assert_int_equal(bw("%s --resume --out @/once", sweep), 0);
}

static void test_costs_is_swept_as_a_list(void **state)
{
    (void)state;
    write_tmp("mine.json",
              "{\"bellows_costs\": 1, \"name\": \"mine\", \"implementation\": \"a toy\", \"gpu\": "
              "\"A100\", \"fixed\": {\"tensor_s\": 1e-3, \"kernel_s\": 1e-5, \"collective_s\": "
              "1e-3}, \"ops\": {\"optimizer\": {\"kernels\": 1, \"rate\": [[1, 1e9]]}}, "
              "\"networks\": {\"tcp\": {\"allreduce\": 0.5, \"allgather\": 0.5}}, \"allgather\": "
              "{\"overlaps_backward\": true}}\n");
    assert_int_equal(bw("sweep " SHORT " --compressor none --policies sync --costs "
                        "ideal,@/mine.json,pytorch --out @/c"),
                     0);
    char *csv = tmp_file("c/sweep.csv");
    assert_non_null(csv);
    assert_true(strncmp(csv, "costs,", 6) == 0);
    assert_non_null(strstr(csv, "\nideal,"));
    assert_non_null(strstr(csv, "/mine.json,"));
    assert_non_null(strstr(csv, "\npytorch,"));
    /* three prices of one training: three simulated times */
    char times[4096];
    column(csv, 11, times, sizeof times);
    char *first = strchr(times, '|') + 1, *second = strchr(first, '|') + 1;
    assert_true(strncmp(first, second, (size_t)(strchr(first, '|') - first)) != 0);
    free(csv);
}

/* Defect 14: a policy declaring price_blind = 1 that reads the bandwidth was priced on its
 * decisions at the trained price (rank 1 bytes at 1 Gbps). The training run records each
 * decision's fingerprint; the priced twin's differs, and it is refused, naming the policy. */
static void test_a_policy_that_lies_about_price_blindness_is_refused(void **state)
{
    (void)state;
    assert_int_equal(
        bw("sweep " SHORT " --policies sync," PLUGIN_LIAR " --bandwidth 10Gbps,1Gbps --out @/liar"),
        1);
    char *err = tmp_file("stderr");
    assert_non_null(err);
    if (!strstr(err, "--policy " PLUGIN_LIAR ": declared price-blind (price_blind = 1), but at "
                     "step 0 it decides differently at this price"))
        fail_msg("stderr: %s", err);
    free(err);
    /* trained at each price, it runs */
    assert_int_equal(bw("sweep " SHORT " --policies sync," PLUGIN_LIAR
                        " --bandwidth 10Gbps,1Gbps --train-each --out @/liar2"),
                     0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_priced_twin_of_a_run_too_short_to_average_succeeds),
        cmocka_unit_test(test_costs_is_swept_as_a_list),
        cmocka_unit_test(test_a_policy_that_lies_about_price_blindness_is_refused),
    };
    return cmocka_run_group_tests(tests, clitest_setup, clitest_teardown);
}
