/* test_units.c: bandwidth, duration and flop-rate parsing (values and refusals, each refusal
 * naming the flag), and printing. */
#include "testutil.h"

#include "units.h"

static void test_bandwidths_in_bits_and_bytes(void **state)
{
    (void)state;
    struct {
        const char *text;
        double Bps;
    } ok[] = {{"10Gbps", 1.25e9}, {"100Mbps", 12.5e6}, {"1.5Tbps", 187.5e9}, {"25GBps", 25e9},
              {"300GBps", 300e9}, {"8bps", 1},         {"1e3Kbps", 125e3},   {"2KBps", 2e3}};
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        double v;
        assert_int_equal(units_parse_bandwidth("bandwidth", ok[i].text, &v, NULL), BW_OK);
        assert_float_equal(v, ok[i].Bps, 1e-9 * ok[i].Bps);
    }
    const char *bad[] = {"10",        "10gbps",  "-5Gbps", "0Gbps", "Gbps",
                         "1e999Gbps", "10 Gbps", "10Gbit", "",      "nanGbps"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        double v;
        BwError err;
        if (units_parse_bandwidth("bandwidth", bad[i], &v, &err) != BW_EUSAGE)
            fail_msg("'%s' was accepted", bad[i]);
        assert_non_null(strstr(err.msg, "--bandwidth"));
    }
}

static void test_durations(void **state)
{
    (void)state;
    double v;
    assert_int_equal(units_parse_duration("latency", "5us", &v, NULL), BW_OK);
    assert_float_equal(v, 5e-6, 1e-18);
    assert_int_equal(units_parse_duration("latency", "1.5ms", &v, NULL), BW_OK);
    assert_float_equal(v, 1.5e-3, 1e-15);
    assert_int_equal(units_parse_duration("latency", "0s", &v, NULL), BW_OK);
    assert_float_equal(v, 0, 0);
    assert_int_equal(units_parse_duration("latency", "10ns", &v, NULL), BW_OK);
    assert_float_equal(v, 1e-8, 1e-20);
    const char *bad[] = {"5", "5 us", "-1us", "5min", "us", "1e400s"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        BwError err;
        if (units_parse_duration("latency", bad[i], &v, &err) != BW_EUSAGE)
            fail_msg("'%s' was accepted", bad[i]);
        assert_non_null(strstr(err.msg, "--latency"));
    }
}

static void test_flop_rates(void **state)
{
    (void)state;
    double v;
    assert_int_equal(units_parse_flops("gpu-flops", "15.7T", &v, NULL), BW_OK);
    assert_float_equal(v, 15.7e12, 1e3);
    assert_int_equal(units_parse_flops("gpu-flops", "19.5e12", &v, NULL), BW_OK);
    assert_float_equal(v, 19.5e12, 1e3);
    assert_int_equal(units_parse_flops("gpu-flops", "10Tflops", &v, NULL), BW_OK);
    assert_float_equal(v, 10e12, 1e3);
    BwError err;
    assert_int_equal(units_parse_flops("gpu-flops", "0", &v, &err), BW_EUSAGE);
    assert_int_equal(units_parse_flops("gpu-flops", "10X", &v, &err), BW_EUSAGE);
    assert_non_null(strstr(err.msg, "--gpu-flops"));
}

static void test_printing_round_trips(void **state)
{
    (void)state;
    char buf[32];
    units_format_bandwidth(1.25e9, buf, sizeof buf);
    assert_string_equal(buf, "10Gbps");
    units_format_bandwidth(12.5e6, buf, sizeof buf);
    assert_string_equal(buf, "100Mbps");
    units_format_bandwidth(300e9, buf, sizeof buf);
    assert_string_equal(buf, "2.4Tbps");
    units_format_duration(5e-6, buf, sizeof buf);
    assert_string_equal(buf, "5us");
    units_format_duration(1.5e-3, buf, sizeof buf);
    assert_string_equal(buf, "1.5ms");
    units_format_duration(0, buf, sizeof buf);
    assert_string_equal(buf, "0s");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bandwidths_in_bits_and_bytes),
        cmocka_unit_test(test_durations),
        cmocka_unit_test(test_flop_rates),
        cmocka_unit_test(test_printing_round_trips),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
