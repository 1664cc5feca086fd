/* test_notes.c: what the simulating commands say about their flags and scenario. A flag given
 * where it does nothing gets a note on stderr (or a refusal where it can only be a mistake); the
 * hierarchical header states the intra-node links; compare gives each POLICY@COMPRESSOR its own
 * compressor; each command's --help lists only the flags it takes. Short runs (512 samples, one
 * epoch): a few seconds in all. */
#include "testutil.h"

#include "clitest.h"

#define RUN                                                                                        \
    "run --train-samples 512 --test-samples 64 --batch 8 --epochs 1 --quiet " CLITEST_DATA " "
#define CMP                                                                                        \
    "compare --train-samples 512 --test-samples 64 --batch 8 --epochs 1 --quiet --seeds 1 "        \
    "--no-plots --collectives analytic " CLITEST_DATA " "

/* A literal '@' in a command line (bw() turns '@' into the scratch folder) */
#define AT "$(printf '\\100')"

/* stderr of the last bw() holds needle (or, with want 0, does not). */
static void stderr_has(const char *needle, int want)
{
    char *err = tmp_file("stderr");
    assert_non_null(err);
    if (want != (strstr(err, needle) != NULL))
        fail_msg("stderr %s '%s': %s", want ? "lacks" : "holds", needle, err);
    free(err);
}

static void stdout_has(const char *needle)
{
    char *out = tmp_file("stdout");
    assert_non_null(out);
    if (!strstr(out, needle)) fail_msg("stdout lacks '%s': %s", needle, out);
    free(out);
}

/* Each flag of flag_effect.c's table, given where it does nothing, is noted; where it acts, not. */
static void test_flags_without_effect_are_noted(void **state)
{
    (void)state;
    assert_int_equal(bw(RUN "--bucket-mb 50"), 0);
    stderr_has("note: --bucket-mb has no effect here", 1);
    assert_int_equal(bw(RUN "--bucket-mb 50 --overlap ddp"), 0);
    stderr_has("--bucket-mb", 0);
    assert_int_equal(bw(RUN "--bucket-mb 50 --overlap ddp --allreduce ps --workers 2"), 0);
    stderr_has("note: --bucket-mb has no effect here: on parameter servers", 1);
    assert_int_equal(bw(RUN "--costs ideal --transport rdma"), 0);
    stderr_has("note: --transport has no effect here", 1);
    assert_int_equal(bw(RUN "--transport rdma"), 0);
    stderr_has("--transport", 0);
    assert_int_equal(bw(RUN "--compressor topk --policy sync"), 0);
    stderr_has("note: --compressor has no effect here", 1);
    stdout_has("# policy sync (dense gradients, no compressor)\n"); /* not "compressor topk" */
    assert_int_equal(bw(RUN "--compressor topk --policy static:level=0.1"), 0);
    stderr_has("--compressor", 0);
    /* a compare: --compressor counts if one policy uses it */
    assert_int_equal(
        bw(CMP "--compressor topk --policies sync,static:level=2" AT "powersgd --out @/c1"), 0);
    stderr_has("note: --compressor has no effect here", 1);
    assert_int_equal(bw(CMP "--compressor topk --policies sync,static:level=0.1 --out @/c2"), 0);
    stderr_has("--compressor", 0);
    /* a measured profile with a GPU given by its rate runs (it was refused), and says how */
    assert_int_equal(bw(RUN "--gpu-flops 1e13 --costs pytorch-v100 --out @/g"), 0);
    stderr_has("note: --costs pytorch-v100: compute at --gpu-flops", 1);
    expect_refusal("add --gpu V100", RUN "--gpu A100 --costs pytorch-v100 --out @/g2");
    stderr_has("--no-plots", 0); /* compare draws plots: --no-plots acts */
    /* run takes compare's --no-plots (one flag list for both), and says it draws none anyway */
    assert_int_equal(bw(RUN "--no-plots"), 0);
    stderr_has("note: --no-plots has no effect here: a single run draws no plots", 1);
    /* only a mistake: refused, nothing written */
    expect_refusal("--timeline-steps: has no effect alone", RUN "--timeline-steps 0:3 --out @/r");
}

/* The hierarchical topology's header gives the intra-node links and the share of their rate the
 * cost profile gives NVLink. */
static void test_hierarchical_header_states_the_intra_node_links(void **state)
{
    (void)state;
    const char *base = RUN "--topology hierarchical --gpus-per-node 4 --workers 8 --allreduce "
                           "hierarchical --intra-bandwidth 100GBps --intra-latency 2us";
    assert_int_equal(bw("%s", base), 0);
    stdout_has("# intra-node: 800Gbps / 2us per GPU (--intra-bandwidth, --intra-latency), at 77% "
               "of its rate (the nvlink share of costs pytorch-a100)");
    assert_int_equal(bw("%s --costs ideal", base), 0);
    stdout_has("at 100% of its rate (costs ideal)");
    assert_int_equal(bw(RUN), 0); /* a star has no intra-node links */
    char *out = tmp_file("stdout");
    assert_null(strstr(out, "intra-node"));
    free(out);
}

/* compare --policies A@powersgd,B@topk: each run uses its own compressor, the labels keep the
 * spec as given, and the header says so. */
static void test_compare_takes_a_compressor_per_policy(void **state)
{
    (void)state;
    assert_int_equal(bw(CMP "--policies static:level=2" AT "powersgd,static:level=0.01" AT
                            "topk,sync "
                            "--compressor topk --out @/pc"),
                     0);
    stdout_has("# compressor: each POLICY@COMPRESSOR its own, the others topk;");
    stdout_has("static:level=0.01@topk");
    const char *dirs[] = {"pc/seed-1/1-static-level-2-powersgd",
                          "pc/seed-1/2-static-level-0.01-topk", "pc/seed-1/3-sync"};
    /* sync sends dense gradients: its summary names no compressor, whatever --compressor */
    const char *want[] = {"\"compressor\": \"powersgd\"", "\"compressor\": \"topk\"",
                          "\"compressor\": \"none\""};
    for (int k = 0; k < 3; k++) {
        char name[128];
        snprintf(name, sizeof name, "%s/summary.json", dirs[k]);
        char *sum = tmp_file(name);
        assert_non_null(sum);
        if (!strstr(sum, want[k])) fail_msg("%s lacks %s", name, want[k]);
        free(sum);
    }
    char *csv = tmp_file("pc/compare.csv");
    assert_non_null(strstr(csv, "\"static:level=2@powersgd\",seed-1/1-static-level-2-powersgd,"));
    free(csv);
    expect_refusal("expected POLICY or POLICY", CMP "--policies sync,static" AT " --out @/x");
    expect_refusal("is compare's and replay's", "sweep --policies sync,static" AT "topk "
                                                "--bandwidth 1Gbps,10Gbps --out @/x");
    assert_int_equal(bw("compare --help"), 0);
    stdout_has("POLICY@COMPRESSOR");
}

/* replay --help lists only what replay takes (not the model, data, optimiser and evaluation
 * flags it refuses), and its refusal names the learning-rate schedule, not --schedule (the
 * communication schedule, which a replay takes). */
static void test_replay_help_lists_only_its_own_flags(void **state)
{
    (void)state;
    assert_int_equal(bw("replay --help"), 0);
    char *help = tmp_file("stdout");
    assert_non_null(help);
    const char *refused[] = {"--model ", "--epochs ",     "--data-dir ",
                             "--lr ",    "--eval-every ", "--compute-threads "};
    for (size_t k = 0; k < sizeof refused / sizeof *refused; k++)
        if (strstr(help, refused[k])) fail_msg("replay --help lists %s", refused[k]);
    const char *taken[] = {"--trace ", "--policies ", "--seed ", "--schedule ", "--bandwidth "};
    for (size_t k = 0; k < sizeof taken / sizeof *taken; k++)
        if (!strstr(help, taken[k])) fail_msg("replay --help lacks %s", taken[k]);
    free(help);
    assert_int_equal(bw("compare --help"), 0); /* compare trains: it lists them */
    stdout_has("--epochs ");
    assert_int_equal(bw(RUN "--workers 2 --record-trace @/t.jsonl.gz"), 0);
    expect_refusal("the learning-rate schedule from --trace",
                   "replay --trace @/t.jsonl.gz --policies sync --lr-schedule cosine --out @/rp");
    expect_refusal("--epochs: a replay takes", "replay --trace @/t.jsonl.gz --epochs 2 --out @/rp");
}

/* bellows cluster --set takes its keys as one argument or as several: "--set a=1,2 b=x,y". */
static void test_cluster_set_takes_several_arguments(void **state)
{
    (void)state;
    write_tmp("one.json", "{\"jobs\": [{\"name\": \"a\", \"workers\": 2, \"epochs\": 1, "
                          "\"train_samples\": 512, \"test_samples\": 64, \"batch\": 8}]}");
    assert_int_equal(bw("cluster @/one.json --out @/cs --alone none --set a.policy=sync "
                        "a.seed=1,2"),
                     0);
    char *csv = tmp_file("cs/sweep.csv");
    assert_non_null(csv);
    assert_int_equal(count_lines(csv), 3); /* the header and two points */
    free(csv);
    expect_refusal("unknown key \"polcy\"",
                   "cluster @/one.json --out @/cx --set a.policy=sync a.polcy=x");
    expect_refusal("unexpected argument 'x=1'", "cluster @/one.json --set a.seed=1 --out @/cx x=1");
    expect_refusal("--timeline-steps: has no effect alone",
                   "cluster @/one.json --timeline-steps 0:3 --out @/cx");
}

/* A periodic run that never averaged (DiLoCo's H = 500 on 32 steps) is no DiLoCo result: compare
 * marks its row and says why under the table and on stderr; summary.json names it; the row
 * that did average says nothing (issue 49 item 17). */
static void test_compare_marks_a_run_that_never_exchanged(void **state)
{
    (void)state;
    assert_int_equal(bw(CMP "--workers 2 --policies diloco:H=4,diloco:H=500 --out @/ne"), 0);
    stdout_has("NEVER EXCHANGED: diloco:H=500 (seed 1): the policy diloco:H=500 never averaged in "
               "the run's 32 steps");
    stderr_has("bellows: warning: diloco:H=500 (seed 1): the policy diloco:H=500 never averaged",
               1);
    char *summary = tmp_file("ne/seed-1/2-diloco-H-500/summary.json");
    assert_non_null(summary);
    assert_non_null(strstr(summary, "\"never_exchanged\": \"the policy diloco:H=500 never"));
    free(summary);
    summary = tmp_file("ne/seed-1/1-diloco-H-4/summary.json");
    assert_non_null(summary);
    assert_null(strstr(summary, "never_exchanged"));
    free(summary);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_flags_without_effect_are_noted),
        cmocka_unit_test(test_hierarchical_header_states_the_intra_node_links),
        cmocka_unit_test(test_compare_takes_a_compressor_per_policy),
        cmocka_unit_test(test_compare_marks_a_run_that_never_exchanged),
        cmocka_unit_test(test_replay_help_lists_only_its_own_flags),
        cmocka_unit_test(test_cluster_set_takes_several_arguments),
    };
    return cmocka_run_group_tests(tests, clitest_setup_data, clitest_teardown);
}
