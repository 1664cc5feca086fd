/* fuzz_workload.c: libFuzzer harness for the workload-profile reader (sim/workload/
 * workload_json.c). Each input is a profile's JSON text, parsed as `--workload FILE.json` would
 * parse it. Besides no crash, leak or undefined behaviour, the properties a profile the reader
 * accepts must have: at least one layer; every layer's compute finite and within the format's
 * bounds (what keeps a simulated step representable); every tensor a shape of positive
 * dimensions whose rows x cols is its element count, belonging to a layer; the parameters adding
 * up, within WORKLOAD_MAX_PARAMS; and mapping it onto a small model's layers (the mlp's and a
 * cnn's shapes) either works, naming a layer for every matrix, or is refused. A refusal is one
 * line (no newline), a usage error or out of memory. Built and run by tests/fuzz/run.sh. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workload_impl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The small models' matrix and vector layers a profile is mapped onto (mlp; a cnn). */
static const LayerView MLP[] = {{"fc1", 0, 128, 784, 2},
                                {"fc1.b", 0, 128, 1, 1},
                                {"out", 0, 10, 128, 2},
                                {"out.b", 0, 10, 1, 1}};
static const LayerView CNN[] = {
    {"conv1", 0, 16, 9, 2}, {"conv2", 0, 32, 144, 2}, {"fc", 0, 10, 1568, 2}};

static void check_profile(const Workload *w)
{
    if (w->n_layers < 1) abort();
    size_t params = 0;
    for (int l = 0; l < w->n_layers; l++) {
        const WorkloadLayer *L = &w->layers[l];
        const double c[] = {L->fwd_flops, L->bwd_flops, L->fwd_s, L->bwd_s};
        const double max[] = {WORKLOAD_MAX_LAYER_FLOPS, WORKLOAD_MAX_LAYER_FLOPS,
                              WORKLOAD_MAX_LAYER_S, WORKLOAD_MAX_LAYER_S};
        for (int k = 0; k < 4; k++)
            if (!isfinite(c[k]) || c[k] < 0 || c[k] > max[k]) abort();
    }
    for (int t = 0; t < w->n_tensors; t++) {
        const WorkloadTensor *x = &w->tensors[t];
        if (x->ndim < 1 || x->ndim > WORKLOAD_MAX_DIMS || x->rows < 1 || x->cols < 1) abort();
        if ((size_t)x->rows * (size_t)x->cols != x->numel) abort();
        if (x->layer < 0 || x->layer >= w->n_layers) abort();
        params += x->numel;
    }
    if (params != w->n_params || (double)params > WORKLOAD_MAX_PARAMS) abort();
    if (w->measured_batch < 0) abort();
}

/* A refusal is one line, naming the flag. */
static void check_refusal(int rc, const BwError *err)
{
    if (rc != BW_EUSAGE && rc != BW_ERUNTIME) abort();
    if (strchr(err->msg, '\n') || strncmp(err->msg, "--workload", 10) != 0) abort();
}

static void check_map(const Workload *w, const LayerView *small, int n_small)
{
    int *follows = malloc(sizeof(int) * (size_t)(w->n_tensors ? w->n_tensors : 1));
    if (!follows) return;
    BwError err = {{0}};
    int rc = workload_map(w, small, n_small, "--workload", follows, &err);
    if (rc) {
        check_refusal(rc, &err);
    } else {
        for (int t = 0; t < w->n_tensors; t++) /* a matrix follows a small matrix; a vector none */
            if (follows[t] < -1 || follows[t] >= n_small ||
                (follows[t] >= 0 && small[follows[t]].ndim != 2))
                abort();
    }
    free(follows);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    Workload *w = NULL;
    BwError err = {{0}};
    int rc = workload_parse(NULL, (const char *)data, size, "--workload", "fuzz.json", &w, &err);
    if (rc) {
        check_refusal(rc, &err);
        if (w) abort(); /* a complete profile or none */
        return 0;
    }
    check_profile(w);
    check_map(w, MLP, 4);
    check_map(w, CNN, 3);
    workload_free(w);
    return 0;
}
