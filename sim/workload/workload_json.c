/* workload_json.c: the JSON profile parser (the format is in sim/workload/README.md). Every field
 * is checked as it is read; an error is a usage error naming the file (or built-in), the layer by
 * index and name, the tensor, and the field with what it must be. Unknown keys are ignored, so a
 * file can carry notes. The Workload is allocated only once the whole file has been counted,
 * and freed on any error: the caller gets a complete profile or none. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "jsonfield.h"
#include "xalloc.h"
#include "workload_impl.h"

typedef struct {
    JsonAt loc;  /* "FLAG LABEL: " then the path to the field */
    size_t base; /* length of "FLAG LABEL: ", to which where is reset */
    int measured;
} Ctx;

/* Appends "layers[3] \"conv2\": " (or "tensors[1] ...") to where; keep: its length before. */
static void at(Ctx *c, const char *what, int index, const char *name)
{
    size_t n = strlen(c->loc.where);
    if (name)
        snprintf(c->loc.where + n, sizeof c->loc.where - n, "%s[%d] \"%s\": ", what, index, name);
    else
        snprintf(c->loc.where + n, sizeof c->loc.where - n, "%s[%d]: ", what, index);
}

static void cut(Ctx *c, size_t len)
{
    c->loc.where[len] = '\0';
}

/* A number in [0, max]: max keeps a step's simulated time representable (cluster.h's
 * CLUSTER_MAX_SIM_S, over any batch and GPU bellows takes). */
static int get_nonneg(const Ctx *c, const json_t *o, const char *key, double max, double *out)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_number(v) || !isfinite(json_number_value(v)) || json_number_value(v) < 0)
        return json_at_fail(&c->loc, "\"%s\" must be a number >= 0", key);
    if (json_number_value(v) > max)
        return json_at_fail(&c->loc, "\"%s\" must be at most %g, got %g", key, max,
                            json_number_value(v));
    *out = json_number_value(v);
    return BW_OK;
}

/* "compute": "flops", or {"measured": {"batch": B, "gpu": NAME, "precision": P}}. */
static int parse_compute(Ctx *c, const json_t *root, Workload *w)
{
    json_t *v = json_object_get(root, "compute");
    if (json_is_string(v) && strcmp(json_string_value(v), "flops") == 0) return BW_OK;
    json_t *m = json_is_object(v) ? json_object_get(v, "measured") : NULL;
    if (!json_is_object(m))
        return json_at_fail(
            &c->loc, "\"compute\" must be \"flops\" or {\"measured\": {\"batch\": B, \"gpu\": "
                     "NAME, \"precision\": \"fp32\"|\"tf32\"|\"bf16\"}}");
    c->measured = 1;
    json_t *b = json_object_get(m, "batch");
    if (!json_is_integer(b) || json_integer_value(b) < 1 || json_integer_value(b) > INT_MAX)
        return json_at_fail(&c->loc,
                            "\"compute\": \"measured\": \"batch\" must be a positive integer");
    w->measured_batch = (int)json_integer_value(b);
    json_t *g = json_object_get(m, "gpu");
    if (!json_is_string(g) || json_string_length(g) == 0 ||
        json_string_length(g) >= sizeof w->measured_gpu)
        return json_at_fail(&c->loc,
                            "\"compute\": \"measured\": \"gpu\" must be a GPU's name (at most %zu "
                            "characters, e.g. \"A100\")",
                            sizeof w->measured_gpu - 1);
    snprintf(w->measured_gpu, sizeof w->measured_gpu, "%s", json_string_value(g));
    json_t *p = json_object_get(m, "precision");
    const char *ps = json_is_string(p) ? json_string_value(p) : "";
    if (strcmp(ps, "fp32") != 0 && strcmp(ps, "tf32") != 0 && strcmp(ps, "bf16") != 0)
        return json_at_fail(
            &c->loc, "\"compute\": \"measured\": \"precision\" must be \"fp32\", \"tf32\" or "
                     "\"bf16\"");
    snprintf(w->measured_precision, sizeof w->measured_precision, "%s", ps);
    return BW_OK;
}

/* "shape": 1 to WORKLOAD_MAX_DIMS positive integers; fills shape, ndim, rows, cols, numel. */
static int parse_shape(const Ctx *c, const json_t *o, WorkloadTensor *t)
{
    json_t *s = json_object_get(o, "shape");
    size_t n = json_is_array(s) ? json_array_size(s) : 0;
    const char *must = "\"shape\" must be a list of 1 to 4 positive integers";
    if (n < 1 || n > WORKLOAD_MAX_DIMS) return json_at_fail(&c->loc, "%s", must);
    double cols = 1;
    for (size_t i = 0; i < n; i++) {
        json_t *d = json_array_get(s, i);
        if (!json_is_integer(d) || json_integer_value(d) < 1 || json_integer_value(d) > INT_MAX)
            return json_at_fail(&c->loc, "%s", must);
        t->shape[i] = (int)json_integer_value(d);
        if (i > 0) cols *= t->shape[i];
    }
    if (cols > INT_MAX)
        return json_at_fail(
            &c->loc, "\"shape\": the dimensions after the first multiply to more than %d", INT_MAX);
    t->ndim = (int)n;
    t->rows = t->shape[0];
    t->cols = (int)cols;
    t->numel = (size_t)t->rows * (size_t)t->cols;
    return BW_OK;
}

static int parse_tensor(Ctx *c, const json_t *o, int index, WorkloadTensor *t)
{
    size_t keep = strlen(c->loc.where);
    at(c, "tensors", index, NULL);
    if (!json_is_object(o))
        return json_at_fail(&c->loc, "must be an object with \"name\" and \"shape\"");
    int rc = json_at_str(&c->loc, o, "name", 1, t->name, sizeof t->name);
    if (rc != BW_OK) return rc;
    cut(c, keep);
    at(c, "tensors", index, t->name);
    if ((rc = parse_shape(c, o, t)) != BW_OK) return rc;
    if ((rc = json_at_str(&c->loc, o, "follows", 0, t->follows, sizeof t->follows)) != BW_OK)
        return rc;
    cut(c, keep);
    return BW_OK;
}

/* The layer's compute: flops per sample, or seconds per step at the measured batch. */
static int parse_layer_compute(const Ctx *c, const json_t *o, WorkloadLayer *l)
{
    int rc;
    if (c->measured) {
        if ((rc = get_nonneg(c, o, "fwd_s", WORKLOAD_MAX_LAYER_S, &l->fwd_s)) != BW_OK) return rc;
        return get_nonneg(c, o, "bwd_s", WORKLOAD_MAX_LAYER_S, &l->bwd_s);
    }
    if ((rc = get_nonneg(c, o, "fwd_flops", WORKLOAD_MAX_LAYER_FLOPS, &l->fwd_flops)) != BW_OK)
        return rc;
    return get_nonneg(c, o, "bwd_flops", WORKLOAD_MAX_LAYER_FLOPS, &l->bwd_flops);
}

static int parse_layer(Ctx *c, const json_t *o, int index, Workload *w)
{
    WorkloadLayer *l = &w->layers[index];
    cut(c, c->base);
    at(c, "layers", index, NULL);
    if (!json_is_object(o))
        return json_at_fail(&c->loc, "must be an object with \"name\" and its compute");
    int rc = json_at_str(&c->loc, o, "name", 1, l->name, sizeof l->name);
    if (rc != BW_OK) return rc;
    cut(c, c->base);
    at(c, "layers", index, l->name);
    if ((rc = parse_layer_compute(c, o, l)) != BW_OK) return rc;
    json_t *ts = json_object_get(o, "tensors");
    l->first_tensor = w->n_tensors;
    l->n_tensors = ts ? (int)json_array_size(ts) : 0;
    for (int i = 0; i < l->n_tensors; i++) {
        WorkloadTensor *t = &w->tensors[w->n_tensors];
        if ((rc = parse_tensor(c, json_array_get(ts, (size_t)i), i, t)) != BW_OK) return rc;
        t->layer = index;
        w->n_params += t->numel;
        w->n_tensors++;
        if ((double)w->n_params > WORKLOAD_MAX_PARAMS)
            return json_at_fail(&c->loc,
                                "the tensors up to this layer hold %zu parameters, more than %g",
                                w->n_params, WORKLOAD_MAX_PARAMS);
    }
    return BW_OK;
}

/* Counts the tensors so one allocation holds them; checks each "tensors" is a list. */
static int count_tensors(Ctx *c, const json_t *layers, size_t *n)
{
    *n = 0;
    for (size_t i = 0; i < json_array_size(layers); i++) {
        json_t *ts = json_object_get(json_array_get(layers, i), "tensors");
        if (ts && !json_is_array(ts)) {
            cut(c, c->base);
            at(c, "layers", (int)i, NULL);
            return json_at_fail(&c->loc, "\"tensors\" must be a list (it may be empty)");
        }
        *n += ts ? json_array_size(ts) : 0;
    }
    if (*n > INT_MAX) return json_at_fail(&c->loc, "more than %d tensors", INT_MAX);
    return BW_OK;
}

static int parse_root(Ctx *c, const json_t *root, Workload **out)
{
    if (!json_is_object(root)) return json_at_fail(&c->loc, "a profile must be a JSON object");
    json_t *layers = json_object_get(root, "layers");
    if (!json_is_array(layers) || json_array_size(layers) == 0 || json_array_size(layers) > INT_MAX)
        return json_at_fail(&c->loc, "\"layers\" must be a non-empty list of layers");
    size_t n_tensors;
    int rc = count_tensors(c, layers, &n_tensors);
    if (rc != BW_OK) return rc;
    cut(c, c->base);
    Workload *w = bw_xcalloc(1, sizeof *w, "workload_json.c: w");
    size_t n_layers = json_array_size(layers);
    if (w) w->layers = bw_xcalloc(n_layers, sizeof *w->layers, "workload_json.c: w->layers");
    if (w && n_tensors)
        w->tensors = bw_xcalloc(n_tensors, sizeof *w->tensors, "workload_json.c: w->tensors");
    if (!w || !w->layers || (n_tensors && !w->tensors)) {
        workload_free(w);
        return bw_fail(c->loc.err, BW_ERUNTIME, "%sout of memory", c->loc.where);
    }
    w->n_layers = (int)n_layers;
    if ((rc = json_at_str(&c->loc, root, "name", 1, w->name, sizeof w->name)) == BW_OK &&
        (rc = json_at_str(&c->loc, root, "source", 0, w->source, sizeof w->source)) == BW_OK)
        rc = parse_compute(c, root, w);
    for (int i = 0; rc == BW_OK && i < w->n_layers; i++)
        rc = parse_layer(c, json_array_get(layers, (size_t)i), i, w);
    if (rc != BW_OK) {
        workload_free(w);
        return rc;
    }
    *out = w;
    return BW_OK;
}

int workload_parse(const char *path, const char *text, size_t len, const char *flag,
                   const char *label, Workload **out, BwError *err)
{
    *out = NULL;
    Ctx c = {.loc.err = err};
    snprintf(c.loc.where, sizeof c.loc.where, "%s %s: ", flag, label);
    c.base = strlen(c.loc.where);
    json_error_t jerr;
    json_t *root = text ? json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr)
                        : json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) {
        if (jerr.line > 0)
            return json_at_fail(&c.loc, "line %d column %d: %s", jerr.line, jerr.column, jerr.text);
        return json_at_fail(&c.loc, "%s", jerr.text);
    }
    int rc = parse_root(&c, root, out);
    json_decref(root);
    if (rc == BW_OK && !(*out)->source[0])
        snprintf((*out)->source, sizeof(*out)->source, "%s", label);
    return rc;
}

/* Here beside the parser that makes a workload, so that workload.c and from_trace.c call this file
 * and it calls neither (scripts/callgraph.py: no cycle). */
void workload_free(Workload *w)
{
    if (!w) return;
    free(w->layers);
    free(w->tensors);
    free(w);
}
