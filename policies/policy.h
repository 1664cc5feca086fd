/* policy.h: the core's side of the policy interface, what the driver and the commands call.
 * A policy itself sees only the public header, bellows_policy.h (the observation, context,
 * decision, options and operations, versioned); the names below are the core's names for those
 * same structs, except PolicyContext, which the driver fills and the core turns into the
 * policy's BellowsPolicyContext (it carries the driver's level check, which takes a BwError).
 *
 * A policy is built in (one file policies/NAME.c and one line in policies.def), loaded at run
 * time from a shared object, or a Python file run by the embedded interpreter: a spec whose name
 * part holds a '/' or ends in ".so" or ".py" is a path, `--policy ./mypolicy.so:key=value`
 * (policy_load.c), `--policy ./mypolicy.py:key=value` (python/policy_python.c).
 *
 * Call order, per step t (the driver does it once, for all workers):
 *   policy_step(p, &obs_t, &d)   -> ops->observe(p, &obs_t); ops->decide(p, &obs_t, &d)
 * obs_t holds step t's own local gradient norms and loss, so a decision for step t may use them.
 * A per-epoch rule (Accordion) decides at the last step of an epoch and its levels take effect
 * from the first step of the next epoch. */
#ifndef BELLOWS_POLICY_H
#define BELLOWS_POLICY_H

#include <stddef.h>
#include <stdio.h>

#include "bellows_policy.h"
#include "spec.h"
#include "status.h"

#define POLICY_MAX_DECAYS BELLOWS_POLICY_MAX_DECAYS

typedef enum {
    POLICY_GRADIENT = BELLOWS_POLICY_GRADIENT, /* reduced every step, at the decided levels */
    POLICY_PERIODIC = BELLOWS_POLICY_PERIODIC  /* local steps; averaged when the decision says */
} PolicyMode;

typedef BellowsPolicyLayer PolicyLayer;
typedef BellowsPolicyObs PolicyObs;
typedef BellowsPolicyDecision PolicyDecision;
typedef BellowsPolicyOps PolicyOps;
typedef BellowsPolicy Policy;

/* What a policy knows of the run when it starts, as the driver fills it (the fields mean what
 * BellowsPolicyContext's of the same name mean). */
typedef struct {
    int n_layers;
    const PolicyLayer *layers; /* [n_layers], the caller's: policy_create keeps a copy */
    int workers;
    int epochs;
    int batch;            /* global batch size at the start (per worker: batch / workers) */
    long steps_per_epoch; /* at that batch size */
    double lr0;           /* base learning rate */
    int n_decays;         /* epochs at which a step schedule divides the lr, ascending */
    int decay_epochs[POLICY_MAX_DECAYS];
    char compressor[32];     /* the run's compressor ("none", "powersgd", "topk", ...) */
    double compressor_level; /* that compressor's default level */
    /* Optional: checks a level (> 0) for the run's compressor; the driver wraps
     * compress_check_level. Policies call it at init on every level they may decide, so a level
     * the compressor refuses is a usage error before the run starts. NULL: not checked here. */
    int (*check_level)(const void *arg, double level, const char *what, BwError *err);
    const void *check_level_arg;
    /* The cluster, fixed for the run; 0: not known (see bellows_policy.h). */
    double bandwidth_Bps; /* bottleneck bandwidth on a worker's path, bytes/s */
    double latency_s;     /* latency on that path, s */
    int gpus_per_node;    /* workers per node */
    int nodes;
    /* The run's settings (version 4; bellows_policy.h says what each means) */
    char compressor_spec[256];
    int overlap;
    int lr_known;
    double lr_peak_scale, warmup_epochs;
    int warmup_shape;
    double decay_factor;
} PolicyContext;

const PolicyOps *policy_find(const char *name);
const PolicyOps *const *policy_registry(void); /* NULL-terminated */

/* Parses "name[:k=v,...]", "path.so[:k=v,...]" or "path.py[:k=v,...]" (flag names the CLI flag
 * for messages), loads a plugin or a Python file, checks the options and initialises the policy.
 * Usage errors (unknown policy, a plugin or Python file that cannot be loaded or is
 * inconsistent, bad option, a Python exception) return BW_EUSAGE. */
int policy_create(const char *spec, const char *flag, const PolicyContext *ctx, Policy **out,
                  BwError *err);
/* d->level must point at the caller's array of the context's n_layers doubles; policy_step
 * resets them and the rest of *d, then lets the policy decide. Returns BW_OK, or, for a plugin
 * or a Python policy, BW_ERUNTIME (a Python exception, an invalid decision) or BW_EINTR (Ctrl-C
 * while a Python policy ran) with the message in err (may be NULL); a built-in's invalid
 * decision aborts (a bug of bellows). */
int policy_step(Policy *p, const PolicyObs *obs, PolicyDecision *d, BwError *err);
/* Whether the policy of spec may decide on the price of a run (bellows_policy.h's price_blind
 * is 0: not declared, or a plugin of an older interface), so that no other run's training can
 * stand for its own. Loads a plugin to read its ops; usage errors as policy_create's. */
int policy_sees_price(const char *spec, const char *flag, int *sees, BwError *err);
void policy_describe(const Policy *p, char *buf, size_t n);
/* The outer optimizer of DiLoCo and Streaming DiLoCo (policies/diloco.c, streaming_diloco.c):
 * Nesterov SGD's lr and momentum; H, the fragments (1: the whole model), tau (steps between a
 * fragment's exchange and its application), the quantisation's bits (32: none) and the merge's
 * alpha (local share at the application). */
typedef struct {
    double lr, momentum, alpha;
    int h, fragments, tau, bits;
    int eager; /* diloco's eager updates (arXiv 2502.12996; sim/driver/outer_eager.c) */
} PolicyOuter;
/* Whether p's averagings are outer steps: 1 with *o filled, else 0 (plain averaging): a built-in
 * policy's, or a C plugin's (bellows_policy.h version 6, BellowsPolicyOps.outer). */
int policy_outer(const Policy *p, PolicyOuter *o);
void policy_free(Policy *p);              /* NULL is a no-op */
const char *policy_spec(const Policy *p); /* as given, normalised: name:k=v,... */

/* The `bellows policies` listing: every policy with its help, source and options. */
void policy_print_list(FILE *out);
/* One plugin's or Python file's entry in the same form (out NULL: only load and check it). */
int policy_print_plugin(FILE *out, const char *path, const char *flag, BwError *err);
/* The interface of Python policies: the documentation of the bellows_policy module. */
int policy_print_python(FILE *out, BwError *err);

/* ---- shared by policy.c and policy_load.c ---- */

/* Loads the plugin at path: dlopen, the entry point, the version, the ops table's consistency.
 * Fills *ops with the ops zero-extended to this core's version; *handle is for
 * policy_plugin_close. Messages start with "FLAG PATH: ". */
int policy_plugin_open(const char *path, const char *flag, void **handle, PolicyOps *ops,
                       BwError *err);
void policy_plugin_close(void *handle);
/* Checks an ops table (built in or loaded); what prefixes the message. */
int policy_ops_check(const PolicyOps *ops, const char *what, BwError *err);
/* Converts an option table for spec_resolve and spec_print_opts (n <= BELLOWS_POLICY_MAX_OPTS). */
void policy_spec_opts(const BellowsPolicyOpt *opts, int n, SpecOpt *out);

#endif
