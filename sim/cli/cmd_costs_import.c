/* cmd_costs_import.c: `bellows costs import-nccl-tests LOG... --link-gbps R --out FILE`, which
 * turns nccl-tests' published or measured tables into a cost profile's "busbw" tables
 * (sim/costs/nccl_import.c; the format is in sim/costs/README.md). */
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "io_check.h"
#include "nccl_import.h"

typedef struct {
    const char *transport, *collective, *base, *name, *out;
    double link_Gbps;
    int gpus_per_node, nics_per_node;
} ImportFlags;

/* The flags checked, then the logs imported (sim/costs/nccl_import.c). */
static int import_run(const ImportFlags *f, char **logs, int n_logs, BwError *err)
{
    if (n_logs == 0)
        return bw_fail(err, BW_EUSAGE, "costs import-nccl-tests: expected LOG... before the flags");
    if (!(f->link_Gbps > 0))
        return bw_fail(err, BW_EUSAGE,
                       "--link-gbps: required, the rate of one NIC the logs ran on (Gbit/s)");
    if (!f->out) return bw_fail(err, BW_EUSAGE, "--out: required, a FILE to write");
    IoFiles io = {0}; /* inputs are never outputs (io_check.h) */
    for (int i = 0; i < n_logs; i++) io_input_file(&io, "LOG", logs[i]);
    if (f->base) io_input(&io, "costs", "--base", f->base);
    io_output(&io, "--out", f->out);
    int rc = io_check(&io, err);
    io_free(&io);
    if (rc) return rc;
    NcclImport a = {
        .logs = (const char *const *)logs,
        .n_logs = n_logs,
        .net = (CostNet)costs_net_parse(f->transport),
        .link_Bps = f->link_Gbps * 1e9 / 8,
        .gpus_per_node = f->gpus_per_node,
        .nics_per_node = f->nics_per_node,
        .collective = strcmp(f->collective, "auto") == 0        ? -1
                      : strcmp(f->collective, "allreduce") == 0 ? 0
                                                                : 1,
        .base = f->base,
        .name = f->name,
        .out = f->out,
    };
    return costs_import_nccl_tests(&a, err);
}

int cmd_costs_import(int argc, char **argv, BwError *err)
{
    ImportFlags f = {0};
    const CliOpt opts[] = {
        {.name = "transport",
         .kind = CLI_CHOICE,
         .dest = &f.transport,
         .def = "tcp",
         .help = "the network the logs measured (the profile's networks key)",
         .choices = "tcp|rdma|nvlink"},
        {.name = "link-gbps",
         .kind = CLI_DOUBLE,
         .dest = &f.link_Gbps,
         .unit = "Gbit/s",
         .help = "the rate of one NIC the logs ran on (required)",
         .min = 1e-3,
         .max = 1e7},
        {.name = "gpus-per-node",
         .kind = CLI_INT,
         .dest = &f.gpus_per_node,
         .def = "0",
         .unit = "GPUs",
         .help = "the logs' GPUs per node; 0: from their '#  Rank N ... on HOST' lines",
         .min = 0,
         .max = 65536},
        {.name = "nics-per-node",
         .kind = CLI_INT,
         .dest = &f.nics_per_node,
         .def = "1",
         .unit = "NICs",
         .help = "the NICs each node's GPUs shared in the logs (GPUs per NIC = GPUs per node / "
                 "it)",
         .min = 1,
         .max = 65536},
        {.name = "collective",
         .kind = CLI_CHOICE,
         .dest = &f.collective,
         .def = "auto",
         .help = "what the logs measured; auto: from the program's name the log prints",
         .choices = "auto|allreduce|allgather"},
        {.name = "base",
         .kind = CLI_STRING,
         .dest = &f.base,
         .unit = "NAME|FILE",
         .help = "write a whole profile: this one with the network's tables replaced; without "
                 "it, the networks fragment alone"},
        {.name = "name",
         .kind = CLI_STRING,
         .dest = &f.name,
         .help = "the written profile's name (needs --base: the fragment alone has none)"},
        {.name = "out",
         .kind = CLI_STRING,
         .dest = &f.out,
         .unit = "FILE",
         .help = "where to write it (required)"},
    };
    const int n_opts = (int)(sizeof opts / sizeof *opts);
    int n_logs = 0;
    while (n_logs < argc && strncmp(argv[n_logs], "-", 1) != 0) n_logs++;
    int rc = cli_parse("bellows costs import-nccl-tests", opts, n_opts, NULL, argc - n_logs,
                       argv + n_logs, NULL, err);
    if (rc == CLI_HELP) {
        cli_print_help(
            stdout, "bellows costs import-nccl-tests LOG... --link-gbps R --out FILE [flags]",
            "Reads nccl-tests' output tables (all_reduce_perf, all_gather_perf,\n"
            "reduce_scatter_perf) and writes the bus bandwidth they report, per message size and\n"
            "GPUs per NIC, as a cost profile's \"busbw\" tables (sim/costs/README.md).",
            opts, n_opts);
        return BW_OK;
    }
    if (rc != BW_OK) return rc;
    return import_run(&f, argv, n_logs, err);
}
