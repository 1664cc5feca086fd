/* policy_python_none.c: policy_python.h for a bellows built without Python's embedding library
 * (CMake found no python3-embed): a .py policy is a usage error that says how to get it. */
#include "policy_python.h"

#include <string.h>

static int no_python(const char *what, BwError *err)
{
    return bw_fail(err, BW_EUSAGE,
                   "%s: this bellows was built without Python policies; install "
                   "libpython3-dev and python3-numpy (Debian: scripts/setup.sh does) and build "
                   "it again",
                   what);
}

int policy_python_open(const char *path, const char *flag, PyPolicyFile **out, PolicyOps *ops,
                       BwError *err)
{
    char what[SPEC_MAX_TEXT + 64];
    snprintf(what, sizeof what, "%s %s", flag, path);
    *out = NULL;
    memset(ops, 0, sizeof *ops);
    return no_python(what, err);
}

void policy_python_bind(PyPolicyFile *f, void *state)
{
    (void)f, (void)state;
}

int policy_python_status(PyPolicyFile *f, const char *spec, long step, BwError *err)
{
    (void)f, (void)spec, (void)step, (void)err;
    return BW_OK;
}

int policy_python_failed(PyPolicyFile *f, const char *what, BwError *err)
{
    (void)f, (void)what, (void)err;
    return BW_OK;
}

void policy_python_close(PyPolicyFile *f)
{
    (void)f;
}

int policy_python_print_doc(FILE *out, BwError *err)
{
    (void)out;
    return no_python("--python", err);
}
