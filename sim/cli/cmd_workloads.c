/* cmd_workloads.c: `bellows workloads`, which lists the built-in workload profiles (real models'
 * layers, tensors and compute; sim/workload/) with their parameters, tensors, flops per sample
 * and sources. */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "workload.h"

int cmd_workloads(int argc, char **argv, BwError *err)
{
    if (argc > 0 && strcmp(argv[0], "--help") != 0 && strcmp(argv[0], "-h") != 0)
        return bw_fail(err, BW_EUSAGE, "workloads: takes no arguments");
    workload_print_list(stdout);
    if (fflush(stdout) != 0 || ferror(stdout))
        return bw_fail(err, BW_ERUNTIME, "workloads: cannot write to standard output");
    return BW_OK;
}
