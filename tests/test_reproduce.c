/* test_reproduce.c: `bellows reproduce` end to end, at its --smoke size (the real Fashion-MNIST,
 * 2,048 samples, 2 epochs, one seed). The report's tables agree with the sweeps they summarise;
 * the simulated step splits into compute and communication in the proportion the paper's setting
 * implies (the fidelity rule); the report is rebuilt byte for byte from the sweeps; an existing
 * reproduction is refused without --resume and finished with it; bad invocations exit 2. */
#include "testutil.h"

#include <sys/wait.h>
#include <unistd.h>

static char TMP[64];
static char OUT[128];

static int sh(const char *fmt, ...)
{
    char cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The value of column `col` in the first row of the CSV text whose fields start with `key`
 * (a prefix of the line). */
static double csv_value(const char *text, const char *key, const char *col)
{
    const char *nl = strchr(text, '\n');
    assert_non_null(nl);
    int idx = -1, k = 0;
    for (const char *p = text; p < nl; k++) {
        size_t len = strcspn(p, ",\n");
        if (strlen(col) == len && strncmp(p, col, len) == 0) idx = k;
        p += len + (p[len] == ',');
        if (p[-1] == '\n') break;
    }
    if (idx < 0) fail_msg("no column %s", col);
    for (const char *line = nl + 1; *line; line = strchr(line, '\n') + 1) {
        if (strncmp(line, key, strlen(key)) == 0) {
            const char *p = line;
            for (int i = 0; i < idx; i++) p = strchr(p, ',') + 1;
            return strtod(p, NULL);
        }
        if (!strchr(line, '\n')) break;
    }
    fail_msg("no row %s", key);
    return NAN;
}

static int setup(void **state)
{
    (void)state;
    make_tmpdir(TMP, sizeof TMP);
    snprintf(OUT, sizeof OUT, "%s/rep", TMP);
    int rc = sh(BELLOWS_BIN " reproduce all --smoke --seeds 1 -j 2 --no-plots --out %s "
                            ">%s/log 2>&1",
                OUT, TMP);
    if (rc != 0) {
        char cmd[256];
        snprintf(cmd, sizeof cmd, "tail -20 %s/log", TMP);
        (void)system(cmd);
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    rm_tree(TMP);
    return 0;
}

static char *read_out(const char *name)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", OUT, name);
    char *s = slurp(path, NULL);
    if (!s) fail_msg("%s missing", path);
    return s;
}

static void test_tables_summarise_the_sweeps(void **state)
{
    (void)state;
    char *acc = read_out("accordion.csv"), *adp = read_out("adpsgd.csv");
    char *report = read_out("report.md");
    /* smoke: the mlp settings only; 3 roles x 2 bandwidths each; ADPSGD 6 policies x 2 */
    assert_int_equal(count_lines(acc), 1 + 3 * 3 * 2);
    assert_int_equal(count_lines(adp), 1 + 6 * 2);
    assert_non_null(strstr(report, "## Accordion"));
    assert_non_null(strstr(report, "## ADPSGD"));
    assert_non_null(strstr(report, "bellows sweep --model=mlp"));
    assert_null(strstr(report, "nan steps")); /* a baseline that never reached the target */
    /* one seed: the table's mean is that run's figure in the sweep */
    char *sw = read_out("sweeps/mlp-powersgd/sweep.csv");
    double from_sweep = csv_value(sw, "1Gbps,1,static:level=1,", "final_test_accuracy");
    double from_table = csv_value(acc, "mlp-powersgd,high compression,static:level=1,1Gbps,",
                                  "final_accuracy_mean");
    assert_true(fabs(from_sweep - from_table) < 1e-9);
    double bytes_sweep = csv_value(sw, "10Gbps,1,accordion,", "bytes_per_worker");
    double bytes_table =
        csv_value(acc, "mlp-powersgd,accordion,accordion,10Gbps,", "bytes_per_worker_mean");
    assert_true(fabs(bytes_sweep - bytes_table) <= 1e-9 * bytes_sweep);
    /* the large batch ran in its own sweep, with 8x the batch and the lr */
    char *large = read_out("sweeps/mlp-batch-large/sweep.json");
    assert_non_null(strstr(large, "--batch=256"));
    assert_non_null(strstr(large, "--lr=0.16"));
    free(acc);
    free(adp);
    free(report);
    free(sw);
    free(large);
}

static void test_step_keeps_the_papers_compute_to_communication_ratio(void **state)
{
    (void)state;
    /* ADPSGD's assumed setting: VGG-16 (14.72 M parameters, 1.86 GFLOP per sample), 8 V100s at
     * 7.85 TFLOP/s, 128 images each, 10 Gbps, latency 25 us; compute per step over the dense ring
     * allreduce (bandwidth term plus 2 (p-1) latencies for each of the step's two collectives:
     * the matrices and the vectors go in separate buffers, as in PowerSGD's code and as two
     * DDP buckets would for a model of this size) */
    double compute = 128 * 1.86e9 / 7.85e12;
    double band = 2.0 * 7 / 8 * 4 * 14.72e6 * 8 / 10e9, lat = 2 * 2.0 * 7 * 25e-6;
    double expect = compute / (band + lat);
    char *sw = read_out("sweeps/mlp-periodic/sweep.csv");
    double c = csv_value(sw, "10Gbps,1,sync,", "compute_s");
    double m = csv_value(sw, "10Gbps,1,sync,", "communication_s");
    assert_true(c > 0 && m > 0);
    if (fabs(c / m - expect) > 1e-3 * expect)
        fail_msg("simulated compute / communication %.6g, the paper's setting %.6g", c / m, expect);
    /* the same rule for Accordion's setting: ResNet-18, 4 workers */
    compute = 128 * 3.33e9 / 7.85e12;
    band = 2.0 * 3 / 4 * 4 * 11173962.0 * 8 / 10e9, lat = 2 * 2.0 * 3 * 25e-6;
    expect = compute / (band + lat);
    char *bs = read_out("sweeps/mlp-batch/sweep.csv");
    c = csv_value(bs, "10Gbps,1,sync,", "compute_s");
    m = csv_value(bs, "10Gbps,1,sync,", "communication_s");
    if (fabs(c / m - expect) > 1e-3 * expect)
        fail_msg("simulated compute / communication %.6g, the paper's setting %.6g", c / m, expect);
    free(sw);
    free(bs);
}

static void test_report_is_rebuilt_identically_and_resume_runs_nothing(void **state)
{
    (void)state;
    char *before = read_out("report.md");
    assert_int_equal(sh(BELLOWS_BIN " reproduce all --smoke --seeds 1 --no-plots --out %s "
                                    "--report-only >/dev/null",
                        OUT),
                     0);
    char *after = read_out("report.md");
    assert_string_equal(before, after);
    /* again without --resume: refused, nothing touched */
    assert_int_equal(sh(BELLOWS_BIN " reproduce all --smoke --seeds 1 --no-plots --out %s "
                                    ">/dev/null 2>&1",
                        OUT),
                     2);
    /* --resume: every sweep is complete, so nothing runs and the report is the same */
    assert_int_equal(sh(BELLOWS_BIN " reproduce all --smoke --seeds 1 --no-plots --out %s "
                                    "--resume >%s/resume.log 2>&1",
                        OUT, TMP),
                     0);
    char *again = read_out("report.md");
    assert_string_equal(before, again);
    char log[256];
    snprintf(log, sizeof log, "%s/resume.log", TMP);
    char *l = slurp(log, NULL);
    assert_non_null(strstr(l, "0 to run"));
    free(before);
    free(after);
    free(again);
    free(l);
}

static void test_bad_invocations_exit_2(void **state)
{
    (void)state;
    const char *bad[] = {
        "reproduce",                                                 /* nothing to reproduce */
        "reproduce accordio",                                        /* unknown paper */
        "reproduce all --seeds 1,1",                                 /* a seed twice */
        "reproduce all --jobs -1",                                   /* negative jobs */
        "reproduce adpsgd --report-only --out /nonexistent-bellows", /* nothing to report */
        "reproduce all --frobnicate",                                /* unknown flag */
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        int rc = sh(BELLOWS_BIN " %s >/dev/null 2>%s/err", bad[i], TMP);
        if (rc != 2) fail_msg("'%s': exit %d, expected 2", bad[i], rc);
        char path[256];
        snprintf(path, sizeof path, "%s/err", TMP);
        char *e = slurp(path, NULL);
        if (count_lines(e) != 1 || strncmp(e, "bellows: ", 9) != 0)
            fail_msg("'%s': expected one error line, got: %s", bad[i], e);
        free(e);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tables_summarise_the_sweeps),
        cmocka_unit_test(test_step_keeps_the_papers_compute_to_communication_ratio),
        cmocka_unit_test(test_report_is_rebuilt_identically_and_resume_runs_nothing),
        cmocka_unit_test(test_bad_invocations_exit_2),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
