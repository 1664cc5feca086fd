/* main.c: the bellows command line. main only dispatches to a subcommand and maps its status
 * to the exit code: 0 success, 1 runtime failure (I/O, divergence), 2 bad usage. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "status.h"
#include "blas_cpu.h"
#include "cluster_cmd.h"
#include "commands.h"
#include "compat.h"
#include "reproduce.h"
#include "sweep.h"
#include "outfile.h"
#include "plugguard.h"

#define BELLOWS_VERSION "0.1.0"

typedef struct {
    const char *name;
    int (*run)(int argc, char **argv, BwError *err);
    const char *summary;
} Command;

static const Command commands[] = {
    {"run", cmd_run, "simulate data-parallel training of one policy on a GPU cluster"},
    {"compare", cmd_compare, "run several policies on the same scenario; one table"},
    {"replay", cmd_replay, "replay a gradient trace under several policies on any cluster"},
    {"sweep", cmd_sweep, "run the cross product of scenario flags given as lists, and policies"},
    {"merge", cmd_merge, "join the sweep.csv files of a sweep's shards"},
    {"cluster", cmd_cluster,
     "several training jobs sharing one cluster's network: each job's slowdown"},
    {"reproduce", cmd_reproduce,
     "run the Accordion or ADPSGD paper's headline experiments; a report"},
    {"plot", cmd_plot, "draw the plots of a run, compare or sweep folder (gnuplot)"},
    {"train", cmd_train, "train one model on Fashion-MNIST in this process (reference trainer)"},
    {"models", cmd_models, "list the models with their parameter and flop counts"},
    {"bench", cmd_bench,
     "price a few steady steps of a workload on a cluster: samples/s per GPU and in all"},
    {"platform", cmd_platform, "print the SimGrid platform XML a set of cluster flags generates"},
    {"policies", cmd_policies, "list the scheduling policies with their sources and options"},
    {"schedules", cmd_schedules,
     "list the communication schedules (what is sent when) with their sources and options"},
    {"compressors", cmd_compressors,
     "list the gradient compressors with their levels, options and sources"},
    {"workloads", cmd_workloads,
     "list the built-in workload profiles: real models' parameters, tensors and flops"},
    {"costs", cmd_costs,
     "list the built-in cost profiles (what an implementation pays beside the roofline); "
     "costs NAME: every rate of one, its software generation and source"},
    {"validate", cmd_validate,
     "run every published measurement the project holds against bellows' prediction"},
};
#define N_COMMANDS ((int)(sizeof commands / sizeof *commands))

#define ABOUT       "bellows simulates data-parallel training with gradient-communication policies."
#define EXIT_STATUS "0 success, 1 runtime failure, 2 bad usage, 130 interrupted (Ctrl-C)"

static void usage(FILE *out)
{
    const char *format = getenv("BELLOWS_HELP_FORMAT"); /* scripts/gen_docs.sh, at build time */
    if (format && strcmp(format, "tsv") == 0) {
        fprintf(out, "about\t%s\nexit\t%s\n", ABOUT, EXIT_STATUS);
        for (int i = 0; i < N_COMMANDS; i++)
            fprintf(out, "command\t%s\t%s\n", commands[i].name, commands[i].summary);
        compat_print_tsv(out); /* docs/reference/compatibility.md */
        return;
    }
    fprintf(out,
            "usage: bellows COMMAND [flags]   (bellows COMMAND --help for its flags)\n\n"
            "%s\n\ncommands:\n",
            ABOUT);
    for (int i = 0; i < N_COMMANDS; i++)
        fprintf(out, "  %-12s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\nexit status: %s\n", EXIT_STATUS);
}

int main(int argc, char **argv)
{
    blas_cpu_fix_kernels(argv);
    outfile_cleanup_on_signals();
    if (argc < 2) {
        usage(stderr);
        return BW_EUSAGE;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        usage(stdout);
        return BW_OK;
    }
    if (strcmp(cmd, "--version") == 0) {
        printf("bellows %s\n", BELLOWS_VERSION);
        return BW_OK;
    }
    BwError err = {{0}};
    int rc = BW_EUSAGE;
    const Command *c = NULL;
    for (int i = 0; i < N_COMMANDS && !c; i++)
        if (strcmp(commands[i].name, cmd) == 0) c = &commands[i];
    if (c) {
        rc = c->run(argc - 2, argv + 2, &err);
        plugguard_said(); /* a supervisor (runner_supervise) adds nothing */
    } else {              /* bw_fail keeps the message one line whatever the command holds */
        bw_fail(&err, BW_EUSAGE, "unknown command '%s' (see bellows --help)", cmd);
    }
    /* the one place an error is printed */
    if (rc != BW_OK && err.msg[0]) fprintf(stderr, "bellows: %s\n", err.msg);
    return rc == BW_OK ? 0 : rc == BW_EUSAGE ? 2 : rc == BW_EINTR ? 130 : 1;
}
