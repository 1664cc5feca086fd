/* cmd_run.c: `bellows run` (one simulated training run) and `bellows compare` (several policies
 * on the identical scenario, each with every seed of --seeds, one table of means over seeds and
 * speedups paired by seed). SimGrid allows one simulation per process,
 * so compare runs each policy in a child process (up to --jobs at a time) that writes its own
 * run folder and sends its headline figures back through a pipe. */
#include <cblas.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "spec.h"
#include "xalloc.h"
#include "breakdown.h"
#include "cost_band.h"
#include "dataset.h"
#include "plots.h"
#include "cli.h"
#include "cluster_args.h"
#include "compress.h"
#include "csv.h"
#include "commands.h"
#include "driver.h"
#include "engine.h"
#include "flag_class.h"
#include "outfile.h"
#include "own_traces.h"
#include "results.h"
#include "train_args.h"
#include "run_args.h"
#include "runner.h"
#include "units.h"
#include "wallclock.h"

#include <gsl/gsl_statistics_double.h>

#define MAX_POLICIES 16

int cmd_run(int argc, char **argv, BwError *err)
{
    runner_supervise(); /* a plug-in's _exit() is reported, not taken for success */
    Flags f;
    int rc = run_parse_flags("bellows run", RUN_MODE_RUN, argc, argv, &f, err);
    if (rc == CLI_HELP) {
        cli_print_help(stdout, "bellows run [flags] [--cfg=SIMGRID_OPTION ...]", RUN_ABOUT, f.opts,
                       f.n);
        return BW_OK;
    }
    TrainArgs ta;
    RunConfig cfg;
    Dataset train = {0}, test = {0};
    double slowdown[DRIVER_MAX_WORKERS];
    RunResult res;
    memset(&res, 0, sizeof res);
    double t0 = wallclock_s();
    int existed = 0; /* --out was there before: an interruption leaves it */
    if (rc == BW_OK) rc = run_setup("run", &f, &ta, &cfg, slowdown, err);
    if (rc == BW_OK && f.run.out) rc = run_check_out(f.run.out, f.run.force, err);
    if (rc == BW_OK) rc = run_load_data(&ta, &cfg, &train, &test, err);
    if (rc == BW_OK) run_default_eval_every(&f, &cfg); /* with --record-trace */
    char one[1][SPEC_MAX_TEXT];
    if (rc == BW_OK) snprintf(one[0], sizeof one[0], "%s", cfg.policy);
    if (rc == BW_OK) rc = run_check_compat("run", &f, &cfg, one, 1, err); /* the policy's kind */
    if (rc == BW_OK) rc = driver_check(&cfg, err);
    if (rc == BW_OK) rc = run_note_idle_flags(&f, &cfg, one, 1, err);
    if (rc == BW_OK)
        rc = engine_check_options(f.n_simgrid, f.simgrid_args, f.run.network_model, err);
    if (rc == BW_OK) rc = engine_init(f.n_simgrid, f.simgrid_args, f.run.network_model, err);
    existed = f.run.out && access(f.run.out, F_OK) == 0;
    if (rc == BW_OK && f.run.out) rc = outdir_create(f.run.out, err);
    if (rc) goto fail;
    outfile_interrupt_softly();
    run_print_scenario(&f, &cfg, &ta);
    run_print_policy(&cfg);
    fflush(stdout);
    runner_guard_exit(cfg.policy);
    rc = driver_run(&cfg, &res, err);
    outfile_unguard_exit();
    if (rc) goto fail;
    char evals[96];
    run_describe_evals(&cfg, evals, sizeof evals);
    results_print(stdout, &cfg, &res, evals);
    if (res.never_exchanged[0]) /* a result the command goes on after: stated, not hidden */
        fprintf(stderr, "bellows: warning: %s; these results are no result of the policy\n",
                res.never_exchanged);
    if (f.run.out) {
        RunMeta meta = {"run",
                        ta.model,
                        f.run.network_model,
                        f.run.collectives,
                        wallclock_s() - t0,
                        cfg.target_accuracy};
        if ((rc = results_write(f.run.out, &cfg, &meta, &res, err))) goto fail;
        printf("# wrote %s/summary.json, evals.csv and steps.csv\n", f.run.out);
    }
    if (res.output_error[0]) /* the results stand; the trace or timeline does not */
        rc = bw_fail(err, BW_ERUNTIME, "%s (the run's results are %s%s)", res.output_error,
                     f.run.out ? "in " : "printed above", f.run.out ? f.run.out : "");
    else if (strcmp(res.status, "diverged") == 0)
        rc = bw_fail(err, BW_ERUNTIME, "%s", res.message);
fail:
    if (rc) outdir_remove_if_new(f.run.out, existed); /* a failed run leaves no empty folder */
    if (rc == BW_EINTR) { /* the driver's "interrupted at step N of M" */
        BwError why = *err;
        bw_fail(err, BW_EINTR, "%s; nothing written (run it again to start over)", why.msg);
    }
    driver_result_free(&res);
    dataset_free(&train);
    dataset_free(&test);
    run_flags_release(&f);
    return rc;
}

/* ---- compare ---- */

/* compare's runs: policy k with seed i is run i * n_pol + k, in folder seed-S/<k>-<policy>. */
typedef struct {
    char (*specs)[SPEC_MAX_TEXT];      /* as given: POLICY or POLICY@COMPRESSOR (the labels) */
    char (*policy)[SPEC_MAX_TEXT];     /* each spec's policy */
    char (*compressor)[SPEC_MAX_TEXT]; /* and its compressor ("": --compressor) */
    int n_pol, n_seeds, seeds[CLI_LIST_MAX];
    RunRow *rows;
    int out_existed;    /* --out was there before: an interruption leaves it */
    int stop_at_target; /* runs that reached the target stopped there: their bytes are to it */
    int islands;        /* --topology islands: the rows' bytes are the WAN's (runner.h) */
    OwnTraces *own;     /* compare --traces: each run's own trace; NULL otherwise */
    int band_k;         /* --cost-band's draws; 0: off, or the profile states no uncertainty */
} Runs;

static const RunRow *run_of(const Runs *r, int seed_i, int k)
{
    return &r->rows[seed_i * r->n_pol + k];
}

/* One policy over the seeds. */
typedef struct {
    RunRow mean;   /* means over the seeds (tta: NAN unless every seed reached the target);
                      failed if any seed failed; status "mixed" if the seeds' differ */
    int reached;   /* seeds that reached the target */
    double tta_sd; /* over those seeds (NAN below 2) */
    double speedup, ci_lo, ci_hi; /* mean of the per-seed speedups against the first policy,
                                     and its 95% interval (NAN unless every pair reached) */
    double res_s, res_frac;       /* the worst tta resolution over the seeds, in seconds and as a
                                     fraction of the first policy's tta for that seed */
    double band_lo, band_hi;      /* the speedup's band over seeds and costs (cost_band.h) */
} PolicyStats;

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

static void policy_stats(const Runs *r, int k, PolicyStats *st)
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
static int write_compare_csv(const char *dir, const Runs *r, const PolicyStats *st, BwError *err)
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
               sp, wide, mb, ratio, sim, res, strcmp(m->status, "diverged") == 0 ? "  DIVERGED" : "",
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

static void print_compare_table(const Runs *r, const PolicyStats *st, double target,
                                const char *evals, const char *sharpen)
{
    if (r->band_k)
        printf("\n%-30s %7s %7s %9s %8s %7s %29s %10s %7s %8s %6s\n", "policy", "final", "best",
               "tta_s", "+-sd", "speedup", "95% CI: seeds; seeds+costs", r->islands ? "WAN_MB/wkr" : "MB/worker", "bytes",
               "sim_s", "res");
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
static int write_breakdown(const char *out, const Runs *r, BwError *err)
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
static void compute_bands(const char *out, const Runs *r, const CostProfile *prof,
                          PolicyStats *st)
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

/* Plots are a convenience: a failure leaves the results standing, and is the command's
 * failure (exit 1), with err saying so. They draw the first seed's runs (the legend says which
 * seed). */
static int make_plots(const char *out, const Runs *r, double target, BwError *err)
{
    const int found = plots_find();
    if (found < 0)
        return bw_fail(err, BW_EINTR,
                       "interrupted while looking for gnuplot; the results are "
                       "written, no plots (bellows plot draws them)");
    if (!found) return BW_OK;
    BwError berr;
    if (write_breakdown(out, r, &berr) != BW_OK) fprintf(stderr, "bellows: %s\n", berr.msg);
    char folders[MAX_POLICIES][SPEC_MAX_TEXT + 24], labels_of[MAX_POLICIES][SPEC_MAX_TEXT + 24];
    const char *runs[MAX_POLICIES], *labels[MAX_POLICIES];
    for (int k = 0; k < r->n_pol; k++) {
        char folder[SPEC_MAX_TEXT + 8];
        runner_folder_name(k, r->specs[k], folder, sizeof folder);
        snprintf(folders[k], sizeof folders[k], "seed-%d/%s", r->seeds[0], folder);
        snprintf(labels_of[k], sizeof labels_of[k], "%s(seed-%d)", r->specs[k], r->seeds[0]);
        runs[k] = folders[k];
        labels[k] = labels_of[k];
    }
    if (plots_compare(out, runs, labels, r->n_pol, target, err) != BW_OK) {
        BwError why = *err;
        return bw_fail(err, BW_ERUNTIME, "%s (the results are written)", why.msg);
    }
    printf("# plots in %s (the runs of seed %d): accuracy_vs_time, accuracy_vs_bytes, "
           "bytes_vs_time, time_breakdown (to the target, means over seeds: "
           "time_breakdown.csv), schedule (.png and .svg)\n",
           out, r->seeds[0]);
    return BW_OK;
}

typedef struct {
    RunConfig *cfg;
    const TrainArgs *ta;
    const Flags *f;
    const char *out;
    Runs *r;
    double t0;
    int progress, failed;
} CompareJob;

static void compare_start(int j, int fd, void *ctx)
{
    CompareJob *job = ctx;
    const Runs *r = job->r;
    int k = j % r->n_pol, seed = r->seeds[j / r->n_pol];
    char dir[4096], folder[SPEC_MAX_TEXT + 8];
    runner_folder_name(k, r->specs[k], folder, sizeof folder);
    snprintf(dir, sizeof dir, "%s/seed-%d/%s", job->out, seed, folder);
    job->cfg->policy = r->policy[k];
    job->cfg->compressor = r->compressor[k][0] ? r->compressor[k] : job->f->run.compressor;
    job->cfg->label = r->specs[k];
    job->cfg->tc.seed = (unsigned long)seed;
    if (r->own) { /* this run's own trace (checked in compare_setup), its decisions followed */
        BwError e;
        job->cfg->replay = r->own->run[j];
        run_apply_trace(job->f, job->cfg, r->own->run[j], &e);
    }
    runner_child(job->cfg, job->ta->model, job->cfg->replay ? "replay" : "compare", job->f,
                 job->out, dir, fd);
}

static void compare_done(int j, RunRow *row, void *ctx)
{
    CompareJob *job = ctx;
    const Runs *r = job->r;
    const char *spec = r->specs[j % r->n_pol];
    int seed = r->seeds[j / r->n_pol];
    r->rows[j] = *row;
    if (r->islands) runner_show_wan(&r->rows[j]);
    if (row->rc) {
        job->failed++;
        r->rows[j].final = r->rows[j].best = r->rows[j].tta = NAN;
        fprintf(stderr, "bellows: compare: %s seed %d: %s\n", spec, seed, row->error);
    } else if (job->progress) {
        fprintf(stderr, "[compare] %s seed %d done: accuracy %.4f, %.1f wall s so far\n", spec,
                seed, row->final, wallclock_s() - job->t0);
    }
}

/* The lines compare and replay print before their runs: the scenario, then the compressors,
 * the policies and seeds and where their folders go. */
static void print_compare_header(const Flags *f, const RunConfig *cfg, const TrainArgs *ta,
                                 const Runs *r)
{
    run_print_scenario(f, cfg, ta);
    if (cfg->replay) run_print_replay_engine(cfg, 0, 1);
    int own = 0; /* policies with a compressor of their own (POLICY@COMPRESSOR) */
    for (int k = 0; k < r->n_pol; k++) own += r->compressor[k][0] != '\0';
    if (r->own)
        printf("# own traces: each policy's recorded decisions and compressor (%s first); ",
               r->compressor[0]);
    else if (own)
        printf("# compressor: each POLICY@COMPRESSOR its own, the others %s; ", cfg->compressor);
    else
        printf("# compressor %s; ", cfg->compressor);
    printf("%d policies x %d seeds, %d at a time; run folders in %s/seed-S/\n", r->n_pol,
           r->n_seeds, f->run.jobs, f->run.out);
    fflush(stdout);
    fflush(stderr);
}

/* err (the runner's "interrupted; K of N runs finished") said with what stays in out. */
static void compare_interrupted(const char *out, int out_existed, int replay, BwError *err)
{
    outdir_remove_if_new(out, out_existed);
    BwError why = *err;
    if (access(out, F_OK) == 0) /* the finished runs' folders stay */
        bw_fail(err, BW_EINTR,
                "%s: %s; no compare.csv (the finished runs stay in %s: run it again with "
                "--force to write over them, or into another --out)",
                replay ? "replay" : "compare", why.msg, out);
    else
        bw_fail(err, BW_EINTR, "%s: %s; nothing written (run it again to start over)",
                replay ? "replay" : "compare", why.msg);
}

static int compare_or_replay(int argc, char **argv, int replay, BwError *err);

int cmd_compare(int argc, char **argv, BwError *err)
{
    return compare_or_replay(argc, argv, 0, err);
}

int cmd_replay(int argc, char **argv, BwError *err)
{
    return compare_or_replay(argc, argv, 1, err);
}

static void print_compare_help(int replay, const Flags *f)
{
    CliOpt own[RUN_MAX_OPTS]; /* replay's: the flags it takes */
    int n_own = 0;
    for (int i = 0; i < f->n; i++)
        if (!run_replay_refuses(f, i)) own[n_own++] = f->opts[i];
    if (replay)
        cli_print_help(stdout,
                       "bellows replay --trace FILE --policies SPEC,... [cluster flags] "
                       "[--cfg=SIMGRID_OPTION ...]",
                       "Replays a gradient trace (traces/README.md) under every policy of "
                       "--policies on the given cluster:\nthe trace's norms feed the "
                       "policies, the compute and communication their decisions imply are\n"
                       "simulated, and accuracy comes from the trace's evaluations "
                       "(accuracy_source: trace). Writes\nwhat compare writes.",
                       own, n_own);
    else
        cli_print_help(stdout, "bellows compare [flags] [--cfg=SIMGRID_OPTION ...]",
                       "Runs every policy of --policies on the identical scenario, once per seed "
                       "of --seeds (the flags of\nbellows run), prints one table (means over the "
                       "seeds of accuracy and time to --target-accuracy,\nspeedup against the "
                       "first policy paired by seed with its 95% interval, bytes) and writes\n"
                       "DIR/compare.csv and one run folder per policy and seed, DIR/seed-S/"
                       "K-POLICY/. With no flags:\nmlp, 8 workers, 10Gbps star, PowerSGD, "
                       "policies sync, static rank 1, static rank 2 and\naccordion, seeds 1,2,3, "
                       "into runs/compare (which must be new or empty, or --force).",
                       f->opts, f->n);
}

/* The policies, seeds and scenario checked, the data (or trace) loaded; nothing written. */
/* compare --traces: the policies and seeds are the traces', each run replays its own trace
 * following its recorded decisions. */
static int own_traces_setup(Flags *f, Runs *r, OwnTraces *own, BwError *err)
{
    static const char *const alone[] = {"trace", "policies", "seeds", "seed"};
    for (size_t i = 0; i < sizeof alone / sizeof *alone; i++)
        if (cli_given(f->opts, f->n, f->set, alone[i]))
            return bw_fail(err, BW_EUSAGE,
                           "--%s: compare --traces takes the policies and seeds from the traces",
                           alone[i]);
    if (cli_given(f->opts, f->n, f->set, "compressor")) /* it would be ignored: say so */
        return bw_fail(err, BW_EUSAGE,
                       "--compressor: compare --traces takes each policy's compressor from its "
                       "trace");
    int rc =
        own_traces_load(f->run.traces, own, r->specs, r->policy, r->compressor, MAX_POLICIES, err);
    if (rc) return rc;
    r->n_pol = own->n_pol;
    r->n_seeds = own->n_seeds;
    memcpy(r->seeds, own->seeds, sizeof(int) * (size_t)own->n_seeds);
    r->own = own;
    f->trace_workers = own->t[0].h.workers; /* the cluster unless --workers */
    return BW_OK;
}

/* Every own trace applied once (its evaluations, its batch against --workers) and its policy's
 * stand-in and compressor checked on it. */
static int own_traces_check(const Flags *f, const Runs *r, RunConfig *cfg, BwError *err)
{
    int rc = BW_OK;
    for (int j = 0; rc == BW_OK && j < r->n_pol * r->n_seeds; j++) {
        rc = run_apply_trace(f, cfg, r->own->run[j], err);
        cfg->policy = r->policy[j % r->n_pol];
        cfg->compressor = r->compressor[j % r->n_pol];
        if (rc == BW_OK) rc = driver_check(cfg, err);
    }
    if (rc == BW_OK) rc = run_apply_trace(f, cfg, r->own->run[0], err);
    cfg->follow_decisions = 1;
    return rc;
}

/* --policies' item i split into its policy and compressor; the compressor after an '@' is
 * checked here, so that its errors name the item, not --compressor (a plugin's path holds no
 * '@': "./half@way.so" is refused as a path, not read as the compressor "way.so"). */
static int split_policy_item(Runs *r, int i, BwError *err)
{
    int rc = spec_split_compressor(r->specs[i], "--policies", r->policy[i], r->compressor[i], err);
    if (rc || !r->compressor[i][0]) return rc;
    if (spec_is_path(r->compressor[i]))
        return bw_fail(err, BW_EUSAGE,
                       "--policies '%s': a plugin's path is made of A-Z a-z 0-9 . _ / + - only, "
                       "and '%s' after the '@' is no compressor (expected POLICY@COMPRESSOR, "
                       "static:level=2@powersgd)",
                       r->specs[i], r->compressor[i]);
    char resolved[SPEC_MAX_TEXT];
    return compress_spec_resolved(r->compressor[i], "--policies", resolved, sizeof resolved, err);
}

/* --cost-band (none: COST_BAND_DEFAULT) against the run's cost profile: a band needs its stated
 * uncertainty; asked for explicitly without one, a note says there is none. */
static void band_setup(const Flags *f, const RunConfig *cfg, Runs *r)
{
    const CostProfile *p = cfg->costs;
    if (r->band_k && (!p || p->ideal || !p->has_uncertainty)) {
        if (f->run.cost_band)
            fprintf(stderr, "bellows: note: --cost-band: the cost profile %s states no "
                            "uncertainty (sim/costs/README.md): no band\n",
                    p ? p->name : "ideal");
        r->band_k = 0;
    }
}

static int compare_setup(int replay, Flags *f, Runs *r, TrainArgs *ta, RunConfig *cfg,
                         Dataset *train, Dataset *test, Trace *trace, double *slowdown,
                         BwError *err)
{
    int brc = cost_band_parse(f->run.cost_band ? f->run.cost_band : COST_BAND_DEFAULT,
                              &r->band_k, err);
    if (brc) return brc;
    if (f->run.traces && replay)
        return bw_fail(err, BW_EUSAGE,
                       "--traces: replay replays one --trace under --policies; bellows compare "
                       "--traces prices each policy's own trace");
    if (f->run.traces) {
        int rc = run_check_out(f->run.out, f->run.force, err);
        if (rc == BW_OK) rc = own_traces_setup(f, r, r->own, err);
        if (rc == BW_OK) rc = run_setup("compare", f, ta, cfg, slowdown, err);
        if (rc == BW_OK) rc = own_traces_check(f, r, cfg, err);
        cfg->compressor = f->run.compressor;
        if (rc == BW_OK)
            rc = engine_check_options(f->n_simgrid, f->simgrid_args, f->run.network_model, err);
        r->out_existed = access(f->run.out, F_OK) == 0;
        if (rc == BW_OK) rc = outdir_create(f->run.out, err);
        if (rc) return rc;
        cfg->tc.seed = (unsigned long)r->seeds[0];
        r->stop_at_target = cfg->stop_at_target;
        band_setup(f, cfg, r);
        r->islands = cfg->cluster.topology == TOPO_ISLANDS;
        return BW_OK;
    }
    r->own = NULL; /* not compare --traces */
    int rc = spec_split_list(f->run.policies, "--policies", r->specs, MAX_POLICIES, &r->n_pol, err);
    for (int i = 0; rc == BW_OK && i < r->n_pol; i++)
        rc = split_policy_item(r, i, err);
    if (rc == BW_OK) rc = run_seeds(f, r->seeds, &r->n_seeds, err);
    if (rc == BW_OK) rc = run_setup("compare", f, ta, cfg, slowdown, err);
    if (rc == BW_OK) rc = run_check_out(f->run.out, f->run.force, err);
    if (rc == BW_OK && replay && !f->run.trace)
        rc = bw_fail(err, BW_EUSAGE, "--trace: replay needs the trace to replay");
    if (rc == BW_OK && f->run.trace && (rc = trace_read(f->run.trace, trace, err)) == BW_OK) {
        f->trace_workers = trace->h.workers; /* the replay's cluster unless --workers */
        rc = run_setup("compare", f, ta, cfg, slowdown, err);
    }
    if (rc == BW_OK && f->run.trace)
        rc = run_apply_trace(f, cfg, trace, err);
    else if (rc == BW_OK && !f->run.trace)
        rc = run_load_data(ta, cfg, train, test, err);
    if (rc == BW_OK) rc = run_check_compat("compare", f, cfg, r->specs, r->n_pol, err);
    for (int i = 0; rc == BW_OK && i < r->n_pol; i++) {
        cfg->policy = r->policy[i];
        cfg->compressor = r->compressor[i][0] ? r->compressor[i] : f->run.compressor;
        rc = driver_check(cfg, err);
    }
    cfg->compressor = f->run.compressor;
    if (rc == BW_OK) rc = run_note_idle_flags(f, cfg, r->specs, r->n_pol, err);
    if (rc == BW_OK)
        rc = engine_check_options(f->n_simgrid, f->simgrid_args, f->run.network_model, err);
    r->out_existed = access(f->run.out, F_OK) == 0;
    if (rc == BW_OK) rc = outdir_create(f->run.out, err);
    if (rc) return rc;
    run_default_eval_every(f, cfg);
    cfg->tc.seed = (unsigned long)r->seeds[0];
    r->stop_at_target = cfg->stop_at_target;
    band_setup(f, cfg, r);
    r->islands = cfg->cluster.topology == TOPO_ISLANDS;
    return BW_OK;
}

/* A list of values of a price flag (--bandwidth 1Gbps,10Gbps), as sweep reads one (a comma in a
 * spec's options or a host list is one value: flag_scenarios), is a usage error that points to
 * bellows sweep: compare's files (compare.csv, DIR/seed-S/K-POLICY/) are one scenario's, and
 * sweep already runs compare's runs at every point, training each policy and seed once. */
static int one_scenario(int argc, char **argv, int replay, BwError *err)
{
    Flags *table = bw_xmalloc(sizeof *table, "cmd_run.c: table");
    if (!table) return bw_fail(err, BW_ERUNTIME, "out of memory");
    int rc = run_parse_flags("bellows compare", RUN_MODE_COMPARE, 0, NULL, table, err);
    for (int i = 0; rc == BW_OK && i < argc; i++) {
        const char *eq = strchr(argv[i], '=');
        size_t len = eq ? (size_t)(eq - argv[i]) : strlen(argv[i]);
        for (int k = 0; k < table->n && strncmp(argv[i], "--", 2) == 0; k++) {
            const CliOpt *o = &table->opts[k];
            if (strlen(o->name) != len - 2 || strncmp(o->name, argv[i] + 2, len - 2) != 0 ||
                o->kind == CLI_FLAG || o->kind == CLI_INT_LIST || o->kind == CLI_DOUBLE_LIST)
                continue;
            const char *v = eq ? eq + 1 : i + 1 < argc ? argv[i + 1] : "";
            if (flag_class(o->name) == FLAG_PRICE && flag_scenarios(o, o->name, v) > 1)
                rc = bw_fail(err, BW_EUSAGE, "--%s %s: %s runs one scenario; for several, %s",
                             o->name, v, replay ? "replay" : "compare",
                             replay ? "bellows sweep --trace takes lists"
                                    : "bellows sweep takes lists (the same runs, each policy and "
                                      "seed trained once and priced in every scenario)");
        }
    }
    run_flags_release(table);
    free(table);
    return rc;
}

static int compare_or_replay(int argc, char **argv, int replay, BwError *err)
{
    runner_supervise(); /* a plug-in's _exit() in this process (its init) is reported too */
    Trace trace = {0};
    Flags f;
    int rc = one_scenario(argc, argv, replay, err);
    if (rc) return rc;
    rc = run_parse_flags(replay ? "bellows replay" : "bellows compare", RUN_MODE_COMPARE, argc,
                         argv, &f, err);
    if (rc == CLI_HELP) {
        print_compare_help(replay, &f);
        return BW_OK;
    }
    char specs[MAX_POLICIES][SPEC_MAX_TEXT], policy[MAX_POLICIES][SPEC_MAX_TEXT],
        compressor[MAX_POLICIES][SPEC_MAX_TEXT];
    OwnTraces own = {0};
    Runs r = {.specs = specs, .policy = policy, .compressor = compressor, .own = &own};
    TrainArgs ta;
    RunConfig cfg;
    Dataset train = {0}, test = {0};
    double slowdown[DRIVER_MAX_WORKERS];
    PolicyStats st[MAX_POLICIES];
    if (rc == BW_OK)
        rc = compare_setup(replay, &f, &r, &ta, &cfg, &train, &test, &trace, slowdown, err);
    if (rc) goto fail;
    const char *out = f.run.out;
    int n = r.n_pol * r.n_seeds;
    r.rows = bw_xcalloc((size_t)n, sizeof *r.rows, "cmd_run.c: r.rows");
    if (!r.rows) {
        rc = bw_fail(err, BW_ERUNTIME, "out of memory");
        goto fail;
    }
    print_compare_header(&f, &cfg, &ta, &r);

    CompareJob job = {&cfg, &ta, &f, out, &r, wallclock_s(), cfg.progress, 0};
    if (cfg.replay) ta.model = cfg.replay->h.model;
    cfg.progress = cfg.progress && f.run.jobs == 1;
    if ((rc = runner_pool(n, f.run.jobs, compare_start, compare_done, &job, err))) {
        if (rc == BW_EINTR) compare_interrupted(out, r.out_existed, replay, err);
        goto fail;
    }
    for (int k = 0; k < r.n_pol; k++) policy_stats(&r, k, &st[k]);
    if (r.band_k) compute_bands(out, &r, cfg.costs, st);
    char evals[96];
    run_describe_evals(&cfg, evals, sizeof evals);
    print_compare_table(&r, st, f.run.target, evals,
                        cfg.replay ? "the trace's evaluations set it: record the trace with a "
                                     "smaller --eval-every"
                                   : "a smaller --eval-every sharpens them");
    if (r.own)
        printf("own traces: each policy's accuracy is that of its own recorded run (its trace's "
               "evaluations); time and bytes are simulated from its recorded decisions\n");
    else if (cfg.replay)
        printf("replay: accuracy is the trace's (its evaluations at the same steps), not the "
               "policy's own; only time and bytes are simulated\n");
    if ((rc = write_compare_csv(out, &r, st, err))) goto fail;
    printf("# wrote %s/compare.csv (%.1f wall s)\n", out, wallclock_s() - job.t0);
    if (!f.run.no_plots) rc = make_plots(out, &r, f.run.target, err);
    if (job.failed)
        rc = bw_fail(err, BW_ERUNTIME, "%s: %d of %d runs failed (see above)",
                     replay ? "replay" : "compare", job.failed, n);
fail:
    free(r.rows);
    dataset_free(&train);
    dataset_free(&test);
    trace_free(&trace);
    own_traces_free(&own);
    run_flags_release(&f);
    return rc;
}
