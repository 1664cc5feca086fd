/* bellows_policy.h: the one header a bellows scheduling policy needs, built in or loaded at run
 * time from a shared object. Self-contained: standard C headers only.
 *
 * A policy is a const table of operations (BellowsPolicyOps). Each step of a run the core shows
 * it one observation (BellowsPolicyObs) and it fills a decision (BellowsPolicyDecision): the
 * compression level of every layer and the global batch (gradient mode), or whether to average
 * the parameters now (periodic mode). It knows the run's fixed facts from its context
 * (BellowsPolicyContext) and declares its options (BellowsPolicyOpt), which the core parses from
 * `--policy NAME:key=value,...` and checks (unknown keys, numbers, ranges, choices) before init.
 *
 * A plugin is one C file that includes this header and defines the entry point
 *     const BellowsPolicyOps *bellows_policy_entry(void) { return &my_ops; }
 * built with   cc -shared -fPIC -I policies -o mypolicy.so mypolicy.c
 * and run with bellows run --policy ./mypolicy.so[:key=value,...]   (a spec whose name part
 * holds a '/' or ends in ".so" is a path; the path ends at the first ':'; a path is made of
 * [A-Za-z0-9._/+-] only). `bellows policies --plugin ./mypolicy.so` lists it. The plugin needs
 * nothing from bellows (no symbol is exported to it): only this header and libc.
 *
 * Versions (the rule of SQLite's sqlite3_vfs): BellowsPolicyOps starts with iVersion, the
 * BELLOWS_POLICY_VERSION the policy was written against. New fields are only ever appended at
 * the end of BellowsPolicyOps, BellowsPolicyContext, BellowsPolicyObs and BellowsPolicyDecision,
 * and BELLOWS_POLICY_VERSION then grows by one; nothing is removed, moved or retyped. The core
 * refuses a policy whose iVersion is newer than its own (or older than
 * BELLOWS_POLICY_OLDEST_VERSION) and reads of an older policy's ops only the fields that version
 * has. A policy built for version N >= BELLOWS_POLICY_OLDEST_VERSION runs on every core >= N and
 * may read every field that version N documents. Frozen for good (arrays of them cross the
 * boundary, so their size cannot change): BellowsPolicyLayer, BellowsPolicyOpt,
 * BellowsPolicyValue, BellowsPolicy, and the constants BELLOWS_POLICY_MAX_*.
 *
 * Version 3 broke that rule once, to lift the cap of 32 layers: the context's layer table
 * (BellowsPolicyContext.layers) and the decision's levels (BellowsPolicyDecision.level), arrays
 * of BELLOWS_POLICY_MAX_LAYERS = 32 entries in versions 1 and 2, became pointers to n_layers
 * entries that the core allocates (a model or trace may have any number of tensors: ResNet-50
 * has 161), and BELLOWS_POLICY_MAX_LAYERS is gone. Source that indexes ctx->layers[l] and
 * d->level[l] below n_layers compiles unchanged; a plugin built for version 1 or 2 is refused
 * with a message to rebuild it against this header.
 *
 * Version 4 appended to the context the run's settings a policy may require (Accordion's
 * paper=1 checks them): the compressor with all its options, the overlap of communication with
 * the backward pass, and the rest of the learning-rate schedule. A version-3 plugin runs
 * unchanged.
 *
 * Version 5 appended to the operations price_blind: whether the policy's decisions may depend on
 * the price of the run (its network, GPU and costs). A plugin of an older version is taken to
 * see the price, and runs unchanged.
 *
 * Version 6 appended to the operations outer: a periodic policy's averagings may be DiLoCo's
 * outer steps (BellowsPolicyOuter), so a plugin can be a DiLoCo-like policy across islands. A
 * plugin of an older version averages plainly, as before; a table that declares version 5 but
 * sets outer is refused (its outer step would be ignored). */
#ifndef BELLOWS_POLICY_PUBLIC_H
#define BELLOWS_POLICY_PUBLIC_H

#include <stddef.h>

#define BELLOWS_POLICY_VERSION        6
#define BELLOWS_POLICY_OLDEST_VERSION 3 /* the oldest plugin interface this core runs */
#define BELLOWS_POLICY_MAX_DECAYS     16
#define BELLOWS_POLICY_MAX_OPTS       16

/* The number of entries of an option table: `.opts = OPTS, .n_opts = BELLOWS_N(OPTS)`. */
#define BELLOWS_N(arr) ((int)(sizeof(arr) / sizeof *(arr)))

/* BellowsPolicyContext.overlap (version 4): how the gradients' collectives meet the backward
 * pass, --overlap */
enum {
    BELLOWS_OVERLAP_NONE = 0,   /* the backward, then every collective */
    BELLOWS_OVERLAP_DDP = 1,    /* PyTorch DDP's buckets, reduced while the backward goes on */
    BELLOWS_OVERLAP_TENSOR = 2, /* the backward, then one tensor's collectives after another */
    /* since bellows' schedules (no new field: a plugin of version 4 or 5 may see it): the
     * backward hands gradients over as DDP does and the next step's forward of a layer waits
     * only for that layer's update */
    BELLOWS_OVERLAP_LAYER = 3
};

/* BellowsPolicyContext.warmup_shape (version 4), --warmup-shape */
enum {
    BELLOWS_WARMUP_STEP = 0, /* the warm-up's rate grows every step */
    BELLOWS_WARMUP_EPOCH = 1 /* once an epoch, one epoch late (the Accordion authors' code) */
};

/* BellowsPolicyOps.mode */
enum {
    BELLOWS_POLICY_GRADIENT = 0, /* gradients reduced every step at the decided levels */
    BELLOWS_POLICY_PERIODIC = 1  /* local steps; parameters averaged when the decision says so */
};

/* What init returns: 0, or the kind of failure (with a one-line message in its err buffer). */
enum {
    BELLOWS_POLICY_OK = 0,
    BELLOWS_POLICY_ERUNTIME = 1, /* out of memory and the like: the run fails (exit 1) */
    BELLOWS_POLICY_EUSAGE = 2    /* bad option values for this run: a usage error (exit 2) */
};

/* BellowsPolicyOpt.type */
enum { BELLOWS_OPT_DOUBLE = 0, BELLOWS_OPT_INT = 1, BELLOWS_OPT_CHOICE = 2 };

/* One option of a policy, as `key=value` in its spec. Frozen. */
typedef struct {
    const char *key;     /* [a-z0-9_-]+, shorter than 32 bytes */
    int type;            /* BELLOWS_OPT_DOUBLE, _INT (a whole number) or _CHOICE */
    const char *def;     /* default as text ("0.5", "all"); NULL: no default (say so in help) */
    double lo, hi;       /* DOUBLE and INT: inclusive range */
    const char *choices; /* CHOICE: the words, "all|rank0"; NULL otherwise */
    const char *help;    /* one line for `bellows policies` */
} BellowsPolicyOpt;

/* The value of one option, in the order of the option table, handed to init. Frozen. */
typedef struct {
    int set;    /* 1 if given or defaulted; 0: no default and not given */
    double num; /* DOUBLE and INT */
    int choice; /* CHOICE: index into the choices, from 0 */
} BellowsPolicyValue;

/* One layer of the model (or of a replayed trace's layer table). Frozen. */
typedef struct {
    char name[32]; /* "fc1.w" */
    int rows, cols;
    int ndim; /* 2: a matrix (compressible); 1: a vector (always reduced dense) */
} BellowsPolicyLayer;

/* What a policy knows of the run when it starts; fixed for the whole run. */
typedef struct BellowsPolicyContext {
    /* ---- version 1 (version 3: layers became a pointer) ---- */
    int n_layers;                     /* >= 1, any number */
    const BellowsPolicyLayer *layers; /* [n_layers], the core's, valid until free */
    int workers;                      /* data-parallel workers (ranks) */
    int epochs;
    int batch;            /* global batch at the start (per worker: batch / workers) */
    long steps_per_epoch; /* at that batch */
    double lr0;           /* base learning rate */
    int n_decays;         /* epochs at which a step schedule divides the lr, ascending */
    int decay_epochs[BELLOWS_POLICY_MAX_DECAYS];
    char compressor[32];     /* the run's compressor: "none", "powersgd", "topk", ... */
    double compressor_level; /* that compressor's default level */
    /* Checks a level (> 0) the policy may decide against the run's compressor (PowerSGD: an
     * integer rank >= 1; TopK: a fraction in (0, 1]; ...). Returns 0 if valid, else
     * BELLOWS_POLICY_EUSAGE with a one-line message in err that starts with `what` (the option's
     * name). Call it in init on every level you may decide, so a bad one is a usage error before
     * the run starts. Never NULL; level 0 (dense) is always valid. */
    int (*check_level)(const struct BellowsPolicyContext *ctx, double level, const char *what,
                       char *err, size_t errlen);
    const void *core; /* the core's; do not touch */
    /* The cluster as this policy's rank sees it, fixed for the run: the NIC's bandwidth (a
     * fat-tree's: divided by the leaf uplinks' oversubscription) and latency; for a --platform
     * file, the worst route between ring neighbours as measured when it is loaded. 0: not known
     * (a --platform file at the check before the run); a policy must then fall back. */
    double bandwidth_Bps; /* bottleneck bandwidth on a worker's path, bytes/s */
    double latency_s;     /* latency on that path, s */
    int gpus_per_node;    /* workers that share a node (and its links) */
    int nodes;            /* nodes in the cluster */
    /* ---- version 4 ---- */
    /* The run's compressor with every option spelled out, defaults included, in the order of
     * its option table: "topk:ef=1,divide=1,index=int32,count=ceil" (`bellows compressors`). */
    char compressor_spec[256];
    int overlap; /* BELLOWS_OVERLAP_* (--overlap) */
    /* The learning-rate schedule besides lr0 and decay_epochs. lr_known is 1 when the run
     * follows its flags; 0 in a replay, whose rate is the trace's (the fields below are then 0). */
    int lr_known;
    double lr_peak_scale; /* the rate after the warm-up is lr0 x this (--lr-scale workers) */
    double warmup_epochs; /* --warmup-epochs, 0: none */
    int warmup_shape;     /* BELLOWS_WARMUP_* (--warmup-shape) */
    double decay_factor;  /* the step schedule's multiplier at each of decay_epochs */
} BellowsPolicyContext;

/* BellowsPolicyObs.have: which of the observation's optional parts this observation holds. A
 * live run has the norms (for a policy with needs_grad_norms); a replayed trace may lack
 * per-rank norms, epoch norms or the variance. */
enum {
    BELLOWS_HAS_GRAD_NORMS = 1 << 0,  /* grad_norm_mean */
    BELLOWS_HAS_RANK0_NORMS = 1 << 1, /* grad_norm_rank0 is rank 0's own, not the mean */
    BELLOWS_HAS_EPOCH_NORMS = 1 << 2, /* epoch_norm_* (on epoch_end) */
    BELLOWS_HAS_VARIANCE = 1 << 3,    /* param_variance (after an averaging) */
    BELLOWS_HAS_STEP_TIMES = 1 << 4,  /* compute_s, compress_s, comm_s, wait_s */
    BELLOWS_HAS_EVAL = 1 << 5         /* eval_* (after the first evaluation) */
};

/* What a policy observes at each step t (once, for all workers). Step t's own loss and local
 * gradient norms are in, so a decision for step t may use them. Appended fields say from which
 * version they exist. */
typedef struct {
    /* ---- version 1 ---- */
    long step;       /* 0-based, over the whole run */
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
    double bytes_per_worker;       /* bytes rank 0 has put on the wire so far */
    /* On epoch_end (else NULL): per layer, the norm of the epoch's mean local uncompressed
     * gradient, ||(1/T) sum_t g_t|| over the epoch's T steps, of rank 0 and the mean over
     * workers (Accordion's signal). */
    const double *epoch_norm_rank0;
    const double *epoch_norm_mean;
    /* What this observation holds: BELLOWS_HAS_* bits. A part whose bit is clear is absent:
     * its pointers may be NULL or hold a stand-in, its numbers are NaN (eval_step -1). */
    unsigned have;
    /* The previous step's simulated seconds on rank 0: its compute, its compression (encode and
     * decode not hidden by the overlap: charged on a costed step, with --workload or --overlap;
     * 0 without one), its communication and its waiting for slower workers. NaN before the
     * first step (BELLOWS_HAS_STEP_TIMES clear). */
    double compute_s, compress_s, comm_s, wait_s;
    /* The last evaluation on the test set: accuracy in [0, 1], loss, and the step and simulated
     * time it was taken at (in a replay, the trace's). NaN and -1 before the first evaluation
     * (BELLOWS_HAS_EVAL clear). */
    double eval_accuracy, eval_loss;
    long eval_step;
    double eval_time_s;
} BellowsPolicyObs;

/* What a policy decides at each step. The core pre-fills it (every level 0, batch = the
 * context's batch, average 0, period 1 in periodic mode) and checks it after decide.
 *   gradient mode: level[] and batch; average and period must stay 0.
 *   periodic mode: average and period; level[] is ignored (must stay 0), batch may change. */
typedef struct {
    /* ---- version 1 (version 3: level became a pointer) ---- */
    /* Compression level per layer, meaningful to the compressor (PowerSGD rank, TopK fraction);
     * 0 means dense fp32. Must be finite, >= 0, and 0 for vectors (ndim 1). The core's array of
     * ctx->n_layers entries, pre-filled with 0: write level[l] for l < n_layers, never the
     * pointer. */
    double *level;
    int batch;   /* global batch from the next step on, a multiple of workers; the driver scales
                    the lr linearly with it. A replay refuses any change. */
    int average; /* periodic: 1 to average the parameters after this step */
    int period;  /* periodic: the current averaging period in steps, >= 1 (reported) */
} BellowsPolicyDecision;

/* One policy in a run. The core allocates it; a policy reads ctx and owns *state. Frozen. */
typedef struct BellowsPolicy {
    void *state;                     /* state_size zeroed bytes, freed by the core */
    const BellowsPolicyContext *ctx; /* the run's context, valid until free */
    const struct BellowsPolicyOps *ops;
} BellowsPolicy;

/* A periodic policy's outer step (version 6, BellowsPolicyOps.outer), the driver's rule
 * (sim/driver/outer.c): DiLoCo (Douillard et al., arXiv 2311.08105): at each averaging the
 * replicas' mean outer gradient, theta_global - theta_i, takes one Nesterov step (lr > 0,
 * momentum in [0, 1)) on theta_global, from which every replica restarts. Streaming DiLoCo
 * (arXiv 2501.18512) when fragments > 1, bits < 32 or tau > 0: the model's layers in `fragments`
 * contiguous fragments (1 to the model's layers, at most h), fragment p exchanged at the steps c
 * (from 1) with c >= h and c % h == p h / fragments (the policy must average at exactly those),
 * its outer gradient quantised to bits (1 to 16; 32: none), its outer step applied tau steps
 * later (0 <= tau < h) as alpha local + (1 - alpha) global (alpha in [0, 1]). eager 1 (with
 * fragments 1, bits 32, tau 0): Kale et al.'s eager updates (arXiv 2502.12996). h >= 1. The core
 * refuses values outside these ranges before the run. Frozen: new settings take a new struct. */
typedef struct {
    double lr, momentum, alpha;
    int h, fragments, tau, bits, eager;
} BellowsPolicyOuter;

/* The operations. iVersion first; new fields only ever appended at the end. */
typedef struct BellowsPolicyOps {
    /* ---- version 1 ---- */
    int iVersion;                 /* BELLOWS_POLICY_VERSION as the policy was compiled */
    const char *name;             /* [a-z0-9_-]+, shorter than 32 bytes: listings and messages */
    const char *help;             /* one line */
    const char *source;           /* the paper or repository the rule comes from; may be NULL */
    int mode;                     /* BELLOWS_POLICY_GRADIENT or BELLOWS_POLICY_PERIODIC */
    const BellowsPolicyOpt *opts; /* its options; NULL if none */
    int n_opts;                   /* BELLOWS_N(opts), at most BELLOWS_POLICY_MAX_OPTS */
    size_t state_size;            /* bytes the core allocates, zeroed, as state */
    /* Optional. Reads the options (vals[i] for opts[i]) into state and checks them against the
     * context. Returns BELLOWS_POLICY_OK, or EUSAGE / ERUNTIME with one line in err (no prefix:
     * the core puts the flag and the policy in front). On failure it frees what it allocated. */
    int (*init)(BellowsPolicy *p, const BellowsPolicyValue *vals, char *err, size_t errlen);
    /* Optional. Sees every step's observation before decide (accumulate signals here). */
    void (*observe)(BellowsPolicy *p, const BellowsPolicyObs *obs);
    /* Required. Fills the decision for this step; must be deterministic. */
    void (*decide)(BellowsPolicy *p, const BellowsPolicyObs *obs, BellowsPolicyDecision *d);
    /* Optional. A short state for steps.csv and plots ("level=2"); default: the name. */
    void (*describe)(const BellowsPolicy *p, char *buf, size_t n);
    /* Optional. Frees what init allocated (not state itself). */
    void (*free_impl)(BellowsPolicy *p);
    int reconstruction; /* 1: the rule was not published; this one is a reconstruction */
    /* 1: reads grad_norm_* or epoch_norm_*; the driver computes them only for such policies
     * (a pass over every gradient each step). 0: those pointers may hold zeros. */
    int needs_grad_norms;
    /* ---- version 2 ---- */
    /* The parts of the observation (BELLOWS_HAS_* bits) the policy cannot decide without: a
     * replay of a trace that never holds one is refused before anything runs (a trace lacks
     * BELLOWS_HAS_EPOCH_NORMS without "epoch_norms", BELLOWS_HAS_VARIANCE without
     * "param_variance"). 0: it copes with what there is. */
    unsigned needs;
    /* ---- version 5 ---- */
    /* 1: the decisions never depend on the price of the run: not on the observation's simulated
     * times (sim_time_s, compute_s, compress_s, comm_s, wait_s, eval_time_s) or bytes
     * (bytes_per_worker), nor on the context's cluster (bandwidth_Bps, latency_s, gpus_per_node,
     * nodes) or overlap. Then the policy decides the same on every network, GPU and straggler,
     * and `bellows sweep` trains it once per training setting and prices every other scenario
     * by replaying that training's trace. 0 (the default, and every plugin of an older version):
     * the decisions may depend on the price, and every scenario trains the policy. */
    int price_blind;
    /* ---- version 6 ---- */
    /* Optional, periodic policies: whether its averagings are outer steps; 1 with *o filled,
     * 0: plain averaging. Called once, after init; must not change its answer. */
    int (*outer)(const BellowsPolicy *p, BellowsPolicyOuter *o);
} BellowsPolicyOps;

/* The entry point a plugin defines (exported, C linkage); the core calls it once per load. It
 * returns the policy's operations, which must stay valid while the plugin is loaded. */
#define BELLOWS_POLICY_ENTRY "bellows_policy_entry"
#if defined(__GNUC__)
__attribute__((visibility("default")))
#endif
const BellowsPolicyOps *
bellows_policy_entry(void);

#endif
