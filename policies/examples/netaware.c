/* netaware.c: a network-aware static policy, a bellows plugin. It picks one PowerSGD rank for
 * the whole run from the cluster's bandwidth and latency: the largest rank r <= max whose
 * step communication stays within `fraction` of the step's compute time,
 *     t_comm(r) = 2 rounds (P, then Q) x ring allreduce of the rank-r factors plus the dense
 *                 vectors: 2 (W-1)/W x bytes(r) / bandwidth + 2 (W-1) x latency
 *     bytes(r)  = 4 x (sum over matrices of r x (rows + cols)) + 4 x (sum over vectors of rows)
 * (W workers, fp32). If no rank fits, rank 1; if r = max fits, max.
 * The compute time per step is the option compute_s, or else the first observed step's
 * compute (obs.compute_s). While the bandwidth is not known (ctx bandwidth_Bps 0: a --platform
 * file before it is loaded) or the compute time is not (the first step), the policy runs at
 * `fallback` (default: the compressor's default rank) and its state says "fallback"; it decides
 * once, as soon as it can.
 *   cc -shared -fPIC -I policies -o netaware.so policies/examples/netaware.c
 *   bellows run --compressor powersgd --policy ./netaware.so:fraction=0.5 */
#include <stdio.h>
#include <string.h>

#include "bellows_policy.h"

typedef struct {
    double fraction, compute_s, fallback;
    int max, rank; /* rank: 0 until decided */
} NetAware;

static const BellowsPolicyOpt netaware_opts[] = {
    {"fraction", BELLOWS_OPT_DOUBLE, "0.5", 1e-6, 1e6, NULL,
     "communication may take at most this fraction of the compute time"},
    {"max", BELLOWS_OPT_INT, "8", 1, 1024, NULL, "highest rank to consider"},
    {"compute_s", BELLOWS_OPT_DOUBLE, "0", 0, 1e6, NULL,
     "compute seconds per step; 0: the first step's, as observed"},
    {"fallback", BELLOWS_OPT_INT, NULL, 1, 1024, NULL,
     "rank while bandwidth or compute time are unknown; default: the compressor's default"},
};

static int netaware_init(BellowsPolicy *p, const BellowsPolicyValue *v, char *err, size_t n)
{
    NetAware *s = p->state;
    if (strcmp(p->ctx->compressor, "powersgd") != 0) {
        snprintf(err, n, "needs --compressor powersgd (the run's is '%s')", p->ctx->compressor);
        return BELLOWS_POLICY_EUSAGE;
    }
    s->fraction = v[0].num;
    s->max = (int)v[1].num;
    s->compute_s = v[2].num;
    s->fallback = v[3].set ? v[3].num : p->ctx->compressor_level;
    int rc = p->ctx->check_level(p->ctx, s->fallback, "fallback", err, n);
    return rc ? rc : p->ctx->check_level(p->ctx, s->max, "max", err, n);
}

static double comm_time(const BellowsPolicyContext *c, int r)
{
    double bytes = 0, w = c->workers;
    for (int l = 0; l < c->n_layers; l++)
        bytes += 4.0 * (c->layers[l].ndim == 2 ? r * (c->layers[l].rows + c->layers[l].cols)
                                               : c->layers[l].rows);
    return 2 * (2 * (w - 1) / w * bytes / c->bandwidth_Bps + 2 * (w - 1) * c->latency_s);
}

static void netaware_decide(BellowsPolicy *p, const BellowsPolicyObs *obs, BellowsPolicyDecision *d)
{
    NetAware *s = p->state;
    const BellowsPolicyContext *c = p->ctx;
    double compute = s->compute_s > 0                     ? s->compute_s
                     : obs->have & BELLOWS_HAS_STEP_TIMES ? obs->compute_s
                                                          : 0;
    if (!s->rank && c->bandwidth_Bps > 0 && compute > 0) {
        s->rank = 1;
        for (int r = 2; r <= s->max; r++)
            if (comm_time(c, r) <= s->fraction * compute) s->rank = r;
    }
    for (int l = 0; l < c->n_layers; l++)
        d->level[l] = c->layers[l].ndim == 2 ? (s->rank ? s->rank : s->fallback) : 0;
}

static void netaware_describe(const BellowsPolicy *p, char *buf, size_t n)
{
    const NetAware *s = p->state;
    if (s->rank)
        snprintf(buf, n, "rank=%d", s->rank);
    else
        snprintf(buf, n, "rank=%g fallback", s->fallback);
}

static const BellowsPolicyOps netaware_ops = {
    .iVersion = BELLOWS_POLICY_VERSION,
    .name = "netaware",
    .help = "one PowerSGD rank for the run: the largest whose communication fits in a fraction "
            "of the compute time, from the cluster's bandwidth and latency",
    .source = "bellows example (policies/examples/netaware.c)",
    .mode = BELLOWS_POLICY_GRADIENT,
    .opts = netaware_opts,
    .n_opts = BELLOWS_N(netaware_opts),
    .state_size = sizeof(NetAware),
    .init = netaware_init,
    .decide = netaware_decide,
    .describe = netaware_describe,
    .price_blind = 0, /* it reads the bandwidth, the latency and the step's compute time */
};

const BellowsPolicyOps *bellows_policy_entry(void)
{
    return &netaware_ops;
}
