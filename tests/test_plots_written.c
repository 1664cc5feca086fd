/* test_plots_written.c: when gnuplot cannot write (a full disk, a file-size limit), the plots
 * came out empty or cut off, yet compare, sweep, cluster and plot said "# plots in ..." and
 * exited 0. What gnuplot wrote is checked: a cut-off plot is removed, the command says so and
 * exits 1, and the results (small files, under the limit) stand. Skipped without gnuplot. */
#include "testutil.h"

#include "clitest.h"

#define SMALL "--train-samples 256 --test-samples 64 --epochs 1 --workers 2 --seeds 1 --quiet"

/* `ulimit -f 16; bellows ARGS` ("@" for TMP): 8 or 16 KB, whichever unit the shell counts in;
 * returns the exit status. */
static int bw_limited(const char *args)
{
    char expanded[4096], cmd[8192];
    clitest_expand_text(expanded, sizeof expanded, args);
    snprintf(cmd, sizeof cmd, "ulimit -f 16; %s %s >%s/stdout 2>%s/stderr </dev/null", BELLOWS_BIN,
             expanded, TMP, TMP);
    int st = system(cmd);
    assert_true(WIFEXITED(st));
    return WEXITSTATUS(st);
}

/* The command failed on its plots, said so, claimed none, and left no cut-off plot in dir. */
static void expect_plots_failed(const char *what, const char *dir)
{
    char *err = tmp_file("stderr"), *out = tmp_file("stdout");
    if (!err || !strstr(err, "gnuplot left"))
        fail_msg("%s: stderr lacks the plots' failure: %s", what, err ? err : "");
    if (out && strstr(out, "# plots in")) fail_msg("%s: stdout claims plots: %s", what, out);
    free(err);
    free(out);
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "cd %s/%s && for f in *.png *.svg; do [ -e \"$f\" ] || continue; "
             "tail -c 12 \"$f\" | od -c | grep -q 'I   E   N   D' || tail -c 16 \"$f\" | grep -q "
             "'</svg>' || exit 1; done",
             TMP, dir);
    if (system(cmd) != 0) fail_msg("%s: a cut-off plot is left in %s", what, dir);
}

/* TMP/name exists (the results stand). */
static void expect_file(const char *name)
{
    char *text = tmp_file(name);
    if (!text) fail_msg("%s/%s is missing", TMP, name);
    free(text);
}

static int have_gnuplot(void)
{
    return system("gnuplot --version >/dev/null 2>&1") == 0;
}

static void test_compare_and_plot_fail_when_gnuplot_cannot_write(void **state)
{
    (void)state;
    if (!have_gnuplot()) skip();
    assert_int_equal(bw_limited("compare " SMALL " --policies sync,static:level=1 --out @/c"), 1);
    expect_plots_failed("compare", "c");
    expect_file("c/compare.csv"); /* the results stand */
    assert_int_equal(bw_limited("plot @/c"), 1);
    expect_plots_failed("plot", "c");
    /* without the limit, all is well */
    assert_int_equal(bw("plot @/c"), 0);
}

static void test_sweep_fails_when_gnuplot_cannot_write(void **state)
{
    (void)state;
    if (!have_gnuplot()) skip();
    assert_int_equal(bw_limited("sweep " SMALL " --policies sync,static:level=1 --bandwidth "
                                "1Gbps,10Gbps --latency 5us,50us --out @/s"),
                     1);
    expect_plots_failed("sweep", "s");
    expect_file("s/sweep.csv");
}

static void test_cluster_fails_when_gnuplot_cannot_write(void **state)
{
    (void)state;
    if (!have_gnuplot()) skip();
    write_tmp("c.json",
              "{\"workers\": 4, \"jobs\": [{\"name\": \"a\", \"workers\": 2, \"epochs\": "
              "1, \"train_samples\": 256, \"test_samples\": 64, \"compressor\": \"none\"}, "
              "{\"name\": \"b\", \"workers\": 2, \"epochs\": 1, \"train_samples\": 256, "
              "\"test_samples\": 64, \"compressor\": \"none\"}]}\n");
    assert_int_equal(bw_limited("cluster @/c.json --alone none --out @/k"), 1);
    expect_plots_failed("cluster", "k");
    expect_file("k/cluster.json");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_compare_and_plot_fail_when_gnuplot_cannot_write),
        cmocka_unit_test(test_sweep_fails_when_gnuplot_cannot_write),
        cmocka_unit_test(test_cluster_fails_when_gnuplot_cannot_write),
    };
    return cmocka_run_group_tests(tests, clitest_setup, clitest_teardown);
}
