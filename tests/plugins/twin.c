/* twin.c: a built-in policy built as a plugin, to check that a policy gives byte-identical
 * results built in and loaded. Built with the policy's own file and the helpers:
 *   cc -shared -fPIC -I policies -DTWIN=policy_static_ops -o twin.so tests/plugins/twin.c \
 *      policies/static.c policies/policy_impl.c */
#include "bellows_policy.h"

extern const BellowsPolicyOps TWIN;

const BellowsPolicyOps *bellows_policy_entry(void)
{
    return &TWIN;
}
