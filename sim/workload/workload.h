/* workload.h: workload profiles, the costs of a real model (ResNet-50, BERT, ...) that a run
 * charges instead of its small model's. A profile is the real model's layers in forward order,
 * each with its forward and backward compute per sample and its tensors (name, shape); each real
 * matrix tensor follows one matrix layer of the small model, whose level the policy decides.
 * The small model keeps supplying the gradients, the accuracy and every signal a policy reads;
 * the bytes and the simulated time are the real model's.
 *
 * Built-in profiles (bellows workloads) are generated from the models' own definitions by
 * sim/workload/gen_profiles.py; a user's profile is a JSON file of the same form (docs in
 * sim/workload/README.md), or a gradient trace whose header carries per-layer times. */
#ifndef BELLOWS_WORKLOAD_H
#define BELLOWS_WORKLOAD_H

#include <stddef.h>
#include <stdio.h>

#include "model.h"
#include "status.h"

#define WORKLOAD_MAX_DIMS 4
/* A profile's largest figures (a layer's flops per sample, its measured seconds per step, the
 * parameters in all): beyond any real model, and small enough that a step's simulated time and
 * bytes stay representable (cluster.h's CLUSTER_MAX_SIM_S); the loader refuses the rest. */
#define WORKLOAD_MAX_LAYER_FLOPS 1e15
#define WORKLOAD_MAX_LAYER_S     1e4
#define WORKLOAD_MAX_PARAMS      1e12

typedef struct {
    char name[64];
    int layer;                    /* index into Workload.layers */
    int ndim;                     /* 1: a vector (bias, norm scale); >= 2: a matrix */
    int shape[WORKLOAD_MAX_DIMS]; /* as the real framework has it */
    int rows, cols;               /* the matrix view: rows = shape[0], cols = the rest */
    size_t numel;
    char follows[32]; /* the small-model layer the file names; "" by depth */
} WorkloadTensor;

typedef struct {
    char name[64];
    /* Per sample, in flops (2 per multiply-add) ... */
    double fwd_flops, bwd_flops;
    /* ... or measured: seconds per step at Workload.measured_batch on measured_gpu (then the
     * flops above are 0 and these >= 0). */
    double fwd_s, bwd_s;
    int first_tensor, n_tensors; /* its tensors: tensors[first_tensor .. +n_tensors) */
} WorkloadLayer;

typedef struct {
    char name[64];
    char spec[256];   /* what workload_load was given (a built-in's name or a file), for errors */
    char source[512]; /* where the shapes and the compute come from */
    WorkloadLayer *layers;
    int n_layers;
    WorkloadTensor *tensors; /* all layers' tensors, forward order */
    int n_tensors;
    size_t n_params;
    /* measured profiles: the batch and the GPU (a cluster_gpu_find name) the times were taken
     * at; 0 and "" for flops profiles */
    int measured_batch;
    char measured_gpu[16];
    char measured_precision[8]; /* fp32, tf32 or bf16 */
} Workload;

/* A built-in profile by name, or a JSON profile file (a path: contains '/' or ends in .json),
 * or a gradient trace with per-layer times (.jsonl or .jsonl.gz). flag names the CLI flag for
 * errors (e.g. "--workload"); a bad file is a usage error naming the file and the field; an
 * unknown name lists the known ones. */
int workload_load(const char *spec, const char *flag, Workload **out, BwError *err);
void workload_free(Workload *w); /* NULL is a no-op */

/* A gradient trace's header with per-layer times ("timing", traces/README.md) as a measured
 * profile (from_trace.c): each tensor with a time above 0 starts a layer, named after its module,
 * and the zero-time tensors after it join that layer; measured_batch is the trace's batch and
 * measured_gpu "" (the times are taken as measured: a CPU's are not rescaled). A trace without
 * "timing", or whose times are all 0, is a usage error naming flag and the file. */
int workload_from_trace(const char *path, const char *flag, Workload **out, BwError *err);

/* The small model's own costs as a profile: one layer per weight matrix (with the vectors that
 * follow it; vectors before the first matrix join its layer), its flops split in proportion to
 * the matrices' sizes, a third forward and two thirds backward; every tensor follows itself. For
 * --overlap ddp without --workload. */
/* The same with a measured step instead of flops: step_s seconds of one worker's step at batch,
 * split the same way (a replayed trace's compute_s_per_step; taken as measured, as a trace's
 * per-layer times are). */
int workload_from_model_times(const LayerView *layers, int n_layers, double step_s, int batch,
                              Workload **out, BwError *err);
int workload_from_model(const LayerView *layers, int n_layers, double flops_per_sample,
                        Workload **out, BwError *err);

/* Which small-model layer each real tensor follows: follows[t] for t < w->n_tensors is an index
 * into small[0..n_small), always a matrix layer (ndim 2) for a real matrix tensor, -1 for a real
 * vector (sent dense). A tensor naming its layer ("follows") takes that one; the others are
 * spread by relative depth: the j-th of J real matrices follows the floor(j * M / J)-th of the M
 * small matrix layers. Usage errors (naming flag): an unknown name, a named layer that is not a
 * matrix, or more small matrix layers than real ones. */
int workload_map(const Workload *w, const LayerView *small, int n_small, const char *flag,
                 int *follows, BwError *err);

/* Per-layer compute of one step of b samples per worker on a GPU of `speed` flop/s (the
 * cluster's sustained rate), as the flops to execute on that host: flops profiles give
 * flops x b; measured ones seconds x b / measured_batch x (the measured GPU's peak at the
 * profile's precision over the simulated GPU's peak at the run's precision) x speed.
 * peak_ratio is that ratio (1 for flops profiles; the caller computes it from the cluster). */
double workload_fwd_flops(const Workload *w, int layer, int b, double speed, double peak_ratio);
double workload_bwd_flops(const Workload *w, int layer, int b, double speed, double peak_ratio);
double workload_flops_per_sample(const Workload *w); /* fwd + bwd; 0 for measured profiles */

/* The tensors as layer views (offsets packed in order) for the compressors' plans on the real
 * shapes; views[n_tensors]. */
void workload_views(const Workload *w, LayerView *views);

/* The `bellows workloads` listing: one line each, starting with the name, then parameters,
 * tensors, flops per sample (forward + backward) and the source. */
void workload_print_list(FILE *out);
const char *const *workload_builtin_names(void); /* NULL-terminated */

#endif
