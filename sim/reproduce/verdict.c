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
/* "similar accuracy": within this many points */
#define SIMILAR_POINTS 0.5
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

/* "accuracy similar to low compression": every setting's Accordion within SIMILAR_POINTS of
 * low compression; direction only if it is at least above high compression. */
static void accordion_accuracy(const Repro *r, FILE *f)
{
    int worst = V_UNKNOWN;
    fprintf(f, "- Claim: *Accordion's accuracy is similar to low compression's.* Per setting "
               "(Accordion minus low, minus high, in points; share of critical regimes):");
    for (int s = 0; s < papers_n_settings(0); s++) {
        const Cell(*x)[MAX_BWS] = r->cells[0][s];
        double lo = mean(r, x[0][0].final), hi = mean(r, x[1][0].final);
        double ac = mean(r, x[2][0].final);
        if (isnan(lo) || isnan(ac)) continue;
        if (x[0][0].diverged || x[2][0].diverged) { /* no accuracy to compare */
            fprintf(f, " %s diverged (left out);", papers_setting(0, s)->name);
            continue;
        }
        int v = ac >= lo - SIMILAR_POINTS / 100 ? V_YES : ac > hi ? V_DIRECTION : V_NO;
        worst = worst == V_UNKNOWN || v > worst ? v : worst;
        fprintf(f, " %s %+.2f / %+.2f (%.0f%% critical);", papers_setting(0, s)->name,
                100 * (ac - lo), 100 * (ac - hi), 100 * critical_share(r, s));
    }
    fprintf(f,
            " %s for the worst setting. Cause: Accordion trains at the low level only in "
            "the critical regimes it detects, so its accuracy falls toward high compression's "
            "as that share falls.\n",
            VERDICT[worst]);
}

/* The largest ratio a(role ra) / b(role rb) over the compression settings (not the batch one)
 * whose runs did not diverge, at bandwidth bw; *at the setting. metric 0: bytes, 1: time to
 * target. */
static double best_ratio(const Repro *r, int metric, int bw, int ra, int rb, int *at)
{
    double best = NAN;
    *at = -1;
    for (int s = 0; s < papers_n_settings(0); s++) {
        if (strstr(papers_setting(0, s)->name, "-batch")) continue;
        const Cell(*x)[MAX_BWS] = r->cells[0][s];
        if (x[ra][bw].diverged || x[rb][bw].diverged) continue;
        double v = metric == 0 ? cells_ratio(r, x[ra][bw].bytes, x[rb][bw].bytes)
                               : cells_ratio(r, x[ra][bw].tta, x[rb][bw].tta);
        if (isfinite(v) && (isnan(best) || v > best)) best = v, *at = s;
    }
    return best;
}

static int up_to(double measured, double claimed)
{
    if (isnan(measured)) return V_UNKNOWN;
    return measured >= CLAIM_SLACK * claimed ? V_YES : measured > NO_EFFECT ? V_DIRECTION : V_NO;
}

static void accordion_bytes_and_speed(const Repro *r, FILE *f)
{
    int at, at_hi;
    double less = best_ratio(r, 0, 0, 0, 2, &at), bound = best_ratio(r, 0, 0, 0, 1, &at_hi);
    fprintf(f,
            "- Claim: *up to 5.5x less communication than low compression.* Largest measured: "
            "%.2fx (%s). %s. Cause: the bytes fall at most by low / high compression's ratio "
            "(largest %.2fx), and only in the epochs Accordion spends in normal regimes.\n",
            less, at >= 0 ? papers_setting(0, at)->name : "-", VERDICT[up_to(less, 5.5)], bound);
    for (int bw = 0; bw < MAX_BWS; bw++) {
        double spd = best_ratio(r, 1, bw, 0, 2, &at);
        double steps = at >= 0 ? cells_ratio(r, r->cells[0][at][0][bw].tta_step,
                                             r->cells[0][at][2][bw].tta_step)
                               : NAN;
        const Cell *lo = at >= 0 ? &r->cells[0][at][0][bw] : NULL;
        double share = lo ? mean(r, lo->comm) / mean(r, lo->time) : NAN;
        fprintf(f,
                "- Claim: *up to 4.1x end-to-end speedup over low compression*, at %s. Largest "
                "measured time-to-target ratio: %.2fx (%s). %s. Cause: the speedup is the steps "
                "ratio (%.2fx) times the per-step cost ratio; a step of low compression spends "
                "%.0f%% of its time communicating, which bounds the second.\n",
                PAPERS_BW[0][bw], spd, at >= 0 ? papers_setting(0, at)->name : "-",
                VERDICT[up_to(spd, 4.1)], steps, 100 * share);
    }
}

void verdict_accordion(const Repro *r, FILE *f)
{
    fprintf(f,
            "### Verdicts\n\nReproduced: at least %.0f%% of an \"up to\" figure, accuracy "
            "within %.1f points; direction only: the effect (a ratio above %.2f) but smaller; "
            "not reproduced: no effect or the opposite.\n\n",
            100 * CLAIM_SLACK, SIMILAR_POINTS, NO_EFFECT);
    accordion_accuracy(r, f);
    accordion_bytes_and_speed(r, f);
    fprintf(f, "\n");
}

/* ADPSGD's speedup over sync at bandwidth bw against the claimed range [lo, hi]. */
static void adpsgd_speedup(const Repro *r, FILE *f, int s, int bw, double lo, double hi)
{
    const Cell(*x)[MAX_BWS] = r->cells[1][s];
    double best = NAN;
    int role = -1;
    for (int k = ADP_ADPSGD4; k <= ADP_ADPSGD16; k++) {
        double v = cells_ratio(r, x[ADP_SYNC][bw].tta, x[k][bw].tta);
        if (isfinite(v) && (isnan(best) || v > best)) best = v, role = k;
    }
    int v = isnan(best)                                            ? V_UNKNOWN
            : best >= CLAIM_SLACK * lo && best <= hi / CLAIM_SLACK ? V_YES
            : best > NO_EFFECT                                     ? V_DIRECTION
                                                                   : V_NO;
    const Cell *sy = &x[ADP_SYNC][bw];
    double ceiling = mean(r, sy->time) / mean(r, sy->compute);
    double steps = role >= 0 ? cells_ratio(r, sy->tta_step, x[role][bw].tta_step) : NAN;
    fprintf(f,
            "- Claim: *%.2fx to %.2fx speedup over full-communication SGD at %s.* Measured (the "
            "better budget, `%s`): %.2fx. %s. Cause: per step, averaging less can gain at most "
            "sync's step / its compute = %.2fx; sync needed %.2fx ADPSGD's steps to the target "
            "(above 1: ADPSGD needed fewer).\n",
            lo, hi, PAPERS_BW[1][bw], role >= 0 ? x[role][bw].policy : "-", best, VERDICT[v],
            ceiling, steps);
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

/* "half the communication of gradient quantisation" (REFERENCES.md), bytes to the target */
static void adpsgd_against_qsgd(const Repro *r, FILE *f, int s)
{
    const Cell(*x)[MAX_BWS] = r->cells[1][s];
    const Cell *ad = &x[ADP_ADPSGD4][0], *q = &x[ADP_QSGD][0];
    double ratio = cells_ratio(r, ad->tta_bytes, q->tta_bytes);
    double wire = cells_ratio(r, q->bytes, x[ADP_SYNC][0].bytes);
    int v = isnan(ratio)                 ? V_UNKNOWN
            : ratio <= 0.5 / CLAIM_SLACK ? V_YES
            : ratio < 1 / NO_EFFECT      ? V_DIRECTION
                                         : V_NO;
    fprintf(f,
            "- Claim: *about half the communication of gradient quantisation.* Bytes to the "
            "target, `%s` / `%s`: %.2fx. %s. Cause: QSGD's 8-bit vectors travel in an "
            "allgather, which among %d workers moves %.2fx the bytes of sync's fp32 ring "
            "allreduce per step; ADPSGD averages every few steps.\n",
            ad->policy, q->policy, ratio, VERDICT[v], papers_setting(1, s)->sim->workers, wire);
}

void verdict_adpsgd(const Repro *r, FILE *f, int s)
{
    fprintf(f,
            "#### Verdicts\n\nReproduced: within a factor %.2f of the claimed range or "
            "figure; direction only: the effect, outside that; not reproduced: no effect or "
            "the opposite.\n\n",
            1 / CLAIM_SLACK);
    adpsgd_speedup(r, f, s, 0, 1.46, 1.95);
    adpsgd_speedup(r, f, s, 1, 1.14, 1.27);
    adpsgd_against_cpsgd(r, f, s);
    adpsgd_against_qsgd(r, f, s);
    fprintf(f, "\n");
}
