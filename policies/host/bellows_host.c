/* bellows_host.c: the policy layer's C API for other programs (bellows_host.h), a thin shell
 * over policy_create and policy_step. */
#include "bellows_host.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"

struct BellowsHost {
    Policy *p;
    int n_layers;
    PolicyLayer *layers; /* the context's, kept for the policy's lifetime */
};

int bellows_host_api(void)
{
    return BELLOWS_HOST_API;
}

int bellows_host_policy_version(void)
{
    return BELLOWS_POLICY_VERSION;
}

/* Every field a foreign caller mirrors, with its offset; a struct's size under field NULL. */
typedef struct {
    const char *type, *field;
    size_t at;
} Layout;

#define SIZE(T)                                                                                    \
    {                                                                                              \
#T, NULL, sizeof(T)                                                                        \
    }
#define FIELD(T, f)                                                                                \
    {                                                                                              \
#T, #f, offsetof(T, f)                                                                     \
    }
static const Layout LAYOUT[] = {
    SIZE(BellowsPolicyObs),
    FIELD(BellowsPolicyObs, step),
    FIELD(BellowsPolicyObs, epoch),
    FIELD(BellowsPolicyObs, epoch_start),
    FIELD(BellowsPolicyObs, epoch_end),
    FIELD(BellowsPolicyObs, lr_decayed),
    FIELD(BellowsPolicyObs, lr),
    FIELD(BellowsPolicyObs, loss),
    FIELD(BellowsPolicyObs, grad_norm_rank0),
    FIELD(BellowsPolicyObs, grad_norm_mean),
    FIELD(BellowsPolicyObs, averaged),
    FIELD(BellowsPolicyObs, param_variance),
    FIELD(BellowsPolicyObs, sim_time_s),
    FIELD(BellowsPolicyObs, bytes_per_worker),
    FIELD(BellowsPolicyObs, epoch_norm_rank0),
    FIELD(BellowsPolicyObs, epoch_norm_mean),
    FIELD(BellowsPolicyObs, have),
    FIELD(BellowsPolicyObs, compute_s),
    FIELD(BellowsPolicyObs, compress_s),
    FIELD(BellowsPolicyObs, comm_s),
    FIELD(BellowsPolicyObs, wait_s),
    FIELD(BellowsPolicyObs, eval_accuracy),
    FIELD(BellowsPolicyObs, eval_loss),
    FIELD(BellowsPolicyObs, eval_step),
    FIELD(BellowsPolicyObs, eval_time_s),
    SIZE(BellowsHostContext),
    FIELD(BellowsHostContext, n_layers),
    FIELD(BellowsHostContext, names),
    FIELD(BellowsHostContext, rows),
    FIELD(BellowsHostContext, cols),
    FIELD(BellowsHostContext, workers),
    FIELD(BellowsHostContext, epochs),
    FIELD(BellowsHostContext, batch),
    FIELD(BellowsHostContext, steps_per_epoch),
    FIELD(BellowsHostContext, lr0),
    FIELD(BellowsHostContext, n_decays),
    FIELD(BellowsHostContext, decay_epochs),
    FIELD(BellowsHostContext, compressor),
    FIELD(BellowsHostContext, compressor_level),
    FIELD(BellowsHostContext, compressor_spec),
    SIZE(BellowsPolicyOuter),
    FIELD(BellowsPolicyOuter, lr),
    FIELD(BellowsPolicyOuter, momentum),
    FIELD(BellowsPolicyOuter, alpha),
    FIELD(BellowsPolicyOuter, h),
    FIELD(BellowsPolicyOuter, fragments),
    FIELD(BellowsPolicyOuter, tau),
    FIELD(BellowsPolicyOuter, bits),
    FIELD(BellowsPolicyOuter, eager),
};
#undef SIZE
#undef FIELD

size_t bellows_host_layout(const char *type, const char *field)
{
    for (size_t i = 0; type && i < sizeof LAYOUT / sizeof *LAYOUT; i++) {
        const Layout *l = &LAYOUT[i];
        if (strcmp(l->type, type) != 0) continue;
        if (!field ? !l->field : l->field && strcmp(l->field, field) == 0) return l->at;
    }
    return (size_t)-1;
}

static int fail(char *err, size_t errlen, int rc, const char *msg)
{
    if (err && errlen > 0) snprintf(err, errlen, "%s", msg);
    return rc;
}

/* The context's checks the driver's assertions make in bellows: here, a caller's mistake. */
static const char *bad_context(const BellowsHostContext *c)
{
    if (c->n_layers < 1 || !c->rows || !c->cols) return "the context has no layers";
    for (int l = 0; l < c->n_layers; l++)
        if (c->rows[l] < 1 || c->cols[l] < 1) return "a layer with rows or cols < 1";
    if (c->workers < 1 || c->epochs < 1 || c->batch < 1 || c->steps_per_epoch < 1)
        return "workers, epochs, batch and steps_per_epoch must be >= 1";
    if (!(c->lr0 > 0 && c->lr0 < 1e6)) return "lr0 must be above 0";
    if (c->n_decays < 0 || c->n_decays > POLICY_MAX_DECAYS || (c->n_decays && !c->decay_epochs))
        return "n_decays out of range";
    for (int i = 1; i < c->n_decays; i++)
        if (c->decay_epochs[i] <= c->decay_epochs[i - 1]) return "decay_epochs not ascending";
    if (!c->compressor || !c->compressor[0] || strlen(c->compressor) >= 32)
        return "compressor must be a name shorter than 32 bytes";
    if (!(c->compressor_level >= 0 && c->compressor_level < 1e9))
        return "compressor_level must be >= 0";
    if (c->compressor_spec && strlen(c->compressor_spec) >= 256)
        return "compressor_spec longer than 255 bytes";
    return NULL;
}

static void fill_context(const BellowsHostContext *c, PolicyLayer *layers, PolicyContext *ctx)
{
    memset(ctx, 0, sizeof *ctx);
    for (int l = 0; l < c->n_layers; l++) {
        memset(&layers[l], 0, sizeof layers[l]);
        snprintf(layers[l].name, sizeof layers[l].name, "%s",
                 c->names && c->names[l] ? c->names[l] : "");
        layers[l].rows = c->rows[l];
        layers[l].cols = c->cols[l];
        layers[l].ndim = c->cols[l] > 1 ? 2 : 1;
    }
    ctx->n_layers = c->n_layers;
    ctx->layers = layers;
    ctx->workers = c->workers;
    ctx->epochs = c->epochs;
    ctx->batch = c->batch;
    ctx->steps_per_epoch = c->steps_per_epoch;
    ctx->lr0 = c->lr0;
    ctx->n_decays = c->n_decays;
    for (int i = 0; i < c->n_decays; i++) ctx->decay_epochs[i] = c->decay_epochs[i];
    snprintf(ctx->compressor, sizeof ctx->compressor, "%s", c->compressor);
    ctx->compressor_level = c->compressor_level;
    snprintf(ctx->compressor_spec, sizeof ctx->compressor_spec, "%s",
             c->compressor_spec ? c->compressor_spec : c->compressor);
    ctx->overlap = BELLOWS_OVERLAP_NONE;
    ctx->warmup_shape = BELLOWS_WARMUP_STEP;
}

int bellows_host_create(const char *spec, const BellowsHostContext *hctx, BellowsHost **out,
                        char *err, size_t errlen)
{
    if (!out) return fail(err, errlen, BW_EUSAGE, "bellows_host_create: out is NULL");
    *out = NULL;
    if (!spec || !hctx) return fail(err, errlen, BW_EUSAGE, "--policy: no spec or context");
    const char *bad = bad_context(hctx);
    if (bad) {
        char msg[160];
        snprintf(msg, sizeof msg, "--policy %s: %s", spec, bad);
        return fail(err, errlen, BW_EUSAGE, msg);
    }
    /* raw alloc: also libbellows_policy.so's, in its caller's process: no exit */
    BellowsHost *h = calloc(1, sizeof *h);
    if (h) h->layers = calloc((size_t)hctx->n_layers, sizeof *h->layers);
    if (!h || !h->layers) {
        if (h) free(h);
        return fail(err, errlen, BW_ERUNTIME, "--policy: out of memory");
    }
    PolicyContext ctx;
    fill_context(hctx, h->layers, &ctx);
    BwError e = {{0}};
    int rc = policy_create(spec, "--policy", &ctx, &h->p, &e);
    if (rc) {
        free(h->layers);
        free(h);
        return fail(err, errlen, rc, e.msg);
    }
    h->n_layers = hctx->n_layers;
    *out = h;
    return BW_OK;
}

int bellows_host_mode(const BellowsHost *h)
{
    return h->p->ops->mode;
}

unsigned bellows_host_needs(const BellowsHost *h)
{
    return h->p->ops->needs;
}

const char *bellows_host_spec(const BellowsHost *h)
{
    return policy_spec(h->p);
}

int bellows_host_step(BellowsHost *h, const BellowsPolicyObs *obs, double *level, int *batch,
                      int *average, int *period, char *err, size_t errlen)
{
    if (!h || !obs || !level || !batch || !average || !period)
        return fail(err, errlen, BW_EUSAGE, "bellows_host_step: a NULL argument");
    if (obs->step < 0 || obs->epoch < 0 || !(obs->lr >= 0 && obs->lr < 1e300))
        return fail(err, errlen, BW_EUSAGE,
                    "bellows_host_step: step and epoch must be >= 0, lr finite and >= 0");
    PolicyDecision d = {.level = level};
    BwError e = {{0}};
    int rc = policy_step(h->p, obs, &d, &e);
    if (rc) return fail(err, errlen, rc, e.msg);
    *batch = d.batch;
    *average = d.average;
    *period = d.period;
    return BW_OK;
}

void bellows_host_describe(const BellowsHost *h, char *buf, size_t n)
{
    policy_describe(h->p, buf, n);
}

int bellows_host_outer(const BellowsHost *h, BellowsPolicyOuter *o)
{
    PolicyOuter po;
    if (!h || !o || !policy_outer(h->p, &po)) return 0;
    *o = (BellowsPolicyOuter){.lr = po.lr,
                              .momentum = po.momentum,
                              .alpha = po.alpha,
                              .h = po.h,
                              .fragments = po.fragments,
                              .tau = po.tau,
                              .bits = po.bits,
                              .eager = po.eager};
    return 1;
}

void bellows_host_free(BellowsHost *h)
{
    if (!h) return;
    policy_free(h->p);
    free(h->layers);
    free(h);
}
