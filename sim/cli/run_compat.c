/* run_compat.c: a run's flags as the compatibility table's features (compat.def, compat.h):
 * what was given, the topology and collectives level always; each policy's kind found only when
 * a line's other side matches (the policy is created: driver_policy_kind). */
#include <string.h>

#include "compat.h"
#include "run_args.h"

typedef struct {
    const RunConfig *cfg;
    const char *policy; /* POLICY[@COMPRESSOR] */
    char shown[SPEC_MAX_TEXT + 64];
    const Flags *f;
    char hvd_version[24]; /* the Horovod feature's value (horovod_release) */
} PolicyAsk;

/* Whether the command's table has flag name (-1 if not), and whether it was given. */
static int given_flag(const Flags *f, const char *name)
{
    for (int i = 0; i < f->n; i++)
        if (strcmp(f->opts[i].name, name) == 0) return f->set[i];
    return -1;
}

static const char *given(const Flags *f, const char *name, const char *value)
{
    return given_flag(f, name) > 0 ? value : NULL;
}

/* The Horovod release that runs the allreduces: of the run's profile as --horovod leaves it (the
 * profile is loaded here when run_setup checks before loading it); named --horovod when given,
 * else --costs. Asked once. */
static int horovod_release(CompatScene *s, PolicyAsk *ask, BwError *err)
{
    const Flags *f = ask->f;
    const RunConfig *cfg = ask->cfg;
    s->lazy_features &= ~(1u << COMPAT_HOROVOD);
    CostProfile *own = NULL;
    const CostProfile *p = cfg->costs;
    if (!p) {
        const char *gpu = cfg->cluster.gpu ? cfg->cluster.gpu->name : NULL;
        int rc = costs_load(f->run.costs, "--costs", gpu, &own, err);
        if (!rc) rc = hvd_args_apply(f, own, err);
        if (rc) {
            costs_free(own);
            return rc;
        }
        p = own;
    }
    if (p->horovod.present) {
        snprintf(ask->hvd_version, sizeof ask->hvd_version, "%s", p->horovod.version);
        s->value[COMPAT_HOROVOD] = ask->hvd_version;
        const int flag = f->run.horovod && strcmp(f->run.horovod, "off") != 0;
        s->flag[COMPAT_HOROVOD] = flag ? NULL : "--costs";
        s->shown[COMPAT_HOROVOD] = flag ? f->run.horovod : f->run.costs;
    }
    costs_free(own);
    return BW_OK;
}

static int policy_kind(CompatScene *s, CompatFeature feature, BwError *err)
{
    static const char *const KINDS[] = {"gradient", "periodic", "outer", "eager-outer"};
    PolicyAsk *ask = s->ctx;
    if (feature == COMPAT_HOROVOD) return horovod_release(s, ask, err);
    if (feature != COMPAT_POLICY || !ask || !ask->policy) return BW_OK;
    char policy[SPEC_MAX_TEXT], compressor[SPEC_MAX_TEXT];
    int rc = spec_split_compressor(ask->policy, "--policy", policy, compressor, err);
    if (rc) return rc;
    RunConfig cfg = *ask->cfg;
    cfg.policy = policy;
    if (compressor[0]) cfg.compressor = compressor;
    DriverPolicyKind kind = driver_policy_kind(&cfg, err, &rc);
    if (rc) return rc;
    s->value[COMPAT_POLICY] = KINDS[kind];
    snprintf(ask->shown, sizeof ask->shown, "%s (%s)", ask->policy, KINDS[kind]);
    s->shown[COMPAT_POLICY] = ask->shown;
    return BW_OK;
}

/* The schedule's name: its spec up to the options. */
static void schedule_name(const char *spec, char *buf, size_t n)
{
    snprintf(buf, n, "%.*s", (int)strcspn(spec, ":"), spec);
}

int run_check_compat(const char *cmd, const Flags *f, const RunConfig *cfg,
                     char (*policies)[SPEC_MAX_TEXT], int n, BwError *err)
{
    CompatScene s = {0};
    char schedule[SPEC_MAX_TEXT], workers[24];
    s.value[COMPAT_TOPOLOGY] = cluster_topology_name(cfg->cluster.topology);
    s.value[COMPAT_ALLREDUCE] = given(f, "allreduce", f->run.algorithm);
    s.value[COMPAT_COLLECTIVES] = f->run.collectives;
    s.value[COMPAT_NETWORK_MODEL] = given(f, "network-model", f->run.network_model);
    s.value[COMPAT_OVERLAP] = given(f, "overlap", f->run.overlap);
    const char *sh = given(f, "sharding", f->run.sharding);
    s.value[COMPAT_SHARDING] = sh && strcmp(sh, "none") != 0 ? sh : NULL;
    if (given(f, "schedule", f->run.schedule)) {
        schedule_name(f->run.schedule, schedule, sizeof schedule);
        s.value[COMPAT_SCHEDULE] = schedule;
        s.shown[COMPAT_SCHEDULE] = f->run.schedule;
    }
    s.value[COMPAT_WORKLOAD] = given(f, "workload", f->run.workload);
    s.value[COMPAT_PRICE_WORKERS] = f->run.price_workers ? "*" : NULL;
    snprintf(workers, sizeof workers, "%d", f->run.price_workers);
    s.shown[COMPAT_PRICE_WORKERS] = workers;
    s.value[COMPAT_PLATFORM] = f->cluster.platform;
    s.value[COMPAT_REPLAY] = f->run.trace ? f->run.trace : f->run.traces;
    s.value[COMPAT_CLUSTER] = strcmp(cmd, "cluster") == 0 ? "*" : NULL;
    PolicyAsk ask = {.cfg = cfg, .f = f};
    s.lazy = policy_kind;
    s.lazy_features = 1u << COMPAT_HOROVOD; /* the policies' kinds: below */
    s.ctx = &ask;
    int rc = compat_check(&s, err);
    s.lazy_features |= 1u << COMPAT_POLICY;
    s.flag[COMPAT_POLICY] = given_flag(f, "policies") >= 0 ? "--policies" : NULL;
    for (int i = 0; rc == BW_OK && i < n; i++) {
        ask.policy = policies[i];
        s.value[COMPAT_POLICY] = s.shown[COMPAT_POLICY] = NULL;
        rc = compat_check(&s, err);
    }
    return rc;
}
