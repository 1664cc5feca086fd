/* cluster_args.c: the cluster flags (see cluster_args.h). */
#include "cluster_args.h"
#include "xalloc.h"

#include <stdlib.h>
#include <string.h>

#include "engine.h"

#define CLUSTER_OPT(name, kind, field, ...)                                                        \
    {                                                                                              \
        name, kind, NULL, __VA_ARGS__, offsetof(ClusterFlags, field)                               \
    }

const CliOpt cluster_cli_opts[] = {
    CLUSTER_OPT("workers", CLI_INT, workers, "8", "GPUs",
                "simulated GPUs (data-parallel workers); the default 8 is for generated "
                "platforms: with --platform, every host of the file",
                1, 4096, NULL, 0), /* DRIVER_MAX_WORKERS: one range, one message */
    CLUSTER_OPT("gpus-per-node", CLI_INT, gpus_per_node, "1", "GPUs",
                "GPUs per node (hierarchical topology)", 1, 1024, NULL, 0),
    CLUSTER_OPT(
        "topology", CLI_CHOICE, topology, "star", NULL,
        "star: one non-blocking switch; fat-tree: leaf switches with an oversubscribed uplink; "
        "hierarchical: nodes of --gpus-per-node GPUs on an intra-node fabric; islands: "
        "--islands stars joined by WAN links (--wan-bandwidth, --wan-latency)",
        0, 0, "star|fat-tree|hierarchical|islands", 0),
    CLUSTER_OPT("islands", CLI_INT, islands, "2", "islands",
                "--topology islands: how many islands (datacenters), dividing --workers", 1, 4096,
                NULL, 0),
    CLUSTER_OPT("wan-bandwidth", CLI_BANDWIDTH, wan_bandwidth, "1Gbps", "bps|Bps with K/M/G/T",
                "--topology islands: each island's WAN link, each direction",
                CLUSTER_MIN_BANDWIDTH_BPS, CLUSTER_MAX_BANDWIDTH_BPS, NULL, 0),
    CLUSTER_OPT("wan-latency", CLI_DURATION, wan_latency, "30ms", "ns|us|ms|s",
                "--topology islands: latency between two islands", 0, CLUSTER_MAX_LATENCY_S, NULL,
                0),
    CLUSTER_OPT("gpu", CLI_CHOICE, gpu, "A100", NULL,
                "GPU profile (peak rates from the datasheets)", 0, 0, "V100|A100|H100|H200", 0),
    CLUSTER_OPT("precision", CLI_CHOICE, precision, "fp32", NULL,
                "which peak rate of the profile, and the training's data type (16 bits at bf16 "
                "and fp16: --sharding's collectives and the activations; fp16 has no profile "
                "rate yet: with --gpu-flops)",
                0, 0, "fp32|tf32|bf16|fp16", 0),
    CLUSTER_OPT("gpu-efficiency", CLI_DOUBLE, efficiency, NULL, NULL,
                "sustained fraction of the peak rate (default: the cost profile's efficiency "
                "for the GPU and precision, or 0.5 where it has none: assumed, not calibrated)",
                CLUSTER_MIN_EFFICIENCY, 1, NULL, 0),
    CLUSTER_OPT("gpu-flops", CLI_FLOPS, gpu_flops, NULL, "flop/s",
                "sustained rate of one GPU, instead of --gpu/--precision/--gpu-efficiency",
                CLUSTER_MIN_FLOPS, CLUSTER_MAX_FLOPS, NULL, 0),
    CLUSTER_OPT("bandwidth", CLI_BANDWIDTH, bandwidth, "10Gbps", "bps|Bps with K/M/G/T",
                "NIC link bandwidth, each direction", CLUSTER_MIN_BANDWIDTH_BPS,
                CLUSTER_MAX_BANDWIDTH_BPS, NULL, 0),
    CLUSTER_OPT("latency", CLI_DURATION, latency, "5us", "ns|us|ms|s", "NIC link latency", 0,
                CLUSTER_MAX_LATENCY_S, NULL, 0),
    CLUSTER_OPT(
        "intra-bandwidth", CLI_BANDWIDTH, intra_bandwidth, "300GBps", "bps|Bps with K/M/G/T",
        "intra-node link bandwidth per GPU, each direction (NVLink; PCIe 4.0 x16 is 32GBps)",
        CLUSTER_MIN_BANDWIDTH_BPS, CLUSTER_MAX_BANDWIDTH_BPS, NULL, 0),
    CLUSTER_OPT("intra-latency", CLI_DURATION, intra_latency, "1us", "ns|us|ms|s",
                "intra-node link latency", 0, CLUSTER_MAX_LATENCY_S, NULL, 0),
    CLUSTER_OPT("nic-per-gpu", CLI_FLAG, nic_per_gpu, NULL, NULL,
                "hierarchical: one NIC per GPU instead of one per node", 0, 0, NULL, 0),
    CLUSTER_OPT("nics-per-node", CLI_INT, nics_per_node, "0", "NICs",
                "hierarchical: NICs per node, dividing --gpus-per-node; each NIC's GPUs cross it "
                "together (0: one, as clouds sell them; --nic-per-gpu: one per GPU)",
                0, 1024, NULL, 0),
    CLUSTER_OPT("leaf-size", CLI_INT, leaf_size, "4", "GPUs", "fat-tree: GPUs per leaf switch", 1,
                65536, NULL, 0),
    CLUSTER_OPT(
        "platform", CLI_STRING, platform, NULL, "FILE.xml",
        "a SimGrid platform of your own instead of a generated one; ranks go on its hosts in "
        "natural name order (gpu2 before gpu10), or on --hosts",
        0, 0, NULL, 0),
    CLUSTER_OPT("hosts", CLI_STRING, hosts, NULL, "h0,h1,...",
                "with --platform: the hosts of ranks 0,1,... in this order", 0, 0, NULL, 0),
    CLUSTER_OPT("oversubscription", CLI_DOUBLE, oversub, "1", NULL,
                "fat-tree: leaf downlink capacity / uplink capacity", 1, 1e6, NULL, 0),
    CLUSTER_OPT("nccl-sockets", CLI_STRING, nccl_sockets, NULL, "THREADSxSOCKETS",
                "--transport tcp: NCCL_SOCKET_NTHREADS x NCCL_NSOCKS_PERTHREAD, threads 1-16, "
                "product at most 64; the transport's cap is one socket stream's rate (the cost "
                "profile's cap_gbps) times the product, shared by a NIC's GPUs (default: the "
                "profile's sockets, 1x1 as NCCL runs on a NIC neither Amazon's nor Google's; "
                "NCCL picks 2x8 on AWS, 4x1 on GCP's gVNIC)",
                0, 0, NULL, 0),
    CLUSTER_OPT("cloud", CLI_CHOICE, cloud, NULL, NULL,
                "a cluster as sold: the GPU, GPUs per node, NIC bandwidth, NVLink and NCCL's "
                "socket defaults of aws-p3dn (p3dn.24xlarge: 8 V100, 100 Gbps, 2x8 sockets), "
                "gcp-a2 (a2-highgpu-8g: 8 A100, 100 Gbps, 4x1) or onprem-tcp (GRACE's: 1 V100 a "
                "node, 25 Gbps, 1x1); a flag given beside it wins",
                0, 0, "aws-p3dn|gcp-a2|onprem-tcp", 0),
};
const int cluster_cli_n_opts = (int)(sizeof cluster_cli_opts / sizeof *cluster_cli_opts);
#undef CLUSTER_OPT

static int given(const int *set, const char *name)
{
    return cli_given(cluster_cli_opts, cluster_cli_n_opts, set, name);
}

/* --cloud: clusters as they are sold, each with NCCL's own socket defaults for its NIC's vendor
 * (NVIDIA/nccl src/transport/net_socket.cc, ncclNetSocketGetNsockNthread: vendor 0x1d0f,
 * Amazon's ENA and EFA, 2 threads x 8 sockets; 0x1ae0, Google's gVNIC, 4 x 1; any other one
 * stream, the control socket). */
static const CloudPreset CLOUDS[] = {
    /* 2 x p3dn.24xlarge, 8 V100s behind one 100 Gb/s NIC a node (aws/aws-ofi-nccl#33, the log
     * in tests/data/nccl-tests/p3dn-2x8-efa-allreduce.txt); V100 NVLink 300 GB/s a GPU (the
     * datasheet, --intra-bandwidth's default) */
    {"aws-p3dn", "V100", 8, 100e9 / 8, 300e9, 2, 8, "p3dn.24xlarge: 8 V100 a node, 100 Gbps ENA"},
    /* a2-highgpu-8g: 8 A100 40GB, NVLink 600 GB/s; A2 VMs up to 100 Gbps with gVNIC
     * (cloud.google.com/compute/docs/gpus/gpu-network-bandwidth) */
    {"gcp-a2", "A100", 8, 100e9 / 8, 600e9, 4, 1, "a2-highgpu-8g: 8 A100 a node, 100 Gbps gVNIC"},
    /* GRACE's cluster (Xu et al., ICDCS 2021; sands-lab/grace-data): one V100 a node, links
     * limited to 25 Gbps, NCCL's defaults */
    {"onprem-tcp", "V100", 1, 25e9 / 8, 0, 1, 1, "GRACE's: 1 V100 a node, 25 Gbps"},
};

const CloudPreset *cluster_cloud_find(const char *name)
{
    for (size_t i = 0; name && i < sizeof CLOUDS / sizeof *CLOUDS; i++)
        if (strcmp(CLOUDS[i].name, name) == 0) return &CLOUDS[i];
    return NULL;
}

/* --cloud's values into ca where the flag was not given; then --nccl-sockets (or the preset's)
 * parsed into ca->sock_threads x sock_socks. */
static int cloud_and_sockets(ClusterFlags *ca, const int *set, BwError *err)
{
    const CloudPreset *k = cluster_cloud_find(ca->cloud);
    if (k) {
        if (!given(set, "gpu")) ca->gpu = k->gpu;
        if (!given(set, "gpus-per-node")) ca->gpus_per_node = k->gpus_per_node;
        if (!given(set, "topology") && ca->gpus_per_node > 1) ca->topology = "hierarchical";
        if (!given(set, "bandwidth")) ca->bandwidth = k->bandwidth_Bps;
        if (!given(set, "intra-bandwidth") && k->intra_Bps > 0 &&
            strcmp(ca->topology, "hierarchical") == 0)
            ca->intra_bandwidth = k->intra_Bps;
        if (!given(set, "nccl-sockets")) {
            snprintf(ca->cloud_sockets, sizeof ca->cloud_sockets, "%dx%d", k->threads, k->socks);
            ca->nccl_sockets = ca->cloud_sockets;
        }
    }
    ca->sock_threads = ca->sock_socks = 0;
    if (!ca->nccl_sockets) return BW_OK;
    const char *why = costs_sockets_parse(ca->nccl_sockets, &ca->sock_threads, &ca->sock_socks);
    if (why) {
        ca->sock_threads = ca->sock_socks = 0;
        return bw_fail(err, BW_EUSAGE, "--nccl-sockets: %s; got '%s'", why, ca->nccl_sockets);
    }
    return BW_OK;
}

int cluster_apply_sockets(const ClusterFlags *ca, const int *set, CostProfile *p, CostNet net,
                          BwError *err)
{
    if (!ca->sock_threads || !p) return BW_OK;
    const int applied =
        net == COST_NET_TCP && costs_set_sockets(p, net, ca->sock_threads, ca->sock_socks);
    if (applied || !given(set, "nccl-sockets")) return BW_OK;
    if (net != COST_NET_TCP)
        return bw_fail(err, BW_EUSAGE,
                       "--nccl-sockets: NCCL's socket transport runs --transport tcp, not %s",
                       costs_net_name(net));
    return bw_fail(err, BW_EUSAGE,
                   "--nccl-sockets: costs %s gives no rate of one socket stream on tcp "
                   "(\"cap_gbps\"; ideal, grace-tf and busbw networks have none)",
                   p->name);
}

void cluster_flags_release(ClusterFlags *ca)
{
    for (int i = 0; i < ca->n_probed; i++) free(ca->probed_names[i]);
    free(ca->probed_names);
    free(ca->hosts_text);
    free(ca->hosts_list);
    ca->probed_names = ca->hosts_list = NULL;
    ca->hosts_text = NULL;
    ca->n_probed = 0;
}

/* --platform: the file's hosts, in natural order or as --hosts lists them. */
static int user_platform(Cluster *c, ClusterFlags *ca, const int *set, BwError *err)
{
    static const char *const generated_only[] = {
        "topology",      "gpu",         "precision",     "gpu-efficiency",
        "gpu-flops",     "bandwidth",   "latency",       "intra-bandwidth",
        "intra-latency", "nic-per-gpu", "leaf-size",     "oversubscription",
        "nics-per-node", "islands",     "wan-bandwidth", "wan-latency",
        "cloud"};
    for (size_t i = 0; i < sizeof generated_only / sizeof *generated_only; i++)
        if (given(set, generated_only[i]))
            return bw_fail(err, BW_EUSAGE,
                           "--%s: describes a generated cluster; with --platform the file "
                           "sets the hosts and links",
                           generated_only[i]);
    char **names;
    int n;
    cluster_flags_release(ca);
    int rc = engine_probe_platform(ca->platform, &names, &n, err);
    ca->probed_names = names;
    ca->n_probed = n;
    if (rc) return rc;
    c->platform_file = ca->platform;
    c->topology = TOPO_STAR;
    if (ca->hosts) {
        char *list = ca->hosts_text = bw_xstrdup(ca->hosts, "cluster_args.c: ca->hosts_text");
        char **hosts = ca->hosts_list = bw_xmalloc(sizeof *hosts * (size_t)(strlen(list) + 1),
                                                   "cluster_args.c: ca->hosts_list");
        int k = 0;
        for (char *h = strtok(list, ","); h; h = strtok(NULL, ",")) {
            int found = 0;
            for (int i = 0; i < n; i++) found |= strcmp(names[i], h) == 0;
            if (!found)
                return bw_fail(err, BW_EUSAGE, "--hosts: '%s' is not a host of %s", h,
                               ca->platform);
            for (int i = 0; i < k; i++)
                if (strcmp(hosts[i], h) == 0)
                    return bw_fail(err, BW_EUSAGE, "--hosts: '%s' is listed twice", h);
            hosts[k++] = h;
        }
        if (k == 0) return bw_fail(err, BW_EUSAGE, "--hosts: expected host names");
        if (given(set, "workers") && ca->workers != k)
            return bw_fail(err, BW_EUSAGE, "--workers: %d, but --hosts lists %d hosts", ca->workers,
                           k);
        c->hosts = hosts;
        c->workers = k;
    } else {
        if (given(set, "workers") && ca->workers > n)
            return bw_fail(err, BW_EUSAGE, "--workers: %d, but %s has only %d hosts", ca->workers,
                           ca->platform, n);
        const double most = cluster_cli_opts[0].max; /* --workers' own range */
        if (!given(set, "workers") && n > most)
            return bw_fail(err, BW_EUSAGE,
                           "--platform %s: %d hosts, more than the %.0f workers bellows "
                           "simulates; take some with --workers N or --hosts h0,h1,...",
                           ca->platform, n, most);
        c->hosts = names;
        c->workers = given(set, "workers") ? ca->workers : n;
    }
    c->gpu = NULL;
    c->gpu_flops = 1; /* replaced by host 0's speed when the platform is loaded */
    if ((rc = engine_check_routes(ca->platform, c->hosts, c->workers, err))) return rc;
    return cluster_resolve(c, err);
}

int cluster_from_cli(Cluster *c, ClusterFlags *ca, const int *set, BwError *err)
{
    *c = cluster_default();
    int rc0 = cloud_and_sockets(ca, set, err);
    if (rc0) return rc0;
    c->workers = ca->workers;
    c->gpus_per_node = ca->gpus_per_node;
    c->topology = strcmp(ca->topology, "fat-tree") == 0       ? TOPO_FAT_TREE
                  : strcmp(ca->topology, "hierarchical") == 0 ? TOPO_HIERARCHICAL
                  : strcmp(ca->topology, "islands") == 0      ? TOPO_ISLANDS
                                                              : TOPO_STAR;
    c->precision = ca->precision;
    c->efficiency = given(set, "gpu-efficiency") ? ca->efficiency : CLUSTER_DEFAULT_EFFICIENCY;
    c->efficiency_from = given(set, "gpu-efficiency") ? CLUSTER_EFF_GIVEN : CLUSTER_EFF_ASSUMED;
    c->bandwidth_Bps = ca->bandwidth;
    c->latency_s = ca->latency;
    c->intra_bandwidth_Bps = ca->intra_bandwidth;
    c->intra_latency_s = ca->intra_latency;
    c->nic_per_gpu = ca->nic_per_gpu;
    c->nics_per_node = ca->nics_per_node;
    c->leaf_size = ca->leaf_size;
    c->oversubscription = ca->oversub;
    if (given(set, "hosts") && !ca->platform)
        return bw_fail(err, BW_EUSAGE, "--hosts: needs --platform");
    if (ca->platform) return user_platform(c, ca, set, err);
    if (given(set, "gpu-flops")) {
        if (given(set, "gpu") || given(set, "gpu-efficiency")) /* --precision: the data type */
            return bw_fail(err, BW_EUSAGE,
                           "--gpu-flops: gives the rate directly; drop --gpu and "
                           "--gpu-efficiency");
        c->gpu = NULL;
        c->gpu_flops = ca->gpu_flops;
    } else {
        c->gpu = cluster_gpu_find(ca->gpu);
    }
    if (c->topology != TOPO_FAT_TREE && (given(set, "leaf-size") || given(set, "oversubscription")))
        return bw_fail(err, BW_EUSAGE, "--%s: applies to --topology fat-tree only",
                       given(set, "leaf-size") ? "leaf-size" : "oversubscription");
    if (c->topology == TOPO_ISLANDS) {
        c->islands = ca->islands;
        c->wan_bandwidth_Bps = ca->wan_bandwidth;
        c->wan_latency_s = ca->wan_latency;
    } else if (given(set, "islands") || given(set, "wan-bandwidth") || given(set, "wan-latency")) {
        return bw_fail(err, BW_EUSAGE, "--%s: applies to --topology islands only",
                       given(set, "islands")         ? "islands"
                       : given(set, "wan-bandwidth") ? "wan-bandwidth"
                                                     : "wan-latency");
    }
    if (c->topology != TOPO_HIERARCHICAL &&
        (given(set, "intra-bandwidth") || given(set, "intra-latency")))
        return bw_fail(err, BW_EUSAGE, "--%s: applies to --topology hierarchical only",
                       given(set, "intra-bandwidth") ? "intra-bandwidth" : "intra-latency");
    return cluster_resolve(c, err);
}

int cluster_apply_costs(Cluster *c, const CostProfile *p, const char *workload, BwError *err)
{
    double eff = p ? costs_workload_efficiency(p, c->precision, workload) : 0;
    if (!(eff > 0) || !c->gpu || c->efficiency_from == CLUSTER_EFF_GIVEN) return BW_OK;
    c->efficiency = eff;
    c->efficiency_from = CLUSTER_EFF_PROFILE;
    if (eff != costs_efficiency(p, c->precision))
        snprintf(c->efficiency_of, sizeof c->efficiency_of, "%.24s for %.32s", p->name, workload);
    else
        snprintf(c->efficiency_of, sizeof c->efficiency_of, "%s", p->name);
    return cluster_resolve(c, err);
}
