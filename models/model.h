/* model.h: the model interface. A model owns one flat parameter buffer and one gradient buffer
 * of the same layout (as llm.c does), and a table of layer views that name the tensors inside
 * it. Compressors and parameter averaging work on the views, never on model internals.
 * A weight is a rows x cols matrix (a conv kernel is [out, k*k*in]); a bias is 1-D (cols = 1).
 * Models are plug-ins: a const ModelOps with a name, a help line and its own options (the
 * command line's flags and summary.json's keys come from them), listed in models.def. */
#ifndef BELLOWS_MODEL_H
#define BELLOWS_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"

#define MODEL_MAX_OPTIONS     4 /* options per model */
#define MODEL_OPTION_MAX_INTS 8 /* integers per option value */

/* One option of a model: a list of integers, given on the command line as --NAME 1,2,3 (or
 * --NAME 1 when it takes exactly one). Declared in the model's ModelOps; the CLI makes the flag,
 * and the generic checks (count and range) hold before the model's setup runs. */
typedef struct {
    const char *name;         /* the flag without "--", and the key in summary.json */
    const char *def;          /* the default as typed, e.g. "16,32" */
    const char *unit;         /* shown in --help after the value; may be NULL */
    const char *help;         /* one line for --help; the CLI puts the models' names before it */
    int min, max;             /* range of every integer */
    int min_count, max_count; /* how many integers, 1 <= min_count <= max_count */
    /* 1: written to every run's summary.json (by its default when the run's model does not
     * have the option); 0: not written. Kept per option so summaries stay as they were. */
    int summary;
} ModelOption;

typedef struct {
    int n; /* 0: the option's default */
    int v[MODEL_OPTION_MAX_INTS];
} ModelInts;

typedef struct {
    int in_channels, in_rows, in_cols; /* input image shape */
    int classes;
    /* The values of the options of the model in `ops`, in the order of its table; model_create
     * fills the empty ones with their defaults. NULL ops: no option set yet. */
    const struct ModelOps *ops;
    ModelInts opt[MODEL_MAX_OPTIONS];
} ModelConfig;

/* A Fashion-MNIST-shaped input (1x28x28, 10 classes) and every option at its default, for any
 * model. */
ModelConfig model_config_default(void);

typedef struct {
    char name[32];
    size_t offset; /* into params / grads, in floats */
    int rows, cols;
    int ndim; /* 2: matrix, 1: vector (cols == 1) */
} LayerView;

static inline size_t layer_size(const LayerView *v)
{
    return (size_t)v->rows * (size_t)v->cols;
}

typedef struct Model Model;

typedef struct ModelOps {
    const char *name;
    const char *help;
    const ModelOption *options; /* the model's own options; may be NULL */
    int n_options;
    /* Optional: the rules on cfg that only the model knows (an odd kernel, two channel counts),
     * with errors that name the flag. Runs before the generic checks of the options' counts and
     * ranges, so its messages win; cfg's options are all filled. Allocates nothing. */
    int (*check)(const ModelConfig *cfg, BwError *err);
    /* Fills the layer table and n_params (and n_state, if it keeps any) from a checked m->cfg.
     * Parameters and state are not yet allocated. */
    int (*setup)(Model *m, BwError *err);
    /* Optional: runs after the default initialisation of the parameters (model_create's) and
     * the zeroing of the state, to set what does not follow it (batch norm's gamma = 1, beta = 0
     * and running variance = 1, as PyTorch). */
    void (*init)(Model *m);
    /* logits [n, classes] for inputs x [n, dim]; returns a pointer into the model's workspace,
     * valid until the next call. Keeps what the backward pass needs. m->train says the mode. */
    const float *(*forward)(Model *m, const float *x, int n);
    /* After forward on the same x: fills m->grads from dlogits [n, classes]. */
    void (*backward)(Model *m, const float *x, const float *dlogits, int n);
    /* Multiply-add flops of one sample's forward and backward (2 per multiply-add). */
    double (*flops_per_sample)(const Model *m);
    void (*free_impl)(Model *m);
} ModelOps;

struct Model {
    const ModelOps *ops;
    ModelConfig cfg;
    size_t n_params;
    float *params; /* [n_params] */
    float *grads;  /* [n_params], same layout */
    int n_layers;
    LayerView *layers; /* [n_layers], grown by model_add_layer; any number of layers */
    int layers_cap;    /* entries allocated; -1 once an append ran out of memory */
    /* Buffers that are not parameters (batch norm's running statistics; PyTorch's "buffers"):
     * not in params or grads, so compressors and parameter averaging never touch them; each
     * replica keeps its own. n_state is 0 for most models. */
    size_t n_state;
    float *state; /* [n_state] */
    /* The mode of the next forward: 1 in model_forward_backward (training: batch norm uses
     * the batch's statistics and updates the running ones), 0 otherwise (prediction,
     * model_evaluate: the running statistics). Only models with batch norm read it. */
    int train;
    void *impl;     /* the model's activations and scratch */
    float *dlogits; /* [cap, classes] */
    int dlogits_cap;
    unsigned borrowed; /* MODEL_BORROWS_* bits: buffers lent by their owner (model_borrow) */
};

enum { MODEL_BORROWS_PARAMS = 1u, MODEL_BORROWS_GRADS = 2u, MODEL_BORROWS_STATE = 4u };

const ModelOps *model_find(const char *name);
/* The registered models (models.def), NULL-terminated. */
const ModelOps *const *model_registry(void);
/* The registry's options by name, each once, in registry order (NULL past the end). A name
 * that several models declare is described by the first; the others must agree on its range,
 * counts and default (asserted). */
const ModelOption *model_registry_option(int i);

/* ops's option called name: its index in ops->options, or -1. */
int model_option_index(const ModelOps *ops, const char *name);
/* o's default, parsed. */
ModelInts model_option_default(const ModelOption *o);
/* Sets ops's option called name (which ops must have) in c to v[0..n); binds c to ops. */
void model_config_set(ModelConfig *c, const ModelOps *ops, const char *name, int n, const int *v);
/* The values of ops's option called name in c (its default when c leaves it empty) into *out;
 * returns 0, leaving *out alone, when ops (may be NULL) has no such option. */
int model_config_get(const ModelConfig *c, const ModelOps *ops, const char *name, ModelInts *out);
/* Checks cfg for ops: the model's own rules, then every option's count and range. BW_EUSAGE
 * with a message naming the flag. model_create runs it; the CLI runs it as soon as the flags
 * are parsed, so a bad value fails before any data is loaded. */
int model_check(const ModelOps *ops, const ModelConfig *cfg, BwError *err);

/* Builds a model and initialises its parameters deterministically from seed: every weight
 * matrix U(-1/sqrt(cols), 1/sqrt(cols)) and every bias with the fan-in of the matrix before
 * it, as PyTorch's nn.Linear and nn.Conv2d defaults do. */
int model_create(const ModelOps *ops, const ModelConfig *cfg, unsigned long seed, Model **out,
                 BwError *err);
void model_free(Model *m); /* NULL is a no-op; a borrowed buffer is left to its owner */

/* Points m's parameters, gradients and state at buffers of the same sizes that another owner
 * keeps (each non-NULL argument; NULL leaves that buffer as it is), freeing m's own first.
 * model_free leaves borrowed buffers alone, and a later model_borrow only points m elsewhere.
 * For replicas that share one set of parameters (a simulated run in gradient mode, whose
 * replicas are bit-identical), and for a model kept as scratch (its activations) that computes
 * in turn for models that own their buffers. */
void model_borrow(Model *m, float *params, float *grads, float *state);
/* A model of owner's kind and configuration (a registered model: it has a setup) that borrows
 * owner's parameters, with its own layer table, activations, gradients (zero) and a copy of
 * owner's state: at the start of training, a replica of owner that shares its parameters. Its
 * own parameters are never allocated, so a run of many such replicas never touches the memory
 * they would take. BW_ERUNTIME when out of memory. */
int model_create_sharing(Model *owner, Model **out, BwError *err);
/* The same with its own parameters, a copy of owner's. Of an untrained owner: the replica
 * model_create would make from owner's seed, without drawing the parameters again. */
int model_create_copy(Model *owner, Model **out, BwError *err);

/* Mean cross-entropy loss of the batch, in train mode; m->grads receives its gradient
 * (overwritten). */
double model_forward_backward(Model *m, const float *x, const uint8_t *y, int n);
/* Same, and also returns the number of correct predictions in *correct (may be NULL). */
double model_forward_backward_count(Model *m, const float *x, const uint8_t *y, int n,
                                    int *correct);
static inline double model_flops_per_sample(const Model *m)
{
    return m->ops->flops_per_sample(m);
}

/* Mean loss and accuracy over n samples, in chunks of MODEL_EVAL_CHUNK, in prediction mode (no
 * gradients): the chunks' model_evaluate_part, their sums added in order. BW_ERUNTIME when out
 * of memory. */
enum { MODEL_EVAL_CHUNK = 500 };
int model_evaluate(Model *m, const float *x, const uint8_t *y, int n, int dim, double *loss,
                   double *accuracy, BwError *err);
/* One chunk of k samples: its cross-entropy summed (the mean times k) and its correct
 * predictions. Chunks evaluated on several models sharing the parameters (and state), then
 * added in order, give model_evaluate's bits. BW_ERUNTIME when out of memory (no message). */
int model_evaluate_part(Model *m, const float *x, const uint8_t *y, int k, double *xent_sum,
                        long *correct);

/* Helpers for model implementations: appends a view to the table, growing it (setup needs no
 * check: out of memory here makes model_create fail). */
void model_add_layer(Model *m, const char *name, int rows, int cols, int ndim);
/* Grows a float buffer to at least count elements; returns 0 on out of memory. */
int model_reserve(float **buf, size_t *cap, size_t count);

/* A model that is only a layer table, for a run that knows a model by its tensors' shapes (a
 * replayed trace): layers[0..n_layers) in order (name, rows, cols and ndim; offsets are laid out
 * anew), flops_per_sample as its cost of one sample, and parameters initialised from seed as
 * model_create does. It has no forward or backward pass: only its layer table, buffers,
 * model_flops_per_sample and model_free apply. BW_EUSAGE for a negative count. */
int model_create_from_layers(const LayerView *layers, int n_layers, double flops_per_sample,
                             unsigned long seed, Model **out, BwError *err);

#endif
