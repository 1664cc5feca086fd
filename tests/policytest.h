/* policytest.h: helpers shared by the policy suites (test_policies.c,
 * test_policies_accordion.c, test_policies_periodic.c): the context of a small run of four
 * layers, a policy_create that must succeed, and a check of what a policy describes.
 * Header-only; every function is static inline so each suite takes what it uses. */
#ifndef BELLOWS_POLICYTEST_H
#define BELLOWS_POLICYTEST_H

#include "testutil.h"

#include "policy.h"

/* Layers: 0 "a.w" matrix, 1 "a.b" vector, 2 "b.w" matrix, 3 "c.w" matrix. */
static inline PolicyContext make_ctx(const char *compressor, double level)
{
    PolicyContext c;
    memset(&c, 0, sizeof c);
    static const PolicyLayer layers[] = {
        {"a.w", 64, 784, 2}, {"a.b", 64, 1, 1}, {"b.w", 32, 64, 2}, {"c.w", 10, 32, 2}};
    c.n_layers = 4;
    c.layers = layers; /* policy_create copies it */
    c.workers = 4;
    c.epochs = 6;
    c.batch = 64;
    c.steps_per_epoch = 10;
    c.lr0 = 0.1;
    c.n_decays = 1;
    c.decay_epochs[0] = 4;
    snprintf(c.compressor, sizeof c.compressor, "%s", compressor);
    c.compressor_level = level;
    return c;
}

static inline Policy *create_ok(const char *spec, const PolicyContext *ctx)
{
    Policy *p = NULL;
    BwError err = {{0}};
    int rc = policy_create(spec, "--policy", ctx, &p, &err);
    if (rc != BW_OK) fail_msg("policy_create(\"%s\") failed: %s", spec, err.msg);
    assert_non_null(p);
    return p;
}

static inline void assert_describe(const Policy *p, const char *want)
{
    char buf[64];
    policy_describe(p, buf, sizeof buf);
    assert_string_equal(buf, want);
}

#endif
