/* py_impl.h: what the files of the Python binding share (policy_python.c: files and their ops;
 * py_values.c: the context, observation and decision as Python objects; py_interp.c: the
 * interpreter). Not for anything outside policies/python/. */
#ifndef BELLOWS_PY_IMPL_H
#define BELLOWS_PY_IMPL_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "policy_python.h"

/* What the binding takes from the interpreter once: bellows_policy's classes and helpers,
 * numpy.frombuffer and float64, and the attribute names it sets each step, interned. */
typedef struct {
    PyObject *module; /* bellows_policy */
    PyObject *ctx_cls, *obs_cls, *dec_cls, *layer_cls, *usage_error;
    PyObject *load, *unload, *describe_class, *error_text; /* bellows_policy._load, ... */
    PyObject *outer_tuple;                                 /* bellows_policy._outer_tuple */
    PyObject *frombuffer, *float64;
    PyObject *s_init, *s_observe, *s_decide, *s_describe, *s_ctx, *s_outer; /* method names */
    PyObject *s_level, *s_batch, *s_average, *s_period;                     /* Decision's */
    PyObject *obs_names[32], *ctx_names[32]; /* py_values.c's tables */
} PyBinding;

/* The interpreter, started on first use (py_interp.c); the GIL held between enter and leave.
 * NULL (and err, "WHAT: ..."): Python cannot start, or lacks NumPy or bellows_policy.py. */
const PyBinding *py_enter(const char *what, PyGILState_STATE *gil, BwError *err);
void py_leave(PyGILState_STATE gil);
/* Around every call of a policy's method: while inside, a first SIGINT raises
 * KeyboardInterrupt in the policy's code. py_call_begin returns 0 if a SIGINT came already
 * (then do not call, and do not call py_call_end). */
int py_call_begin(void);
void py_call_end(void);
/* The pending exception as one line naming the file, line and function for the policy at path
 * (bellows_policy._error_text), into msg; clears it. Returns BW_EINTR for KeyboardInterrupt,
 * BW_EUSAGE for bellows_policy.UsageError, else BW_ERUNTIME. */
int py_error(const PyBinding *b, const char *path, char *msg, size_t n);

/* ---- py_values.c ---- */

/* Zero-copy NumPy views of the core's arrays, one per pointer, kept while it stays the same. */
enum { PY_ARR_NORM0, PY_ARR_NORM, PY_ARR_EPOCH0, PY_ARR_EPOCH, PY_ARR_LEVEL, PY_N_ARR };
typedef struct {
    const void *ptr[PY_N_ARR];
    PyObject *arr[PY_N_ARR];
} PyArrays;

/* Checks that the C tables of py_values.c fill exactly the fields the module documents
 * (Context.FIELDS, Observation.FIELDS) and interns their names into b. */
int py_values_check(PyBinding *b, BwError *err);
/* A new Context for ctx, its check_level calling ctx's (new reference; NULL: an exception). */
PyObject *py_context(const PyBinding *b, const BellowsPolicyContext *ctx);
/* A new Observation of obs, whose arrays have n entries. */
PyObject *py_observation(const PyBinding *b, PyArrays *a, const BellowsPolicyObs *obs, int n);
/* Puts d (pre-filled by the core) into the Decision dec, level as a writable view. */
int py_decision_in(const PyBinding *b, PyArrays *a, PyObject *dec, const BellowsPolicyDecision *d,
                   int n);
/* Reads dec's batch, average and period back into d; 0, or -1 with a message in msg. */
int py_decision_out(const PyBinding *b, PyObject *dec, BellowsPolicyDecision *d, char *msg,
                    size_t n);
void py_arrays_clear(PyArrays *a);

#endif
