/* policy_load.c: policies loaded at run time from a shared object (`--policy ./my.so:k=v`).
 * The plugin defines bellows_policy_entry (bellows_policy.h), which returns its ops; the core
 * opens the file with dlopen(RTLD_NOW | RTLD_LOCAL), refuses an interface version newer than
 * its own or older than BELLOWS_POLICY_OLDEST_VERSION, copies the ops zero-extended to its own
 * version (an older plugin's table is read only as far as its version has fields) and checks the
 * table before anything runs. Every failure is a usage error naming the file and what is wrong.
 * Also the consistency check of any ops table, which the contract test runs on the built-in
 * policies too. */
#include "policy.h"

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "plugin.h"

void policy_spec_opts(const BellowsPolicyOpt *opts, int n, SpecOpt *out)
{
    for (int i = 0; i < n && i < BELLOWS_POLICY_MAX_OPTS; i++) {
        const BellowsPolicyOpt *o = &opts[i];
        out[i] = (SpecOpt){o->key,
                           o->type == BELLOWS_OPT_INT      ? SPEC_INT
                           : o->type == BELLOWS_OPT_CHOICE ? SPEC_CHOICE
                                                           : SPEC_DOUBLE,
                           o->def,
                           o->lo,
                           o->hi,
                           o->choices,
                           o->help};
    }
}

/* The size of the ops table of interface version v (BELLOWS_POLICY_OLDEST_VERSION ..
 * BELLOWS_POLICY_VERSION). When a version appends fields, the older versions' sizes end where
 * the new fields start: versions 3 and 4 (whose ops are the same) end before version 5's
 * price_blind, version 5 before version 6's outer.
 * (Versions 1 and 2, whose tables ended before `needs`, are refused: their context and decision
 * had the 32-layer arrays.) */
static size_t ops_size(int v)
{
    if (v <= 4) return offsetof(BellowsPolicyOps, price_blind);
    if (v == 5) return offsetof(BellowsPolicyOps, outer);
    return sizeof(BellowsPolicyOps);
}

/* The plug-in's option table, entry by entry (spec_opt_check). */
static int opts_check(const BellowsPolicyOpt *opts, int n, const char *what, BwError *err)
{
    SpecOpt so[BELLOWS_POLICY_MAX_OPTS];
    policy_spec_opts(opts, n, so);
    for (int i = 0; i < n; i++) {
        int known = opts[i].type >= BELLOWS_OPT_DOUBLE && opts[i].type <= BELLOWS_OPT_CHOICE;
        int rc = spec_opt_check(so, i, (int)opts[i].type, known, what, err);
        if (rc) return rc;
    }
    return BW_OK;
}

int policy_ops_check(const PolicyOps *ops, const char *what, BwError *err)
{
    if (ops->iVersion < BELLOWS_POLICY_OLDEST_VERSION || ops->iVersion > BELLOWS_POLICY_VERSION)
        return bw_fail(
            err, BW_EUSAGE, "%s: interface version %d, but this bellows knows versions %d to %d%s",
            what, ops->iVersion, BELLOWS_POLICY_OLDEST_VERSION, BELLOWS_POLICY_VERSION,
            ops->iVersion > BELLOWS_POLICY_VERSION ? " (update bellows)"
            : ops->iVersion >= 1 ? " (version 3 made the layer arrays pointers: rebuild the plugin "
                                   "against this bellows' policies/bellows_policy.h)"
                                 : "");
    if (!spec_name_ok(ops->name))
        return bw_fail(err, BW_EUSAGE, "%s: name is not a word of [a-z0-9_-] (< 32 bytes)", what);
    if (!ops->help || !*ops->help) return bw_fail(err, BW_EUSAGE, "%s: help is empty", what);
    if (ops->mode != BELLOWS_POLICY_GRADIENT && ops->mode != BELLOWS_POLICY_PERIODIC)
        return bw_fail(err, BW_EUSAGE, "%s: mode %d is not GRADIENT (0) or PERIODIC (1)", what,
                       ops->mode);
    if (!ops->decide) return bw_fail(err, BW_EUSAGE, "%s: decide is NULL", what);
    if (ops->n_opts < 0 || ops->n_opts > BELLOWS_POLICY_MAX_OPTS || (ops->n_opts && !ops->opts))
        return bw_fail(err, BW_EUSAGE, "%s: n_opts %d (at most %d, with opts not NULL)", what,
                       ops->n_opts, BELLOWS_POLICY_MAX_OPTS);
    if (ops->state_size > ((size_t)1 << 30))
        return bw_fail(err, BW_EUSAGE, "%s: state_size %zu is more than 1 GiB", what,
                       ops->state_size);
    if ((ops->reconstruction & ~1) || (ops->needs_grad_norms & ~1) || (ops->price_blind & ~1))
        return bw_fail(err, BW_EUSAGE,
                       "%s: reconstruction, needs_grad_norms and price_blind must be 0 or 1", what);
    if (ops->needs & ~(unsigned)(BELLOWS_HAS_EVAL * 2 - 1))
        return bw_fail(err, BW_EUSAGE, "%s: needs 0x%x holds bits that are not BELLOWS_HAS_*", what,
                       ops->needs);
    return opts_check(ops->opts, ops->n_opts, what, err);
}

/* A table that declares version 5 but was compiled against a header with version 6's outer and
 * sets it (Python refuses the same class, bellows_policy.py): its outer step would be dropped,
 * the run plain averaging. Read only when the plug-in's own table is large enough to hold the
 * field (its size in the file's symbol table); a true version-5 table ends before it. */
static int outer_unread(const BellowsPolicyOps *raw, const char *what, BwError *err)
{
    if (raw->iVersion != 5) return BW_OK;
    const size_t need = offsetof(BellowsPolicyOps, outer) + sizeof raw->outer;
    if (plugin_object_room(raw) < need || !raw->outer) return BW_OK;
    return bw_fail(err, BW_EUSAGE,
                   "%s: .outer is set, but iVersion 5 has no outer step (version 6 added it), so "
                   "it would be ignored: set .iVersion = BELLOWS_POLICY_VERSION",
                   what);
}

int policy_plugin_open(const char *path, const char *flag, void **handle, PolicyOps *ops,
                       BwError *err)
{
    memset(ops, 0, sizeof *ops);
    const void *table;
    int rc = plugin_open(path, flag, BELLOWS_POLICY_ENTRY, "bellows_policy.h", handle, &table, err);
    if (rc) return rc;
    const BellowsPolicyOps *raw = table;
    char what[SPEC_MAX_TEXT + 64];
    snprintf(what, sizeof what, "%s %s", flag, path);
    if (raw->iVersion < BELLOWS_POLICY_OLDEST_VERSION || raw->iVersion > BELLOWS_POLICY_VERSION)
        rc = policy_ops_check(raw, what, err); /* reads iVersion only, says what is wrong */
    if (!rc) {
        memcpy(ops, raw, ops_size(raw->iVersion)); /* the rest stays zero */
        rc = policy_ops_check(ops, what, err);
    }
    if (!rc) rc = outer_unread(raw, what, err);
    if (rc) {
        plugin_close(*handle);
        *handle = NULL;
    }
    return rc;
}

void policy_plugin_close(void *handle)
{
    plugin_close(handle);
}
