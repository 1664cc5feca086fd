/* cmd_policies.c: `bellows policies`, which lists every registered policy with its help line,
 * mode, source and options (the text of policies/policy.c's policy_print_list). */
#include <stdio.h>
#include <string.h>

#include "status.h"
#include "policy.h"
#include "commands.h"

int cmd_policies(int argc, char **argv, BwError *err)
{
    if (argc == 1 && (strcmp(argv[0], "--help") == 0 || strcmp(argv[0], "-h") == 0)) {
        printf("usage: bellows policies\n\nLists the scheduling policies a run can use with "
               "--policy NAME[:key=value,...]:\neach one's rule, mode, source and options with "
               "their defaults.\n");
        return BW_OK;
    }
    if (argc > 0)
        return bw_fail(err, BW_EUSAGE, "policies: takes no arguments (got '%s')", argv[0]);
    policy_print_list(stdout);
    if (fflush(stdout) != 0 || ferror(stdout))
        return bw_fail(err, BW_ERUNTIME, "policies: cannot write to standard output");
    return BW_OK;
}
