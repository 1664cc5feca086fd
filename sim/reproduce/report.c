/* report.c: DIR/report.md, DIR/accordion.csv, DIR/adpsgd.csv and DIR/plots/, built from the
 * cells (the sweeps' files) and the papers' tables only: the simulator's figures beside the
 * papers' claims, the real model's costs and the sweeps' command lines. The files appear whole or
 * not at all (outfile.h), so a report can be rebuilt at any time. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "csv.h"
#include "outfile.h"
#include "plots.h"
#include "reproduce_internal.h"

static const char *const SIZE_NAME[3] = {"", " (quick)", " (smoke test: not a result)"};
static const char *const SIZE_LONG[3] = {"the full", "the --quick", "the --smoke"};

/* "0.8812 ± 0.0021" (accuracy as a fraction), "-" when missing. */
static const char *fmt_acc(const Repro *r, const Cell *c, char *buf, size_t n)
{
    int k;
    double m = cells_mean(r, c->final, &k), sd = cells_sd(r, c->final);
    if (!k)
        snprintf(buf, n, "-");
    else if (isfinite(sd))
        snprintf(buf, n, "%.4f ± %.4f", m, sd);
    else
        snprintf(buf, n, "%.4f", m);
    return buf;
}

/* Mean time to target over the seeds that reached it, with "(k/n)" when some did not. */
static const char *fmt_tta(const Repro *r, const Cell *c, char *buf, size_t n)
{
    int k;
    double m = cells_mean(r, c->tta, &k);
    if (!c->n)
        snprintf(buf, n, "-");
    else if (!k)
        snprintf(buf, n, "not reached");
    else if (k < c->n)
        snprintf(buf, n, "%.4g (%d/%d seeds)", m, k, c->n);
    else
        snprintf(buf, n, "%.4g", m);
    return buf;
}

static const char *fmt_ratio(double x, char *buf, size_t n)
{
    if (isfinite(x))
        snprintf(buf, n, "%.2fx", x);
    else
        snprintf(buf, n, "-");
    return buf;
}

/* One row of DIR/<paper>.csv: a setting's role at a bandwidth, summarised over the seeds. */
static void csv_row(const Repro *r, FILE *csv, int exp, int s, int role, int bw)
{
    const Setting *st = papers_setting(exp, s);
    const Cell *c = &r->cells[exp][s][role][bw];
    int reached;
    double tta = cells_mean(r, c->tta, &reached);
    fprintf(csv, "%s,%s,%s,%s,%d,%d,%.9g,%.9g,%.17g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g\n", st->name,
            st->roles[role], c->policy, PAPERS_BW[exp][bw], c->n, reached,
            cells_mean(r, c->final, NULL), cells_sd(r, c->final), cells_mean(r, c->bytes, NULL),
            tta, cells_sd(r, c->tta), cells_mean(r, c->tta_step, NULL),
            cells_mean(r, c->tta_bytes, NULL), cells_mean(r, c->compute, NULL),
            cells_mean(r, c->comm, NULL));
}

/* Whether setting s of experiment exp has a sweep in this reproduction (--quick drops some). */
static int setting_runs(const Repro *r, int exp, int s)
{
    for (int i = 0; i < r->n_jobs; i++)
        if (r->job[i].exp == exp && r->job[i].setting == s) return 1;
    return 0;
}

/* One row of the cost table: setting st's dense step at `batch` images per worker. */
static void cost_row(const Repro *r, FILE *f, int exp, const Setting *st, const char *role,
                     int batch)
{
    const PaperSetting *ps = papers_paper(exp);
    const ProfileCost *pc = &r->cost[exp];
    const int p = st->sim->workers;
    double compute = papers_compute_s(pc, batch), comm[MAX_BWS];
    fprintf(f, "| %s%s | %d x %d | %.2f ms |", st->label, role, p, batch, 1e3 * compute);
    for (int bw = 0; bw < MAX_BWS; bw++) {
        comm[bw] = papers_dense_comm_s(pc, p, PAPERS_BW_BPS[exp][bw], ps->latency,
                                       papers_dense_calls(exp, pc));
        fprintf(f, " %.2f ms |", 1e3 * comm[bw]);
    }
    for (int bw = 0; bw < MAX_BWS; bw++)
        fprintf(f, " %.0f%% |", 100 * compute / (compute + comm[bw]));
    fputc('\n', f);
}

/* "11,173,962" */
static const char *fmt_count(double x, char *buf, size_t n)
{
    char digits[32];
    int len = snprintf(digits, sizeof digits, "%.0f", x), k = 0;
    for (int i = 0; i < len && (size_t)k + 2 < n; i++) {
        if (i && (len - i) % 3 == 0) buf[k++] = ',';
        buf[k++] = digits[i];
    }
    buf[k] = '\0';
    return buf;
}

/* The profile, the GPU and the links the runs charge, in words. */
static void cost_setting(const Repro *r, FILE *f, int exp)
{
    const PaperSetting *ps = papers_paper(exp);
    const ProfileCost *pc = &r->cost[exp];
    char params[32];
    fprintf(f, "Paper: %s; source: %s.", ps->what, ps->source);
    if (!ps->batch)
        fprintf(f, " **The paper's model is unknown: the costs here are ResNet-18's** (the "
                   "profile Accordion's runs charge), an assumption.");
    fprintf(f,
            " The runs charge the costs of a real model, `--workload %s` (`bellows workloads`: "
            "%s parameters in %d tensors, %.3g GFLOP per sample forward and backward), on "
            "%ss (%.3g TFLOP/s fp32 peak at %.0f%%: %.3g TFLOP/s; %s), links of %.0f us "
            "latency (%s), and %s. Compression's encode "
            "and decode are charged on the GPU. The small model supplies the gradients, the "
            "accuracy and every signal a policy reads; each real tensor is compressed at the "
            "level of the small layer it follows (by relative depth), its messages sized from "
            "the compressor's plan on the real shape.\n\n",
            ps->workload, fmt_count(pc->params, params, sizeof params), pc->tensors,
            pc->flops_sample / 1e9, ps->gpu, pc->gpu_peak / 1e12, 100 * ps->efficiency,
            pc->gpu_flops / 1e12, ps->gpu_source, ps->latency * 1e6, ps->latency_source,
            exp == 0 ? "`--overlap tensor` (what Accordion's code does: one blocking collective "
                       "per tensor after the backward)"
                     : "`--overlap none` (ADPSGD's code is not public; averaging parameters "
                       "cannot overlap the backward anyway)");
}

/* What the runs charge, and a table of the real model's dense step as costed, per setting
 * (computed from the profile, not read from the runs). */
static void cost_table(const Repro *r, FILE *f, int exp)
{
    const PaperSetting *ps = papers_paper(exp);
    const ProfileCost *pc = &r->cost[exp];
    char params[32];
    cost_setting(r, f, exp);
    fprintf(f,
            "| setting | workers x batch per worker | compute per step | dense communication "
            "at %s | at %s | compute share at %s | at %s |\n|---|---|---|---|---|---|---|\n",
            PAPERS_BW[exp][0], PAPERS_BW[exp][1], PAPERS_BW[exp][0], PAPERS_BW[exp][1]);
    for (int s = 0; s < papers_n_settings(exp); s++) {
        const Setting *st = papers_setting(exp, s);
        if (!setting_runs(r, exp, s)) continue;
        int batch_sweep = strstr(st->name, "-batch") != NULL;
        cost_row(r, f, exp, st, batch_sweep ? ": small batch" : "", st->sim->batch);
        if (batch_sweep)
            cost_row(r, f, exp, st, ": large batch", PAPERS_LARGE_BATCH * st->sim->batch);
    }
    char cap[64] = ""; /* the profile's TCP cap: min(share x bandwidth, cap) */
    if (pc->cap_Bps > 0) snprintf(cap, sizeof cap, ", at most %.3g Gbit/s", pc->cap_Bps * 8 / 1e9);
    fprintf(f,
            "\nCompute per step = batch x flops per sample / the GPU's rate (the runs also "
            "charge the optimiser's update, a pass over the parameters in memory, and "
            "compression's encode and decode); dense communication = the ring allreduce of "
            "4 x %s bytes, 2 (p-1)/p x bytes / (bandwidth x %.2f%s) + (2 (p-1) x the route's "
            "latency (two links of the star: %.0f us) + %.0f us) x %d collective call%s a step "
            "(%s), where %.2f is the share of a TCP link and %.0f us the fixed cost of a call "
            "that the cost profile `%s` gives; compute share = compute / (compute + dense "
            "communication). A compressed step sends less, on ResNet-18's shapes.",
            fmt_count(pc->params, params, sizeof params), pc->share, cap, 2e6 * ps->latency,
            1e6 * pc->call_s, papers_dense_calls(exp, pc),
            papers_dense_calls(exp, pc) == 1 ? "" : "s",
            exp == 0 ? "one per tensor: `--overlap tensor`" : "one fused allreduce", pc->share,
            1e6 * pc->call_s, pc->costs_name);
    const SimModel *sm = papers_setting(exp, 0)->sim;
    if (ps->batch) /* Accordion's settings differ in batch: the table gives each */
        fprintf(f,
                " The paper trained %d images per worker; the runs charge each setting's batch "
                "per worker (the table's), so where it is smaller a step's compute is that "
                "fraction of the paper's and communication weighs more than it did there.",
                ps->batch);
    else { /* periodic averaging: a step costs at least its compute */
        double c = papers_compute_s(pc, sm->batch);
        fprintf(f, " Averaging less often cannot make a step cheaper than its compute: per "
                   "step it gains at most (compute + dense communication) / compute =");
        for (int bw = 0; bw < MAX_BWS; bw++)
            fprintf(f, " %.2fx at %s%s",
                    (c + papers_dense_comm_s(pc, sm->workers, PAPERS_BW_BPS[exp][bw], ps->latency,
                                             papers_dense_calls(exp, pc))) /
                        c,
                    PAPERS_BW[exp][bw], bw + 1 < MAX_BWS ? " and" : "");
        fprintf(f, " (the paper claims 1.46x to 1.95x at 10 Gbps, 1.14x to 1.27x at 100 Gbps, "
                   "to the target).");
    }
    fputs("\n\n", f);
}

/* The plots' links of setting s, if its plots were drawn. */
static void plots_links(const Repro *r, FILE *f, int exp, int s)
{
    const Setting *st = papers_setting(exp, s);
    if (!r->no_plots && r->cells[exp][s][0][0].first_run[0])
        fprintf(f,
                "Plots (first seed, %s): [accuracy against time](plots/%s/"
                "accuracy_vs_time.png), [bytes](plots/%s/bytes_vs_time.png).\n\n",
                PAPERS_BW[exp][0], st->name, st->name);
}

/* ---- Accordion ---- */

static void accordion_main_table(const Repro *r, FILE *f)
{
    char a[64], b[64], c[64];
    fprintf(f, "### Main table: Accordion against low compression (mean over seeds)\n\n");
    fprintf(f,
            "| setting | final accuracy: low / high / Accordion | paper (ResNet-18): low / "
            "high / Accordion | less communication (low / Accordion bytes) | speedup to "
            "target at %s | at %s | paper (up to) |\n|---|---|---|---|---|---|---|\n",
            PAPERS_BW[0][0], PAPERS_BW[0][1]);
    for (int s = 0; s < papers_n_settings(0); s++) {
        const Setting *st = papers_setting(0, s);
        const Cell(*x)[MAX_BWS] = r->cells[0][s];
        if (!x[0][0].n && !x[2][0].n) continue;
        fprintf(f,
                "| %s | %.4f / %.4f / %.4f | %.2f / %.2f / %.2f | %s | %s | %s | 5.5x "
                "less communication, 4.1x speedup |\n",
                st->label, cells_mean(r, x[0][0].final, NULL), cells_mean(r, x[1][0].final, NULL),
                cells_mean(r, x[2][0].final, NULL), st->paper_acc[0], st->paper_acc[1],
                st->paper_acc[2],
                fmt_ratio(cells_ratio(r, x[0][0].bytes, x[2][0].bytes), a, sizeof a),
                fmt_ratio(cells_ratio(r, x[0][0].tta, x[2][0].tta), b, sizeof b),
                fmt_ratio(cells_ratio(r, x[0][1].tta, x[2][1].tta), c, sizeof c));
    }
    fprintf(f, "\nSpeedup = low compression's mean time to the target / Accordion's (> 1: "
               "Accordion is faster); only seeds that reached the target count.\n\n");
}

/* Setting s's table, a row per role, and its rows of DIR/accordion.csv. */
static void accordion_roles(const Repro *r, FILE *f, FILE *csv, int s)
{
    const Setting *st = papers_setting(0, s);
    const Cell(*x)[MAX_BWS] = r->cells[0][s];
    char a[64], b[64], c[64], e[64];
    fprintf(f, "### %s\n\nTarget test accuracy %.2f.\n\n", st->label, st->sim->target[r->size]);
    fprintf(f,
            "| role | policy | final accuracy (mean ± sd) | MB per worker | steps to "
            "target | time to target at %s [s] | at %s [s] | communication share at "
            "%s |\n|---|---|---|---|---|---|---|---|\n",
            PAPERS_BW[0][0], PAPERS_BW[0][1], PAPERS_BW[0][0]);
    for (int role = 0; role < st->n_roles; role++) {
        const Cell *c0 = &x[role][0], *c1 = &x[role][1];
        if (!c0->n && !c1->n) continue;
        int k;
        double steps = cells_mean(r, c0->tta_step, &k);
        fprintf(f, "| %s | `%s` | %s | %.3f | %s | %s | %s | %.0f%% |\n", st->roles[role],
                c0->policy, fmt_acc(r, c0, a, sizeof a), cells_mean(r, c0->bytes, NULL) / 1e6,
                k ? (snprintf(e, sizeof e, "%.0f", steps), e) : "-", fmt_tta(r, c0, b, sizeof b),
                fmt_tta(r, c1, c, sizeof c),
                100 * cells_mean(r, c0->comm, NULL) / cells_mean(r, c0->time, NULL));
        for (int bw = 0; bw < MAX_BWS; bw++) csv_row(r, csv, 0, s, role, bw);
    }
}

/* Where setting s's speedup comes from: fewer steps and cheaper steps (measured, per
 * bandwidth), and the accuracy differences beside the paper's. */
static void accordion_speedup(const Repro *r, FILE *f, int s)
{
    const Setting *st = papers_setting(0, s);
    const Cell(*x)[MAX_BWS] = r->cells[0][s];
    const Cell *lo = &x[0][0], *ac = &x[2][0];
    char a[64], d[64];
    double steps_ratio = cells_ratio(r, lo->tta_step, ac->tta_step);
    if (isfinite(steps_ratio)) {
        fprintf(f,
                "\nWhere Accordion's time to target comes from: low compression needs %s the "
                "steps Accordion needs to reach the target",
                fmt_ratio(steps_ratio, a, sizeof a));
        for (int bw = 0; bw < MAX_BWS; bw++) {
            double spd = cells_ratio(r, x[0][bw].tta, x[2][bw].tta);
            fprintf(f, "; at %s a step to the target costs low compression %s Accordion's",
                    PAPERS_BW[0][bw], fmt_ratio(spd / steps_ratio, d, sizeof d));
        }
        fprintf(f, " (speedup = steps ratio x per-step cost ratio).");
    } else { /* no ratio to take apart */
        int lo_none = !isfinite(cells_mean(r, lo->tta_step, NULL));
        int ac_none = !isfinite(cells_mean(r, ac->tta_step, NULL));
        fprintf(f, "\nNo speedup to take apart: %s the target in any seed.",
                lo_none && ac_none ? "neither low compression nor Accordion reached"
                : lo_none          ? "low compression did not reach"
                                   : "Accordion did not reach");
    }
    fprintf(f,
            " Accordion's accuracy minus "
            "low compression's: %+.2f points (paper %+.2f); minus high compression's: "
            "%+.2f (paper %+.2f).\n\n",
            100 * (cells_mean(r, ac->final, NULL) - cells_mean(r, lo->final, NULL)),
            st->paper_acc[2] - st->paper_acc[0],
            100 * (cells_mean(r, ac->final, NULL) - cells_mean(r, x[1][0].final, NULL)),
            st->paper_acc[2] - st->paper_acc[1]);
}

/* Setting s: its table, where the speedup comes from, Accordion's regimes, divergences, plots. */
static void accordion_setting(const Repro *r, FILE *f, FILE *csv, int s)
{
    const Setting *st = papers_setting(0, s);
    const Cell(*x)[MAX_BWS] = r->cells[0][s];
    accordion_roles(r, f, csv, s);
    accordion_speedup(r, f, s);
    char reg[4096];
    cells_regimes(r, x[2][0].first_run, reg, sizeof reg);
    if (reg[0])
        fprintf(f,
                "Accordion's regime in each epoch (first seed; C critical, N normal; one "
                "letter per matrix layer%s): %s.\n\n",
                strstr(st->name, "-batch") ? ", here one for the batch" : "", reg);
    for (int role = 0; role < st->n_roles; role++)
        for (int bw = 0; bw < MAX_BWS; bw++)
            if (x[role][bw].diverged)
                fprintf(f, "%s at %s: %d run(s) diverged.\n\n", st->roles[role], PAPERS_BW[0][bw],
                        x[role][bw].diverged);
    plots_links(r, f, 0, s);
}

static void accordion_section(const Repro *r, FILE *f, FILE *csv)
{
    fprintf(f, "## Accordion (Agarwal et al., MLSys 2021)\n\n"
               "**Claims** (abstract): accuracy similar to low compression, up to 5.5x less "
               "communication and up to 4.1x end-to-end speedup over static compression. "
               "**The authors' logs** (ResNet-18, CIFAR-10, 4 workers; high / low compression / "
               "Accordion final accuracy): PowerSGD rank 1 / 2: 94.25 / 94.49 / 94.72; TopK "
               "10%% / 99%%: 93.08 / 94.09 / 93.78; batch 4096 / 512: 93.21 / 94.49 / 94.34. "
               "The per-setting communication and speedup ratios of the paper's tables could "
               "not be read (only the abstract and the code were available), so the paper "
               "column gives the headline bounds.\n\n");
    fprintf(f, "### Setting and costs\n\n");
    cost_table(r, f, 0);
    accordion_main_table(r, f);
    verdict_accordion(r, f);
    for (int s = 0; s < papers_n_settings(0); s++) {
        const Cell(*x)[MAX_BWS] = r->cells[0][s];
        if (!x[0][0].n && !x[1][0].n && !x[2][0].n) continue;
        accordion_setting(r, f, csv, s);
    }
}

/* ---- ADPSGD ---- */

/* Setting s at bandwidth bw: a row per policy, and their rows of DIR/adpsgd.csv. */
static void adpsgd_bandwidth(const Repro *r, FILE *f, FILE *csv, int s, int bw)
{
    const Setting *st = papers_setting(1, s);
    const Cell(*x)[MAX_BWS] = r->cells[1][s];
    char a[64], b[64], c[64], d[64];
    fprintf(f,
            "**%s**\n\n| policy | time to target [s] | speedup over sync | paper "
            "(ADPSGD over sync) | final accuracy (mean ± sd) | MB per worker | MB "
            "to target | communication share |\n|---|---|---|---|---|---|---|---|\n",
            PAPERS_BW[1][bw]);
    for (int role = 0; role < st->n_roles; role++) {
        const Cell *cc = &x[role][bw];
        if (!cc->n) continue;
        double to_target = cells_mean(r, cc->tta_bytes, NULL) / 1e6;
        if (isfinite(to_target))
            snprintf(d, sizeof d, "%.3f", to_target);
        else
            snprintf(d, sizeof d, "-");
        fprintf(f, "| `%s` | %s | %s | %s | %s | %.3f | %s | %.0f%% |\n", cc->policy,
                fmt_tta(r, cc, a, sizeof a),
                fmt_ratio(cells_ratio(r, x[0][bw].tta, cc->tta), b, sizeof b),
                role == ADP_ADPSGD4 || role == ADP_ADPSGD16
                    ? (bw == 0 ? "1.46x - 1.95x" : "1.14x - 1.27x")
                    : "",
                fmt_acc(r, cc, c, sizeof c), cells_mean(r, cc->bytes, NULL) / 1e6, d,
                100 * cells_mean(r, cc->comm, NULL) / cells_mean(r, cc->time, NULL));
        csv_row(r, csv, 1, s, role, bw);
        if (cc->diverged) fprintf(f, "\n%d run(s) diverged.\n", cc->diverged);
    }
    const Cell *sy = &x[0][bw];
    fprintf(
        f,
        "\nPer step, averaging less often can gain at most sync's time / its "
        "compute time = %s; a larger time-to-target speedup means the target was "
        "reached in fewer steps.\n\n",
        fmt_ratio(cells_mean(r, sy->time, NULL) / cells_mean(r, sy->compute, NULL), d, sizeof d));
}

/* Setting s's averaging periods until the target, against sync's progress and the lr decay,
 * and ADPSGD against constant periods. */
static void adpsgd_periods(const Repro *r, FILE *f, int s)
{
    const Setting *st = papers_setting(1, s);
    const SimModel *sm = st->sim;
    const Cell(*x)[MAX_BWS] = r->cells[1][s];
    char a[64];
    /* every averaging sends the same bytes, so sync's bytes to the target over a policy's is the
     * policy's mean period until it reached the target */
    fprintf(f, "Mean averaging period until the target (sync's bytes to the target / the "
               "policy's):");
    for (int role = ADP_CPSGD4; role <= ADP_ADACOMM; role++) /* the periodic policies */
        fprintf(f, " `%s` %s%s", x[role][0].policy,
                fmt_ratio(cells_ratio(r, x[0][0].tta_bytes, x[role][0].tta_bytes), a, sizeof a),
                role < ADP_ADACOMM ? "," : "");
    int d1, d2;
    papers_decay_epochs(sm->epochs[r->size], &d1, &d2);
    double sync_steps = cells_mean(r, x[0][0].tta_step, NULL);
    if (isnan(sync_steps)) /* no run of sync reached it (a smoke run): no mean to print */
        fprintf(f, ". `sync` did not reach the target");
    else
        fprintf(f, ". `sync` reached the target after %.0f steps (mean)", sync_steps);
    fprintf(f, "; the first lr decay is at epoch %d, step %d.\n\n", d1,
            d1 * sm->train_samples[r->size] / (sm->workers * sm->batch));
    for (int role = ADP_CPSGD4; role <= ADP_CPSGD16; role++) {
        const Cell *cp = &x[role][0], *ad = &x[role + ADP_SAME_BUDGET][0];
        fprintf(f,
                "ADPSGD against `%s`: bytes to the target %s of CPSGD's, final accuracy "
                "%+.2f points.\n\n",
                cp->policy, fmt_ratio(cells_ratio(r, ad->tta_bytes, cp->tta_bytes), a, sizeof a),
                100 * (cells_mean(r, ad->final, NULL) - cells_mean(r, cp->final, NULL)));
    }
}

static void adpsgd_section(const Repro *r, FILE *f, FILE *csv)
{
    fprintf(f, "## ADPSGD (Jiang and Agrawal, arXiv 2007.06134)\n\n"
               "**Claims** (abstract): 1.14x to 1.27x speedup over full-communication SGD at 100 "
               "Gbps, 1.46x to 1.95x at 10 Gbps; smaller training loss and higher accuracy than "
               "constant-period averaging (CPSGD) with less communication. ADPSGD here is "
               "**bellows' reconstruction** (the paper's period rule and constants were not "
               "found; `bellows policies` gives its rule).\n\n");
    fprintf(f, "### Setting and costs\n\n");
    cost_table(r, f, 1);
    for (int s = 0; s < papers_n_settings(1); s++) {
        const Setting *st = papers_setting(1, s);
        fprintf(f, "### %s\n\nTarget test accuracy %.2f.\n\n", st->label, st->sim->target[r->size]);
        for (int bw = 0; bw < MAX_BWS; bw++) adpsgd_bandwidth(r, f, csv, s, bw);
        adpsgd_periods(r, f, s);
        verdict_adpsgd(r, f, s);
        plots_links(r, f, 1, s);
    }
}

/* ---- plots ---- */

/* A label without spaces (gnuplot's word lists): the role for Accordion, the policy otherwise. */
static void role_label(const Repro *r, int exp, int s, int role, char *buf, size_t n)
{
    snprintf(buf, n, "%s",
             exp == 0 ? papers_setting(exp, s)->roles[role] : r->cells[exp][s][role][0].policy);
    for (char *p = buf; *p; p++)
        if (*p == ' ') *p = '-';
}

/* Whether a role's cell is drawn: its first seed ran at the lower bandwidth. */
static int plotted(const Cell *c)
{
    return c->first_run[0] && isfinite(c->time[0]);
}

/* DIR/plots/SETTING/compare.csv, in the layout of `bellows compare`, from the first seed's runs
 * at the lower bandwidth: the labels lp and folders fp of the plotted roles. */
static int compare_csv(const Repro *r, const char *dir, int exp, int s, const char *const *fp,
                       const char *const *lp, BwError *err)
{
    const Setting *st = papers_setting(exp, s);
    const Cell *b = &r->cells[exp][s][0][0]; /* the baseline of speedup and bytes_ratio */
    OutFile of;
    int rc = outfile_open(&of, dir, "compare.csv", err);
    if (rc) return rc;
    fputs("policy,folder,status,final_test_accuracy,best_test_accuracy,time_to_accuracy_s,"
          "speedup,bytes_per_worker,bytes_ratio,sim_time_s,compute_s,compression_s,"
          "communication_s,wait_s,"
          "steps\n",
          of.f);
    for (int role = 0, i = 0; role < st->n_roles; role++) {
        const Cell *c = &r->cells[exp][s][role][0];
        if (!plotted(c)) continue;
        csv_field_quoted(of.f, lp[i]);
        fprintf(of.f, ",%s,completed,%.9g,,", fp[i], c->final[0]);
        if (isfinite(c->tta[0])) fprintf(of.f, "%.9g", c->tta[0]);
        fputc(',', of.f);
        if (isfinite(b->tta[0] / c->tta[0])) fprintf(of.f, "%.6g", b->tta[0] / c->tta[0]);
        fprintf(of.f, ",%.17g,%.6g,%.9g,%.9g,%.9g,%.9g,%.9g,%.0f\n", c->bytes[0],
                c->bytes[0] / b->bytes[0], c->time[0], c->compute[0], c->compress[0], c->comm[0],
                c->wait[0], c->steps[0]);
        i++;
    }
    return outfile_commit(&of, err);
}

/* DIR/plots/SETTING/: the first seed's runs at the lower bandwidth side by side, as a compare
 * folder (compare.csv and its plots; `bellows plot` redraws them). */
static int setting_plots(const Repro *r, int exp, int s, BwError *err)
{
    const Setting *st = papers_setting(exp, s);
    char dir[4096], folders[MAX_ROLES][600], labels[MAX_ROLES][64];
    snprintf(dir, sizeof dir, "%s/plots/%s", r->out, st->name);
    const char *fp[MAX_ROLES], *lp[MAX_ROLES];
    int n = 0;
    for (int role = 0; role < st->n_roles; role++) {
        const Cell *c = &r->cells[exp][s][role][0];
        if (!plotted(c)) continue;
        snprintf(folders[n], sizeof folders[n], "../../%s", c->first_run);
        role_label(r, exp, s, role, labels[n], sizeof labels[n]);
        fp[n] = folders[n];
        lp[n] = labels[n];
        n++;
    }
    if (!n) return BW_OK;
    int rc = outdir_create(dir, err);
    if (!rc) rc = compare_csv(r, dir, exp, s, fp, lp, err);
    if (!rc) rc = plots_compare(dir, fp, lp, n, st->sim->target[r->size], err);
    return rc;
}

/* ---- report.md and the CSVs ---- */

/* The report's title and what it holds. */
static void report_head(const Repro *r, FILE *f, int runs)
{
    char seeds[256];
    jobs_seed_list(r, seeds, sizeof seeds);
    fprintf(f, "# bellows reproduce: %s%s\n\n",
            r->exp_on[0] && r->exp_on[1] ? "Accordion and ADPSGD"
            : r->exp_on[0]               ? "Accordion"
                                         : "ADPSGD",
            SIZE_NAME[r->size]);
    fprintf(f,
            "The papers' headline experiments, simulated by bellows on Fashion-MNIST: %d runs "
            "(seeds %s), %s version. Every figure below was measured by these runs; the "
            "sweeps' own tables and every run's files are under `sweeps/`. Accuracy and its "
            "standard deviation are over the seeds; times are simulated seconds. Each policy "
            "and seed was trained once, at the paper's first bandwidth, recording its gradient "
            "trace, and priced at every bandwidth by replaying that trace with the same policy "
            "(no policy's training depends on the network; the replay at the training bandwidth "
            "gives the live run's figures, tested). Accordion's batch mode changes the batch, "
            "which a replay cannot, so its sweep trains at each bandwidth.\n\n",
            runs, seeds, SIZE_LONG[r->size]);
}

/* The report's last section: every sweep's command line, to run one again. */
static void report_sweeps(const Repro *r, FILE *f)
{
    fprintf(f, "## The sweeps\n\nEach is a plain `bellows sweep`; run one again to check a "
               "figure. A sweep with `--record-traces` trained at one bandwidth; each of its runs "
               "was then priced at every bandwidth by a replay of its trace, "
               "`sweeps/<sweep>/priced/seed-S-K/` (seed S, the sweep's K-th policy, from 0):\n\n");
    for (int i = 0; i < r->n_jobs; i++) {
        const Job *j = &r->job[i];
        char cmd[8192];
        jobs_command(j, cmd, sizeof cmd);
        fprintf(f, "- `%s`\n", cmd);
        if (!j->priced) continue;
        fprintf(f,
                "  - priced: `bellows sweep --trace=sweeps/%s/RUN/trace.jsonl.gz "
                "--policies=POLICY --seeds=SEED",
                j->folder);
        for (int k = 0; k < j->n_price; k++) fprintf(f, " %s", j->price[k]);
        fprintf(f, "`\n");
    }
    fputc('\n', f);
}

static int csv_open(const Repro *r, OutFile *csv, int exp, BwError *err)
{
    char name[32];
    snprintf(name, sizeof name, "%s.csv", PAPERS_EXP_NAME[exp]);
    int rc = outfile_open(csv, r->out, name, err);
    if (rc) return rc;
    fputs("setting,role,policy,bandwidth,seeds,seeds_reaching_target,final_accuracy_mean,"
          "final_accuracy_sd,bytes_per_worker_mean,time_to_accuracy_mean_s,"
          "time_to_accuracy_sd_s,steps_to_target_mean,bytes_to_target_mean,compute_mean_s,"
          "communication_mean_s\n",
          csv->f);
    return BW_OK;
}

int report_write(Repro *r, BwError *err)
{
    int runs = cells_read(r), rc;
    OutFile rep, csv[N_EXPS]; /* zeroed: outfile_abort is then safe on any of them */
    memset(&rep, 0, sizeof rep);
    memset(csv, 0, sizeof csv);
    if ((rc = outfile_open(&rep, r->out, "report.md", err))) return rc;
    for (int e = 0; e < N_EXPS; e++)
        if (r->exp_on[e] && (rc = csv_open(r, &csv[e], e, err))) goto abandon;
    report_head(r, rep.f, runs);
    if (r->exp_on[0]) accordion_section(r, rep.f, csv[0].f);
    if (r->exp_on[1]) adpsgd_section(r, rep.f, csv[1].f);
    report_sweeps(r, rep.f);
    for (int e = 0; e < N_EXPS; e++)
        if (r->exp_on[e] && (rc = outfile_commit(&csv[e], err))) goto abandon;
    if ((rc = outfile_commit(&rep, err))) return rc;
    const int found = r->no_plots ? 0 : plots_find();
    if (found < 0)
        return bw_fail(err, BW_EINTR,
                       "reproduce: interrupted while looking for "
                       "gnuplot; the report is written, no plots");
    if (found)
        for (int e = 0; e < N_EXPS; e++)
            for (int s = 0; r->exp_on[e] && s < papers_n_settings(e); s++)
                if ((rc = setting_plots(r, e, s, err))) return rc;
    return BW_OK;
abandon: /* nothing half-written: the files not yet committed are removed */
    outfile_abort(&rep);
    for (int e = 0; e < N_EXPS; e++) outfile_abort(&csv[e]);
    return rc;
}
