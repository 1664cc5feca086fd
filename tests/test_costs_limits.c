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
    SKIP_UNDER_VALGRIND(); /* it only starts bellows (clitest.h) */
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
    SKIP_UNDER_VALGRIND(); /* it only starts bellows (clitest.h) */
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
    SKIP_UNDER_VALGRIND(); /* it only starts bellows (clitest.h) */
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

/* Issue 48: NCCL's sockets. cap_gbps is one socket stream's rate and "sockets" (or
 * --nccl-sockets) multiplies it: the NICs run at min(share x link, cap x threads x sockets). A
 * profile's 2x2 at 2.5 Gbit/s is 10 Gbit/s, 0.1 of 100 Gbps; --nccl-sockets 1x1 gives 0.025 and
 * 4x8 (80 Gbit/s) leaves the share's 0.5. */
static void test_sockets_multiply_one_stream_cap(void **state)
{
    (void)state;
    write_profile("sk", NULL, NULL, "0.5, \"cap_gbps\": 2.5, \"sockets\": \"2x2\"", NULL);
    assert_int_equal(bw("run " SMALL " --bandwidth 100Gbps --costs @/sk.json --out @/sk"), 0);
    assert_true(summary_num("sk", "link_share") == 10.0 / 100);
    char *sum = tmp_file("sk/summary.json");
    assert_non_null(strstr(sum, "\"nccl_sockets\": \"2x2\""));
    free(sum);
    char *out = tmp_file("stdout");
    assert_non_null(strstr(out, "tcp collectives at 10 Gbit/s, the transport's cap: 2x2 NCCL "
                                "sockets at 2.5 Gbit/s each (10% of the link)"));
    free(out);
    assert_int_equal(bw("run " SMALL " --bandwidth 100Gbps --costs @/sk.json --nccl-sockets 1x1 "
                        "--out @/sk1"),
                     0);
    assert_true(summary_num("sk1", "link_share") == 2.5 / 100);
    assert_int_equal(bw("run " SMALL " --bandwidth 100Gbps --costs @/sk.json --nccl-sockets 4x8 "
                        "--out @/sk32"),
                     0);
    assert_true(summary_num("sk32", "link_share") == 0.5);
    /* the parser's bounds: NCCL's MAX_THREADS 16 and MAX_SOCKETS 64 */
    int t = 0, k = 0;
    assert_null(costs_sockets_parse("16x4", &t, &k));
    assert_true(t == 16 && k == 4);
    assert_null(costs_sockets_parse("1x64", &t, &k));
    const char *bad[] = {"0x1", "17x1", "8x9", "2x", "x2", "2x8x", "-1x2", "2*8", "", " 2x8"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        if (!costs_sockets_parse(bad[i], &t, &k)) fail_msg("'%s' was taken", bad[i]);
}

/* Bad socket counts, presets and sockets where NCCL's sockets do not run: exit 2 naming the flag
 * or the field, nothing written. */
static void test_bad_sockets_and_presets_are_refused(void **state)
{
    (void)state;
    SKIP_UNDER_VALGRIND(); /* it only starts bellows (clitest.h) */
    expect_refusal("--nccl-sockets: expected THREADSxSOCKETS",
                   "run " SMALL " --nccl-sockets 8x9 --out @/b1");
    expect_refusal("--nccl-sockets: costs ideal gives no rate of one socket stream",
                   "run " SMALL " --nccl-sockets 2x8 --costs ideal --out @/b1");
    expect_refusal("--nccl-sockets: NCCL's socket transport runs --transport tcp, not rdma",
                   "run " SMALL " --nccl-sockets 2x8 --transport rdma --out @/b1");
    expect_refusal("--cloud: expected one of aws-p3dn|gcp-a2|onprem-tcp, got 'aws'",
                   "run " SMALL " --cloud aws --out @/b1");
    assert_null(tmp_file("b1/summary.json"));
    write_profile("skr", NULL, NULL, "0.5, \"sockets\": \"2x8\"", NULL);
    expect_refusal("--costs @/skr.json: networks.tcp: \"sockets\": NCCL's socket streams multiply "
                   "one's rate",
                   "run " SMALL " --costs @/skr.json");
    write_profile("skb", NULL, NULL, "0.5, \"cap_gbps\": 2, \"sockets\": \"0x8\"", NULL);
    expect_refusal("--costs @/skb.json: networks.tcp: \"sockets\": expected THREADSxSOCKETS",
                   "run " SMALL " --costs @/skb.json");
}

/* Issue 48's done-when: under a cloud preset with NCCL's multi-socket defaults a bandwidth sweep
 * moves (aws-p3dn: 2x8 sockets, 120 Gbit/s of cap; 16 V100s, two nodes), where the one-socket
 * default caps every link at 7.5 Gbit/s; a flag given beside the preset wins (--bandwidth). */
static void test_a_cloud_preset_sweep_moves_with_the_bandwidth(void **state)
{
    (void)state;
    SKIP_UNDER_VALGRIND(); /* it only starts bellows (clitest.h) */
    double rate[2];
    const char *bws[] = {"10Gbps", "100Gbps"};
    for (int i = 0; i < 2; i++) {
        char cmd[512];
        snprintf(cmd, sizeof cmd,
                 "bench --workload resnet50 --workers 16 --cloud aws-p3dn --collectives analytic "
                 "--batch 4 --price-batch 64 --bandwidth %s",
                 bws[i]);
        assert_int_equal(bw(cmd), 0);
        char *out = tmp_file("stdout");
        const char *at = strstr(out, "samples/s in all");
        assert_non_null(at);
        while (at > out && at[-1] != ',') at--;
        rate[i] = strtod(at, NULL);
        assert_non_null(strstr(out, "# 16 x V100"));
        assert_non_null(strstr(out, "8 per node, hierarchical"));
        assert_non_null(strstr(out, "(2x8 NCCL sockets, at most 120 Gbit/s)"));
        free(out);
    }
    if (!(rate[1] > 1.1 * rate[0])) fail_msg("10 Gbps %g, 100 Gbps %g img/s", rate[0], rate[1]);
}

/* Defect 19: an efficiency of 1e-20 blamed --gpu-efficiency, which was never given. */
static void test_an_efficiency_is_refused_by_its_field(void **state)
{
    (void)state;
    SKIP_UNDER_VALGRIND(); /* it only starts bellows (clitest.h) */
    write_profile("eff", "1e-20", NULL, NULL, NULL);
    expect_refusal("--costs @/eff.json: efficiency: \"fp32\": 1e-20; expected a fraction of 1e-06 "
                   "to 1",
                   "run " SMALL " --costs @/eff.json");
    expect_stderr_lacks("--gpu-efficiency");
}

/* ops.qr without the hook that prices it (hooks.powersgd.qr_above_rank) is a rate nothing reads:
 * refused, naming the field. */
static void test_a_qr_rate_without_its_hook_is_refused(void **state)
{
    (void)state;
    SKIP_UNDER_VALGRIND(); /* it only starts bellows (clitest.h) */
    write_profile("qr", NULL, "[[1, 1e10]]}, \"qr\": {\"kernels\": 1, \"rate\": [[1, 1e9]]", NULL,
                  NULL);
    expect_refusal("--costs @/qr.json: ops.qr: priced only as PowerSGD's orthogonalisation above "
                   "a rank",
                   "run " SMALL " --costs @/qr.json");
}

/* Defect 22: a name or implementation with a newline or escape split the "# price:" line. */
static void test_control_characters_in_names_are_refused(void **state)
{
    (void)state;
    SKIP_UNDER_VALGRIND(); /* it only starts bellows (clitest.h) */
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
    SKIP_UNDER_VALGRIND(); /* it only starts bellows (clitest.h) */
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
    SKIP_UNDER_VALGRIND(); /* it only starts bellows (clitest.h) */
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
        cmocka_unit_test(test_sockets_multiply_one_stream_cap),
        cmocka_unit_test(test_bad_sockets_and_presets_are_refused),
        cmocka_unit_test(test_a_cloud_preset_sweep_moves_with_the_bandwidth),
        cmocka_unit_test(test_an_efficiency_is_refused_by_its_field),
        cmocka_unit_test(test_control_characters_in_names_are_refused),
        cmocka_unit_test(test_a_rate_table_spanning_the_doubles_prices_as_its_constant),
        cmocka_unit_test(test_the_limit_holds_for_the_step_as_priced),
        cmocka_unit_test(test_slow_platform_hosts_run_and_too_slow_ones_fail),
        cmocka_unit_test(test_a_qr_rate_without_its_hook_is_refused),
    };
    return cmocka_run_group_tests(tests, clitest_setup, clitest_teardown);
}
