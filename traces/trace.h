/* trace.h: gradient traces, the record of a training run that a policy needs to decide: one
 * JSON object per line (JSON Lines, gzip when the name ends in .gz), read with jansson.
 *   line 1   header: {"format": "bellows-trace", "version": 1, "source", "model", "dataset",
 *            "workers", "batch" (per worker), "flops_per_sample" or "compute_s_per_step",
 *            "epochs", "steps_per_epoch", "lr": {"schedule", "base"}, "layers": [{"name",
 *            "rows", "cols"}, ...]}
 *   steps    {"type": "step", "step", "epoch", "epoch_end", "batch" (global), "lr", "loss",
 *            "grad_norms": [per layer, mean over workers], optional "grad_norms_rank0",
 *            "epoch_norms" (at an epoch's end), "param_variance" (after an averaging),
 *            "stopped" (on the last record of a run that stopped before its "epochs")}
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

#define TRACE_FORMAT     "bellows-trace"
#define TRACE_VERSION    1
#define TRACE_MAX_LAYERS 32

typedef struct {
    char name[64];
    int rows, cols;
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
    TraceLayer layers[TRACE_MAX_LAYERS];
} TraceHeader;

typedef struct {
    long step;
    int epoch, epoch_end;
    int batch; /* global */
    double lr, loss;
    double grad_norms[TRACE_MAX_LAYERS];
    int has_rank0, has_epoch_norms, has_variance;
    double grad_norms_rank0[TRACE_MAX_LAYERS];
    double epoch_norms[TRACE_MAX_LAYERS];
    double param_variance;
    char stopped[16]; /* the run's last record when it stopped early: "diverged",
                         "reached_target"; "" otherwise */
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
    char path[1024]; /* as given to trace_read, for messages */
} Trace;

/* Reads and checks a whole trace; usage errors (BW_EUSAGE) name "FILE:LINE:COLUMN". */
int trace_read(const char *path, Trace *t, BwError *err);
void trace_free(Trace *t); /* safe on a zeroed or freed Trace */

/* Writing: the file appears complete under its name at trace_writer_close, or not at all. */
typedef struct TraceWriter TraceWriter;
int trace_writer_open(const char *path, const TraceHeader *h, TraceWriter **out, BwError *err);
void trace_write_step(TraceWriter *w, const TraceStep *s);
void trace_write_eval(TraceWriter *w, const TraceEval *e);
/* Completes and renames the file; on any earlier write error, removes it and fails. */
int trace_writer_close(TraceWriter *w, BwError *err);
void trace_writer_abort(TraceWriter *w); /* NULL is a no-op */

#endif
