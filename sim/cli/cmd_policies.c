/* cmd_policies.c: `bellows policies`, which lists every registered policy with its help line,
 * mode, source and options (the text of policies/policy.c's policy_print_list), and with
 * `--plugin PATH.so` or `--plugin PATH.py` (repeatable) also each plugin's entry in the same
 * form; `bellows policies --python` prints the Python policy interface (bellows_policy.py's
 * documentation). */
#include <stdio.h>
#include <string.h>

#include "status.h"
#include "policy.h"
#include "commands.h"

#define MAX_PLUGINS 16

int cmd_policies(int argc, char **argv, BwError *err)
{
    if (argc == 1 && (strcmp(argv[0], "--help") == 0 || strcmp(argv[0], "-h") == 0)) {
        printf("usage: bellows policies [--plugin PATH.so|PATH.py]... | --python\n\nLists the "
               "scheduling policies a run can use with --policy NAME[:key=value,...]:\neach one's "
               "rule, mode, source and options with their defaults. --plugin also lists a policy\n"
               "loaded from a shared object or a Python file (--policy PATH.so[:key=value,...] or\n"
               "PATH.py; see the README). --python prints the interface of Python policies.\n");
        return BW_OK;
    }
    if (argc == 1 && strcmp(argv[0], "--python") == 0) {
        int rc = policy_print_python(stdout, err);
        if (rc == BW_OK && (fflush(stdout) != 0 || ferror(stdout)))
            rc = bw_fail(err, BW_ERUNTIME, "policies: cannot write to standard output");
        return rc;
    }
    const char *plugins[MAX_PLUGINS];
    int n = 0;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--plugin") != 0)
            return bw_fail(err, BW_EUSAGE,
                           "policies: takes no arguments but --plugin PATH or --python (got '%s')",
                           argv[i]);
        if (i + 1 == argc)
            return bw_fail(err, BW_EUSAGE, "--plugin: expected a PATH.so or PATH.py");
        if (n == MAX_PLUGINS) return bw_fail(err, BW_EUSAGE, "--plugin: at most %d", MAX_PLUGINS);
        plugins[n++] = argv[++i];
    }
    /* every plugin loads before anything is printed */
    for (int k = 0; k < n; k++) {
        int rc = policy_print_plugin(NULL, plugins[k], "--plugin", err);
        if (rc) return rc;
    }
    policy_print_list(stdout);
    for (int k = 0; k < n; k++) {
        int rc = policy_print_plugin(stdout, plugins[k], "--plugin", err);
        if (rc) return rc;
    }
    if (fflush(stdout) != 0 || ferror(stdout))
        return bw_fail(err, BW_ERUNTIME, "policies: cannot write to standard output");
    return BW_OK;
}
