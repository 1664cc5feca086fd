/* cluster_args.c: the cluster flags (see cluster_args.h). */
#include "cluster_args.h"

#include <stdlib.h>
#include <string.h>

#include "engine.h"

static struct {
    int workers, gpus_per_node, nic_per_gpu, leaf_size;
    const char *topology, *gpu, *precision, *platform, *hosts;
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
    {"platform", CLI_STRING, &CA.platform, NULL, "FILE.xml",
     "a SimGrid platform of your own instead of a generated one; ranks go on its hosts in "
     "natural name order (gpu2 before gpu10), or on --hosts",
     0, 0, NULL, 0},
    {"hosts", CLI_STRING, &CA.hosts, NULL, "h0,h1,...",
     "with --platform: the hosts of ranks 0,1,... in this order", 0, 0, NULL, 0},
    {"oversubscription", CLI_DOUBLE, &CA.oversub, "1", NULL,
     "fat-tree: leaf downlink capacity / uplink capacity", 1, 1e6, NULL, 0},
};
const int cluster_cli_n_opts = (int)(sizeof cluster_cli_opts / sizeof *cluster_cli_opts);

static int given(const int *set, const char *name)
{
    return cli_given(cluster_cli_opts, cluster_cli_n_opts, set, name);
}

/* Kept until cluster_args_release (clusters are copied around by value). */
static char **probed_names, *hosts_text, **hosts_list;
static int n_probed;

void cluster_args_release(void)
{
    for (int i = 0; i < n_probed; i++) free(probed_names[i]);
    free(probed_names);
    free(hosts_text);
    free(hosts_list);
    probed_names = hosts_list = NULL;
    hosts_text = NULL;
    n_probed = 0;
}

/* --platform: the file's hosts, in natural order or as --hosts lists them. */
static int user_platform(Cluster *c, const int *set, BwError *err)
{
    static const char *const generated_only[] = {
        "topology",      "gpu",         "precision", "gpu-efficiency",
        "gpu-flops",     "bandwidth",   "latency",   "intra-bandwidth",
        "intra-latency", "nic-per-gpu", "leaf-size", "oversubscription"};
    for (size_t i = 0; i < sizeof generated_only / sizeof *generated_only; i++)
        if (given(set, generated_only[i]))
            return bw_fail(err, BW_EUSAGE,
                           "--%s: describes a generated cluster; with --platform the file "
                           "sets the hosts and links",
                           generated_only[i]);
    char **names;
    int n;
    cluster_args_release();
    int rc = engine_probe_platform(CA.platform, &names, &n, err);
    probed_names = names;
    n_probed = n;
    if (rc) return rc;
    c->platform_file = CA.platform;
    c->topology = TOPO_STAR;
    if (CA.hosts) {
        char *list = hosts_text = strdup(CA.hosts);
        char **hosts = hosts_list = malloc(sizeof *hosts * (size_t)(strlen(list) + 1));
        int k = 0;
        for (char *h = strtok(list, ","); h; h = strtok(NULL, ",")) {
            int found = 0;
            for (int i = 0; i < n; i++) found |= strcmp(names[i], h) == 0;
            if (!found)
                return bw_fail(err, BW_EUSAGE, "--hosts: '%s' is not a host of %s", h, CA.platform);
            for (int i = 0; i < k; i++)
                if (strcmp(hosts[i], h) == 0)
                    return bw_fail(err, BW_EUSAGE, "--hosts: '%s' is listed twice", h);
            hosts[k++] = h;
        }
        if (k == 0) return bw_fail(err, BW_EUSAGE, "--hosts: expected host names");
        if (given(set, "workers") && CA.workers != k)
            return bw_fail(err, BW_EUSAGE, "--workers: %d, but --hosts lists %d hosts", CA.workers,
                           k);
        c->hosts = hosts;
        c->workers = k;
    } else {
        if (given(set, "workers") && CA.workers > n)
            return bw_fail(err, BW_EUSAGE, "--workers: %d, but %s has only %d hosts", CA.workers,
                           CA.platform, n);
        c->hosts = names;
        c->workers = given(set, "workers") ? CA.workers : n;
    }
    c->gpu = NULL;
    c->gpu_flops = 1; /* replaced by host 0's speed when the platform is loaded */
    if ((rc = engine_check_routes(CA.platform, c->hosts, c->workers, err))) return rc;
    return cluster_resolve(c, err);
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
    if (given(set, "hosts") && !CA.platform)
        return bw_fail(err, BW_EUSAGE, "--hosts: needs --platform");
    if (CA.platform) return user_platform(c, set, err);
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
