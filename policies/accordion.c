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
 * switch=E (mode=batch) replaces the online rule by the fixed schedule of the authors' batch
 * runs: the small batch for epochs 0..E-1, the large one from epoch E on, the lr-decay rule
 * ignored. Their logs (raw_data_files/cifar10_batchsize/ and cifar100_batchsize/, each model's
 * *critical_regime*.log: 20 log lines of 640 samples an epoch, 512 global, for epochs 0-19,
 * then 3 lines of 5120, 4096 global, for epochs 20-299, through both lr decays) show E = 20
 * of 300 for ResNet-18, GoogLeNet and DenseNet on CIFAR-10 and CIFAR-100.
 * decider=rank0 is the published code's quirk (only rank 0's local norms decide, broadcast:
 * main.py:532-559); the default, all, uses the mean over workers of the local norms.
 *
 * paper=1: the authors' code, uw-mad-dash/Accordion at 82046df, for the CIFAR "CNN" config.
 * It sets the policy's own options to theirs, and refuses a run whose other settings are not
 * theirs (a usage error naming the flags to add): those belong to the run, which the baselines
 * of a compare share, so the policy checks them rather than changing them. Epoch counts are
 * the authors' for 300 epochs (main.py:42) scaled to the run's --epochs, round(x E / 300):
 *   decider=rank0      main.py:532-559 (rank 0's norms, then a broadcast);
 *   interval=10        main.py:43 (switch_freq; 5 in the LSTM configs, main.py:87, 110);
 *   eta=0.5            auto_scale.py:31 (ratio < 0.5: low rank);
 *   switch=20          the batch logs above (mode=batch);
 *   --compressor       topk:ef=0,divide=0,index=int64,count=trunc (comp_topk.c cites
 *                      powersgd_grad.py:198-230), powersgd:ef=1,rank_change=reset
 *                      (sparsify_gradient.py:95, 120-124), none with mode=batch (the batch
 *                      logs' k_start=None: full rank, sparsify_gradient.py:111-117);
 *   --overlap tensor   main.py:431-451: after the backward, one blocking collective per tensor;
 *   --lr-scale workers --warmup-epochs 5 --warmup-shape epoch   main.py:44, 222-223, 594;
 *   --lr-schedule step --lr-decay-epochs 152,252 --lr-decay-factor 0.1   main.py:224-233: the
 *                      rate drops once epoch_num > 150 (and > 250), and the rate computed at
 *                      the end of epoch e is epoch e+1's (main.py:592-617), so epochs 152 and
 *                      252 are the first at lr/10 and lr/100 (the test accuracy of
 *                      cifar10_batchsize/resnet18/resnet18_critical_regime_seed41.log jumps
 *                      from 88% to 93% at epoch 152).
 * The levels stay free: the authors ran several pairs (PowerSGD ranks 2/1 and 4/1, TopK
 * 0.99/0.1, 0.99/0.25, 0.99/0.02); the defaults are their ResNet-18 CIFAR-10 ones. In a replay
 * the rate is the trace's, and the lr flags are not checked. */
#include "policy_impl.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { ACCORDION_COMPRESSION, ACCORDION_BATCH };
enum { ACCORDION_ALL, ACCORDION_RANK0 };
enum {
    OPT_CRITICAL,
    OPT_NORMAL,
    OPT_ETA,
    OPT_INTERVAL,
    OPT_MODE,
    OPT_DECIDER,
    OPT_SWITCH,
    OPT_PAPER
};

/* The authors' run, for 300 epochs (see the header comment) */
#define PAPER_EPOCHS     300.0
#define PAPER_INTERVAL   10
#define PAPER_ETA        0.5
#define PAPER_SWITCH     20
#define PAPER_WARMUP     5
#define PAPER_DECAY_1    152
#define PAPER_DECAY_2    252
#define PAPER_DECAY      0.1
#define PAPER_TOPK       "topk:ef=0,divide=0,index=int64,count=trunc"
#define PAPER_POWERSGD   "powersgd:ef=1,rank_change=reset"
#define PAPER_BATCH_COMP "none"

typedef struct {
    int mode, decider, interval;
    int batch_switch; /* mode=batch: the epoch of the fixed switch to the large batch; -1: online */
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
                      "level in critical regimes (low compression); default powersgd 2, topk 0.99 "
                      "(the authors' ResNet-18 runs); mode=batch: global batch, default --batch"},
    [OPT_NORMAL] = {"normal", BELLOWS_OPT_DOUBLE, NULL, 0, 1e9, NULL,
                    "level otherwise (high compression); default powersgd 1, topk 0.1; "
                    "mode=batch: global batch, default 8 x --batch"},
    [OPT_ETA] = {"eta", BELLOWS_OPT_DOUBLE, "0.5", 0, 1e6, NULL,
                 "a relative change of the epoch norm >= eta means critical (the authors' code: "
                 "0.5)"},
    [OPT_INTERVAL] = {"interval", BELLOWS_OPT_INT, NULL, 1, 1e6, NULL,
                      "epochs between checks; default 2 (suits short runs); the authors' code: 10 "
                      "for CNNs, 5 for LSTMs (paper=1: 10 of 300 epochs)"},
    [OPT_MODE] = {"mode", BELLOWS_OPT_CHOICE, "compression", 0, 0, "compression|batch",
                  "adapt the compression level per layer, or the global batch size"},
    [OPT_DECIDER] = {"decider", BELLOWS_OPT_CHOICE, NULL, 0, 0, "all|rank0",
                     "whose local norms decide: all (default: the mean over workers), or rank 0's "
                     "only (the authors' code, paper=1)"},
    [OPT_SWITCH] = {"switch", BELLOWS_OPT_INT, NULL, 1, 1e6, NULL,
                    "mode=batch: a fixed schedule instead of the online rule, the large batch "
                    "from epoch E on; default: the online rule; the authors' batch runs: 20 of "
                    "300 epochs (paper=1)"},
    [OPT_PAPER] = {"paper", BELLOWS_OPT_INT, "0", 0, 1, NULL,
                   "1: the authors' code (uw-mad-dash/Accordion): decider=rank0, interval=10, "
                   "eta=0.5, switch=20 (mode=batch), epochs as of 300 scaled to --epochs; and "
                   "the run must have theirs: --overlap tensor --lr-scale workers "
                   "--warmup-epochs 5 --warmup-shape epoch --lr-schedule step --lr-decay-epochs "
                   "152,252 --lr-decay-factor 0.1 (scaled), --compressor " PAPER_TOPK
                   " or " PAPER_POWERSGD " (mode=batch: none)"},
};

/* round(e300 x epochs / 300), at least lo: one of the authors' epoch counts in a run of epochs */
static int paper_epochs(double e300, int epochs, int lo)
{
    int e = (int)floor(e300 * epochs / PAPER_EPOCHS + 0.5);
    return e < lo ? lo : e;
}

/* paper=1: the options it sets, checked against any given with another value; fills s. */
static int accordion_paper_options(AccordionState *s, const BellowsPolicyContext *ctx,
                                   const BellowsPolicyValue *vals, char *err, size_t errlen)
{
    const int interval = paper_epochs(PAPER_INTERVAL, ctx->epochs, 1);
    const int sw = paper_epochs(PAPER_SWITCH, ctx->epochs, 1);
    const struct {
        int differs;
        const char *key;
        double want; /* NAN: rank0 */
    } fixed[] = {
        {vals[OPT_DECIDER].set && vals[OPT_DECIDER].choice != ACCORDION_RANK0, "decider", NAN},
        {vals[OPT_INTERVAL].set && (int)vals[OPT_INTERVAL].num != interval, "interval", interval},
        {vals[OPT_ETA].num != PAPER_ETA, "eta", PAPER_ETA},
        {vals[OPT_SWITCH].set && (int)vals[OPT_SWITCH].num != sw, "switch", sw},
    };
    for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++) {
        if (!fixed[i].differs) continue;
        char want[32];
        if (isnan(fixed[i].want))
            snprintf(want, sizeof want, "rank0");
        else
            snprintf(want, sizeof want, "%g", fixed[i].want);
        return policy_fail(err, errlen, BELLOWS_POLICY_EUSAGE,
                           "paper=1 sets %s=%s (the authors' code, for %d epochs); drop %s= or "
                           "paper=1",
                           fixed[i].key, want, ctx->epochs, fixed[i].key);
    }
    s->decider = ACCORDION_RANK0;
    s->interval = interval;
    s->batch_switch = s->mode == ACCORDION_BATCH ? sw : -1;
    return BELLOWS_POLICY_OK;
}

/* Appends " --flag value" to buf (of n) for a run setting that is not the authors'. */
static void paper_add(char *buf, size_t n, const char *text)
{
    size_t used = strlen(buf);
    if (used < n) snprintf(buf + used, n - used, " %s", text);
}

/* paper=1: the run's own settings must be the authors' (the header comment cites each). */
static int accordion_paper_run(const AccordionState *s, const BellowsPolicyContext *ctx, char *err,
                               size_t errlen)
{
    const int E = ctx->epochs;
    const int warm = paper_epochs(PAPER_WARMUP, E, 1);
    const int d1 = paper_epochs(PAPER_DECAY_1, E, 1), d2 = paper_epochs(PAPER_DECAY_2, E, 1);
    if (d2 <= d1)
        return policy_fail(err, errlen, BELLOWS_POLICY_EUSAGE,
                           "paper=1: the authors' two lr decays (epochs %d and %d of %g) do not "
                           "fit into %d epoch%s; give --epochs 2 or more",
                           PAPER_DECAY_1, PAPER_DECAY_2, PAPER_EPOCHS, E, E == 1 ? "" : "s");
    const char *comp = s->mode == ACCORDION_BATCH                 ? PAPER_BATCH_COMP
                       : strcmp(ctx->compressor, "topk") == 0     ? PAPER_TOPK
                       : strcmp(ctx->compressor, "powersgd") == 0 ? PAPER_POWERSGD
                                                                  : NULL;
    if (!comp)
        return policy_fail(err, errlen, BELLOWS_POLICY_EUSAGE,
                           "paper=1: the authors' code compresses with PowerSGD or TopK, not "
                           "'%s'; give --compressor " PAPER_POWERSGD " or " PAPER_TOPK,
                           ctx->compressor);
    char add[400] = "", text[160];
    if (strcmp(ctx->compressor_spec, comp) != 0) {
        snprintf(text, sizeof text, "--compressor %s", comp);
        paper_add(add, sizeof add, text);
    }
    if (ctx->overlap != BELLOWS_OVERLAP_TENSOR) paper_add(add, sizeof add, "--overlap tensor");
    if (ctx->lr_known) { /* a replay's rate is the trace's */
        if (ctx->lr_peak_scale != ctx->workers) paper_add(add, sizeof add, "--lr-scale workers");
        if (ctx->warmup_epochs != warm || ctx->warmup_shape != BELLOWS_WARMUP_EPOCH) {
            snprintf(text, sizeof text, "--warmup-epochs %d --warmup-shape epoch", warm);
            paper_add(add, sizeof add, text);
        }
        if (ctx->n_decays != 2 || ctx->decay_epochs[0] != d1 || ctx->decay_epochs[1] != d2 ||
            fabs(ctx->decay_factor - PAPER_DECAY) > 1e-12) {
            snprintf(text, sizeof text,
                     "--lr-schedule step --lr-decay-epochs %d,%d --lr-decay-factor %g", d1, d2,
                     PAPER_DECAY);
            paper_add(add, sizeof add, text);
        }
    }
    if (!add[0]) return BELLOWS_POLICY_OK;
    return policy_fail(err, errlen, BELLOWS_POLICY_EUSAGE,
                       "paper=1 needs the authors' run settings (uw-mad-dash/Accordion, scaled to "
                       "%d epochs); add:%s",
                       E, add);
}

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
    s->decider = vals[OPT_DECIDER].set ? vals[OPT_DECIDER].choice : ACCORDION_ALL;
    s->eta = vals[OPT_ETA].num;
    s->interval = vals[OPT_INTERVAL].set ? (int)vals[OPT_INTERVAL].num : 2;
    s->batch_switch = vals[OPT_SWITCH].set ? (int)vals[OPT_SWITCH].num : -1;
    const BellowsPolicyValue *crit = &vals[OPT_CRITICAL], *norm = &vals[OPT_NORMAL];
    int none = strcmp(ctx->compressor, "none") == 0;
    int rc;
    if (s->mode != ACCORDION_BATCH && vals[OPT_SWITCH].set)
        return policy_fail(err, errlen, BELLOWS_POLICY_EUSAGE,
                           "switch=%d: a fixed schedule of the batch size, for mode=batch only",
                           s->batch_switch);
    if (vals[OPT_PAPER].num != 0 && ((rc = accordion_paper_options(s, ctx, vals, err, errlen)) ||
                                     (rc = accordion_paper_run(s, ctx, err, errlen))))
        return rc;
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
    /* raw alloc: also libbellows_policy.so's, in its caller's process: no exit */
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
    /* the fixed schedule: the next step's epoch decides */
    if (s->batch_switch >= 0)
        s->critical[n] = obs->epoch + (obs->epoch_end ? 1 : 0) < s->batch_switch;
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
    .price_blind = 1,                 /* gradient norms and lr decays only */
};
