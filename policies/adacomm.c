/* adacomm.c: AdaComm (Wang & Joshi, "Adaptive communication strategies to achieve the best
 * error-runtime trade-off in local-update SGD", SysML 2019): local SGD whose period
 * follows the training loss F and the learning rate,
 *     tau_l = ceil( sqrt( (lr0 / lr_l) * F_l / F_0 ) * tau0 ),  clamped to [1, max],
 * so the period shrinks as the loss falls and grows when the lr decays. As in PaddlePaddle's
 * AdaptiveLocalSGDOptimizer the period is re-evaluated at every averaging (the paper uses fixed
 * wall-clock intervals) and clamped to [1, 16]; Paddle puts tau0 inside the square root, we
 * follow the paper. Our definitions: F_0 = the mean training loss (obs.loss, the mean over
 * workers) over the first period of tau0 steps; F_l = the mean loss over the period that ends at
 * averaging l; lr_l = the lr of that averaging's step; lr0 = the base lr (ctx.lr0). */
#include "policy_impl.h"

#include <math.h>

typedef struct {
    int tau0, max;
    PolicyClock clock;
    double loss_sum; /* over the steps since the last averaging */
    long loss_steps;
    double f0; /* 0 until the first period has ended with a finite, positive mean loss */
} AdacommState;

enum { OPT_TAU0, OPT_MAX };

static const BellowsPolicyOpt adacomm_opts[] = {
    [OPT_TAU0] = {"tau0", BELLOWS_OPT_INT, "8", 1, 1e6, NULL,
                  "first period and scale of later ones (our default: below max, so an lr decay "
                  "can lengthen the period)"},
    [OPT_MAX] = {"max", BELLOWS_OPT_INT, "16", 1, 1e6, NULL, "longest period (PaddlePaddle's cap)"},
};

static int adacomm_init(BellowsPolicy *p, const BellowsPolicyValue *vals, char *err, size_t errlen)
{
    AdacommState *s = p->state;
    s->tau0 = (int)vals[OPT_TAU0].num;
    s->max = (int)vals[OPT_MAX].num;
    if (s->tau0 > s->max)
        return policy_fail(err, errlen, BELLOWS_POLICY_EUSAGE, "tau0=%d is above max=%d", s->tau0,
                           s->max);
    s->clock.period = s->tau0;
    return BELLOWS_POLICY_OK;
}

static void adacomm_observe(BellowsPolicy *p, const BellowsPolicyObs *obs)
{
    AdacommState *s = p->state;
    s->loss_sum += obs->loss;
    s->loss_steps++;
}

/* The next period after an averaging at learning rate lr with mean loss f over the last one. */
static void adacomm_update(AdacommState *s, double lr0, double lr, double f)
{
    if (s->f0 == 0) {
        if (!(isfinite(f) && f > 0)) return; /* no usable F_0 yet: keep tau0 */
        s->f0 = f;
    }
    double tau = sqrt((lr0 / lr) * f / s->f0) * s->tau0;
    if (isnan(tau)) return; /* a diverged loss: keep the period */
    tau = ceil(tau - 1e-9); /* 1e-9: sqrt(4) * 4 must give 8, not 9 */
    s->clock.period = tau < 1 ? 1 : tau > s->max ? s->max : (int)tau;
}

static void adacomm_decide(BellowsPolicy *p, const BellowsPolicyObs *obs, BellowsPolicyDecision *d)
{
    AdacommState *s = p->state;
    d->period = s->clock.period;
    d->average = policy_clock_tick(&s->clock);
    if (d->average) {
        adacomm_update(s, p->ctx->lr0, obs->lr, s->loss_sum / (double)s->loss_steps);
        s->loss_sum = 0;
        s->loss_steps = 0;
    }
}

static void adacomm_describe(const BellowsPolicy *p, char *buf, size_t n)
{
    const AdacommState *s = p->state;
    snprintf(buf, n, "period=%d", s->clock.period);
}

const BellowsPolicyOps policy_adacomm_ops = {
    .iVersion = BELLOWS_POLICY_VERSION,
    .name = "adacomm",
    .help = "local SGD whose period follows sqrt(loss ratio x lr0/lr), re-evaluated at every "
            "averaging",
    .source = "Wang & Joshi, AdaComm, SysML 2019; PaddlePaddle AdaptiveLocalSGDOptimizer",
    .mode = BELLOWS_POLICY_PERIODIC,
    .opts = adacomm_opts,
    .n_opts = BELLOWS_N(adacomm_opts),
    .state_size = sizeof(AdacommState),
    .init = adacomm_init,
    .observe = adacomm_observe,
    .decide = adacomm_decide,
    .describe = adacomm_describe,
    .price_blind = 1, /* the loss and the lr, at each averaging (not on the clock) */
};
