/* ps_args.c: the flags of --allreduce ps (run_args.h): how many parameter servers and where
 * they run, into the cluster (sim/net/coll_ps.c says what they do; cluster_resolve checks the
 * topology they need). */
#include "run_args.h"

#include <string.h>

int run_ps_setup(const Flags *f, RunConfig *cfg, BwError *err)
{
    Cluster *c = &cfg->cluster;
    const int given_servers = cli_given(f->opts, f->n, f->set, "servers");
    const int given_hosts = cli_given(f->opts, f->n, f->set, "ps-hosts");
    if (!coll_algo_servers(cfg->algo)) {
        if (given_servers || given_hosts)
            return bw_fail(err, BW_EUSAGE, "--%s: parameter servers need --allreduce ps",
                           given_servers ? "servers" : "ps-hosts");
        return BW_OK;
    }
    c->ps_own_hosts = strcmp(f->run.ps_hosts, "own") == 0;
    c->ps_servers = given_servers ? f->run.servers : c->workers / c->gpus_per_node;
    return cluster_resolve(c, err);
}
