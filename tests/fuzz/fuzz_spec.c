/* fuzz_spec.c: libFuzzer harness for plug-in specifications (common/spec.c): the input is a
 * --policies list, split by spec_split_list; each item is parsed by spec_parse, printed by
 * spec_format and parsed again (it must give the same spec), then handed to policy_create
 * (against the real option tables, with the driver's level check for a compressor) and to
 * compress_create as a --compressor. Any crash, leak or undefined behaviour is a bug, and so is
 * a refusal that is not a one-line usage error. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spec.h"
#include "policy.h"
#include "compress.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_refusal(int rc, const BwError *err)
{
    if (rc == BW_OK) return;
    if (rc != BW_EUSAGE || !err->msg[0] || strchr(err->msg, '\n')) abort();
}

static int check_level(const void *arg, double level, const char *what, BwError *err)
{
    return compress_check_level(arg, level, what, err);
}

/* Layers of a small MLP: 784 -> 32 -> 10, weights and biases. */
static const LayerView LAYERS[] = {{"fc1.w", 0, 32, 784, 2},
                                   {"fc1.b", 25088, 32, 1, 1},
                                   {"fc2.w", 25120, 10, 32, 2},
                                   {"fc2.b", 25440, 10, 1, 1}};
#define N_LAYERS 4

static PolicyContext context(const CompressorOps *ops)
{
    PolicyContext c;
    memset(&c, 0, sizeof c);
    static PolicyLayer layers[N_LAYERS]; /* policy_create copies it */
    c.n_layers = N_LAYERS;
    c.layers = layers;
    for (int l = 0; l < N_LAYERS; l++) {
        snprintf(layers[l].name, sizeof layers[l].name, "%s", LAYERS[l].name);
        layers[l].rows = LAYERS[l].rows;
        layers[l].cols = LAYERS[l].cols;
        layers[l].ndim = LAYERS[l].ndim;
    }
    c.workers = 4;
    c.epochs = 3;
    c.batch = 64;
    c.steps_per_epoch = 20;
    c.lr0 = 0.1;
    c.n_decays = 1;
    c.decay_epochs[0] = 2;
    snprintf(c.compressor, sizeof c.compressor, "%s", ops->name);
    c.compressor_level = ops->level_default;
    c.check_level = check_level;
    c.check_level_arg = ops;
    return c;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 2048) return 0;
    char text[2049];
    memcpy(text, data, size);
    text[size] = '\0';
    if (memchr(data, '\0', size)) return 0; /* argv strings hold no NUL */

    static char items[8][SPEC_MAX_TEXT];
    int n = 0;
    BwError err;
    int rc = spec_split_list(text, "--policies", items, 8, &n, &err);
    check_refusal(rc, &err);
    if (rc) return 0;
    if (n < 1 || n > 8) abort();
    const CompressorOps *const *comps = compress_registry();
    for (int i = 0; i < n; i++) {
        Spec s, again;
        rc = spec_parse(items[i], "--policy", &s, &err);
        check_refusal(rc, &err);
        if (rc == BW_OK) {
            char buf[SPEC_MAX_TEXT * 2];
            spec_format(&s, buf, sizeof buf);
            if (spec_parse(buf, "--policy", &again, &err) != BW_OK ||
                memcmp(&s, &again, sizeof s) != 0)
                abort();
        }
        for (const CompressorOps *const *c = comps; *c; c++) {
            PolicyContext ctx = context(*c);
            Policy *p = NULL;
            rc = policy_create(items[i], "--policy", &ctx, &p, &err);
            check_refusal(rc, &err);
            policy_free(p);
        }
        Compressor *c = NULL;
        rc = compress_create(items[i], "--compressor", LAYERS, N_LAYERS, 2, 1, 7, &c, &err);
        check_refusal(rc, &err);
        compress_free(c);
    }
    return 0;
}
