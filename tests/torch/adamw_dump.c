/* adamw_dump.c: trains bellows' MLP (784-32-10, seed 3) with AdamW for 100 steps on synthetic
 * batches and writes, for tests/torch/adamw_torch.py, one binary file: int32 n_params, steps,
 * batch, dim; float32 initial parameters [n_params]; per step float32 x [batch * dim] and
 * uint8 y [batch]; float32 final parameters [n_params]; float64 lr, weight decay. The script
 * trains torch.optim.AdamW on the same model, data and initial weights and compares.
 *   adamw_dump OUT */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "model.h"
#include "optim.h"
#include "splitmix.h"

enum { STEPS = 100, BATCH = 16 };

static int put(FILE *f, const void *p, size_t size, size_t n)
{
    return fwrite(p, size, n, f) == n ? 0 : -1;
}

static int dump(FILE *f, Model *m, int dim)
{
    const double lr = 1e-3, wd = 1e-2;
    const int32_t head[4] = {(int32_t)m->n_params, STEPS, BATCH, dim};
    float *x = malloc(sizeof(float) * BATCH * (size_t)dim);
    uint8_t y[BATCH];
    Sgd opt;
    if (!x ||
        sgd_init(&opt, m->n_params, (SgdConfig){.weight_decay = wd, .kind = OPT_ADAMW}, NULL)) {
        free(x);
        return -1;
    }
    int rc = put(f, head, sizeof(int32_t), 4) || put(f, m->params, sizeof(float), m->n_params);
    uint64_t s = 12345;
    for (int step = 0; step < STEPS && !rc; step++) {
        for (int i = 0; i < BATCH * dim; i++) x[i] = (float)(splitmix64(s++) >> 40) / 16777216.0f;
        for (int i = 0; i < BATCH; i++) y[i] = (uint8_t)(splitmix64(s++) % 10);
        model_forward_backward(m, x, y, BATCH);
        sgd_step(&opt, m->params, m->grads, lr);
        rc = put(f, x, sizeof(float), (size_t)BATCH * dim) || put(f, y, 1, BATCH);
    }
    const double scalars[2] = {lr, wd};
    if (!rc) rc = put(f, m->params, sizeof(float), m->n_params) || put(f, scalars, 8, 2);
    sgd_free(&opt);
    free(x);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: adamw_dump OUT\n");
        return 2;
    }
    const ModelOps *ops = model_find("mlp");
    ModelConfig c = model_config_default();
    model_config_set(&c, ops, "hidden", 1, (const int[]){32});
    Model *m = NULL;
    if (model_create(ops, &c, 3, &m, NULL)) return 1;
    FILE *f = fopen(argv[1], "wb");
    int rc = !f || dump(f, m, c.in_channels * c.in_rows * c.in_cols);
    if (f && fclose(f)) rc = 1;
    model_free(m);
    if (rc) fprintf(stderr, "adamw_dump: could not write %s\n", argv[1]);
    return rc;
}
