/* bellows_host.h: bellows' policy layer as a shared library (libbellows_policy.so), so that a
 * program other than bellows (a PyTorch training, through traces/pytorch/bellows_host.py and
 * ctypes) runs a policy with the same code that decides in the simulator: policy_create and
 * policy_step of policies/policy.c, for a built-in (`static:level=1`, `accordion`), a C plug-in
 * (`./mypolicy.so:k=v`) or a Python policy file (`./mypolicy.py:k=v`, run by the interpreter of
 * the calling process when it is one, else by an embedded one).
 *
 * The observation and the decision are the public structs of bellows_policy.h; the context is
 * given field by field (flat arrays, for foreign-function callers). What the host does not
 * have here, the simulator's cluster (bandwidth, latency, nodes) and its lr schedule's details,
 * reads 0 (lr_known 0, as in a replay). The levels a policy may decide are not checked against
 * a compressor here (the simulator's compressors are not in this library): the caller's
 * compressor checks them. Every call returns 0 or BW_EUSAGE (2) / BW_ERUNTIME (1) with one line
 * in err. */
#ifndef BELLOWS_HOST_H
#define BELLOWS_HOST_H

#include <stddef.h>

#include "bellows_policy.h"

#define BELLOWS_HOST_API 2 /* grows when a function is added (2: the layout, the outer step) */

typedef struct BellowsHost BellowsHost;

typedef struct {
    int n_layers;
    const char *const *names;   /* [n_layers], may be NULL */
    const int *rows, *cols;     /* [n_layers]; cols 1: a vector (always dense) */
    int workers, epochs, batch; /* batch: global */
    long steps_per_epoch;
    double lr0;
    int n_decays;
    const int *decay_epochs; /* [n_decays], ascending; may be NULL when n_decays is 0 */
    const char *compressor;  /* "powersgd", "topk", ... */
    double compressor_level;
    const char *compressor_spec; /* "powersgd:warm=1,..." or NULL */
} BellowsHostContext;

int bellows_host_api(void);
/* BELLOWS_POLICY_VERSION, the version of bellows_policy.h's structs the library was built with. */
int bellows_host_policy_version(void);
/* The layout of the structs a foreign caller mirrors (traces/pytorch/bellows_host.py checks its
 * ctypes structs against it when it loads the library): type one of "BellowsPolicyObs",
 * "BellowsHostContext", "BellowsPolicyOuter"; field NULL: the struct's size, else the field's
 * offset. (size_t)-1 for a type or field the library does not know. */
size_t bellows_host_layout(const char *type, const char *field);
/* Creates the policy of spec; *out is NULL on failure. */
int bellows_host_create(const char *spec, const BellowsHostContext *hctx, BellowsHost **out,
                        char *err, size_t errlen);
int bellows_host_mode(const BellowsHost *h);         /* BELLOWS_POLICY_GRADIENT or _PERIODIC */
unsigned bellows_host_needs(const BellowsHost *h);   /* the ops' needs (BELLOWS_HAS_* bits) */
const char *bellows_host_spec(const BellowsHost *h); /* normalised: name:k=v,... */
/* One step: observe, then decide (policy_step). level: [n_layers] doubles the decision's
 * levels are written to; batch, average and period receive the rest of the decision. */
int bellows_host_step(BellowsHost *h, const BellowsPolicyObs *obs, double *level, int *batch,
                      int *average, int *period, char *err, size_t errlen);
void bellows_host_describe(const BellowsHost *h, char *buf, size_t n);
/* Whether the policy's averagings are outer steps (DiLoCo's, the C policy API's
 * BellowsPolicyOps.outer, as policy_outer reads a built-in's or a plug-in's): 1 with *o filled
 * (the outer optimizer's lr and momentum, H, fragments, tau, bits, alpha, eager), else 0. */
int bellows_host_outer(const BellowsHost *h, BellowsPolicyOuter *o);
void bellows_host_free(BellowsHost *h); /* NULL is a no-op */

#endif
