/* schedule.c: the schedule registry and the wrappers every caller goes through (SQLite VFS style,
 * as policies/policy.c: the core parses and checks the spec, allocates the schedule's zeroed
 * state, supplies defaults for the optional operations, pre-fills every decision with fifo's and
 * checks it after). Built-ins and plugins (schedule_load.c) go through the same code, with the
 * same public header.
 *
 * Adding a built-in schedule NAME takes one new file and one line:
 *   1. schedules/NAME.c, opening with what the rule is and where it comes from, defining
 *      `const BellowsScheduleOps schedule_NAME_ops = {...}`;
 *   2. the line SCHEDULE(NAME) in schedules/schedules.def, where it should be listed.
 * tests/test_schedules.c runs every registered schedule through its contract. */
#include "schedule.h"
#include "xalloc.h"
#include "plugguard.h"
#include "schedule_impl.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SCHEDULE(name) extern const ScheduleOps schedule_##name##_ops;
#include "schedules.def"
#undef SCHEDULE

static const ScheduleOps *const schedule_table[] = {
#define SCHEDULE(name) &schedule_##name##_ops,
#include "schedules.def"
#undef SCHEDULE
    NULL,
};

/* One schedule as the core holds it; Schedule is its first member. */
typedef struct {
    BellowsSchedule pub;
    ScheduleOps ops;     /* a copy, zero-extended to this core's version */
    ScheduleContext ctx; /* what the schedule sees, on the copies below */
    BellowsScheduleTensor *tensors;
    BellowsScheduleLayer *layers;
    char spec[SPEC_MAX_TEXT * 2]; /* every option spelled out */
    void *dl;                     /* a plugin's handle; NULL: built in */
    char flag[32];                /* the flag it came from, for plugguard */
} ScheduleCore;

static ScheduleCore *core_of(const Schedule *s)
{
    return (ScheduleCore *)(void *)s; /* pub is the first member */
}

const ScheduleOps *const *schedule_registry(void)
{
    return schedule_table;
}

const ScheduleOps *schedule_find(const char *name)
{
    for (const ScheduleOps *const *r = schedule_table; *r; r++)
        if (strcmp((*r)->name, name) == 0) return *r;
    return NULL;
}

int schedule_spec_is_fifo(const char *spec)
{
    Spec s;
    BwError ignore;
    return spec && spec_parse_plugin(spec, "--schedule", &s, &ignore) == BW_OK && !s.path[0] &&
           strcmp(s.name, "fifo") == 0 && s.n == 0;
}

/* The driver builds the context; a bad one is a programming error, not a user's. */
static void assert_context(const ScheduleContext *c)
{
    assert(c->n_tensors >= 1 && c->tensors && c->n_layers >= 1 && c->layers);
    for (int t = 0; t < c->n_tensors; t++)
        assert(c->tensors[t].layer >= 0 && c->tensors[t].layer < c->n_layers &&
               c->tensors[t].numel >= 1);
    assert(c->model_bytes > 0 && c->workers >= 1 && c->bucket_bytes >= 0);
    (void)c; /* unused when NDEBUG */
}

static int unknown_schedule(const char *flag, const char *name, BwError *err)
{
    char known[256] = "";
    size_t used = 0;
    for (const ScheduleOps *const *r = schedule_table; *r && used < sizeof known; r++)
        used += (size_t)snprintf(known + used, sizeof known - used, "%s%s",
                                 r == schedule_table ? "" : ", ", (*r)->name);
    return bw_fail(err, BW_EUSAGE, "%s '%s': unknown schedule (known: %s)", flag, name, known);
}

/* The ops of a parsed spec: a built-in by name, or a plugin loaded from its path. */
static int find_ops(const Spec *s, const char *flag, ScheduleCore *c, BwError *err)
{
    size_t n = strlen(s->path);
    if (n > 3 && strcmp(s->path + n - 3, ".py") == 0)
        return bw_fail(err, BW_EUSAGE,
                       "%s %s: schedules are C plugins (.so) or built-ins; Python is for "
                       "policies only",
                       flag, s->path);
    if (s->path[0]) { /* its constructor runs here */
        plugguard_enter("schedule", flag, s->path, "loading");
        int rc = schedule_plugin_open(s->path, flag, &c->dl, &c->ops, err);
        plugguard_leave();
        return rc;
    }
    const ScheduleOps *ops = schedule_find(s->name);
    if (!ops) return unknown_schedule(flag, s->name, err);
    assert(schedule_ops_check(ops, "built-in schedule", NULL) == BW_OK);
    c->ops = *ops;
    return BW_OK;
}

/* The option values, and the spec with all of them spelled out into c->spec. */
static int resolve_values(const Spec *s, const char *label, ScheduleCore *c,
                          BellowsScheduleValue *vals, BwError *err)
{
    SpecOpt sopts[BELLOWS_SCHEDULE_MAX_OPTS];
    SpecVal svals[BELLOWS_SCHEDULE_MAX_OPTS];
    const ScheduleOps *ops = &c->ops;
    schedule_spec_opts(ops->opts, ops->n_opts, sopts);
    int rc = spec_resolve_as(s, label, sopts, ops->n_opts, svals, err);
    if (rc) return rc;
    size_t used = (size_t)snprintf(c->spec, sizeof c->spec, "%s", s->path[0] ? s->path : s->name);
    for (int i = 0; i < ops->n_opts; i++) {
        vals[i] = (BellowsScheduleValue){svals[i].set, svals[i].num, svals[i].choice};
        if (!svals[i].set || used >= sizeof c->spec) continue;
        const char *sep = used == strlen(s->path[0] ? s->path : s->name) ? ":" : ",";
        if (sopts[i].type == SPEC_CHOICE) {
            const char *w = sopts[i].choices;
            for (int k = 0; k < svals[i].choice && strchr(w, '|'); k++) w = strchr(w, '|') + 1;
            const char *end = strchr(w, '|');
            int len = end ? (int)(end - w) : (int)strlen(w);
            used += (size_t)snprintf(c->spec + used, sizeof c->spec - used, "%s%s=%.*s", sep,
                                     sopts[i].key, len, w);
        } else {
            used += (size_t)snprintf(c->spec + used, sizeof c->spec - used, "%s%s=%.15g", sep,
                                     sopts[i].key, svals[i].num);
        }
    }
    return BW_OK;
}

/* A plug-in's calls are recorded by plugguard, naming it. */
static void guard_enter(const ScheduleCore *c, const char *phase)
{
    if (c->dl) plugguard_enter("schedule", c->flag, c->spec, phase);
}

static void core_free(ScheduleCore *c)
{
    free(c->pub.state);
    free(c->tensors);
    free(c->layers);
    guard_enter(c, "unloading");
    schedule_plugin_close(c->dl);
    plugguard_leave();
    free(c);
}

/* The schedule's context, on the core's copies of the tables. */
static int copy_context(ScheduleCore *c, const ScheduleContext *in)
{
    c->tensors = bw_xmalloc(sizeof *c->tensors * (size_t)in->n_tensors, "schedule.c: c->tensors");
    c->layers = bw_xmalloc(sizeof *c->layers * (size_t)in->n_layers, "schedule.c: c->layers");
    if (!c->tensors || !c->layers) return 0;
    memcpy(c->tensors, in->tensors, sizeof *c->tensors * (size_t)in->n_tensors);
    memcpy(c->layers, in->layers, sizeof *c->layers * (size_t)in->n_layers);
    c->ctx = *in;
    c->ctx.tensors = c->tensors;
    c->ctx.layers = c->layers;
    return 1;
}

int schedule_create(const char *spec, const char *flag, const ScheduleContext *ctx, Schedule **out,
                    BwError *err)
{
    assert(spec && flag && ctx && out);
    *out = NULL;
    assert_context(ctx);
    Spec s;
    int rc = spec_parse_plugin(spec, flag, &s, err);
    if (rc) return rc;
    char label[sizeof s.flag + sizeof s.path + 2];
    snprintf(label, sizeof label, "%s %s", flag, s.path[0] ? s.path : s.name);
    ScheduleCore *c = bw_xcalloc(1, sizeof *c, "schedule.c: c");
    if (!c) return bw_fail(err, BW_ERUNTIME, "%s: out of memory", label);
    snprintf(c->flag, sizeof c->flag, "%s", flag);
    snprintf(c->spec, sizeof c->spec, "%s", s.path[0] ? s.path : s.name); /* until resolved */
    BellowsScheduleValue vals[BELLOWS_SCHEDULE_MAX_OPTS];
    if ((rc = find_ops(&s, flag, c, err)) || (rc = resolve_values(&s, label, c, vals, err))) {
        core_free(c);
        return rc;
    }
    if (!copy_context(c, ctx) ||
        (c->ops.state_size > 0 &&
         !(c->pub.state = bw_xcalloc(1, c->ops.state_size, "schedule.c: c->pub.state")))) {
        core_free(c);
        return bw_fail(err, BW_ERUNTIME, "%s: out of memory", label);
    }
    c->pub.ops = &c->ops;
    c->pub.ctx = &c->ctx;
    char inner[sizeof err->msg] = "";
    guard_enter(c, "init");
    rc = c->ops.init ? c->ops.init(&c->pub, vals, inner, sizeof inner) : BELLOWS_SCHEDULE_OK;
    plugguard_leave();
    if (rc) {
        core_free(c); /* a failing init frees whatever it allocated itself */
        inner[sizeof inner - 1] = '\0';
        return bw_fail(err, rc == BELLOWS_SCHEDULE_ERUNTIME ? BW_ERUNTIME : BW_EUSAGE, "%s: %s",
                       label, inner[0] ? inner : "init failed");
    }
    *out = &c->pub;
    return BW_OK;
}

/* fifo's decision: the order the backward produces the gradients, nothing held back (no credit).
 * On all-reduce, DDP's buckets, whole messages. On parameter servers, what BytePS does
 * (bytedance/byteps: its framework plugins call push_pull on each tensor as its gradient is
 * ready, and the core cuts it into BYTEPS_PARTITION_BYTES, 4,096,000-byte partitions, each
 * pushed to its server and pulled as soon as that server has summed it; its push and pull
 * queues hold no credit unless BYTEPS_SCHEDULING_CREDIT is set, common/scheduled_queue.cc's
 * "32GB, basically disabling credit control") and MXNet's KVStore
 * (kvstore_dist.h: every ready key's push posted at once, a big array split across the servers):
 * a unit per tensor, 4,096,000-byte partitions, every one in flight once its tensor is ready. */
static void prefill(const ScheduleContext *ctx, ScheduleDecision *d)
{
    double *priority = d->priority;
    memset(d, 0, sizeof *d);
    d->priority = priority;
    for (int t = 0; t < ctx->n_tensors; t++) priority[t] = ctx->n_tensors - 1 - t;
    if (ctx->servers > 0) {
        d->partition_bytes = schedule_default_partition(ctx, SCHEDULE_PS_PARTITION_BYTES);
        return;
    }
    d->bucket_bytes = ctx->bucket_bytes;
    d->first_bucket_bytes = ctx->first_bucket_bytes;
}

/* A decision the engine cannot run stops the run in every build, naming the schedule: a
 * plugin's is a runtime error (exit 1), a built-in's a bug of bellows (abort). */
static int check_decision(const ScheduleCore *c, const ScheduleObs *obs, const ScheduleDecision *d,
                          const double *priority, BwError *err)
{
    const char *bad = NULL;
    int tensor = -1;
    if (d->priority != priority) bad = "the priority pointer changed (write priority[t])";
    for (int t = 0; !bad && t < c->ctx.n_tensors; t++)
        if (!isfinite(d->priority[t])) bad = "a priority that is not finite", tensor = t;
    if (!bad && !(isfinite(d->bucket_bytes) && d->bucket_bytes >= 0 &&
                  isfinite(d->first_bucket_bytes) && d->first_bucket_bytes >= 0))
        bad = "a bucket size not finite and >= 0";
    if (!bad &&
        !(d->partition_bytes == 0 || (isfinite(d->partition_bytes) &&
                                      d->partition_bytes >= BELLOWS_SCHEDULE_MIN_PARTITION_BYTES)))
        bad = "a partition size neither 0 nor at least 1024 bytes";
    if (!bad && !(isfinite(d->credit_bytes) && d->credit_bytes >= 0 && d->credit_partitions >= 0))
        bad = "a credit not finite and >= 0";
    if (!bad) return BW_OK;
    if (c->dl)
        return bw_fail(err, BW_ERUNTIME,
                       "--schedule %s: invalid decision at step %ld: %s (tensor %d)", c->spec,
                       obs->step, bad, tensor);
    fprintf(stderr,
            "bellows: --schedule %s: invalid decision at step %ld: %s (tensor %d) (a built-in "
            "schedule: a bug of bellows, please report it)\n",
            c->spec, obs->step, bad, tensor);
    abort();
}

int schedule_step(Schedule *s, const ScheduleObs *obs, ScheduleDecision *d, BwError *err)
{
    assert(s && obs && d && d->priority && obs->tensor_bytes && obs->step >= 0);
    const ScheduleCore *c = core_of(s);
    double *priority = d->priority;
    prefill(&c->ctx, d);
    if (c->dl) {
        char phase[48];
        snprintf(phase, sizeof phase, "decision at step %ld", obs->step);
        plugguard_enter("schedule", c->flag, c->spec, phase);
    }
    c->ops.decide(s, obs, d);
    plugguard_leave();
    return check_decision(c, obs, d, priority, err);
}

void schedule_describe(const Schedule *s, char *buf, size_t n)
{
    assert(s && buf && n > 0);
    buf[0] = '\0';
    if (s->ops->describe) {
        guard_enter(core_of(s), "describe");
        s->ops->describe(s, buf, n);
        plugguard_leave();
    } else
        snprintf(buf, n, "%s", s->ops->name);
}

const char *schedule_spec(const Schedule *s)
{
    return core_of(s)->spec;
}

void schedule_free(Schedule *s)
{
    if (!s) return;
    ScheduleCore *c = core_of(s);
    guard_enter(c, "free");
    if (c->ops.free_impl) c->ops.free_impl(s);
    plugguard_leave();
    core_free(c);
}

static void print_ops(FILE *out, const ScheduleOps *o)
{
    fprintf(out, "\n%-14s %s\n", o->name, o->help);
    fprintf(out, "    source: %s\n", o->source ? o->source : "(not given)");
    SpecOpt sopts[BELLOWS_SCHEDULE_MAX_OPTS];
    schedule_spec_opts(o->opts, o->n_opts, sopts);
    if (o->n_opts > 0)
        spec_print_opts(out, sopts, o->n_opts);
    else
        fprintf(out, "    (no options)\n");
}

void schedule_print_list(FILE *out)
{
    fprintf(out, "schedules (--schedule NAME or NAME:key=value,...; with a --workload, "
                 "--overlap ddp or layer):\n");
    for (const ScheduleOps *const *r = schedule_table; *r; r++) print_ops(out, *r);
}

int schedule_print_plugin(FILE *out, const char *path, const char *flag, BwError *err)
{
    Spec s;
    int rc = spec_parse_plugin(path, flag, &s, err);
    if (rc) return rc;
    if (s.n > 0 || !s.path[0])
        return bw_fail(err, BW_EUSAGE, "%s '%s': expected the path of a plugin (a .so file)", flag,
                       path);
    void *dl = NULL;
    ScheduleOps ops;
    if ((rc = schedule_plugin_open(s.path, flag, &dl, &ops, err))) return rc;
    if (out) {
        print_ops(out, &ops);
        fprintf(out, "    plugin: %s (--schedule %s[:key=value,...], interface version %d)\n",
                s.path, s.path, ops.iVersion);
    }
    schedule_plugin_close(dl);
    return BW_OK;
}
