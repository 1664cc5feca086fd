/* policy_python.c: a Python policy file as a policy of the core (policy_python.h). Opening runs
 * the file as a fresh module (bellows_policy._load) and reads its Policy subclass's attributes
 * into an ops table (bellows_policy._describe_class; the strings stay owned by the tuple it
 * returns, kept until close). The table's operations are this file's: init makes the instance
 * and calls its init(ctx, opts); observe and decide build the Observation, call the methods and
 * read the Decision back; describe returns what describe() said after the last decide; outer
 * (a class that defines outer()) reads its dict through bellows_policy._outer_tuple, and the
 * core checks the values as a C plugin's (policy.c plugin_outer). A failure inside observe or
 * decide is kept in the file and reported by policy_python_status; after one, the policy is not
 * called again. outer's is reported by policy_python_failed, before the run. */
#include "py_impl.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct PyPolicyFile {
    char path[SPEC_MAX_TEXT];
    PyObject *modname, *cls; /* the module's name in sys.modules; its Policy subclass */
    PyObject *desc;          /* _describe_class(cls): holds the strings of ops and opts */
    BellowsPolicyOpt opts[BELLOWS_POLICY_MAX_OPTS];
    struct PyRun *run; /* the bound policy's state */
    int status;        /* the last step's failure: BW_OK, BW_ERUNTIME or BW_EINTR */
    char msg[400];
};

/* A policy's state (ops.state_size bytes, zeroed by the core). */
typedef struct PyRun {
    PyPolicyFile *file;
    PyObject *inst, *ctx, *dec; /* the instance, its Context, the Decision reused each step */
    PyObject *obs;              /* observe's Observation, which decide sees too */
    PyArrays arrays;
    char *state; /* describe()'s last text */
} PyRun;

/* The exception raised by the policy's code as the file's failure, unless one is kept. */
static void fail_step(PyPolicyFile *f, const PyBinding *b)
{
    int rc = py_error(b, f->path, f->msg, sizeof f->msg);
    if (!f->status) f->status = rc == BW_EINTR ? BW_EINTR : BW_ERUNTIME;
}

/* A method of the instance with 0, 1 or 2 arguments, between py_call_begin and _end. */
static PyObject *call(PyPolicyFile *f, PyObject *inst, PyObject *name, PyObject *a1, PyObject *a2)
{
    if (!py_call_begin()) {
        f->status = BW_EINTR;
        snprintf(f->msg, sizeof f->msg, "interrupted");
        return NULL;
    }
    /* args[0] is free: with PY_VECTORCALL_ARGUMENTS_OFFSET the callee may use args[-1] */
    PyObject *args[4] = {NULL, inst, a1, a2};
    size_t n = a2 ? 3 : a1 ? 2 : 1;
    PyObject *r =
        PyObject_VectorcallMethod(name, args + 1, n | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
    py_call_end();
    return r;
}

static void run_clear(PyRun *r)
{
    Py_CLEAR(r->inst);
    Py_CLEAR(r->ctx);
    Py_CLEAR(r->dec);
    Py_CLEAR(r->obs);
    py_arrays_clear(&r->arrays);
    free(r->state);
    r->state = NULL;
}

/* opts: key -> None (not set), float (DOUBLE), int (INT) or the chosen word (CHOICE). */
static PyObject *opts_dict(const BellowsPolicyOps *ops, const BellowsPolicyValue *vals)
{
    PyObject *d = PyDict_New();
    for (int i = 0; d && i < ops->n_opts; i++) {
        const BellowsPolicyOpt *o = &ops->opts[i];
        PyObject *v = NULL;
        if (!vals[i].set) {
            v = Py_NewRef(Py_None);
        } else if (o->type == BELLOWS_OPT_DOUBLE) {
            v = PyFloat_FromDouble(vals[i].num);
        } else if (o->type == BELLOWS_OPT_INT) {
            v = PyLong_FromDouble(vals[i].num);
        } else {
            const char *w = o->choices;
            for (int k = 0; k < vals[i].choice && w; k++)
                w = strchr(w, '|') ? strchr(w, '|') + 1 : NULL;
            v = w ? PyUnicode_FromStringAndSize(w, (Py_ssize_t)strcspn(w, "|")) : NULL;
        }
        if (!v || PyDict_SetItemString(d, o->key, v) != 0) Py_CLEAR(d);
        Py_XDECREF(v);
    }
    return d;
}

static int py_init(BellowsPolicy *p, const BellowsPolicyValue *vals, char *err, size_t errlen)
{
    PyRun *r = p->state;
    PyPolicyFile *f = r->file;
    PyGILState_STATE gil;
    BwError e;
    const PyBinding *b = py_enter(f->path, &gil, &e);
    if (!b) return snprintf(err, errlen, "%s", e.msg), BELLOWS_POLICY_EUSAGE;
    PyObject *opts = NULL, *res = NULL;
    int ok = py_call_begin();
    if (ok) {
        r->inst = PyObject_CallNoArgs(f->cls); /* the class's own __init__, if any */
        py_call_end();
    } else {
        f->status = BW_EINTR;
        snprintf(f->msg, sizeof f->msg, "interrupted");
    }
    ok = ok && r->inst && (r->ctx = py_context(b, p->ctx)) &&
         PyObject_SetAttr(r->inst, b->s_ctx, r->ctx) == 0 && (opts = opts_dict(p->ops, vals)) &&
         (r->dec = PyObject_CallNoArgs(b->dec_cls)) &&
         (res = call(f, r->inst, b->s_init, r->ctx, opts));
    int rc = BELLOWS_POLICY_OK;
    if (!ok && f->status) { /* a Ctrl-C before it ran */
        snprintf(err, errlen, "%s", f->msg);
        rc = BELLOWS_POLICY_ERUNTIME;
    } else if (!ok) { /* before the run: any exception is a usage error (exit 2) */
        rc = py_error(b, f->path, err, errlen) == BW_EINTR ? BELLOWS_POLICY_ERUNTIME
                                                           : BELLOWS_POLICY_EUSAGE;
    }
    if (!ok) run_clear(r);
    Py_XDECREF(res);
    Py_XDECREF(opts);
    py_leave(gil);
    return rc;
}

static void py_observe(BellowsPolicy *p, const BellowsPolicyObs *obs)
{
    PyRun *r = p->state;
    PyPolicyFile *f = r->file;
    if (f->status) return;
    PyGILState_STATE gil;
    const PyBinding *b = py_enter(f->path, &gil, NULL);
    assert(b && "the interpreter started when the file was opened");
    Py_CLEAR(r->obs);
    r->obs = py_observation(b, &r->arrays, obs, p->ctx->n_layers);
    PyObject *res = r->obs ? call(f, r->inst, b->s_observe, r->obs, NULL) : NULL;
    if (!res && !f->status) fail_step(f, b);
    Py_XDECREF(res);
    py_leave(gil);
}

/* describe() after decide: its text, kept for py_describe; 0, or -1 with the failure kept. */
static int run_describe(PyPolicyFile *f, const PyBinding *b, PyRun *r)
{
    PyObject *t = call(f, r->inst, b->s_describe, NULL, NULL);
    if (!t) return -1;
    const char *s = PyUnicode_Check(t) ? PyUnicode_AsUTF8(t) : NULL;
    /* raw alloc: also libbellows_policy.so's, in its caller's process: no exit */
    char *copy = s ? strdup(s) : NULL;
    if (copy) {
        free(r->state);
        r->state = copy;
    } else if (!PyErr_Occurred()) {
        f->status = BW_ERUNTIME;
        snprintf(f->msg, sizeof f->msg, "describe() returned %s; expected a str",
                 Py_TYPE(t)->tp_name);
    }
    Py_DECREF(t);
    return copy ? 0 : -1;
}

static void py_decide(BellowsPolicy *p, const BellowsPolicyObs *obs, BellowsPolicyDecision *d)
{
    PyRun *r = p->state;
    PyPolicyFile *f = r->file;
    if (f->status) return;
    PyGILState_STATE gil;
    const PyBinding *b = py_enter(f->path, &gil, NULL);
    assert(b && "the interpreter started when the file was opened");
    PyObject *o = r->obs ? r->obs : py_observation(b, &r->arrays, obs, p->ctx->n_layers);
    r->obs = NULL;
    const int n = p->ctx->n_layers;
    PyObject *res = o && py_decision_in(b, &r->arrays, r->dec, d, n) == 0
                        ? call(f, r->inst, b->s_decide, o, r->dec)
                        : NULL;
    if (res && py_decision_out(b, r->dec, d, f->msg, sizeof f->msg) != 0)
        f->status = BW_ERUNTIME;
    else if (res && p->ops->describe)
        run_describe(f, b, r);
    if ((!res || PyErr_Occurred()) && !f->status) fail_step(f, b);
    PyErr_Clear();
    Py_XDECREF(res);
    Py_XDECREF(o);
    py_leave(gil);
}

static void py_describe(const BellowsPolicy *p, char *buf, size_t n)
{
    const PyRun *r = p->state;
    snprintf(buf, n, "%s", r->state ? r->state : p->ops->name);
}

static void py_free(BellowsPolicy *p)
{
    PyRun *r = p->state;
    PyGILState_STATE gil;
    if (!py_enter(r->file->path, &gil, NULL)) return;
    run_clear(r);
    if (PyErr_CheckSignals() != 0) PyErr_Clear(); /* a Ctrl-C that came as it returned */
    py_leave(gil);
}

/* outer(): 0 for None, 1 with *o filled from its dict; 0 with the failure kept in the file
 * (policy_python_failed) if it raised or returned something else. */
static int py_outer(const BellowsPolicy *p, BellowsPolicyOuter *o)
{
    PyRun *r = p->state;
    PyPolicyFile *f = r->file;
    if (f->status) return 0;
    PyGILState_STATE gil;
    const PyBinding *b = py_enter(f->path, &gil, NULL);
    assert(b && "the interpreter started when the file was opened");
    PyObject *res = call(f, r->inst, b->s_outer, NULL, NULL);
    PyObject *t = res ? PyObject_CallFunctionObjArgs(b->outer_tuple, f->cls, res, NULL) : NULL;
    int on = 0;
    if (t && t != Py_None) {
        *o = (BellowsPolicyOuter){0};
        on = PyArg_ParseTuple(t, "dddiiiii", &o->lr, &o->momentum, &o->alpha, &o->h, &o->fragments,
                              &o->tau, &o->bits, &o->eager);
    }
    if (!t || PyErr_Occurred()) {
        if (!f->status) f->status = py_error(b, f->path, f->msg, sizeof f->msg);
        on = 0;
    }
    Py_XDECREF(t);
    Py_XDECREF(res);
    py_leave(gil);
    return on;
}

int policy_python_failed(PyPolicyFile *f, const char *what, BwError *err)
{
    if (!f->status) return BW_OK;
    return bw_fail(err, f->status == BW_EINTR ? BW_EINTR : BW_EUSAGE, "%s: %s", what, f->msg);
}

/* The ops table from _describe_class's tuple (version, name, help, source, mode, options,
 * reconstruction, needs_grad_norms, needs, has_init, has_observe, has_describe, price_blind,
 * has_outer); -1 with an exception set if an item is not of its type. */
static int fill_ops(PyPolicyFile *f, PyObject *t, PolicyOps *ops)
{
    PyObject *it[14];
    if (!PyTuple_Check(t) || PyTuple_Size(t) != 14) {
        PyErr_SetString(PyExc_TypeError, "_describe_class: expected a 14-tuple");
        return -1;
    }
    for (int i = 0; i < 14; i++) it[i] = PyTuple_GET_ITEM(t, i);
    ops->iVersion = (int)PyLong_AsLong(it[0]);
    ops->name = PyUnicode_AsUTF8(it[1]);
    ops->help = PyUnicode_AsUTF8(it[2]);
    ops->source = it[3] == Py_None ? NULL : PyUnicode_AsUTF8(it[3]);
    ops->mode = (int)PyLong_AsLong(it[4]);
    ops->n_opts = (int)PyTuple_Size(it[5]);
    for (int i = 0; i < ops->n_opts && i < BELLOWS_POLICY_MAX_OPTS; i++) {
        PyObject *o = PyTuple_GET_ITEM(it[5], i); /* (key, type, default, lo, hi, choices, help) */
        BellowsPolicyOpt *x = &f->opts[i];
        x->key = PyUnicode_AsUTF8(PyTuple_GET_ITEM(o, 0));
        x->type = (int)PyLong_AsLong(PyTuple_GET_ITEM(o, 1));
        x->def =
            PyTuple_GET_ITEM(o, 2) == Py_None ? NULL : PyUnicode_AsUTF8(PyTuple_GET_ITEM(o, 2));
        x->lo = PyFloat_AsDouble(PyTuple_GET_ITEM(o, 3));
        x->hi = PyFloat_AsDouble(PyTuple_GET_ITEM(o, 4));
        x->choices =
            PyTuple_GET_ITEM(o, 5) == Py_None ? NULL : PyUnicode_AsUTF8(PyTuple_GET_ITEM(o, 5));
        x->help = PyUnicode_AsUTF8(PyTuple_GET_ITEM(o, 6));
    }
    ops->opts = ops->n_opts ? f->opts : NULL;
    ops->state_size = sizeof(PyRun);
    ops->init = py_init; /* always: it makes the instance */
    ops->observe = PyObject_IsTrue(it[10]) ? py_observe : NULL;
    ops->decide = py_decide;
    ops->describe = PyObject_IsTrue(it[11]) ? py_describe : NULL;
    ops->free_impl = py_free;
    ops->reconstruction = (int)PyLong_AsLong(it[6]);
    ops->needs_grad_norms = (int)PyLong_AsLong(it[7]);
    ops->needs = (unsigned)PyLong_AsUnsignedLongMask(it[8]);
    ops->price_blind = (int)PyLong_AsLong(it[12]);
    ops->outer = PyObject_IsTrue(it[13]) ? py_outer : NULL;
    return PyErr_Occurred() ? -1 : 0;
}

/* Runs the file and reads its class; EUSAGE with "WHAT: line N...: ..." when it fails. */
static int load(PyPolicyFile *f, const PyBinding *b, const char *what, PolicyOps *ops, BwError *err)
{
    if (!py_call_begin()) return bw_fail(err, BW_EINTR, "%s: interrupted", what);
    PyObject *pair = PyObject_CallFunction(b->load, "s", f->path); /* runs the file */
    py_call_end();
    if (pair && PyTuple_Check(pair) && PyTuple_Size(pair) == 2) {
        f->modname = Py_NewRef(PyTuple_GET_ITEM(pair, 0));
        f->cls = Py_NewRef(PyTuple_GET_ITEM(pair, 1));
        f->desc = PyObject_CallOneArg(b->describe_class, f->cls);
    }
    Py_XDECREF(pair);
    if (f->desc && fill_ops(f, f->desc, ops) == 0) return BW_OK;
    char msg[400];
    int rc = py_error(b, f->path, msg, sizeof msg);
    return bw_fail(err, rc == BW_EINTR ? BW_EINTR : BW_EUSAGE, "%s: %s", what, msg);
}

int policy_python_open(const char *path, const char *flag, PyPolicyFile **out, PolicyOps *ops,
                       BwError *err)
{
    *out = NULL;
    memset(ops, 0, sizeof *ops);
    struct stat st;
    if (stat(path, &st) != 0) return bw_fail(err, BW_EUSAGE, "%s %s: no such file", flag, path);
    if (!S_ISREG(st.st_mode))
        return bw_fail(err, BW_EUSAGE, "%s %s: not a regular file", flag, path);
    char what[SPEC_MAX_TEXT + 64];
    snprintf(what, sizeof what, "%s %s", flag, path);
    /* raw alloc: also libbellows_policy.so's, in its caller's process: no exit */
    PyPolicyFile *f = calloc(1, sizeof *f);
    if (!f) return bw_fail(err, BW_ERUNTIME, "%s: out of memory", what);
    snprintf(f->path, sizeof f->path, "%s", path);
    PyGILState_STATE gil;
    const PyBinding *b = py_enter(what, &gil, err);
    if (!b) {
        free(f);
        return BW_EUSAGE;
    }
    int rc = load(f, b, what, ops, err);
    py_leave(gil);
    if (rc == BW_OK) rc = policy_ops_check(ops, what, err);
    if (rc) {
        policy_python_close(f);
        memset(ops, 0, sizeof *ops);
        return rc;
    }
    *out = f;
    return BW_OK;
}

void policy_python_bind(PyPolicyFile *f, void *state)
{
    PyRun *r = state;
    r->file = f;
    f->run = r;
}

int policy_python_status(PyPolicyFile *f, const char *spec, long step, BwError *err)
{
    if (!f->status) return BW_OK;
    return bw_fail(err, f->status, "--policy %s: %s (step %ld)", spec, f->msg, step);
}

void policy_python_close(PyPolicyFile *f)
{
    if (!f) return;
    PyGILState_STATE gil;
    const PyBinding *b = py_enter(f->path, &gil, NULL);
    if (b) {
        if (f->modname) Py_XDECREF(PyObject_CallOneArg(b->unload, f->modname));
        PyErr_Clear();
        Py_CLEAR(f->desc);
        Py_CLEAR(f->cls);
        Py_CLEAR(f->modname);
        py_leave(gil);
    }
    free(f);
}
