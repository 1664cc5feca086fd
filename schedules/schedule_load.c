/* schedule_load.c: schedules loaded at run time from a shared object (`--schedule ./my.so:k=v`),
 * as policies/policy_load.c loads policies: the plugin defines bellows_schedule_entry
 * (bellows_schedule.h), which returns its ops; the core opens the file with dlopen(RTLD_NOW |
 * RTLD_LOCAL), refuses an interface version it does not know, copies the ops zero-extended to
 * its own version and checks the table before anything runs. Every failure is a usage error
 * naming the file and what is wrong. Also the consistency check of any ops table, which the
 * contract test runs on the built-ins too. */
#include "schedule.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "plugin.h"

void schedule_spec_opts(const BellowsScheduleOpt *opts, int n, SpecOpt *out)
{
    for (int i = 0; i < n && i < BELLOWS_SCHEDULE_MAX_OPTS; i++) {
        const BellowsScheduleOpt *o = &opts[i];
        out[i] = (SpecOpt){o->key,
                           o->type == BELLOWS_SCHEDULE_OPT_INT      ? SPEC_INT
                           : o->type == BELLOWS_SCHEDULE_OPT_CHOICE ? SPEC_CHOICE
                                                                    : SPEC_DOUBLE,
                           o->def,
                           o->lo,
                           o->hi,
                           o->choices,
                           o->help};
    }
}

static int word_ok(const char *s)
{
    if (!s || !*s || strlen(s) >= SPEC_MAX_NAME) return 0;
    for (const char *c = s; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '_' || *c == '-'))
            return 0;
    return 1;
}

static int opt_check(const BellowsScheduleOpt *opts, int i, const char *what, BwError *err)
{
    const BellowsScheduleOpt *o = &opts[i];
    if (!word_ok(o->key))
        return bw_fail(err, BW_EUSAGE, "%s: option %d: key is not a name of [a-z0-9_-] (< 32)",
                       what, i);
    for (int j = 0; j < i; j++)
        if (strcmp(opts[j].key, o->key) == 0)
            return bw_fail(err, BW_EUSAGE, "%s: option '%s' is declared twice", what, o->key);
    if (o->type < BELLOWS_SCHEDULE_OPT_DOUBLE || o->type > BELLOWS_SCHEDULE_OPT_CHOICE)
        return bw_fail(err, BW_EUSAGE, "%s: option '%s': type %d is not DOUBLE, INT or CHOICE",
                       what, o->key, o->type);
    if (!o->help) return bw_fail(err, BW_EUSAGE, "%s: option '%s' has no help", what, o->key);
    if (o->type == BELLOWS_SCHEDULE_OPT_CHOICE &&
        (!o->choices || !*o->choices || *o->choices == '|' || strstr(o->choices, "||") ||
         o->choices[strlen(o->choices) - 1] == '|'))
        return bw_fail(err, BW_EUSAGE, "%s: option '%s': choices must be \"a|b|...\"", what,
                       o->key);
    if (o->type != BELLOWS_SCHEDULE_OPT_CHOICE &&
        !(isfinite(o->lo) && isfinite(o->hi) && o->lo <= o->hi))
        return bw_fail(err, BW_EUSAGE, "%s: option '%s': range [%g, %g] is empty or not finite",
                       what, o->key, o->lo, o->hi);
    /* the default must be a value the option accepts */
    SpecOpt so;
    SpecVal sv;
    Spec s;
    memset(&s, 0, sizeof s);
    snprintf(s.flag, sizeof s.flag, "%s", "default");
    snprintf(s.name, sizeof s.name, "%s", o->key);
    schedule_spec_opts(o, 1, &so);
    BwError inner = {{0}};
    if (o->def && spec_resolve(&s, &so, 1, &sv, &inner))
        return bw_fail(err, BW_EUSAGE, "%s: option '%s': its default '%s' is not valid (%s)", what,
                       o->key, o->def, inner.msg);
    return BW_OK;
}

int schedule_ops_check(const ScheduleOps *ops, const char *what, BwError *err)
{
    if (ops->iVersion < BELLOWS_SCHEDULE_OLDEST_VERSION || ops->iVersion > BELLOWS_SCHEDULE_VERSION)
        return bw_fail(err, BW_EUSAGE,
                       "%s: interface version %d, but this bellows knows versions %d to %d%s", what,
                       ops->iVersion, BELLOWS_SCHEDULE_OLDEST_VERSION, BELLOWS_SCHEDULE_VERSION,
                       ops->iVersion > BELLOWS_SCHEDULE_VERSION ? " (update bellows)" : "");
    if (!word_ok(ops->name))
        return bw_fail(err, BW_EUSAGE, "%s: name is not a word of [a-z0-9_-] (< 32 bytes)", what);
    if (!ops->help || !*ops->help) return bw_fail(err, BW_EUSAGE, "%s: help is empty", what);
    if (!ops->decide) return bw_fail(err, BW_EUSAGE, "%s: decide is NULL", what);
    if (ops->n_opts < 0 || ops->n_opts > BELLOWS_SCHEDULE_MAX_OPTS || (ops->n_opts && !ops->opts))
        return bw_fail(err, BW_EUSAGE, "%s: n_opts %d (at most %d, with opts not NULL)", what,
                       ops->n_opts, BELLOWS_SCHEDULE_MAX_OPTS);
    if (ops->state_size > ((size_t)1 << 30))
        return bw_fail(err, BW_EUSAGE, "%s: state_size %zu is more than 1 GiB", what,
                       ops->state_size);
    for (int i = 0; i < ops->n_opts; i++) {
        int rc = opt_check(ops->opts, i, what, err);
        if (rc) return rc;
    }
    return BW_OK;
}

int schedule_plugin_open(const char *path, const char *flag, void **handle, ScheduleOps *ops,
                         BwError *err)
{
    memset(ops, 0, sizeof *ops);
    const void *table;
    int rc =
        plugin_open(path, flag, BELLOWS_SCHEDULE_ENTRY, "bellows_schedule.h", handle, &table, err);
    if (rc) return rc;
    const BellowsScheduleOps *raw = table;
    char what[SPEC_MAX_TEXT + 64];
    snprintf(what, sizeof what, "%s %s", flag, path);
    if (raw->iVersion < BELLOWS_SCHEDULE_OLDEST_VERSION || raw->iVersion > BELLOWS_SCHEDULE_VERSION)
        rc = schedule_ops_check(raw, what, err); /* reads iVersion only, says what is wrong */
    if (!rc) {
        memcpy(ops, raw, sizeof *ops); /* version 1 is the only one: its table is whole */
        rc = schedule_ops_check(ops, what, err);
    }
    if (rc) {
        plugin_close(*handle);
        *handle = NULL;
    }
    return rc;
}

void schedule_plugin_close(void *handle)
{
    plugin_close(handle);
}
