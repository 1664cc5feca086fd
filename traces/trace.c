/* trace.c: the gradient-trace reader and writer (see trace.h). Lines are parsed by jansson, one
 * JSON document per line; every field is checked for presence, type and range, and the first
 * problem is reported as FILE:LINE:COLUMN with what was expected. */
#include "trace.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>

#include "infile.h"
#include "lines.h"

/* ---- reading ---- */

typedef struct {
    const char *path;
    long line;
    BwError *err;
} Where;

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static int
bad(const Where *w, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return bw_fail(w->err, BW_EUSAGE, "%s:%ld: %s", w->path, w->line, msg);
}

static int get_num(const Where *w, json_t *o, const char *key, int required, double lo, double hi,
                   double *out)
{
    json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v)) {
        if (required) return bad(w, "missing \"%s\"", key);
        return BW_OK;
    }
    if (!json_is_number(v)) return bad(w, "\"%s\": expected a number", key);
    double x = json_number_value(v);
    if (!isfinite(x) || x < lo || x > hi)
        return bad(w, "\"%s\": %g is outside [%g, %g]", key, x, lo, hi);
    *out = x;
    return BW_OK;
}

static int get_int(const Where *w, json_t *o, const char *key, int required, double lo, double hi,
                   long *out)
{
    json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v)) {
        if (required) return bad(w, "missing \"%s\"", key);
        return BW_OK;
    }
    if (!json_is_integer(v)) return bad(w, "\"%s\": expected an integer", key);
    json_int_t x = json_integer_value(v);
    if ((double)x < lo || (double)x > hi)
        return bad(w, "\"%s\": %lld is outside [%g, %g]", key, (long long)x, lo, hi);
    *out = (long)x;
    return BW_OK;
}

static int get_str(const Where *w, json_t *o, const char *key, int required, char *out, size_t n)
{
    json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v)) {
        if (required) return bad(w, "missing \"%s\"", key);
        return BW_OK;
    }
    if (!json_is_string(v)) return bad(w, "\"%s\": expected a string", key);
    if (strlen(json_string_value(v)) >= n)
        return bad(w, "\"%s\": longer than %zu characters", key, n - 1);
    snprintf(out, n, "%s", json_string_value(v));
    return BW_OK;
}

/* An array of n finite numbers in [0, max]; *present tells whether it was there. */
static int get_norms(const Where *w, json_t *o, const char *key, int required, int n, double max,
                     double *out, int *present)
{
    json_t *v = json_object_get(o, key);
    if (present) *present = 0;
    if (!v || json_is_null(v)) {
        if (required) return bad(w, "missing \"%s\"", key);
        return BW_OK;
    }
    if (!json_is_array(v) || (int)json_array_size(v) != n)
        return bad(w, "\"%s\": expected an array of %d numbers (one per layer)", key, n);
    for (int i = 0; i < n; i++) {
        json_t *x = json_array_get(v, (size_t)i);
        if (!json_is_number(x) || !isfinite(json_number_value(x)) || json_number_value(x) < 0 ||
            json_number_value(x) > max)
            return bad(w, "\"%s\"[%d]: expected a number in [0, %g]", key, i, max);
        out[i] = json_number_value(x);
    }
    if (present) *present = 1;
    return BW_OK;
}

/* The header's optional "timing": {"device", "steps", "fwd_s": [...], "bwd_s": [...]}, the
 * measured seconds per step of every layer (traces/README.md). */
static int read_timing(const Where *w, json_t *o, TraceHeader *h)
{
    json_t *tm = json_object_get(o, "timing");
    if (!tm || json_is_null(tm)) return BW_OK;
    if (!json_is_object(tm))
        return bad(w, "\"timing\": expected an object {device, steps, fwd_s, bwd_s}");
    int n = h->n_layers, rc;
    long steps = 0;
    /* raw alloc: sized by the file: too large is its reader's error */
    double *s = malloc(sizeof *s * 2 * (size_t)n);
    if (!s) return bw_fail(w->err, BW_ERUNTIME, "%s: out of memory", w->path);
    if ((rc = get_str(w, tm, "device", 1, h->timing_device, sizeof h->timing_device)) ||
        (rc = get_int(w, tm, "steps", 0, 1, 1e9, &steps)) ||
        (rc = get_norms(w, tm, "fwd_s", 1, n, TRACE_MAX_LAYER_S, s, NULL)) ||
        (rc = get_norms(w, tm, "bwd_s", 1, n, TRACE_MAX_LAYER_S, s + n, NULL))) {
        free(s);
        return rc;
    }
    for (int l = 0; l < n; l++) {
        h->layers[l].fwd_s = s[l];
        h->layers[l].bwd_s = s[n + l];
    }
    free(s);
    h->timing_steps = (int)steps;
    h->has_timing = 1;
    return BW_OK;
}

/* Version 2's header "policy": {"spec", "mode": "gradient"|"periodic", "compressor", "seed",
 * optional "train_samples", "test_samples"}. */
static int read_policy(const Where *w, json_t *o, TraceHeader *h)
{
    json_t *p = json_object_get(o, "policy");
    if (!p) return BW_OK;
    if (h->version < 2) return bad(w, "\"policy\": a version 2 field in a version 1 trace");
    if (!json_is_object(p)) return bad(w, "\"policy\": expected an object");
    char mode[16] = "";
    int rc;
    if ((rc = get_str(w, p, "spec", 1, h->policy_spec, sizeof h->policy_spec)) ||
        (rc = get_str(w, p, "mode", 1, mode, sizeof mode)) ||
        (rc = get_str(w, p, "compressor", 1, h->policy_compressor, sizeof h->policy_compressor)) ||
        (rc = get_int(w, p, "seed", 1, 0, 2147483647.0, &h->policy_seed)) ||
        (rc = get_int(w, p, "train_samples", 0, 0, 1e12, &h->train_samples)) ||
        (rc = get_int(w, p, "test_samples", 0, 0, 1e12, &h->test_samples)))
        return rc;
    if (strcmp(mode, "gradient") != 0 && strcmp(mode, "periodic") != 0)
        return bad(w,
                   "\"policy\": \"mode\": expected \"gradient\" or \"periodic\", got "
                   "\"%s\"",
                   mode);
    if (!h->policy_spec[0] || !h->policy_compressor[0])
        return bad(w, "\"policy\": \"spec\" and \"compressor\" must not be empty");
    h->policy_periodic = mode[0] == 'p';
    h->has_policy = 1;
    return BW_OK;
}

/* Version 2's decision fields, and what each mode makes of them (traces/README.md): 1 its own,
 * required; 0 optional; -1 the other mode's, refused. One table for both modes, so that no field
 * of a decision is ever read in one mode and silently ignored in the other. */
static const struct {
    const char *key;
    signed char gradient, periodic;
} DECISION_FIELDS[] = {
    {"levels", 1, -1}, {"average", -1, 1}, {"period", -1, 1}, {"bytes", 1, 1}, {"state", 0, 0},
};
#define N_DECISION_FIELDS ((int)(sizeof DECISION_FIELDS / sizeof *DECISION_FIELDS))

/* The decision's fields present in o checked against the header's mode: whether there is a
 * decision at all (*any), and the first field of the other mode or missing from this one. */
static int decision_fields(const Where *w, json_t *o, const Trace *t, int *any)
{
    *any = 0;
    for (int k = 0; k < N_DECISION_FIELDS; k++) {
        json_t *v = json_object_get(o, DECISION_FIELDS[k].key);
        *any |= v != NULL && !json_is_null(v);
    }
    if (!*any) return BW_OK;
    if (t->h.version < 2)
        return bad(w, "a decision (\"levels\", \"average\", \"period\", \"bytes\", \"state\") in a "
                      "version 1 trace");
    if (!t->h.has_policy) return bad(w, "a decision, but the header has no \"policy\"");
    const char *mode = t->h.policy_periodic ? "periodic" : "gradient-mode";
    for (int pass = 0; pass < 2; pass++) /* the other mode's fields first, then this one's */
        for (int k = 0; k < N_DECISION_FIELDS; k++) {
            const int role =
                t->h.policy_periodic ? DECISION_FIELDS[k].periodic : DECISION_FIELDS[k].gradient;
            json_t *v = json_object_get(o, DECISION_FIELDS[k].key);
            const int has = v != NULL && !json_is_null(v);
            if (pass == 0 && has && role < 0)
                return bad(w, "a %s policy's decision: expected %s; \"%s\" is the other mode's",
                           mode,
                           t->h.policy_periodic ? "\"average\" and \"period\", no \"levels\""
                                                : "\"levels\", no \"average\" or \"period\"",
                           DECISION_FIELDS[k].key);
            if (pass == 1 && !has && role > 0)
                return bad(w, "missing \"%s\"", DECISION_FIELDS[k].key);
        }
    return BW_OK;
}

/* Version 2's decision of a step: "levels" (gradient mode) or "average" and "period"
 * (periodic), "bytes", "state"; all of a mode's or none (decision_fields). levels: room for
 * [n_layers]. */
static int read_decision(const Where *w, json_t *o, const Trace *t, TraceStep *s, double *levels)
{
    int any = 0, has_levels = 0, rc;
    if ((rc = decision_fields(w, o, t, &any)) || !any) return rc;
    json_t *avg = json_object_get(o, "average");
    if ((rc = get_norms(w, o, "levels", 0, t->h.n_layers, 1e9, levels, &has_levels))) return rc;
    if (avg && !json_is_boolean(avg)) return bad(w, "\"average\": expected true or false");
    long period = 0;
    if ((rc = get_num(w, o, "bytes", 1, 0, 1e18, &s->bytes)) ||
        (rc = get_int(w, o, "period", t->h.policy_periodic, 1, 1e9, &period)) ||
        (rc = get_str(w, o, "state", 0, s->state, sizeof s->state)))
        return rc;
    for (int l = 0; has_levels && l < t->h.n_layers; l++)
        if (levels[l] != 0 && t->h.layers[l].cols == 1)
            return bad(w, "\"levels\"[%d]: a vector (cols 1) is always sent dense: expected 0", l);
    s->average = avg && json_is_true(avg);
    s->period = (int)period;
    s->has_decision = 1;
    s->levels = has_levels ? levels : NULL; /* pointed again once every step is read */
    return BW_OK;
}

static int read_header(const Where *w, json_t *o, TraceHeader *h)
{
    char format[64] = "";
    long version = 0, workers = 0, batch = 0, epochs = 0, spe = 0;
    int rc;
    h->line = w->line;
    if ((rc = get_str(w, o, "format", 1, format, sizeof format))) return rc;
    if (strcmp(format, TRACE_FORMAT) != 0)
        return bad(w, "\"format\": expected \"%s\", got \"%s\"", TRACE_FORMAT, format);
    if ((rc = get_int(w, o, "version", 1, 1, 1e9, &version))) return rc;
    if (version > TRACE_VERSION_MAX)
        return bad(w, "\"version\": this bellows reads versions 1 to %d, not %ld",
                   TRACE_VERSION_MAX, version);
    h->version = (int)version;
    if ((rc = read_policy(w, o, h))) return rc;
    if ((rc = get_str(w, o, "source", 0, h->source, sizeof h->source)) ||
        (rc = get_str(w, o, "model", 1, h->model, sizeof h->model)) ||
        (rc = get_str(w, o, "dataset", 0, h->dataset, sizeof h->dataset)) ||
        (rc = get_int(w, o, "workers", 1, 1, 1e6, &workers)) ||
        (rc = get_int(w, o, "batch", 1, 1, INT_MAX, &batch)) ||
        (rc = get_num(w, o, "flops_per_sample", 0, 0, 1e18, &h->flops_per_sample)) ||
        (rc = get_num(w, o, "compute_s_per_step", 0, 0, 1e6, &h->compute_s_per_step)) ||
        (rc = get_int(w, o, "epochs", 0, 0, 1e9, &epochs)) ||
        (rc = get_int(w, o, "steps_per_epoch", 0, 0, 1e12, &spe)))
        return rc;
    if (h->flops_per_sample <= 0 && h->compute_s_per_step <= 0)
        return bad(w, "expected \"flops_per_sample\" or \"compute_s_per_step\" above 0");
    /* products of header fields: a step's global batch and an epoch's samples are ints */
    if ((double)workers * (double)batch > INT_MAX)
        return bad(w, "\"workers\" x \"batch\" = %.0f, a global batch above %d",
                   (double)workers * (double)batch, INT_MAX);
    if ((double)spe * (double)workers * (double)batch > INT_MAX)
        return bad(w,
                   "\"steps_per_epoch\" x \"workers\" x \"batch\" = %.0f samples an epoch, "
                   "more than %d",
                   (double)spe * (double)workers * (double)batch, INT_MAX);
    h->workers = (int)workers;
    h->batch = (int)batch;
    h->epochs = (int)epochs;
    h->steps_per_epoch = spe;
    json_t *lr = json_object_get(o, "lr");
    if (lr && !json_is_object(lr)) return bad(w, "\"lr\": expected an object");
    if (lr && ((rc = get_str(w, lr, "schedule", 0, h->lr_schedule, sizeof h->lr_schedule)) ||
               (rc = get_num(w, lr, "base", 0, 0, 1e6, &h->lr_base))))
        return rc;
    json_t *layers = json_object_get(o, "layers");
    if (!json_is_array(layers) || json_array_size(layers) == 0)
        return bad(w, "\"layers\": expected a non-empty array of {name, rows, cols}");
    if (json_array_size(layers) > 1000000)
        return bad(w, "\"layers\": %zu layers, at most 1000000", json_array_size(layers));
    h->n_layers = (int)json_array_size(layers);
    /* raw alloc: sized by the file: too large is its reader's error */
    if (!(h->layers = calloc((size_t)h->n_layers, sizeof *h->layers)))
        return bw_fail(w->err, BW_ERUNTIME, "%s: out of memory for %d layers", w->path,
                       h->n_layers);
    double params = 0;
    for (int l = 0; l < h->n_layers; l++) {
        json_t *L = json_array_get(layers, (size_t)l);
        long rows = 0, cols = 0;
        if (!json_is_object(L)) return bad(w, "\"layers\"[%d]: expected an object", l);
        if ((rc = get_str(w, L, "name", 1, h->layers[l].name, sizeof h->layers[l].name)) ||
            (rc = get_int(w, L, "rows", 1, 1, 1e9, &rows)) ||
            (rc = get_int(w, L, "cols", 1, 1, 1e9, &cols)))
            return rc;
        h->layers[l].rows = (int)rows;
        h->layers[l].cols = (int)cols;
        params += (double)rows * (double)cols;
        if (params > TRACE_MAX_PARAMS)
            return bad(w, "\"layers\"[%d]: the layers up to it hold %.0f parameters, more than %g",
                       l, params, TRACE_MAX_PARAMS);
    }
    return read_timing(w, o, h);
}

/* norms: room for the step's three arrays, 3 x n_layers (trace_read points the step at them
 * once every step is read). */
static int read_step(const Where *w, json_t *o, const Trace *t, TraceStep *s, double *norms)
{
    long step = -1, epoch = -1, batch = 0;
    int rc;
    memset(s, 0, sizeof *s);
    s->line = w->line;
    if ((rc = get_int(w, o, "step", 1, 0, 1e15, &step)) ||
        (rc = get_int(w, o, "epoch", 1, 0, 1e9, &epoch)) ||
        (rc = get_int(w, o, "batch", 0, 1, INT_MAX, &batch)) ||
        (rc = get_num(w, o, "lr", 1, 0, 1e6, &s->lr)) ||
        (rc = get_num(w, o, "loss", 1, -1e300, 1e300, &s->loss)))
        return rc;
    json_t *end = json_object_get(o, "epoch_end");
    if (end && !json_is_boolean(end)) return bad(w, "\"epoch_end\": expected true or false");
    s->epoch_end = end && json_is_true(end);
    int n = t->h.n_layers;
    const double big = 1e300; /* any finite norm */
    if ((rc = get_norms(w, o, "grad_norms", 1, n, big, norms, NULL)) ||
        (rc = get_norms(w, o, "grad_norms_rank0", 0, n, big, norms + n, &s->has_rank0)) ||
        (rc = get_norms(w, o, "epoch_norms", 0, n, big, norms + 2 * n, &s->has_epoch_norms)) ||
        (rc = get_norms(w, o, "epoch_norms_rank0", 0, n, big, norms + 3 * n, &s->has_epoch_rank0)))
        return rc;
    if (s->has_epoch_rank0 && !s->has_epoch_norms)
        return bad(w, "\"epoch_norms_rank0\": given without \"epoch_norms\"");
    if (s->has_epoch_norms && !s->epoch_end) /* the replay reads them only at an epoch's end */
        return bad(w, "\"epoch_norms\": on a step that does not end an epoch (\"epoch_end\" is "
                      "not true)");
    if (t->n_steps && t->steps[t->n_steps - 1].stopped[0])
        return bad(w,
                   "a step after step %ld, whose \"stopped\": \"%s\" ended the run (it is "
                   "the last step's field)",
                   t->n_steps - 1, t->steps[t->n_steps - 1].stopped);
    s->has_variance = json_object_get(o, "param_variance") != NULL &&
                      !json_is_null(json_object_get(o, "param_variance"));
    if ((rc = get_num(w, o, "param_variance", 0, 0, 1e300, &s->param_variance)) ||
        (rc = get_str(w, o, "stopped", 0, s->stopped, sizeof s->stopped)) ||
        (rc = get_str(w, o, "decision", 0, s->decision, sizeof s->decision)) ||
        (rc = read_decision(w, o, t, s, norms + 4 * n)))
        return rc;
    if (s->decision[0] &&
        (strlen(s->decision) != 16 || strspn(s->decision, "0123456789abcdef") != 16))
        return bad(w, "\"decision\": expected 16 lower-case hex digits");
    if (s->stopped[0] && strcmp(s->stopped, "diverged") != 0 &&
        strcmp(s->stopped, "reached_target") != 0)
        return bad(w, "\"stopped\": expected \"diverged\" or \"reached_target\", got \"%s\"",
                   s->stopped);
    s->step = step;
    s->epoch = (int)epoch;
    s->batch = batch ? (int)batch : t->h.batch * t->h.workers;
    if (step != t->n_steps)
        return bad(w,
                   "\"step\": expected %ld (steps are numbered 0, 1, 2, ... without gaps), "
                   "got %ld",
                   t->n_steps, step);
    if (t->n_steps && epoch < t->steps[t->n_steps - 1].epoch)
        return bad(w, "\"epoch\": %ld goes back from %d", epoch, t->steps[t->n_steps - 1].epoch);
    return BW_OK;
}

/* An evaluation; *again: the same evaluation of the same step as the one before it (kept once).
 * Two different ones of one step are refused: which is the step's would be a guess. */
static int read_eval(const Where *w, json_t *o, const Trace *t, TraceEval *e, int *again)
{
    *again = 0;
    long step = -1;
    int rc;
    e->test_loss = NAN;
    if ((rc = get_int(w, o, "step", 1, 0, 1e15, &step)) ||
        (rc = get_num(w, o, "test_accuracy", 1, 0, 1, &e->test_accuracy)) ||
        (rc = get_num(w, o, "test_loss", 0, 0, 1e300, &e->test_loss)))
        return rc;
    if (step > t->n_steps)
        return bad(w, "\"step\": an evaluation after step %ld comes before that step's record",
                   step);
    if (t->n_evals && step < t->evals[t->n_evals - 1].step)
        return bad(w, "\"step\": evaluations go back from step %ld to %ld",
                   t->evals[t->n_evals - 1].step, step);
    const TraceEval *last = t->n_evals ? &t->evals[t->n_evals - 1] : NULL;
    if (last && step == last->step) {
        const int same_loss =
            isnan(e->test_loss) ? isnan(last->test_loss) : e->test_loss == last->test_loss;
        if (e->test_accuracy != last->test_accuracy || !same_loss)
            return bad(w,
                       "\"step\": step %ld is evaluated twice, test_accuracy %g then %g: one "
                       "evaluation a step",
                       step, last->test_accuracy, e->test_accuracy);
        *again = 1;
    }
    e->step = step;
    return BW_OK;
}

/* A header that gives "epochs" and "steps_per_epoch" promises that many steps; fewer records
 * are a trace cut short unless the last one ends the last epoch (an adaptive batch takes fewer
 * steps) or says the run stopped early ("stopped": diverged or reached its target). */
static int check_complete(const char *path, const Trace *t, BwError *err)
{
    const TraceHeader *h = &t->h;
    const TraceStep *last = &t->steps[t->n_steps - 1];
    if (h->epochs <= 0 || h->steps_per_epoch <= 0) return BW_OK;
    double promised = (double)h->epochs * (double)h->steps_per_epoch;
    if ((double)t->n_steps >= promised || last->stopped[0] ||
        (last->epoch >= h->epochs - 1 && last->epoch_end))
        return BW_OK;
    return bw_fail(err, BW_EUSAGE,
                   "%s: truncated: the header promises %.0f steps (%d epochs of %ld) but the "
                   "trace holds %ld step records, the last in epoch %d of %d",
                   path, promised, h->epochs, h->steps_per_epoch, t->n_steps, last->epoch + 1,
                   h->epochs);
}

/* Step i's three norm arrays in the trace's block. */
static double *step_norms(const Trace *t, long i)
{
    return t->norms + (size_t)i * TRACE_NORM_ARRAYS * (size_t)t->h.n_layers;
}

/* Doubles the room for steps and their norms; 0 when out of memory (the trace keeps its own).
 * The first room holds 1,024 steps, fewer for a trace of many layers (a few MiB of norms):
 * what is reserved before a step is read stays small whatever the header says. */
static int grow_steps(Trace *t, long *cap)
{
    long first = (1L << 20) / t->h.n_layers;
    long grown = *cap ? 2 * *cap : first < 1 ? 1 : first > 1024 ? 1024 : first;
    /* raw alloc: sized by the file: too large is its reader's error */
    TraceStep *s = realloc(t->steps, sizeof *s * (size_t)grown);
    if (!s) return 0;
    t->steps = s;
    /* raw alloc: sized by the file: too large is its reader's error */
    double *n =
        realloc(t->norms, sizeof *n * TRACE_NORM_ARRAYS * (size_t)t->h.n_layers * (size_t)grown);
    if (!n) return 0;
    t->norms = n;
    *cap = grown;
    return 1;
}

/* Each step's norm arrays, pointed into its block of t->norms (which moved as it grew). */
static void point_norms(Trace *t)
{
    const int n = t->h.n_layers;
    for (long i = 0; i < t->n_steps; i++) {
        TraceStep *s = &t->steps[i];
        double *b = step_norms(t, i);
        s->grad_norms = b;
        s->grad_norms_rank0 = s->has_rank0 ? b + n : NULL;
        s->epoch_norms = s->has_epoch_norms ? b + 2 * n : NULL;
        s->epoch_norms_rank0 = s->has_epoch_rank0 ? b + 3 * n : NULL;
        s->levels = s->has_decision && s->levels ? b + 4 * n : NULL;
    }
}

/* One record (a line's JSON): the header first, then steps and evaluations. */
static int read_record(const Where *w, json_t *o, Trace *t, long *steps_cap, long *evals_cap,
                       int *have_header)
{
    if (!json_is_object(o)) return bad(w, "expected a JSON object");
    if (!*have_header) {
        *have_header = 1;
        return read_header(w, o, &t->h);
    }
    char type[16] = "";
    int rc = get_str(w, o, "type", 1, type, sizeof type);
    if (rc) return rc;
    if (strcmp(type, "step") == 0) {
        if (t->n_steps == *steps_cap && !grow_steps(t, steps_cap))
            return bw_fail(w->err, BW_ERUNTIME, "%s: out of memory", w->path);
        rc = read_step(w, o, t, &t->steps[t->n_steps], step_norms(t, t->n_steps));
        if (rc == BW_OK) t->n_steps++;
        return rc;
    }
    if (strcmp(type, "eval") != 0)
        return bad(w, "\"type\": expected \"step\" or \"eval\", got \"%s\"", type);
    if (t->n_evals == *evals_cap) {
        long grown = *evals_cap ? 2 * *evals_cap : 64;
        /* raw alloc: sized by the file: too large is its reader's error */
        TraceEval *e = realloc(t->evals, sizeof *t->evals * (size_t)grown);
        if (!e) return bw_fail(w->err, BW_ERUNTIME, "%s: out of memory", w->path);
        t->evals = e;
        *evals_cap = grown;
    }
    int again = 0;
    rc = read_eval(w, o, t, &t->evals[t->n_evals], &again);
    if (rc == BW_OK && !again) t->n_evals++;
    return rc;
}

/* Reads path's records into t: all of them, or (header_only) until the header is read.
 * flag: the CLI flag that named the file, for the errors about the file itself. */
static int read_records(const char *path, const char *flag, Trace *t, int header_only, BwError *err)
{
    int rc = infile_check(flag, path, err);
    if (rc) return rc;
    char why[256];
    LineSrc *src = lines_open(path, why, sizeof why);
    if (!src) return bw_fail(err, BW_EUSAGE, "%s %s: %s", flag, path, why);
    Where w = {path, 0, err};
    long steps_cap = 0, evals_cap = 0;
    int have_header = 0, complete = 0, got = 0;
    char *line;
    size_t len;
    while (rc == BW_OK && !(header_only && have_header) &&
           (got = lines_next(src, &line, &len, &complete, why, sizeof why)) > 0) {
        w.line++;
        if (strspn(line, " \t\r") == len) continue; /* blank lines are allowed */
        json_error_t jerr;
        json_t *o = json_loadb(line, len, JSON_REJECT_DUPLICATES, &jerr);
        if (!o && !complete)
            rc = bw_fail(err, BW_EUSAGE,
                         "%s: truncated: the file ends within line %ld, in the middle of a record",
                         path, w.line);
        else if (!o)
            rc = bw_fail(err, BW_EUSAGE, "%s:%ld:%d: %s", path, w.line, jerr.column, jerr.text);
        else
            rc = read_record(&w, o, t, &steps_cap, &evals_cap, &have_header);
        json_decref(o);
    }
    if (rc == BW_OK && got < 0 && !(header_only && have_header))
        rc = bw_fail(err, BW_EUSAGE, "%s: %s (line %ld)", path, why, w.line + 1);
    lines_close(src);
    if (rc == BW_OK && !have_header) rc = bw_fail(err, BW_EUSAGE, "%s: empty trace", path);
    return rc;
}

int trace_read(const char *path, Trace *t, BwError *err)
{
    return trace_read_flag(path, "--trace", t, err);
}

int trace_read_flag(const char *path, const char *flag, Trace *t, BwError *err)
{
    memset(t, 0, sizeof *t);
    int rc = read_records(path, flag, t, 0, err);
    if (rc == BW_OK && t->n_steps == 0)
        rc = bw_fail(err, BW_EUSAGE, "%s: the trace has no step records", path);
    if (rc == BW_OK) rc = check_complete(path, t, err);
    if (rc == BW_OK) point_norms(t);
    if (rc) trace_free(t);
    snprintf(t->path, sizeof t->path, "%s", path);
    return rc;
}

int trace_read_header(const char *path, const char *flag, TraceHeader *h, BwError *err)
{
    Trace t;
    memset(&t, 0, sizeof t);
    int rc = read_records(path, flag, &t, 1, err);
    *h = t.h;
    t.h.layers = NULL;
    trace_free(&t);
    if (rc) trace_header_free(h);
    return rc;
}

void trace_header_free(TraceHeader *h)
{
    free(h->layers);
    h->layers = NULL;
    h->n_layers = 0;
}

void trace_free(Trace *t)
{
    free(t->steps);
    free(t->evals);
    free(t->norms);
    free(t->h.layers);
    t->steps = NULL;
    t->evals = NULL;
    t->norms = NULL;
    t->h.layers = NULL;
    t->h.n_layers = 0;
    t->n_steps = t->n_evals = 0;
}
