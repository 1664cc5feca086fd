/* cluster_args.h: the command-line flags that describe a cluster, shared by every command that
 * simulates one (platform, run, compare, replay, sweep). */
#ifndef BELLOWS_CLUSTER_ARGS_H
#define BELLOWS_CLUSTER_ARGS_H

#include "cli.h"
#include "cluster.h"
#include "costs.h"

/* The flags' values as parsed (cluster_cli_opts address them by offset, cli.h), and the host
 * names a --platform file gave, which the clusters built from them point into. */
typedef struct {
    int workers, gpus_per_node, nic_per_gpu, nics_per_node, leaf_size, islands;
    const char *topology, *gpu, *precision, *platform, *hosts;
    double efficiency, gpu_flops, bandwidth, latency, intra_bandwidth, intra_latency, oversub;
    double wan_bandwidth, wan_latency;
    const char *nccl_sockets, *cloud;
    /* --nccl-sockets (or --cloud's) as parsed by cluster_from_cli: NCCL_SOCKET_NTHREADS x
     * NCCL_NSOCKS_PERTHREAD; 0 x 0: neither given (the cost profile's) */
    int sock_threads, sock_socks;
    char cloud_sockets[16]; /* --cloud's sockets as text, when --nccl-sockets is not given */
    char **probed_names, *hosts_text, **hosts_list; /* owned; cluster_flags_release */
    int n_probed;
} ClusterFlags;

extern const CliOpt cluster_cli_opts[];
extern const int cluster_cli_n_opts;

/* Builds the Cluster from the parsed flags ca; `set` is the part of cli_parse's set[] that
 * belongs to cluster_cli_opts. Checks every combination (cluster_resolve). With --platform,
 * c's host names live in ca until cluster_flags_release. */
int cluster_from_cli(Cluster *c, ClusterFlags *ca, const int *set, BwError *err);

/* The cost profile p's compute efficiency for c's GPU and precision (its own for the workload
 * named workload when p has one; NULL: none), unless --gpu-efficiency was given or p has none
 * (then c keeps 0.5, assumed): the one rule every simulating command and `bellows platform`
 * apply. p may be NULL. */
int cluster_apply_costs(Cluster *c, const CostProfile *p, const char *workload, BwError *err);

/* --nccl-sockets (or --cloud's sockets) on the tcp network of the cost profile p, when the run's
 * transport is net: one socket stream's cap times threads x sockets (costs_set_sockets). Given
 * explicitly where it cannot apply (--transport other than tcp, a profile without a per-socket
 * cap: ideal, grace-tf, a busbw network): a usage error naming the flag. --cloud's sockets
 * apply where they can and are otherwise left. */
int cluster_apply_sockets(const ClusterFlags *ca, const int *set, CostProfile *p, CostNet net,
                          BwError *err);

/* The --cloud preset named name, or NULL: what it sets, for the header. */
typedef struct {
    const char *name, *gpu;
    int gpus_per_node;
    double bandwidth_Bps, intra_Bps; /* the NIC's; each GPU's NVLink (0: one GPU a node) */
    int threads, socks;              /* NCCL's socket defaults for the NIC's vendor */
    const char *what;                /* the machine, as the header prints it */
} CloudPreset;
const CloudPreset *cluster_cloud_find(const char *name);

/* Frees what a --platform's host list holds; the clusters made from it are then invalid.
 * A zeroed ClusterFlags is fine. */
void cluster_flags_release(ClusterFlags *ca);

#endif
