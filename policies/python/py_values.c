/* py_values.c: the context, the observation and the decision of bellows_policy.h as the Python
 * objects of bellows_policy.py (Context, Observation, Decision). One table per struct says
 * which member becomes which attribute; at start the tables are checked against the module's
 * FIELDS, both ways, so the C side and the documented one cannot drift (and
 * tests/check_policy_header.py checks FIELDS against the header). Arrays are NumPy views of the
 * core's memory (numpy.frombuffer on a memoryview): no copy, read-only for the observation,
 * writable for decision.level; a view is kept while its pointer stays the same. */
#include "py_impl.h"

#include <limits.h>
#include <string.h>

typedef enum {
    V_INT,
    V_LONG,
    V_UINT,
    V_BOOL,
    V_DOUBLE,
    V_ARRAY,
    V_STR,
    V_LAYERS,
    V_DECAYS,
    V_CHECK
} VKind;

typedef struct {
    const char *name;
    VKind kind;
    size_t at;
    int arr; /* V_ARRAY: the PyArrays slot */
} VField;

#define OBS(f, k)                                                                                  \
    {                                                                                              \
#f, k, offsetof(BellowsPolicyObs, f), -1                                                   \
    }
#define OBSA(f, a)                                                                                 \
    {                                                                                              \
#f, V_ARRAY, offsetof(BellowsPolicyObs, f), a                                              \
    }
static const VField obs_fields[] = {
    OBS(step, V_LONG),
    OBS(epoch, V_INT),
    OBS(epoch_start, V_BOOL),
    OBS(epoch_end, V_BOOL),
    OBS(lr_decayed, V_BOOL),
    OBS(lr, V_DOUBLE),
    OBS(loss, V_DOUBLE),
    OBSA(grad_norm_rank0, PY_ARR_NORM0),
    OBSA(grad_norm_mean, PY_ARR_NORM),
    OBS(averaged, V_BOOL),
    OBS(param_variance, V_DOUBLE),
    OBS(sim_time_s, V_DOUBLE),
    OBS(bytes_per_worker, V_DOUBLE),
    OBSA(epoch_norm_rank0, PY_ARR_EPOCH0),
    OBSA(epoch_norm_mean, PY_ARR_EPOCH),
    OBS(have, V_UINT),
    OBS(compute_s, V_DOUBLE),
    OBS(compress_s, V_DOUBLE),
    OBS(comm_s, V_DOUBLE),
    OBS(wait_s, V_DOUBLE),
    OBS(eval_accuracy, V_DOUBLE),
    OBS(eval_loss, V_DOUBLE),
    OBS(eval_step, V_LONG),
    OBS(eval_time_s, V_DOUBLE),
};

#define CTX(f, k)                                                                                  \
    {                                                                                              \
#f, k, offsetof(BellowsPolicyContext, f), -1                                               \
    }
static const VField ctx_fields[] = {
    CTX(n_layers, V_INT),
    CTX(layers, V_LAYERS),
    CTX(workers, V_INT),
    CTX(epochs, V_INT),
    CTX(batch, V_INT),
    CTX(steps_per_epoch, V_LONG),
    CTX(lr0, V_DOUBLE),
    CTX(n_decays, V_INT),
    CTX(decay_epochs, V_DECAYS),
    CTX(compressor, V_STR),
    CTX(compressor_level, V_DOUBLE),
    CTX(check_level, V_CHECK),
    CTX(bandwidth_Bps, V_DOUBLE),
    CTX(latency_s, V_DOUBLE),
    CTX(gpus_per_node, V_INT),
    CTX(nodes, V_INT),
    CTX(compressor_spec, V_STR),
    CTX(overlap, V_INT),
    CTX(lr_known, V_INT),
    CTX(lr_peak_scale, V_DOUBLE),
    CTX(warmup_epochs, V_DOUBLE),
    CTX(warmup_shape, V_INT),
    CTX(decay_factor, V_DOUBLE),
};
#define N_OBS ((int)(sizeof obs_fields / sizeof *obs_fields))
#define N_CTX ((int)(sizeof ctx_fields / sizeof *ctx_fields))

/* One class's FIELDS against one table, both ways; interns the names into names[]. */
static int check_table(PyObject *cls, const char *cname, const VField *t, int n, PyObject **names,
                       BwError *err)
{
    PyObject *fields = PyObject_GetAttrString(cls, "FIELDS");
    Py_ssize_t have = fields && PyDict_Check(fields) ? PyDict_Size(fields) : -1;
    int rc = BW_OK;
    for (int i = 0; rc == BW_OK && i < n; i++) {
        names[i] = PyUnicode_InternFromString(t[i].name);
        if (!names[i] || have < 0 || PyDict_Contains(fields, names[i]) != 1)
            rc = bw_fail(err, BW_EUSAGE,
                         "bellows_policy.py's %s.FIELDS lacks \"%s\", which this bellows fills: "
                         "the module and the binary are of different versions",
                         cname, t[i].name);
    }
    if (rc == BW_OK && have != n)
        rc = bw_fail(err, BW_EUSAGE,
                     "bellows_policy.py's %s.FIELDS has %zd fields, this bellows fills %d: the "
                     "module and the binary are of different versions",
                     cname, have, n);
    PyErr_Clear();
    Py_XDECREF(fields);
    return rc;
}

int py_values_check(PyBinding *b, BwError *err)
{
    assert(N_OBS <= (int)(sizeof b->obs_names / sizeof *b->obs_names));
    assert(N_CTX <= (int)(sizeof b->ctx_names / sizeof *b->ctx_names));
    int rc = check_table(b->obs_cls, "Observation", obs_fields, N_OBS, b->obs_names, err);
    return rc ? rc : check_table(b->ctx_cls, "Context", ctx_fields, N_CTX, b->ctx_names, err);
}

void py_arrays_clear(PyArrays *a)
{
    for (int k = 0; k < PY_N_ARR; k++) {
        Py_CLEAR(a->arr[k]);
        a->ptr[k] = NULL;
    }
}

/* A view of p[0..n) (new reference; None for NULL), the same object while p is. */
static PyObject *view(const PyBinding *b, PyArrays *a, int k, const double *p, int n, int writable)
{
    if (!p) Py_RETURN_NONE;
    if (a->ptr[k] != p || !a->arr[k]) {
        PyObject *mv = PyMemoryView_FromMemory((char *)(uintptr_t)p, (Py_ssize_t)n * 8,
                                               writable ? PyBUF_WRITE : PyBUF_READ);
        PyObject *arr =
            mv ? PyObject_CallFunctionObjArgs(b->frombuffer, mv, b->float64, NULL) : NULL;
        Py_XDECREF(mv);
        if (!arr) return NULL;
        Py_XSETREF(a->arr[k], arr);
        a->ptr[k] = p;
    }
    Py_INCREF(a->arr[k]);
    return a->arr[k];
}

static PyObject *number(VKind kind, const char *at)
{
    switch (kind) {
    case V_INT:
        return PyLong_FromLong(*(const int *)(const void *)at);
    case V_LONG:
        return PyLong_FromLong(*(const long *)(const void *)at);
    case V_UINT:
        return PyLong_FromUnsignedLong(*(const unsigned *)(const void *)at);
    case V_BOOL:
        return PyBool_FromLong(*(const int *)(const void *)at);
    case V_DOUBLE:
        return PyFloat_FromDouble(*(const double *)(const void *)at);
    default:
        break;
    }
    assert(0 && "not a number field");
    return NULL;
}

PyObject *py_observation(const PyBinding *b, PyArrays *a, const BellowsPolicyObs *obs, int n)
{
    PyObject *o = PyObject_CallNoArgs(b->obs_cls);
    for (int i = 0; o && i < N_OBS; i++) {
        const VField *f = &obs_fields[i];
        const char *at = (const char *)obs + f->at;
        PyObject *v = f->kind == V_ARRAY
                          ? view(b, a, f->arr, *(const double *const *)(const void *)at, n, 0)
                          : number(f->kind, at);
        if (!v || PyObject_SetAttr(o, b->obs_names[i], v) != 0) Py_CLEAR(o);
        Py_XDECREF(v);
    }
    return o;
}

/* ctx.check_level(level, what="level"): the core's check; UsageError with its message. */
static PyObject *check_level(PyObject *self, PyObject *args)
{
    const BellowsPolicyContext *ctx = PyCapsule_GetPointer(self, "bellows.ctx");
    const PyBinding *b = ctx ? PyCapsule_GetContext(self) : NULL;
    double level;
    const char *what = "level";
    if (!b || !PyArg_ParseTuple(args, "d|s:check_level", &level, &what)) return NULL;
    char msg[512] = "";
    if (ctx->check_level(ctx, level, what, msg, sizeof msg) != BELLOWS_POLICY_OK) {
        PyErr_SetString(b->usage_error, msg[0] ? msg : "level refused");
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyMethodDef check_level_def = {"check_level", check_level, METH_VARARGS,
                                      "check_level(level, what='level'): raises UsageError if "
                                      "the run's compressor cannot take level"};

static PyObject *layers(const PyBinding *b, const BellowsPolicyContext *ctx)
{
    PyObject *t = PyTuple_New(ctx->n_layers);
    for (int l = 0; t && l < ctx->n_layers; l++) {
        const BellowsPolicyLayer *L = &ctx->layers[l];
        PyObject *name =
            PyUnicode_DecodeUTF8(L->name, (Py_ssize_t)strnlen(L->name, sizeof L->name), "replace");
        PyObject *v =
            name ? PyObject_CallFunction(b->layer_cls, "Oiii", name, L->rows, L->cols, L->ndim)
                 : NULL;
        Py_XDECREF(name);
        if (!v)
            Py_CLEAR(t);
        else
            PyTuple_SET_ITEM(t, l, v);
    }
    return t;
}

static PyObject *ctx_value(const PyBinding *b, const BellowsPolicyContext *ctx, const VField *f)
{
    const char *at = (const char *)ctx + f->at;
    switch (f->kind) {
    case V_LAYERS:
        return layers(b, ctx);
    case V_STR:
        return PyUnicode_DecodeUTF8(at, (Py_ssize_t)strnlen(at, 256), "replace");
    case V_DECAYS: {
        PyObject *t = PyTuple_New(ctx->n_decays);
        for (int i = 0; t && i < ctx->n_decays; i++) {
            PyObject *e = PyLong_FromLong(ctx->decay_epochs[i]);
            if (!e)
                Py_CLEAR(t);
            else
                PyTuple_SET_ITEM(t, i, e);
        }
        return t;
    }
    case V_CHECK: {
        PyObject *cap = PyCapsule_New((void *)(uintptr_t)ctx, "bellows.ctx", NULL);
        if (cap && PyCapsule_SetContext(cap, (void *)(uintptr_t)b) != 0) Py_CLEAR(cap);
        PyObject *fn = cap ? PyCFunction_New(&check_level_def, cap) : NULL;
        Py_XDECREF(cap);
        return fn;
    }
    default:
        return number(f->kind, at);
    }
}

PyObject *py_context(const PyBinding *b, const BellowsPolicyContext *ctx)
{
    PyObject *o = PyObject_CallNoArgs(b->ctx_cls);
    for (int i = 0; o && i < N_CTX; i++) {
        PyObject *v = ctx_value(b, ctx, &ctx_fields[i]);
        if (!v || PyObject_SetAttr(o, b->ctx_names[i], v) != 0) Py_CLEAR(o);
        Py_XDECREF(v);
    }
    return o;
}

static int set_int(PyObject *o, PyObject *name, long v, int as_bool)
{
    PyObject *x = as_bool ? PyBool_FromLong(v) : PyLong_FromLong(v);
    int rc = x ? PyObject_SetAttr(o, name, x) : -1;
    Py_XDECREF(x);
    return rc;
}

int py_decision_in(const PyBinding *b, PyArrays *a, PyObject *dec, const BellowsPolicyDecision *d,
                   int n)
{
    PyObject *level = view(b, a, PY_ARR_LEVEL, d->level, n, 1);
    int rc = level ? PyObject_SetAttr(dec, b->s_level, level) : -1;
    Py_XDECREF(level);
    if (rc == 0) rc = set_int(dec, b->s_batch, d->batch, 0);
    if (rc == 0) rc = set_int(dec, b->s_average, d->average, 1);
    if (rc == 0) rc = set_int(dec, b->s_period, d->period, 0);
    return rc;
}

/* dec.NAME as an int (anything with __index__: int, bool, a NumPy integer); -1 with msg. */
static int get_int(PyObject *dec, PyObject *name, int *out, char *msg, size_t n)
{
    PyObject *v = PyObject_GetAttr(dec, name);
    PyObject *i = v ? PyNumber_Index(v) : NULL;
    long x = i ? PyLong_AsLong(i) : -1;
    int ok = i && !(x == -1 && PyErr_Occurred()) && x >= INT_MIN && x <= INT_MAX;
    if (ok)
        *out = (int)x;
    else
        snprintf(msg, n, "decision.%s is %s%s%s; expected an int", PyUnicode_AsUTF8(name),
                 v ? "a " : "unset", v ? Py_TYPE(v)->tp_name : "", i ? " out of range" : "");
    PyErr_Clear();
    Py_XDECREF(i);
    Py_XDECREF(v);
    return ok ? 0 : -1;
}

int py_decision_out(const PyBinding *b, PyObject *dec, BellowsPolicyDecision *d, char *msg,
                    size_t n)
{
    if (get_int(dec, b->s_batch, &d->batch, msg, n) ||
        get_int(dec, b->s_average, &d->average, msg, n) ||
        get_int(dec, b->s_period, &d->period, msg, n))
        return -1;
    return 0;
}
