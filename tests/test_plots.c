/* test_plots.c: the figures say what they are and show every curve: compare's time breakdown is
 * drawn to the target (time_breakdown.csv adds up to the table's tta_s), equal curves stay
 * visible (each line drawn over another is narrower by a pixel or more), the schedule's panels
 * share their x-axis and leave out what a gradient policy never changes, and the sweep's heatmap
 * draws the table's speedup, the mean over the seeds; on islands the bytes drawn are the WAN's.
 * Checked in the data and the SVG files
 * that gnuplot writes; skipped without gnuplot. Short runs: a few seconds in all. */
#include "testutil.h"

#include "clitest.h"

#define SMALL                                                                                      \
    "--train-samples 2048 --test-samples 300 --epochs 2 --workers 2 --batch 16 --quiet "           \
    "--collectives analytic --target-accuracy 0.7 " CLITEST_DATA

static int no_gnuplot(void)
{
    if (system("gnuplot --version >/dev/null 2>&1") == 0) return 0;
    printf("gnuplot not found: skipped\n");
    return 1;
}

static char *must(const char *name)
{
    char *text = tmp_file(name);
    if (!text) fail_msg("%s/%s missing", TMP, name);
    return text;
}

/* The stroke width of gnuplot's plot element k (1-based) in an SVG: its key sample's line. */
static double plot_width(const char *svg, int k)
{
    char id[64];
    snprintf(id, sizeof id, "id=\"gnuplot_plot_%d\"", k);
    const char *at = strstr(svg, id);
    if (!at) { /* in a multiplot, the first panel's: "gnuplot_plot_1a" */
        snprintf(id, sizeof id, "id=\"gnuplot_plot_%da\"", k);
        at = strstr(svg, id);
    }
    if (!at) fail_msg("no %s", id);
    at = strstr(at, "stroke-width=\"");
    if (!at) fail_msg("%s: no stroke-width", id);
    return strtod(at + strlen("stroke-width=\""), NULL);
}

/* compare's time breakdown stops at each policy's time to accuracy: its four books add up to
 * compare.csv's time_to_accuracy_s (mean over the seeds), and the title says so. */
static void test_time_breakdown_is_drawn_up_to_the_target(void **state)
{
    (void)state;
    if (no_gnuplot()) return;
    assert_int_equal(bw("compare " SMALL
                        " --policies sync,static:level=1,static:level=4 --seeds 1,2 "
                        "--out @/c"),
                     0);
    char *tb = must("c/time_breakdown.csv"), *csv = must("c/compare.csv");
    const char *rows[][2] = {{"sync,", "\"sync\""},
                             {"static:level=1,", "\"static:level=1\""},
                             {"static:level=4,", "\"static:level=4\""}};
    for (int k = 0; k < 3; k++) {
        assert_int_equal((int)csv_num_at(tb, rows[k][0], 1), 2); /* both seeds reached it */
        double books = 0, tta = csv_num_at(csv, rows[k][1], 5),
               whole = csv_num_at(csv, rows[k][1], 9);
        for (int c = 3; c < 7; c++) books += csv_num_at(tb, rows[k][0], c);
        if (fabs(books - tta) > 1e-7 * tta)
            fail_msg("%s: books %.9g, tta %.9g", rows[k][0], books, tta);
        assert_true(books < whole); /* not the whole run */
    }
    char *svg = must("c/time_breakdown.svg");
    assert_non_null(strstr(svg, "up to test accuracy 0.700, the table's tta_s"));
    free(tb);
    free(csv);
    free(svg);
}

/* Each curve is drawn over the one before it at least 1 px narrower, so an equal curve under it
 * shows on both sides (static:level=2 under accordion's identical one). */
static void test_equal_curves_stay_visible(void **state)
{
    (void)state;
    if (no_gnuplot()) return;
    assert_int_equal(bw("compare " SMALL " --policies sync,static:level=1,static:level=2,accordion "
                        "--seeds 1 --out @/eq"),
                     0);
    const char *files[] = {"eq/bytes_vs_time.svg", "eq/accuracy_vs_time.svg",
                           "eq/accuracy_vs_bytes.svg"};
    for (int f = 0; f < 3; f++) {
        char *svg = must(files[f]);
        for (int k = 1; k < 4; k++)
            if (plot_width(svg, k) - plot_width(svg, k + 1) < 1.0)
                fail_msg("%s: curve %d (%.2f px) hardly wider than %d (%.2f px)", files[f], k,
                         plot_width(svg, k), k + 1, plot_width(svg, k + 1));
        free(svg);
    }
}

/* Whether tag (from '<' to its '>') holds word. */
static int tag_has(const char *tag, const char *end, const char *word)
{
    const char *w = strstr(tag, word);
    return w && w < end;
}

/* The x-tic labels of an SVG's panels (a number in a "<g transform="translate(X,Y)" ...
 * text-anchor="middle">", one row Y a panel) must sit at the same x in every panel as in the
 * first. Returns the panels. */
static int panels_aligned(const char *svg)
{
    double first[64], y = -1;
    int n_first = 0, n = 0, rows = 0;
    for (const char *at = svg; (at = strstr(at, "<g transform=\"translate(")) != NULL; at++) {
        const char *end = strchr(at, '>'), *text = end ? strstr(end, "<text>") : NULL;
        if (!text || !tag_has(at, end, "text-anchor=\"middle\"") || tag_has(at, end, "rotate"))
            continue;
        char *p;
        strtod(text + 6, &p);
        if (p == text + 6) continue; /* not a number: a title or a label */
        double x = strtod(at + strlen("<g transform=\"translate("), &p), yy = strtod(p + 1, NULL);
        if (yy != y) {
            if (rows > 1 && n != n_first)
                fail_msg("panel %d: %d tics, the first %d", rows, n, n_first);
            y = yy;
            rows++;
            n = 0;
        }
        if (rows == 1 && n_first < 64)
            first[n_first++] = x;
        else if (rows > 1 && (n >= n_first || fabs(first[n] - x) > 0.01))
            fail_msg("panel %d's tic %d at x %.2f, the first panel's at %.2f", rows, n, x,
                     n < n_first ? first[n] : -1.0);
        n++;
    }
    if (rows > 1 && n != n_first) fail_msg("panel %d: %d tics, the first %d", rows, n, n_first);
    return rows;
}

/* The schedule's panels share one x-axis (the key beside the first narrowed it), and leave
 * out the averaging period and the global batch where no run changes them. */
static void test_schedule_panels_align_and_show_what_changes(void **state)
{
    (void)state;
    if (no_gnuplot()) return;
    assert_int_equal(bw("compare " SMALL " --policies sync,static:level=1 --seeds 1 --out @/g"), 0);
    char *svg = must("g/schedule.svg");
    assert_null(strstr(svg, "averaging period"));
    assert_null(strstr(svg, "global batch"));
    free(svg);
    assert_int_equal(bw("plot @/g/seed-1/2-static-level-1"), 0); /* a run's own plots */
    svg = must("g/seed-1/2-static-level-1/schedule.svg");
    assert_null(strstr(svg, "averaging period"));
    free(svg);
    assert_int_equal(bw("compare " SMALL " --policies sync,postlocal --seeds 1 --out @/p"), 0);
    svg = must("p/schedule.svg");
    assert_non_null(strstr(svg, "averaging period"));
    assert_int_equal(panels_aligned(svg), 2);
    free(svg);
    assert_int_equal(bw("plot @/p/seed-1/2-postlocal"), 0);
    svg = must("p/seed-1/2-postlocal/schedule.svg");
    assert_non_null(strstr(svg, "averaging period"));
    assert_int_equal(panels_aligned(svg), 2);
    free(svg);
}

/* The heatmap's cell is the table's speedup (the mean over the seeds of the paired speedups),
 * not the first seed's, and its title says so. */
static void test_heatmap_draws_the_mean_over_seeds(void **state)
{
    (void)state;
    if (no_gnuplot()) return;
    assert_int_equal(bw("sweep --train-samples 1024 --test-samples 200 --epochs 1 --workers 2 "
                        "--batch 16 --quiet --collectives analytic --policies sync,static:level=2 "
                        "--seeds 1,2 --bandwidth 1Gbps,10Gbps --latency 1us,5us "
                        "--target-accuracy 0.6 --out @/sw"),
                     0);
    char *grid = must("sw/speedup_grid.dat"), *csv = must("sw/sweep.csv");
    assert_non_null(strstr(grid, "# seeds 2\n"));
    const char *cell = strstr(grid, "\n0 0 ");
    assert_non_null(cell);
    double drawn = pow(2, strtod(cell + 5, NULL));
    double s1 = csv_num_at(csv, "1Gbps,1us,1,static:level=2,", 9),
           s2 = csv_num_at(csv, "1Gbps,1us,2,static:level=2,", 9);
    if (fabs(drawn - (s1 + s2) / 2) > 1e-4 * drawn)
        fail_msg("the cell draws %.6g; the seeds' speedups are %.6g and %.6g", drawn, s1, s2);
    assert_true(fabs(s1 - s2) > 1e-3); /* the seeds differ: the first alone would not do */
    char *svg = must("sw/speedup_heatmap.svg");
    assert_non_null(strstr(svg, "mean over 2 seeds, paired by seed, as in the table"));
    free(grid);
    free(csv);
    free(svg);
}

/* The last field of text's last line (a CSV's last row). */
static double last_field(const char *text)
{
    const char *end = text + strlen(text);
    while (end > text && end[-1] == '\n') end--;
    const char *p = end;
    while (p > text && p[-1] != ',' && p[-1] != '\n') p--;
    return strtod(p, NULL);
}

/* On islands (issue 49 item 33) steps.csv and evals.csv end in wan_bytes, the WAN's bytes so
 * far, the last row's summary.json's wan_bytes (the step's row stamped once every rank has
 * counted its share, not when rank 0 finished), and the plots draw it and say so: DiLoCo's
 * ring inside each island is most of rank 0's bytes, which the plots drew before. */
static void test_islands_plots_draw_the_wan_bytes(void **state)
{
    (void)state;
    if (no_gnuplot()) return;
    assert_int_equal(bw("compare --topology islands --islands 2 --workers 4 --collectives analytic "
                        "--policies sync,diloco:H=4 --seeds 1 --epochs 1 --train-samples 512 "
                        "--test-samples 100 --batch 32 --quiet --cost-band off --out @/isl"),
                     0);
    char *steps = must("isl/seed-1/2-diloco-H-4/steps.csv"),
         *evals = must("isl/seed-1/2-diloco-H-4/evals.csv"),
         *sum = must("isl/seed-1/2-diloco-H-4/summary.json");
    assert_non_null(strstr(steps, ",policy_state,wan_bytes\n"));
    assert_non_null(strstr(evals, ",policy_state,wan_bytes\n"));
    const char *at = strstr(sum, "\"wan_bytes\": ");
    assert_non_null(at);
    const double wan = strtod(at + strlen("\"wan_bytes\": "), NULL);
    assert_true(wan > 0);
    if (last_field(steps) != wan || last_field(evals) != wan)
        fail_msg("last rows' wan_bytes %.17g (steps), %.17g (evals); summary %.17g",
                 last_field(steps), last_field(evals), wan);
    free(steps);
    free(evals);
    free(sum);
    const char *svgs[][2] = {
        {"isl/bytes_vs_time.svg", "Cumulative WAN bytes (all ranks) against"},
        {"isl/accuracy_vs_bytes.svg", "Test accuracy against WAN bytes"},
        {"isl/seed-1/2-diloco-H-4/bytes_vs_time.svg", "WAN bytes (all ranks)"}};
    assert_int_equal(bw("plot @/isl/seed-1/2-diloco-H-4"), 0); /* a run's own plots */
    for (int k = 0; k < 3; k++) {
        char *svg = must(svgs[k][0]);
        if (!strstr(svg, svgs[k][1]) || strstr(svg, "rank 0"))
            fail_msg("%s does not draw the WAN's bytes", svgs[k][0]);
        free(svg);
    }
    /* off islands, the files and plots keep rank 0's bytes */
    assert_int_equal(bw("compare --workers 2 --collectives analytic --policies sync --seeds 1 "
                        "--epochs 1 --train-samples 256 --test-samples 64 --batch 32 --quiet "
                        "--cost-band off --out @/flat"),
                     0);
    steps = must("flat/seed-1/1-sync/steps.csv");
    assert_null(strstr(steps, "wan_bytes"));
    free(steps);
    char *svg = must("flat/bytes_vs_time.svg");
    assert_non_null(strstr(svg, "bytes sent by rank 0"));
    assert_null(strstr(svg, "WAN"));
    free(svg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_time_breakdown_is_drawn_up_to_the_target),
        cmocka_unit_test(test_equal_curves_stay_visible),
        cmocka_unit_test(test_schedule_panels_align_and_show_what_changes),
        cmocka_unit_test(test_heatmap_draws_the_mean_over_seeds),
        cmocka_unit_test(test_islands_plots_draw_the_wan_bytes),
    };
    return cmocka_run_group_tests(tests, clitest_setup_data, clitest_teardown);
}
