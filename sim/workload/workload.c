/* workload.c: workload profiles (workload.h): loading a built-in or a file, the mapping of the
 * real tensors onto the small model's layers by relative depth, the per-layer compute of a step,
 * the tensors as layer views, and the small model's own costs as a profile. The built-ins are
 * the JSON files of sim/workload/profiles/ (written by gen_profiles.py), embedded at build time
 * by embed_profiles.cmake into workload_profiles.h in the build folder. */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "infile.h"
#include "xalloc.h"
#include "workload_impl.h"
#include "workload_profiles.h" /* generated: workload_profiles[], workload_profile_names[] */

#define N_PROFILES ((int)(sizeof workload_profiles / sizeof *workload_profiles))

const char *const *workload_builtin_names(void)
{
    return workload_profile_names;
}

static int ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), m = strlen(tail);
    return n >= m && strcmp(s + n - m, tail) == 0;
}

/* "a, b, c" into buf */
static void list_names(char *buf, size_t size)
{
    buf[0] = '\0';
    for (int i = 0; i < N_PROFILES; i++) {
        size_t n = strlen(buf);
        snprintf(buf + n, size - n, "%s%s", i ? ", " : "", workload_profiles[i].name);
    }
}

int workload_load(const char *spec, const char *flag, Workload **out, BwError *err)
{
    assert(spec && flag && out);
    *out = NULL;
    int rc;
    if (strchr(spec, '/') || ends_with(spec, ".json") || ends_with(spec, ".jsonl") ||
        ends_with(spec, ".jsonl.gz")) {
        if (ends_with(spec, ".jsonl") || ends_with(spec, ".jsonl.gz"))
            rc = workload_from_trace(spec, flag, out, err);
        else if (!ends_with(spec, ".json"))
            return bw_fail(err, BW_EUSAGE,
                           "%s %s: a profile file must be .json (or a trace, .jsonl[.gz])", flag,
                           spec);
        else if ((rc = infile_check(flag, spec, err)) == BW_OK)
            rc = workload_parse(spec, NULL, 0, flag, spec, out, err);
    } else {
        int i = 0;
        while (i < N_PROFILES && strcmp(workload_profiles[i].name, spec) != 0) i++;
        if (i == N_PROFILES) {
            char names[256];
            list_names(names, sizeof names);
            return bw_fail(err, BW_EUSAGE,
                           "%s %s: unknown workload (the built-ins: %s; or a profile FILE.json)",
                           flag, spec, names);
        }
        rc = workload_parse(NULL, (const char *)workload_profiles[i].json, workload_profiles[i].len,
                            flag, spec, out, err);
    }
    if (rc == BW_OK) snprintf((*out)->spec, sizeof(*out)->spec, "%s", spec);
    return rc;
}

/* ---- compute ---- */

double workload_fwd_flops(const Workload *w, int layer, int b, double speed, double peak_ratio)
{
    assert(layer >= 0 && layer < w->n_layers && b >= 0);
    const WorkloadLayer *l = &w->layers[layer];
    if (w->measured_batch > 0) return l->fwd_s * b / w->measured_batch * peak_ratio * speed;
    return l->fwd_flops * b;
}

double workload_bwd_flops(const Workload *w, int layer, int b, double speed, double peak_ratio)
{
    assert(layer >= 0 && layer < w->n_layers && b >= 0);
    const WorkloadLayer *l = &w->layers[layer];
    if (w->measured_batch > 0) return l->bwd_s * b / w->measured_batch * peak_ratio * speed;
    return l->bwd_flops * b;
}

double workload_flops_per_sample(const Workload *w)
{
    if (w->measured_batch > 0) return 0;
    double f = 0;
    for (int i = 0; i < w->n_layers; i++) f += w->layers[i].fwd_flops + w->layers[i].bwd_flops;
    return f;
}

/* ---- views and the mapping ---- */

void workload_views(const Workload *w, LayerView *views)
{
    size_t offset = 0;
    for (int t = 0; t < w->n_tensors; t++) {
        const WorkloadTensor *x = &w->tensors[t];
        LayerView *v = &views[t];
        memset(v, 0, sizeof *v);
        snprintf(v->name, sizeof v->name, "%.*s", (int)sizeof v->name - 1, x->name);
        v->offset = offset;
        v->ndim = x->ndim >= 2 ? 2 : 1;
        v->rows = x->ndim >= 2 ? x->rows : (int)x->numel;
        v->cols = x->ndim >= 2 ? x->cols : 1;
        offset += x->numel;
    }
}

/* The index in small[] of the k-th matrix layer (k counted from 0). */
static int nth_matrix(const LayerView *small, int n_small, int k)
{
    for (int i = 0; i < n_small; i++)
        if (small[i].ndim == 2 && k-- == 0) return i;
    assert(0 && "fewer small matrix layers than counted");
    return -1;
}

static int find_small(const LayerView *small, int n_small, const char *name)
{
    for (int i = 0; i < n_small; i++)
        if (strncmp(small[i].name, name, sizeof small[i].name) == 0) return i;
    return -1;
}

/* "a, b, c": the small model's layer names, for an error */
static void small_names(const LayerView *small, int n_small, char *buf, size_t size)
{
    buf[0] = '\0';
    for (int i = 0; i < n_small; i++) {
        size_t n = strlen(buf);
        snprintf(buf + n, size - n, "%s%.*s", i ? ", " : "", (int)sizeof small[i].name,
                 small[i].name);
    }
}

/* A tensor that names its small layer: that layer's index, or a usage error. */
static int map_named(const Workload *w, const WorkloadTensor *t, const LayerView *small,
                     int n_small, const char *flag, int *out, BwError *err)
{
    int i = find_small(small, n_small, t->follows);
    if (i < 0) {
        char names[256];
        small_names(small, n_small, names, sizeof names);
        return bw_fail(err, BW_EUSAGE,
                       "%s %s: tensor \"%s\": \"follows\": the small model has no layer \"%s\" "
                       "(its layers: %s)",
                       flag, w->spec, t->name, t->follows, names);
    }
    if (t->ndim >= 2 && small[i].ndim != 2)
        return bw_fail(err, BW_EUSAGE,
                       "%s %s: tensor \"%s\": \"follows\": the small model's layer \"%s\" is a "
                       "vector; a matrix tensor must follow a matrix layer",
                       flag, w->spec, t->name, t->follows);
    *out = t->ndim >= 2 ? i : -1;
    return BW_OK;
}

int workload_map(const Workload *w, const LayerView *small, int n_small, const char *flag,
                 int *follows, BwError *err)
{
    int m = 0, j_total = 0;
    for (int i = 0; i < n_small; i++) m += small[i].ndim == 2;
    for (int t = 0; t < w->n_tensors; t++) j_total += w->tensors[t].ndim >= 2;
    if (m > j_total)
        return bw_fail(err, BW_EUSAGE,
                       "%s %s: the small model has %d matrix layers, more than the profile's %d "
                       "matrix tensors to follow them (use a smaller model or a larger profile)",
                       flag, w->spec, m, j_total);
    if (m == 0 && j_total > 0)
        return bw_fail(err, BW_EUSAGE,
                       "%s %s: the small model has no matrix layer for the profile's %d matrix "
                       "tensors to follow",
                       flag, w->spec, j_total);
    int j = 0; /* the index of the tensor among the real matrices */
    for (int t = 0; t < w->n_tensors; t++) {
        const WorkloadTensor *x = &w->tensors[t];
        if (x->follows[0]) {
            int rc = map_named(w, x, small, n_small, flag, &follows[t], err);
            if (rc != BW_OK) return rc;
        } else {
            follows[t] =
                x->ndim >= 2 ? nth_matrix(small, n_small, (int)((long long)j * m / j_total)) : -1;
        }
        j += x->ndim >= 2;
    }
    return BW_OK;
}

/* ---- the small model's own costs ---- */

static void set_tensor(WorkloadTensor *t, const LayerView *v, int layer)
{
    snprintf(t->name, sizeof t->name, "%.*s", (int)sizeof v->name, v->name);
    snprintf(t->follows, sizeof t->follows, "%.*s", (int)sizeof t->follows - 1, v->name);
    t->layer = layer;
    t->ndim = v->ndim == 2 ? 2 : 1;
    t->shape[0] = v->ndim == 2 ? v->rows : (int)layer_size(v);
    t->shape[1] = v->ndim == 2 ? v->cols : 0;
    t->rows = t->shape[0];
    t->cols = v->ndim == 2 ? v->cols : 1;
    t->numel = layer_size(v);
}

int workload_from_model(const LayerView *layers, int n_layers, double flops_per_sample,
                        Workload **out, BwError *err)
{
    assert(n_layers > 0 && flops_per_sample >= 0);
    *out = NULL;
    int n_mat = 0;
    double mat_size = 0;
    for (int i = 0; i < n_layers; i++)
        if (layers[i].ndim == 2) n_mat++, mat_size += (double)layer_size(&layers[i]);
    Workload *w = bw_xcalloc(1, sizeof *w, "workload.c: w");
    if (w)
        w->layers =
            bw_xcalloc((size_t)(n_mat ? n_mat : 1), sizeof *w->layers, "workload.c: w->layers");
    if (w) w->tensors = bw_xcalloc((size_t)n_layers, sizeof *w->tensors, "workload.c: w->tensors");
    if (!w || !w->layers || !w->tensors) {
        workload_free(w);
        return bw_fail(err, BW_ERUNTIME, "workload: out of memory");
    }
    snprintf(w->name, sizeof w->name, "model");
    snprintf(w->spec, sizeof w->spec, "model");
    snprintf(w->source, sizeof w->source,
             "the small model's own layers; its flops split by the matrices' sizes, a third "
             "forward and two thirds backward");
    w->n_layers = n_mat ? n_mat : 1;
    if (!n_mat) snprintf(w->layers[0].name, sizeof w->layers[0].name, "model");
    int layer = 0, seen_matrix = 0;
    for (int i = 0; i < n_layers; i++) {
        if (layers[i].ndim == 2) {
            layer = seen_matrix++;
            WorkloadLayer *l = &w->layers[layer];
            snprintf(l->name, sizeof l->name, "%.*s", (int)sizeof layers[i].name, layers[i].name);
            l->first_tensor = i;
            double share = (double)layer_size(&layers[i]) / mat_size;
            l->fwd_flops = flops_per_sample * share / 3;
            l->bwd_flops = flops_per_sample * share * 2 / 3;
        }
        set_tensor(&w->tensors[i], &layers[i], layer);
        w->layers[layer].n_tensors++;
        w->n_params += layer_size(&layers[i]);
    }
    w->layers[0].first_tensor = 0; /* vectors before the first matrix join its layer */
    if (!n_mat) {
        w->layers[0].fwd_flops = flops_per_sample / 3;
        w->layers[0].bwd_flops = flops_per_sample * 2 / 3;
    }
    w->n_tensors = n_layers;
    *out = w;
    return BW_OK;
}

int workload_from_model_times(const LayerView *layers, int n_layers, double step_s, int batch,
                              Workload **out, BwError *err)
{
    assert(step_s >= 0 && batch > 0);
    int rc = workload_from_model(layers, n_layers, 1.0, out, err);
    if (rc) return rc;
    Workload *w = *out;
    for (int l = 0; l < w->n_layers; l++) { /* the shares of one flop, as shares of the step */
        WorkloadLayer *x = &w->layers[l];
        x->fwd_s = step_s * x->fwd_flops;
        x->bwd_s = step_s * x->bwd_flops;
        x->fwd_flops = x->bwd_flops = 0;
    }
    w->measured_batch = batch; /* no GPU named: the times are taken as measured */
    snprintf(w->source, sizeof w->source,
             "the small model's own layers; a measured step's seconds split by the matrices' "
             "sizes, a third forward and two thirds backward");
    return BW_OK;
}

/* ---- the listing ---- */

void workload_print_list(FILE *out)
{
    for (int i = 0; i < N_PROFILES; i++) {
        Workload *w;
        BwError err;
        if (workload_load(workload_profiles[i].name, "workload", &w, &err) != BW_OK) {
            fprintf(out, "%-15s (cannot load: %s)\n", workload_profiles[i].name, err.msg);
            continue;
        }
        fprintf(out, "%-15s %11zu params %4d tensors ", w->name, w->n_params, w->n_tensors);
        if (w->measured_batch > 0)
            fprintf(out, "measured at batch %d on %s %s", w->measured_batch, w->measured_gpu,
                    w->measured_precision);
        else
            fprintf(out, "%8.2f GFLOPs/sample (fwd+bwd)", workload_flops_per_sample(w) / 1e9);
        fprintf(out, "  %s\n", w->source);
        workload_free(w);
    }
}
