/* policy_impl.c: the helpers of policy_impl.h. They use only the public header, so a built-in
 * policy file and this one build as a plugin as they are (tests/plugin_twin.c does, to check
 * that a policy gives the same results built in and loaded). */
#include "policy_impl.h"

#include <assert.h>
#include <stdarg.h>

void policy_set_levels(const BellowsPolicyContext *ctx, double level, BellowsPolicyDecision *d)
{
    for (int l = 0; l < ctx->n_layers; l++) d->level[l] = ctx->layers[l].ndim == 2 ? level : 0;
}

int policy_check_level(const BellowsPolicyContext *ctx, double level, const char *what, char *err,
                       size_t errlen)
{
    if (level == 0) return BELLOWS_POLICY_OK;
    return ctx->check_level(ctx, level, what, err, errlen);
}

int policy_fail(char *err, size_t errlen, int rc, const char *fmt, ...)
{
    if (err && errlen > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return rc;
}

int policy_clock_tick(PolicyClock *c)
{
    assert(c->period >= 1);
    if (++c->since < c->period) return 0;
    c->since = 0;
    return 1;
}
