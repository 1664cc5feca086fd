/* test_policies_periodic.c: the periodic policies on hand-made observation sequences whose
 * right periods and averagings are worked out by hand in the comments: cpsgd averages exactly
 * every period steps, postlocal switches at its epoch, adacomm's period follows the loss and the
 * lr; ADPSGD's first period is its plan, every later one equals a naive reference of the rule,
 * and on a budget the period follows synthetic variances and lr decays. */
#include "testutil.h"

#include "policy.h"
#include "policytest.h"

/* ---- the periodic policies ---- */

/* Runs n steps of a periodic policy with steps_per_epoch from ctx, constant lr and loss, and
 * records the steps it averaged after (returns how many) and the reported periods. */
static int run_periodic(Policy *p, int n, long *avg_steps, int *periods)
{
    double norms[4] = {1, 1, 1, 1};
    int k = 0;
    long spe = p->ctx->steps_per_epoch;
    for (long t = 0; t < n; t++) {
        PolicyObs obs = {.step = t,
                         .epoch = (int)(t / spe),
                         .epoch_start = t % spe == 0,
                         .epoch_end = t % spe == spe - 1,
                         .lr = 0.1,
                         .loss = 1,
                         .grad_norm_rank0 = norms,
                         .grad_norm_mean = norms};
        PolicyDecision d = {.level = (double[4]){0}};
        assert_int_equal(policy_step(p, &obs, &d, NULL), BW_OK);
        if (periods) periods[t] = d.period;
        if (d.average) avg_steps[k++] = t;
    }
    return k;
}

static void test_cpsgd_averages_exactly_every_period_steps(void **state)
{
    (void)state;
    PolicyContext ctx = make_ctx("none", 0);
    const int periods[] = {1, 5, 8};
    const char *specs[] = {"cpsgd:period=1", "cpsgd:period=5", "cpsgd"};
    for (int k = 0; k < 3; k++) {
        Policy *p = create_ok(specs[k], &ctx);
        long avg[100];
        int per[100];
        int n = run_periodic(p, 100, avg, per);
        assert_int_equal(n, 100 / periods[k]);
        for (int i = 0; i < n; i++) assert_int_equal(avg[i], (long)(i + 1) * periods[k] - 1);
        for (int t = 0; t < 100; t++) assert_int_equal(per[t], periods[k]);
        char buf[32];
        snprintf(buf, sizeof buf, "period=%d", periods[k]);
        assert_describe(p, buf);
        policy_free(p);
    }
}

static void test_postlocal_switches_at_switch_epoch(void **state)
{
    (void)state;
    long avg[100];
    int per[100];
    /* steps_per_epoch 10; default switch = the first decay epoch (4) -> step 40; period 16 */
    PolicyContext ctx = make_ctx("none", 0);
    Policy *p = create_ok("postlocal", &ctx);
    int n = run_periodic(p, 100, avg, per);
    /* every step 0..39 (40 averagings), then after steps 55, 71, 87 */
    assert_int_equal(n, 43);
    for (int i = 0; i < 40; i++) assert_int_equal(avg[i], i);
    assert_int_equal(avg[40], 55);
    assert_int_equal(avg[41], 71);
    assert_int_equal(avg[42], 87);
    assert_int_equal(per[39], 1);
    assert_int_equal(per[40], 16);
    assert_describe(p, "period=16");
    policy_free(p);

    /* explicit switch_epoch=2, period=3: every step to 19, then after 22, 25, 28 */
    p = create_ok("postlocal:switch_epoch=2,period=3", &ctx);
    n = run_periodic(p, 30, avg, per);
    assert_int_equal(n, 23);
    assert_int_equal(avg[19], 19);
    assert_int_equal(avg[20], 22);
    assert_int_equal(avg[22], 28);
    policy_free(p);

    /* no step schedule: the switch falls at epochs / 2 = 3 (step 30): first local average 45 */
    ctx.n_decays = 0;
    p = create_ok("postlocal", &ctx);
    n = run_periodic(p, 50, avg, per);
    assert_int_equal(n, 31);
    assert_int_equal(avg[29], 29);
    assert_int_equal(avg[30], 45);
    policy_free(p);
}

static void test_adacomm_periods_follow_loss_and_lr(void **state)
{
    (void)state;
    PolicyContext ctx = make_ctx("none", 0); /* lr0 = 0.1 */
    Policy *p = create_ok("adacomm:tau0=4,max=16", &ctx);
    double norms[4] = {1, 1, 1, 1};
    /* tau = ceil(sqrt((0.1 / lr) * F / F0) * 4), clamped to [1, 16]:
     *  steps 0-3   loss 2, lr 0.1: the first period; F0 = mean 2; tau = ceil(1 * 4) = 4
     *  steps 4-7   losses .25 .75 .25 .75 (mean 0.5): tau = ceil(sqrt(0.25) * 4) = 2
     *  steps 8-9   loss 0.125: tau = ceil(sqrt(1/16) * 4) = 1
     *  step  10    loss 0.125, lr 0.01: tau = ceil(sqrt(10 / 16) * 4) = ceil(3.16) = 4
     *  steps 11-14 loss 2, lr 0.001: tau = ceil(sqrt(100) * 4) = 40 -> clamped to 16
     *  steps 15-30 loss 1e-6, lr 0.1: tau = ceil(sqrt(5e-7) * 4) = 1 */
    static const struct {
        double loss, lr;
        int period, average;
    } seq[] = {
        {2, 0.1, 4, 0},     {2, 0.1, 4, 0},     {2, 0.1, 4, 0},      {2, 0.1, 4, 1},
        {0.25, 0.1, 4, 0},  {0.75, 0.1, 4, 0},  {0.25, 0.1, 4, 0},   {0.75, 0.1, 4, 1},
        {0.125, 0.1, 2, 0}, {0.125, 0.1, 2, 1}, {0.125, 0.01, 1, 1}, {2, 0.001, 4, 0},
        {2, 0.001, 4, 0},   {2, 0.001, 4, 0},   {2, 0.001, 4, 1},
    };
    long t = 0;
    for (size_t i = 0; i < sizeof seq / sizeof *seq; i++, t++) {
        PolicyObs obs = {.step = t,
                         .lr = seq[i].lr,
                         .loss = seq[i].loss,
                         .grad_norm_rank0 = norms,
                         .grad_norm_mean = norms};
        PolicyDecision d = {.level = (double[4]){0}};
        assert_int_equal(policy_step(p, &obs, &d, NULL), BW_OK);
        if (d.period != seq[i].period || d.average != seq[i].average)
            fail_msg("step %ld: period %d average %d, expected %d %d", t, d.period, d.average,
                     seq[i].period, seq[i].average);
    }
    assert_describe(p, "period=16");
    for (; t <= 31; t++) {
        PolicyObs obs = {
            .step = t, .lr = 0.1, .loss = 1e-6, .grad_norm_rank0 = norms, .grad_norm_mean = norms};
        PolicyDecision d = {.level = (double[4]){0}};
        assert_int_equal(policy_step(p, &obs, &d, NULL), BW_OK);
        assert_int_equal(d.period, t <= 30 ? 16 : 1);
        assert_int_equal(d.average, t == 30 || t == 31);
    }
    assert_describe(p, "period=1");
    policy_free(p);

    /* rounding: F0 = 0.9, then F = 0.81 at lr 0.04: sqrt(2.5 * 0.9) * 4 is 6 exactly, but
     * computes as 6.000000000000001; the period must be 6, not 7 */
    p = create_ok("adacomm:tau0=4", &ctx);
    for (t = 0; t < 8; t++) {
        PolicyObs obs = {.step = t,
                         .lr = t < 4 ? 0.1 : 0.04,
                         .loss = t < 4 ? 0.9 : 0.81,
                         .grad_norm_rank0 = norms,
                         .grad_norm_mean = norms};
        PolicyDecision d = {.level = (double[4]){0}};
        assert_int_equal(policy_step(p, &obs, &d, NULL), BW_OK);
        assert_int_equal(d.average, t == 3 || t == 7);
    }
    assert_describe(p, "period=6");
    policy_free(p);
}

/* ---- ADPSGD on synthetic variances ---- */

/* A run of 400 steps (40 epochs of 10), lr 0.1 divided by 10 at each of the context's decays. */
static PolicyContext adpsgd_ctx(int n_decays, int d0, int d1)
{
    PolicyContext c = make_ctx("none", 0);
    c.epochs = 40;
    c.n_decays = n_decays;
    c.decay_epochs[0] = d0;
    c.decay_epochs[1] = d1;
    return c;
}

static double adpsgd_lr(const PolicyContext *c, long t)
{
    double lr = c->lr0;
    for (int i = 0; i < c->n_decays; i++)
        if (t >= (long)c->decay_epochs[i] * c->steps_per_epoch) lr *= 0.1;
    return lr;
}

/* The variance an interval of len steps from start measures: rate(t) x len^b x mean lr^2. */
typedef double (*RateFn)(long t);

typedef struct {
    int period[400];
    long averagings;
} AdpsgdRun;

/* The naive reference of the rule (policies/adpsgd.c), from scratch at every measurement: the
 * fit over every stored point with its forgetting weight, and J by a midpoint sum. */
typedef struct {
    double g, decay;
    long T, budget, warmup;
    double x[400], y[400], w[400];
    int n;
    double ubar;
} AdpsgdRef;

/* The period the rule plans at step t after n_avg averagings, before rounding. */
static double adpsgd_ref_plan(AdpsgdRef *r, const PolicyContext *c, long t, long n_avg)
{
    const double a = 1 / (r->g + 1);
    const long left = r->T - t, R = r->budget - n_avg;
    if (R <= 0) return (double)left + 1;
    if (t < r->warmup && r->warmup * 10 <= r->budget) return 1; /* the warm-up: every step */
    double beta = 0, mx = 0, my = 0, W = 0;
    for (int j = 0; j < r->n; j++) {
        double w = r->w[j] * exp(-(r->x[r->n - 1] - r->x[j]));
        W += w, mx += w * r->x[j], my += w * r->y[j];
    }
    if (r->n > 0) mx /= W, my /= W;
    if (r->n >= 3) {
        double sxy = 0, sxx = 0;
        for (int j = 0; j < r->n; j++) {
            double w = r->w[j] * exp(-(r->x[r->n - 1] - r->x[j]));
            sxy += w * (r->x[j] - mx) * (r->y[j] - my), sxx += w * (r->x[j] - mx) * (r->x[j] - mx);
        }
        beta = fmin(1, fmax(-2, sxy / sxx));
    }
    /* J by the midpoint rule within each lr phase (the factor constant there) */
    double J = 0, lo = (double)t, f = 1;
    for (int i = 0; i <= c->n_decays; i++) {
        double hi = i < c->n_decays ? (double)c->decay_epochs[i] * (double)c->steps_per_epoch
                                    : (double)r->T;
        if (hi <= lo) continue;
        const int slices = 20000;
        double h = (hi - lo) / slices;
        for (int k = 0; k < slices; k++)
            J += h * pow(pow((lo + (k + 0.5) * h) / (double)t, beta) * f * f, a);
        lo = hi;
        f *= r->decay;
    }
    double p = J / (double)R;
    if (r->n > 0) p *= exp(a * (my + beta * (log((double)t) - mx) - r->ubar));
    return p < 1 ? 1 : p > (double)left ? (double)left : p;
}

/* Feeds spec 400 steps whose variances follow rate and b; with ref, checks every period the
 * policy plans after a measurement against the naive reference. */
static void adpsgd_feed(const char *spec, const PolicyContext *c, RateFn rate, double b,
                        AdpsgdRef *ref, AdpsgdRun *out)
{
    Policy *p = create_ok(spec, c);
    double norms[4] = {1, 1, 1, 1};
    long start = 0, pend_start = 0, pend_len = 0;
    double lr2 = 0, pend_lr2 = 0;
    out->averagings = 0;
    for (long t = 0; t < 400; t++) {
        const double lr = adpsgd_lr(c, t);
        const int decayed = t > 0 && lr < adpsgd_lr(c, t - 1);
        PolicyObs obs = {.step = t,
                         .epoch = (int)(t / 10),
                         .lr = lr,
                         .loss = 1,
                         .lr_decayed = decayed,
                         .grad_norm_rank0 = norms,
                         .grad_norm_mean = norms,
                         .averaged = pend_len > 0};
        if (pend_len > 0) {
            obs.param_variance = rate(t - 1) * pow((double)pend_len, b) * pend_lr2;
            if (ref && pend_start >= ref->warmup) {
                int j = ref->n++;
                ref->x[j] = log((double)pend_start + 0.5 * (double)pend_len);
                ref->y[j] = log(obs.param_variance / (pow((double)pend_len, ref->g) * pend_lr2));
                ref->w[j] = (double)pend_len;
                ref->ubar = j == 0 ? ref->y[j] : 0.5 * (ref->y[j] + ref->ubar);
            }
        }
        PolicyDecision d = {.level = (double[4]){0}};
        assert_int_equal(policy_step(p, &obs, &d, NULL), BW_OK);
        out->period[t] = d.period;
        if (ref && pend_len > 0) {
            /* the period is the reference's rounded, either way within 1e-6 of a half */
            double want = adpsgd_ref_plan(ref, c, t, out->averagings);
            if (fabs(d.period - want) > 0.5 + 1e-6 ||
                (fabs(fabs(d.period - want) - 0.5) > 1e-6 && d.period != floor(want + 0.5)))
                fail_msg("step %ld: period %d, the reference %.6f", t, d.period, want);
        }
        lr2 += lr * lr;
        pend_len = 0;
        if (d.average) {
            out->averagings++;
            pend_start = start, pend_len = t + 1 - start, pend_lr2 = lr2 / (double)pend_len;
            start = t + 1, lr2 = 0;
        }
    }
    policy_free(p);
}

static double adpsgd_mean(const AdpsgdRun *r, long lo, long hi)
{
    double s = 0;
    for (long t = lo; t < hi; t++) s += r->period[t];
    return s / (double)(hi - lo);
}

static double rate_flat(long t)
{
    (void)t;
    return 1e-3;
}
static double rate_falling(long t) /* falls 1600-fold over the run, as 1/t^2 */
{
    return 1e-3 * 100.0 / ((double)(t + 10) * (double)(t + 10));
}
static double rate_bump(long t) /* flat, 4x for the interval that ends at step 199 */
{
    return t == 199 ? 4e-3 : 1e-3;
}

/* Before any measurement the period is the plan's: J / budget, J = int_0^T (lr(s)/lr0)^(2a) ds
 * (without the warm-up, warmup=0). By hand, T = 400, period=4 (budget 100), g = 1.5 (a = 0.4):
 *   no decay:          J = 400                                  -> 4
 *   decay at step 200: J = 200 + 200 x 0.01^0.4 = 231.70        -> 2.317 -> 2
 *   growth=1 (a=1/2):  J = 200 + 200 x 0.1     = 220            -> 2.2   -> 2
 *   decay=0.5:         J = 200 + 200 x 0.25^0.4 = 315.49        -> 3.15  -> 3
 *   period=2, no decay: 400 / 200 = 2 */
static void test_adpsgd_first_period_is_the_plan(void **state)
{
    (void)state;
    const struct {
        const char *spec;
        int n_decays, want;
    } cases[] = {{"adpsgd:period=4,warmup=0", 0, 4},
                 {"adpsgd:period=4,warmup=0", 1, 2},
                 {"adpsgd:period=4,growth=1,warmup=0", 1, 2},
                 {"adpsgd:period=4,decay=0.5,warmup=0", 1, 3},
                 {"adpsgd:period=2,warmup=0", 0, 2},
                 /* the warm-up (10 steps) averages every step when it spends at most a tenth of
                  * the budget: 100 averagings, yes; 25 (period=16), no */
                 {"adpsgd:period=4", 0, 1},
                 {"adpsgd:period=16", 0, 16}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        PolicyContext c = adpsgd_ctx(cases[i].n_decays, 20, 0);
        Policy *p = create_ok(cases[i].spec, &c);
        double norms[4] = {1, 1, 1, 1};
        PolicyObs obs = {.lr = 0.1, .loss = 1, .grad_norm_rank0 = norms, .grad_norm_mean = norms};
        PolicyDecision d = {.level = (double[4]){0}};
        assert_int_equal(policy_step(p, &obs, &d, NULL), BW_OK);
        if (d.period != cases[i].want)
            fail_msg("%s, %d decays: first period %d, want %d", cases[i].spec, cases[i].n_decays,
                     d.period, cases[i].want);
        policy_free(p);
    }
    /* a run shorter than the period: a budget of 0, so no averaging (as cpsgd:period=100) */
    PolicyContext c = make_ctx("none", 0); /* 60 steps */
    Policy *p = create_ok("adpsgd:period=100", &c);
    long avg[60];
    assert_int_equal(run_periodic(p, 60, avg, NULL), 0);
    policy_free(p);
}

/* Every period after a measurement is the naive reference's (fit, forecast, budget), with the
 * variance growing as l^1.75 while the rule assumes l^1.5, across two decays. */
static void test_adpsgd_matches_its_naive_reference(void **state)
{
    (void)state;
    PolicyContext c = adpsgd_ctx(2, 15, 30);
    static AdpsgdRef ref;
    static AdpsgdRun run;
    ref = (AdpsgdRef){.g = 1.5, .decay = 0.1, .T = 400, .budget = 400 / 3, .warmup = 10};
    adpsgd_feed("adpsgd:period=3", &c, rate_falling, 1.75, &ref, &run);
    assert_true(ref.n > 20);
    ref = (AdpsgdRef){.g = 1, .decay = 0.1, .T = 400, .budget = 400 / 5, .warmup = 0};
    adpsgd_feed("adpsgd:period=5,growth=1,warmup=0", &c, rate_bump, 1.4, &ref, &run);
    assert_true(ref.n > 10);
}

/* The property the rule exists for, on the budget of cpsgd:period=4 (100 averagings): a flat
 * variance keeps the period; a falling one lengthens it (the last third at least twice the
 * first tenth); one large measurement shortens the next interval; a 10x lr decay, the variance
 * ~ lr^2, lengthens it 100^(1/(1+1.5)) = 6.3-fold. */
static void test_adpsgd_period_follows_the_variance_on_a_budget(void **state)
{
    (void)state;
    static AdpsgdRun run;
    PolicyContext c = adpsgd_ctx(0, 0, 0);
    adpsgd_feed("adpsgd:period=4", &c, rate_flat, 1.5, NULL, &run);
    assert_int_equal(run.averagings, 100);
    for (long t = 0; t < 10; t++) assert_int_equal(run.period[t], 1); /* the warm-up */
    /* then the 90 left over 390 steps, 4.33 on average: 4 or 5, as the rounding goes */
    for (long t = 10; t < 400; t++) assert_in_range(run.period[t], 4, 5);

    adpsgd_feed("adpsgd:period=4", &c, rate_falling, 1.5, NULL, &run);
    double first = adpsgd_mean(&run, 0, 40), last = adpsgd_mean(&run, 267, 400);
    if (labs(run.averagings - 100) > 10 || last < 2 * first)
        fail_msg("falling: %ld averagings, mean period %.2f then %.2f", run.averagings, first,
                 last);

    adpsgd_feed("adpsgd:period=4,warmup=0", &c, rate_bump, 1.5, NULL, &run); /* flat: 4 */
    assert_int_equal(run.period[199], 4);
    assert_true(run.period[200] < 4); /* (1/4)^(0.4 / 2) of the plan: the smoothed log rate */

    c = adpsgd_ctx(1, 20, 0);
    adpsgd_feed("adpsgd:period=4", &c, rate_flat, 1.5, NULL, &run);
    first = adpsgd_mean(&run, 100, 200), last = adpsgd_mean(&run, 220, 320);
    if (labs(run.averagings - 100) > 10 || fabs(last / first / pow(100, 0.4) - 1) > 0.15)
        fail_msg("decay: %ld averagings, mean period %.2f then %.2f", run.averagings, first, last);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cpsgd_averages_exactly_every_period_steps),
        cmocka_unit_test(test_postlocal_switches_at_switch_epoch),
        cmocka_unit_test(test_adacomm_periods_follow_loss_and_lr),
        cmocka_unit_test(test_adpsgd_first_period_is_the_plan),
        cmocka_unit_test(test_adpsgd_matches_its_naive_reference),
        cmocka_unit_test(test_adpsgd_period_follows_the_variance_on_a_budget),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
