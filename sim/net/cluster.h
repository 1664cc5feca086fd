/* cluster.h: the simulated GPU cluster and the SimGrid platform it becomes.
 * P workers (GPUs), G per node, a GPU profile giving each host its sustained flop rate, and one
 * of three topologies, each written as a SimGrid zone with Dijkstra routing and full-duplex
 * (SPLITDUPLEX) links:
 *   star          every GPU has its own NIC link to one non-blocking core switch;
 *   fat-tree      every GPU has a NIC link to a leaf switch of leaf_size ports; each leaf has
 *                 one uplink to the core of leaf_size * NIC bandwidth / oversubscription;
 *   hierarchical  nodes of G GPUs joined pairwise by their intra-node links (NVLink or PCIe:
 *                 a GPU-to-GPU route crosses the sender's and the receiver's intra link), and
 *                 one NIC per node (behind the node's GPUs' intra links) or one per GPU, to a
 *                 core switch.
 *   islands       K islands (datacenters) of P/K GPUs, each a star on a switch of its own
 *                 (islandK: every GPU's NIC to it), the islands' switches joined through the
 *                 core by WAN links (wanK, each wan_bandwidth_Bps each way and half of
 *                 wan_latency_s, so a route between two islands has the WAN's latency).
 * Hosts are named gpu0 .. gpu{P-1}; rank r runs on gpu{r}, and node n holds ranks nG..nG+G-1. */
#ifndef BELLOWS_CLUSTER_H
#define BELLOWS_CLUSTER_H

#include <stdio.h>

#include "status.h"

typedef enum { TOPO_STAR, TOPO_FAT_TREE, TOPO_HIERARCHICAL, TOPO_ISLANDS } Topology;

typedef struct {
    const char *name;
    /* Peak dense rates in flop/s from the vendor's datasheet; 0 where unsupported. */
    double fp32_flops, tf32_flops, bf16_flops;
    double mem_Bps;   /* peak memory bandwidth, bytes/s */
    double mem_bytes; /* memory (HBM), bytes (GB = 1e9, as the datasheets count) */
    const char *source;
} GpuProfile;

/* The shipped profiles, NULL-terminated. */
const GpuProfile *const *cluster_gpu_profiles(void);
const GpuProfile *cluster_gpu_find(const char *name);

#define CLUSTER_DEFAULT_EFFICIENCY 0.5
enum { CLUSTER_EFF_ASSUMED, CLUSTER_EFF_GIVEN, CLUSTER_EFF_PROFILE };
#define CLUSTER_MIN_EFFICIENCY 1e-6 /* --gpu-efficiency's floor, and a cost profile's */
/* a cost profile's efficiency for one workload, in its direct flops (costs.h's
 * COSTS_MAX_WORKLOAD_EFFICIENCY): fewer multiplies than counted (Winograd) may exceed 1 */
#define CLUSTER_MAX_PROFILE_EFFICIENCY 4.0
/* The sustained fraction of the peak memory bandwidth for streaming kernels (the optimiser's
 * and the compressors' elementwise passes): STREAM-like copies reach about 85% of it on recent
 * NVIDIA GPUs (e.g. about 1.3 TB/s of the A100 40GB's 1.555 TB/s). */
#define CLUSTER_MEM_EFFICIENCY 0.85

/* What a rate or time given to SimGrid may be, so that every simulated time is representable
 * and resolved: a run's simulated time stays under CLUSTER_MAX_SIM_S (about 31 years), where a
 * double still resolves a tenth of a microsecond, and a rate stays far above SimGrid's precision
 * (its solver takes a rate below about 1e-5 for none: an activity at it never ends). Flags, a
 * platform file's hosts and links, workload profiles and traces are checked against them. */
#define CLUSTER_MIN_BANDWIDTH_BPS 125.0 /* bytes/s: 1 kbps */
#define CLUSTER_MAX_BANDWIDTH_BPS 1e15  /* bytes/s: 8 Pbps */
#define CLUSTER_MAX_LATENCY_S     10.0
/* flop/s or bytes/s: a thousand times SimGrid's solver precision (1e-5), below which it takes
 * a rate for none. The floor of what bellows cannot simulate, not of what is plausible: a slow
 * host (SimGrid's griffon.xml example has 286.087 kflop/s) runs, and a run too slow for
 * CLUSTER_MAX_SIM_S is refused by that limit, checked on the step as priced (estimate.c) and
 * on the run's end. A cost profile's rates, and its link shares of a link, are held to it. */
#define CLUSTER_MIN_RATE  1e-2
#define CLUSTER_MIN_FLOPS CLUSTER_MIN_RATE
#define CLUSTER_MAX_FLOPS 1e18
#define CLUSTER_MAX_SIM_S 1e9

typedef struct {
    int workers;       /* P */
    int gpus_per_node; /* G, divides P */
    Topology topology;
    const GpuProfile *gpu; /* NULL when the rate was given directly */
    const char *precision; /* fp32, tf32, bf16 or fp16 (fp16: a data type, with --gpu-flops) */
    double efficiency;     /* sustained fraction of the peak */
    /* where efficiency comes from: CLUSTER_EFF_ASSUMED (CLUSTER_DEFAULT_EFFICIENCY, no
     * calibration), _GIVEN (--gpu-efficiency), _PROFILE (the cost profile efficiency_of's
     * figure for the GPU and precision) */
    int efficiency_from;
    char efficiency_of[64];
    double gpu_flops;      /* sustained flop/s of one GPU (resolved by cluster_resolve) */
    double gpu_peak_flops; /* the profile's peak at the precision; 0: rate given */
    double gpu_mem_Bps;    /* sustained memory bandwidth (resolved); 0: unknown (--gpu-flops) */
    double bandwidth_Bps, latency_s;             /* NIC links */
    double intra_bandwidth_Bps, intra_latency_s; /* intra-node links (hierarchical) */
    int nic_per_gpu;         /* hierarchical: a NIC per GPU rather than per node */
    int nics_per_node;       /* hierarchical: NICs per node, dividing G (0: one; nic_per_gpu: G);
                                GPU i of a node reaches NIC i / (G / nics_per_node) */
    int leaf_size;           /* fat-tree: GPUs per leaf switch */
    double oversubscription; /* fat-tree: >= 1 */
    /* A user's own SimGrid platform instead of a generated one (--platform): rank r runs on
     * host hosts[r]. engine_load_cluster then sets latency_s, bandwidth_Bps and gpu_flops to
     * what the platform's routes and hosts give (for the analytic backend and the reports). */
    const char *platform_file;
    char **hosts; /* [workers] */
    /* --platform: the spread behind gpu_flops (rank 0's host) and bandwidth_Bps (the narrowest
     * route between ring neighbours), over the ranks' hosts and those routes */
    double gpu_flops_min, gpu_flops_max, route_bandwidth_max_Bps;
    /* The share of each link's bandwidth the collective library reaches (a cost profile's, for
     * the network's kind, sim/costs/): the NIC links (and a --platform file's every link), the
     * intra-node links. In (0, 1]; 0 stands for 1 (line rate), so a zeroed Cluster is ideal.
     * bandwidth_Bps and intra_bandwidth_Bps stay the links' own rates. */
    double link_share, intra_link_share;
    /* --allreduce ps (sim/net/coll_ps.c): parameter servers, each partition pushed to one of
     * them and pulled back; 0 without ps. ps_own_hosts: on hosts of their own (ps0 ...
     * ps{N-1}, each with a NIC like a GPU's to the core), else server s shares rank s's host
     * and NIC (BytePS's default, colocated; off a star rank floor(s P / N)'s, coll_ps_net.c) */
    int ps_servers;
    int ps_own_hosts;
    /* --topology islands: K islands of workers / K consecutive ranks (island k holds ranks
     * k P/K .. (k+1) P/K - 1), joined by WAN links; 0 on the other topologies */
    int islands;
    double wan_bandwidth_Bps, wan_latency_s;
} Cluster;

/* The island of rank r (0 when the cluster has none), and the ranks an island holds. */
static inline int cluster_island_of(const Cluster *c, int r)
{
    return c->islands > 1 ? r / (c->workers / c->islands) : 0;
}
static inline int cluster_island_size(const Cluster *c)
{
    return c->islands > 1 ? c->workers / c->islands : c->workers;
}

/* The shares above, 0 read as 1. */
static inline double cluster_link_share(const Cluster *c)
{
    return c->link_share > 0 ? c->link_share : 1.0;
}
static inline double cluster_intra_link_share(const Cluster *c)
{
    return c->intra_link_share > 0 ? c->intra_link_share : 1.0;
}

/* The GPUs that share each NIC: G / nics_per_node on a generated hierarchical cluster, 1 where
 * every GPU has its own (star, fat-tree, --nic-per-gpu, one GPU a node, --platform). */
int cluster_gpus_per_nic(const Cluster *c);

/* 8 A100s (fp32, efficiency 0.5), one per node, on a 10 Gbps / 5 us star; NVLink at
 * 300 GBps / 1 us within nodes; fat-tree leaves of 4, not oversubscribed; WAN links of 1 Gbps
 * and 30 ms between islands. */
Cluster cluster_default(void);
const char *cluster_topology_name(Topology t);

/* Checks the description (naming the flag at fault) and fills gpu_flops from the profile,
 * precision and efficiency unless gpu is NULL (then gpu_flops must already be set). */
int cluster_resolve(Cluster *c, BwError *err);

/* What the GPUs' sustained rate is, the same words wherever it is printed: "9.03 TFLOP/s
 * sustained: 0.575 of the V100's fp32 peak, pytorch-v100's efficiency", "... 0.5 of the A100's
 * fp32 peak: assumed, not calibrated", "... --gpu-efficiency"; "the given rate (--gpu-flops)"
 * for a custom GPU. And the efficiency's source alone (summary.json's gpu_efficiency_source). */
void cluster_describe_rate(const Cluster *c, char *buf, size_t n);
const char *cluster_efficiency_source(const Cluster *c, char *buf, size_t n);

/* Writes the SimGrid platform XML. */
void cluster_write_xml(const Cluster *c, FILE *out);
/* Writes it to a new temporary file and returns its path in path (len >= 64). */
int cluster_write_xml_file(const Cluster *c, char *path, size_t len, BwError *err);

#endif
