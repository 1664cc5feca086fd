/* test_cli_runs.c: the bellows binary end to end on good invocations: help and version, short
 * real and simulated training runs whose outputs are complete and byte-identical across two runs
 * (but for the wall-clock field), a run on a platform file of one's own, a write failure that is
 * reported and leaves no partial file, and compare's table, folders and plots. Bad invocations:
 * test_cli.c. */
#include "testutil.h"

#include "clirun.h"

/* The suite's scratch folder, with the user platforms test_run_on_a_platform_file_of_ones_own
 * runs on (test_cli.c writes the same for its bad invocations). */
static int setup_with_platforms(void **state)
{
    setup(state);
    write_platforms();
    return 0;
}

static void test_help_and_version(void **state)
{
    (void)state;
    assert_int_equal(run("--help"), 0);
    char *out = captured("stdout");
    assert_non_null(strstr(out, "train"));
    free(out);
    assert_int_equal(run("--version"), 0);
    out = captured("stdout");
    assert_non_null(strstr(out, "bellows "));
    free(out);
    assert_int_equal(run("train --help"), 0);
    out = captured("stdout");
    /* every flag is documented with its default */
    assert_non_null(strstr(out, "--batch N"));
    assert_non_null(strstr(out, "(default: 64)"));
    assert_non_null(strstr(out, "--data-dir"));
    free(out);
    /* the platform command prints a complete document for every topology */
    const char *topologies[] = {"--topology star", "--topology fat-tree --oversubscription 2",
                                "--topology hierarchical --gpus-per-node 4",
                                "--topology hierarchical --gpus-per-node 2 --nic-per-gpu"};
    for (int t = 0; t < 4; t++) {
        char args[128];
        snprintf(args, sizeof args, "platform --workers 8 %s", topologies[t]);
        assert_int_equal(run(args), 0);
        out = captured("stdout");
        assert_non_null(strstr(out, "<host id=\"gpu7\""));
        assert_non_null(strstr(out, "</platform>"));
        free(out);
    }
    assert_int_equal(run("run --help"), 0);
    out = captured("stdout");
    assert_non_null(strstr(out, "--policy"));
    assert_non_null(strstr(out, "--compute-jitter"));
    assert_non_null(strstr(out, "without it nothing is written"));
    free(out);
    assert_int_equal(run("compare --help"), 0);
    out = captured("stdout");
    assert_non_null(strstr(out, "--policies"));
    /* where it writes, said as it does it; the seeds */
    assert_non_null(strstr(out, "(default: runs/compare)"));
    assert_non_null(strstr(out, "--force"));
    assert_non_null(strstr(out, "(default: 1,2,3)"));
    assert_null(strstr(out, "print only"));
    free(out);
    assert_int_equal(run("replay --help"), 0);
    out = captured("stdout");
    assert_non_null(strstr(out, "(default: runs/compare)"));
    free(out);
    assert_int_equal(run("models"), 0);
    out = captured("stdout");
    assert_non_null(strstr(out, "cnn"));
    free(out);
    assert_int_equal(run("policies"), 0);
    out = captured("stdout");
    assert_non_null(strstr(out, "accordion"));
    assert_non_null(strstr(out, "[reconstruction]"));
    free(out);
    assert_int_equal(run("policies --help"), 0);
    out = captured("stdout");
    assert_non_null(strstr(out, "usage: bellows policies"));
    free(out);
}

/* Drops the "wall_s" line, the one field that may differ between identical runs. */
static void strip_wall(char *s)
{
    char *p = strstr(s, "\"wall_s\"");
    assert_non_null(p);
    char *eol = strchr(p, '\n');
    memmove(p, eol, strlen(eol) + 1);
}

static void test_short_real_run_is_complete_and_reproducible(void **state)
{
    (void)state;
    char args[512], path[256];
    char *ev[2], *sum[2];
    for (int r = 0; r < 2; r++) {
        snprintf(args, sizeof args,
                 "train --model mlp --train-samples 3000 --test-samples 1000 --epochs 2 --quiet "
                 "--out %s/run%d",
                 TMP, r);
        assert_int_equal(run(args), 0);
        snprintf(path, sizeof path, "%s/run%d/evals.csv", TMP, r);
        ev[r] = slurp(path, NULL);
        snprintf(path, sizeof path, "%s/run%d/summary.json", TMP, r);
        sum[r] = slurp(path, NULL);
        assert_non_null(ev[r]);
        assert_non_null(sum[r]);
    }
    /* evals.csv: header + one row per epoch */
    assert_int_equal(count_lines(ev[0]), 3);
    assert_non_null(strstr(ev[0], "epoch,step,lr,train_loss"));
    const char *keys[] = {"\"model\": \"mlp\"",     "\"epochs\": 2", "\"final_test_accuracy\"",
                          "\"best_test_accuracy\"", "\"wall_s\"",    "\"status\": \"completed\""};
    for (size_t k = 0; k < sizeof keys / sizeof *keys; k++)
        if (!strstr(sum[0], keys[k])) fail_msg("summary.json lacks %s", keys[k]);
    assert_string_equal(ev[0], ev[1]);
    strip_wall(sum[0]);
    strip_wall(sum[1]);
    assert_string_equal(sum[0], sum[1]);
    /* nothing but the two result files in the folder (no temporaries left) */
    snprintf(args, sizeof args,
             "test \"$(ls -A %s/run0 | tr '\\n' ' ')\" = 'evals.csv summary.json '", TMP);
    assert_int_equal(system(args), 0);
    for (int r = 0; r < 2; r++) free(ev[r]), free(sum[r]);
}

static void test_simulated_run_is_complete_and_reproducible(void **state)
{
    (void)state;
    char args[512], path[256];
    char *files[2][3];
    const char *names[] = {"evals.csv", "steps.csv", "summary.json"};
    /* the second run reads smalldata.h's copy of the packaged set's first samples, which the
     * suites' small runs read: the same files, but for the wall clock */
    char data[128];
    snprintf(data, sizeof data, "%s/fmnist-copy", TMP);
    smalldata_write(data, 2048, 500);
    for (int r = 0; r < 2; r++) {
        snprintf(args, sizeof args,
                 "run --train-samples 2048 --test-samples 500 --epochs 2 --workers 4 --batch 16 "
                 "--policy accordion:interval=1 --compute-jitter 0.2 --quiet --out %s/sim%d%s%s",
                 TMP, r, r ? " --data-dir " : "", r ? data : "");
        assert_int_equal(run(args), 0);
        for (int k = 0; k < 3; k++) {
            snprintf(path, sizeof path, "%s/sim%d/%s", TMP, r, names[k]);
            files[r][k] = slurp(path, NULL);
            if (!files[r][k]) fail_msg("%s missing", path);
        }
    }
    size_t lines;
    lines = (size_t)count_lines(files[0][1]);
    assert_int_equal(lines, 1 + 2 * (2048 / 4 / 16)); /* header + steps */
    lines = (size_t)count_lines(files[0][0]);
    assert_int_equal(lines, 1 + 1 + 2); /* header, the untrained model, two epochs */
    const char *keys[] = {"\"time_to_accuracy_s\"",    "\"bytes_per_worker\"", "\"compute_s\"",
                          "\"communication_s\"",       "\"wait_s\"",           "\"sim_time_s\"",
                          "\"status\": \"completed\"", "\"steps\": 64"};
    for (size_t k = 0; k < sizeof keys / sizeof *keys; k++)
        if (!strstr(files[0][2], keys[k])) fail_msg("summary.json lacks %s", keys[k]);
    assert_string_equal(files[0][0], files[1][0]);
    assert_string_equal(files[0][1], files[1][1]);
    strip_wall(files[0][2]);
    strip_wall(files[1][2]);
    assert_string_equal(files[0][2], files[1][2]);
    for (int r = 0; r < 2; r++)
        for (int k = 0; k < 3; k++) free(files[r][k]);
}

static void test_run_on_a_platform_file_of_ones_own(void **state)
{
    (void)state;
    char args[512], path[256];
    snprintf(args, sizeof args,
             "run --platform %s/good.xml --hosts b,a --train-samples 512 --test-samples 100 "
             "--epochs 1 --batch 16 --quiet --out %s/own",
             TMP, TMP);
    assert_int_equal(run(args), 0);
    snprintf(path, sizeof path, "%s/own/summary.json", TMP);
    char *sum = slurp(path, NULL);
    assert_non_null(sum);
    assert_non_null(strstr(sum, "\"hosts\": [\n      \"b\",\n      \"a\"\n    ]"));
    assert_non_null(strstr(sum, "\"workers\": 2"));
    free(sum);
    /* a platform that bellows platform printed (Dijkstra routing, sealed when the run starts) */
    assert_int_equal(run("platform --workers 3"), 0);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "cp %s/stdout %s/p3.xml", TMP, TMP);
    assert_int_equal(system(cmd), 0);
    snprintf(args, sizeof args,
             "run --platform %s/p3.xml --train-samples 512 --test-samples 100 --epochs 1 "
             "--batch 16 --quiet --out %s/own-dijkstra",
             TMP, TMP);
    assert_int_equal(run(args), 0);
    /* without --hosts: all three hosts, in natural order */
    snprintf(args, sizeof args,
             "run --platform %s/good.xml --train-samples 512 --test-samples 100 --epochs 1 "
             "--batch 16 --quiet --out %s/own3",
             TMP, TMP);
    assert_int_equal(run(args), 0);
    snprintf(path, sizeof path, "%s/own3/summary.json", TMP);
    sum = slurp(path, NULL);
    assert_non_null(sum);
    assert_non_null(strstr(sum, "\"hosts\": [\n      \"a\",\n      \"b\",\n      \"c\"\n    ]"));
    free(sum);
}

/* A PNG file of some substance: the signature and more than a few kilobytes. */
static void expect_png(const char *path)
{
    size_t len = 0;
    char *data = slurp(path, &len);
    if (!data) fail_msg("%s missing", path);
    if (len < 4000 || memcmp(data, "\x89PNG\r\n\x1a\n", 8) != 0)
        fail_msg("%s is not a PNG of substance (%zu bytes)", path, len);
    free(data);
}

/* A file-size limit (as a full disk would) makes a write fail: exit 1 with one line naming the
 * file, and no partial or temporary file left; summary.json, written last, is absent. */
static void test_a_write_failure_is_reported_and_leaves_no_partial_file(void **state)
{
    (void)state;
    char cmd[1024], path[256];
    snprintf(cmd, sizeof cmd,
             "ulimit -f 8; %s run --train-samples 2048 --test-samples 200 --epochs 2 --workers 2 "
             "--batch 16 --quiet --out %s/full >/dev/null 2>%s/stderr",
             BELLOWS_BIN, TMP, TMP);
    int st = system(cmd);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 1);
    char *err = captured("stderr");
    assert_non_null(strstr(err, "write failed: File too large"));
    /* one line of ours (a sanitizer build may add its own warnings about SimGrid's stacks) */
    int ours = 0;
    for (char *p = err; p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        ours += strncmp(p, "bellows: ", 9) == 0;
    assert_int_equal(ours, 1);
    free(err);
    snprintf(path, sizeof path, "%s/full/summary.json", TMP);
    assert_false(file_exists(path));
    snprintf(cmd, sizeof cmd, "ls -a %s/full | grep -q '\\.tmp\\.'", TMP);
    assert_int_not_equal(system(cmd), 0);
}

/* A figure of summary.json ("key": value). */
static double summary_figure(const char *dir, const char *key)
{
    char path[256], pat[64];
    snprintf(path, sizeof path, "%s/summary.json", dir);
    char *text = slurp(path, NULL);
    if (!text) fail_msg("%s missing", path);
    snprintf(pat, sizeof pat, "\"%s\": ", key);
    char *at = strstr(text, pat);
    if (!at) fail_msg("%s lacks %s", path, key);
    double x = strtod(at + strlen(pat), NULL);
    free(text);
    return x;
}

/* Field k (from 0) of the line of csv that starts with prefix. */
static double csv_field(const char *csv, const char *prefix, int k)
{
    const char *line = strstr(csv, prefix);
    if (!line) fail_msg("no row %s", prefix);
    for (int i = 0; i < k; i++) line = strchr(line, ',') + 1;
    return strtod(line, NULL);
}

/* The speedup of static:level=1 in compare.csv is the geometric mean of the per-seed
 * speedups, its interval Student's t with 2 degrees of freedom on their logs, from the runs' own
 * summary.json; its resolution one evaluation interval. */
static void check_speedup_of_static(const char *csv)
{
    double sp[3], mean = 0, var = 0, res = 0;
    for (int i = 0; i < 3; i++) {
        char a[256], b[256];
        snprintf(a, sizeof a, "%s/cmp/seed-%d/1-sync", TMP, i + 1);
        snprintf(b, sizeof b, "%s/cmp/seed-%d/2-static-level-1", TMP, i + 1);
        sp[i] =
            log(summary_figure(a, "time_to_accuracy_s") / summary_figure(b, "time_to_accuracy_s"));
        mean += sp[i] / 3;
    }
    for (int i = 0; i < 3; i++) var += (sp[i] - mean) * (sp[i] - mean) / 2;
    double half = 4.302652729911275 * sqrt(var / 3);
    const char *row = "\"static:level=1\"";
    assert_true(fabs(csv_field(csv, row, 6) - exp(mean)) < 1e-5 * exp(mean));
    assert_int_equal((int)csv_field(csv, row, 15), 3);
    assert_true(fabs(csv_field(csv, row, 17) - exp(mean - half)) < 1e-6 * exp(mean + half));
    assert_true(fabs(csv_field(csv, row, 18) - exp(mean + half)) < 1e-6 * exp(mean + half));
    res = csv_field(csv, row, 19); /* one evaluation interval: positive, below the tta */
    assert_true(res > 0 && res < csv_field(csv, row, 5));
}

static void test_compare_writes_its_table_folders_and_plots(void **state)
{
    (void)state;
    char args[512], path[256];
    const char *flags = "--train-samples 2048 --test-samples 500 --epochs 2 --workers 4 --batch 16 "
                        "--target-accuracy 0.5 --quiet";
    snprintf(args, sizeof args,
             "compare --policies sync,static:level=1,cpsgd:period=4 %s --out %s/cmp", flags, TMP);
    assert_int_equal(run(args), 0);
    char *out = captured("stdout");
    assert_non_null(strstr(out, "speedup"));
    assert_non_null(strstr(out, "95% CI"));
    assert_non_null(strstr(out, "seeds 1,2,3")); /* the default seeds */
    assert_non_null(strstr(out, "cpsgd:period=4"));
    free(out);
    snprintf(path, sizeof path, "%s/cmp/compare.csv", TMP);
    char *csv = slurp(path, NULL);
    assert_non_null(csv);
    assert_int_equal(count_lines(csv), 4);
    assert_non_null(strstr(csv, "policy,folder,status,final_test_accuracy"));
    assert_non_null(strstr(csv, ",steps,seeds,time_to_accuracy_sd_s,speedup_ci_low,"
                                "speedup_ci_high,tta_resolution_s,speedup_band_low,"
                                "speedup_band_high,cost_band_draws\n")); /* the band's last */
    /* the baseline's speedup and byte ratio against itself are 1; the folder is seed 1's */
    assert_non_null(strstr(csv, "\"sync\",seed-1/1-sync,completed,"));
    check_speedup_of_static(csv);
    free(csv);
    const char *must[] = {"seed-1/1-sync/summary.json", "seed-3/2-static-level-1/steps.csv",
                          "seed-2/3-cpsgd-period-4/evals.csv", "schedule.svg"};
    for (int k = 0; k < 4; k++) {
        snprintf(path, sizeof path, "%s/cmp/%s", TMP, must[k]);
        if (!file_exists(path)) fail_msg("%s missing", path);
    }
    const char *pngs[] = {"accuracy_vs_time", "accuracy_vs_bytes", "bytes_vs_time",
                          "time_breakdown", "schedule"};
    for (int k = 0; k < 5; k++) {
        snprintf(path, sizeof path, "%s/cmp/%s.png", TMP, pngs[k]);
        expect_png(path);
    }
    /* bellows plot on one run of it, and on the whole folder */
    snprintf(args, sizeof args, "plot %s/cmp/seed-1/2-static-level-1", TMP);
    assert_int_equal(run(args), 0);
    const char *run_pngs[] = {"accuracy_vs_time", "bytes_vs_time", "time_per_step", "schedule"};
    for (int k = 0; k < 4; k++) {
        snprintf(path, sizeof path, "%s/cmp/seed-1/2-static-level-1/%s.png", TMP, run_pngs[k]);
        expect_png(path);
    }
    snprintf(args, sizeof args, "plot %s/cmp", TMP);
    assert_int_equal(run(args), 0);
    /* the folder is not written over again without --force; with it, it is */
    snprintf(args, sizeof args, "compare --policies sync --seed 2 %s --no-plots --out %s/cmp",
             flags, TMP);
    assert_int_equal(run(args), 2);
    snprintf(args, sizeof args,
             "compare --policies sync --seed 2 %s --no-plots --force --out %s/cmp", flags, TMP);
    assert_int_equal(run(args), 0);
    snprintf(path, sizeof path, "%s/cmp/compare.csv", TMP);
    csv = slurp(path, NULL);
    assert_non_null(strstr(csv, "\"sync\",seed-2/1-sync,completed,"));
    assert_int_equal(count_lines(csv), 2);
    free(csv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_help_and_version),
        cmocka_unit_test(test_short_real_run_is_complete_and_reproducible),
        cmocka_unit_test(test_simulated_run_is_complete_and_reproducible),
        cmocka_unit_test(test_run_on_a_platform_file_of_ones_own),
        cmocka_unit_test(test_a_write_failure_is_reported_and_leaves_no_partial_file),
        cmocka_unit_test(test_compare_writes_its_table_folders_and_plots),
    };
    return cmocka_run_group_tests(tests, setup_with_platforms, teardown);
}
