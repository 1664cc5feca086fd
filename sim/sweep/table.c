/* table.c: what a finished sweep shows: the table of every point and policy (mean time to
 * accuracy over the seeds, speedup and bytes against the baseline), speedup_grid.dat and its
 * heatmap when bandwidth and latency are both swept, and each point's curves. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_statistics_double.h>

#include "csv.h"
#include "outfile.h"
#include "plots.h"
#include "sweep_impl.h"

/* One policy at one point, over the seeds that finished. */
typedef struct {
    int done; /* finished runs */
    int n;    /* of which reached the target: tta[0..n-1] */
    double tta[CLI_LIST_MAX];
    double by_seed[CLI_LIST_MAX]; /* each seed's tta for speedups (NAN: not reached, not run,
                                     failed or diverged) */
    double bytes, final;          /* sums over the finished runs */
    double res;                   /* the worst tta resolution over the finished runs (s) */
} Cell;

static Cell cell_of(const Sweep *s, long p, int k)
{
    Cell c;
    memset(&c, 0, sizeof c);
    c.res = NAN;
    for (int i = 0; i < s->n_seeds; i++) {
        const Run *run = &s->runs[(p * s->n_seeds + i) * s->n_policies + k];
        c.by_seed[i] = NAN;
        if (!run->done) continue;
        c.done++;
        c.bytes += run->row.bytes;
        c.final += run->row.final;
        if (isfinite(run->row.tta)) c.tta[c.n++] = run->row.tta;
        /* a diverged run's time to accuracy gives no speedup (as in sweep.csv and compare) */
        if (isfinite(run->row.tta) && strcmp(run->row.status, "diverged") != 0)
            c.by_seed[i] = run->row.tta;
        if (isfinite(run->row.tta_res) && run->row.tta_res > 0)
            c.res = fmax(c.res, run->row.tta_res);
    }
    return c;
}

/* Mean time to accuracy, if every seed reached it. */
static double cell_mean_tta(const Sweep *s, const Cell *c)
{
    return c->n == s->n_seeds && c->n > 0 ? gsl_stats_mean(c->tta, 1, (size_t)c->n) : NAN;
}

/* The speedup against the baseline, paired by seed: geometric mean and 95% interval on the log
 * scale (NAN unless every seed of both reached the target). */
static void cell_speedup(const Sweep *s, const Cell *c, const Cell *base, double *mean, double *lo,
                         double *hi)
{
    double sp[CLI_LIST_MAX];
    *mean = *lo = *hi = NAN;
    if (runner_paired_speedups(base->by_seed, c->by_seed, s->n_seeds, sp) == s->n_seeds)
        runner_speedup_ci(sp, s->n_seeds, mean, lo, hi);
}

/* Whether the point's fastest row (best) is told apart from every other row that reached the
 * target at every seed: the paired interval of the other's tta over best's lies above 1. A row
 * that did not reach it at every seed is slower. Else the first row it is not told apart from
 * goes into *with (-1: too few seeds for any interval). */
static int told_apart(const Sweep *s, const Cell *cells, const double *mean_tta, int best,
                      int *with)
{
    for (int k = 0; k < s->n_policies; k++) {
        if (k == best || !isfinite(mean_tta[k])) continue;
        double m, lo, hi;
        cell_speedup(s, &cells[best], &cells[k], &m, &lo, &hi);
        if (!(lo > 1)) {
            *with = s->n_seeds < 2 ? -1 : k;
            return 0;
        }
    }
    return 1;
}

/* Whether the table has the band's column: --cost-band on and a point whose profile states an
 * uncertainty. */
static int has_band(const Sweep *s)
{
    for (long p = 0; s->band_r && p < s->n_points; p++)
        if (s->band_on[p]) return 1;
    return 0;
}

/* The CI column under --cost-band: "[lo,hi] [lo,hi]" (seeds; seeds and costs), "~" when the
 * second contains 1, as compare's (compare_table.c). */
static void band_column(const Sweep *s, long p, int k, double speed, const char *ci, char *out,
                        size_t n)
{
    double band[SWEEP_BAND_FIGURES];
    char sp[32], both[48] = "";
    sweep_band_of(s, p, k, band);
    const double blo = band[0], bhi = band[1];
    runner_format_speedup(speed, blo, bhi, sp, sizeof sp, both, sizeof both);
    int ns = isfinite(blo) && blo <= 1 && bhi >= 1;
    snprintf(out, n, "%s%s%s%s", ci, *both ? " " : "", both, ns ? "~" : "");
}

static void print_cell(const Sweep *s, long p, const Cell *c, int k, const char *label,
                       double mean_tta, const Cell *base, double bytes_ratio, const char *fastest)
{
    char t[32] = "-", sd[32] = "", sp[32], ci[48], br[32] = "-", fn[32] = "-";
    if (!c->done)
        snprintf(t, sizeof t, "(not run)");
    else if (c->done < s->n_seeds)
        snprintf(t, sizeof t, "(%d/%d run)", c->done, s->n_seeds);
    else if (isfinite(mean_tta))
        snprintf(t, sizeof t, "%.4f", mean_tta);
    else if (c->n)
        snprintf(t, sizeof t, "%d/%d seeds", c->n, s->n_seeds);
    else
        snprintf(t, sizeof t, "not reached");
    if (c->n > 1) snprintf(sd, sizeof sd, "%.4f", gsl_stats_sd(c->tta, 1, (size_t)c->n));
    double speed, lo, hi;
    cell_speedup(s, c, base, &speed, &lo, &hi);
    if (k == s->baseline) lo = hi = NAN; /* 1 against itself */
    runner_format_speedup(speed, lo, hi, sp, sizeof sp, ci, sizeof ci);
    if (isfinite(bytes_ratio)) snprintf(br, sizeof br, "%.3fx", bytes_ratio);
    if (c->done) snprintf(fn, sizeof fn, "%.4f", c->final / c->done);
    /* a spec wider than its column (a plugin's path) goes on a line of its own */
    const char *name = strlen(s->policies[k]) > 30 ? "" : s->policies[k];
    if (!*name) printf("%-40s %s\n", k == 0 ? label : "", s->policies[k]);
    char wide[112];
    if (has_band(s)) band_column(s, p, k, speed, ci, wide, sizeof wide);
    printf("%-40s %-30s %12s %9s %8s %*s %8s %8s%s\n", k == 0 && *name ? label : "", name, t, sd,
           sp, has_band(s) ? 29 : 13, has_band(s) ? wide : ci, br, fn, fastest);
}

/* The rows of one point, one per policy. "fastest" only when this folder holds every run of
 * the point (a shard's table does not rank the runs another shard ran). Returns the worst tta
 * resolution at the point as a share of the baseline's mean tta (NAN: none known). */
static double print_point(const Sweep *s, long p)
{
    char label[1024];
    sweep_point_label(s, p, label, sizeof label);
    Cell cells[SWEEP_MAX_POLICIES];
    double mean_tta[SWEEP_MAX_POLICIES], mean_bytes[SWEEP_MAX_POLICIES];
    int best = -1, complete = 1;
    for (int k = 0; k < s->n_policies; k++) {
        cells[k] = cell_of(s, p, k);
        complete = complete && cells[k].done == s->n_seeds;
        mean_tta[k] = cell_mean_tta(s, &cells[k]);
        mean_bytes[k] = cells[k].done ? cells[k].bytes / cells[k].done : NAN;
        if (isfinite(mean_tta[k]) && (best < 0 || mean_tta[k] < mean_tta[best])) best = k;
    }
    double worst = NAN;
    const Cell *base = &cells[s->baseline];
    char fastest[SPEC_MAX_TEXT + 64] = "  <- fastest";
    int with;
    if (complete && best >= 0 && !told_apart(s, cells, mean_tta, best, &with))
        snprintf(fastest, sizeof fastest, "  <- fastest, not told apart %s%s",
                 with < 0 ? "(too few seeds)" : "from ", with < 0 ? "" : s->policies[with]);
    for (int k = 0; k < s->n_policies; k++) {
        /* with --stop-at-target, bytes to the target: both must have reached it every seed */
        int whole = s->f.run.stop_at_target && (cells[k].n < s->n_seeds || base->n < s->n_seeds);
        print_cell(s, p, &cells[k], k, label, mean_tta[k], base,
                   whole ? NAN : mean_bytes[k] / mean_bytes[s->baseline],
                   complete && k == best ? fastest : "");
        worst = fmax(worst, cells[k].res / mean_tta[s->baseline]);
    }
    return worst;
}

void sweep_print_table(const Sweep *s)
{
    printf("\n%-40s %-30s %12s %9s %8s %*s %8s %8s\n", "scenario", "policy", "tta_s", "+-sd",
           "speedup", has_band(s) ? 29 : 13, has_band(s) ? "95% CI: seeds; seeds+costs" : "95% CI",
           "bytes", "final");
    double worst = NAN;
    int incomplete = 0;
    for (long p = 0; p < s->n_points; p++) worst = fmax(worst, print_point(s, p));
    for (long r = 0; r < s->n_runs; r++) incomplete += !s->runs[r].done;
    char target[64];
    if (sweep_axis_index(s, "target-accuracy") >= 0)
        snprintf(target, sizeof target, "each point's --target-accuracy");
    else
        snprintf(target, sizeof target, "accuracy %.4f", s->target);
    printf("\ntta_s: mean simulated seconds to %s over %d seed(s); speedup: against %s, seed by\n"
           "seed, their geometric mean; 95%% CI: Student's t interval on the log of the ratio (2 "
           "seeds or\nmore); ~: it contains 1 (not told apart); fastest: the least mean tta, \"not "
           "told apart\"\nwhere a paired interval against another row's contains 1 (or there are "
           "too few seeds);\n%s against %s%s.",
           target, s->n_seeds, s->policies[s->baseline],
           s->islands ? "bytes: the WAN's (between islands)" : "bytes", s->policies[s->baseline],
           s->f.run.stop_at_target ? ", up to the target (--stop-at-target; '-' where a seed of "
                                     "either did not\nreach it: its bytes are a whole run's)"
                                   : "");
    if (isfinite(worst))
        printf(" tta resolution (time between the evaluations around the target): at worst\n"
               "%.1f%% of the baseline's tta%s.",
               100 * worst,
               worst <= 0.02 ? ""
               : s->replay ? " (above 2%: the trace's evaluations set it; record the trace with a "
                             "smaller --eval-every)"
                           : " (above 2%: a smaller --eval-every sharpens it)");
    printf("\n");
    if (has_band(s))
        printf("seeds+costs: the speedup's 95%% band over the seeds and %d seeded draws of each "
               "point's cost\nprofile's constants, each group within the range it states "
               "(bellows costs NAME), re-priced\nfirst-order from each run's books to the target "
               "(compute, compression and communication\nscaled, overlap held); ~: it contains 1. "
               "Also in sweep_band.csv.\n",
               s->band_k);
    if (incomplete)
        printf("%d of the sweep's %ld runs are not in this folder (another shard's, or failed): "
               "their rows say\n(not run), and no point missing a run is ranked \"fastest\".\n",
               incomplete, s->n_runs);
}

/* Run's (policy k, one seed, at one point) speedup over the baseline in x (returns 1), or in
 * why a word for a heatmap cell without one (returns 0). */
static int grid_speedup(const Sweep *s, const Run *run, double *x, char *why, size_t n)
{
    const Run *base = run - run->policy_i + s->baseline;
    const char *w = NULL;
    if (!run->done)
        w = "not run";
    else if (run->row.rc != BW_OK)
        w = "failed";
    else if (strcmp(run->row.status, "diverged") == 0)
        w = "diverged";
    else if (!base->done || base->row.rc != BW_OK)
        w = "no baseline";
    else if (strcmp(base->row.status, "diverged") == 0)
        w = "baseline diverged";
    else if (!isfinite(run->row.tta))
        w = "not reached";
    else if (!isfinite(base->row.tta))
        w = "baseline not reached";
    if (w) {
        snprintf(why, n, "%s", w);
        return 0;
    }
    *x = base->row.tta / run->row.tta;
    return 1;
}

/* The row of point p in the grid of axes ax (x) and ay (y), for one policy k; none for the
 * points whose other axes are not at their first value. */
static void grid_row(const Sweep *s, FILE *f, long p, int k, int ax, int ay)
{
    long rest = p;
    int vi[SWEEP_MAX_AXES];
    for (int a = s->n_axes - 1; a >= 0; a--) {
        vi[a] = (int)(rest % s->axes[a].n);
        rest /= s->axes[a].n;
    }
    for (int a = 0; a < s->n_axes; a++)
        if (a != ax && a != ay && vi[a] != 0) return;
    const char *x = s->axes[ax].value[vi[ax]], *y = s->axes[ay].value[vi[ay]];
    double speed, lo, hi;
    char why[32] = "";
    for (int i = 0; i < s->n_seeds && !why[0]; i++) /* the first seed without a speedup says why */
        grid_speedup(s, &s->runs[(p * s->n_seeds + i) * s->n_policies + k], &speed, why,
                     sizeof why);
    Cell c = cell_of(s, p, k), base = cell_of(s, p, s->baseline);
    cell_speedup(s, &c, &base, &speed, &lo, &hi); /* the table's: over the seeds */
    if (!why[0] && isfinite(speed) && speed > 0)
        fprintf(f, "%d %d %.6f %s %s \"%.3gx\"\n", vi[ax], vi[ay], log2(speed), x, y, speed);
    else
        fprintf(f, "%d %d - %s %s \"%s\"\n", vi[ax], vi[ay], x, y, why[0] ? why : "no speedup");
}

/* speedup_grid.dat for the heatmap (plots/sweep.gp): a header naming the baseline and the
 * seeds, then one block per other policy (the baseline's speedup is 1 by definition) over the
 * bandwidth and latency axes (other axes at their first value), each cell the table's speedup:
 * over the seeds, paired by seed; plots/plots.h documents it. */
static int write_grid(const Sweep *s, int ax, int ay, BwError *err)
{
    OutFile of;
    int rc = outfile_open(&of, s->out, "speedup_grid.dat", err);
    if (rc) return rc;
    fprintf(of.f,
            "# speedup_grid.dat: bellows sweep's heatmap, drawn by plots/sweep.gp\n"
            "# columns: x_index y_index log2_speedup %s %s label "
            "(log2_speedup \"-\": no speedup, label says why)\n"
            "# baseline %s\n# seeds %d\n",
            s->axes[ax].name, s->axes[ay].name, s->policies[s->baseline], s->n_seeds);
    for (int k = 0; k < s->n_policies; k++) {
        if (k == s->baseline) continue;
        fprintf(of.f, "# policy %s\n", s->policies[k]);
        for (long p = 0; p < s->n_points; p++) grid_row(s, of.f, p, k, ax, ay);
        fputs("\n\n", of.f);
    }
    return outfile_commit(&of, err);
}

/* The curves of point p (first seed), one line per finished policy, in its folder
 * runs/<point>/seed-S/. Returns 1 if drawn, 0 if nothing finished there, -1 on error. */
static int point_curve(const Sweep *s, long p)
{
    char first[4096], dir[8192];
    sweep_run_folder(s, p * s->n_seeds * s->n_policies, first, sizeof first);
    *strrchr(first, '/') = '\0';
    snprintf(dir, sizeof dir, "%s/%s", s->out, first);
    char folders[SWEEP_MAX_POLICIES][SPEC_MAX_TEXT + 8];
    const char *runs[SWEEP_MAX_POLICIES], *labels[SWEEP_MAX_POLICIES];
    int n = 0;
    for (int k = 0; k < s->n_policies; k++) {
        if (!s->runs[p * s->n_seeds * s->n_policies + k].done) continue;
        runner_folder_name(k, s->policies[k], folders[n], sizeof folders[n]);
        runs[n] = folders[n];
        labels[n++] = s->policies[k];
    }
    BwError err;
    char label[1024], scenario[1100]; /* the point's flags and the seed, in every title */
    sweep_point_label(s, p, label, sizeof label);
    snprintf(scenario, sizeof scenario, "%s%sseed %d", label, label[0] ? ", " : "", s->seeds[0]);
    if (n && plots_curves(dir, runs, labels, n, sweep_point_target(s, p), scenario, &err)) {
        fprintf(stderr, "bellows: %s\n", err.msg);
        return -1;
    }
    return n > 0;
}

/* Each point's curves: accuracy and bytes against time. A plot that fails is reported and
 * ends the plotting (the results are written already); returns 1 then. */
static int point_curves(const Sweep *s)
{
    int drawn = 0;
    for (long p = 0; p < s->n_points; p++) {
        int got = point_curve(s, p);
        if (got < 0) return 1;
        drawn += got;
    }
    printf(
        "# plots: accuracy_vs_time and bytes_vs_time of each of %d points, in %s/runs/*/seed-%d/\n",
        drawn, s->out, s->seeds[0]);
    return 0;
}

int sweep_write_band(const Sweep *s, BwError *err)
{
    if (!has_band(s)) return BW_OK;
    OutFile of;
    int rc = outfile_open(&of, s->out, "sweep_band.csv", err);
    if (rc) return rc;
    for (int a = 0; a < s->n_axes; a++) fprintf(of.f, "%s,", s->axes[a].name);
    fputs("policy,speedup,speedup_ci_low,speedup_ci_high,speedup_band_low,speedup_band_high,"
          "time_to_accuracy_s,tta_band_low_s,tta_band_high_s,cost_band_draws\n",
          of.f);
    for (long p = 0; p < s->n_points; p++) {
        const Cell base = cell_of(s, p, s->baseline);
        for (int k = 0; k < s->n_policies; k++) {
            const Cell c = cell_of(s, p, k);
            double x[8], band[SWEEP_BAND_FIGURES];
            cell_speedup(s, &c, &base, &x[0], &x[1], &x[2]);
            sweep_band_of(s, p, k, band);
            x[3] = band[0], x[4] = band[1], x[5] = cell_mean_tta(s, &c);
            x[6] = band[2], x[7] = band[3];
            for (int a = 0; a < s->n_axes; a++) {
                csv_field(of.f, sweep_point_value(s, p, a));
                fputc(',', of.f);
            }
            csv_field_quoted(of.f, s->policies[k]);
            for (int m = 0; m < 8; m++) {
                fputc(',', of.f);
                if (isfinite(x[m])) fprintf(of.f, "%.9g", x[m]);
            }
            fprintf(of.f, ",%d\n", s->band_on[p] ? s->band_k : 0);
        }
    }
    return outfile_commit(&of, err);
}

int sweep_write_grid(const Sweep *s, BwError *err)
{
    int ax = sweep_axis_index(s, "bandwidth"), ay = sweep_axis_index(s, "latency");
    return ax < 0 || ay < 0 ? BW_OK : write_grid(s, ax, ay, err);
}

/* The heatmap's data (whenever bandwidth and latency are both swept), then its plot; returns 1
 * if either failed (said on stderr). */
static int heatmap(const Sweep *s, int draw)
{
    int ax = sweep_axis_index(s, "bandwidth"), ay = sweep_axis_index(s, "latency");
    if (ax < 0 || ay < 0) {
        if (draw) printf("# plots: a heatmap needs both --bandwidth and --latency swept\n");
        return 0;
    }
    BwError err;
    if (write_grid(s, ax, ay, &err)) {
        fprintf(stderr, "bellows: %s\n", err.msg);
        return 1;
    }
    if (!draw) return 0;
    if (s->n_policies < 2) {
        printf("# plots: no heatmap: the baseline is the only policy\n");
        return 0;
    }
    if (plots_sweep(s->out, &err)) {
        fprintf(stderr, "bellows: %s\n", err.msg);
        return 1;
    }
    printf("# plots: %s/speedup_heatmap.png (and .svg)\n", s->out);
    return 0;
}

int sweep_plots(const Sweep *s)
{
    const int found = s->no_plots ? 0 : plots_find();
    if (found < 0) return -1;
    int failed = heatmap(s, found);
    if (found) failed |= point_curves(s);
    return failed;
}
