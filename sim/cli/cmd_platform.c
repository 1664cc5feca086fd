/* cmd_platform.c: `bellows platform`, which prints the SimGrid platform XML that a set of
 * cluster flags generates (the same file every simulating command loads). */
#include <assert.h>
#include <stdio.h>

#include "cli.h"
#include "cluster_args.h"
#include "commands.h"

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
                       "declared neighbour routes.",
                       cluster_cli_opts, cluster_cli_n_opts);
        return BW_OK;
    }
    Cluster c;
    if (rc == BW_OK && cli_given(cluster_cli_opts, cluster_cli_n_opts, set, "platform"))
        rc = bw_fail(err, BW_EUSAGE,
                     "--platform: bellows platform prints generated platforms; a file of your own "
                     "is already XML");
    if (rc == BW_OK) rc = cluster_from_cli(&c, &ca, set, err);
    if (rc == BW_OK) {
        cluster_write_xml(&c, stdout);
        if (fflush(stdout) != 0 || ferror(stdout))
            rc = bw_fail(err, BW_ERUNTIME, "platform: cannot write to standard output");
    }
    cluster_flags_release(&ca);
    return rc;
}
