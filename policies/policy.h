/* policy.h: the policy interface. A policy sees one observation per step and fills a decision:
 * the compression level of every layer, the global batch size, or (in periodic mode) whether to
 * average parameters after this step. Policies are plug-ins (a const PolicyOps with a name, a
 * help line, its source, and a table of options), registered by one line in policies.def, and
 * never see SimGrid or compressor internals, so the same policy runs live and on a replayed
 * trace.
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

#include "spec.h"
#include "status.h"

#define POLICY_MAX_LAYERS 32
#define POLICY_MAX_DECAYS 16

typedef enum {
    POLICY_GRADIENT, /* gradients are reduced every step, at the decided levels */
    POLICY_PERIODIC  /* local steps; parameters averaged when the decision says so */
} PolicyMode;

typedef struct {
    char name[32];
    int rows, cols;
    int ndim; /* 2: matrix (compressible), 1: vector (always reduced dense) */
} PolicyLayer;

/* What a policy knows of the run when it starts. */
typedef struct {
    int n_layers;
    PolicyLayer layers[POLICY_MAX_LAYERS];
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
} PolicyContext;

typedef struct {
    long step;       /* 0-based, counted over the whole run */
    int epoch;       /* 0-based */
    int epoch_start; /* 1 on the first step of an epoch */
    int epoch_end;   /* 1 on the last step of an epoch */
    int lr_decayed;  /* 1 on the first step of an epoch at which the step schedule lowered the lr */
    double lr;       /* this step's learning rate (after warm-up and schedule) */
    double loss;     /* this step's training loss, mean over workers */
    const double *grad_norm_rank0; /* [n_layers] L2 norm of rank 0's local uncompressed gradient */
    const double *grad_norm_mean;  /* [n_layers] the mean over workers of those norms */
    int averaged;                  /* periodic: parameters were averaged after the previous step */
    double param_variance;         /* mean_i ||x_i - xbar||^2 measured at that averaging, else 0 */
    double sim_time_s;             /* simulated seconds since the start */
    double bytes_per_worker;       /* bytes each worker has put on the wire so far */
    /* On epoch_end (else NULL): per layer, the norm of the epoch's mean local uncompressed
     * gradient, ||(1/T) sum_t g_t|| over the epoch's T steps, of rank 0 and the mean over
     * workers. Accordion's signal (the published code accumulates the gradient over the epoch
     * and takes the norm of the sum; dividing by T leaves its ratios unchanged). */
    const double *epoch_norm_rank0;
    const double *epoch_norm_mean;
} PolicyObs;

typedef struct {
    /* Compression level per layer, meaningful to the compressor (PowerSGD rank, TopK fraction);
     * 0 means dense fp32 (no compression). Ignored for vectors and in periodic mode. */
    double level[POLICY_MAX_LAYERS];
    int batch;   /* global batch size from the next step on (this step's batch is already drawn);
                    the driver scales the lr linearly with it */
    int average; /* periodic: average the parameters after this step */
    int period;  /* periodic: the current averaging period in steps (reported) */
} PolicyDecision;

typedef struct Policy Policy;

typedef struct {
    const char *name;
    const char *help;   /* one line */
    const char *source; /* paper and repository the rule comes from */
    PolicyMode mode;
    const SpecOpt *opts; /* its options, with defaults and help */
    int n_opts;          /* SPEC_N(opts) */
    size_t state_size;   /* bytes of state the core allocates (zeroed) for p->state */
    int (*init)(Policy *p, const SpecVal *vals, BwError *err);
    void (*observe)(Policy *p, const PolicyObs *obs);
    void (*decide)(Policy *p, const PolicyObs *obs, PolicyDecision *d);
    void (*describe)(const Policy *p, char *buf, size_t n); /* short state for logs and plots */
    void (*free_impl)(Policy *p);                           /* optional */
    int reconstruction; /* 1: the rule was not published; ours is a documented reconstruction */
    /* 1: reads the gradient norms (grad_norm_*, epoch_norm_*); the driver computes them only
     * for such policies (they cost a pass over every gradient at every step) */
    int needs_grad_norms;
} PolicyOps;

struct Policy {
    const PolicyOps *ops;
    PolicyContext ctx;
    char spec[SPEC_MAX_TEXT]; /* as given, normalised: name:k=v,... */
    void *state;
};

const PolicyOps *policy_find(const char *name);
const PolicyOps *const *policy_registry(void); /* NULL-terminated */

/* Parses "name[:k=v,...]" (flag names the CLI flag for messages), checks its options and
 * initialises the policy. Usage errors (unknown policy, bad option) return BW_EUSAGE. */
int policy_create(const char *spec, const char *flag, const PolicyContext *ctx, Policy **out,
                  BwError *err);
void policy_step(Policy *p, const PolicyObs *obs, PolicyDecision *d);
void policy_describe(const Policy *p, char *buf, size_t n);
void policy_free(Policy *p); /* NULL is a no-op */

/* The `bellows policies` listing: every policy with its help, source and options. */
void policy_print_list(FILE *out);

#endif
