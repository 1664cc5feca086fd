/* cpsgd.c: local SGD with a constant averaging period (Stich, "Local SGD converges fast and
 * communicates little", ICLR 2019; CPSGD in Jiang & Agrawal, arXiv 2007.06134): each worker
 * steps on its own gradient and momentum, and every `period` steps the parameters are averaged
 * with one full-model allreduce. */
#include "policy_impl.h"

typedef struct {
    PolicyClock clock;
} CpsgdState;

static const BellowsPolicyOpt cpsgd_opts[] = {
    {"period", BELLOWS_OPT_INT, "8", 1, 1e6, NULL, "local steps between parameter averagings"},
};

static int cpsgd_init(BellowsPolicy *p, const BellowsPolicyValue *vals, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    CpsgdState *s = p->state;
    s->clock.period = (int)vals[0].num;
    return BELLOWS_POLICY_OK;
}

static void cpsgd_decide(BellowsPolicy *p, const BellowsPolicyObs *obs, BellowsPolicyDecision *d)
{
    (void)obs;
    CpsgdState *s = p->state;
    d->period = s->clock.period;
    d->average = policy_clock_tick(&s->clock);
}

static void cpsgd_describe(const BellowsPolicy *p, char *buf, size_t n)
{
    const CpsgdState *s = p->state;
    snprintf(buf, n, "period=%d", s->clock.period);
}

const BellowsPolicyOps policy_cpsgd_ops = {
    .iVersion = BELLOWS_POLICY_VERSION,
    .name = "cpsgd",
    .help = "local SGD: average the parameters every `period` steps",
    .source = "Stich, Local SGD converges fast and communicates little, ICLR 2019 (CPSGD in "
              "Jiang & Agrawal, arXiv 2007.06134)",
    .mode = BELLOWS_POLICY_PERIODIC,
    .opts = cpsgd_opts,
    .n_opts = BELLOWS_N(cpsgd_opts),
    .state_size = sizeof(CpsgdState),
    .init = cpsgd_init,
    .decide = cpsgd_decide,
    .describe = cpsgd_describe,
    .price_blind = 1, /* a fixed period */
};
