/* test_cli_results.c: results a researcher can trust, end to end on a small slice of the real
 * Fashion-MNIST. A run whose loss explodes is `diverged` (exit 1, one `bellows:` line), and so
 * is a replay of its trace; in compare and sweep a diverged run keeps its row but gets no
 * speedup, and the heatmap's grid marks it (and a run that never reached the target) instead of
 * drawing a speedup of 0, with no block for the baseline; plots are drawn into a folder whose
 * name holds a quote, the accuracy plot with a panel zoomed on the target; the BLAS kernels are
 * pinned, so a run writes the same files whichever kernels the CPU would pick; ADPSGD lengthens
 * its period under a constant lr on the real mlp, on cpsgd's budget. compare's cost band: beside
 * the seed interval, and --cost-band off the files as before; the first-order band against true
 * re-pricings (fast replays under drawn profiles, in process); bench's and sweep's bands. */
#include "testutil.h"

#include "cost_band.h"
#include "costs.h"
#include "costs_band.h"
#include "csv.h"
#include "driver.h"
#include "run_args.h"
#include "trace.h"

#include "smalldata.h"

#include <gsl/gsl_statistics_double.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char TMP[64];

static int setup(void **state)
{
    (void)state;
    make_tmpdir(TMP, sizeof TMP);
    char dir[128]; /* SMALL's data: the packaged set's first samples (smalldata.h) */
    snprintf(dir, sizeof dir, "%s/fmnist", TMP);
    smalldata_write(dir, 4096, 500);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    rm_tree(TMP);
    return 0;
}

/* Runs `bellows ARGS` (ARGS may hold up to two %s, each TMP), stdout and stderr to TMP/out,
 * TMP/err. */
static int run(const char *args)
{
    char a[2048], cmd[4096];
    snprintf(a, sizeof a, args, TMP, TMP);
    snprintf(cmd, sizeof cmd, "%s %s >%s/out 2>%s/err </dev/null", BELLOWS_BIN, a, TMP, TMP);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The same with an environment for the command: "env -u X" or "X=Y". */
static int run_env(const char *env, const char *args)
{
    char a[2048], cmd[4096];
    snprintf(a, sizeof a, args, TMP, TMP);
    snprintf(cmd, sizeof cmd, "%s %s %s >%s/out 2>%s/err </dev/null", env, BELLOWS_BIN, a, TMP,
             TMP);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static char *read_tmp(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", TMP, name);
    char *s = slurp(path, NULL);
    if (!s) fail_msg("%s missing", path);
    return s;
}

/* sync at lr 0.6 learns a little; this accordion scales its lr with a 32x batch and diverges
 * after reaching accuracy 0.1 (a speedup of 2.9x, were it counted). The runs read the copy of
 * the packaged set's first 4096 and 500 samples that setup writes (the same runs, without
 * reading the 60,000 images in each of the heatmap sweep's 12): the %s is TMP. */
#define DIVERGING "accordion:mode=batch,interval=1,critical=128,normal=4096,eta=1000000"
#define SMALL                                                                                      \
    "--workers 4 --batch 32 --lr 0.6 --train-samples 4096 --test-samples 500 --epochs 3 "          \
    "--eval-every 1 --quiet --data-dir %s/fmnist"

static void test_an_exploding_run_is_diverged_and_exits_1(void **state)
{
    (void)state;
    assert_int_equal(run("run --lr 10 --epochs 1 --train-samples 2048 --test-samples 500 "
                         "--workers 4 --quiet --out %s/lr10"),
                     1);
    char *out = read_tmp("out"), *err = read_tmp("err"), *sum = read_tmp("lr10/summary.json");
    assert_non_null(strstr(out, "status                 diverged"));
    assert_non_null(strstr(err, "bellows: training diverged"));
    int said = 0; /* one bellows: line (a sanitizer may add its own warnings about SimGrid) */
    for (const char *l = err; l; l = strchr(l, '\n'), l = l ? l + 1 : l)
        said += strncmp(l, "bellows:", 8) == 0;
    assert_int_equal(said, 1);
    assert_non_null(strstr(sum, "\"status\": \"diverged\""));
    /* sync (the default policy) sent no compressor's output: not --compressor's default */
    assert_non_null(strstr(sum, "\"compressor\": \"none\","));
    free(out);
    free(err);
    free(sum);
    /* its trace replayed: the recorded run diverged, so the replay is diverged too */
    assert_int_equal(run("run --lr 10 --epochs 1 --train-samples 2048 --test-samples 500 "
                         "--workers 4 --quiet --record-trace %s/lr10.jsonl"),
                     1);
    /* its header says what ran: sync (the default policy) compresses nothing, whatever
     * --compressor's default */
    char *trace = read_tmp("lr10.jsonl");
    assert_non_null(
        strstr(trace, "\"source\":\"bellows run (policy sync, no compressor, seed 1)\""));
    free(trace);
    assert_int_equal(run("replay --trace %s/lr10.jsonl --policies sync --workers 4 --no-plots "
                         "--quiet --out %s/rep"),
                     0);
    char *csv = read_tmp("rep/compare.csv");
    assert_non_null(strstr(csv, ",diverged,"));
    free(csv);
}

static void test_compare_gives_a_diverged_run_no_speedup_and_plots_any_folder(void **state)
{
    (void)state;
    assert_int_equal(run("compare --policies sync," DIVERGING " " SMALL
                         " --target-accuracy 0.1 --out \"%s/it's\""),
                     0);
    char *out = read_tmp("out"), *csv = read_tmp("it's/compare.csv");
    assert_non_null(strstr(out, "DIVERGED"));
    /* the diverged row: status, final, best, its time to accuracy, then no speedup; its
     * bytes, then no ratio */
    const char *row = strstr(csv, ",diverged,");
    assert_non_null(row);
    int commas = 0;
    const char *c = row + 1;
    for (; *c && commas < 4; c++) commas += *c == ',';
    assert_true(c[-2] != ','); /* the time to accuracy is there */
    assert_int_equal(*c, ','); /* and the speedup is empty */
    free(out);
    free(csv);
    char path[512];
    snprintf(path, sizeof path, "%s/it's/schedule.png", TMP);
    if (!file_exists(path)) fail_msg("no plots in a folder named with a quote");
    snprintf(path, sizeof path, "%s/it's/accuracy_vs_time.png", TMP);
    assert_true(file_exists(path));
    /* the accuracy plot has a panel zoomed on the target */
    char *svg = read_tmp("it's/accuracy_vs_time.svg");
    assert_non_null(strstr(svg, "zoomed: accuracy"));
    free(svg);
}

/* On islands the bytes columns are the WAN's (issue 49 item 33): all the bytes put DiLoCo H=4
 * at 0.92x of sync, a ring inside each island carrying most of them, while the WAN carries 4
 * exchanges against sync's 16, 0.25x. The per-worker figure is summary.json's wan_bytes over
 * the 4 workers. */
static void test_islands_tables_show_the_wan_bytes(void **state)
{
    (void)state;
    assert_int_equal(run("compare --topology islands --islands 2 --workers 4 --collectives "
                         "analytic --policies sync,diloco:H=4 --seeds 1 --epochs 1 "
                         "--train-samples 512 --test-samples 100 --batch 32 --no-plots --quiet "
                         "--cost-band off --out %s/isl"),
                     0);
    char *out = read_tmp("out"), *csv = read_tmp("isl/compare.csv");
    assert_non_null(strstr(out, "WAN_MB/wkr"));
    assert_non_null(strstr(csv, ",wan_bytes_per_worker,wan_bytes_ratio,"));
    assert_null(strstr(csv, ",bytes_per_worker,"));
    const char *name[2] = {"1-sync", "2-diloco-H-4"};
    double wan[2];
    for (int k = 0; k < 2; k++) {
        char file[128];
        snprintf(file, sizeof file, "isl/seed-1/%s/summary.json", name[k]);
        char *sum = read_tmp(file), *at = strstr(sum, "\"wan_bytes\": ");
        assert_non_null(at);
        wan[k] = strtod(at + 13, NULL) / 4;
        /* neither sync nor diloco (periodic: dense parameters) sent --compressor's output */
        assert_non_null(strstr(sum, "\"compressor\": \"none\","));
        free(sum);
        const char *at_row = strstr(csv, name[k]);
        assert_non_null(at_row);
        char row[1024], *fld[24];
        snprintf(row, sizeof row, "%.*s", (int)strcspn(at_row, "\n"), at_row);
        assert_int_equal(csv_split(row, fld, 24), 19); /* from the folder on */
        assert_true(wan[k] > 0);
        assert_true(fabs(strtod(fld[6], NULL) - wan[k]) <= 0.5);
        if (k) assert_true(fabs(strtod(fld[7], NULL) - 0.25) < 1e-9);
    }
    assert_true(fabs(wan[1] / wan[0] - 0.25) < 1e-9);
    free(out);
    free(csv);
}

#define PIN_RUN "run --epochs 1 --train-samples 2048 --test-samples 200 --workers 2 --quiet "

/* OpenBLAS's kernels are pinned: on a CPU with AVX2 a run takes the Haswell kernels whatever
 * OpenBLAS would pick, and writes the same steps as a run told to use them; a kernel the user
 * chose is kept and said. The per-step bytes are rank 0's, and say so. */
static void test_the_blas_kernels_are_pinned(void **state)
{
    (void)state;
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) skip();
    assert_int_equal(run_env("env -u OPENBLAS_CORETYPE", PIN_RUN "--out %s/pinned"), 0);
    assert_int_equal(run_env("OPENBLAS_CORETYPE=Haswell", PIN_RUN "--out %s/haswell"), 0);
    char *sum = read_tmp("pinned/summary.json");
    assert_non_null(strstr(sum, "\"blas_kernel\": \"Haswell\""));
    char *a = read_tmp("pinned/steps.csv"), *b = read_tmp("haswell/steps.csv");
    assert_string_equal(a, b);
    assert_non_null(strstr(a, ",bytes_rank0,"));
    free(sum);
    free(a);
    free(b);
    if (!__builtin_cpu_supports("avx512f")) return; /* SkylakeX's kernels would not run */
    assert_int_equal(run_env("OPENBLAS_CORETYPE=SkylakeX", PIN_RUN "--out %s/user"), 0);
    sum = read_tmp("user/summary.json");
    assert_non_null(strstr(sum, "set by the user"));
    free(sum);
}

static void test_the_heatmap_grid_marks_cells_without_a_speedup(void **state)
{
    (void)state;
    /* 0.47: between sync's best accuracy (0.482) and static:level=4's (0.454) on the pinned
     * BLAS kernels, so static never reaches it. The analytic collectives: the grid is that of
     * the transfer level (the same file, and the same sweep.csv to its accuracies), at 3.1 CPU s
     * instead of 5.7 (its 27 priced scenarios replayed on the actors) */
    assert_int_equal(run("sweep --bandwidth 1Gbps,10Gbps --latency 1us,5us --policies "
                         "sync,static:level=4," DIVERGING " " SMALL
                         " --collectives analytic --target-accuracy 0.47 --out %s/sw"),
                     0);
    char *grid = read_tmp("sw/speedup_grid.dat"), *csv = read_tmp("sw/sweep.csv");
    assert_non_null(strstr(grid, "# baseline sync\n"));
    assert_null(strstr(grid, "# policy sync\n")); /* no panel for the baseline */
    assert_non_null(strstr(grid, "# policy static:level=4\n0 0 - 1Gbps 1us \"not reached\"\n"));
    assert_non_null(strstr(grid, "0 0 - 1Gbps 1us \"diverged\"\n"));
    assert_non_null(strstr(csv, ",diverged,"));
    /* sweep.csv: a diverged run's speedup is empty (status, final, best, tta, speedup) */
    const char *row = strstr(csv, ",diverged,");
    int commas = 0;
    const char *c = row + 1;
    for (; *c && commas < 4; c++) commas += *c == ',';
    assert_int_equal(*c, ',');
    free(grid);
    free(csv);
    char path[512];
    snprintf(path, sizeof path, "%s/sw/speedup_heatmap.png", TMP);
    assert_true(file_exists(path));
}

/* A platform whose hosts differ: the summary says whose speed it reports, and the spread; a
 * policy that compresses names its compressor. */
static void test_a_mixed_platform_says_whose_figures_the_summary_gives(void **state)
{
    (void)state;
    char path[512];
    snprintf(path, sizeof path, "%s/mixed.xml", TMP);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("<?xml version='1.0'?>\n"
          "<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
          "<platform version=\"4.1\">\n  <zone id=\"z\" routing=\"Full\">\n"
          "    <host id=\"a\" speed=\"1Tf\"/><host id=\"b\" speed=\"2Tf\"/>\n"
          "    <link id=\"l\" bandwidth=\"1GBps\" latency=\"10us\"/>\n"
          "    <route src=\"a\" dst=\"b\"><link_ctn id=\"l\"/></route>\n"
          "  </zone>\n</platform>\n",
          f);
    fclose(f);
    assert_int_equal(run("run --platform %s/mixed.xml --train-samples 512 --test-samples 100 "
                         "--epochs 1 --policy accordion --quiet --out %s/mixed"),
                     0);
    char *sum = read_tmp("mixed/summary.json");
    /* accordion compresses with --compressor: its summary names it (the default) */
    assert_non_null(strstr(sum, "\"compressor\": \"powersgd\","));
    assert_non_null(strstr(sum, "\"gpu_flops_of\": \"rank 0's host (a)\""));
    assert_non_null(strstr(sum, "\"gpu_flops_min\": 1000000000000"));
    assert_non_null(strstr(sum, "\"gpu_flops_max\": 2000000000000"));
    assert_non_null(strstr(sum, "\"bandwidth_bps_of\""));
    free(sum);
}

/* The periods a run's steps.csv (TMP/name/steps.csv) lists, and its averagings. */
static int read_periods(const char *name, int *period, int max, int *averagings)
{
    char path[512], line[4096];
    snprintf(path, sizeof path, "%s/%s/steps.csv", TMP, name);
    FILE *f = fopen(path, "r");
    if (!f) fail_msg("%s missing", path);
    char *fld[32];
    int n = 0, c_per = -1, c_avg = -1;
    *averagings = 0;
    while (fgets(line, sizeof line, f)) {
        int m = csv_split(line, fld, 32);
        if (c_per < 0) {
            c_per = csv_column(fld, m, "period");
            c_avg = csv_column(fld, m, "averaged");
            assert_true(c_per >= 0 && c_avg >= 0);
            continue;
        }
        assert_true(n < max && m > c_per && m > c_avg);
        period[n++] = atoi(fld[c_per]);
        *averagings += atoi(fld[c_avg]);
    }
    fclose(f);
    return n;
}

/* ADPSGD under a constant lr on the real mlp (a 2,048-sample slice of Fashion-MNIST that it
 * fits, so the workers' disagreement, hence the parameter variance, falls as the loss does):
 * the period over the last third is at least twice that over the first tenth, on the budget of
 * cpsgd:period=4 (its averagings within 10%). On the whole training set over a few epochs the
 * variance does not fall and the period stays flat (tests/perf/run_adpsgd.sh). */
static void test_adpsgd_lengthens_its_period_on_the_real_mlp(void **state)
{
    (void)state;
    /* an end-to-end property of the child runs, which valgrind does not watch: skipped there;
     * and under the sanitizers, where its 400 steps took 10 of the suite's 35 CPU s: ADPSGD's
     * code runs under them in the test process in test_policies_periodic and
     * test_driver_policies, and in bellows in test_sweep_priced's fast-replay case */
    if (getenv("BELLOWS_VALGRIND")) skip();
#if defined(__SANITIZE_ADDRESS__)
    skip();
#endif
    static const char *const common =
        "--workers 8 --batch 64 --lr 0.1 --epochs 100 --train-samples 2048 --test-samples 500 "
        "--eval-every 0 --compressor none --collectives analytic --quiet";
    char args[1024];
    static int ad[400], cp[400];
    int n_ad, n_cp;
    snprintf(args, sizeof args, "run %s --policy adpsgd:period=4 --out %%s/ad", common);
    assert_int_equal(run(args), 0);
    snprintf(args, sizeof args, "run %s --policy cpsgd:period=4 --out %%s/cp", common);
    assert_int_equal(run(args), 0);
    int T = read_periods("ad", ad, 400, &n_ad), T_cp = read_periods("cp", cp, 400, &n_cp);
    assert_int_equal(T, 400);
    assert_int_equal(T_cp, 400);
    assert_int_equal(n_cp, 100);
    double first = 0, last = 0;
    for (int t = 0; t < T / 10; t++) first += ad[t];
    for (int t = T - T / 3; t < T; t++) last += ad[t];
    first /= T / 10, last /= T / 3;
    printf("adpsgd on the real mlp: %d averagings (cpsgd %d), mean period %.2f over the first "
           "tenth, %.2f over the last third\n",
           n_ad, n_cp, first, last);
    assert_true(abs(n_ad - n_cp) <= n_cp / 10);
    assert_true(last >= 2 * first);
}

/* Field k of the csv row that starts with prefix (NAN: empty). */
static double field_at(const char *csv, const char *prefix, int k)
{
    const char *line = strstr(csv, prefix);
    if (!line) fail_msg("no row %s", prefix);
    for (int i = 0; i < k; i++)
        if (!(line = strchr(line, ',')))
            fail_msg("row %s has no field %d", prefix, k);
        else
            line++;
    return *line == ',' || *line == '\n' ? NAN : strtod(line, NULL);
}

/* The line of csv without its last n fields (none of them quoted). */
static void cut_fields(char *csv, int n)
{
    char out[8192] = "", *save = NULL;
    for (char *line = strtok_r(csv, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        for (int i = 0; i < n; i++) *strrchr(line, ',') = '\0';
        strcat(out, line);
        strcat(out, "\n");
    }
    strcpy(csv, out);
}

#define OWN BELLOWS_SOURCE_DIR "/tests/data/own/"
#define OWN_COMPARE                                                                                \
    "compare --traces " OWN "mlp-sync-4w.jsonl.gz," OWN "mlp-static-4w.jsonl.gz --workload "       \
    "resnet18-cifar --collectives analytic --target-accuracy 0.6 --no-plots --quiet "

static void test_a_cost_band_is_beside_the_seeds_and_off_is_as_before(void **state)
{
    (void)state;
    assert_int_equal(run(OWN_COMPARE "--cost-band off --out %s/off"), 0);
    char *table_off = read_tmp("out");
    assert_int_equal(run(OWN_COMPARE "--cost-band 16 --out %s/band"), 0);
    char *table = read_tmp("out"), *off = read_tmp("off/compare.csv"),
         *band = read_tmp("band/compare.csv");
    assert_null(strstr(table_off, "seeds+costs"));
    assert_non_null(strstr(table, "Told apart from the first policy under seeds and costs:"));
    double sp = field_at(band, "\"static:level=1\"", 6);
    double lo = field_at(band, "\"static:level=1\"", 20),
           hi = field_at(band, "\"static:level=1\"", 21);
    assert_true(sp > 1 && lo < sp && sp < hi); /* one seed: the draws' spread alone */
    assert_true(field_at(band, "\"static:level=1\"", 22) == 16);
    cut_fields(band, 3); /* the band's columns come last: the rest is off's, byte for byte */
    assert_string_equal(band, off);
    /* each run's summary.json: off's and its own band's keys (cost_band_*) */
    char sh[1024];
    snprintf(sh, sizeof sh,
             "bash -c 'cd %s && n=0 && for f in band/seed-*/*/summary.json; do "
             "grep -q cost_band_tta_low_s $f && ! grep -q cost_band_ off/${f#band/} && "
             "diff <(grep -v -E \"\\\"(cost_band_|wall)\" $f) "
             "<(grep -v -E \"\\\"wall\" off/${f#band/}) >/dev/null && n=$((n + 1)) || exit 1; "
             "done; [ $n = 2 ]'",
             TMP);
    assert_int_equal(system(sh), 0);
    if (system("gnuplot --version >/dev/null 2>&1") == 0) { /* its speedup_band plot */
        assert_int_equal(run("plot %s/band"), 0);
        snprintf(sh, sizeof sh, "%s/band/speedup_band.svg", TMP);
        assert_int_equal(access(sh, R_OK), 0);
    }
    free(table_off);
    free(table);
    free(off);
    free(band);
    /* a run's draws, from its books to the target: tta + sum of each book times its group's
     * factor less 1, each factor within the profile's stated range */
    char dir[128];
    snprintf(dir, sizeof dir, "%s/fake", TMP);
    mkdir(dir, 0755);
    char path[160];
    snprintf(path, sizeof path, "%s/steps.csv", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("step,end_s,compute_s,compression_s,communication_s,wait_s\n"
          "0,5,0.5,1,1.5,2\n1,10,0.5,1,1.5,2\n2,15,9,9,9,9\n",
          f);
    fclose(f);
    CostProfile *p = NULL;
    assert_int_equal(costs_load("pytorch-v100", "--costs", "V100", &p, NULL), BW_OK);
    double t[1024], sum = 0, mn = INFINITY, mx = -INFINITY;
    assert_int_equal(cost_band_ttas(dir, 10, p->uncertainty, 1024, t), 0);
    const double r = p->uncertainty[COST_GROUP_COMPUTE], reach = r * (1 + 2 + 3);
    assert_true(r == p->uncertainty[COST_GROUP_OPS] && r == p->uncertainty[COST_GROUP_NETWORKS]);
    for (int d = 0; d < 1024; d++) {
        assert_true(fabs(t[d] - 10) <= reach + 1e-12);
        sum += t[d];
        mn = fmin(mn, t[d]);
        mx = fmax(mx, t[d]);
    }
    /* the mean of three uniform draws: sd r sqrt(1 + 4 + 9) / sqrt(3) over sqrt(1024) */
    assert_float_equal(sum / 1024, 10, 4 * r * sqrt(14.0 / 3) / 32);
    assert_true(mx - mn > reach); /* the draws reach out, not one value */
    assert_int_equal(cost_band_ttas("/nonexistent", 10, p->uncertainty, 4, t), -1);
    costs_free(p);
}

/* The first-order band against a true re-pricing: the own sync trace replayed (fast, in this
 * process: no SimGrid engine) under pytorch-v100 with --overlap OVERLAP, and again under each of
 * 8 drawn profiles (costs_band_scaled: compute, operations and networks at the draw's factors;
 * the fixed costs, which the first order does not re-price, at 1), each replay's time to
 * accuracy against the first order's from the first replay's books (costs_band_draw). The
 * worst error as a share of the time to accuracy in *worst, and the ratio of the spreads (sd
 * over the draws, first order over true) in *spread. */
static void first_order_against_replays(const char *overlap, double *worst, double *spread)
{
    char *argv[] = {"--trace",
                    OWN "mlp-sync-4w.jsonl.gz",
                    "--workload",
                    "resnet18-cifar",
                    "--collectives",
                    "analytic",
                    "--target-accuracy",
                    "0.6",
                    "--gpu",
                    "V100",
                    "--costs",
                    "pytorch-v100",
                    "--replay-engine",
                    "fast",
                    "--free-compression",
                    "--overlap",
                    (char *)overlap,
                    "--quiet"};
    Flags f;
    TrainArgs ta;
    RunConfig cfg;
    Trace tr;
    BwError err;
    static double slowdown[DRIVER_MAX_WORKERS];
    assert_int_equal(run_parse_flags("bellows replay", RUN_MODE_COMPARE,
                                     (int)(sizeof argv / sizeof *argv), argv, &f, &err),
                     BW_OK);
    assert_int_equal(trace_read(OWN "mlp-sync-4w.jsonl.gz", &tr, &err), BW_OK);
    f.trace_workers = tr.h.workers;
    assert_int_equal(run_setup("replay", &f, &ta, &cfg, slowdown, &err), BW_OK);
    assert_int_equal(run_apply_trace(&f, &cfg, &tr, &err), BW_OK);
    cfg.policy = "sync";
    cfg.progress = 0;
    char why[256] = "";
    if (!driver_replay_fast(&cfg, why, sizeof why)) fail_msg("not a fast replay: %s", why);
    const CostProfile *p = cfg.costs;
    RunResult res;
    memset(&res, 0, sizeof res);
    assert_int_equal(driver_run(&cfg, &res, &err), BW_OK);
    const double tta = res.time_to_accuracy_s;
    double books[COSTS_BOOKS] = {0}, truth[8], first[8];
    for (long i = 0; i < res.n_steps && res.steps[i].end_s <= tta; i++) {
        books[COSTS_BOOK_COMPUTE] += res.steps[i].compute_s;
        books[COSTS_BOOK_COMPRESSION] += res.steps[i].compress_s;
        books[COSTS_BOOK_COMMUNICATION] += res.steps[i].comm_s;
    }
    driver_result_free(&res);
    assert_true(isfinite(tta) && books[COSTS_BOOK_COMPUTE] > 0 &&
                books[COSTS_BOOK_COMMUNICATION] > 0);
    static CostProfile drawn;
    const double flops = cfg.cluster.gpu_flops;
    *worst = 0;
    for (int d = 0; d < 8; d++) {
        double fac[COST_GROUP_COUNT];
        for (int g = 0; g < COST_GROUP_COUNT; g++)
            fac[g] = g == COST_GROUP_FIXED ? 1 : costs_band_factor(p->uncertainty, d, g);
        costs_band_scaled(p, fac, &drawn);
        cfg.costs = &drawn;
        cfg.cluster.gpu_flops = flops / fac[COST_GROUP_COMPUTE]; /* resolved at setup */
        memset(&res, 0, sizeof res);
        assert_int_equal(driver_run(&cfg, &res, &err), BW_OK);
        truth[d] = res.time_to_accuracy_s;
        first[d] = costs_band_draw(p->uncertainty, d, tta, books);
        driver_result_free(&res);
        *worst = fmax(*worst, fabs(first[d] - truth[d]) / tta);
    }
    *spread = gsl_stats_sd(first, 1, 8) / gsl_stats_sd(truth, 1, 8);
    print_message("--overlap %s: tta %.6f s (books: compute %.4f, communication %.4f); first "
                  "order against 8 true re-pricings: worst %.2f%% of tta, spread ratio %.3f\n",
                  overlap, tta, books[COSTS_BOOK_COMPUTE], books[COSTS_BOOK_COMMUNICATION],
                  100 * *worst, *spread);
    cfg.costs = p;
    trace_free(&tr);
    run_flags_release(&f);
}

/* The honest check of the first-order band (issue 48): without overlap each book is on the
 * critical path and the first order is the re-pricing but for what the groups' factors do not
 * scale (the latency, a collective call's fixed cost): measured worst 0.10% of tta, spread ratio
 * 1.002. Under DDP's overlap the books are the exposed times, and how much of the compute and
 * communication is exposed moves with the draw: measured worst 2.48% of tta, spread ratio 0.923
 * (the first order's band about 8% narrow). Stated tolerances: 0.5% and 4% of tta; spreads
 * within 2% and 15%. */
static void test_the_first_order_band_agrees_with_replays_under_the_draws(void **state)
{
    (void)state;
    double worst, spread;
    first_order_against_replays("none", &worst, &spread);
    assert_true(worst < 0.005);
    assert_float_equal(spread, 1, 0.02);
    first_order_against_replays("ddp", &worst, &spread);
    assert_true(worst < 0.04);
    assert_float_equal(spread, 1, 0.15);
}

/* s without its lines that hold a or b. */
static void drop_lines(char *s, const char *a, const char *b)
{
    char *out = s;
    for (char *line = s; *line;) {
        char *end = strchr(line, '\n');
        size_t n = end ? (size_t)(end - line) + 1 : strlen(line);
        char keep[4096];
        snprintf(keep, sizeof keep, "%.*s", (int)n, line);
        if (!strstr(keep, a) && !strstr(keep, b)) {
            memmove(out, line, n);
            out += n;
        }
        line += n;
    }
    *out = '\0';
}

#define BENCH "bench --workload resnet50 --gpu V100 --workers 8 "
#define SWEEP_BAND                                                                                 \
    "sweep --workload resnet18-cifar --collectives analytic --epochs 2 --train-samples 1024 "      \
    "--test-samples 100 --workers 4 --policies sync,static:level=4 --seeds 1 --bandwidth "         \
    "1Gbps,10Gbps --target-accuracy 0.3 --quiet --no-plots "

/* bench and sweep under --cost-band: bench's step time and throughput with their band (within
 * the profile's stated range), its summary.json the off run's and the cost_band_* keys; a
 * sweep's speedup band beside each point's in the table and sweep_band.csv, its other files
 * those of --cost-band off (sweep.csv, the traces' names). */
static void test_bench_and_sweep_print_a_band_and_off_writes_as_before(void **state)
{
    (void)state;
    assert_int_equal(run(BENCH "--cost-band off --out %s/boff"), 0);
    char *out = read_tmp("out");
    assert_null(strstr(out, "cost band"));
    free(out);
    assert_int_equal(run(BENCH "--out %s/bon"), 0);
    out = read_tmp("out");
    const char *b = strstr(out, "cost band: ");
    double step, lo, hi, rate, rlo, rhi;
    assert_non_null(b);
    assert_int_equal(sscanf(b, "cost band: %lf s a step [%lf,%lf], %lf samples/s per GPU [%lf,%lf]",
                            &step, &lo, &hi, &rate, &rlo, &rhi),
                     6);
    assert_true(lo < step && step < hi && rlo < rate && rate < rhi);
    assert_true(hi / step - 1 < 0.171 + 1e-3 && 1 - lo / step < 0.171 + 1e-3); /* its range */
    assert_non_null(strstr(out, "bellows costs pytorch-v100"));
    free(out);
    char *son = read_tmp("bon/summary.json"), *soff = read_tmp("boff/summary.json");
    assert_non_null(strstr(son, "\"cost_band_draws\": 32"));
    double slo = NAN; /* the printed band's lower end, to its 4 digits */
    const char *k = strstr(son, "\"cost_band_step_low_s\": ");
    assert_non_null(k);
    assert_int_equal(sscanf(k, "\"cost_band_step_low_s\": %lf", &slo), 1);
    assert_float_equal(slo, lo, 5e-4 * lo);
    drop_lines(son, "\"cost_band_", "\"wall");
    drop_lines(soff, "\"cost_band_", "\"wall");
    assert_string_equal(son, soff);
    free(son);
    free(soff);
    /* sweep */
    assert_int_equal(run(SWEEP_BAND "--cost-band off --out %s/soff"), 0);
    out = read_tmp("out");
    assert_null(strstr(out, "seeds+costs"));
    free(out);
    assert_int_equal(run(SWEEP_BAND "--cost-band 16 --out %s/son"), 0);
    out = read_tmp("out");
    assert_non_null(strstr(out, "95% CI: seeds; seeds+costs"));
    free(out);
    char path[256];
    snprintf(path, sizeof path, "%s/soff/sweep_band.csv", TMP);
    assert_int_not_equal(access(path, F_OK), 0); /* off: no file of the band */
    char *band = read_tmp("son/sweep_band.csv");
    const char *row = "10Gbps,\"static:level=4\",";
    double sp = field_at(band, row, 2), blo = field_at(band, row, 5), bhi = field_at(band, row, 6);
    double tta = field_at(band, row, 7), tlo = field_at(band, row, 8), thi = field_at(band, row, 9);
    assert_true(blo < sp && sp < bhi && tlo < tta && tta < thi && field_at(band, row, 10) == 16);
    free(band);
    char *a = read_tmp("son/sweep.csv"), *c = read_tmp("soff/sweep.csv");
    assert_string_equal(a, c);
    free(a);
    free(c);
    char cmd[512]; /* the traces' names: --cost-band is not in a run's command line */
    snprintf(cmd, sizeof cmd, "cd %s && diff <(ls son/traces) <(ls soff/traces) >/dev/null", TMP);
    char sh[600];
    snprintf(sh, sizeof sh, "bash -c '%s'", cmd);
    assert_int_equal(system(sh), 0);
}

int main(int argc, char **argv)
{
    if (argc > 1) cmocka_set_test_filter(argv[1]); /* run one test alone */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_an_exploding_run_is_diverged_and_exits_1),
        cmocka_unit_test(test_compare_gives_a_diverged_run_no_speedup_and_plots_any_folder),
        cmocka_unit_test(test_the_heatmap_grid_marks_cells_without_a_speedup),
        cmocka_unit_test(test_a_mixed_platform_says_whose_figures_the_summary_gives),
        cmocka_unit_test(test_the_blas_kernels_are_pinned),
        cmocka_unit_test(test_islands_tables_show_the_wan_bytes),
        cmocka_unit_test(test_adpsgd_lengthens_its_period_on_the_real_mlp),
        cmocka_unit_test(test_a_cost_band_is_beside_the_seeds_and_off_is_as_before),
        cmocka_unit_test(test_the_first_order_band_agrees_with_replays_under_the_draws),
        cmocka_unit_test(test_bench_and_sweep_print_a_band_and_off_writes_as_before),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
