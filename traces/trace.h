/* trace.h: gradient traces, the record of a training run that a policy needs to decide: one
 * JSON object per line (JSON Lines, gzip when the name ends in .gz), read with jansson.
 *   line 1   header: {"format": "bellows-trace", "version": 1, "source", "model", "dataset",
 *            "workers", "batch" (per worker), "flops_per_sample" or "compute_s_per_step",
 *            "epochs", "steps_per_epoch", "lr": {"schedule", "base"}, "layers": [{"name",
 *            "rows", "cols"}, ...] (any number), optional "timing": {"device", "steps",
 *            "fwd_s": [per layer], "bwd_s": [per layer]} (measured seconds per step)}
 *   steps    {"type": "step", "step", "epoch", "epoch_end", "batch" (global), "lr", "loss",
 *            "grad_norms": [per layer, mean over workers], optional "grad_norms_rank0",
 *            "epoch_norms" (at an epoch's end), "param_variance" (after an averaging),
 *            "stopped" (on the last record of a run that stopped before its "epochs"),
 *            "decision" (a fingerprint of the policy's decision: 16 hex digits)}
 *   evals    {"type": "eval", "step", "test_accuracy", optional "test_loss"}
 * Steps are numbered 0, 1, 2, ... without gaps; epochs never go back; evals come after the
 * step they follow. A header with "epochs" and "steps_per_epoch" promises the run's length: a
 * trace with fewer steps that neither ends the last epoch nor says it "stopped" is refused as
 * truncated, as is a gzip stream that ends early. The reader checks all of it and names the file,
 * line and column of the first thing wrong. traces/README.md documents the format for users. */
#ifndef BELLOWS_TRACE_H
#define BELLOWS_TRACE_H

#include <stddef.h>

#include "status.h"

#define TRACE_FORMAT  "bellows-trace"
#define TRACE_VERSION 1 /* what bellows writes (bellows run --record-trace) */
/* the newest version read: 2 adds a policy's own trace (traces/pytorch/train_policy.py): the
 * header's "policy" object and each step's decision ("levels" or "average" and "period"),
 * "bytes" and "state"; a version-1 trace reads as before */
#define TRACE_VERSION_MAX 2
/* The largest figures a trace may give (the parameters of its layers in all; a layer's measured
 * seconds in "timing"): beyond any real model, so that what a replay allocates and simulates
 * stays representable; the reader refuses the rest. */
#define TRACE_MAX_PARAMS  1e12
#define TRACE_MAX_LAYER_S 1e4
/* a step's norm arrays, each [n_layers]: grad_norms, grad_norms_rank0, epoch_norms,
 * epoch_norms_rank0 (trace_read keeps them in one block per step) */
#define TRACE_NORM_ARRAYS 5 /* and a version-2 step's "levels" */

typedef struct {
    char name[64];
    int rows, cols;
    /* The header's optional "timing" (has_timing): measured wall-clock seconds of one step at
     * the trace's batch, forward and backward, of the module this tensor is the first parameter
     * of (0 for a module's other tensors); 0 without timing. */
    double fwd_s, bwd_s;
} TraceLayer;

typedef struct {
    char source[128], model[64], dataset[64];
    int workers, batch;        /* batch: per worker */
    double flops_per_sample;   /* 0 when compute_s_per_step is given instead */
    double compute_s_per_step; /* measured seconds of one worker's step; 0 if not given */
    int epochs;
    long steps_per_epoch;
    char lr_schedule[32];
    double lr_base;
    int n_layers;
    TraceLayer *layers;     /* [n_layers]; trace_read's belong to the Trace */
    int has_timing;         /* the layers' fwd_s and bwd_s were measured */
    char timing_device[64]; /* where ("cpu", "cuda:0 NVIDIA A100-SXM4-40GB"); "" without */
    int timing_steps;       /* steps the times are averaged over; 0 if not said */
    int version;            /* 1 or 2 */
    /* version 2, the header's "policy" object (has_policy): the policy that decided in the
     * recorded run (its spec, normalised), its mode, the compressor spec, the seed, and the
     * training and test samples (0: not said) */
    int has_policy, policy_periodic;
    char policy_spec[256], policy_compressor[256];
    long policy_seed, train_samples, test_samples;
    long line; /* the header's line in its file, for messages about its fields */
} TraceHeader;

typedef struct {
    long step;
    int epoch, epoch_end;
    int batch; /* global */
    double lr, loss;
    /* [n_layers] each; trace_read's point into its Trace, a writer's caller owns its own */
    double *grad_norms;
    int has_rank0, has_epoch_norms, has_epoch_rank0, has_variance;
    double *grad_norms_rank0;  /* valid when has_rank0 */
    double *epoch_norms;       /* valid when has_epoch_norms */
    double *epoch_norms_rank0; /* rank 0's own epoch norms, valid when has_epoch_rank0 */
    double param_variance;
    char stopped[16]; /* the run's last record when it stopped early: "diverged",
                         "reached_target"; "" otherwise */
    /* a fingerprint of the policy's decision at this step (16 hex digits: its levels, period
     * and batch), recorded by a sweep's training runs so that their priced twins can check that
     * a policy declared price-blind decides the same at another price; "" when absent */
    char decision[17];
    /* version 2: the recorded policy's decision at this step (has_decision): "levels" (gradient
     * mode, [n_layers], else NULL) or "average" and "period" (periodic), the payload "bytes"
     * one worker sent for it, and the policy's described "state" ("" if absent) */
    int has_decision, average, period;
    double *levels;
    double bytes;
    char state[48];
    long line; /* the step's line in its file (trace_read's), for messages about its fields */
} TraceStep;

typedef struct {
    long step;                       /* steps done when evaluated */
    double test_accuracy, test_loss; /* test_loss NAN if absent */
} TraceEval;

typedef struct {
    TraceHeader h;
    TraceStep *steps;
    long n_steps;
    TraceEval *evals;
    long n_evals;
    double *norms;   /* the steps' norm arrays, 3 x n_layers per step, in one block */
    char path[1024]; /* as given to trace_read, for messages */
} Trace;

/* Reads and checks a whole trace; usage errors (BW_EUSAGE) name "FILE:LINE:COLUMN". */
int trace_read(const char *path, Trace *t, BwError *err);
/* The same, flag naming the CLI flag when the file cannot be opened (trace_read's: --trace). */
int trace_read_flag(const char *path, const char *flag, Trace *t, BwError *err);
void trace_free(Trace *t); /* safe on a zeroed or freed Trace */
/* Reads and checks only the header (line 1), for a caller that needs no steps (a workload
 * profile from a trace's timing); flag names the CLI flag when the file cannot be opened.
 * h->layers is allocated: trace_header_free releases it. */
int trace_read_header(const char *path, const char *flag, TraceHeader *h, BwError *err);
void trace_header_free(TraceHeader *h); /* safe on a zeroed or freed header */

/* Writing: the file appears complete under its name at trace_writer_close, or not at all. */
typedef struct TraceWriter TraceWriter;
int trace_writer_open(const char *path, const TraceHeader *h, TraceWriter **out, BwError *err);
void trace_write_step(TraceWriter *w, const TraceStep *s);
void trace_write_eval(TraceWriter *w, const TraceEval *e);
/* Completes and renames the file; on any earlier write error, removes it and fails. */
int trace_writer_close(TraceWriter *w, BwError *err);
void trace_writer_abort(TraceWriter *w); /* NULL is a no-op */

#endif
