/* policy.c: the policy registry and the wrappers every caller goes through (SQLite VFS style:
 * the core parses and checks the spec, allocates the policy's zeroed state, supplies defaults
 * for the optional operations, and asserts that each decision is well formed).
 *
 * Adding a policy NAME takes one new file and one line:
 *   1. policies/NAME.c, opening with what the rule is and where it comes from, defining
 *      `const PolicyOps policy_NAME_ops = {...}`: name, help, source, mode,
 *      `.opts = OPTS, .n_opts = SPEC_N(OPTS)` if it has options, state_size, init and decide
 *      (observe, describe, free_impl if needed; policy.h says what each must do);
 *   2. the line POLICY(NAME) in policies/policies.def, where it should be listed.
 * CMake compiles every .c file directly in policies/ by itself (not those of subfolders), and
 * tests/test_policies.c runs every registered policy through its contract; policies/README.md
 * has the details. */
#include "policy_impl.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define POLICY_MAX_OPTS 16

/* Every policy's ops, defined in its own policies/NAME.c, then the registry in the order of
 * policies.def. */
#define POLICY(name) extern const PolicyOps policy_##name##_ops;
#include "policies.def"
#undef POLICY

static const PolicyOps *const policy_table[] = {
#define POLICY(name) &policy_##name##_ops,
#include "policies.def"
#undef POLICY
    NULL,
};

const PolicyOps *const *policy_registry(void)
{
    return policy_table;
}

const PolicyOps *policy_find(const char *name)
{
    for (const PolicyOps *const *r = policy_table; *r; r++)
        if (strcmp((*r)->name, name) == 0) return *r;
    return NULL;
}

/* The driver builds the context; a bad one is a programming error, not a user's. */
static void policy_assert_context(const PolicyContext *ctx)
{
    assert(ctx->n_layers >= 1 && ctx->n_layers <= POLICY_MAX_LAYERS);
    for (int l = 0; l < ctx->n_layers; l++) {
        assert(ctx->layers[l].ndim == 1 || ctx->layers[l].ndim == 2);
        assert(ctx->layers[l].rows >= 1 && ctx->layers[l].cols >= 1);
    }
    assert(ctx->workers >= 1 && ctx->epochs >= 1 && ctx->batch >= 1);
    assert(ctx->steps_per_epoch >= 1);
    assert(isfinite(ctx->lr0) && ctx->lr0 > 0);
    assert(ctx->n_decays >= 0 && ctx->n_decays <= POLICY_MAX_DECAYS);
    for (int i = 1; i < ctx->n_decays; i++) assert(ctx->decay_epochs[i] > ctx->decay_epochs[i - 1]);
    assert(memchr(ctx->compressor, '\0', sizeof ctx->compressor) && ctx->compressor[0]);
    assert(isfinite(ctx->compressor_level) && ctx->compressor_level >= 0);
    (void)ctx; /* unused when NDEBUG */
}

int policy_create(const char *spec, const char *flag, const PolicyContext *ctx, Policy **out,
                  BwError *err)
{
    assert(spec && flag && ctx && out);
    *out = NULL;
    policy_assert_context(ctx);
    Spec s;
    int rc = spec_parse(spec, flag, &s, err);
    if (rc) return rc;
    const PolicyOps *ops = policy_find(s.name);
    if (!ops) {
        char known[256] = "";
        size_t used = 0;
        for (const PolicyOps *const *r = policy_table; *r && used < sizeof known; r++)
            used += (size_t)snprintf(known + used, sizeof known - used, "%s%s",
                                     r == policy_table ? "" : ", ", (*r)->name);
        return bw_fail(err, BW_EUSAGE, "%s '%s': unknown policy (known: %s)", flag, s.name, known);
    }
    assert(ops->n_opts <= POLICY_MAX_OPTS && ops->init && ops->decide);
    SpecVal vals[POLICY_MAX_OPTS];
    rc = spec_resolve(&s, ops->opts, ops->n_opts, vals, err);
    if (rc) return rc;

    Policy *p = calloc(1, sizeof *p);
    if (!p) return bw_fail(err, BW_ERUNTIME, "%s %s: out of memory", flag, s.name);
    p->ops = ops;
    p->ctx = *ctx;
    spec_format(&s, p->spec, sizeof p->spec);
    if (ops->state_size > 0 && !(p->state = calloc(1, ops->state_size))) {
        free(p);
        return bw_fail(err, BW_ERUNTIME, "%s %s: out of memory", flag, s.name);
    }
    /* init names the option at fault; the flag and the policy's name go in front here */
    BwError inner = {{0}};
    rc = ops->init(p, vals, &inner);
    if (rc) {
        free(p->state); /* a failing init frees whatever it allocated itself */
        free(p);
        return bw_fail(err, rc, "%s %s: %s", flag, s.name, inner.msg);
    }
    *out = p;
    return BW_OK;
}

void policy_step(Policy *p, const PolicyObs *obs, PolicyDecision *d)
{
    assert(p && obs && d);
    assert(obs->step >= 0 && obs->epoch >= 0);
    assert(isfinite(obs->lr) && obs->lr >= 0);
    const PolicyContext *ctx = &p->ctx;
    memset(d, 0, sizeof *d);
    d->batch = ctx->batch;
    d->period = p->ops->mode == POLICY_PERIODIC ? 1 : 0;
    if (p->ops->observe) p->ops->observe(p, obs);
    p->ops->decide(p, obs, d);

    assert(d->batch >= 1);
    for (int l = 0; l < ctx->n_layers; l++) {
        assert(isfinite(d->level[l]) && d->level[l] >= 0);
        assert(ctx->layers[l].ndim == 2 || d->level[l] == 0);
    }
    if (p->ops->mode == POLICY_PERIODIC)
        assert(d->period >= 1 && (d->average == 0 || d->average == 1));
    else
        assert(d->average == 0);
}

void policy_describe(const Policy *p, char *buf, size_t n)
{
    assert(p && buf && n > 0);
    buf[0] = '\0';
    if (p->ops->describe)
        p->ops->describe(p, buf, n);
    else
        snprintf(buf, n, "%s", p->ops->name);
}

void policy_free(Policy *p)
{
    if (!p) return;
    if (p->ops->free_impl) p->ops->free_impl(p);
    free(p->state);
    free(p);
}

void policy_print_list(FILE *out)
{
    fprintf(out, "policies (--policy NAME or NAME:key=value,...):\n");
    for (const PolicyOps *const *r = policy_table; *r; r++) {
        const PolicyOps *o = *r;
        fprintf(out, "\n%-10s %s%s\n", o->name, o->reconstruction ? "[reconstruction] " : "",
                o->help);
        fprintf(out, "    mode: %s\n",
                o->mode == POLICY_GRADIENT
                    ? "gradient (reduced every step at the decided levels)"
                    : "periodic (local steps; parameters averaged every period)");
        fprintf(out, "    source: %s\n", o->source);
        if (o->n_opts > 0)
            spec_print_opts(out, o->opts, o->n_opts);
        else
            fprintf(out, "    (no options)\n");
    }
}

void policy_set_levels(const PolicyContext *ctx, double level, PolicyDecision *d)
{
    for (int l = 0; l < ctx->n_layers; l++) d->level[l] = ctx->layers[l].ndim == 2 ? level : 0;
}

int policy_check_level(const PolicyContext *ctx, double level, const char *what, BwError *err)
{
    if (level == 0 || !ctx->check_level) return BW_OK;
    return ctx->check_level(ctx->check_level_arg, level, what, err);
}

int policy_clock_tick(PolicyClock *c)
{
    assert(c->period >= 1);
    if (++c->since < c->period) return 0;
    c->since = 0;
    return 1;
}
