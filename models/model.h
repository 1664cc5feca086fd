/* model.h: the model interface. A model owns one flat parameter buffer and one gradient buffer
 * of the same layout (as llm.c does), and a table of layer views that name the tensors inside
 * it. Compressors and parameter averaging work on the views, never on model internals.
 * A weight is a rows x cols matrix (a conv kernel is [out, k*k*in]); a bias is 1-D (cols = 1).
 * Models are plug-ins: a const ModelOps with a name and a help line, registered in model.c. */
#ifndef BELLOWS_MODEL_H
#define BELLOWS_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"

#define MODEL_MAX_LAYERS 32
#define MODEL_MAX_HIDDEN 8

typedef struct {
    int in_channels, in_rows, in_cols; /* input image shape */
    int classes;
    int hidden[MODEL_MAX_HIDDEN]; /* mlp: hidden layer widths */
    int n_hidden;
    int channels[2]; /* cnn: output channels of the two conv blocks */
    int kernel;      /* cnn: square kernel side (odd) */
} ModelConfig;

/* The defaults for a Fashion-MNIST-shaped input: mlp 784-128-10, cnn 3x3 kernels, 16 and 32
 * channels. */
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

typedef struct {
    const char *name;
    const char *help;
    /* Checks cfg, fills the layer table and n_params. Parameters are not yet allocated. */
    int (*setup)(Model *m, BwError *err);
    /* logits [n, classes] for inputs x [n, dim]; returns a pointer into the model's workspace,
     * valid until the next call. Keeps what the backward pass needs. */
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
    LayerView layers[MODEL_MAX_LAYERS];
    void *impl;     /* the model's activations and scratch */
    float *dlogits; /* [cap, classes] */
    int dlogits_cap;
};

const ModelOps *model_find(const char *name);
/* The registered models, NULL-terminated. */
const ModelOps *const *model_registry(void);

/* Builds a model and initialises its parameters deterministically from seed: every weight
 * matrix U(-1/sqrt(cols), 1/sqrt(cols)) and every bias with the fan-in of the matrix before
 * it, as PyTorch's nn.Linear and nn.Conv2d defaults do. */
int model_create(const ModelOps *ops, const ModelConfig *cfg, unsigned long seed, Model **out,
                 BwError *err);
void model_free(Model *m); /* NULL is a no-op */

/* Mean cross-entropy loss of the batch; m->grads receives its gradient (overwritten). */
double model_forward_backward(Model *m, const float *x, const uint8_t *y, int n);
/* Same, and also returns the number of correct predictions in *correct (may be NULL). */
double model_forward_backward_count(Model *m, const float *x, const uint8_t *y, int n,
                                    int *correct);
static inline double model_flops_per_sample(const Model *m)
{
    return m->ops->flops_per_sample(m);
}

/* Mean loss and accuracy over n samples, in chunks (no gradients). BW_ERUNTIME when out of
 * memory. */
int model_evaluate(Model *m, const float *x, const uint8_t *y, int n, int dim, double *loss,
                   double *accuracy, BwError *err);

/* Helpers for model implementations: appends a view to the table. */
void model_add_layer(Model *m, const char *name, int rows, int cols, int ndim);
/* Grows a float buffer to at least count elements; returns 0 on out of memory. */
int model_reserve(float **buf, size_t *cap, size_t count);

/* A model that is only a layer table, for a run that knows a model by its tensors' shapes (a
 * replayed trace): layers[0..n_layers) in order (name, rows, cols and ndim; offsets are laid out
 * anew), flops_per_sample as its cost of one sample, and parameters initialised from seed as
 * model_create does. It has no forward or backward pass: only its layer table, buffers,
 * model_flops_per_sample and model_free apply. BW_EUSAGE beyond MODEL_MAX_LAYERS layers. */
int model_create_from_layers(const LayerView *layers, int n_layers, double flops_per_sample,
                             unsigned long seed, Model **out, BwError *err);

#endif
