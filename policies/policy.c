/* policy.c: the policy registry and the wrappers every caller goes through (SQLite VFS style:
 * the core parses and checks the spec, allocates the policy's zeroed state, supplies defaults
 * for the optional operations, and asserts that each decision is well formed). Built-in
 * policies, plugins (policy_load.c) and Python files (python/policy_python.c, whose ops table
 * calls the file's Policy class) go through the same code, with the same public header.
 *
 * Adding a built-in policy NAME takes one new file and one line:
 *   1. policies/NAME.c, opening with what the rule is and where it comes from, defining
 *      `const BellowsPolicyOps policy_NAME_ops = {...}`: iVersion, name, help, source, mode,
 *      `.opts = OPTS, .n_opts = BELLOWS_N(OPTS)` if it has options, state_size and decide
 *      (init, observe, describe, free_impl if needed; bellows_policy.h says what each must do);
 *   2. the line POLICY(NAME) in policies/policies.def, where it should be listed.
 * CMake compiles every .c file directly in policies/ by itself (not those of subfolders), and
 * tests/test_policies.c runs every registered policy through its contract; policies/README.md
 * has the details. */
#include "policy.h"

#include "policy_impl.h"
#include "policy_python.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "outfile.h"
#include "plugguard.h"

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

/* One policy as the core holds it; Policy is its first member. */
typedef struct {
    BellowsPolicy pub;
    PolicyOps ops;            /* a copy, zero-extended to this core's version */
    BellowsPolicyContext ctx; /* what the policy sees */
    PolicyContext ictx;       /* the driver's, for its level check */
    PolicyLayer *layers;      /* ctx's and ictx's layer table: a copy of the driver's */
    char spec[SPEC_MAX_TEXT];
    char flag[32];    /* the flag it came from, for plugguard */
    void *dl;         /* a plugin's handle; NULL: built in or Python */
    PyPolicyFile *py; /* a Python file's; NULL: C */
    int has_outer;    /* a plugin's or Python file's outer step (ops.outer), checked at create */
    PolicyOuter outer;
} PolicyCore;

static PolicyCore *core_of(const Policy *p)
{
    return (PolicyCore *)(void *)p; /* pub is the first member */
}

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
    assert(ctx->n_layers >= 1 && ctx->layers);
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
    assert(memchr(ctx->compressor_spec, '\0', sizeof ctx->compressor_spec));
    assert(ctx->overlap >= BELLOWS_OVERLAP_NONE && ctx->overlap <= BELLOWS_OVERLAP_LAYER);
    assert(ctx->warmup_shape == BELLOWS_WARMUP_STEP || ctx->warmup_shape == BELLOWS_WARMUP_EPOCH);
    (void)ctx; /* unused when NDEBUG */
}

/* The policy's check_level: the driver's hook, with the message in a plain buffer. */
static int core_check_level(const BellowsPolicyContext *ctx, double level, const char *what,
                            char *err, size_t errlen)
{
    const PolicyCore *c = ctx->core;
    if (level == 0 || !c->ictx.check_level) return BELLOWS_POLICY_OK;
    BwError e = {{0}};
    int rc = c->ictx.check_level(c->ictx.check_level_arg, level, what, &e);
    if (rc && err && errlen > 0) snprintf(err, errlen, "%s", e.msg);
    return rc;
}

/* The policy's context, on the core's copy of the layer table (c->layers). */
static void public_context(PolicyCore *c, const PolicyContext *in)
{
    BellowsPolicyContext *o = &c->ctx;
    memset(o, 0, sizeof *o);
    memcpy(c->layers, in->layers, sizeof *c->layers * (size_t)in->n_layers);
    c->ictx = *in;
    c->ictx.layers = c->layers;
    o->n_layers = in->n_layers;
    o->layers = c->layers;
    o->workers = in->workers;
    o->epochs = in->epochs;
    o->batch = in->batch;
    o->steps_per_epoch = in->steps_per_epoch;
    o->lr0 = in->lr0;
    o->n_decays = in->n_decays;
    memcpy(o->decay_epochs, in->decay_epochs, sizeof o->decay_epochs);
    memcpy(o->compressor, in->compressor, sizeof o->compressor);
    o->compressor_level = in->compressor_level;
    o->check_level = core_check_level;
    o->core = c;
    o->bandwidth_Bps = in->bandwidth_Bps;
    o->latency_s = in->latency_s;
    o->gpus_per_node = in->gpus_per_node;
    o->nodes = in->nodes;
    memcpy(o->compressor_spec, in->compressor_spec, sizeof o->compressor_spec);
    o->overlap = in->overlap;
    o->lr_known = in->lr_known;
    o->lr_peak_scale = in->lr_peak_scale;
    o->warmup_epochs = in->warmup_epochs;
    o->warmup_shape = in->warmup_shape;
    o->decay_factor = in->decay_factor;
}

static int unknown_policy(const char *flag, const char *name, BwError *err)
{
    char known[256] = "";
    size_t used = 0;
    for (const PolicyOps *const *r = policy_table; *r && used < sizeof known; r++)
        used += (size_t)snprintf(known + used, sizeof known - used, "%s%s",
                                 r == policy_table ? "" : ", ", (*r)->name);
    return bw_fail(err, BW_EUSAGE, "%s '%s': unknown policy (known: %s)", flag, name, known);
}

/* 1 if a spec's path names a Python policy: it ends in ".py". */
static int is_python(const char *path)
{
    size_t n = strlen(path);
    return n > 3 && strcmp(path + n - 3, ".py") == 0;
}

/* Finds the ops of a parsed spec: a built-in by name, a plugin loaded from its path, or a
 * Python file's. */
static int find_ops(const Spec *s, const char *flag, PolicyCore *c, BwError *err)
{
    if (s->path[0]) { /* its constructor, or the Python file's top level, runs here */
        plugguard_enter("policy", flag, s->path, "loading");
        int rc = is_python(s->path) ? policy_python_open(s->path, flag, &c->py, &c->ops, err)
                                    : policy_plugin_open(s->path, flag, &c->dl, &c->ops, err);
        plugguard_leave();
        return rc;
    }
    const PolicyOps *ops = policy_find(s->name);
    if (!ops) return unknown_policy(flag, s->name, err);
    assert(policy_ops_check(ops, "built-in policy", NULL) == BW_OK);
    c->ops = *ops;
    return BW_OK;
}

static int resolve_values(const Spec *s, const char *label, const PolicyOps *ops,
                          BellowsPolicyValue *vals, BwError *err)
{
    SpecOpt sopts[BELLOWS_POLICY_MAX_OPTS];
    SpecVal svals[BELLOWS_POLICY_MAX_OPTS];
    policy_spec_opts(ops->opts, ops->n_opts, sopts);
    int rc = spec_resolve_as(s, label, sopts, ops->n_opts, svals, err);
    if (rc) return rc;
    for (int i = 0; i < ops->n_opts; i++)
        vals[i] = (BellowsPolicyValue){svals[i].set, svals[i].num, svals[i].choice};
    return BW_OK;
}

/* Whether c is a plug-in (a .so or a Python file), whose calls plugguard records. */
static int is_plugin(const PolicyCore *c)
{
    return c->dl || c->py;
}

static void guard_enter(const PolicyCore *c, const char *phase)
{
    if (is_plugin(c)) plugguard_enter("policy", c->flag, c->spec, phase);
}

/* What the core allocated for a policy (its state, layer table, plugin handle or Python
 * file), and itself. */
static void core_free(PolicyCore *c)
{
    free(c->pub.state);
    free(c->layers);
    guard_enter(c, "unloading");
    policy_plugin_close(c->dl);
    policy_python_close(c->py);
    plugguard_leave();
    free(c);
}

/* The outer step's settings from a plugin's BellowsPolicyOuter or a built-in's PolicyOuterOpt
 * (the same fields). */
#define OUTER_OF(b)                                                                                \
    ((PolicyOuter){.lr = (b).lr,                                                                   \
                   .momentum = (b).momentum,                                                       \
                   .alpha = (b).alpha,                                                             \
                   .h = (b).h,                                                                     \
                   .fragments = (b).fragments,                                                     \
                   .tau = (b).tau,                                                                 \
                   .bits = (b).bits,                                                               \
                   .eager = (b).eager})

/* A plugin's outer step (BellowsPolicyOps.outer, version 6), or a Python file's (its outer()
 * method, through python/policy_python.c), asked once and checked against the ranges
 * bellows_policy.h gives, into c->outer. */
static int plugin_outer(PolicyCore *c, const char *label, BwError *err)
{
    BellowsPolicyOuter b = {0};
    if (!is_plugin(c) || !c->ops.outer) return BW_OK;
    guard_enter(c, "outer");
    const int on = c->ops.outer(&c->pub, &b);
    plugguard_leave();
    int rc = c->py ? policy_python_failed(c->py, label, err) : BW_OK;
    if (rc || !on) return rc;
    const char *bad = c->ops.mode != BELLOWS_POLICY_PERIODIC ? "needs mode periodic"
                      : !(b.lr > 0 && b.lr < 1e9)            ? "lr: expected > 0"
                      : !(b.momentum >= 0 && b.momentum < 1) ? "momentum: expected 0 to < 1"
                      : !(b.alpha >= 0 && b.alpha <= 1)      ? "alpha: expected 0 to 1"
                      : b.h < 1                              ? "h: expected 1 or more"
                      : b.fragments < 1 || b.fragments > b.h ? "fragments: expected 1 to h"
                      : b.fragments > c->ctx.n_layers        ? "fragments: more than the layers"
                      : b.tau < 0 || b.tau >= b.h            ? "tau: expected 0 to h - 1"
                      : !(b.bits >= 1 && b.bits <= 16) && b.bits != 32 ? "bits: 1 to 16 or 32"
                      : b.eager != 0 && b.eager != 1                   ? "eager: 0 or 1"
                      : b.eager && (b.fragments > 1 || b.bits < 32 || b.tau > 0)
                          ? "eager: only with fragments 1, bits 32, tau 0"
                          : NULL;
    if (bad) return bw_fail(err, BW_EUSAGE, "%s: its outer step: %s", label, bad);
    c->has_outer = 1;
    c->outer = OUTER_OF(b);
    return BW_OK;
}

int policy_create(const char *spec, const char *flag, const PolicyContext *ctx, Policy **out,
                  BwError *err)
{
    assert(spec && flag && ctx && out);
    *out = NULL;
    policy_assert_context(ctx);
    Spec s;
    int rc = spec_parse_plugin(spec, flag, &s, err);
    if (rc) return rc;
    const char *name = s.path[0] ? s.path : s.name;
    char label[sizeof s.flag + sizeof s.path + 2];
    snprintf(label, sizeof label, "%s %s", flag, name);
    /* raw alloc: also libbellows_policy.so's, in its caller's process: no exit */
    PolicyCore *c = calloc(1, sizeof *c);
    if (c && !(c->layers = malloc(sizeof *c->layers * (size_t)ctx->n_layers))) {
        free(c);
        c = NULL;
    }
    if (!c) return bw_fail(err, BW_ERUNTIME, "%s: out of memory", label);
    BellowsPolicyValue vals[BELLOWS_POLICY_MAX_OPTS];
    if ((rc = find_ops(&s, flag, c, err)) || (rc = resolve_values(&s, label, &c->ops, vals, err))) {
        core_free(c);
        return rc;
    }
    public_context(c, ctx);
    c->pub.ops = &c->ops;
    c->pub.ctx = &c->ctx;
    spec_format(&s, c->spec, sizeof c->spec);
    snprintf(c->flag, sizeof c->flag, "%s", flag);
    /* raw alloc: also libbellows_policy.so's, in its caller's process: no exit */
    if (c->ops.state_size > 0 && !(c->pub.state = calloc(1, c->ops.state_size))) {
        core_free(c);
        return bw_fail(err, BW_ERUNTIME, "%s: out of memory", label);
    }
    if (c->py) policy_python_bind(c->py, c->pub.state);
    /* init names the option at fault; the flag and the policy's name go in front here */
    char inner[sizeof err->msg] = "";
    outfile_interrupt_hard(!c->py); /* a Python policy: outfile_on_interrupt's hook stops it */
    guard_enter(c, "init");
    rc = c->ops.init ? c->ops.init(&c->pub, vals, inner, sizeof inner) : BELLOWS_POLICY_OK;
    plugguard_leave();
    outfile_interrupt_hard(0);
    if (rc) {
        core_free(c); /* a failing init frees whatever it allocated itself */
        if (rc != BW_ERUNTIME) rc = BW_EUSAGE;
        inner[sizeof inner - 1] = '\0';
        return bw_fail(err, rc, "%s: %s", label, inner[0] ? inner : "init failed");
    }
    if ((rc = plugin_outer(c, label, err))) {
        core_free(c);
        return rc;
    }
    *out = &c->pub;
    return BW_OK;
}

/* The observation as the policy sees it: the `have` bits, NaN where a part is absent. Until
 * the caller sets `have` (a test, an older caller), the core infers what it can from the
 * pointers. */
static void normalise_obs(const PolicyCore *c, const PolicyObs *in, PolicyObs *o)
{
    *o = *in;
    if (!o->have) {
        if (c->ops.needs_grad_norms && o->grad_norm_mean) o->have |= BELLOWS_HAS_GRAD_NORMS;
        if (c->ops.needs_grad_norms && o->grad_norm_rank0) o->have |= BELLOWS_HAS_RANK0_NORMS;
        if (o->epoch_norm_mean && o->epoch_norm_rank0) o->have |= BELLOWS_HAS_EPOCH_NORMS;
        if (o->averaged) o->have |= BELLOWS_HAS_VARIANCE;
    }
    if (!(o->have & BELLOWS_HAS_STEP_TIMES)) o->compute_s = o->compress_s = o->comm_s = NAN;
    if (!(o->have & BELLOWS_HAS_STEP_TIMES)) o->wait_s = NAN;
    if (!(o->have & BELLOWS_HAS_EVAL)) {
        o->eval_accuracy = o->eval_loss = o->eval_time_s = NAN;
        o->eval_step = -1;
    }
}

/* A bad decision stops the run in every build (NDEBUG too: it guards the results), with a
 * message naming the policy: a plugin's or a Python file's is a runtime error (exit 1), a
 * built-in's a bug of bellows (abort). */
static int check_decision(const PolicyCore *c, const PolicyObs *obs, const PolicyDecision *d,
                          const double *level, BwError *err)
{
    const BellowsPolicyContext *ctx = &c->ctx;
    const char *bad = NULL;
    int layer = -1;
    if (d->level != level) bad = "the level pointer changed (write level[l], not level)";
    if (!bad && d->batch < 1) bad = "batch < 1";
    for (int l = 0; !bad && l < ctx->n_layers; l++) {
        layer = l;
        if (!(isfinite(d->level[l]) && d->level[l] >= 0)) bad = "a level not finite and >= 0";
        if (ctx->layers[l].ndim != 2 && d->level[l] != 0) bad = "a vector with a level not 0";
        if (c->ops.mode == POLICY_PERIODIC && d->level[l] != 0) bad = "a level in periodic mode";
    }
    if (!bad && c->ops.mode == POLICY_PERIODIC && !(d->period >= 1 && (d->average & ~1) == 0))
        bad = "period < 1 or average not 0/1";
    if (!bad && c->ops.mode == POLICY_GRADIENT && (d->average != 0 || d->period != 0))
        bad = "average or period set in gradient mode";
    if (!bad) return BW_OK;
    if (c->dl || c->py)
        return bw_fail(err, BW_ERUNTIME, "--policy %s: invalid decision at step %ld: %s (layer %d)",
                       c->spec, obs->step, bad, layer);
    fprintf(stderr,
            "bellows: --policy %s: invalid decision at step %ld: %s (layer %d) (a built-in "
            "policy: a bug of bellows, please report it)\n",
            c->spec, obs->step, bad, layer);
    abort();
}

int policy_step(Policy *p, const PolicyObs *obs, PolicyDecision *d, BwError *err)
{
    assert(p && obs && d);
    assert(obs->step >= 0 && obs->epoch >= 0);
    assert(isfinite(obs->lr) && obs->lr >= 0);
    const PolicyCore *c = core_of(p);
    PolicyObs o;
    normalise_obs(c, obs, &o);
    double *level = d->level;
    assert(level && "the caller points d->level at n_layers doubles");
    memset(d, 0, sizeof *d);
    memset(level, 0, sizeof *level * (size_t)c->ctx.n_layers);
    d->level = level;
    d->batch = c->ctx.batch;
    d->period = c->ops.mode == POLICY_PERIODIC ? 1 : 0;
    /* a C plugin that never returns: Ctrl-C kills at once (a Python policy is stopped by
     * outfile_on_interrupt's hook, which raises KeyboardInterrupt in it) */
    outfile_interrupt_hard(!c->py);
    if (is_plugin(c)) {
        char phase[48];
        snprintf(phase, sizeof phase, "decision at step %ld", o.step);
        plugguard_enter("policy", c->flag, c->spec, phase);
    }
    if (c->ops.observe) c->ops.observe(p, &o);
    c->ops.decide(p, &o, d);
    plugguard_leave();
    outfile_interrupt_hard(0);
    int rc = c->py ? policy_python_status(c->py, c->spec, o.step, err) : BW_OK;
    return rc ? rc : check_decision(c, &o, d, level, err);
}

int policy_sees_price(const char *spec, const char *flag, int *sees, BwError *err)
{
    Spec s;
    int rc = spec_parse_plugin(spec, flag, &s, err);
    if (rc) return rc;
    PolicyCore c;
    memset(&c, 0, sizeof c);
    if ((rc = find_ops(&s, flag, &c, err))) return rc;
    *sees = !c.ops.price_blind;
    policy_python_close(c.py);
    policy_plugin_close(c.dl);
    return BW_OK;
}

void policy_describe(const Policy *p, char *buf, size_t n)
{
    assert(p && buf && n > 0);
    buf[0] = '\0';
    if (p->ops->describe) {
        guard_enter(core_of(p), "describe");
        p->ops->describe(p, buf, n);
        plugguard_leave();
    } else
        snprintf(buf, n, "%s", p->ops->name);
}

int policy_outer(const Policy *p, PolicyOuter *o)
{
    const PolicyCore *c = core_of(p);
    PolicyOuterOpt b;
    if (c->has_outer) { /* a plugin's or Python file's (plugin_outer) */
        *o = c->outer;
        return 1;
    }
    if (c->dl || c->py || !policy_builtin_outer(&c->pub, &b)) return 0;
    *o = OUTER_OF(b);
    return 1;
}

const char *policy_spec(const Policy *p)
{
    return core_of(p)->spec;
}

void policy_free(Policy *p)
{
    if (!p) return;
    PolicyCore *c = core_of(p);
    guard_enter(c, "free");
    if (c->ops.free_impl) c->ops.free_impl(p);
    plugguard_leave();
    core_free(c);
}

static void print_ops(FILE *out, const PolicyOps *o)
{
    fprintf(out, "\n%-10s %s%s\n", o->name, o->reconstruction ? "[reconstruction] " : "", o->help);
    fprintf(out, "    mode: %s\n",
            o->mode == POLICY_GRADIENT
                ? "gradient (reduced every step at the decided levels)"
                : "periodic (local steps; parameters averaged every period)");
    fprintf(out, "    source: %s\n", o->source ? o->source : "(not given)");
    fprintf(out, "    price: %s\n",
            o->price_blind ? "blind (the same decisions on any network: a sweep trains it once "
                             "and prices the other scenarios)"
                           : "may see it (a sweep trains it in every scenario)");
    SpecOpt sopts[BELLOWS_POLICY_MAX_OPTS];
    policy_spec_opts(o->opts, o->n_opts, sopts);
    if (o->n_opts > 0)
        spec_print_opts(out, sopts, o->n_opts);
    else
        fprintf(out, "    (no options)\n");
}

void policy_print_list(FILE *out)
{
    fprintf(out, "policies (--policy NAME or NAME:key=value,...):\n");
    for (const PolicyOps *const *r = policy_table; *r; r++) print_ops(out, *r);
}

int policy_print_plugin(FILE *out, const char *path, const char *flag, BwError *err)
{
    Spec s;
    int rc = spec_parse_plugin(path, flag, &s, err);
    if (rc) return rc;
    if (s.n > 0 || !s.path[0])
        return bw_fail(err, BW_EUSAGE, "%s '%s': expected the path of a plugin (a .so or .py file)",
                       flag, path);
    void *dl = NULL;
    PyPolicyFile *py = NULL;
    PolicyOps ops;
    rc = is_python(s.path) ? policy_python_open(s.path, flag, &py, &ops, err)
                           : policy_plugin_open(s.path, flag, &dl, &ops, err);
    if (rc) return rc;
    if (out) {
        print_ops(out, &ops);
        fprintf(out, "    %s: %s (--policy %s[:key=value,...], interface version %d)\n",
                py ? "python" : "plugin", s.path, s.path, ops.iVersion);
    }
    policy_plugin_close(dl);
    policy_python_close(py);
    return BW_OK;
}

int policy_print_python(FILE *out, BwError *err)
{
    return policy_python_print_doc(out, err);
}
