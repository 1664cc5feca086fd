/* test_figures.c: the figures a table prints are the ones its runs measured, labelled with what
 * they are: compare.csv's books add up (compression included), bytes compare like with like
 * under --stop-at-target, every time to accuracy says its resolution, a replay refuses what it
 * would ignore, and a network model the collectives would not use is refused. Short runs
 * (2,048 samples, one epoch, two workers, analytic collectives): a few seconds in all. */
#include "testutil.h"

#include "clitest.h"

#define SMALL                                                                                      \
    "--train-samples 2048 --test-samples 300 --epochs 1 --workers 2 --batch 16 --quiet "           \
    "--collectives analytic " CLITEST_DATA

/* compare.csv's compression_s is the mean over the seeds like its other books, and compute +
 * compression + communication + waiting is the simulated time, row by row. */
static void test_compare_csv_books_add_up_with_compression(void **state)
{
    (void)state;
    assert_int_equal(bw("compare " SMALL
                        " --workload resnet18-cifar --policies sync,static:level=1 "
                        "--seeds 1,2 --out @/books"),
                     0);
    char *csv = tmp_file("books/compare.csv");
    assert_non_null(csv);
    const char *rows[] = {"\"sync\"", "\"static:level=1\""};
    for (int k = 0; k < 2; k++) {
        double sim = csv_num_at(csv, rows[k], 9), compute = csv_num_at(csv, rows[k], 10),
               compress = csv_num_at(csv, rows[k], 11), comm = csv_num_at(csv, rows[k], 12),
               wait = csv_num_at(csv, rows[k], 13);
        if (fabs(compute + compress + comm + wait - sim) > 1e-6 * sim)
            fail_msg("%s: %.9g + %.9g + %.9g + %.9g != %.9g", rows[k], compute, compress, comm,
                     wait, sim);
        /* the mean of the seeds' own figures */
        char dir[64];
        double mean = 0;
        for (int seed = 1; seed <= 2; seed++) {
            snprintf(dir, sizeof dir, "books/seed-%d/%d-%s", seed, k + 1,
                     k ? "static-level-1" : "sync");
            mean += summary_num(dir, "compression_s") / 2;
        }
        assert_true(fabs(compress - mean) <= 1e-8 * mean);
        if (k == 1) assert_true(compress > 0); /* PowerSGD's encode and decode are charged */
    }
    free(csv);
}

/* The books of a run without a workload (compute, compression, communication, waiting: means
 * over the workers) add up to its simulated time, also where the workers end at different
 * times: a platform whose hosts and routes differ, under every allreduce algorithm, and
 * stragglers with jitter on a generated one. */
static void test_uncosted_books_add_up_to_the_simulated_time(void **state)
{
    (void)state;
    write_tmp("uneven.xml",
              "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM "
              "\"https://simgrid.org/simgrid.dtd\">\n<platform version=\"4.1\">\n<zone id=\"z\" "
              "routing=\"Full\"><host id=\"a\" speed=\"1Tf\"/><host id=\"b\" speed=\"2Tf\"/>"
              "<host id=\"c\" speed=\"1Tf\"/><host id=\"d\" speed=\"4Tf\"/><link id=\"l1\" "
              "bandwidth=\"1GBps\" latency=\"10us\"/><link id=\"l2\" bandwidth=\"100MBps\" "
              "latency=\"50us\"/><link id=\"l3\" bandwidth=\"500MBps\" latency=\"20us\"/>"
              "<route src=\"a\" dst=\"b\"><link_ctn id=\"l1\"/></route><route src=\"a\" "
              "dst=\"c\"><link_ctn id=\"l2\"/></route><route src=\"a\" dst=\"d\"><link_ctn "
              "id=\"l3\"/></route><route src=\"b\" dst=\"c\"><link_ctn id=\"l2\"/></route>"
              "<route src=\"b\" dst=\"d\"><link_ctn id=\"l1\"/></route><route src=\"c\" "
              "dst=\"d\"><link_ctn id=\"l3\"/></route></zone></platform>\n");
    const char *runs[] = {
        "--platform @/uneven.xml --allreduce ring",
        "--platform @/uneven.xml --allreduce tree",
        "--platform @/uneven.xml --allreduce halving-doubling",
        "--workers 4 --allreduce tree --compute-jitter 0.3 --slowdown 1,3",
    };
    for (int k = 0; k < 4; k++) {
        assert_int_equal(bw("run --train-samples 512 --test-samples 64 --batch 8 --epochs 1 "
                            "--quiet %s --out @/b%d",
                            runs[k], k),
                         0);
        char dir[16];
        snprintf(dir, sizeof dir, "b%d", k);
        double sim = summary_num(dir, "sim_time_s");
        double books = summary_num(dir, "compute_s") + summary_num(dir, "compression_s") +
                       summary_num(dir, "communication_s") + summary_num(dir, "wait_s");
        if (fabs(books - sim) > 1e-9 * sim)
            fail_msg("%s: books %.12g, simulated time %.12g", runs[k], books, sim);
    }
}

/* With --stop-at-target a run that reached the target stopped there: a policy that never
 * reached it ran whole, and its bytes do not compare with the baseline's bytes to the target. */
static void test_stop_at_target_compares_bytes_to_the_target_only(void **state)
{
    (void)state;
    assert_int_equal(bw("compare " SMALL
                        " --no-plots --compressor topk --policies sync,static:level=0.001 "
                        "--seeds 1,2 --stop-at-target --target-accuracy 0.7 --out @/stop"),
                     0);
    char *csv = tmp_file("stop/compare.csv"), *out = tmp_file("stdout");
    assert_true(isfinite(csv_num_at(csv, "\"sync\"", 5)));            /* reached, stopped */
    assert_true(isnan(csv_num_at(csv, "\"static:level=0.001\"", 5))); /* never reached */
    assert_true(isnan(csv_num_at(csv, "\"static:level=0.001\"", 8))); /* so no bytes ratio */
    assert_non_null(strstr(out, "up to the target (--stop-at-target"));
    free(csv);
    free(out);
    /* without --stop-at-target both ran whole: the ratio is there */
    assert_int_equal(bw("compare " SMALL
                        " --no-plots --compressor topk --policies sync,static:level=0.001 "
                        "--seed 1 --target-accuracy 0.7 --out @/whole"),
                     0);
    csv = tmp_file("whole/compare.csv");
    assert_true(csv_num_at(csv, "\"static:level=0.001\"", 8) > 0);
    free(csv);
}

/* run prints its time to accuracy with the resolution and the evaluations that set it;
 * summary.json has it; a run that records a trace evaluates twenty times an epoch, all along
 * (its replays may ask for any target), unless --eval-every says otherwise. */
static void test_a_time_to_accuracy_says_its_resolution(void **state)
{
    (void)state;
    assert_int_equal(bw("run " SMALL " --target-accuracy 0.6 --out @/r"), 0);
    char *out = tmp_file("stdout");
    assert_non_null(strstr(out, "2048 train / 300 test), 1 epoch, batch")); /* not "1 epochs" */
    assert_non_null(strstr(out, "over 64 steps, 1 epoch\n"));
    assert_non_null(strstr(out, "crossed in its last"));
    assert_non_null(strstr(out, "evaluation at the end of every epoch (64 steps)"));
    assert_non_null(strstr(out, "a smaller --eval-every sharpens it"));
    free(out);
    double tta = summary_num("r", "time_to_accuracy_s");
    assert_true(fabs(summary_num("r", "time_to_accuracy_resolution_s") - tta) < 1e-12);
    assert_int_equal(bw("run " SMALL " --target-accuracy 0.6 --record-trace @/t.jsonl"), 0);
    char *trace = tmp_file("t.jsonl");
    int evals = 0;
    for (const char *p = trace; (p = strstr(p, "\"type\":\"eval\"")); p++) evals++;
    assert_int_equal(evals, 1 + 64 / 3 + 1); /* untrained, every 3 steps of 64, the epoch end */
    free(trace);
    out = tmp_file("stdout");
    assert_non_null(strstr(out, "evaluation every 3 steps"));
    free(out);
}

/* A replay takes its evaluations from the trace: it refuses --eval-every (and the threads
 * that would compute gradients), says the trace sets the resolution, and refuses a trace
 * without evaluations rather than printing nan accuracies. */
static void test_a_replay_refuses_what_it_would_ignore(void **state)
{
    (void)state;
    assert_int_equal(bw("run " SMALL " --record-trace @/t.jsonl.gz --out @/live"), 0);
    expect_refusal("--eval-every: a replay computes no gradients",
                   "replay --trace @/t.jsonl.gz --eval-every 2 --out @/x");
    expect_refusal("--compute-threads",
                   "replay --trace @/t.jsonl.gz --compute-threads 2 --out @/x");
    char cmd[512];
    snprintf(cmd, sizeof cmd, "zcat %s/t.jsonl.gz | grep -v '\"type\":\"eval\"' >%s/noeval.jsonl",
             TMP, TMP);
    assert_int_equal(system(cmd), 0);
    expect_refusal("noeval.jsonl: holds no evaluation records",
                   "replay --trace @/noeval.jsonl --out @/x");
    assert_int_equal(bw("replay --trace @/t.jsonl.gz --policies sync,static --target-accuracy 0.75 "
                        "--no-plots --out @/rep"),
                     0);
    char *out = tmp_file("stdout");
    assert_non_null(strstr(out, "evaluation by the trace: 23 evaluations, at most 3 steps apart"));
    free(out);
    char *sum = tmp_file("rep/seed-1/1-sync/summary.json");
    assert_non_null(strstr(sum, "\"command\": \"replay\""));
    free(sum);
}

/* The analytic collectives price every message by its closed form: SimGrid's TCP model would
 * change nothing, so the pair is refused rather than labelled tcp. */
static void test_tcp_with_analytic_collectives_is_refused(void **state)
{
    (void)state;
    expect_refusal("--network-model tcp with --collectives analytic: the analytic collectives",
                   "run --network-model tcp --collectives analytic --out @/x");
    expect_refusal("--network-model tcp",
                   "sweep --network-model exact,tcp --collectives analytic "
                   "--train-samples 256 --test-samples 64 --batch 8 --out @/x");
}

/* The plots say what they show: a sweep point's curves name the point, the zoomed accuracy
 * panel zooms time too, cumulative bytes are on a log scale (a compressed policy's are not a
 * flat line at 0); a policy spec wider than the table's column gets a line of its own. */
static void test_plots_and_tables_say_what_they_show(void **state)
{
    (void)state;
    if (system("gnuplot --version >/dev/null 2>&1") != 0) skip();
    assert_int_equal(bw("sweep " SMALL " --bandwidth 1Gbps,10Gbps --policies "
                        "sync,accordion:interval=1,eta=0.5,critical=2,normal=1 --seed 1 "
                        "--target-accuracy 0.6 -j 2 --out @/sw"),
                     0);
    char *out = tmp_file("stdout");
    /* the long spec on its own line, its figures below it under the columns */
    assert_non_null(strstr(out, " accordion:interval=1,eta=0.5,critical=2,normal=1\n   "));
    free(out);
    char *acc = tmp_file("sw/runs/bandwidth-1Gbps/seed-1/accuracy_vs_time.svg");
    char *bytes = tmp_file("sw/runs/bandwidth-1Gbps/seed-1/bytes_vs_time.svg");
    assert_non_null(acc);
    assert_non_null(bytes);
    assert_non_null(strstr(acc, "(bandwidth=1Gbps, seed 1)"));
    assert_non_null(strstr(acc, "zoomed: accuracy 0.50 to"));
    assert_non_null(strstr(acc, " s to ")); /* the time axis zoomed too */
    assert_non_null(strstr(bytes, "log scale"));
    free(acc);
    free(bytes);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_compare_csv_books_add_up_with_compression),
        cmocka_unit_test(test_uncosted_books_add_up_to_the_simulated_time),
        cmocka_unit_test(test_stop_at_target_compares_bytes_to_the_target_only),
        cmocka_unit_test(test_a_time_to_accuracy_says_its_resolution),
        cmocka_unit_test(test_a_replay_refuses_what_it_would_ignore),
        cmocka_unit_test(test_tcp_with_analytic_collectives_is_refused),
        cmocka_unit_test(test_plots_and_tables_say_what_they_show),
    };
    return cmocka_run_group_tests(tests, clitest_setup_data, clitest_teardown);
}
