/* cluster_args.c: the cluster flags (see cluster_args.h). */
#include "cluster_args.h"

#include <string.h>

static struct {
    int workers, gpus_per_node, nic_per_gpu, leaf_size;
    const char *topology, *gpu, *precision;
    double efficiency, gpu_flops, bandwidth, latency, intra_bandwidth, intra_latency, oversub;
} CA;

const CliOpt cluster_cli_opts[] = {
    {"workers", CLI_INT, &CA.workers, "8", "GPUs", "simulated GPUs (data-parallel workers)", 1,
     65536, NULL, 0},
    {"gpus-per-node", CLI_INT, &CA.gpus_per_node, "1", "GPUs",
     "GPUs per node (hierarchical topology)", 1, 1024, NULL, 0},
    {"topology", CLI_CHOICE, &CA.topology, "star", NULL,
     "star: one non-blocking switch; fat-tree: leaf switches with an oversubscribed uplink; "
     "hierarchical: nodes of --gpus-per-node GPUs on an intra-node fabric",
     0, 0, "star|fat-tree|hierarchical", 0},
    {"gpu", CLI_CHOICE, &CA.gpu, "A100", NULL, "GPU profile (peak rates from the datasheets)", 0, 0,
     "V100|A100|H100", 0},
    {"precision", CLI_CHOICE, &CA.precision, "fp32", NULL, "which peak rate of the profile", 0, 0,
     "fp32|tf32|bf16", 0},
    {"gpu-efficiency", CLI_DOUBLE, &CA.efficiency, "0.5", NULL,
     "sustained fraction of the peak rate", 1e-6, 1, NULL, 0},
    {"gpu-flops", CLI_FLOPS, &CA.gpu_flops, NULL, "flop/s",
     "sustained rate of one GPU, instead of --gpu/--precision/--gpu-efficiency", 0, 0, NULL, 0},
    {"bandwidth", CLI_BANDWIDTH, &CA.bandwidth, "10Gbps", "bps|Bps with K/M/G/T",
     "NIC link bandwidth, each direction", 0, 0, NULL, 0},
    {"latency", CLI_DURATION, &CA.latency, "5us", "ns|us|ms|s", "NIC link latency", 0, 0, NULL, 0},
    {"intra-bandwidth", CLI_BANDWIDTH, &CA.intra_bandwidth, "300GBps", "bps|Bps with K/M/G/T",
     "intra-node link bandwidth per GPU, each direction (NVLink; PCIe 4.0 x16 is 32GBps)", 0, 0,
     NULL, 0},
    {"intra-latency", CLI_DURATION, &CA.intra_latency, "1us", "ns|us|ms|s",
     "intra-node link latency", 0, 0, NULL, 0},
    {"nic-per-gpu", CLI_FLAG, &CA.nic_per_gpu, NULL, NULL,
     "hierarchical: one NIC per GPU instead of one per node", 0, 0, NULL, 0},
    {"leaf-size", CLI_INT, &CA.leaf_size, "4", "GPUs", "fat-tree: GPUs per leaf switch", 1, 65536,
     NULL, 0},
    {"oversubscription", CLI_DOUBLE, &CA.oversub, "1", NULL,
     "fat-tree: leaf downlink capacity / uplink capacity", 1, 1e6, NULL, 0},
};
const int cluster_cli_n_opts = (int)(sizeof cluster_cli_opts / sizeof *cluster_cli_opts);

static int given(const int *set, const char *name)
{
    return cli_given(cluster_cli_opts, cluster_cli_n_opts, set, name);
}

int cluster_from_cli(Cluster *c, const int *set, BwError *err)
{
    *c = cluster_default();
    c->workers = CA.workers;
    c->gpus_per_node = CA.gpus_per_node;
    c->topology = strcmp(CA.topology, "fat-tree") == 0       ? TOPO_FAT_TREE
                  : strcmp(CA.topology, "hierarchical") == 0 ? TOPO_HIERARCHICAL
                                                             : TOPO_STAR;
    c->precision = CA.precision;
    c->efficiency = CA.efficiency;
    c->bandwidth_Bps = CA.bandwidth;
    c->latency_s = CA.latency;
    c->intra_bandwidth_Bps = CA.intra_bandwidth;
    c->intra_latency_s = CA.intra_latency;
    c->nic_per_gpu = CA.nic_per_gpu;
    c->leaf_size = CA.leaf_size;
    c->oversubscription = CA.oversub;
    if (given(set, "gpu-flops")) {
        if (given(set, "gpu") || given(set, "precision") || given(set, "gpu-efficiency"))
            return bw_fail(err, BW_EUSAGE,
                           "--gpu-flops: gives the rate directly; drop --gpu, --precision and "
                           "--gpu-efficiency");
        c->gpu = NULL;
        c->gpu_flops = CA.gpu_flops;
    } else {
        c->gpu = cluster_gpu_find(CA.gpu);
    }
    if (c->topology != TOPO_FAT_TREE && (given(set, "leaf-size") || given(set, "oversubscription")))
        return bw_fail(err, BW_EUSAGE, "--%s: applies to --topology fat-tree only",
                       given(set, "leaf-size") ? "leaf-size" : "oversubscription");
    if (c->topology != TOPO_HIERARCHICAL &&
        (given(set, "intra-bandwidth") || given(set, "intra-latency")))
        return bw_fail(err, BW_EUSAGE, "--%s: applies to --topology hierarchical only",
                       given(set, "intra-bandwidth") ? "intra-bandwidth" : "intra-latency");
    return cluster_resolve(c, err);
}
