/* policy_impl.h: what the policy files share and the rest of bellows does not see: level
 * helpers and the step clock of the periodic-averaging policies. The public interface is
 * policy.h; the registered policies are listed in policies.def. */
#ifndef BELLOWS_POLICY_IMPL_H
#define BELLOWS_POLICY_IMPL_H

#include "policy.h"

/* Sets every matrix layer to level and every vector to 0 (vectors always go dense). */
void policy_set_levels(const PolicyContext *ctx, double level, PolicyDecision *d);

/* Checks a level the policy may decide with the driver's hook (ctx->check_level); level 0
 * (dense) is always valid. what names the option in the message ("level", "critical"). */
int policy_check_level(const PolicyContext *ctx, double level, const char *what, BwError *err);

/* Counts local steps between parameter averagings. Each step, policy_clock_tick counts the step
 * and returns 1 when `period` local steps have run since the last averaging (then restarts the
 * count). A period changed between ticks applies to the interval under way. */
typedef struct {
    int period; /* >= 1 */
    long since; /* local steps since the last averaging */
} PolicyClock;

int policy_clock_tick(PolicyClock *c);

#endif
