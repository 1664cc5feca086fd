/* test_costs_limits.c: a profile's numbers obey the flags' limits, and every result is within
 * the promised range. A cost profile's rates, efficiencies and link shares are held to the
 * ranges of the flags they stand beside (--gpu-flops, --gpu-efficiency, --bandwidth), with
 * messages that name the file and the field and never a flag that was not given; its names
 * hold no control character; a rate table whose sizes span the doubles prices as the constant
 * it is, never NaN. The simulated-time limit holds for the step as priced (--price-batch; a
 * platform's slow hosts, at the run's end), and a platform of slow but simulable hosts (as
 * SimGrid's griffon.xml example) runs. */
#include "testutil.h"

#include "clitest.h"
#include "costs.h"

#define SMALL                                                                                      \
    "--train-samples 256 --test-samples 64 --batch 8 --epochs 1 --quiet --workers 2 --compressor " \
    "none"

/* A valid A100 profile with one member replaced (the text after "gpu"), into TMP/NAME.json. */
static void write_profile(const char *name, const char *efficiency, const char *optimizer_rate,
                          const char *allreduce, const char *name_field)
{
    char path[256], text[4096];
    snprintf(path, sizeof path, "%s.json", name);
    snprintf(text, sizeof text,
             "{\"bellows_costs\": 1, \"name\": %s, \"implementation\": \"a toy\", \"gpu\": "
             "\"A100\", \"efficiency\": {\"fp32\": %s}, \"fixed\": {\"tensor_s\": 1e-5, "
             "\"kernel_s\": 1e-5, \"collective_s\": 1e-5}, \"ops\": {\"elementwise\": "
             "{\"kernels\": 1, \"rate\": [[1, 1e12]]}, \"optimizer\": {\"kernels\": 1, "
             "\"rate\": %s}}, \"networks\": {\"tcp\": {\"allreduce\": %s, \"allgather\": 0.5}}, "
             "\"allgather\": {\"overlaps_backward\": true}}\n",
             name_field ? name_field : "\"toy\"", efficiency ? efficiency : "0.5",
             optimizer_rate ? optimizer_rate : "[[1, 1e10]]", allreduce ? allreduce : "0.5");
    write_tmp(path, text);
}

static void expect_stderr_lacks(const char *needle)
{
    char *err = tmp_file("stderr");
    if (err && strstr(err, needle)) fail_msg("stderr names '%s': %s", needle, err);
    free(err);
}

/* Defect 2: a rate SimGrid's solver takes for none deadlocked the run, which then "completed"
 * with 0 steps. */
static void test_a_rate_below_what_bellows_simulates_is_refused_by_field(void **state)
{
    (void)state;
    write_profile("slow", NULL, "[[1, 1e-300]]", NULL, NULL);
    expect_refusal("--costs @/slow.json: ops.optimizer: \"rate\" pair 0: 1e-300 units per second; "
                   "expected 0.01 to 1e+18",
                   "run " SMALL " --gpu A100 --costs @/slow.json");
    write_profile("fast", NULL, "[[1, 1e10], [2, 1e300]]", NULL, NULL);
    expect_refusal("ops.optimizer: \"rate\" pair 1: 1e+300", "run " SMALL " --costs @/fast.json");
}

/* Defect 3: a link share of 1e-300 "completed" with 6.5e296 simulated s. */
static void test_a_link_share_leaves_a_bandwidth_bellows_simulates(void **state)
{
    (void)state;
    write_profile("share", NULL, NULL, "1e-300", NULL);
    expect_refusal("--costs @/share.json: networks.tcp.allreduce: a share of 1e-300 of a NIC",
                   "run " SMALL " --costs @/share.json");
    expect_stderr_lacks("--bandwidth:");
    /* the same share of a slow link that still leaves a simulable rate runs */
    write_profile("share2", NULL, NULL, "0.95", NULL);
    assert_int_equal(bw("run " SMALL " --bandwidth 1Kbps --costs @/share2.json --out @/s2"), 0);
}

/* A transport's cap (networks.tcp.cap_gbps): the run's NICs run at min(share x link, cap),
 * a cap above share x link changes nothing, and a bad cap is refused naming file and field. */
static void test_a_cap_limits_the_run_nics_and_a_bad_one_is_refused(void **state)
{
    (void)state;
    write_profile("cap", NULL, NULL, "0.5, \"cap_gbps\": 2.5", NULL);
    assert_int_equal(bw("run " SMALL " --bandwidth 10Gbps --costs @/cap.json --out @/cap"), 0);
    assert_true(summary_num("cap", "link_share") == 0.25); /* 2.5 Gbit/s, not 0.5 x 10 */
    char *out = tmp_file("stdout");
    assert_non_null(strstr(out, "tcp collectives at 2.5 Gbit/s, the transport's cap (25% of the "
                                "link)"));
    free(out);
    write_profile("above", NULL, NULL, "0.5, \"cap_gbps\": 100", NULL);
    assert_int_equal(bw("run " SMALL " --bandwidth 10Gbps --costs @/above.json --out @/above"), 0);
    assert_true(summary_num("above", "link_share") == 0.5); /* the share's 5 Gbit/s */
    const char *bad[] = {"-1", "0", "\"fast\"", "1e300"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char arg[64];
        snprintf(arg, sizeof arg, "0.5, \"cap_gbps\": %s", bad[i]);
        write_profile("badcap", NULL, NULL, arg, NULL);
        expect_refusal("--costs @/badcap.json: networks.tcp: \"cap_gbps\" must be a number > 0",
                       "run " SMALL " --costs @/badcap.json --out @/bc");
        assert_null(tmp_file("bc/summary.json"));
    }
}

/* Defect 19: an efficiency of 1e-20 blamed --gpu-efficiency, which was never given. */
static void test_an_efficiency_is_refused_by_its_field(void **state)
{
    (void)state;
    write_profile("eff", "1e-20", NULL, NULL, NULL);
    expect_refusal("--costs @/eff.json: efficiency: \"fp32\": 1e-20; expected a fraction of 1e-06 "
                   "to 1",
                   "run " SMALL " --costs @/eff.json");
    expect_stderr_lacks("--gpu-efficiency");
}

/* Defect 22: a name or implementation with a newline or escape split the "# price:" line. */
static void test_control_characters_in_names_are_refused(void **state)
{
    (void)state;
    write_profile("nl", NULL, NULL, NULL, "\"a\\nb\"");
    expect_refusal("@/nl.json: \"name\": a control character (byte 0x0a at offset 1)",
                   "run " SMALL " --costs @/nl.json");
    write_profile("esc", NULL, NULL, NULL, "\"\\u001b[31mred\"");
    expect_refusal("\"name\": a control character (byte 0x1b at offset 0)",
                   "run " SMALL " --costs @/esc.json");
}

/* Defect 5: [[1e-305, R], [1e300, R]] interpolated to NaN, and the optimiser cost 0. */
static void test_a_rate_table_spanning_the_doubles_prices_as_its_constant(void **state)
{
    (void)state;
    write_profile("wide", NULL, "[[1e-305, 1e10], [1e300, 1e10]]", NULL, NULL);
    write_profile("one", NULL, "[[1, 1e10]]", NULL, NULL);
    write_profile("rise", NULL, "[[1e-305, 1e9], [1e300, 1e11]]", NULL, NULL);
    char wide[256], one[256], rise[256];
    snprintf(wide, sizeof wide, "%s/wide.json", TMP);
    snprintf(one, sizeof one, "%s/one.json", TMP);
    snprintf(rise, sizeof rise, "%s/rise.json", TMP);
    CostProfile *w = NULL, *o = NULL, *r = NULL;
    assert_int_equal(costs_load(wide, "--costs", "A100", &w, NULL), BW_OK);
    assert_int_equal(costs_load(one, "--costs", "A100", &o, NULL), BW_OK);
    assert_int_equal(costs_load(rise, "--costs", "A100", &r, NULL), BW_OK);
    const double sizes[] = {1e-300, 1, 1e3, 2.5e7, 1e200, 1e301};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        double a = costs_op_seconds(w, COST_OP_OPTIMIZER, sizes[i]);
        double b = costs_op_seconds(o, COST_OP_OPTIMIZER, sizes[i]);
        if (a != b) fail_msg("size %g: %.17g s, [[1, R]] gives %.17g s", sizes[i], a, b);
        double c = costs_op_seconds(r, COST_OP_OPTIMIZER, sizes[i]);
        double lo = 1e-5 + sizes[i] / 1e11, hi = 1e-5 + sizes[i] / 1e9;
        if (!(c >= lo * (1 - 1e-12) && c <= hi * (1 + 1e-12)))
            fail_msg("size %g: %.17g s, not between %g and %g", sizes[i], c, lo, hi);
    }
    costs_free(w);
    costs_free(o);
    costs_free(r);
    /* and a run prices it so: the same simulated time as the one-point table */
    assert_int_equal(bw("run " SMALL " --costs @/wide.json --out @/w"), 0);
    assert_int_equal(bw("run " SMALL " --costs @/one.json --out @/o"), 0);
    double tw = summary_num("w", "sim_time_s"), to = summary_num("o", "sim_time_s");
    assert_true(isfinite(tw) && tw == to);
}

/* Defect 4: the estimate priced --batch, so --price-batch 1048576 "completed" with 5.2e10 s. */
static void test_the_limit_holds_for_the_step_as_priced(void **state)
{
    (void)state;
    expect_refusal("at --price-batch", "run " SMALL " --workload resnet50 --gpu-flops 1e6 "
                                       "--price-batch 1048576");
}

/* A two-host platform file of hosts of the given speed, into TMP/NAME.xml. */
static void write_platform(const char *name, const char *speed)
{
    char path[256], text[1024];
    snprintf(path, sizeof path, "%s.xml", name);
    snprintf(text, sizeof text,
             "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM "
             "\"https://simgrid.org/simgrid.dtd\">\n<platform version=\"4.1\">\n  <zone id=\"z\" "
             "routing=\"Full\">\n    <host id=\"a\" speed=\"%s\"/><host id=\"b\" speed=\"%s\"/>\n"
             "    <link id=\"l\" bandwidth=\"125MBps\" latency=\"24us\"/>\n"
             "    <route src=\"a\" dst=\"b\"><link_ctn id=\"l\"/></route>\n  </zone>\n"
             "</platform>\n",
             speed, speed);
    write_tmp(path, text);
}

/* Defect 24: griffon.xml's hosts of 286.087 kflop/s were refused by a floor of 1e6 flop/s; a
 * platform's hosts too slow for the time limit fail at the run's end, not "complete". */
static void test_slow_platform_hosts_run_and_too_slow_ones_fail(void **state)
{
    (void)state;
    write_platform("griffon", "286.087kf");
    assert_int_equal(bw("run --platform @/griffon.xml " SMALL " --out @/g"), 0);
    double t = summary_num("g", "sim_time_s");
    assert_true(isfinite(t) && t > 0 && t < 1e9);
    write_platform("crawl", "0.02f");
    assert_int_equal(bw("run --platform @/crawl.xml " SMALL " --out @/c --record-trace "
                        "@/c.jsonl.gz --timeline @/c.json"),
                     2);
    char *err = tmp_file("stderr");
    assert_non_null(strstr(err, "more than the 1e+09 s bellows simulates"));
    free(err);
    assert_null(tmp_file("c/summary.json"));
    assert_null(tmp_file("c.jsonl.gz")); /* a refused run leaves no trace nor timeline */
    assert_null(tmp_file("c.json"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_rate_below_what_bellows_simulates_is_refused_by_field),
        cmocka_unit_test(test_a_link_share_leaves_a_bandwidth_bellows_simulates),
        cmocka_unit_test(test_a_cap_limits_the_run_nics_and_a_bad_one_is_refused),
        cmocka_unit_test(test_an_efficiency_is_refused_by_its_field),
        cmocka_unit_test(test_control_characters_in_names_are_refused),
        cmocka_unit_test(test_a_rate_table_spanning_the_doubles_prices_as_its_constant),
        cmocka_unit_test(test_the_limit_holds_for_the_step_as_priced),
        cmocka_unit_test(test_slow_platform_hosts_run_and_too_slow_ones_fail),
    };
    return cmocka_run_group_tests(tests, clitest_setup, clitest_teardown);
}
