/* cmd_plot.c: `bellows plot DIR`, the plots of whatever DIR holds: a sweep (its speedup
 * heatmap), a compare folder (accuracy, bytes, time breakdown and schedules of its runs), one
 * run (accuracy, bytes, time per step and schedule) or a cluster folder (each job's accuracy on
 * the cluster's clock, the busiest links' use; with --set, every point's), as PNG and SVG beside
 * the results. It reads the result files only. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plots.h"
#include "commands.h"

#define MAX_RUNS 64

static int exists(const char *dir, const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return access(path, R_OK) == 0;
}

/* The target accuracy a run was measured against, from its summary.json (0 if none). */
static double target_of(const char *run_dir)
{
    char path[4096], line[1024];
    snprintf(path, sizeof path, "%s/summary.json", run_dir);
    FILE *f = fopen(path, "r");
    double t = 0;
    while (f && fgets(line, sizeof line, f)) {
        const char *p = strstr(line, "\"target_accuracy\": ");
        if (p) t = strtod(p + strlen("\"target_accuracy\": "), NULL);
    }
    if (f) fclose(f);
    return t;
}

static int plot_compare(const char *dir, BwError *err)
{
    char path[4096], line[4096];
    snprintf(path, sizeof path, "%s/compare.csv", dir);
    FILE *f = fopen(path, "r");
    if (!f) return bw_fail(err, BW_EUSAGE, "plot: cannot read %s", path);
    char labels[MAX_RUNS][512], folders[MAX_RUNS][512];
    const char *lp[MAX_RUNS], *fp[MAX_RUNS];
    int n = 0, lineno = 0, band = 0;
    while (fgets(line, sizeof line, f) && n < MAX_RUNS) {
        if (lineno++ == 0) { /* compare --cost-band's columns: compare.gp draws speedup_band */
            band = strstr(line, ",speedup_band_low,") != NULL;
            continue;
        }
        /* "policy",folder,... (the policy is quoted, the folder is not) */
        char *q = line[0] == '"' ? strchr(line + 1, '"') : NULL;
        char *comma = q ? strchr(q, ',') : NULL;
        char *end = comma ? strchr(comma + 1, ',') : NULL;
        if (!q || !comma || !end) {
            fclose(f);
            return bw_fail(err, BW_EUSAGE, "plot: %s line %d: not a compare row", path, lineno);
        }
        snprintf(labels[n], sizeof labels[n], "%.*s", (int)(q - line - 1), line + 1);
        snprintf(folders[n], sizeof folders[n], "%.*s", (int)(end - comma - 1), comma + 1);
        lp[n] = labels[n];
        fp[n] = folders[n];
        n++;
    }
    fclose(f);
    if (n == 0) return bw_fail(err, BW_EUSAGE, "plot: %s has no runs", path);
    char first[4096];
    snprintf(first, sizeof first, "%s/%s", dir, folders[0]);
    int rc = plots_compare(dir, fp, lp, n, target_of(first), err);
    if (!rc)
        printf("# plots in %s: accuracy_vs_time, accuracy_vs_bytes, bytes_vs_time, "
               "time_breakdown, %sschedule (.png and .svg)\n",
               dir, band ? "speedup_band, " : "");
    return rc;
}

static int plot_sweep(const char *dir, BwError *err)
{
    if (!exists(dir, "speedup_grid.dat"))
        return bw_fail(err, BW_EUSAGE,
                       "plot: %s has no speedup_grid.dat: the heatmap needs --bandwidth and "
                       "--latency both swept",
                       dir);
    int rc = plots_sweep(dir, err);
    if (!rc) printf("# plots in %s: speedup_heatmap (.png and .svg)\n", dir);
    return rc;
}

/* A cluster folder, or with --set each point of one (DIR/points/NAME/cluster.json), in name
 * order. */
static int plot_cluster(const char *dir, BwError *err)
{
    if (exists(dir, "cluster.json")) {
        int rc = plots_cluster(dir, err);
        if (!rc)
            printf("# plots in %s: jobs_accuracy_vs_time, links_utilisation (.png and .svg)\n",
                   dir);
        return rc;
    }
    char points[1024];
    snprintf(points, sizeof points, "%s/points", dir);
    struct dirent **names;
    int n = scandir(points, &names, NULL, alphasort), rc = BW_OK, done = 0;
    for (int i = 0; i < n; i++) {
        char point[2048];
        snprintf(point, sizeof point, "%s/%s", points, names[i]->d_name);
        if (!rc && names[i]->d_name[0] != '.' && exists(point, "cluster.json")) {
            rc = plot_cluster(point, err);
            done++;
        }
        free(names[i]);
    }
    if (n >= 0) free(names);
    if (!rc && !done) rc = bw_fail(err, BW_EUSAGE, "plot: %s/points holds no cluster folder", dir);
    return rc;
}

int cmd_plot(int argc, char **argv, BwError *err)
{
    if (argc == 1 && (strcmp(argv[0], "--help") == 0 || strcmp(argv[0], "-h") == 0)) {
        printf("usage: bellows plot DIR\n\nDraws the plots of a result folder with gnuplot, as "
               "PNG and SVG beside the results:\n  a sweep (sweep.csv): the speedup heatmap "
               "over bandwidth x latency, one panel per policy;\n  a compare folder "
               "(compare.csv): accuracy against simulated time (target marked) and bytes,\n"
               "    cumulative bytes against time, the time breakdown, each policy's schedule;\n"
               "  a run (summary.json): accuracy against time, bytes against time, the time of "
               "each step,\n    the schedule (mean compression level, period, batch);\n"
               "  a cluster folder (cluster.json, or a bellows cluster --set folder's points): "
               "each job's\n    accuracy on the cluster's clock beside its run alone, the "
               "busiest links' utilisation.\n");
        return BW_OK;
    }
    int rc = BW_OK;
    if (argc != 1 || argv[0][0] == '-')
        rc = bw_fail(err, BW_EUSAGE, "plot: expected one result folder (bellows plot DIR)");
    const char *dir = argc ? argv[0] : "";
    if (!rc && !plots_available())
        rc = bw_fail(err, BW_ERUNTIME, "plot: gnuplot not found (scripts/setup.sh installs it)");
    if (!rc) {
        if (exists(dir, "cluster.json") || (exists(dir, "sweep.csv") && exists(dir, "points")))
            rc = plot_cluster(dir, err);
        else if (exists(dir, "sweep.csv"))
            rc = plot_sweep(dir, err);
        else if (exists(dir, "compare.csv"))
            rc = plot_compare(dir, err);
        else if (exists(dir, "summary.json") && exists(dir, "steps.csv")) {
            rc = plots_run(dir, target_of(dir), err);
            if (!rc)
                printf("# plots in %s: accuracy_vs_time, bytes_vs_time, time_per_step, "
                       "schedule (.png and .svg)\n",
                       dir);
        } else
            rc = bw_fail(err, BW_EUSAGE,
                         "plot: %s holds no results (sweep.csv, compare.csv, cluster.json or "
                         "a run's summary.json and steps.csv)",
                         dir);
    }
    return rc;
}
