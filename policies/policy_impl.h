/* policy_impl.h: what the built-in policy files share: level helpers, a message helper and the
 * step clock of the periodic-averaging policies. It sees only the public header,
 * bellows_policy.h, the one a plugin sees: a built-in policy could be built as a plugin as it
 * is, given an entry point. The registered policies are listed in policies.def. */
#ifndef BELLOWS_POLICY_IMPL_H
#define BELLOWS_POLICY_IMPL_H

#include <stdio.h>

#include "bellows_policy.h"

/* Sets every matrix layer to level and every vector to 0 (vectors always go dense). */
void policy_set_levels(const BellowsPolicyContext *ctx, double level, BellowsPolicyDecision *d);

/* Checks a level the policy may decide with ctx->check_level; level 0 (dense) is always valid.
 * what names the option in the message ("level", "critical"). */
int policy_check_level(const BellowsPolicyContext *ctx, double level, const char *what, char *err,
                       size_t errlen);

/* Formats a one-line message into err and returns rc: `return policy_fail(err, errlen,
 * BELLOWS_POLICY_EUSAGE, "level=%g: ...", x);`. */
#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
int policy_fail(char *err, size_t errlen, int rc, const char *fmt, ...);

/* Counts local steps between parameter averagings. Each step, policy_clock_tick counts the step
 * and returns 1 when `period` local steps have run since the last averaging (then restarts the
 * count). A period changed between ticks applies to the interval under way. */
typedef struct {
    int period; /* >= 1 */
    long since; /* local steps since the last averaging */
} PolicyClock;

int policy_clock_tick(PolicyClock *c);

/* The outer optimizer a built-in policy asks the driver for at each averaging (DiLoCo's:
 * Nesterov SGD on the outer gradient, the mean of theta_global - theta_i). */
typedef struct {
    double lr, momentum;
    /* Streaming DiLoCo's (diloco: h, fragments 1, tau 0, bits 32, alpha 0): the model's layers
     * in `fragments` contiguous fragments, fragment p exchanged at the steps c (counted from 1)
     * with c >= h and c % h == p h / fragments; its outer step applied tau steps later as
     * alpha local + (1 - alpha) global; the outer gradients quantised to bits (32: none). */
    int h, fragments, tau, bits;
    double alpha;
    int eager; /* diloco: eager updates (arXiv 2502.12996) */
} PolicyOuterOpt;

/* Whether p, a built-in policy, asks for an outer step, and its settings into *o (diloco.c). */
int policy_builtin_outer(const BellowsPolicy *p, PolicyOuterOpt *o);
int policy_streaming_outer(const BellowsPolicy *p, PolicyOuterOpt *o); /* streaming_diloco.c */

#endif
