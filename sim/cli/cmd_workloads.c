/* cmd_workloads.c: the listings of what prices a run: `bellows workloads`, the built-in workload
 * profiles (real models' layers, tensors and compute; sim/workload/) with their parameters,
 * tensors, flops per sample and sources, and `bellows costs`, the built-in cost profiles (what
 * an implementation pays beside the roofline; sim/costs/). */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "costs.h"
#include "workload.h"

/* A command that takes no arguments (but --help) and prints a listing. */
static int listing(int argc, char **argv, const char *name, void (*print)(FILE *), BwError *err)
{
    if (argc > 0 && strcmp(argv[0], "--help") != 0 && strcmp(argv[0], "-h") != 0)
        return bw_fail(err, BW_EUSAGE, "%s: takes no arguments", name);
    print(stdout);
    if (fflush(stdout) != 0 || ferror(stdout))
        return bw_fail(err, BW_ERUNTIME, "%s: cannot write to standard output", name);
    return BW_OK;
}

int cmd_workloads(int argc, char **argv, BwError *err)
{
    return listing(argc, argv, "workloads", workload_print_list, err);
}

int cmd_costs(int argc, char **argv, BwError *err)
{
    if (argc > 0 && strcmp(argv[0], "import-nccl-tests") == 0)
        return cmd_costs_import(argc - 1, argv + 1, err);
    if (argc == 1 && argv[0][0] != '-') { /* one profile, every rate with its source */
        int rc = costs_print_profile(stdout, argv[0], err);
        if (rc == BW_OK && (fflush(stdout) != 0 || ferror(stdout)))
            rc = bw_fail(err, BW_ERUNTIME, "costs: cannot write to standard output");
        return rc;
    }
    if (argc > 1 && argv[0][0] != '-')
        return bw_fail(err, BW_EUSAGE, "costs: takes one profile NAME or FILE.json, got %d", argc);
    return listing(argc, argv, "costs", costs_print_list, err);
}
