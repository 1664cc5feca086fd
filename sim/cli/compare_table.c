/* compare_table.c: compare's figures once its runs are done (compare_impl.h): each policy's
 * means over the seeds and its speedup paired by seed against the first policy, the table and
 * its footer on stdout, compare.csv and time_breakdown.csv, and the cost band's intervals. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_statistics_double.h>

#include "breakdown.h"
#include "compare_impl.h"
#include "cost_band.h"
#include "csv.h"
#include "outfile.h"
#include "results.h"
#include "units.h"
#include "xalloc.h"

static const RunRow *run_of(const Runs *r, int seed_i, int k)
{
    return &r->rows[seed_i * r->n_pol + k];
}

static void mean_row(const Runs *r, int k, RunRow *m)
{
    memset(m, 0, sizeof *m);
    snprintf(m->status, sizeof m->status, "%s", run_of(r, 0, k)->status);
    double steps = 0, n = r->n_seeds;
    for (int i = 0; i < r->n_seeds; i++) {
        const RunRow *x = run_of(r, i, k);
        if (x->rc) {
            m->rc = x->rc;
            snprintf(m->status, sizeof m->status, "failed");
            return;
        }
        if (strcmp(m->status, "diverged") != 0 && strcmp(x->status, m->status) != 0)
            snprintf(m->status, sizeof m->status, "%s",
                     strcmp(x->status, "diverged") == 0 ? "diverged" : "mixed");
        m->final += x->final / n;
        m->best += x->best / n;
        m->sim_time += x->sim_time / n;
        m->bytes += x->bytes / n;
        m->compute += x->compute / n;
        m->compress += x->compress / n;
        m->comm += x->comm / n;
        m->wait += x->wait / n;
        steps += (double)x->steps / n;
    }
    m->steps = lround(steps);
}

/* A run whose time to accuracy is a result: neither failed nor diverged. */
static int counts(const RunRow *x)
{
    return !x->rc && strcmp(x->status, "diverged") != 0;
}

/* Whether policy st has a bytes ratio against the baseline: no failed or diverged run in
 * either; with --stop-at-target, every seed of both reached the target, so that both byte
 * counts are to the target (a run that never reached it ran whole). */
static int has_ratio(const Runs *r, const PolicyStats *st, const PolicyStats *base)
{
    if (r->stop_at_target && (st->reached < r->n_seeds || base->reached < r->n_seeds)) return 0;
    return counts(&st->mean) && counts(&base->mean);
}

void policy_stats(const Runs *r, int k, PolicyStats *st)
{
    mean_row(r, k, &st->mean);
    double tta[CLI_LIST_MAX], base[CLI_LIST_MAX], hit[CLI_LIST_MAX], sp[CLI_LIST_MAX];
    st->reached = 0;
    st->res_s = st->res_frac = NAN;
    for (int i = 0; i < r->n_seeds; i++) {
        const RunRow *x = run_of(r, i, k), *b = run_of(r, i, 0);
        tta[i] = x->rc ? NAN : x->tta;
        base[i] = b->rc ? NAN : b->tta;
        if (isfinite(tta[i])) hit[st->reached++] = tta[i];
        if (!x->rc && isfinite(x->tta_res)) {
            st->res_s = fmax(st->res_s, x->tta_res);
            if (isfinite(base[i])) st->res_frac = fmax(st->res_frac, x->tta_res / base[i]);
        }
    }
    double lo, hi;
    runner_mean_ci(hit, st->reached, &st->mean.tta, &lo, &hi);
    if (st->reached < r->n_seeds) st->mean.tta = NAN;
    st->tta_sd = st->reached > 1 ? gsl_stats_sd(hit, 1, (size_t)st->reached) : NAN;
    st->speedup = st->ci_lo = st->ci_hi = NAN;
    for (int i = 0; i < r->n_seeds; i++) { /* no speedup to or of a diverged run */
        if (!counts(run_of(r, i, k))) tta[i] = NAN;
        if (!counts(run_of(r, i, 0))) base[i] = NAN;
    }
    if (runner_paired_speedups(base, tta, r->n_seeds, sp) == r->n_seeds)
        runner_speedup_ci(sp, r->n_seeds, &st->speedup, &st->ci_lo, &st->ci_hi);
}

/* compare.csv: one row per policy, the shared columns as means over the seeds, then seeds,
 * time_to_accuracy_sd_s, speedup_ci_low, speedup_ci_high, tta_resolution_s. The folder is the
 * first seed's run. */
int write_compare_csv(const char *dir, const Runs *r, const PolicyStats *st, BwError *err)
{
    OutFile of;
    int rc = outfile_open(&of, dir, "compare.csv", err);
    if (rc) return rc;
    fputs("policy,folder,", of.f);
    runner_csv_header(of.f, r->islands);
    fputs(",seeds,time_to_accuracy_sd_s,speedup_ci_low,speedup_ci_high,tta_resolution_s", of.f);
    fputs(r->band_k ? ",speedup_band_low,speedup_band_high,cost_band_draws\n" : "\n", of.f);
    for (int k = 0; k < r->n_pol; k++) {
        char folder[SPEC_MAX_TEXT + 8];
        runner_folder_name(k, r->specs[k], folder, sizeof folder);
        double ratio = has_ratio(r, &st[k], &st[0]) ? st[k].mean.bytes / st[0].mean.bytes : NAN;
        csv_field_quoted(of.f, r->specs[k]); /* a spec may hold '"' (a plugin's path) */
        fprintf(of.f, ",seed-%d/%s,", r->seeds[0], folder);
        runner_csv_row(of.f, &st[k].mean, st[k].speedup, ratio, RUNNER_CSV_COMPARE);
        fprintf(of.f, ",%d,", r->n_seeds);
        const double more[] = {st[k].tta_sd, st[k].ci_lo,   st[k].ci_hi,
                               st[k].res_s,  st[k].band_lo, st[k].band_hi};
        const int n_more = r->band_k ? 6 : 4;
        for (int m = 0; m < n_more; m++) {
            if (isfinite(more[m])) fprintf(of.f, "%.9g", more[m]);
            fputs(m < n_more - 1 ? "," : "", of.f);
        }
        if (r->band_k) fprintf(of.f, ",%d", r->band_k);
        fputs("\n", of.f);
    }
    return outfile_commit(&of, err);
}

#define ROW_FMT "%-30s %7s %7s %9s %8s %7s %13s %10s %7s %8s %6s"

/* One policy's line; returns 1 if its resolution is worse than 2% of the baseline's tta. */
static int print_policy(const Runs *r, int k, const PolicyStats *st, const PolicyStats *base)
{
    const RunRow *m = &st->mean;
    /* a spec wider than its column (a plugin's path) goes on a line of its own */
    const char *name = strlen(r->specs[k]) > 30 ? "" : r->specs[k];
    if (!*name) printf("%s\n", r->specs[k]);
    if (m->rc) {
        printf(ROW_FMT "  FAILED\n", name, "-", "-", "-", "-", "-", "", "-", "-", "-", "-");
        return 0;
    }
    char fin[16], best[16], tta[32], sd[16] = "", sp[32], ci[48], mb[32], ratio[16] = "-", sim[32],
                                     res[16] = "-";
    snprintf(fin, sizeof fin, "%.4f", m->final);
    snprintf(best, sizeof best, "%.4f", m->best);
    if (st->reached == r->n_seeds)
        snprintf(tta, sizeof tta, "%.4f", m->tta);
    else if (st->reached == 0)
        snprintf(tta, sizeof tta, "not reached");
    else
        snprintf(tta, sizeof tta, "%d/%d seeds", st->reached, r->n_seeds);
    if (isfinite(st->tta_sd)) snprintf(sd, sizeof sd, "%.4f", st->tta_sd);
    runner_format_speedup(st->speedup, k ? st->ci_lo : NAN, k ? st->ci_hi : NAN, sp, sizeof sp, ci,
                          sizeof ci);
    snprintf(mb, sizeof mb, "%.3f", m->bytes / 1e6);
    if (has_ratio(r, st, base)) snprintf(ratio, sizeof ratio, "%.3fx", m->bytes / base->mean.bytes);
    snprintf(sim, sizeof sim, "%.4f", m->sim_time);
    int coarse = isfinite(st->res_frac) && st->res_frac > 0.02;
    if (isfinite(st->res_frac))
        snprintf(res, sizeof res, "%.1f%%%s", 100 * st->res_frac, coarse ? "!" : "");
    int never = 0; /* a seed whose run never exchanged what the policy asked for */
    for (int i = 0; i < r->n_seeds; i++) never |= run_of(r, i, k)->never_exchanged[0] != 0;
    if (r->band_k) { /* "[lo,hi] seeds; [lo,hi] seeds and costs" in the CI's column */
        char both[48] = "", wide[112];
        runner_format_speedup(st->speedup, k ? st->band_lo : NAN, k ? st->band_hi : NAN, sp,
                              sizeof sp, both, sizeof both);
        int ns = k && isfinite(st->band_lo) && st->band_lo <= 1 && st->band_hi >= 1;
        runner_format_speedup(st->speedup, k ? st->ci_lo : NAN, k ? st->ci_hi : NAN, sp, sizeof sp,
                              ci, sizeof ci);
        snprintf(wide, sizeof wide, "%s%s%s%s", ci, *both ? " " : "", both, ns ? "~" : "");
        printf("%-30s %7s %7s %9s %8s %7s %29s %10s %7s %8s %6s%s%s%s\n", name, fin, best, tta, sd,
               sp, wide, mb, ratio, sim, res,
               strcmp(m->status, "diverged") == 0 ? "  DIVERGED" : "",
               strcmp(m->status, "reached_target") == 0 ? "  (stopped at target)" : "",
               never ? "  NEVER EXCHANGED" : "");
        return coarse;
    }
    printf(ROW_FMT "%s%s%s\n", name, fin, best, tta, sd, sp, ci, mb, ratio, sim, res,
           strcmp(m->status, "diverged") == 0 ? "  DIVERGED" : "",
           strcmp(m->status, "reached_target") == 0 ? "  (stopped at target)" : "",
           never ? "  NEVER EXCHANGED" : "");
    return coarse;
}

/* The table's footer. evals: when the runs evaluate ("evaluations every 5 steps"); sharpen:
 * how to make the resolution finer (a replay's evaluations are its trace's). */
static void print_compare_footer(const Runs *r, const PolicyStats *st, double target,
                                 const char *evals, const char *sharpen, int coarse)
{
    int reached = 0;
    for (int k = 0; k < r->n_pol; k++) reached += st[k].reached > 0;
    printf("\nMeans over %d seed(s). tta_s: simulated seconds to the first evaluation at or "
           "above test accuracy %.4f\n(+-sd: standard deviation over the seeds; \"k/n seeds\": "
           "only k reached it). speedup: the first\npolicy's tta over this one's, seed by seed, "
           "their geometric mean; 95%% CI: Student's t interval\non the log of the ratio (2 "
           "seeds or more); ~: the interval contains 1 (not told apart from the first\npolicy). "
           "bytes: against the first policy%s; %s; sim_s: the whole run.\nres: the simulated "
           "time between the evaluation that reached the target and the one before\n(the crossing "
           "lies in it), worst over the seeds, as a share of "
           "the first policy's tta\n(%s).\n",
           r->n_seeds, target,
           r->stop_at_target ? " up to the target (--stop-at-target; '-' where a seed of it or "
                               "of the first policy\ndid not reach it: its bytes are a whole "
                               "run's)"
                             : "",
           r->islands ? "WAN_MB/wkr: WAN megabytes per\nworker (summary.json's wan_bytes / "
                        "workers; bytes: their ratio)"
                      : "MB/worker: megabytes each worker sent",
           evals);
    if (coarse)
        printf("%d row(s) marked ! are coarser than 2%%:\n%s.\n", coarse, sharpen);
    else if (reached)
        printf("Every row that reached the target is within 2%%.\n");
    else
        printf("No policy reached the target.\n");
}

/* --cost-band: what the second interval is, and which policies it tells apart. */
static void cost_band_footer(const Runs *r, const PolicyStats *st)
{
    printf("seeds+costs: the speedup's 95%% band over the seeds and %d seeded draws of the cost "
           "profile's\nconstants, each group within the range it states (bellows costs NAME), "
           "re-priced first-order from\neach run's books to the target (compute, compression "
           "and communication scaled, overlap held).\nTold apart from the first policy",
           r->band_k);
    const char *sep[2] = {" under seeds and costs:", " under seeds only:"};
    for (int pass = 0; pass < 2; pass++) {
        int any = 0;
        for (int k = 1; k < r->n_pol; k++) {
            int seeds = isfinite(st[k].ci_lo) && (st[k].ci_lo > 1 || st[k].ci_hi < 1);
            int both = isfinite(st[k].band_lo) && (st[k].band_lo > 1 || st[k].band_hi < 1);
            if (pass == 0 ? !both : !(seeds && !both)) continue;
            printf("%s %s", any ? "," : sep[pass], r->specs[k]);
            any = 1;
        }
        if (!any) printf("%s none", sep[pass]);
        printf(pass == 0 ? ";" : ".\n");
    }
}

void print_compare_table(const Runs *r, const PolicyStats *st, double target, const char *evals,
                         const char *sharpen)
{
    if (r->band_k)
        printf("\n%-30s %7s %7s %9s %8s %7s %29s %10s %7s %8s %6s\n", "policy", "final", "best",
               "tta_s", "+-sd", "speedup", "95% CI: seeds; seeds+costs",
               r->islands ? "WAN_MB/wkr" : "MB/worker", "bytes", "sim_s", "res");
    else
        printf("\n" ROW_FMT "\n", "policy", "final", "best", "tta_s", "+-sd", "speedup", "95% CI",
               r->islands ? "WAN_MB/wkr" : "MB/worker", "bytes", "sim_s", "res");
    int coarse = 0;
    for (int k = 0; k < r->n_pol; k++) coarse += print_policy(r, k, &st[k], &st[0]);
    print_compare_footer(r, st, target, evals, sharpen, coarse);
    for (int j = 0; j < r->n_pol * r->n_seeds; j++) /* each, on stdout and as a warning */
        if (r->rows[j].never_exchanged[0]) {
            printf("NEVER EXCHANGED: %s (seed %d): %s; its row is no result of the policy.\n",
                   r->specs[j % r->n_pol], r->seeds[j / r->n_pol], r->rows[j].never_exchanged);
            fprintf(stderr, "bellows: warning: %s (seed %d): %s\n", r->specs[j % r->n_pol],
                    r->seeds[j / r->n_pol], r->rows[j].never_exchanged);
        }
    if (r->band_k) cost_band_footer(r, st);
}

/* time_breakdown.csv, the time breakdown plot's data: each policy's books up to its time to
 * accuracy, means over the seeds (breakdown.h). */
int write_breakdown(const char *out, const Runs *r, BwError *err)
{
    const int n = r->n_pol * r->n_seeds;
    char(*folders)[SPEC_MAX_TEXT + 24] =
        bw_xcalloc((size_t)n, sizeof *folders, "cmd_run.c: memory");
    const char **fp = bw_xcalloc((size_t)n, sizeof *fp, "cmd_run.c: fp"), *labels[MAX_POLICIES];
    double *tta = bw_xcalloc((size_t)n, sizeof *tta, "cmd_run.c: tta");
    int *failed = bw_xcalloc((size_t)n, sizeof *failed, "cmd_run.c: failed"), rc;
    if (!folders || !fp || !tta || !failed) {
        rc = bw_fail(err, BW_ERUNTIME, "out of memory");
        goto done;
    }
    for (int j = 0; j < n; j++) {
        const int k = j % r->n_pol, i = j / r->n_pol;
        char folder[SPEC_MAX_TEXT + 8];
        runner_folder_name(k, r->specs[k], folder, sizeof folder);
        snprintf(folders[j], sizeof folders[j], "seed-%d/%s", r->seeds[i], folder);
        fp[j] = folders[j];
        tta[j] = r->rows[j].tta;
        failed[j] = r->rows[j].rc != BW_OK;
        if (i == 0) labels[k] = r->specs[k];
    }
    Breakdown b = {r->n_pol, r->n_seeds, labels, fp, tta, failed};
    rc = breakdown_write(out, &b, err);
done:
    free(folders);
    free(fp);
    free(tta);
    free(failed);
    return rc;
}

/* --cost-band: each policy's band (cost_band.h) from its runs' folders below out. */
void compute_bands(const char *out, const Runs *r, const CostProfile *prof, PolicyStats *st)
{
    double tta[MAX_POLICIES * CLI_LIST_MAX], lo[MAX_POLICIES], hi[MAX_POLICIES];
    for (int j = 0; j < r->n_pol * r->n_seeds; j++)
        tta[j] = counts(&r->rows[j]) ? r->rows[j].tta : NAN;
    const char *specs[MAX_POLICIES];
    for (int k = 0; k < r->n_pol; k++) specs[k] = r->specs[k];
    if (cost_band_compare(prof, r->band_k, out, r->n_pol, r->n_seeds, r->seeds, specs, tta, lo, hi))
        fprintf(stderr, "bellows: note: a run's steps.csv could not be read: no cost band\n");
    for (int k = 0; k < r->n_pol; k++) {
        st[k].band_lo = lo[k];
        st[k].band_hi = hi[k];
    }
}
