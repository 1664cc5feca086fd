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

/* The plug-in's option table, entry by entry (spec_opt_check). */
static int opts_check(const BellowsScheduleOpt *opts, int n, const char *what, BwError *err)
{
    SpecOpt so[BELLOWS_SCHEDULE_MAX_OPTS];
    schedule_spec_opts(opts, n, so);
    for (int i = 0; i < n; i++) {
        int known = opts[i].type >= BELLOWS_SCHEDULE_OPT_DOUBLE &&
                    opts[i].type <= BELLOWS_SCHEDULE_OPT_CHOICE;
        int rc = spec_opt_check(so, i, (int)opts[i].type, known, what, err);
        if (rc) return rc;
    }
    return BW_OK;
}

int schedule_ops_check(const ScheduleOps *ops, const char *what, BwError *err)
{
    if (ops->iVersion < BELLOWS_SCHEDULE_OLDEST_VERSION || ops->iVersion > BELLOWS_SCHEDULE_VERSION)
        return bw_fail(err, BW_EUSAGE,
                       "%s: interface version %d, but this bellows knows versions %d to %d%s", what,
                       ops->iVersion, BELLOWS_SCHEDULE_OLDEST_VERSION, BELLOWS_SCHEDULE_VERSION,
                       ops->iVersion > BELLOWS_SCHEDULE_VERSION ? " (update bellows)" : "");
    if (!spec_name_ok(ops->name))
        return bw_fail(err, BW_EUSAGE, "%s: name is not a word of [a-z0-9_-] (< 32 bytes)", what);
    if (!ops->help || !*ops->help) return bw_fail(err, BW_EUSAGE, "%s: help is empty", what);
    if (!ops->decide) return bw_fail(err, BW_EUSAGE, "%s: decide is NULL", what);
    if (ops->n_opts < 0 || ops->n_opts > BELLOWS_SCHEDULE_MAX_OPTS || (ops->n_opts && !ops->opts))
        return bw_fail(err, BW_EUSAGE, "%s: n_opts %d (at most %d, with opts not NULL)", what,
                       ops->n_opts, BELLOWS_SCHEDULE_MAX_OPTS);
    if (ops->state_size > ((size_t)1 << 30))
        return bw_fail(err, BW_EUSAGE, "%s: state_size %zu is more than 1 GiB", what,
                       ops->state_size);
    return opts_check(ops->opts, ops->n_opts, what, err);
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
