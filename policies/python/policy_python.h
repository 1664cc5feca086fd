/* policy_python.h: policies written in Python (`--policy ./mypolicy.py[:key=value,...]`), run by
 * a CPython embedded in bellows. The file defines one subclass of bellows_policy.Policy
 * (policies/python/bellows_policy.py documents it); policy.c treats it as it treats a plugin:
 * policy_python_open runs the file and gives an ops table (name, help, mode, options, ...)
 * whose operations call the class's methods, so the core's option parsing, checks and
 * wrappers are the same for C and Python policies.
 *
 * What C policies lack: a Python method can fail. observe and decide record the failure (an
 * exception, or a decision of the wrong type) and policy_python_status returns it after the
 * step: BW_ERUNTIME with the file, line and function, or BW_EINTR for a KeyboardInterrupt
 * (Ctrl-C while the policy ran). init's failures are init's usual EUSAGE/ERUNTIME.
 *
 * Built from policy_python.c, py_values.c and py_interp.c when CMake finds Python's embedding
 * library (BELLOWS_PYTHON), else from policy_python_none.c, whose open says how to get it. */
#ifndef BELLOWS_POLICY_PYTHON_H
#define BELLOWS_POLICY_PYTHON_H

#include <stdio.h>

#include "policy.h"

typedef struct PyPolicyFile PyPolicyFile;

/* Runs the file at path (starting the interpreter on first use) and fills *ops from its
 * Policy subclass; *out is for the calls below. Usage errors (no such file, a syntax error or
 * an exception while it runs, no or several Policy classes, bad attributes, no Python in this
 * bellows) start "FLAG PATH: ". */
int policy_python_open(const char *path, const char *flag, PyPolicyFile **out, PolicyOps *ops,
                       BwError *err);
/* Gives the policy's state (ops->state_size bytes, zeroed, allocated by the core) its file;
 * call before ops->init. */
void policy_python_bind(PyPolicyFile *f, void *state);
/* After ops->observe and ops->decide: BW_OK, or the failure of that step (above); the
 * message starts with the spec. */
int policy_python_status(PyPolicyFile *f, const char *spec, long step, BwError *err);
/* After ops->outer: BW_OK, or how outer() failed (an exception, or not a dict of
 * bellows_policy.Outer's keys), EUSAGE (EINTR for a Ctrl-C) with "WHAT: " in front. */
int policy_python_failed(PyPolicyFile *f, const char *what, BwError *err);
void policy_python_close(PyPolicyFile *f); /* NULL: a no-op */

/* Prints the module's documentation (pydoc's text of bellows_policy). */
int policy_python_print_doc(FILE *out, BwError *err);

#endif
