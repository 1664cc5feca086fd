/* accordion.c: Accordion (Agarwal, Wang, Lee, Venkataraman, Papailiopoulos; MLSys 2021, the
 * section "Accordion's design"), following the authors' code uw-mad-dash/Accordion (auto_scale.py,
 * run_auto_scale_gng; main.py, the epoch loop): detect critical learning regimes from how much
 * each layer's gradient norm changed over `interval` epochs, and compress those layers less.
 *
 * The rule, per layer l (each layer has its own state):
 *   n[e]  = the epoch-e norms of l's local uncompressed gradient, summed over the epoch's steps
 *           (we keep the per-step mean, sum / steps: the same ratio whenever epochs have equal
 *           step counts, and comparable across epochs when mode=batch changes the step count);
 *   check at the last step of every epoch e with e % interval == 0:
 *     e == 0 (no reference yet): every layer critical;
 *     else ratio = |n[e-T] - n[e]| / n[e-T] (infinite when n[e-T] == 0, as the code's 9),
 *          ratio >= eta -> critical (low compression, `critical=`), else `normal=` (high);
 *   the result takes effect from the first step of epoch e+1 and holds until the next check;
 *   epoch 0 runs critical; when the step schedule lowers the lr (obs.lr_decayed, first step of
 *   the epoch) every layer turns critical, held until the next check (main.py, "second rule").
 * Vectors (ndim 1) always go dense. The published code takes the norm of the epoch-summed
 * gradient vector, ||sum_t g_t||: n[e] is obs.epoch_norm_* (the norm of the epoch's mean
 * gradient, ||sum_t g_t|| / T) when the driver provides it; a replayed trace that only has
 * per-step norms falls back to their mean, (1/T) sum_t ||g_t||.
 *
 * mode=batch (the paper's large-batch experiments; no code was published): the same rule on the
 * whole model's norm (per step sqrt(sum_l ||g_l||^2)), since the batch is one global knob: critical
 * -> the small global batch `critical=` (default --batch), else the large `normal=` (default 8x,
 * the repository's logs go 512 -> 4096). The driver scales the lr linearly with the batch. Every
 * matrix layer then uses the run's compressor at its default level (dense with "none", the
 * paper's batch-size experiments).
 * decider=rank0 is the published code's quirk (only rank 0's local norms decide, broadcast);
 * the default, all, uses the mean over workers of the local norms. */
#include "policy_impl.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { ACCORDION_COMPRESSION, ACCORDION_BATCH };
enum { ACCORDION_ALL, ACCORDION_RANK0 };
enum { OPT_CRITICAL, OPT_NORMAL, OPT_ETA, OPT_INTERVAL, OPT_MODE, OPT_DECIDER };

typedef struct {
    int mode, decider, interval;
    double eta;
    double critical_value, normal_value; /* levels; mode=batch: global batch sizes */
    double batch_mode_level;             /* mode=batch: the level of every matrix layer */
    /* One slot per layer, then slot n_layers for the whole model (used by mode=batch): */
    int slots;     /* n_layers + 1 */
    int *critical; /* [slots] 1: critical regime, in effect for this step */
    double *sum;   /* [slots] norms summed over this epoch's steps so far */
    long steps;    /* steps summed into sum */
    double *ref;   /* [slots] per-step mean norm at the last check */
    int ref_epoch; /* epoch of that check; -1: none yet */
} AccordionState;

static const BellowsPolicyOpt accordion_opts[] = {
    [OPT_CRITICAL] = {"critical", BELLOWS_OPT_DOUBLE, NULL, 0, 1e9, NULL,
                      "level in critical regimes (low compression); default powersgd 2, topk 0.99; "
                      "mode=batch: global batch, default --batch"},
    [OPT_NORMAL] = {"normal", BELLOWS_OPT_DOUBLE, NULL, 0, 1e9, NULL,
                    "level otherwise (high compression); default powersgd 1, topk 0.1; "
                    "mode=batch: global batch, default 8 x --batch"},
    [OPT_ETA] = {"eta", BELLOWS_OPT_DOUBLE, "0.5", 0, 1e6, NULL,
                 "a relative change of the epoch norm >= eta means critical"},
    [OPT_INTERVAL] = {"interval", BELLOWS_OPT_INT, "2", 1, 1e6, NULL,
                      "epochs between checks (the paper: 10 for CNNs, 5 for LSTMs; 2 suits short "
                      "runs)"},
    [OPT_MODE] = {"mode", BELLOWS_OPT_CHOICE, "compression", 0, 0, "compression|batch",
                  "adapt the compression level per layer, or the global batch size"},
    [OPT_DECIDER] = {"decider", BELLOWS_OPT_CHOICE, "all", 0, 0, "all|rank0",
                     "whose local norms decide: mean over workers, or rank 0 only (the published "
                     "code)"},
};

static int accordion_batch_value(const BellowsPolicyContext *ctx, const char *key, double v,
                                 char *err, size_t errlen)
{
    if (v < 1 || v != floor(v) || v > 1e9 || fmod(v, ctx->workers) != 0)
        return policy_fail(
            err, errlen, BELLOWS_POLICY_EUSAGE,
            "%s=%g: mode=batch takes a global batch size, a positive multiple of the "
            "%d workers",
            key, v, ctx->workers);
    return BELLOWS_POLICY_OK;
}

static void accordion_free(BellowsPolicy *p)
{
    AccordionState *s = p->state;
    free(s->critical);
    free(s->sum);
    free(s->ref);
    s->critical = NULL;
    s->sum = s->ref = NULL;
}

static int accordion_init(BellowsPolicy *p, const BellowsPolicyValue *vals, char *err,
                          size_t errlen)
{
    AccordionState *s = p->state;
    const BellowsPolicyContext *ctx = p->ctx;
    s->mode = vals[OPT_MODE].choice;
    s->decider = vals[OPT_DECIDER].choice;
    s->eta = vals[OPT_ETA].num;
    s->interval = (int)vals[OPT_INTERVAL].num;
    const BellowsPolicyValue *crit = &vals[OPT_CRITICAL], *norm = &vals[OPT_NORMAL];
    int none = strcmp(ctx->compressor, "none") == 0;
    int rc;
    if (s->mode == ACCORDION_COMPRESSION) {
        if (none)
            return policy_fail(
                err, errlen, BELLOWS_POLICY_EUSAGE,
                "mode=compression needs a compressor and the run's is 'none' (choose "
                "one with --compressor, or use mode=batch)");
        double dc, dn; /* the levels of the authors' runs (REFERENCES.md) */
        if (strcmp(ctx->compressor, "powersgd") == 0)
            dc = 2, dn = 1;
        else if (strcmp(ctx->compressor, "topk") == 0)
            dc = 0.99, dn = 0.1;
        else if (!crit->set || !norm->set)
            return policy_fail(err, errlen, BELLOWS_POLICY_EUSAGE,
                               "compressor '%s' has no default levels: give both critical= (the "
                               "level in critical regimes) and normal= (the level otherwise)",
                               ctx->compressor);
        else
            dc = dn = 0;
        s->critical_value = crit->set ? crit->num : dc;
        s->normal_value = norm->set ? norm->num : dn;
        if ((rc = policy_check_level(ctx, s->critical_value, "critical", err, errlen))) return rc;
        if ((rc = policy_check_level(ctx, s->normal_value, "normal", err, errlen))) return rc;
    } else {
        s->critical_value = crit->set ? crit->num : ctx->batch;
        s->normal_value = norm->set ? norm->num : 8.0 * ctx->batch;
        if ((rc = accordion_batch_value(ctx, "critical", s->critical_value, err, errlen)))
            return rc;
        if ((rc = accordion_batch_value(ctx, "normal", s->normal_value, err, errlen))) return rc;
        s->batch_mode_level = none ? 0 : ctx->compressor_level;
    }
    s->slots = ctx->n_layers + 1;
    s->critical = malloc(sizeof *s->critical * (size_t)s->slots);
    s->sum = calloc((size_t)s->slots, sizeof *s->sum);
    s->ref = calloc((size_t)s->slots, sizeof *s->ref);
    if (!s->critical || !s->sum || !s->ref) {
        accordion_free(p);
        return policy_fail(err, errlen, BELLOWS_POLICY_ERUNTIME, "out of memory for %d layers",
                           ctx->n_layers);
    }
    for (int k = 0; k < s->slots; k++) s->critical[k] = 1; /* epoch 0 runs critical */
    s->ref_epoch = -1;
    return BELLOWS_POLICY_OK;
}

static void accordion_observe(BellowsPolicy *p, const BellowsPolicyObs *obs)
{
    AccordionState *s = p->state;
    int n = p->ctx->n_layers;
    if (obs->epoch_start) {
        memset(s->sum, 0, sizeof *s->sum * (size_t)s->slots);
        s->steps = 0;
        if (obs->lr_decayed) /* the lr-decay rule: critical until the next check */
            for (int k = 0; k < s->slots; k++) s->critical[k] = 1;
    }
    const double *norm = s->decider == ACCORDION_RANK0 ? obs->grad_norm_rank0 : obs->grad_norm_mean;
    assert(norm);
    double whole_sq = 0;
    for (int l = 0; l < n; l++) {
        s->sum[l] += norm[l];
        whole_sq += norm[l] * norm[l];
    }
    s->sum[n] += sqrt(whole_sq);
    s->steps++;
}

/* At the last step of a check epoch: sets the regimes of the next epochs (auto_scale.py). */
static void accordion_check(AccordionState *s, int n_layers, int epoch, const double *epoch_norm)
{
    int first = s->ref_epoch < 0 || epoch - s->ref_epoch != s->interval;
    double whole_sq = 0;
    for (int l = 0; epoch_norm && l < n_layers; l++) whole_sq += epoch_norm[l] * epoch_norm[l];
    for (int k = 0; k <= n_layers; k++) {
        double now = !epoch_norm    ? s->sum[k] / (double)s->steps
                     : k < n_layers ? epoch_norm[k]
                                    : sqrt(whole_sq);
        if (first) {
            s->critical[k] = 1;
        } else {
            double ratio = s->ref[k] > 0 ? fabs(s->ref[k] - now) / s->ref[k] : INFINITY;
            s->critical[k] = !(ratio < s->eta); /* NaN (a diverged norm) counts as critical */
        }
        s->ref[k] = now;
    }
    s->ref_epoch = epoch;
}

static void accordion_decide(BellowsPolicy *p, const BellowsPolicyObs *obs,
                             BellowsPolicyDecision *d)
{
    AccordionState *s = p->state;
    const BellowsPolicyContext *ctx = p->ctx;
    int n = ctx->n_layers;
    if (s->mode == ACCORDION_COMPRESSION) {
        for (int l = 0; l < n; l++)
            d->level[l] = ctx->layers[l].ndim == 1 ? 0
                          : s->critical[l]         ? s->critical_value
                                                   : s->normal_value;
    } else {
        policy_set_levels(ctx, s->batch_mode_level, d);
    }
    /* decided at the end of this step's epoch, in effect from the next step */
    if (obs->epoch_end && s->steps > 0 && obs->epoch % s->interval == 0)
        accordion_check(s, n, obs->epoch,
                        s->decider == ACCORDION_RANK0 ? obs->epoch_norm_rank0
                                                      : obs->epoch_norm_mean);
    /* the batch is the next step's (this step's batch was drawn already) */
    if (s->mode == ACCORDION_BATCH)
        d->batch = (int)(s->critical[n] ? s->critical_value : s->normal_value);
}

static void accordion_describe(const BellowsPolicy *p, char *buf, size_t n)
{
    const AccordionState *s = p->state;
    const BellowsPolicyContext *ctx = p->ctx;
    if (s->mode == ACCORDION_BATCH) {
        int c = s->critical[ctx->n_layers];
        snprintf(buf, n, "%c batch=%d", c ? 'C' : 'N',
                 (int)(c ? s->critical_value : s->normal_value));
        return;
    }
    size_t i = 0;
    for (int l = 0; l < ctx->n_layers && i + 1 < n; l++)
        buf[i++] = ctx->layers[l].ndim == 1 ? '.' : s->critical[l] ? 'C' : 'N';
    buf[i] = '\0';
}

const BellowsPolicyOps policy_accordion_ops = {
    .iVersion = BELLOWS_POLICY_VERSION,
    .name = "accordion",
    .help = "compress less (or use a smaller batch) in critical regimes, detected per layer "
            "from epoch gradient norms",
    .source = "Agarwal et al., Accordion, MLSys 2021; github.com/uw-mad-dash/Accordion "
              "(auto_scale.py, main.py)",
    .mode = BELLOWS_POLICY_GRADIENT,
    .opts = accordion_opts,
    .n_opts = BELLOWS_N(accordion_opts),
    .state_size = sizeof(AccordionState),
    .init = accordion_init,
    .observe = accordion_observe,
    .decide = accordion_decide,
    .describe = accordion_describe,
    .free_impl = accordion_free,
    .needs_grad_norms = 1,
    .needs = BELLOWS_HAS_EPOCH_NORMS, /* its signal; the per-step norms' mean is no stand-in */
};
