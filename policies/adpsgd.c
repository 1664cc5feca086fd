/* adpsgd.c: ADPSGD, adaptive periodic parameter averaging (Jiang & Agrawal, arXiv 2007.06134):
 * a RECONSTRUCTION. The principle is the paper's: the signal is the variance of the parameters
 * across workers, V = mean_i ||x_i - xbar||^2, measured at each averaging; synchronise often
 * early (large variance) and less often later, so the period grows. Its period-update rule, its
 * constants and its code were not published; the rule below is our own.
 *
 *   1. Calibrate: average after every step for the first `calib` averagings; the target is
 *      V* = slack x the mean of the variances they measured (what one step of divergence costs
 *      at the start of training).
 *   2. Then, at each measurement V of an interval of p local steps, estimate the per-step
 *      divergence rate r = V / p (between averagings, workers drift apart like random walks, so
 *      V grows about linearly in p) and choose the next period so that the predicted variance
 *      stays under the target: p' = floor(V* / r), clamped to [1, min(max, grow x p)]
 *      (grow bounds the growth per update against one noisy measurement; r = 0 gives the cap).
 * As the gradients shrink and the lr decays, r falls and the period grows. A measurement reaches
 * the policy one step after its averaging (obs.averaged, obs.param_variance), so the new period
 * applies to the interval already under way. Without measurements the period stays 1. */
#include "policy_impl.h"

#include <math.h>

typedef struct {
    int calib, max;
    double slack, grow;
    PolicyClock clock;
    long pending_len; /* length of the interval averaged after the previous step; 0: none */
    int n_calib;      /* calibration measurements so far */
    double calib_sum; /* their variances, summed */
    double target;    /* V*, once calibrated */
} AdpsgdState;

enum { OPT_CALIB, OPT_SLACK, OPT_GROW, OPT_MAX };

static const BellowsPolicyOpt adpsgd_opts[] = {
    [OPT_CALIB] = {"calib", BELLOWS_OPT_INT, "8", 1, 1e6, NULL,
                   "averagings at period 1 that calibrate the target variance"},
    [OPT_SLACK] = {"slack", BELLOWS_OPT_DOUBLE, "1", 0.01, 1e6, NULL,
                   "target variance = slack x the calibration mean"},
    [OPT_GROW] = {"grow", BELLOWS_OPT_DOUBLE, "2", 1, 1e6, NULL,
                  "largest growth factor of the period per update"},
    [OPT_MAX] = {"max", BELLOWS_OPT_INT, "16", 1, 1e6, NULL, "longest period"},
};

static int adpsgd_init(BellowsPolicy *p, const BellowsPolicyValue *vals, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    AdpsgdState *s = p->state;
    s->calib = (int)vals[OPT_CALIB].num;
    s->slack = vals[OPT_SLACK].num;
    s->grow = vals[OPT_GROW].num;
    s->max = (int)vals[OPT_MAX].num;
    s->clock.period = 1;
    return BELLOWS_POLICY_OK;
}

/* One variance measurement v of an interval of len local steps. */
static void adpsgd_measure(AdpsgdState *s, double v, long len)
{
    if (s->n_calib < s->calib) {
        s->calib_sum += v;
        if (++s->n_calib < s->calib) return;
        s->target = s->slack * s->calib_sum / s->n_calib;
    }
    double rate = v / (double)len;
    double cap = s->grow * s->clock.period;
    if (cap > s->max) cap = s->max;
    double next = rate > 0 ? floor(s->target / rate + 1e-9) : cap;
    s->clock.period = next < 1 ? 1 : next > cap ? (int)cap : (int)next;
}

static void adpsgd_observe(BellowsPolicy *p, const BellowsPolicyObs *obs)
{
    AdpsgdState *s = p->state;
    if (obs->averaged && s->pending_len > 0 && isfinite(obs->param_variance) &&
        obs->param_variance >= 0)
        adpsgd_measure(s, obs->param_variance, s->pending_len);
    s->pending_len = 0;
}

static void adpsgd_decide(BellowsPolicy *p, const BellowsPolicyObs *obs, BellowsPolicyDecision *d)
{
    (void)obs;
    AdpsgdState *s = p->state;
    d->period = s->clock.period;
    long len = s->clock.since + 1; /* local steps in the interval, this one included */
    d->average = policy_clock_tick(&s->clock);
    if (d->average) s->pending_len = len;
}

static void adpsgd_describe(const BellowsPolicy *p, char *buf, size_t n)
{
    const AdpsgdState *s = p->state;
    if (s->n_calib < s->calib)
        snprintf(buf, n, "period=%d calib=%d/%d", s->clock.period, s->n_calib, s->calib);
    else
        snprintf(buf, n, "period=%d", s->clock.period);
}

const BellowsPolicyOps policy_adpsgd_ops = {
    .iVersion = BELLOWS_POLICY_VERSION,
    .name = "adpsgd",
    .help = "local SGD whose period grows as the parameter variance across workers falls",
    .source = "Jiang & Agrawal, Adaptive Periodic Averaging, arXiv 2007.06134 (principle only; "
              "rule and constants are a bellows reconstruction)",
    .mode = BELLOWS_POLICY_PERIODIC,
    .opts = adpsgd_opts,
    .n_opts = BELLOWS_N(adpsgd_opts),
    .state_size = sizeof(AdpsgdState),
    .init = adpsgd_init,
    .observe = adpsgd_observe,
    .decide = adpsgd_decide,
    .describe = adpsgd_describe,
    .reconstruction = 1,
    .needs = BELLOWS_HAS_VARIANCE, /* its signal; without it the period only grows */
};
