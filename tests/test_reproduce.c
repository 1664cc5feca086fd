/* test_reproduce.c: `bellows reproduce` end to end, at its --smoke size (the real Fashion-MNIST,
 * 2,048 samples, 2 epochs, one seed). The report's tables agree with the sweeps they summarise;
 * the runs charge a real ResNet-18's dense step on V100s (hand-computed from the profile's
 * flops, the datasheet and the ring formula), and the report's cost table says the same; the
 * report is rebuilt byte for byte from the sweeps; an existing reproduction is refused without
 * --resume and finished with it; bad invocations exit 2. */
#include "testutil.h"

#include "workload.h"

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
 * (a prefix of the line); the header has no quoted fields. */
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
            for (int i = 0; i < idx; i++) /* a quoted field may hold commas */
                p = strchr(*p == '"' ? strchr(p + 1, '"') : p, ',') + 1;
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
    /* at the roofline (--costs ideal), whose costs the tests below compute by hand */
    int rc = sh(BELLOWS_BIN " reproduce all --smoke --seeds 1 -j 2 --no-plots --costs ideal "
                            "--out %s >%s/log 2>&1",
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
    /* smoke: the mlp settings only; 3 roles x 2 bandwidths each; ADPSGD 8 policies x 2 */
    assert_int_equal(count_lines(acc), 1 + 3 * 3 * 2);
    assert_int_equal(count_lines(adp), 1 + 8 * 2);
    assert_non_null(strstr(report, "## Accordion"));
    assert_non_null(strstr(report, "## ADPSGD"));
    assert_non_null(strstr(report, "bellows sweep --model=mlp"));
    assert_null(strstr(report, "nan steps")); /* a baseline that never reached the target */
    /* one seed: the table's mean is that run's figure in the sweep */
    char *sw = read_out("sweeps/mlp-powersgd/priced/seed-1-1/sweep.csv");
    double from_sweep = csv_value(sw, "\"powersgd:ef=1,rank_change=reset\",1Gbps,1,static:level=1,",
                                  "final_test_accuracy");
    double from_table = csv_value(acc, "mlp-powersgd,high compression,static:level=1,1Gbps,",
                                  "final_accuracy_mean");
    assert_true(fabs(from_sweep - from_table) < 1e-9);
    free(sw);
    sw = read_out("sweeps/mlp-powersgd/priced/seed-1-2/sweep.csv");
    double bytes_sweep = csv_value(
        sw, "\"powersgd:ef=1,rank_change=reset\",10Gbps,1,accordion:paper=1,", "bytes_per_worker");
    double bytes_table =
        csv_value(acc, "mlp-powersgd,accordion,accordion:paper=1,10Gbps,", "bytes_per_worker_mean");
    assert_true(fabs(bytes_sweep - bytes_table) <= 1e-9 * bytes_sweep);
    /* the large batch ran in its own sweep, with 8x the batch and the lr */
    char *large = read_out("sweeps/mlp-batch-large/sweep.json");
    assert_non_null(strstr(large, "--batch=1024"));
    assert_non_null(strstr(large, "--lr=0.08"));
    free(acc);
    free(adp);
    free(report);
    free(sw);
    free(large);
}

/* The hand-computed costs of a dense step of ResNet-18 (CIFAR) on a V100, as the reproduction
 * charges them. */
typedef struct {
    double params, flops; /* per sample, forward and backward */
} Resnet;

/* Seconds of compute per step of b images: the forward and backward at the V100's fp32 peak
 * (15.7 TFLOP/s, datasheet) x 0.5 (bellows' default efficiency), plus the optimiser (momentum,
 * no weight decay: 20 bytes per parameter at 85% of the V100's 900 GB/s, which bounds it, as
 * sgd_cost counts it). */
static double resnet_compute(const Resnet *rn, int b)
{
    return b * rn->flops / (0.5 * 15.7e12) + 20 * rn->params / (0.85 * 900e9);
}

/* Seconds of the dense fp32 ring allreduce among p workers at bw bit/s on the star: bandwidth
 * term 2 (p-1)/p x 4 n bytes, and 2 (p-1) routes of two 25 us links in each of `calls`
 * allreduces (Accordion's runs: one per tensor, 62). */
static double resnet_comm(const Resnet *rn, int p, double bw, int calls)
{
    return 2.0 * (p - 1) / p * 4 * rn->params * 8 / bw + calls * 2.0 * (p - 1) * 2 * 25e-6;
}

/* sync's compute and communication per step in a sweep's row, against the hand-computed ones */
static void check_step(const char *sweep, const char *row, double compute, double comm)
{
    char *sw = read_out(sweep);
    double steps = csv_value(sw, row, "steps");
    double c = csv_value(sw, row, "compute_s") / steps;
    double m = csv_value(sw, row, "communication_s") / steps;
    if (fabs(c - compute) > 1e-6 * compute || fabs(m - comm) > 1e-6 * comm)
        fail_msg("%s %s: per step compute %.9g s, communication %.9g s; expected %.9g, %.9g", sweep,
                 row, c, m, compute, comm);
    free(sw);
}

static void test_runs_charge_resnet18s_dense_step(void **state)
{
    (void)state;
    Workload *w;
    BwError err = {{0}};
    assert_int_equal(workload_load("resnet18-cifar", "test", &w, &err), BW_OK);
    /* the CIFAR ResNet-18 of kuangliu/pytorch-cifar: 11,173,962 parameters in 62 tensors */
    assert_int_equal(w->n_params, 11173962);
    assert_int_equal(w->n_tensors, 62);
    Resnet rn = {(double)w->n_params, workload_flops_per_sample(w)};
    workload_free(w);
    assert_true(rn.flops > 3.3e9 && rn.flops < 3.4e9); /* 3 x 0.56 GMAC x 2 */
    /* ADPSGD: 8 workers x 32 images at 10 and 100 Gbps */
    check_step("sweeps/mlp-periodic/priced/seed-1-0/sweep.csv", "10Gbps,1,sync,",
               resnet_compute(&rn, 32), resnet_comm(&rn, 8, 10e9, 1));
    check_step("sweeps/mlp-periodic/priced/seed-1-0/sweep.csv", "100Gbps,1,sync,",
               resnet_compute(&rn, 32), resnet_comm(&rn, 8, 100e9, 1));
    /* Accordion: 4 workers x 128 images, and the large batch (1024) */
    check_step("sweeps/mlp-batch/sweep.csv", "1Gbps,1,sync,", resnet_compute(&rn, 128),
               resnet_comm(&rn, 4, 1e9, 62));
    check_step("sweeps/mlp-batch-large/priced/seed-1-0/sweep.csv", "10Gbps,1,sync,",
               resnet_compute(&rn, 1024), resnet_comm(&rn, 4, 10e9, 62));
    /* the report's cost table: the forward and backward and the dense allreduce, per setting */
    char *report = read_out("report.md"), row[256];
    snprintf(row, sizeof row, "| 8 x 32 | %.2f ms | %.2f ms | %.2f ms |",
             1e3 * 32 * rn.flops / (0.5 * 15.7e12), 1e3 * resnet_comm(&rn, 8, 10e9, 1),
             1e3 * resnet_comm(&rn, 8, 100e9, 1));
    if (!strstr(report, row)) fail_msg("the report has no row '%s'", row);
    snprintf(row, sizeof row, "| 4 x 1024 | %.2f ms | %.2f ms | %.2f ms |",
             1e3 * 1024 * rn.flops / (0.5 * 15.7e12), 1e3 * resnet_comm(&rn, 4, 1e9, 62),
             1e3 * resnet_comm(&rn, 4, 10e9, 62));
    if (!strstr(report, row)) fail_msg("the report has no row '%s'", row);
    assert_null(strstr(report, "--gpu-flops"));
    char *js = read_out("sweeps/mlp-topk/sweep.json");
    assert_non_null(strstr(js, "--workload=resnet18-cifar"));
    assert_non_null(strstr(js, "--overlap=tensor"));
    assert_non_null(strstr(js, "--gpu=V100"));
    assert_non_null(strstr(js, "--latency=25us"));
    assert_non_null(strstr(js, "--costs=ideal"));
    free(js);
    js = read_out("sweeps/mlp-periodic/sweep.json"); /* ADPSGD's code is not public */
    assert_non_null(strstr(js, "--overlap=none"));
    free(report);
    free(js);
}

/* A run priced by replaying its trace at the bandwidth it trained at gives the live run's time
 * and bytes: Accordion with the authors' settings (rank 0's epoch norms decide), ADPSGD (the
 * variances steer it) and AdaComm (the losses). The training sweep has one bandwidth, so its
 * row has no bandwidth column; a compressor with options is an axis of one value, quoted. */
static void check_priced(const char *train, const char *tkey, const char *priced, const char *pkey)
{
    char *t = read_out(train), *p = read_out(priced);
    static const char *const cols[] = {"sim_time_s", "bytes_per_worker", "communication_s",
                                       "final_test_accuracy", "steps"};
    for (int i = 0; i < 5; i++) {
        double x = csv_value(t, tkey, cols[i]), y = csv_value(p, pkey, cols[i]);
        if (!(fabs(x - y) <= 1e-9 * fabs(x)))
            fail_msg("%s %s: live %.12g, priced %.12g", tkey, cols[i], x, y);
    }
    free(t);
    free(p);
}

static void test_a_priced_run_is_the_live_run(void **state)
{
    (void)state;
    check_priced("sweeps/mlp-powersgd/sweep.csv",
                 "\"powersgd:ef=1,rank_change=reset\",1,accordion:paper=1,",
                 "sweeps/mlp-powersgd/priced/seed-1-2/sweep.csv",
                 "\"powersgd:ef=1,rank_change=reset\",1Gbps,1,accordion:paper=1,");
    check_priced("sweeps/mlp-periodic/sweep.csv", "1,adpsgd:period=4,",
                 "sweeps/mlp-periodic/priced/seed-1-3/sweep.csv", "10Gbps,1,adpsgd:period=4,");
    check_priced("sweeps/mlp-periodic/sweep.csv", "1,adacomm,",
                 "sweeps/mlp-periodic/priced/seed-1-6/sweep.csv", "10Gbps,1,adacomm,");
}

static void test_report_is_rebuilt_identically_and_resume_runs_nothing(void **state)
{
    (void)state;
    char *before = read_out("report.md");
    assert_int_equal(sh(BELLOWS_BIN
                        " reproduce all --smoke --seeds 1 --no-plots --costs ideal --out %s "
                        "--report-only >/dev/null",
                        OUT),
                     0);
    char *after = read_out("report.md");
    assert_string_equal(before, after);
    /* again without --resume: refused, nothing touched */
    assert_int_equal(sh(BELLOWS_BIN
                        " reproduce all --smoke --seeds 1 --no-plots --costs ideal --out %s "
                        ">/dev/null 2>&1",
                        OUT),
                     2);
    /* --resume: every sweep is complete, so nothing runs and the report is the same */
    assert_int_equal(sh(BELLOWS_BIN
                        " reproduce all --smoke --seeds 1 --no-plots --costs ideal --out %s "
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

/* Field k (from 0) of a line of accordion.csv (its fields hold no commas). */
static double field(const char *line, int k)
{
    for (int i = 0; i < k; i++) line = strchr(line, ',') + 1;
    return strtod(line, NULL);
}

/* The Accordion verdicts rest on every row of the table they summarise: recomputed here from
 * accordion.csv (the batch setting included), the report's largest bytes ratio, its setting,
 * and the accuracy verdict by the stated thresholds (0.5 and 2 points); and no figure in the
 * report is "nan" or a dash where a ratio should stand. */
static void test_the_verdicts_follow_from_the_csv(void **state)
{
    (void)state;
    char *csv = read_out("accordion.csv"), *report = read_out("report.md");
    /* per setting, in the csv's order: role 0 (low / small batch) then 1 (high), 2 (Accordion),
     * each at both bandwidths; the first bandwidth's rows */
    char name[8][64];
    double bytes[8][3], acc[8][3];
    int n = -1, row = 0;
    for (char *line = strchr(csv, '\n') + 1; *line; line = strchr(line, '\n') + 1, row++) {
        int at = row % 6;
        if (at == 0) sscanf(line, "%63[^,]", name[++n]);
        if (at % 2 == 0) { /* the first bandwidth */
            bytes[n][at / 2] = field(line, 8);
            acc[n][at / 2] = field(line, 6);
        }
    }
    n++;
    int best = -1, batch = -1;
    double worst = INFINITY;
    for (int s = 0; s < n; s++) {
        double ratio = bytes[s][0] / bytes[s][2];
        if (best < 0 || ratio > bytes[best][0] / bytes[best][2]) best = s;
        if (strstr(name[s], "batch")) batch = s;
        worst = fmin(worst, 100 * (acc[s][2] - acc[s][0]));
    }
    assert_true(batch >= 0); /* the batch setting is one of the rows */
    char want[256];
    snprintf(want, sizeof want, "largest %.2fx (%s): ", bytes[best][0] / bytes[best][2],
             name[best]);
    if (!strstr(report, want)) fail_msg("the report lacks '%s'", want);
    const char *verdict = worst >= -0.5 ? "**reproduced**: the worst setting decides"
                          : worst >= -2 ? "**direction only**: the worst setting decides"
                                        : "**not reproduced**: the worst setting decides";
    const char *claim = strstr(report, "- Claim: *Accordion's accuracy is similar");
    assert_non_null(claim);
    if (strncmp(strstr(claim, "**"), verdict, strlen(verdict)) != 0)
        fail_msg("worst accuracy loss %.2f points: expected %s", worst, verdict);
    assert_null(strstr(report, "nan"));
    assert_null(strstr(report, "costs low compression - Accordion's"));
    free(csv);
    free(report);
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
        cmocka_unit_test(test_runs_charge_resnet18s_dense_step),
        cmocka_unit_test(test_a_priced_run_is_the_live_run),
        cmocka_unit_test(test_report_is_rebuilt_identically_and_resume_runs_nothing),
        cmocka_unit_test(test_the_verdicts_follow_from_the_csv),
        cmocka_unit_test(test_bad_invocations_exit_2),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
