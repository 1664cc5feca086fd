/* verdict.c: the report's verdict on each claim of the two papers: reproduced (the claimed effect
 * at about the claimed size), direction only (the effect, but clearly smaller or larger), or not
 * reproduced (no effect, or the opposite), each with the figures it rests on and the measured
 * cause. The thresholds are stated in the report beside the verdicts. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "reproduce_internal.h"

/* "Up to X" and range claims count as reproduced within this factor of the claimed bound */
#define CLAIM_SLACK 0.8
/* "similar accuracy": within this many points; beyond CLOSE_POINTS of loss, not similar */
#define SIMILAR_POINTS 0.5
#define CLOSE_POINTS   2.0
/* an effect smaller than this ratio is no effect */
#define NO_EFFECT 1.02

static const char *const VERDICT[] = {"**reproduced**", "**direction only**", "**not reproduced**",
                                      "**not measured**"};
enum { V_YES, V_DIRECTION, V_NO, V_UNKNOWN };

static double mean(const Repro *r, const double *v)
{
    return cells_mean(r, v, NULL);
}

/* The share of critical regimes (C among C and N) in Accordion's first run of setting s. */
static double critical_share(const Repro *r, int s)
{
    char reg[4096];
    cells_regimes(r, r->cells[0][s][2][0].first_run, reg, sizeof reg);
    int c = 0, all = 0;
    for (const char *p = reg; *p; p++) {
        c += *p == 'C';
        all += *p == 'C' || *p == 'N';
    }
    return all ? (double)c / all : NAN;
}

/* "1.23x", or "-" where there is no figure (a role that never reached the target). */
static const char *ratio_text(double x, char *buf, size_t n)
{
    if (isfinite(x))
        snprintf(buf, n, "%.2fx", x);
    else
        snprintf(buf, n, "-");
    return buf;
}

static int up_to(double measured, double claimed)
{
    if (isnan(measured)) return V_UNKNOWN;
    return measured >= CLAIM_SLACK * claimed ? V_YES : measured > NO_EFFECT ? V_DIRECTION : V_NO;
}

/* The settings of the Accordion table that have runs, in the table's order: how many. */
static int accordion_rows(const Repro *r, int *rows)
{
    int n = 0;
    for (int s = 0; s < papers_n_settings(0); s++) {
        const Cell(*x)[MAX_BWS] = r->cells[0][s];
        if (x[0][0].n || x[2][0].n) rows[n++] = s;
    }
    return n;
}

/* "accuracy similar to low compression", from every row of the main table: reproduced if
 * Accordion is within SIMILAR_POINTS of low compression (or above) in every setting, direction
 * only if within CLOSE_POINTS, not reproduced if some setting loses more. */
static void accordion_accuracy(const Repro *r, FILE *f)
{
    int rows[MAX_SETTINGS], n = accordion_rows(r, rows), worst = V_UNKNOWN;
    fprintf(f, "- Claim: *Accordion's accuracy is similar to low compression's.* Every setting "
               "(Accordion minus low, minus high, in points; share of critical regimes):");
    for (int i = 0; i < n; i++) {
        int s = rows[i];
        const Cell(*x)[MAX_BWS] = r->cells[0][s];
        double lo = mean(r, x[0][0].final), hi = mean(r, x[1][0].final);
        double ac = mean(r, x[2][0].final);
        if (x[0][0].diverged || x[2][0].diverged || isnan(lo) || isnan(ac)) {
            fprintf(f, " %s not measured (%s);", papers_setting(0, s)->name,
                    x[0][0].diverged || x[2][0].diverged ? "diverged" : "no accuracy");
            continue;
        }
        double d = 100 * (ac - lo);
        int v = d >= -SIMILAR_POINTS ? V_YES : d >= -CLOSE_POINTS ? V_DIRECTION : V_NO;
        worst = worst == V_UNKNOWN || v > worst ? v : worst;
        fprintf(f, " %s %+.2f / %+.2f (%.0f%% critical);", papers_setting(0, s)->name, d,
                100 * (ac - hi), 100 * critical_share(r, s));
    }
    fprintf(f,
            " %s: the worst setting decides. Cause: Accordion trains at the low level only in "
            "the critical regimes it detects, so its accuracy falls toward high compression's "
            "as that share falls.\n",
            VERDICT[worst]);
}

/* Resolution of a time to target measured at epoch ends: one epoch of the steps it took, as a
 * share of them (the crossing lies in the last epoch). */
static double epoch_share(const Repro *r, const Cell *c, int epochs)
{
    double per_epoch = mean(r, c->steps) / epochs, to_target = mean(r, c->tta_step);
    return per_epoch > 0 && to_target > 0 ? fmin(1, per_epoch / to_target) : NAN;
}

/* The range a ratio of times to target num / den may lie in, each time's crossing lying in its
 * last epoch before the evaluation that saw it: [R (1 - s_num), R / (1 - s_den)] (hi infinite
 * when den's crossing may lie anywhere in its first epoch). */
static void ratio_range(const Repro *r, const Cell *num, const Cell *den, int epochs, double *lo,
                        double *hi)
{
    double ratio = cells_ratio(r, num->tta, den->tta);
    double sn = epoch_share(r, num, epochs), sd = epoch_share(r, den, epochs);
    *lo = ratio * (1 - (isfinite(sn) ? sn : 1));
    *hi = isfinite(sd) && sd < 1 ? ratio / (1 - sd) : INFINITY;
}

/* " (0.91x to 1.12x)" or " (0.91x or more)": the range of a ratio of times to target. */
static void print_range(FILE *f, double lo, double hi)
{
    if (isfinite(hi))
        fprintf(f, " (%.2fx to %.2fx)", lo, hi);
    else
        fprintf(f, " (%.2fx or more)", lo);
}

/* "up to 5.5x less communication than low compression", from every row of the main table
 * (the batch setting too: Accordion's batch mode against the small batch). */
static void accordion_bytes(const Repro *r, FILE *f)
{
    int rows[MAX_SETTINGS], n = accordion_rows(r, rows), at = -1;
    double best = NAN;
    char t[32];
    fprintf(f, "- Claim: *up to 5.5x less communication than low compression.* Every setting "
               "(low / Accordion bytes; low / high):");
    for (int i = 0; i < n; i++) {
        const Cell(*x)[MAX_BWS] = r->cells[0][rows[i]];
        double v = x[0][0].diverged || x[2][0].diverged
                       ? NAN
                       : cells_ratio(r, x[0][0].bytes, x[2][0].bytes);
        fprintf(f, " %s %s", papers_setting(0, rows[i])->name, ratio_text(v, t, sizeof t));
        fprintf(f, " / %s;", ratio_text(cells_ratio(r, x[0][0].bytes, x[1][0].bytes), t, sizeof t));
        if (isfinite(v) && (isnan(best) || v > best)) best = v, at = rows[i];
    }
    fprintf(f,
            " largest %s (%s): %s. Cause: the bytes fall at most by low / high's ratio, and "
            "only in the epochs Accordion spends in normal regimes.\n",
            ratio_text(best, t, sizeof t), at >= 0 ? papers_setting(0, at)->name : "-",
            VERDICT[up_to(best, 5.5)]);
}

/* Of setting s at bandwidth bw, what the speedup is measured against: the role that reached
 * the target first when it is not Accordion, and the baseline's bytes per step against a dense
 * fp32 ring allreduce of the real model's. */
static void speedup_caveats(const Repro *r, FILE *f, int s, int bw)
{
    const Setting *st = papers_setting(0, s);
    const Cell(*x)[MAX_BWS] = r->cells[0][s];
    int first = -1;
    for (int role = 0; role < st->n_roles; role++) {
        double t = mean(r, x[role][bw].tta);
        if (isfinite(t) && (first < 0 || t < mean(r, x[first][bw].tta))) first = role;
    }
    if (first >= 0 && first != 2)
        fprintf(f, " In %s the first to the target was %s (%.4g s; Accordion: %.4g s).", st->name,
                st->roles[first], mean(r, x[first][bw].tta), mean(r, x[2][bw].tta));
    const int p = st->sim->workers;
    double dense = 2.0 * (p - 1) / p * 4 * r->cost[0].params; /* bytes a worker sends */
    double low = mean(r, x[0][bw].bytes) / mean(r, x[0][bw].steps);
    if (isfinite(low) && dense > 0)
        fprintf(f, " Its baseline, %s, sends %.2fx a dense fp32 ring allreduce's bytes a step.",
                st->roles[0], low / dense);
}

/* Whether [lo, hi] holds a threshold of up_to(., claimed): the verdict within the resolution. */
static int straddles(double lo, double hi, double claimed)
{
    return (lo < CLAIM_SLACK * claimed) != (hi < CLAIM_SLACK * claimed) ||
           (lo <= NO_EFFECT) != (hi <= NO_EFFECT);
}

/* "up to 4.1x end-to-end speedup over low compression" at bandwidth bw, from every row. */
static void accordion_speed(const Repro *r, FILE *f, int bw)
{
    int rows[MAX_SETTINGS], n = accordion_rows(r, rows), at = -1;
    double best = NAN, lo_at = NAN, hi_at = NAN;
    char t[32];
    fprintf(f,
            "- Claim: *up to 4.1x end-to-end speedup over low compression*, at %s. Every setting "
            "(low / Accordion time to target, and the range its resolution allows):",
            PAPERS_BW[0][bw]);
    for (int i = 0; i < n; i++) {
        const Cell(*x)[MAX_BWS] = r->cells[0][rows[i]];
        const int epochs = papers_setting(0, rows[i])->sim->epochs[r->size];
        double v = x[0][bw].diverged || x[2][bw].diverged
                       ? NAN
                       : cells_ratio(r, x[0][bw].tta, x[2][bw].tta);
        double lo, hi;
        ratio_range(r, &x[0][bw], &x[2][bw], epochs, &lo, &hi);
        fprintf(f, " %s %s", papers_setting(0, rows[i])->name, ratio_text(v, t, sizeof t));
        if (isfinite(v)) print_range(f, lo, hi);
        fputc(';', f);
        if (isfinite(v) && (isnan(best) || v > best))
            best = v, at = rows[i], lo_at = lo, hi_at = hi;
    }
    fprintf(f, " largest %s (%s): %s.", ratio_text(best, t, sizeof t),
            at >= 0 ? papers_setting(0, at)->name : "-", VERDICT[up_to(best, 4.1)]);
    if (at < 0) {
        fputc('\n', f);
        return;
    }
    if (straddles(lo_at, hi_at, 4.1))
        fprintf(f, " Its range holds a threshold: the verdict could be the next one.");
    speedup_caveats(r, f, at, bw);
    const Cell *lo = &r->cells[0][at][0][bw];
    double steps = cells_ratio(r, lo->tta_step, r->cells[0][at][2][bw].tta_step);
    fprintf(f,
            " Cause: the speedup is the steps ratio (%s) times the per-step cost ratio; a step "
            "of low compression spends %.0f%% of its time communicating, which bounds the "
            "second.\n",
            ratio_text(steps, t, sizeof t), 100 * mean(r, lo->comm) / mean(r, lo->time));
}

void verdict_accordion(const Repro *r, FILE *f)
{
    fprintf(f,
            "### Verdicts\n\nEach verdict rests on every row of the main table above (every "
            "setting; a diverged one is not measured). Reproduced: at least %.0f%% of an \"up "
            "to\" figure in some setting; accuracy within %.1f points of low compression in "
            "every setting. Direction only: the effect (a ratio above %.2f) but smaller; "
            "accuracy within %.1f points. Not reproduced: no effect or the opposite; an accuracy "
            "loss of more than %.1f points. Times to target come from evaluations at epoch ends, "
            "so each is known to within its last epoch: beside each speedup, the range of ratios "
            "its two times allow.\n\n",
            100 * CLAIM_SLACK, SIMILAR_POINTS, NO_EFFECT, CLOSE_POINTS, CLOSE_POINTS);
    accordion_accuracy(r, f);
    accordion_bytes(r, f);
    for (int bw = 0; bw < MAX_BWS; bw++) accordion_speed(r, f, bw);
    fprintf(f, "\n");
}

/* ADPSGD's speedup over sync at bandwidth bw against the claimed range [lo, hi], from both
 * budgets' rows (the better decides: the claim is ADPSGD's at its own tuning). */
static void adpsgd_speedup(const Repro *r, FILE *f, int s, int bw, double lo, double hi)
{
    const Cell(*x)[MAX_BWS] = r->cells[1][s];
    const int epochs = papers_setting(1, s)->sim->epochs[r->size];
    double best = NAN;
    int role = -1;
    char t[32];
    fprintf(f,
            "- Claim: *%.2fx to %.2fx speedup over full-communication SGD at %s.* Each budget "
            "(and the range its resolution allows):",
            lo, hi, PAPERS_BW[1][bw]);
    for (int k = ADP_ADPSGD4; k <= ADP_ADPSGD16; k++) {
        double v = cells_ratio(r, x[ADP_SYNC][bw].tta, x[k][bw].tta), rlo, rhi;
        ratio_range(r, &x[ADP_SYNC][bw], &x[k][bw], epochs, &rlo, &rhi);
        fprintf(f, " `%s` %s", x[k][bw].policy, ratio_text(v, t, sizeof t));
        if (isfinite(v)) print_range(f, rlo, rhi);
        fputc(';', f);
        if (isfinite(v) && (isnan(best) || v > best)) best = v, role = k;
    }
    int v = isnan(best)                                            ? V_UNKNOWN
            : best >= CLAIM_SLACK * lo && best <= hi / CLAIM_SLACK ? V_YES
            : best > NO_EFFECT                                     ? V_DIRECTION
                                                                   : V_NO;
    const Cell *sy = &x[ADP_SYNC][bw];
    double ceiling = mean(r, sy->time) / mean(r, sy->compute);
    double steps = role >= 0 ? cells_ratio(r, sy->tta_step, x[role][bw].tta_step) : NAN;
    char c[32];
    fprintf(f,
            " %s: the better budget decides. Cause: per step, averaging less can gain at most "
            "sync's step / its compute = %s; sync needed %s ADPSGD's steps to the target "
            "(above 1: ADPSGD needed fewer).\n",
            VERDICT[v], ratio_text(ceiling, t, sizeof t), ratio_text(steps, c, sizeof c));
}

/* "smaller training loss and higher accuracy than CPSGD with less communication", at equal
 * budgets (adpsgd:period=P against cpsgd:period=P, P = 4 and 16) */
static void adpsgd_against_cpsgd(const Repro *r, FILE *f, int s)
{
    const Cell(*x)[MAX_BWS] = r->cells[1][s];
    int wins = 0, n = 0;
    fprintf(f, "- Claim: *smaller training loss and higher accuracy than constant-period "
               "averaging (CPSGD).* At equal budgets (final training loss, accuracy, bytes):");
    for (int k = 0; k < 2; k++) {
        const Cell *ad = &x[ADP_ADPSGD4 + k][0], *cp = &x[ADP_CPSGD4 + k][0];
        double la = mean(r, ad->loss), lc = mean(r, cp->loss);
        double aa = mean(r, ad->final), ac = mean(r, cp->final);
        if (isnan(la) || isnan(lc)) continue;
        wins += (la < lc) + (aa > ac);
        n += 2;
        fprintf(f, " `%s` %.4f / %.4f / %.2fx of `%s`'s %.4f / %.4f;", ad->policy, la, aa,
                cells_ratio(r, ad->bytes, cp->bytes), cp->policy, lc, ac);
    }
    int v = n == 0 ? V_UNKNOWN : wins == n ? V_YES : wins > 0 ? V_DIRECTION : V_NO;
    fprintf(f,
            " %s (%d of %d comparisons favour ADPSGD). Cause: on the same number of "
            "averagings, ADPSGD moves them toward the steps where the measured parameter "
            "variance is largest (its periods are in the table above).\n",
            VERDICT[v], wins, n);
}

/* "half the communication of gradient quantisation" (REFERENCES.md), bytes to the target, from
 * both budgets' rows (the worse decides: "about half" is a claim about ADPSGD, not one tuning). */
static void adpsgd_against_qsgd(const Repro *r, FILE *f, int s)
{
    const Cell(*x)[MAX_BWS] = r->cells[1][s];
    const Cell *q = &x[ADP_QSGD][0];
    double worst = NAN;
    char t[32];
    fprintf(f,
            "- Claim: *about half the communication of gradient quantisation.* Bytes to the "
            "target against `%s`'s:",
            q->policy);
    for (int k = ADP_ADPSGD4; k <= ADP_ADPSGD16; k++) {
        double ratio = cells_ratio(r, x[k][0].tta_bytes, q->tta_bytes);
        fprintf(f, " `%s` %s;", x[k][0].policy, ratio_text(ratio, t, sizeof t));
        if (isfinite(ratio) && (isnan(worst) || ratio > worst)) worst = ratio;
    }
    int v = isnan(worst)                 ? V_UNKNOWN
            : worst <= 0.5 / CLAIM_SLACK ? V_YES
            : worst < 1 / NO_EFFECT      ? V_DIRECTION
                                         : V_NO;
    fprintf(f,
            " %s: the worse budget decides. Cause: QSGD's 8-bit vectors travel in an allgather, "
            "which among %d workers moves %s the bytes of sync's fp32 ring allreduce per step; "
            "ADPSGD averages every few steps.\n",
            VERDICT[v], papers_setting(1, s)->sim->workers,
            ratio_text(cells_ratio(r, q->bytes, x[ADP_SYNC][0].bytes), t, sizeof t));
}

void verdict_adpsgd(const Repro *r, FILE *f, int s)
{
    fprintf(f,
            "#### Verdicts\n\nEach verdict rests on the rows of the tables above that it "
            "names. Reproduced: within a factor %.2f of the claimed range or figure; direction "
            "only: the effect (a ratio beyond %.2f), outside that; not reproduced: no effect or "
            "the opposite. Times to target come from evaluations at epoch ends, so each is known "
            "to within its last epoch: beside each speedup, the range of ratios its two "
            "times allow.\n\n",
            1 / CLAIM_SLACK, NO_EFFECT);
    adpsgd_speedup(r, f, s, 0, 1.46, 1.95);
    adpsgd_speedup(r, f, s, 1, 1.14, 1.27);
    adpsgd_against_cpsgd(r, f, s);
    adpsgd_against_qsgd(r, f, s);
    fprintf(f, "\n");
}
