/* test_fuzz_found.c: what fuzz_costs and fuzz_cluster (tests/fuzz/) found, as regressions: each
 * input is also in the harness's seed corpus. A cluster file's value holding a control byte (a
 * DEL inside "topology") was read as a flag's text, to be printed raw in messages and
 * summaries; it is refused, naming the file and the key. */
#include "testutil.h"

#include "clitest.h"

static void test_a_control_byte_in_a_cluster_value_is_refused(void **state)
{
    (void)state;
    write_tmp("del.json", "{\"topology\": \"fat-tr\x7f"
                          "ee\", \"jobs\": [{\"name\": \"a\", "
                          "\"workers\": 2}]}\n");
    expect_refusal("del.json: key \"topology\": a control character in its value",
                   "cluster @/del.json --out @/o");
    write_tmp("tab.json", "{\"jobs\": [{\"name\": \"a\", \"workers\": 2, \"policy\": "
                          "\"sync\\tx\"}]}\n");
    expect_refusal("key \"policy\": a control character in its value",
                   "cluster @/tab.json --out @/o");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_control_byte_in_a_cluster_value_is_refused),
    };
    return cmocka_run_group_tests(tests, clitest_setup, clitest_teardown);
}
