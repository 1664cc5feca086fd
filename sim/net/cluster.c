/* cluster.c: GPU profiles, validation and SimGrid XML generation (see cluster.h). The routes
 * are declared only between neighbours and SimGrid's Dijkstra routing finds the rest, so the
 * file grows linearly with the cluster (but for the G^2 intra-node pairs of hierarchical nodes).
 * DijkstraCache: the same shortest paths, each source's computed once and kept (plain Dijkstra
 * searched the graph again for every message: 75% of a bare transfer's wall time at 64 workers,
 * tests/perf/run_coll.sh).
 * Figures: NVIDIA V100 datasheet (SXM2: FP32 15.7 TFLOPS; no TF32/BF16), A100 datasheet (SXM:
 * FP32 19.5, TF32 156, BF16 312 TFLOPS dense), H100 datasheet (SXM: FP32 67, TF32 494.7,
 * BF16 989.4 TFLOPS dense; the datasheet's larger figures assume 2:4 sparsity). Memory
 * bandwidth from the same datasheets: V100 SXM2 900 GB/s, A100 SXM 40GB 1,555 GB/s, H100 SXM
 * 3.35 TB/s. H200 SXM datasheet: the H100 SXM's compute (the same dense figures) with HBM3e at
 * 4.8 TB/s. Memory from the same datasheets: V100 SXM2 32 GB (its larger model; 16 GB too),
 * A100 SXM 40 GB (the model whose bandwidth is above), H100 SXM 80 GB, H200 SXM 141 GB. */
#include "cluster.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const GpuProfile V100 = {"V100", 15.7e12, 0, 0, 900e9, 32e9, "NVIDIA V100 SXM2 datasheet"};
static const GpuProfile A100 = {
    "A100", 19.5e12, 156e12, 312e12, 1555e9, 40e9, "NVIDIA A100 SXM (40GB) datasheet"};
static const GpuProfile H100 = {
    "H100", 67e12, 494.7e12, 989.4e12, 3.35e12, 80e9, "NVIDIA H100 SXM datasheet"};
static const GpuProfile H200 = {
    "H200", 67e12, 494.7e12, 989.4e12, 4.8e12, 141e9, "NVIDIA H200 SXM datasheet"};
static const GpuProfile *const PROFILES[] = {&V100, &A100, &H100, &H200, NULL};

const GpuProfile *const *cluster_gpu_profiles(void)
{
    return PROFILES;
}

const GpuProfile *cluster_gpu_find(const char *name)
{
    for (int i = 0; PROFILES[i]; i++)
        if (strcmp(PROFILES[i]->name, name) == 0) return PROFILES[i];
    return NULL;
}

Cluster cluster_default(void)
{
    Cluster c = {0};
    c.workers = 8;
    c.gpus_per_node = 1;
    c.topology = TOPO_STAR;
    c.gpu = &A100;
    c.precision = "fp32";
    c.efficiency = CLUSTER_DEFAULT_EFFICIENCY;
    c.bandwidth_Bps = 10e9 / 8;
    c.latency_s = 5e-6;
    c.intra_bandwidth_Bps = 300e9;
    c.intra_latency_s = 1e-6;
    c.leaf_size = 4;
    c.oversubscription = 1.0;
    c.wan_bandwidth_Bps = 1e9 / 8;
    c.wan_latency_s = 30e-3;
    return c;
}

int cluster_gpus_per_nic(const Cluster *c)
{
    if (c->topology != TOPO_HIERARCHICAL || c->platform_file || c->nic_per_gpu) return 1;
    int k = c->nics_per_node > 0 ? c->nics_per_node : 1;
    return c->gpus_per_node / k > 1 ? c->gpus_per_node / k : 1;
}

const char *cluster_efficiency_source(const Cluster *c, char *buf, size_t n)
{
    if (c->efficiency_from == CLUSTER_EFF_PROFILE)
        snprintf(buf, n, "%s's efficiency", c->efficiency_of);
    else if (c->efficiency_from == CLUSTER_EFF_GIVEN)
        snprintf(buf, n, "--gpu-efficiency");
    else
        snprintf(buf, n, "assumed, not calibrated");
    return buf;
}

void cluster_describe_rate(const Cluster *c, char *buf, size_t n)
{
    char src[128];
    if (!c->gpu) {
        snprintf(buf, n, "%.3g TFLOP/s sustained, the given rate", c->gpu_flops / 1e12);
        return;
    }
    cluster_efficiency_source(c, src, sizeof src);
    snprintf(buf, n, "%.3g TFLOP/s sustained: %g of the %s's %s peak%s %s", c->gpu_flops / 1e12,
             c->efficiency, c->gpu->name, c->precision,
             c->efficiency_from == CLUSTER_EFF_ASSUMED ? ":" : ",", src);
}

const char *cluster_topology_name(Topology t)
{
    switch (t) {
    case TOPO_STAR:
        return "star";
    case TOPO_FAT_TREE:
        return "fat-tree";
    case TOPO_HIERARCHICAL:
        return "hierarchical";
    case TOPO_ISLANDS:
        return "islands";
    }
    return "?";
}

/* --topology islands: K divides the workers; the WAN's rate and latency in bellows' range. */
static int islands_check(const Cluster *c, BwError *err)
{
    if (c->topology != TOPO_ISLANDS) {
        if (c->islands > 1) return bw_fail(err, BW_EUSAGE, "--islands: needs --topology islands");
        return BW_OK;
    }
    if (c->islands < 1 || c->workers % c->islands != 0)
        return bw_fail(err, BW_EUSAGE,
                       "--islands: %d islands do not divide --workers %d into equal islands",
                       c->islands, c->workers);
    if (!(c->wan_bandwidth_Bps >= CLUSTER_MIN_BANDWIDTH_BPS &&
          c->wan_bandwidth_Bps <= CLUSTER_MAX_BANDWIDTH_BPS))
        return bw_fail(err, BW_EUSAGE,
                       "--wan-bandwidth: %g bytes/s; expected %g (1 kbps) to %g bytes/s",
                       c->wan_bandwidth_Bps, CLUSTER_MIN_BANDWIDTH_BPS, CLUSTER_MAX_BANDWIDTH_BPS);
    if (!(c->wan_latency_s >= 0 && c->wan_latency_s <= CLUSTER_MAX_LATENCY_S))
        return bw_fail(err, BW_EUSAGE, "--wan-latency: expected 0 to %g s", CLUSTER_MAX_LATENCY_S);
    return BW_OK;
}

/* The sustained rate of one GPU: its profile's peak at --precision times its efficiency, or
 * --gpu-flops as given. */
static int gpu_rate(Cluster *c, BwError *err)
{
    if (c->gpu) {
        const double most =
            c->efficiency_from == CLUSTER_EFF_PROFILE ? CLUSTER_MAX_PROFILE_EFFICIENCY : 1;
        if (!(c->efficiency > 0 && c->efficiency <= most))
            return bw_fail(err, BW_EUSAGE, "--gpu-efficiency: expected a fraction in (0, 1]");
        double peak = strcmp(c->precision, "fp32") == 0   ? c->gpu->fp32_flops
                      : strcmp(c->precision, "tf32") == 0 ? c->gpu->tf32_flops
                      : strcmp(c->precision, "bf16") == 0 ? c->gpu->bf16_flops
                      : strcmp(c->precision, "fp16") == 0 ? 0 /* no profile gives it yet */
                                                          : -1;
        if (peak < 0)
            return bw_fail(err, BW_EUSAGE,
                           "--precision: expected fp32, tf32, bf16 or fp16, got '%s'",
                           c->precision);
        if (peak == 0)
            return bw_fail(err, BW_EUSAGE,
                           "--precision: the %s has no %s rate in its profile (give the rate with "
                           "--gpu-flops)",
                           c->gpu->name, c->precision);
        c->gpu_flops = peak * c->efficiency;
        c->gpu_peak_flops = peak;
        c->gpu_mem_Bps = c->gpu->mem_Bps * CLUSTER_MEM_EFFICIENCY;
    } else if (!(c->gpu_flops > 0)) {
        return bw_fail(err, BW_EUSAGE, "--gpu-flops: expected a positive rate");
    }
    return BW_OK;
}

int cluster_resolve(Cluster *c, BwError *err)
{
    int rc = islands_check(c, err);
    if (rc) return rc;
    if (c->workers < 1 || c->workers > 65536)
        return bw_fail(err, BW_EUSAGE, "--workers: expected 1 to 65536, got %d", c->workers);
    if (c->gpus_per_node < 1 || c->workers % c->gpus_per_node != 0)
        return bw_fail(err, BW_EUSAGE,
                       "--gpus-per-node: %d does not divide --workers %d into whole nodes",
                       c->gpus_per_node, c->workers);
    if (c->topology != TOPO_HIERARCHICAL && c->gpus_per_node > 1 && !c->platform_file)
        return bw_fail(err, BW_EUSAGE,
                       "--gpus-per-node: needs --topology hierarchical (star and fat-tree give "
                       "every GPU its own NIC)");
    if (c->topology != TOPO_HIERARCHICAL && c->nic_per_gpu)
        return bw_fail(err, BW_EUSAGE, "--nic-per-gpu: needs --topology hierarchical");
    if (c->nics_per_node > 0 && (c->topology != TOPO_HIERARCHICAL || c->platform_file))
        return bw_fail(err, BW_EUSAGE, "--nics-per-node: needs --topology hierarchical");
    if (c->nics_per_node > 0 && c->nic_per_gpu)
        return bw_fail(err, BW_EUSAGE,
                       "--nics-per-node: give it or --nic-per-gpu (which is --nics-per-node %d)",
                       c->gpus_per_node);
    if (c->nics_per_node < 0 ||
        (c->nics_per_node > 0 && (c->gpus_per_node % c->nics_per_node != 0)))
        return bw_fail(err, BW_EUSAGE,
                       "--nics-per-node: %d does not divide --gpus-per-node %d (each NIC serves "
                       "as many GPUs)",
                       c->nics_per_node, c->gpus_per_node);
    if (c->topology == TOPO_FAT_TREE && (c->leaf_size < 1 || c->oversubscription < 1))
        return bw_fail(err, BW_EUSAGE, "--leaf-size and --oversubscription: expected >= 1");
    if (!(c->bandwidth_Bps > 0) || !(c->intra_bandwidth_Bps > 0) || c->latency_s < 0 ||
        c->intra_latency_s < 0)
        return bw_fail(err, BW_EUSAGE, "bandwidths must be positive and latencies not negative");
    assert(c->link_share >= 0 && c->link_share <= 1 && c->intra_link_share >= 0 &&
           c->intra_link_share <= 1); /* from a checked cost profile */
    int rate = gpu_rate(c, err);
    if (rate) return rate;
    if (!c->platform_file && (c->gpu_flops < CLUSTER_MIN_FLOPS || c->gpu_flops > CLUSTER_MAX_FLOPS))
        return bw_fail(err, BW_EUSAGE,
                       "--gpu-efficiency: a GPU of %g flop/s; expected %g to %g (what bellows "
                       "simulates with representable times)",
                       c->gpu_flops, CLUSTER_MIN_FLOPS, CLUSTER_MAX_FLOPS);
    if (c->ps_servers > 0 && (c->topology == TOPO_ISLANDS || c->platform_file))
        return bw_fail(err, BW_EUSAGE,
                       "--allreduce ps: on a generated star, fat-tree or "
                       "hierarchical cluster only, whose links it prices");
    if (c->ps_servers > 0 && !c->ps_own_hosts && c->ps_servers > c->workers)
        return bw_fail(err, BW_EUSAGE,
                       "--servers: %d colocated servers for %d workers; at most one a worker (or "
                       "--ps-hosts own)",
                       c->ps_servers, c->workers);
    double uplink = c->leaf_size * c->bandwidth_Bps / c->oversubscription;
    if (c->topology == TOPO_FAT_TREE &&
        (uplink < CLUSTER_MIN_BANDWIDTH_BPS || uplink > CLUSTER_MAX_BANDWIDTH_BPS))
        return bw_fail(err, BW_EUSAGE,
                       "--leaf-size %d: a leaf's uplink of %d x --bandwidth / --oversubscription "
                       "is %g bytes/s; expected %g to %g",
                       c->leaf_size, c->leaf_size, uplink, CLUSTER_MIN_BANDWIDTH_BPS,
                       CLUSTER_MAX_BANDWIDTH_BPS);
    return BW_OK;
}

static void link_xml(FILE *out, const char *prefix, int id, double Bps, double lat_s)
{
    fprintf(out,
            "    <link id=\"%s%d\" bandwidth=\"%.17gBps\" latency=\"%.17gs\" "
            "sharing_policy=\"SPLITDUPLEX\"/>\n",
            prefix, id, Bps, lat_s);
}

/* A route from a to b over one or two links, each crossed in the given direction; the route
 * back (symmetrical) crosses them the other way. */
static void route_xml(FILE *out, const char *a, const char *b, const char *l1, const char *d1,
                      const char *l2, const char *d2)
{
    fprintf(out, "    <route src=\"%s\" dst=\"%s\"><link_ctn id=\"%s\" direction=\"%s\"/>", a, b,
            l1, d1);
    if (l2) fprintf(out, "<link_ctn id=\"%s\" direction=\"%s\"/>", l2, d2);
    fputs("</route>\n", out);
}

/* Host and link names: "gpu3", "nic3". */
static const char *name(char *buf, size_t n, const char *prefix, int i)
{
    snprintf(buf, n, "%s%d", prefix, i);
    return buf;
}

/* star: every GPU's NIC to the core switch */
static void star_xml(const Cluster *c, FILE *out, FILE *routes)
{
    char a[32], l[32];
    for (int r = 0; r < c->workers; r++) {
        link_xml(out, "nic", r, c->bandwidth_Bps * cluster_link_share(c), c->latency_s);
        route_xml(routes, name(a, sizeof a, "gpu", r), "core", name(l, sizeof l, "nic", r), "UP",
                  NULL, NULL);
    }
}

/* parameter servers on hosts of their own: each with a NIC like a GPU's, to the core switch */
static void ps_xml(const Cluster *c, FILE *out, FILE *routes)
{
    char a[32], l[32];
    for (int k = 0; c->ps_own_hosts && k < c->ps_servers; k++) {
        link_xml(out, "psnic", k, c->bandwidth_Bps * cluster_link_share(c), c->latency_s);
        route_xml(routes, name(a, sizeof a, "ps", k), "core", name(l, sizeof l, "psnic", k), "UP",
                  NULL, NULL);
    }
}

/* fat-tree: GPUs on leaf switches, each leaf's uplink oversubscribed to the core */
static void fat_tree_xml(const Cluster *c, FILE *out, FILE *routes)
{
    char a[32], b[32], l[32];
    int leaves = (c->workers + c->leaf_size - 1) / c->leaf_size;
    for (int k = 0; k < leaves; k++) {
        fprintf(out, "    <router id=\"leaf%d\"/>\n", k);
        link_xml(out, "up", k,
                 c->leaf_size * c->bandwidth_Bps / c->oversubscription * cluster_link_share(c),
                 c->latency_s);
        route_xml(routes, name(a, sizeof a, "leaf", k), "core", name(l, sizeof l, "up", k), "UP",
                  NULL, NULL);
    }
    for (int r = 0; r < c->workers; r++) {
        link_xml(out, "nic", r, c->bandwidth_Bps * cluster_link_share(c), c->latency_s);
        route_xml(routes, name(a, sizeof a, "gpu", r), name(b, sizeof b, "leaf", r / c->leaf_size),
                  name(l, sizeof l, "nic", r), "UP", NULL, NULL);
    }
}

/* hierarchical: nodes of G GPUs on an intra-node fabric; a NIC per node (reached over the GPU's
 * intra link) or per GPU */
static void hierarchical_xml(const Cluster *c, FILE *out, FILE *routes)
{
    const int P = c->workers, G = c->gpus_per_node, nodes = P / G;
    char a[32], b[32], l1[32], l2[32];
    for (int r = 0; r < P; r++)
        if (G > 1)
            link_xml(out, "nvl", r, c->intra_bandwidth_Bps * cluster_intra_link_share(c),
                     c->intra_latency_s);
    /* GPU pairs within a node: one hop over the two intra links */
    for (int n = 0; n < nodes && G > 1; n++)
        for (int i = 0; i < G; i++)
            for (int j = i + 1; j < G; j++)
                route_xml(routes, name(a, sizeof a, "gpu", n * G + i),
                          name(b, sizeof b, "gpu", n * G + j),
                          name(l1, sizeof l1, "nvl", n * G + i), "UP",
                          name(l2, sizeof l2, "nvl", n * G + j), "DOWN");
    const int per_nic = cluster_gpus_per_nic(c), k = G / per_nic; /* NICs a node */
    if (per_nic == 1) {
        star_xml(c, out, routes);
        return;
    }
    /* NIC j of node n is router and link n*k + j (node0, nic0, ... with one a node) */
    for (int x = 0; x < nodes * k; x++) {
        fprintf(out, "    <router id=\"node%d\"/>\n", x);
        link_xml(out, "nic", x, c->bandwidth_Bps * cluster_link_share(c), c->latency_s);
        route_xml(routes, name(a, sizeof a, "node", x), "core", name(l1, sizeof l1, "nic", x), "UP",
                  NULL, NULL);
        for (int i = 0; i < per_nic; i++)
            route_xml(routes, name(b, sizeof b, "gpu", x * per_nic + i), a,
                      name(l2, sizeof l2, "nvl", x * per_nic + i), "UP", NULL, NULL);
    }
}

/* islands: each island a star on its own switch, the switches to the core over WAN links */
static void islands_xml(const Cluster *c, FILE *out, FILE *routes)
{
    char a[32], l[32];
    for (int k = 0; k < c->islands; k++) {
        fprintf(out, "    <router id=\"island%d\"/>\n", k);
        link_xml(out, "wan", k, c->wan_bandwidth_Bps, c->wan_latency_s / 2);
        route_xml(routes, name(a, sizeof a, "island", k), "core", name(l, sizeof l, "wan", k), "UP",
                  NULL, NULL);
    }
    for (int r = 0; r < c->workers; r++) {
        char b[32];
        link_xml(out, "nic", r, c->bandwidth_Bps * cluster_link_share(c), c->latency_s);
        route_xml(routes, name(a, sizeof a, "gpu", r),
                  name(b, sizeof b, "island", cluster_island_of(c, r)), name(l, sizeof l, "nic", r),
                  "UP", NULL, NULL);
    }
}

void cluster_write_xml(const Cluster *c, FILE *out)
{
    /* SimGrid's DTD wants every host, router and link declared before the first route: routes
     * are collected in memory and written last. */
    char *routes = NULL;
    size_t routes_len = 0;
    FILE *R = open_memstream(&routes, &routes_len);
    if (!R) R = out; /* out of memory: the file would then be refused by SimGrid's parser */
    fprintf(out,
            "<?xml version='1.0'?>\n"
            "<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
            "<!-- generated by bellows: %d GPUs, %s topology -->\n"
            "<platform version=\"4.1\">\n"
            "  <zone id=\"cluster\" routing=\"DijkstraCache\">\n",
            c->workers, cluster_topology_name(c->topology));
    char rate[256];
    cluster_describe_rate(c, rate, sizeof rate);
    for (char *d; (d = strstr(rate, "--"));) /* no "--" in an XML comment */
        memmove(d, d + 2, strlen(d + 2) + 1);
    fprintf(out, "  <!-- each GPU: %s", rate);
    if (c->link_share > 0 && c->link_share < 1)
        fprintf(out, "; NIC links at %g%% of their bandwidth (the collectives' share)",
                100 * c->link_share);
    if (c->topology == TOPO_HIERARCHICAL && c->intra_link_share > 0 && c->intra_link_share < 1)
        fprintf(out, ", intra-node links at %g%%", 100 * c->intra_link_share);
    fputs(" -->\n", out);
    for (int r = 0; r < c->workers; r++)
        fprintf(out, "    <host id=\"gpu%d\" speed=\"%.17gf\"/>\n", r, c->gpu_flops);
    for (int k = 0; c->ps_own_hosts && k < c->ps_servers; k++)
        fprintf(out, "    <host id=\"ps%d\" speed=\"%.17gf\"/>\n", k, c->gpu_flops);
    fputs("    <router id=\"core\"/>\n", out);
    switch (c->topology) {
    case TOPO_STAR:
        star_xml(c, out, R);
        ps_xml(c, out, R);
        break;
    case TOPO_FAT_TREE:
        fat_tree_xml(c, out, R);
        ps_xml(c, out, R); /* servers of their own off the core switch (coll_ps_net.c) */
        break;
    case TOPO_HIERARCHICAL:
        hierarchical_xml(c, out, R);
        ps_xml(c, out, R);
        break;
    case TOPO_ISLANDS:
        islands_xml(c, out, R);
        break;
    }
    if (R != out) {
        fclose(R);
        fwrite(routes, 1, routes_len, out);
        free(routes);
    }
    fputs("  </zone>\n</platform>\n", out);
}

int cluster_write_xml_file(const Cluster *c, char *path, size_t len, BwError *err)
{
    const char *dir = getenv("TMPDIR");
    snprintf(path, len, "%s/bellows-platform-XXXXXX", dir && *dir ? dir : "/tmp");
    int fd = mkstemp(path);
    if (fd < 0) return bw_fail(err, BW_ERUNTIME, "%s: cannot create: %s", path, strerror(errno));
    FILE *f = fdopen(fd, "w");
    if (!f) {
        close(fd);
        unlink(path);
        return bw_fail(err, BW_ERUNTIME, "%s: cannot open: %s", path, strerror(errno));
    }
    cluster_write_xml(c, f);
    if (ferror(f) | fclose(f)) {
        unlink(path);
        return bw_fail(err, BW_ERUNTIME, "%s: write failed", path);
    }
    return BW_OK;
}
