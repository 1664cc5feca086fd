/* cmd_platform.c: `bellows platform`, which prints the SimGrid platform XML that a set of
 * cluster flags generates (the same file every simulating command loads). */
#include <assert.h>
#include <stdio.h>

#include "cli.h"
#include "cluster_args.h"
#include "commands.h"
#include "costs.h"
#include "driver.h"

int cmd_platform(int argc, char **argv, BwError *err)
{
    int set[64];
    assert(cluster_cli_n_opts <= (int)(sizeof set / sizeof *set));
    ClusterFlags ca = {0};
    int rc = cli_parse("bellows platform", cluster_cli_opts, cluster_cli_n_opts, &ca, argc, argv,
                       set, err);
    if (rc == CLI_HELP) {
        cli_print_help(stdout, "bellows platform [cluster flags]",
                       "Prints the SimGrid platform (XML) that the cluster flags describe. Hosts "
                       "are gpu0..gpu{P-1};\nlinks are full-duplex; routing is Dijkstra over the "
                       "declared neighbour routes. Host speeds and link\nbandwidths are what a "
                       "run with the default --costs pytorch and --transport tcp loads: the\n"
                       "GPU's sustained rate (the profile's efficiency, or 0.5 of the peak where "
                       "it has none) and\nthe links at the share of their bandwidth its "
                       "collectives reach.",
                       cluster_cli_opts, cluster_cli_n_opts);
        return BW_OK;
    }
    Cluster c;
    if (rc == BW_OK && cli_given(cluster_cli_opts, cluster_cli_n_opts, set, "platform"))
        rc = bw_fail(err, BW_EUSAGE,
                     "--platform: bellows platform prints generated platforms; a file of your own "
                     "is already XML");
    if (rc == BW_OK) rc = cluster_from_cli(&c, &ca, set, err);
    CostProfile *prof = NULL;
    if (rc == BW_OK) /* run's defaults: --costs pytorch (the GPU's profile), --transport tcp */
        rc = costs_load(COSTS_DEFAULT, "--costs", c.gpu ? c.gpu->name : NULL, &prof, err);
    if (rc == BW_OK) rc = cluster_apply_sockets(&ca, set, prof, COST_NET_TCP, err);
    if (rc == BW_OK) rc = cluster_apply_costs(&c, prof, NULL, err);
    if (rc == BW_OK) {
        RunConfig cfg = {0};
        cfg.cluster = c;
        cfg.costs = prof;
        cfg.transport = COST_NET_TCP;
        driver_cluster_loaded(&cfg, &c);
        cluster_write_xml(&c, stdout);
        if (fflush(stdout) != 0 || ferror(stdout))
            rc = bw_fail(err, BW_ERUNTIME, "platform: cannot write to standard output");
    }
    costs_free(prof);
    cluster_flags_release(&ca);
    return rc;
}
