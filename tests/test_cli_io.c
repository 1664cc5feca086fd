/* test_cli_io.c: inputs are never outputs (sim/cli/io_check.h), across the commands: an output
 * that is the same file as an input (by inode: a hard link, a path through "..") is refused,
 * and so is an input inside --out, --force or not, by run, compare, replay, sweep, reproduce
 * and cluster; every text flag is classed as a file read, written or none. And compare and
 * replay read a comma inside one value (a plug-in spec's options, a host list) as sweep does:
 * one scenario, not a list. */
#include "testutil.h"

#include <sys/stat.h>

#include "clitest.h"
#include "flag_class.h"
#include "run_args.h"

#define TINY                                                                                       \
    "--train-samples 256 --test-samples 64 --batch 8 --epochs 1 --workers 2 --quiet "              \
    "--collectives analytic"

static void sh(const char *fmt)
{
    char cmd[1024];
    clitest_expand_text(cmd, sizeof cmd, fmt);
    if (system(cmd) != 0) fail_msg("'%s' failed", cmd);
}

/* A new text flag must say whether it names a file read or written (flag_class.c). */
static void test_every_text_flag_is_classed(void **state)
{
    (void)state;
    const RunMode modes[] = {RUN_MODE_RUN, RUN_MODE_COMPARE, RUN_MODE_SWEEP};
    for (int m = 0; m < 3; m++) {
        Flags *f = calloc(1, sizeof *f);
        BwError err;
        assert_int_equal(run_parse_flags("bellows test", modes[m], 0, NULL, f, &err), BW_OK);
        for (int i = 0; i < f->n; i++)
            if (f->opts[i].kind == CLI_STRING && flag_file(f->opts[i].name) == FLAG_FILE_UNCLASSED)
                fail_msg("--%s: a text flag with no file class (flag_class.c's FILES)",
                         f->opts[i].name);
        run_flags_release(f);
        free(f);
    }
    assert_int_equal(flag_file("costs"), FLAG_FILE_IN_NAMED);
    assert_int_equal(flag_file("timeline"), FLAG_FILE_OUT);
}

/* An output over an input: a profile, a Python policy, a schedule plug-in, through a hard link
 * and through "..". */
static void test_an_output_is_never_an_input(void **state)
{
    (void)state;
    sh("cd @ && echo '{}' >p.json && ln p.json q.json && touch x.py s.so && mkdir d");
    expect_refusal("--timeline @/p.json: is the same file as --costs's @/p.json",
                   "run " TINY " --costs @/p.json --timeline @/p.json");
    expect_refusal("--timeline @/q.json: is the same file as --costs's @/p.json",
                   "run " TINY " --costs @/p.json --timeline @/q.json");
    expect_refusal("--record-trace @/d/../x.py: is the same file as --policy's @/x.py",
                   "run " TINY " --policy @/x.py --record-trace @/d/../x.py");
    expect_refusal("--timeline @/s.so: is the same file as --schedule's @/s.so",
                   "run " TINY " --schedule @/s.so:credit=2 --timeline @/s.so");
    expect_refusal("--record-trace @/q.json: is the same file as --workload's @/p.json",
                   "run " TINY " --workload @/p.json --record-trace @/q.json");
}

/* An input inside --out, where the command writes, is refused by every command that has one. */
static void test_an_input_inside_out_is_refused_everywhere(void **state)
{
    (void)state;
    sh("cd @ && mkdir o && echo '{}' >o/summary.json && touch o/s.so o/t.jsonl.gz o/x.json");
    write_tmp("o/cluster.json", "{\"jobs\": [{\"name\": \"a\"}]}");
    char text[256];
    snprintf(text, sizeof text, "{\"jobs\": [{\"name\": \"a\", \"costs\": \"%s/o/x.json\"}]}", TMP);
    write_tmp("c.json", text);
    write_tmp("ok.json", "{\"jobs\": [{\"name\": \"a\", \"workers\": 2}]}");
    const char *inside = "lies inside --out @/o, where bellows writes";
    char needle[512];
    const struct {
        const char *what, *args;
    } cases[] = {
        {"--costs @/o/summary.json: ", "run " TINY " --costs @/o/summary.json --out @/o --force"},
        {"--policies @/o/s.so: ", "compare " TINY " --policies sync,@/o/s.so --out @/o --force"},
        {"--trace @/o/t.jsonl.gz: ", "replay --trace @/o/t.jsonl.gz --out @/o --force"},
        {"--workload @/o/x.json: ", "sweep " TINY " --bandwidth 1Gbps,2Gbps --workload "
                                    "resnet18-cifar,@/o/x.json --out @/o --force"},
        {"--costs @/o/x.json: ", "sweep " TINY " --bandwidth 1Gbps,2Gbps --costs @/o/x.json "
                                 "--out @/o --resume"},
        {"--costs @/o/x.json: ", "reproduce accordion --smoke --costs @/o/x.json --out @/o"},
        {"cluster file @/o/cluster.json: ", "cluster @/o/cluster.json --out @/o --force"},
        {"c.json: job \"a\": key \"costs\" @/o/x.json: ", "cluster @/c.json --out @/o --force"},
        {"ok.json: job \"a\": key \"policy\" @/o/s.so: ",
         "cluster @/ok.json --out @/o --force --timeline --set a.policy=sync,@/o/s.so"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        snprintf(needle, sizeof needle, "%s%s", cases[i].what, inside);
        expect_refusal(needle, "%s", cases[i].args);
    }
}

/* compare and replay take one scenario; a comma inside one value is not a list of them. */
static void test_a_comma_inside_one_value_is_not_a_list(void **state)
{
    (void)state;
    char cmd[256];
    snprintf(cmd, sizeof cmd, "%s platform --workers 2 >%s/p.xml", BELLOWS_BIN, TMP);
    assert_int_equal(system(cmd), 0);
    const char *one = "--policies sync --seed 1 --no-plots --workload resnet18-cifar "
                      "--schedule bytescheduler:partition=1048576,credit=2";
    if (bw("compare " TINY " %s --out @/c1", one) != 0) fail_msg("%s", tmp_file("stderr"));
    if (bw("compare " TINY " --policies sync --seed 1 --no-plots --platform @/p.xml --hosts "
           "gpu1,gpu0 --out @/c2") != 0)
        fail_msg("%s", tmp_file("stderr"));
    assert_int_equal(bw("run " TINY " --record-trace @/t.jsonl.gz"), 0);
    if (bw("replay --trace @/t.jsonl.gz %s --out @/r1", one) != 0)
        fail_msg("%s", tmp_file("stderr"));
    expect_refusal("--schedule fifo,p3: compare runs one scenario",
                   "compare " TINY " --schedule fifo,p3 --out @/c3");
    expect_refusal("--bandwidth 1Gbps,10Gbps: replay runs one scenario",
                   "replay --trace @/t.jsonl.gz --bandwidth 1Gbps,10Gbps --out @/r2");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, clitest_setup, clitest_teardown)
        T(test_every_text_flag_is_classed),
        T(test_an_output_is_never_an_input),
        T(test_an_input_inside_out_is_refused_everywhere),
        T(test_a_comma_inside_one_value_is_not_a_list),
#undef T
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
