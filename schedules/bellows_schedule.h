/* bellows_schedule.h: the one header a bellows communication schedule needs, built in or loaded
 * at run time from a shared object. Self-contained: standard C headers only.
 *
 * A policy decides how much a step sends (the compression level of every layer); a schedule
 * decides when and in what pieces it goes: the order (priority) of the real model's tensors,
 * how tensors are fused into units (buckets), how large a partition of a message may be, and
 * how much may be in flight at once (the credit). Each step of a costed run the core shows the
 * schedule one observation (BellowsScheduleObs: the bytes each tensor sends at the levels the
 * policy just decided) and it fills a decision (BellowsScheduleDecision). It composes with any
 * compression policy: the compressor's messages for each unit are what gets partitioned and
 * ordered. Built-ins: fifo (PyTorch DDP's buckets in the order the backward fills them, the
 * default), bytescheduler, p3, tictac; `bellows schedules` lists them with their options.
 *
 * A plugin is one C file that includes this header and defines the entry point
 *     const BellowsScheduleOps *bellows_schedule_entry(void) { return &my_ops; }
 * built with   cc -shared -fPIC -I schedules -o mysched.so mysched.c
 * and run with bellows run --workload vgg16 --schedule ./mysched.so[:key=value,...] (a spec
 * whose name part holds a '/' or ends in ".so" is a path; the path ends at the first ':'; a
 * path is made of [A-Za-z0-9._/+-] only). `bellows schedules --plugin ./mysched.so` lists it.
 *
 * Versions (the rule of SQLite's sqlite3_vfs, as bellows_policy.h): BellowsScheduleOps starts
 * with iVersion, the BELLOWS_SCHEDULE_VERSION the schedule was written against. New fields are
 * only ever appended at the end of BellowsScheduleOps, BellowsScheduleContext,
 * BellowsScheduleObs and BellowsScheduleDecision, and BELLOWS_SCHEDULE_VERSION then grows by
 * one; nothing is removed, moved or retyped. The core refuses a schedule whose iVersion is newer
 * than its own and reads of an older one's ops only the fields its version has. Frozen for good
 * (arrays of them cross the boundary): BellowsScheduleTensor, BellowsScheduleLayer,
 * BellowsScheduleOpt, BellowsScheduleValue, BellowsSchedule. */
#ifndef BELLOWS_SCHEDULE_PUBLIC_H
#define BELLOWS_SCHEDULE_PUBLIC_H

#include <stddef.h>

#define BELLOWS_SCHEDULE_VERSION        1
#define BELLOWS_SCHEDULE_OLDEST_VERSION 1
#define BELLOWS_SCHEDULE_MAX_OPTS       16
/* The smallest partition the core accepts: below it a collective is all fixed cost. */
#define BELLOWS_SCHEDULE_MIN_PARTITION_BYTES 1024.0

/* The number of entries of an option table: `.opts = OPTS, .n_opts = BELLOWS_SCHEDULE_N(OPTS)`. */
#define BELLOWS_SCHEDULE_N(arr) ((int)(sizeof(arr) / sizeof *(arr)))

/* What init returns: 0, or the kind of failure (with a one-line message in its err buffer). */
enum {
    BELLOWS_SCHEDULE_OK = 0,
    BELLOWS_SCHEDULE_ERUNTIME = 1, /* out of memory and the like: the run fails (exit 1) */
    BELLOWS_SCHEDULE_EUSAGE = 2    /* bad option values for this run: a usage error (exit 2) */
};

/* BellowsScheduleOpt.type */
enum {
    BELLOWS_SCHEDULE_OPT_DOUBLE = 0,
    BELLOWS_SCHEDULE_OPT_INT = 1,
    BELLOWS_SCHEDULE_OPT_CHOICE = 2
};

/* One option of a schedule, as `key=value` in its spec. Frozen. */
typedef struct {
    const char *key;     /* [a-z0-9_-]+, shorter than 32 bytes */
    int type;            /* BELLOWS_SCHEDULE_OPT_DOUBLE, _INT (a whole number) or _CHOICE */
    const char *def;     /* default as text ("4096000", "1"); NULL: no default (say so in help) */
    double lo, hi;       /* DOUBLE and INT: inclusive range */
    const char *choices; /* CHOICE: the words, "time|index"; NULL otherwise */
    const char *help;    /* one line for `bellows schedules` */
} BellowsScheduleOpt;

/* The value of one option, in the order of the option table, handed to init. Frozen. */
typedef struct {
    int set;    /* 1 if given or defaulted; 0: no default and not given */
    double num; /* DOUBLE and INT */
    int choice; /* CHOICE: index into the choices, from 0 */
} BellowsScheduleValue;

/* One tensor of the real model (the workload profile, or the small model's own layers), in the
 * model's forward order: tensor 0 belongs to the first layer. Frozen. */
typedef struct {
    char name[64];
    int layer;    /* the layer (BellowsScheduleLayer) whose backward computes its gradient */
    double numel; /* elements; fp32 bytes are 4 x numel */
    int ndim;     /* 2 or more: a matrix (compressible); 1: a vector (always dense) */
} BellowsScheduleTensor;

/* One layer of the real model, in forward order. Frozen. */
typedef struct {
    char name[64];
    double fwd_s, bwd_s;         /* its forward and backward on the simulated GPU, at the run's
                                    starting batch, without slowdown or jitter */
    int first_tensor, n_tensors; /* its tensors are [first_tensor, first_tensor + n_tensors) */
} BellowsScheduleLayer;

/* What a schedule knows of the run when it starts; fixed for the whole run. */
typedef struct BellowsScheduleContext {
    /* ---- version 1 ---- */
    int n_tensors;                        /* >= 1 */
    const BellowsScheduleTensor *tensors; /* [n_tensors], the core's, valid until free */
    int n_layers;                         /* >= 1 */
    const BellowsScheduleLayer *layers;   /* [n_layers] */
    double model_bytes;                   /* the tensors' fp32 bytes, 4 x sum of numel */
    int workers;                          /* data-parallel ranks */
    double bandwidth_Bps;                 /* a worker's NIC, bytes/s (0: not known yet) */
    double latency_s;                     /* its latency */
    char algorithm[32];                   /* --allreduce: "ring", ..., "ps" */
    int servers;                          /* --servers with "ps"; 0 otherwise */
    /* 1: --overlap layer, the next step's forward of layer l waits only for layer l's update,
     * so what is sent last overlaps the next forward; 0: --overlap ddp, every unit is reduced
     * before the optimiser and the next step */
    int layerwise;
    double bucket_bytes;       /* --bucket-mb in bytes (DDP's bucket cap) */
    double first_bucket_bytes; /* DDP's first bucket, 1 MiB */
    double collective_s;       /* the cost profile's fixed cost of a collective call (0: ideal) */
} BellowsScheduleContext;

/* What a schedule observes at each step (once, for all workers), after the policy decided it. */
typedef struct {
    /* ---- version 1 ---- */
    long step;                  /* 0-based, over the whole run */
    int epoch;                  /* 0-based */
    const double *tensor_bytes; /* [n_tensors]: the bytes each tensor's messages carry at this
                                   step's levels (fp32 dense: 4 x numel; less when compressed) */
    double last_step_s;         /* the previous step's simulated seconds on rank 0; NaN at the
                                   first step */
} BellowsScheduleObs;

/* What a schedule decides at each step. The core pre-fills it with fifo's decision (the
 * priorities of the order the backward produces the gradients, DDP's buckets, no partitions,
 * no credit limit; with parameter servers, servers > 0, BytePS's: a unit per tensor,
 * partitions of 4,096,000 bytes, no credit limit) and checks it after decide. */
typedef struct {
    /* ---- version 1 ---- */
    /* [n_tensors]: the lower, the sooner (finite). The core's array, pre-filled with
     * n_tensors - 1 - t (the last tensor first, as the backward produces them): write
     * priority[t], never the pointer. A unit's priority is the lowest of its tensors'; among
     * the units whose messages are ready, the lowest priority goes first (ties: the unit filled
     * first), one partition at a time. */
    double *priority;
    /* Units: tensors in reverse order (as the backward produces them) fill a unit until it
     * holds bucket_bytes of fp32 (the first unit first_bucket_bytes); a unit is reduced once the
     * backward of its last tensor is done. 0: every tensor is a unit of its own. */
    double bucket_bytes, first_bucket_bytes;
    /* A message of a unit larger than this is split into partitions of at most this many bytes,
     * each its own collective call (and fixed cost): >= BELLOWS_SCHEDULE_MIN_PARTITION_BYTES, or
     * 0: never split. */
    double partition_bytes;
    /* How much may be in flight at once: a partition is handed to the network while the
     * partitions handed out and not yet done hold fewer than credit_bytes bytes (the last one
     * may overdraw, as ByteScheduler's loop does) and number fewer than credit_partitions.
     * 0: no limit of that kind. */
    double credit_bytes;
    int credit_partitions;
} BellowsScheduleDecision;

/* One schedule in a run. The core allocates it; a schedule reads ctx and owns *state. Frozen. */
typedef struct BellowsSchedule {
    void *state;                       /* state_size zeroed bytes, freed by the core */
    const BellowsScheduleContext *ctx; /* the run's context, valid until free */
    const struct BellowsScheduleOps *ops;
} BellowsSchedule;

/* The operations. iVersion first; new fields only ever appended at the end. */
typedef struct BellowsScheduleOps {
    /* ---- version 1 ---- */
    int iVersion;                   /* BELLOWS_SCHEDULE_VERSION as the schedule was compiled */
    const char *name;               /* [a-z0-9_-]+, shorter than 32 bytes */
    const char *help;               /* one line */
    const char *source;             /* the paper or repository it comes from; may be NULL */
    const BellowsScheduleOpt *opts; /* its options; NULL if none */
    int n_opts;        /* BELLOWS_SCHEDULE_N(opts), at most BELLOWS_SCHEDULE_MAX_OPTS */
    size_t state_size; /* bytes the core allocates, zeroed, as state */
    /* Optional. Reads the options (vals[i] for opts[i]) into state and checks them against the
     * context (a partition larger than the model, say). Returns BELLOWS_SCHEDULE_OK, or EUSAGE /
     * ERUNTIME with one line in err (no prefix: the core puts the flag and the name in front). */
    int (*init)(BellowsSchedule *s, const BellowsScheduleValue *vals, char *err, size_t errlen);
    /* Required. Fills the decision for this step; must be deterministic. */
    void (*decide)(BellowsSchedule *s, const BellowsScheduleObs *obs, BellowsScheduleDecision *d);
    /* Optional. A short state for steps.csv ("partition=4096000,credit=4"); default: the name. */
    void (*describe)(const BellowsSchedule *s, char *buf, size_t n);
    /* Optional. Frees what init allocated (not state itself). */
    void (*free_impl)(BellowsSchedule *s);
} BellowsScheduleOps;

/* The entry point a plugin defines (exported, C linkage); the core calls it once per load. */
#define BELLOWS_SCHEDULE_ENTRY "bellows_schedule_entry"
#if defined(__GNUC__)
__attribute__((visibility("default")))
#endif
const BellowsScheduleOps *
bellows_schedule_entry(void);

#endif
