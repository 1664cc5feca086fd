/* streaming_diloco.c: Streaming DiLoCo (Douillard et al., "Streaming DiLoCo with overlapping
 * communication: Towards a Distributed Free Lunch", arXiv 2501.18512). DiLoCo (diloco.c) with
 * the model split into fragments exchanged at staggered steps, so the peak bandwidth is a
 * fragment's rather than the model's: fragment p of F (contiguous layers here; the paper also
 * strides them) is exchanged every H steps at offset p H / F; its outer step (Nesterov, as
 * DiLoCo's) is applied tau steps after its exchange began, merged with the replica's own
 * fragment as alpha local + (1 - alpha) global (the paper's mixing; default 0 here, DiLoCo's
 * replacement: check the paper's value before relying on another); and each replica's outer
 * gradient is quantised to `bits` before the exchange (the paper: 4-bit floats, E3M0; here a
 * uniform symmetric quantiser of 2^(bits-1) - 1 levels a side, scaled by the fragment's largest
 * magnitude; 1 bit: the sign times the mean magnitude), which prices bits / 32 of the fragment.
 * The policy decides the exchange steps; the driver does the rest (sim/driver/outer.c). */
#include "policy_impl.h"

typedef struct {
    PolicyOuterOpt outer;
    long step; /* steps decided so far */
} StreamingState;

static const BellowsPolicyOpt streaming_opts[] = {
    {"h", BELLOWS_OPT_INT, "100", 1, 1e9, NULL,
     "H, the inner steps between a fragment's exchanges"},
    {"fragments", BELLOWS_OPT_INT, "4", 1, 4096, NULL,
     "F, the fragments (at most the model's layers and H), exchanged at offsets p H / F"},
    {"tau", BELLOWS_OPT_INT, "0", 0, 1e9, NULL,
     "inner steps between a fragment's exchange and its outer step's application (< H)"},
    {"bits", BELLOWS_OPT_INT, "4", 1, 32, NULL,
     "the outer gradients' quantisation, 1 to 16 bits (32: none)"},
    {"alpha", BELLOWS_OPT_DOUBLE, "0", 0, 1, NULL,
     "the merge: alpha x local + (1 - alpha) x global at the application"},
    {"outer_lr", BELLOWS_OPT_DOUBLE, "0.7", 1e-9, 1e3, NULL, "the outer Nesterov optimizer's lr"},
    {"outer_momentum", BELLOWS_OPT_DOUBLE, "0.9", 0, 0.999999, NULL, "its momentum"},
};

static int streaming_init(BellowsPolicy *p, const BellowsPolicyValue *vals, char *err,
                          size_t errlen)
{
    StreamingState *s = p->state;
    PolicyOuterOpt *o = &s->outer;
    o->h = (int)vals[0].num;
    o->fragments = (int)vals[1].num;
    o->tau = (int)vals[2].num;
    o->bits = (int)vals[3].num;
    o->alpha = vals[4].num;
    o->lr = vals[5].num;
    o->momentum = vals[6].num;
    if (o->fragments > p->ctx->n_layers)
        return policy_fail(err, errlen, BELLOWS_POLICY_EUSAGE,
                           "fragments=%d: more than the model's %d layers", o->fragments,
                           p->ctx->n_layers);
    if (o->fragments > o->h)
        return policy_fail(err, errlen, BELLOWS_POLICY_EUSAGE,
                           "fragments=%d: more than h=%d (two fragments would share an offset)",
                           o->fragments, o->h);
    if (o->bits > 16 && o->bits != 32)
        return policy_fail(err, errlen, BELLOWS_POLICY_EUSAGE,
                           "bits=%d: expected 1 to 16 (or 32: no quantisation)", o->bits);
    if (o->tau >= o->h)
        return policy_fail(err, errlen, BELLOWS_POLICY_EUSAGE, "tau=%d: must be less than h=%d",
                           o->tau, o->h);
    return BELLOWS_POLICY_OK;
}

static void streaming_decide(BellowsPolicy *p, const BellowsPolicyObs *obs,
                             BellowsPolicyDecision *d)
{
    (void)obs;
    StreamingState *s = p->state;
    const long c = ++s->step, h = s->outer.h;
    d->period = (int)h; /* each fragment's */
    d->average = 0;
    for (int f = 0; f < s->outer.fragments; f++)
        if (c >= h && c % h == (long)f * h / s->outer.fragments) d->average = 1;
}

static void streaming_describe(const BellowsPolicy *p, char *buf, size_t n)
{
    const PolicyOuterOpt *o = &((const StreamingState *)p->state)->outer;
    snprintf(buf, n, "H=%d,fragments=%d,tau=%d,bits=%d", o->h, o->fragments, o->tau, o->bits);
}

const BellowsPolicyOps policy_streaming_diloco_ops = {
    .iVersion = BELLOWS_POLICY_VERSION,
    .name = "streaming-diloco",
    .help = "Streaming DiLoCo: DiLoCo by fragments at staggered steps, each fragment's outer "
            "step tau steps after its exchange, outer gradients quantised to `bits`",
    .source = "Douillard et al., Streaming DiLoCo with overlapping communication, arXiv "
              "2501.18512; pytorch/torchft torchft/local_sgd.py (DiLoCo fragments)",
    .mode = BELLOWS_POLICY_PERIODIC,
    .opts = streaming_opts,
    .n_opts = BELLOWS_N(streaming_opts),
    .state_size = sizeof(StreamingState),
    .init = streaming_init,
    .decide = streaming_decide,
    .describe = streaming_describe,
    .price_blind = 1, /* fixed steps */
};

int policy_streaming_outer(const BellowsPolicy *p, PolicyOuterOpt *o)
{
    if (p->ops->decide != streaming_decide) return 0;
    *o = ((const StreamingState *)p->state)->outer;
    return 1;
}
