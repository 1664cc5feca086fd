/* flag_class.c: the class of every flag of the simulating commands (see flag_class.h). A flag of
 * the price may still decide the order in which a run adds its workers' gradients, which moves
 * the dynamics in their last bits: --allreduce and --collectives on the transfer level, and
 * whether a step is costed (--workload, --overlap). That order is a property of the resolved
 * scenario, not of a flag, so bellows sweep adds it to the dynamics it groups runs by
 * (driver_sum_order). */
#include "flag_class.h"

#include <string.h>

#include "model.h"
#include "spec.h"

typedef struct {
    const char *name;
    FlagClass c;
} FlagClassRow;

static const FlagClassRow CLASSES[] = {
    /* the training: model, data, optimiser and schedule (bellows train's flags) */
    {"model", FLAG_DYNAMICS},
    {"epochs", FLAG_DYNAMICS},
    {"batch", FLAG_DYNAMICS},
    {"lr", FLAG_DYNAMICS},
    {"momentum", FLAG_DYNAMICS},
    {"nesterov", FLAG_DYNAMICS},
    {"optimizer", FLAG_DYNAMICS},
    {"weight-decay", FLAG_DYNAMICS},
    {"lr-decay-epochs", FLAG_DYNAMICS},
    {"lr-decay-factor", FLAG_DYNAMICS},
    {"lr-schedule", FLAG_DYNAMICS},
    {"warmup-epochs", FLAG_DYNAMICS},
    {"warmup-shape", FLAG_DYNAMICS},
    {"lr-scale", FLAG_DYNAMICS},
    {"seed", FLAG_DYNAMICS},
    {"seeds", FLAG_DYNAMICS},
    {"data-dir", FLAG_DYNAMICS},
    {"train-samples", FLAG_DYNAMICS},
    {"test-samples", FLAG_DYNAMICS},
    {"threads", FLAG_DYNAMICS}, /* OpenBLAS's threads round sgemm differently */
    /* the data-parallel run: how many shards, how gradients are compressed, who decides */
    {"workers", FLAG_DYNAMICS},
    {"compressor", FLAG_DYNAMICS},
    {"policy", FLAG_DYNAMICS},
    {"policies", FLAG_DYNAMICS},
    {"average-momentum", FLAG_DYNAMICS},
    /* the evaluations a policy may read, and where a run stops */
    {"eval-every", FLAG_DYNAMICS},
    {"target-accuracy", FLAG_DYNAMICS}, /* evaluations thin out after it */
    {"stop-at-target", FLAG_DYNAMICS},
    {"trace", FLAG_DYNAMICS},  /* a replay: the trace is the dynamics */
    {"traces", FLAG_DYNAMICS}, /* compare --traces: each policy's own trace */
    /* the cluster */
    {"gpus-per-node", FLAG_PRICE},
    {"topology", FLAG_PRICE},
    {"gpu", FLAG_PRICE},
    {"precision", FLAG_PRICE},
    {"gpu-efficiency", FLAG_PRICE},
    {"gpu-flops", FLAG_PRICE},
    {"bandwidth", FLAG_PRICE},
    {"latency", FLAG_PRICE},
    {"intra-bandwidth", FLAG_PRICE},
    {"intra-latency", FLAG_PRICE},
    {"nic-per-gpu", FLAG_PRICE},
    {"nics-per-node", FLAG_PRICE},
    {"leaf-size", FLAG_PRICE},
    {"platform", FLAG_PRICE},
    {"hosts", FLAG_PRICE},
    {"oversubscription", FLAG_PRICE},
    {"nccl-sockets", FLAG_PRICE},
    {"cloud", FLAG_PRICE},
    /* islands (sim/driver/islands.c): the island count shapes the replicas; the WAN is a price
     * (a replay on islands takes the actors) */
    {"islands", FLAG_DYNAMICS},
    {"wan-bandwidth", FLAG_PRICE},
    {"wan-latency", FLAG_PRICE},
    /* the network model and the collectives */
    {"allreduce", FLAG_PRICE},
    {"servers", FLAG_PRICE},
    {"ps-hosts", FLAG_PRICE},
    {"schedule", FLAG_PRICE}, /* what is sent when: the same gradients, in another order */
    {"collectives", FLAG_PRICE},
    {"network-model", FLAG_PRICE},
    /* the costs of a step, and the GPUs' speeds (a policy that sees them is trained anyway) */
    {"workload", FLAG_PRICE},
    {"overlap", FLAG_PRICE},
    {"sharding", FLAG_PRICE},  /* the same update as DDP (docs/guide/sharded.md) */
    {"zeropp", FLAG_DYNAMICS}, /* qwZ and qgZ quantize what the small model uses */
    {"fsdp-unit", FLAG_PRICE}, /* ZeRO-3's schedule: when, not what, is sent */
    {"backward-prefetch", FLAG_PRICE},
    {"forward-prefetch", FLAG_PRICE},
    {"limit-all-gathers", FLAG_PRICE},
    {"reshard-after-forward", FLAG_PRICE},
    {"rs-comm", FLAG_PRICE},
    {"bucket-mb", FLAG_PRICE},
    {"price-batch", FLAG_PRICE},
    {"price-workers", FLAG_PRICE},
    {"free-compression", FLAG_PRICE},
    {"costs", FLAG_PRICE},
    {"horovod", FLAG_PRICE}, /* hvd_args.c: the framework that runs the allreduces */
    {"horovod-fusion", FLAG_PRICE},
    {"horovod-cycle", FLAG_PRICE},
    {"transport", FLAG_PRICE},
    {"compute-jitter", FLAG_PRICE},
    {"straggler-cv", FLAG_PRICE},
    {"cost-band", FLAG_RUN},
    {"slowdown", FLAG_PRICE},
    /* how and where it runs, and what it writes */
    {"compute-threads", FLAG_RUN}, /* the same bits on any number of threads (tested) */
    {"out", FLAG_RUN},
    {"force", FLAG_RUN},
    {"quiet", FLAG_RUN},
    {"timeline", FLAG_RUN},
    {"timeline-steps", FLAG_RUN},
    {"record-trace", FLAG_RUN},
    {"record-traces", FLAG_RUN},
    {"jobs", FLAG_RUN},
    {"replay-engine", FLAG_RUN},
    {"no-plots", FLAG_RUN},
    {"resume", FLAG_RUN},
    {"shard", FLAG_RUN},
    {"train-each", FLAG_RUN},
};

FlagClass flag_class(const char *name)
{
    for (size_t i = 0; i < sizeof CLASSES / sizeof *CLASSES; i++)
        if (strcmp(CLASSES[i].name, name) == 0) return CLASSES[i].c;
    const ModelOption *o; /* a model's options shape the model */
    for (int k = 0; (o = model_registry_option(k)); k++)
        if (strcmp(o->name, name) == 0) return FLAG_DYNAMICS;
    return FLAG_UNCLASSED;
}

const char *flag_class_name(FlagClass c)
{
    switch (c) {
    case FLAG_DYNAMICS:
        return "dynamics";
    case FLAG_PRICE:
        return "price";
    case FLAG_RUN:
        return "run";
    case FLAG_UNCLASSED:
        break;
    }
    return "unclassed";
}

/* Flags a sweep may not vary: the data is loaded once, and these shape the sweep itself. */
static const char *const NOT_SWEPT[] = {
    "seed",           "data-dir", "train-samples", "test-samples",  "out",
    "threads",        "shard",    "platform",      "hosts",         "policies",
    "jobs",           "seeds",    "resume",        "quiet",         "no-plots",
    "stop-at-target", "nesterov", "nic-per-gpu",   "replay-engine", "record-traces"};

int flag_scenarios(const CliOpt *o, const char *name, const char *value)
{
    int listy = value && (strchr(value, ',') || strstr(value, ".."));
    int sweepable = o && value && o->kind != CLI_INT_LIST && o->kind != CLI_DOUBLE_LIST;
    for (size_t i = 0; sweepable && i < sizeof NOT_SWEPT / sizeof *NOT_SWEPT; i++)
        sweepable = strcmp(NOT_SWEPT[i], name) != 0;
    if (!listy || !sweepable ||
        (o->kind == CLI_STRING && strcmp(name, "compressor") != 0 &&
         strcmp(name, "workload") != 0 && strcmp(name, "schedule") != 0 &&
         strcmp(name, "costs") != 0 && strcmp(name, "horovod") != 0))
        return 0;
    if (strstr(value, "..") && (o->kind == CLI_INT || o->kind == CLI_LONG)) return 2;
    char items[2][SPEC_MAX_TEXT];
    int n = 0;
    BwError ignore;
    /* a list too long or malformed is several values, which sweep reports on */
    return spec_split_list(value, "", items, 2, &n, &ignore) == BW_OK ? n : 2;
}

static const struct {
    const char *name;
    FlagFile role;
} FILES[] = {
    {"platform", FLAG_FILE_IN},
    {"trace", FLAG_FILE_IN},
    {"costs", FLAG_FILE_IN_NAMED},
    {"workload", FLAG_FILE_IN_NAMED},
    {"policy", FLAG_FILE_IN_SPECS},
    {"policies", FLAG_FILE_IN_SPECS},
    {"schedule", FLAG_FILE_IN_SPECS},
    {"timeline", FLAG_FILE_OUT},
    {"record-trace", FLAG_FILE_OUT},
    {"out", FLAG_FILE_OUT_DIR},
    {"traces", FLAG_FILE_IN_LIST},
    {"compressor", FLAG_FILE_NONE}, /* built-ins only (bellows compressors) */
    {"hosts", FLAG_FILE_NONE},
    {"timeline-steps", FLAG_FILE_NONE},
    {"shard", FLAG_FILE_NONE},
    {"set", FLAG_FILE_NONE},
    {"data-dir", FLAG_FILE_NONE}, /* a folder only read, never written */
    {"nccl-sockets", FLAG_FILE_NONE},
    {"zeropp", FLAG_FILE_NONE},
    {"fsdp-unit", FLAG_FILE_NONE},
    {"cost-band", FLAG_FILE_NONE},
    {"horovod", FLAG_FILE_NONE}, /* a release, or off */
};

FlagFile flag_file(const char *name)
{
    for (size_t i = 0; i < sizeof FILES / sizeof *FILES; i++)
        if (strcmp(FILES[i].name, name) == 0) return FILES[i].role;
    return FLAG_FILE_UNCLASSED;
}
