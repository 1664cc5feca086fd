/* py_interp.c: the CPython interpreter that runs Python policies, started on first use.
 *
 * Process-wide state, because the platform forces it: CPython has one main interpreter per
 * process, and it is never finalized (NumPy cannot be imported again after Py_FinalizeEx, and a
 * finalization would run policies' __del__ methods after the run), so the interpreter, the
 * objects this binding takes from it once (PyBinding) and whether it started live in `py`
 * below. The SIGINT hook (outfile_on_interrupt) and the fork handlers receive no argument, so
 * they read `py`.
 *
 * The interpreter is isolated from the environment (PYTHONPATH, PYTHONHOME, the user's site
 * folder, a pyenv on PATH: Debian's Python that bellows was built against, BELLOWS_PYTHON_HOME,
 * is the one used), its hash seed is fixed (the same command gives the same files), it writes
 * no bytecode (no __pycache__ beside a policy or in an installed tree), and it allocates with
 * malloc, so AddressSanitizer's leak check and valgrind see its objects as the heap blocks they
 * are. Forks (compare and sweep run each run in a child) go through PyOS_BeforeFork and
 * PyOS_AfterFork_* as os.fork does. */
#include "py_impl.h"

#include <pthread.h>
#include <signal.h>
#include <string.h>

#include "datadir.h"
#include "outfile.h"

#ifndef BELLOWS_PYTHON_HOME
#define BELLOWS_PYTHON_HOME "/usr"
#endif

static struct {
    int tried;   /* 1 once a start was attempted */
    BwError why; /* why it cannot run policies ("" if it can) */
    PyBinding b; /* valid when tried and why is "" */
    PyGILState_STATE fork_gil;
    volatile sig_atomic_t in_call; /* a policy's method is running (the SIGINT hook reads it) */
    int hosted; /* the process is a Python already (libbellows_policy.so under ctypes): its
                   interpreter runs the policies, its signals and forks are its own */
} py;

#if defined(__SANITIZE_ADDRESS__)
/* LeakSanitizer ignores what libpython allocates: CPython 3.11 loses about 5.7 KB (76 objects)
 * when it starts, finalized or not (measured with a ten-line embedding program), and its frames
 * have no frame pointers, so the leak reports' stacks stop inside it and cannot tell its losses
 * from this binding's Python objects. The binding's own C allocations are still checked. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
    return "leak:libpython3\n";
}

/* and says nothing of it at exit, so that an error stays one line on stderr */
const char *__lsan_default_options(void);
const char *__lsan_default_options(void)
{
    return "print_suppressions=0";
}
#endif

static void on_sigint(void)
{
    if (py.in_call) PyErr_SetInterruptEx(SIGINT); /* async-signal-safe */
}

static void fork_prepare(void)
{
    py.fork_gil = PyGILState_Ensure();
    PyOS_BeforeFork();
}

static void fork_parent(void)
{
    PyOS_AfterFork_Parent();
    PyGILState_Release(py.fork_gil);
}

static void fork_child(void)
{
    PyOS_AfterFork_Child();
    PyGILState_Release(py.fork_gil);
}

static int start_interpreter(BwError *err)
{
    PyPreConfig pre;
    PyPreConfig_InitIsolatedConfig(&pre);
    pre.allocator = PYMEM_ALLOCATOR_MALLOC;
    pre.utf8_mode = 1;
    PyStatus st = Py_PreInitialize(&pre);
    PyConfig c;
    PyConfig_InitIsolatedConfig(&c);
    c.install_signal_handlers = 0;
    c.use_hash_seed = 1;
    c.hash_seed = 0;
    c.write_bytecode = 0;
    c.buffered_stdio = 0;
    c.site_import = 1; /* Debian's dist-packages, where NumPy is */
    if (!PyStatus_Exception(st)) st = PyConfig_SetBytesString(&c, &c.home, BELLOWS_PYTHON_HOME);
    if (!PyStatus_Exception(st))
        st = PyConfig_SetBytesString(&c, &c.program_name, BELLOWS_PYTHON_HOME "/bin/python3");
    if (!PyStatus_Exception(st)) st = Py_InitializeFromConfig(&c);
    PyConfig_Clear(&c);
    if (PyStatus_Exception(st))
        return bw_fail(err, BW_EUSAGE, "the embedded Python (%s) cannot start: %s%s%s",
                       BELLOWS_PYTHON_HOME, st.func ? st.func : "", st.func ? ": " : "",
                       st.err_msg ? st.err_msg : "failed");
    return BW_OK;
}

/* The module's objects the binding uses (attributes of bellows_policy, or interned names); -1
 * with an exception set if one is missing. */
static int take_objects(PyBinding *b)
{
    static const struct {
        size_t at;
        const char *name;
        int intern; /* 1: a name to intern; 0: the module's attribute */
    } take[] = {{offsetof(PyBinding, ctx_cls), "Context", 0},
                {offsetof(PyBinding, obs_cls), "Observation", 0},
                {offsetof(PyBinding, dec_cls), "Decision", 0},
                {offsetof(PyBinding, layer_cls), "Layer", 0},
                {offsetof(PyBinding, usage_error), "UsageError", 0},
                {offsetof(PyBinding, load), "_load", 0},
                {offsetof(PyBinding, unload), "_unload", 0},
                {offsetof(PyBinding, describe_class), "_describe_class", 0},
                {offsetof(PyBinding, error_text), "_error_text", 0},
                {offsetof(PyBinding, outer_tuple), "_outer_tuple", 0},
                {offsetof(PyBinding, s_init), "init", 1},
                {offsetof(PyBinding, s_observe), "observe", 1},
                {offsetof(PyBinding, s_decide), "decide", 1},
                {offsetof(PyBinding, s_describe), "describe", 1},
                {offsetof(PyBinding, s_ctx), "ctx", 1},
                {offsetof(PyBinding, s_outer), "outer", 1},
                {offsetof(PyBinding, s_level), "_level", 1},
                {offsetof(PyBinding, s_batch), "batch", 1},
                {offsetof(PyBinding, s_average), "average", 1},
                {offsetof(PyBinding, s_period), "period", 1}};
    for (size_t i = 0; i < sizeof take / sizeof *take; i++) {
        PyObject **slot = (PyObject **)(void *)((char *)b + take[i].at);
        *slot = take[i].intern ? PyUnicode_InternFromString(take[i].name)
                               : PyObject_GetAttrString(b->module, take[i].name);
        if (!*slot) return -1;
    }
    return 0;
}

/* Python's own SIGINT handler becomes KeyboardInterrupt's (so that PyErr_SetInterruptEx raises
 * it), while the process keeps bellows' handler (outfile.c), which calls on_sigint. */
static int keyboard_interrupt(void)
{
    struct sigaction old;
    sigaction(SIGINT, NULL, &old);
    PyObject *r =
        PyRun_String("import signal\nsignal.signal(signal.SIGINT, "
                     "signal.default_int_handler)\n",
                     Py_file_input, PyModule_GetDict(PyImport_AddModule("__main__")), NULL);
    sigaction(SIGINT, &old, NULL);
    Py_XDECREF(r);
    return r ? 0 : -1;
}

/* sys.path gets the module's folder first; then NumPy and bellows_policy are imported. */
static int import_modules(PyBinding *b, BwError *err)
{
    char dir[4096];
    if (py.hosted) {
        /* a hosting Python has bellows_policy on its own path (bellows_host.py puts it there) */
        snprintf(dir, sizeof dir, "%s", "the hosting Python's path");
        PyObject *np = PyImport_ImportModule("numpy");
        int bad = !np || !(b->frombuffer = PyObject_GetAttrString(np, "frombuffer")) ||
                  !(b->float64 = PyObject_GetAttrString(np, "float64")) ||
                  !(b->module = PyImport_ImportModule("bellows_policy")) || take_objects(b);
        Py_XDECREF(np);
        if (bad) {
            char msg[400];
            py_error(NULL, "", msg, sizeof msg);
            return bw_fail(err, BW_EUSAGE, "the Python policy module does not load in %s: %s", dir,
                           msg);
        }
        return py_values_check(b, err);
    }
    if (!datadir_find("python", dir, sizeof dir))
        return bw_fail(err, BW_EUSAGE,
                       "the Python policy module (share/bellows/python/bellows_policy.py) is "
                       "not beside this bellows; reinstall it");
    PyObject *path = PySys_GetObject("path"); /* borrowed */
    PyObject *d = PyUnicode_DecodeFSDefault(dir);
    int bad = !path || !d || PyList_Insert(path, 0, d) != 0;
    Py_XDECREF(d);
    PyObject *np = bad ? NULL : PyImport_ImportModule("numpy");
    if (!bad && !np) {
        PyErr_Clear();
        return bw_fail(err, BW_EUSAGE,
                       "Python policies need NumPy, which %s/bin/python3 cannot import: install "
                       "it (Debian: apt-get install python3-numpy)",
                       BELLOWS_PYTHON_HOME);
    }
    bad = bad || !(b->frombuffer = PyObject_GetAttrString(np, "frombuffer")) ||
          !(b->float64 = PyObject_GetAttrString(np, "float64")) ||
          !(b->module = PyImport_ImportModule("bellows_policy")) || take_objects(b) ||
          keyboard_interrupt();
    Py_XDECREF(np);
    if (bad) {
        char msg[400];
        py_error(NULL, "", msg, sizeof msg);
        return bw_fail(err, BW_EUSAGE, "the Python policy module in %s does not load: %s", dir,
                       msg);
    }
    return py_values_check(b, err);
}

const PyBinding *py_enter(const char *what, PyGILState_STATE *gil, BwError *err)
{
    if (!py.tried && Py_IsInitialized()) { /* loaded into a Python process */
        py.tried = 1;
        py.hosted = 1;
        PyGILState_STATE g = PyGILState_Ensure();
        import_modules(&py.b, &py.why);
        PyGILState_Release(g);
    }
    if (!py.tried) {
        py.tried = 1;
        if (start_interpreter(&py.why) == BW_OK) {
            if (import_modules(&py.b, &py.why) == BW_OK) {
                outfile_on_interrupt(on_sigint);
                pthread_atfork(fork_prepare, fork_parent, fork_child);
            }
            PyEval_SaveThread(); /* the GIL is taken per call, from whichever thread calls */
        }
    }
    if (py.why.msg[0]) {
        bw_fail(err, BW_EUSAGE, "%s: %s", what, py.why.msg);
        return NULL;
    }
    *gil = PyGILState_Ensure();
    return &py.b;
}

void py_leave(PyGILState_STATE gil)
{
    PyGILState_Release(gil);
}

int py_call_begin(void)
{
    py.in_call = 1;
    if (!outfile_interrupted()) return 1;
    py.in_call = 0;
    return 0;
}

void py_call_end(void)
{
    py.in_call = 0;
}

int py_error(const PyBinding *b, const char *path, char *msg, size_t n)
{
    PyObject *type, *val, *tb;
    PyErr_Fetch(&type, &val, &tb);
    PyErr_NormalizeException(&type, &val, &tb);
    if (val && tb) PyException_SetTraceback(val, tb);
    int rc = type && PyErr_GivenExceptionMatches(type, PyExc_KeyboardInterrupt) ? BW_EINTR
             : b && type && PyErr_GivenExceptionMatches(type, b->usage_error)   ? BW_EUSAGE
                                                                                : BW_ERUNTIME;
    PyObject *text = b && val ? PyObject_CallFunction(b->error_text, "Os", val, path)
                     : val    ? PyObject_Str(val)
                              : NULL;
    const char *utf8 = text ? PyUnicode_AsUTF8(text) : NULL;
    if (!utf8) PyErr_Clear();
    snprintf(msg, n, "%s", utf8 ? utf8 : "an exception whose text cannot be shown");
    Py_XDECREF(text);
    Py_XDECREF(type);
    Py_XDECREF(val);
    Py_XDECREF(tb);
    return rc;
}

int policy_python_print_doc(FILE *out, BwError *err)
{
    PyGILState_STATE gil;
    const PyBinding *b = py_enter("--python", &gil, err);
    if (!b) return BW_EUSAGE;
    PyObject *text = PyObject_CallMethod(b->module, "_doc", NULL);
    const char *utf8 = text ? PyUnicode_AsUTF8(text) : NULL;
    int rc = BW_OK;
    if (utf8)
        fputs(utf8, out);
    else
        rc = bw_fail(err, BW_ERUNTIME, "--python: pydoc cannot render bellows_policy");
    PyErr_Clear();
    Py_XDECREF(text);
    py_leave(gil);
    return rc;
}
