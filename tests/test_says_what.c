/* test_says_what.c: every figure says what it is (issue 41). A speedup's interval is on the log
 * of the ratio, never negative; a sweep's "fastest" says when it is not told apart; the GPUs'
 * sustained rate and the links' share are one figure in the platform, the run's header and its
 * summary, which say when the efficiency is assumed; --lr-scale auto's warm-up does not depend
 * on --epochs; a replay keeps the trace's workers and batch, and its plots say whose accuracy
 * they draw; bellows bench prints a workload's throughput and writes nothing; --out's help says
 * what its absence does. Each test runs
 * alone: test_says_what [NAME-PATTERN]. */
#include "testutil.h"

#include "clitest.h"
#include "run_args.h"
#include "runner.h"

#define TINY "--epochs 1 --train-samples 256 --test-samples 100 --quiet " CLITEST_DATA

/* An arithmetic interval of {0.2, 1, 1.3} reaches below 0 (mean 0.83, half-width 1.98): the
 * log-scale one is the geometric mean's, exp(mean +- t sd / sqrt n) of the logs. */
static void test_a_speedup_interval_is_on_the_log_of_the_ratio(void **state)
{
    (void)state;
    const double sp[] = {0.2, 1.0, 1.3};
    double m, lo, hi, am, alo, ahi;
    runner_mean_ci(sp, 3, &am, &alo, &ahi);
    assert_true(alo < 0); /* what the tables printed before */
    runner_speedup_ci(sp, 3, &m, &lo, &hi);
    double l[3], lm = 0, ss = 0;
    for (int i = 0; i < 3; i++) lm += (l[i] = log(sp[i])) / 3;
    for (int i = 0; i < 3; i++) ss += (l[i] - lm) * (l[i] - lm);
    const double half = 4.302652729911275 * sqrt(ss / 2) / sqrt(3);
    assert_true(fabs(m - exp(lm)) < 1e-12);
    assert_true(fabs(lo - exp(lm - half)) < 1e-8 * lo && fabs(hi - exp(lm + half)) < 1e-8 * hi);
    assert_true(lo > 0 && lo < m && m < hi);
    runner_speedup_ci(sp, 1, &m, &lo, &hi); /* one seed: a speedup, no interval */
    assert_true(fabs(m - 0.2) < 1e-12 && isnan(lo) && isnan(hi));
}

/* Three seeds: at 100 Mbps static:level=1 is told apart from sync (14.47x [5.60,37.43]), at
 * 10 Gbps sync is the fastest but not told apart (0.41x~ [0.16,1.07]); one seed tells nothing
 * apart. (At 1 Gbps, 2.51x~ [0.97,6.48] since PowerSGD's hook pays Q's Gram-Schmidt.) */
#define FAST_SWEEP                                                                                 \
    "sweep --epochs 2 --train-samples 1024 --test-samples 200 --batch 32 --quiet --workers 2 "     \
    "--target-accuracy 0.5 --policies sync,static:level=1 --bandwidth 100Mbps,10Gbps --no-plots "  \
    "-j 2 " CLITEST_DATA " "

static void test_the_fastest_row_says_when_it_is_not_told_apart(void **state)
{
    (void)state;
    SKIP_UNDER_VALGRIND(); /* it only starts bellows (clitest.h) */
    assert_int_equal(bw(FAST_SWEEP "--seeds 1,2,3 --out @/sw3"), 0);
    char *out = tmp_file("stdout");
    assert_non_null(strstr(out, "]   0.012x   0.5650  <- fastest\n"));
    assert_non_null(strstr(out, "<- fastest, not told apart from static:level=1\n"));
    free(out);
    assert_int_equal(bw(FAST_SWEEP "--seeds 1 --out @/sw1"), 0);
    out = tmp_file("stdout");
    assert_non_null(strstr(out, "<- fastest, not told apart (too few seeds)"));
    assert_null(strstr(out, "<- fastest\n"));
    free(out);
}

/* `bellows platform` writes what a run loads: V100 fp32 at pytorch-v100's 0.575 of 15.7 TFLOP/s
 * and the NICs at min(95% of 10 Gbps, TCP's cap of 7.5 Gbit/s): 937,500,000 bytes/s, NCCL's
 * default sockets' rate whatever the link; run's header and summary.json say the same. */
static void test_the_platform_and_the_run_give_one_rate_and_share(void **state)
{
    (void)state;
    SKIP_UNDER_VALGRIND(); /* it only starts bellows (clitest.h) */
    assert_int_equal(bw("platform --gpu V100 --workers 2"), 0);
    char *xml = tmp_file("stdout");
    assert_non_null(strstr(xml, "speed=\"9027500000000f\""));
    assert_non_null(strstr(xml, "bandwidth=\"937500000Bps\""));
    assert_non_null(strstr(xml, "0.575 of the V100's fp32 peak, pytorch-v100's efficiency"));
    free(xml);
    assert_int_equal(bw("run --gpu V100 --workers 2 " TINY " --out @/v100"), 0);
    char *out = tmp_file("stdout");
    assert_non_null(strstr(out, "2 x V100 (9.03 TFLOP/s sustained: 0.575 of the V100's fp32 "
                                "peak, pytorch-v100's efficiency)"));
    assert_non_null(strstr(out, "tcp collectives at 7.5 Gbit/s, the transport's cap (75% of the "
                                "link)"));
    free(out);
    assert_true(summary_num("v100", "link_share") == 0.75);
    assert_true(summary_num("v100", "gpu_flops") == 9.0275e12);
    assert_true(summary_num("v100", "gpu_efficiency") == 0.575);
    assert_int_equal(bw("run --help"), 0);
    out = tmp_file("stdout");
    assert_non_null(strstr(out, "the cost profile's efficiency"));
    free(out);
}

/* Where the profile gives no efficiency (the A100's at fp32), the header, summary.json and
 * `bellows costs` say that 0.5 is assumed. */
static void test_an_assumed_efficiency_is_said_to_be_one(void **state)
{
    (void)state;
    assert_int_equal(bw("run --gpu A100 --precision fp32 --workers 2 " TINY " --out @/a100"), 0);
    char *out = tmp_file("stdout"), *sum = tmp_file("a100/summary.json");
    assert_non_null(strstr(out, "0.5 of the A100's fp32 peak: assumed, not calibrated"));
    assert_non_null(strstr(sum, "\"gpu_efficiency_source\": \"assumed, not calibrated\""));
    free(out);
    free(sum);
    assert_int_equal(bw("run --gpu A100 --precision fp32 --gpu-efficiency 0.3 --workers 2 " TINY
                        " --out @/given"),
                     0);
    sum = tmp_file("given/summary.json");
    assert_non_null(strstr(sum, "\"gpu_efficiency_source\": \"--gpu-efficiency\""));
    free(sum);
    assert_int_equal(bw("costs"), 0);
    out = tmp_file("stdout");
    const char *a100 = strstr(out, "pytorch-a100");
    assert_non_null(a100);
    const char *none = strstr(a100, "compute    none for fp32, bf16: runs assume 0.5");
    assert_true(none && none < strstr(a100 + 1, "source     "));
    free(out);
}

/* The warm-up's length in epochs for these flags (run_setup, no data needed). */
static double warmup_of(const char *extra)
{
    char line[512], *argv[32];
    snprintf(line, sizeof line, "--workers 16 %s", extra);
    int argc = 0;
    for (char *w = strtok(line, " "); w && argc < 32; w = strtok(NULL, " ")) argv[argc++] = w;
    Flags *f = malloc(sizeof *f);
    TrainArgs ta;
    RunConfig cfg;
    double slowdown[64];
    BwError err;
    assert_int_equal(run_parse_flags("test", RUN_MODE_RUN, argc, argv, f, &err), BW_OK);
    if (run_setup("test", f, &ta, &cfg, slowdown, &err) != BW_OK) fail_msg("%s", err.msg);
    double w = cfg.tc.lr.warmup_epochs;
    run_flags_release(f);
    free(f);
    return w;
}

/* 16 workers x 64 is twice the tuned batch: a warm-up of 240,000 samples, 4 epochs of the whole
 * set whatever --epochs plans (the rule took a fifth of them: 0.4, 1.2, 4), at most 5 epochs
 * of a slice; nothing without --lr-scale auto. */
static void test_the_auto_warm_up_does_not_depend_on_the_planned_epochs(void **state)
{
    (void)state;
    assert_true(warmup_of("--epochs 2") == 4);
    assert_true(warmup_of("--epochs 6") == 4);
    assert_true(warmup_of("--epochs 20") == 4);
    assert_true(warmup_of("--epochs 6 --train-samples 80000") == 4);
    assert_true(warmup_of("--epochs 6 --train-samples 30000") == 5);
    assert_true(warmup_of("--epochs 6 --lr-scale none") == 0);
    assert_true(warmup_of("--epochs 6 --warmup-epochs 1.5") == 1.5);
}

/* A trace recorded on 4 workers x 32 replays on 4 x 32 unless told; its plots say that the
 * accuracy is the trace's. */
static void test_a_replay_keeps_the_trace_cluster_and_says_whose_accuracy(void **state)
{
    (void)state;
    SKIP_UNDER_VALGRIND(); /* it only starts bellows (clitest.h) */
    assert_int_equal(bw("run --workers 4 --batch 32 --epochs 1 --train-samples 512 "
                        "--test-samples 100 --quiet --record-trace @/t.jsonl.gz"),
                     0);
    assert_int_equal(bw("replay --trace @/t.jsonl.gz --policies sync,static:level=1 --quiet "
                        "--out @/rp"),
                     0);
    char *out = tmp_file("stdout");
    assert_non_null(strstr(out, "recorded on 4 workers"));
    assert_non_null(strstr(out, "batch 32 per worker here (128 global)"));
    free(out);
    assert_true(summary_num("rp/seed-1/1-sync", "workers") == 4);
    char *svg = tmp_file("rp/accuracy_vs_time.svg");
    if (!svg) skip(); /* no gnuplot: no plots */
    assert_non_null(strstr(svg, "[accuracy: the trace's, the same for every policy]"));
    free(svg);
    assert_int_equal(bw("plot @/rp/seed-1/1-sync"), 0); /* one run's plots say it too */
    svg = tmp_file("rp/seed-1/1-sync/accuracy_vs_time.svg");
    assert_non_null(svg);
    assert_non_null(strstr(svg, "[accuracy: the trace's, the same for every policy]"));
    free(svg);
}

/* A cluster job evaluates as compare's runs do (20 times an epoch), and the table gives its
 * resolution beside its tta: 2 epochs of 16 steps, the target crossed within a step. */
static void test_a_cluster_job_evaluates_as_compare_and_prints_its_resolution(void **state)
{
    (void)state;
    SKIP_UNDER_VALGRIND(); /* it only starts bellows (clitest.h) */
    write_tmp("one.json", "{\"jobs\": [{\"name\": \"a\", \"workers\": 2, \"epochs\": 2, "
                          "\"train_samples\": 2048, \"test_samples\": 200, "
                          "\"target_accuracy\": 0.5, \"costs\": \"ideal\"}]}");
    assert_int_equal(bw("cluster @/one.json --out @/c --alone none"), 0);
    char *out = tmp_file("stdout");
    assert_non_null(strstr(out, " tta_s     res "));
    assert_non_null(strstr(out, "res: the simulated time between"));
    free(out);
    const double tta = summary_num("c/jobs/a", "time_to_accuracy_s");
    const double res = summary_num("c/jobs/a", "time_to_accuracy_resolution_s");
    const double sim = summary_num("c/jobs/a", "sim_time_s");
    assert_true(tta > 0 && res > 0 && res <= sim / 32 * (1 + 1e-9)); /* a step, not an epoch */
}

/* Significant digits of the number at s ("0.04063": 4; "2038": 4) */
static int sig_digits(const char *s)
{
    int n = 0, lead = 1;
    for (; (*s >= '0' && *s <= '9') || *s == '.'; s++) {
        if (*s == '.') continue;
        lead &= *s == '0';
        n += !lead;
    }
    return n;
}

/* bench prices 12 steps of ResNet-50 on 2 GPUs and prints samples/s per GPU and in all (twice
 * it), each with 4 significant digits even on a slow GPU (0.1 TFLOP/s: 4.063 samples/s, once
 * printed "4.1"), writing nothing; without a workload it is refused. */
static void test_bench_prints_a_throughput_and_writes_nothing(void **state)
{
    (void)state;
    SKIP_UNDER_VALGRIND(); /* it only starts bellows (clitest.h) */
    char *before = tmp_listing();
    assert_int_equal(bw("bench --workload resnet50 --workers 2 --quiet --gpu-flops 1e11"), 0);
    char *after = tmp_listing(), *out = tmp_file("stdout");
    assert_string_equal(before, after);
    const char *t = strstr(out, "throughput: ");
    assert_non_null(t);
    double per = 0, all = 0;
    assert_int_equal(
        sscanf(t, "throughput: %lf samples/s per GPU, %lf samples/s in all", &per, &all), 2);
    assert_true(per > 0 && fabs(all - 2 * per) < 1e-3 * all);
    assert_true(sig_digits(t + strlen("throughput: ")) >= 4);
    assert_true(sig_digits(strstr(t, "GPU, ") + strlen("GPU, ")) >= 4);
    const char *b = strstr(out, "# bench: 10 steps timed after 2; ");
    assert_non_null(b);
    double step_s = 0;
    long per_step = 0;
    assert_int_equal(sscanf(b, "# bench: 10 steps timed after 2; %lf s a step (rank 0), %ld",
                            &step_s, &per_step),
                     2);
    assert_true(fabs(per - per_step / step_s) <= 1e-3 * per);
    /* sync sends dense gradients: no compressor named (--compressor's default is powersgd) */
    assert_non_null(strstr(out, "# policy sync (dense gradients, no compressor)\n"));
    assert_null(strstr(out, "powersgd"));
    free(before);
    free(after);
    free(out);
    expect_refusal("--workload", "bench --workers 2");
    expect_refusal("--workers x --batch: 32768 samples a step",
                   "bench --workload resnet50 --workers 1024 --batch 32");
}

/* bench prints the peak memory per GPU (issue 50): Llama-2-7B in ZeRO-3 on 8 H100s at one
 * sequence a GPU fits, its state the sum of its parts and its activations the closed form of
 * act_mem.c's estimate, each block's matrices' inputs and outputs, 32 (4 x 2d + 3 (d + ff)) + V +
 * d values a token, at fp32 (the default --precision): 4 bytes x 4096 tokens. In DDP its state
 * alone does not fit: refused, saying by how much, as run refuses it. */
static void test_bench_prints_the_peak_memory(void **state)
{
    (void)state;
    SKIP_UNDER_VALGRIND(); /* it only starts bellows (clitest.h) */
    const char *llama = "bench --workload llama-2-7b --gpu H100 --workers 8 --collectives analytic "
                        "--batch 1 --quiet";
    char args[256];
    snprintf(args, sizeof args, "%s --sharding zero3", llama);
    assert_int_equal(bw(args), 0);
    char *out = tmp_file("stdout");
    const char *m = strstr(out, "memory: ");
    if (!m) fail_msg("no memory line in %s", out);
    double peak, cap, st, p, g, o, u, act;
    assert_int_equal(sscanf(m,
                            "memory: %lf GB per GPU at peak of the H100's %lf GB with --sharding "
                            "zero3: training state %lf (parameters %lf, gradients %lf, optimizer "
                            "%lf, gathered units %lf) + activations %lf",
                            &peak, &cap, &st, &p, &g, &o, &u, &act),
                     8);
    const double d = 4096, ff = 11008, V = 32000;
    const double want_act = (32 * (8 * d + 3 * (d + ff)) + V + d) * 4096 * 4 / 1e9;
    assert_true(cap == 80 && peak < cap);
    assert_true(fabs(st - (p + g + o + u)) < 0.02 && fabs(peak - (st + act)) < 0.02);
    if (fabs(act - want_act) > 0.006)
        fail_msg("activations %.2f GB, closed form %.3f", act, want_act);
    free(out);
    expect_refusal("over the H100's 80 GB by 0.9 GB", llama);
}

/* --out's help says what its absence does, not "none: print only", which read as a value: --out
 * none is a folder named none, as any path. run and bench print only without it, a sweep
 * refuses to run without it, compare writes into runs/compare. */
static void test_out_says_what_its_absence_does(void **state)
{
    (void)state;
    static const char *const cmd[] = {"run", "bench", "train", "sweep"};
    for (int k = 0; k < 4; k++) {
        assert_int_equal(bw("%s --help", cmd[k]), 0);
        char *out = tmp_file("stdout");
        assert_null(strstr(out, "none: print only"));
        const char *says = k < 3 ? "without it nothing is written, the results are printed only"
                                 : "new or empty (required: a sweep writes its runs there)";
        if (!strstr(out, says))
            fail_msg("bellows %s --help: --out does not say '%s'", cmd[k], says);
        free(out);
    }
    expect_refusal("--out: a sweep needs an output folder", "sweep --bandwidth 1Gbps,10Gbps");
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_speedup_interval_is_on_the_log_of_the_ratio),
        cmocka_unit_test(test_the_fastest_row_says_when_it_is_not_told_apart),
        cmocka_unit_test(test_the_platform_and_the_run_give_one_rate_and_share),
        cmocka_unit_test(test_an_assumed_efficiency_is_said_to_be_one),
        cmocka_unit_test(test_the_auto_warm_up_does_not_depend_on_the_planned_epochs),
        cmocka_unit_test(test_a_replay_keeps_the_trace_cluster_and_says_whose_accuracy),
        cmocka_unit_test(test_a_cluster_job_evaluates_as_compare_and_prints_its_resolution),
        cmocka_unit_test(test_bench_prints_a_throughput_and_writes_nothing),
        cmocka_unit_test(test_bench_prints_the_peak_memory),
        cmocka_unit_test(test_out_says_what_its_absence_does),
    };
    if (argc > 1) cmocka_set_test_filter(argv[1]);
    return cmocka_run_group_tests(tests, clitest_setup_data, clitest_teardown);
}
