/* test_outputs.c: where results go, and that none is lost. merge writes only into a new or
 * empty folder that is not one of its shards, checks every row before writing anything, and a
 * merge that fails leaves nothing; the files a run writes (--out's, --record-trace, --timeline)
 * and reads (--workload, --platform) are all different files; an --out that cannot be written
 * is refused before the simulation; messages name the command once; -j works wherever --jobs
 * does. Tiny runs: a few seconds. */
#include "testutil.h"

#include "clitest.h"

#define TINY                                                                                       \
    "--train-samples 256 --test-samples 64 --batch 8 --epochs 1 --workers 2 --quiet "              \
    "--collectives analytic"
#define SWEEP "sweep " TINY " --bandwidth 1Gbps,10Gbps --policies sync,static --seed 1 --no-plots "

/* TMP/s1 and TMP/s2: the two shards of one sweep. */
static void make_shards(void)
{
    assert_int_equal(bw(SWEEP "--shard 1/2 --out @/s1"), 0);
    assert_int_equal(bw(SWEEP "--shard 2/2 --out @/s2"), 0);
}

static void test_merge_refuses_what_it_must_not_write_over(void **state)
{
    (void)state;
    make_shards();
    expect_refusal("--out @/s1: the folder is not empty", "merge --out @/s1 @/s1 @/s2");
    expect_refusal("--out @/s1: is the shard @/s1 itself", "merge --force --out @/s1 @/s1 @/s2");
    char cmd[512];
    snprintf(cmd, sizeof cmd, "mkdir %s/full && touch %s/full/keep.txt", TMP, TMP);
    assert_int_equal(system(cmd), 0);
    expect_refusal("--out @/full: the folder is not empty", "merge --out @/full @/s1 @/s2");
    assert_int_equal(bw("merge --force --out @/full @/s1 @/s2"), 0);
    char *csv = tmp_file("full/sweep.csv");
    assert_int_equal(count_lines(csv), 1 + 4);
    free(csv);
}

/* An edited shard: a row of a policy the sweep does not have, a negative time, a run that is
 * not the sweep's; each refused naming the file and line, with nothing written. */
static void test_merge_checks_every_row_before_writing(void **state)
{
    (void)state;
    make_shards();
    char cmd[1024];
    const struct {
        const char *sed, *needle;
    } edits[] = {
        {"2s/,static,/,accordion,/", "/e/sweep.csv line 2 is not a run of this sweep"},
        {"2s/,completed,\\([^,]*\\),\\([^,]*\\),[^,]*,/,completed,\\1,\\2,-5,/",
         "/e/sweep.csv line 2: time_to_accuracy_s '-5'"},
        {"2s/,completed,/,finished,/", "/e/sweep.csv line 2: status 'finished'"},
    };
    for (size_t k = 0; k < sizeof edits / sizeof *edits; k++) {
        snprintf(cmd, sizeof cmd, "rm -rf %s/e && cp -r %s/s2 %s/e && sed -i '%s' %s/e/sweep.csv",
                 TMP, TMP, TMP, edits[k].sed, TMP);
        assert_int_equal(system(cmd), 0);
        expect_refusal(edits[k].needle, "merge --out @/m @/s1 @/e"); /* e: the edited copy */
    }
    /* two shards of different sweeps: refused before anything is written */
    assert_int_equal(bw("sweep " TINY " --bandwidth 1Gbps,25Gbps --policies sync,static --seed 1 "
                        "--no-plots --shard 2/2 --out @/other"),
                     0);
    expect_refusal("is a different sweep", "merge --out @/m @/s1 @/other");
    assert_int_equal(bw("merge --out @/m @/s1 @/s2"), 0);
}

static void test_a_run_writes_and_reads_different_files(void **state)
{
    (void)state;
    char cmd[256];
    snprintf(cmd, sizeof cmd, "mkdir %s/o && touch %s/p.json", TMP, TMP);
    assert_int_equal(system(cmd), 0);
    expect_refusal("--record-trace @/o/steps.csv: is the same file as --out's @/o/steps.csv",
                   "run " TINY " --force --out @/o --record-trace @/o/steps.csv");
    expect_refusal("--timeline @/o/../o/summary.json: is the same file as --out's @/o/summary.json",
                   "run " TINY " --force --out @/o --timeline @/o/../o/summary.json");
    expect_refusal("--timeline @/t.json: is the same file as --record-trace's",
                   "run " TINY " --record-trace @/t.json --timeline @/t.json");
    expect_refusal("--record-trace @/p.json: is the same file as --workload's",
                   "run " TINY " --workload @/p.json --record-trace @/p.json");
}

static void test_messages_name_the_command_once_and_j_means_jobs(void **state)
{
    (void)state;
    expect_refusal("compare: unknown flag '--bogus' (see bellows compare --help)",
                   "compare --bogus");
    expect_refusal("run: unexpected argument 'extra'", "run extra");
    expect_refusal("--out /proc/bellows-out: cannot write into /proc",
                   "run " TINY " --out /proc/bellows-out");
    assert_int_equal(bw("compare " TINY " -j 1 --policies sync --seed 1 --no-plots --out @/c"), 0);
    char *out = tmp_file("stdout");
    assert_non_null(strstr(out, "1 at a time"));
    free(out);
    expect_refusal("--jobs: expected an integer", "compare -jx --out @/c2");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, clitest_setup, clitest_teardown)
        T(test_merge_refuses_what_it_must_not_write_over),
        T(test_merge_checks_every_row_before_writing),
        T(test_a_run_writes_and_reads_different_files),
        T(test_messages_name_the_command_once_and_j_means_jobs),
#undef T
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
