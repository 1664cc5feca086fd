/* adpsgd.c: ADPSGD, adaptive periodic parameter averaging (Jiang & Agrawal, arXiv 2007.06134):
 * a RECONSTRUCTION. The principle is the paper's: the signal is the variance of the parameters
 * across workers, V = mean_i ||x_i - xbar||^2, measured at each averaging, and on a fixed
 * communication budget one should synchronise more often while the variance is large and less
 * often as it falls. The paper's period rule, constants and code were not published; the rule
 * below is derived from the local-SGD bounds and is our own.
 *
 * Derivation. The local-SGD bounds (Wang & Joshi, Cooperative SGD, arXiv 1808.07576, JMLR 22
 * (2021); the premise of AdaComm and of Jiang & Agrawal) charge the error with the workers'
 * discrepancy from their mean summed over the steps, sum_t V_t. Within an interval of local
 * steps the variance grows from 0 at the averaging as V(k) = r k^b after k steps, r being the
 * per-step divergence rate (lr^2 times the disagreement of the workers' gradients) and b >= 1
 * the growth exponent (1 for a random walk; more with momentum, which carries each gradient
 * into the next ~1/(1-mu) steps: measured on the mlp, b ~ 1.4 with local momentum buffers and
 * ~ 1.75 with averaged ones). An interval of p steps then costs sum_k V(k) ~ r p^(b+1) / (b+1).
 * Minimising the total cost int r(t) p(t)^b dt over a run of T steps on a budget of N
 * averagings, int dt / p(t) = N, gives (Lagrange) b r p^(b+1) = const:
 *     p(t) = C r(t)^(-a),  a = 1 / (b + 1)   (a = 1/2 for a random walk: 1 / sqrt(r)),
 * with C the one constant that spends the budget. Equivalently p V(p) is the same at every
 * averaging, a condition on measured quantities alone.
 *
 * Rule. T = epochs x steps per epoch; the budget is N = floor(T / period) averagings, what
 * cpsgd:period=P makes, so the two compare at equal bytes (the paper's framing).
 *   1. Each measurement V of an interval of l steps from step t0 gives the lr-free rate
 *      u = V / (l^g x the interval's mean lr^2), g = `growth`. Intervals that start before step
 *      `warmup` (momentum building up) are not used. log u is smoothed, ubar = (log u + ubar)/2,
 *      and fitted against x = log(t0 + l/2) by least squares weighted by l x exp(-(x_last - x))
 *      (a point from e times earlier weighs 1/e: the trend of the recent run): the trend
 *      L(t) = alpha + beta log t, beta clamped to [-2, 1], 0 until 3 measurements.
 *   2. The forecast rate at a later step s is r(s) ~ exp(L(s)) lr(s)^2: u on the trend, lr(s)
 *      the current lr times `decay` (or the factor of the run's first decay, once seen) at each
 *      decay epoch of the context still to come. (A schedule the context does not describe,
 *      cosine or warm-up, is not forecast: only its measurements show it.)
 *   3. After each averaging, at step t with S = T - t steps and R = N - (averagings so far)
 *      left, the plan p(s) = C (r(s) / r(t))^(-a), a = 1/(g+1), spends R averagings over S
 *      steps when C = J / R, J = int_t^T (r(s) / r(t))^a ds (closed form per lr phase); the
 *      next period is  p = exp(a (L(t) - ubar)) x J / R,  rounded, in [1, S]: shorter than the
 *      plan while the measured rate is above its trend, longer below. R = 0: no more averaging.
 *      Before any measurement p = J / R with beta = 0: the lr schedule alone.
 *   4. The steps before `warmup` average every step (p = 1), as the paper's abstract says ("more
 *      frequently in early iterations to reduce the initial large variance"), when that spends
 *      at most a tenth of the budget (warmup <= N / 10); otherwise they follow the plan. Their
 *      intervals are not measured (step 1).
 * Constants: growth g = 1.5 (between the mlp's measured 1.4 and 1.75), warmup 10 steps (the
 * time constant 1/(1-mu) of momentum 0.9), decay 0.1 (PyTorch MultiStepLR's usual gamma and
 * bellows' --lr-decay-factor), smoothing 1/2, memory 1 (in log time), beta in [-2, 1].
 * Because u is measured with the same g that steers p, at a given C the fixed point of step 3
 * is p ~ r^(-1/(b+1)) whatever g is (g only sets how fast it is reached): the estimate does
 * not depend on the current period, as one assuming V ~ l (b = 1) did. Under a constant lr
 * and a flat variance the period stays near `period`; a falling trend gives shorter periods
 * early and longer ones late (a fall that the trend could not foresee is met with the budget
 * already spent); a 10x lr decay, the variance ~ lr^2, lengthens it 100^a-fold (6.3x at
 * g = 1.5). A measurement reaches the policy one step after its averaging (obs.averaged), so
 * a new period applies to the interval already under way. Without measurements (one worker, a
 * replay without variance) the period follows the plan alone. */
#include "policy_impl.h"

#include <limits.h>
#include <math.h>

#define ADPSGD_BETA_MIN (-2.0)
#define ADPSGD_BETA_MAX 1.0
#define ADPSGD_MEMORY   1.0
/* the warm-up averages every step if that spends at most 1/this of the budget */
#define ADPSGD_WARMUP_SHARE 10

typedef struct {
    double g, a, decay;
    long warmup, T, budget; /* T steps; budget: averagings over the run */
    long decay_step[BELLOWS_POLICY_MAX_DECAYS];
    int n_decays, decay_seen;
    double lr_prev;
    PolicyClock clock;
    long n_avg;      /* averagings decided so far */
    long start;      /* first step of the interval under way */
    double lr2_sum;  /* its lr^2, summed over its steps */
    long pend_start; /* the interval averaged after the previous step; pend_len 0: none */
    long pend_len;
    double pend_lr2; /* its mean lr^2 */
    int have_u;
    double ubar;                /* smoothed log u */
    double w, sx, sy, sxx, sxy; /* weighted sums of the trend's fit (x = log t, y = log u) */
    int n_fit;
    double x_last; /* log-time of the last point fitted */
    double beta;   /* the trend's slope */
} AdpsgdState;

enum { OPT_PERIOD, OPT_GROWTH, OPT_WARMUP, OPT_DECAY };

static const BellowsPolicyOpt adpsgd_opts[] = {
    [OPT_PERIOD] = {"period", BELLOWS_OPT_INT, "8", 1, 1e6, NULL,
                    "budget: as many averagings over the run as cpsgd:period=P"},
    [OPT_GROWTH] = {"growth", BELLOWS_OPT_DOUBLE, "1.5", 0.5, 4, NULL,
                    "g: V(l) ~ l^g within an interval (measured on the mlp: 1.4-1.75); a = "
                    "1/(g+1)"},
    [OPT_WARMUP] =
        {"warmup", BELLOWS_OPT_INT, "10", 0, 1e9, NULL,
         "steps before this one average every step (when that spends at most a tenth of the "
         "budget) and are not measured (momentum building up)"},
    [OPT_DECAY] = {"decay", BELLOWS_OPT_DOUBLE, "0.1", 1e-6, 1, NULL,
                   "lr factor assumed at the context's decay epochs until one is seen"},
};

/* int_lo^hi (s / t)^gam ds, t > 0 */
static double seg_integral(double t, double lo, double hi, double gam)
{
    if (gam == 0) return hi - lo;
    if (fabs(gam + 1) < 1e-12) return t * log(hi / lo);
    return pow(t, -gam) * (pow(hi, gam + 1) - pow(lo, gam + 1)) / (gam + 1);
}

/* J = int_t^T (r(s) / r(t))^a ds: the trend's slope within each lr phase, the lr falling by
 * the decay factor at each decay step after t. */
static double plan_integral(const AdpsgdState *s, long t)
{
    const double gam = s->beta * s->a, tt = t > 0 ? (double)t : 1;
    double lo = (double)t, j = 0, f = 1;
    for (int i = 0; i <= s->n_decays; i++) {
        double hi = i < s->n_decays ? (double)s->decay_step[i] : (double)s->T;
        if (hi <= lo) continue;
        j += f * seg_integral(tt, lo > 0 ? lo : 1e-9, hi, gam);
        lo = hi;
        if (i < s->n_decays) f *= pow(s->decay, 2 * s->a);
    }
    return j;
}

/* The period from step t on (the interval under way started at t). */
static void adpsgd_plan(AdpsgdState *s, long t)
{
    const long left = s->T - t;
    const long R = s->budget - s->n_avg;
    double p;
    if (left <= 0 || R <= 0) {
        p = left > 0 ? (double)left + 1 : 1; /* budget spent: no more averaging */
    } else if (t < s->warmup && s->warmup <= s->budget / ADPSGD_WARMUP_SHARE) {
        p = 1; /* the warm-up: every step, the paper's "synchronize more frequently in early
                  iterations to reduce the initial large variance" */
    } else {
        p = plan_integral(s, t) / (double)R;
        if (s->have_u) {
            double mx = s->sx / s->w, my = s->sy / s->w;
            double line = my + s->beta * (log((double)t) - mx);
            p *= exp(s->a * (line - s->ubar));
        }
        p = floor(p + 0.5);
        if (!(p >= 1)) p = 1; /* also NaN */
        if (p > (double)left) p = (double)left;
    }
    s->clock.period = p > INT_MAX ? INT_MAX : (int)p;
}

static int adpsgd_init(BellowsPolicy *p, const BellowsPolicyValue *vals, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    AdpsgdState *s = p->state;
    const BellowsPolicyContext *ctx = p->ctx;
    const int period = (int)vals[OPT_PERIOD].num;
    s->g = vals[OPT_GROWTH].num;
    s->a = 1 / (s->g + 1);
    s->warmup = (long)vals[OPT_WARMUP].num;
    s->decay = vals[OPT_DECAY].num;
    s->T = (long)ctx->epochs * ctx->steps_per_epoch;
    s->budget = s->T / period; /* 0 in a run shorter than period: never, as cpsgd */
    for (int i = 0; i < ctx->n_decays; i++)
        s->decay_step[s->n_decays++] = (long)ctx->decay_epochs[i] * ctx->steps_per_epoch;
    s->lr_prev = ctx->lr0;
    adpsgd_plan(s, 0);
    return BELLOWS_POLICY_OK;
}

/* One measurement V of the interval of len steps from start, at mean lr^2 lr2. */
static void adpsgd_measure(AdpsgdState *s, double v, long start, long len, double lr2)
{
    if (start < s->warmup || !(v > 0) || !isfinite(v) || !(lr2 > 0)) return;
    const double u = log(v / (pow((double)len, s->g) * lr2));
    s->ubar = s->have_u ? 0.5 * (u + s->ubar) : u;
    s->have_u = 1;
    const double x = log((double)start + 0.5 * (double)len), w = (double)len;
    if (s->n_fit > 0) { /* forget: older points weigh exp(-(log-time since) / memory) */
        double k = exp(-(x - s->x_last) / ADPSGD_MEMORY);
        s->w *= k, s->sx *= k, s->sy *= k, s->sxx *= k, s->sxy *= k;
    }
    s->x_last = x;
    s->w += w;
    s->sx += w * x;
    s->sy += w * u;
    s->sxx += w * x * x;
    s->sxy += w * x * u;
    s->n_fit++;
    double mx = s->sx / s->w, vxx = s->sxx / s->w - mx * mx;
    double vxy = s->sxy / s->w - mx * s->sy / s->w;
    s->beta = s->n_fit >= 3 && vxx > 1e-9 ? vxy / vxx : 0;
    if (s->beta < ADPSGD_BETA_MIN) s->beta = ADPSGD_BETA_MIN;
    if (s->beta > ADPSGD_BETA_MAX) s->beta = ADPSGD_BETA_MAX;
}

static void adpsgd_observe(BellowsPolicy *p, const BellowsPolicyObs *obs)
{
    AdpsgdState *s = p->state;
    if (obs->lr_decayed && !s->decay_seen && s->lr_prev > 0 && obs->lr < s->lr_prev) {
        s->decay = obs->lr / s->lr_prev; /* the run's own factor from now on */
        s->decay_seen = 1;
    }
    s->lr_prev = obs->lr;
    if (s->pend_len == 0) return;
    if (obs->averaged)
        adpsgd_measure(s, obs->param_variance, s->pend_start, s->pend_len, s->pend_lr2);
    s->pend_len = 0;
    adpsgd_plan(s, obs->step);
}

static void adpsgd_decide(BellowsPolicy *p, const BellowsPolicyObs *obs, BellowsPolicyDecision *d)
{
    AdpsgdState *s = p->state;
    s->lr2_sum += obs->lr * obs->lr;
    d->period = s->clock.period;
    d->average = policy_clock_tick(&s->clock);
    if (!d->average) return;
    s->n_avg++;
    s->pend_start = s->start;
    s->pend_len = obs->step + 1 - s->start;
    s->pend_lr2 = s->lr2_sum / (double)s->pend_len;
    s->start = obs->step + 1;
    s->lr2_sum = 0;
}

static void adpsgd_describe(const BellowsPolicy *p, char *buf, size_t n)
{
    const AdpsgdState *s = p->state;
    snprintf(buf, n, "period=%d", s->clock.period);
}

const BellowsPolicyOps policy_adpsgd_ops = {
    .iVersion = BELLOWS_POLICY_VERSION,
    .name = "adpsgd",
    .help = "local SGD with cpsgd:period=P's budget, floor(steps/P) averagings: period ~ "
            "r^(-1/(g+1)), r = u lr^2 the per-step growth of the parameter variance V measured "
            "after l local steps, u = V/(l^g mean lr^2) (the Lagrange optimum of the variance "
            "summed over the run on that budget); p = exp(a (L(t) - smoothed log u)) x J/R, "
            "a = 1/(g+1), "
            "L the trend of log u in log t (least squares, memory 1 in log t, slope in [-2,1]), "
            "J = int_t^T (r(s)/r(t))^a ds with the lr decays forecast, R the averagings left; "
            "the first `warmup` steps average every step (if that spends at most a tenth of "
            "the budget)",
    .source = "Jiang & Agrawal, Adaptive Periodic Averaging, arXiv 2007.06134 (principle only: "
              "rule and constants are a bellows reconstruction, derived from the local-SGD bound "
              "of Wang & Joshi, Cooperative SGD, arXiv 1808.07576; policies/adpsgd.c)",
    .mode = BELLOWS_POLICY_PERIODIC,
    .opts = adpsgd_opts,
    .n_opts = BELLOWS_N(adpsgd_opts),
    .state_size = sizeof(AdpsgdState),
    .init = adpsgd_init,
    .observe = adpsgd_observe,
    .decide = adpsgd_decide,
    .describe = adpsgd_describe,
    .reconstruction = 1,
    .needs = BELLOWS_HAS_VARIANCE, /* its signal; without it the period follows the plan alone */
    .price_blind = 1,              /* the measured variance, the lr and the budget of steps */
};
