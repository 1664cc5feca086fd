/* coll_ps_net.c: where parameter servers sit on a generated cluster, and the links their pushes
 * and pulls load (issue 47: parameter servers on fat-tree and hierarchical clusters).
 *
 * Placement. Colocated (BytePS's default, Jiang et al., OSDI 2020, section 4: a server process
 * on every worker machine), server s shares the host of rank s on a star, where every host is
 * alike (as before), and of rank floor(s P / m) elsewhere, m servers spread evenly over the
 * ranks, so over the leaves of a fat-tree and the nodes of a hierarchical cluster (one a node
 * with the default m, --servers = nodes: BytePS's one server a machine). Servers on hosts of
 * their own hang off the core switch, each with a NIC like a GPU's (cluster.c's ps_xml).
 *
 * The closed form. A partitioned call (coll_ps_inflight.c) sends S_s bytes to server s from
 * every worker whose push crosses a link (N = sum_s S_s bytes a worker in all), every partition
 * in flight at once; the pulls load the same links the other way (the links are full duplex,
 * SimGrid's SPLITDUPLEX). Under max-min fair sharing each phase lasts its busiest link
 * direction's bytes at that link's rate, after the longest route's latency:
 *     T = 2 (a + max_l bytes_l / rate_l)
 * The loads, with h_s the host rank of server s, in(k) the bytes served inside leaf or node k:
 *   fat-tree (leaves of L ranks, uplinks of L B / o, NICs of B):
 *     NIC of h_s in: (P - 1) S_s; a NIC out: N less what its own rank serves;
 *     leaf k's uplink out: L_k (N - in(k)); into leaf k: in(k) (P - L_k);
 *     a = 4 alpha across leaves (NIC, uplink, uplink, NIC), 3 alpha to a host of its own.
 *   hierarchical (nodes of G GPUs, q GPUs behind a NIC of B, intra links of B_i):
 *     q > 1: every push leaves over its GPU's intra link (N less its own server's bytes) and
 *       enters h_s over its intra link ((P - 1) S_s); NIC x out: q (N - in(node)); into NIC x:
 *       in(x) (P - G); a = 2 alpha + 2 alpha_i;
 *     q = 1 (a NIC a GPU): the same with pushes inside a node on the intra links only.
 * With m colocated servers one on each of m leaves of a fat-tree (m <= P / L) and an even
 * spread, S_s = N / m:
 *     T = 2 (4 alpha + N/B max( (P - 1)/m, 1, (P - L) o / (m L), (m - 1) o / m, o [m < P/L] ))
 * (the server's NIC in; a worker's NIC out; into a leaf with a server; out of a leaf with a
 * server; out of a leaf without one); on a hierarchical cluster of one NIC a node and one
 * server a node (m = P / G):
 *     T = 2 (2 alpha + 2 alpha_i + N max( G (m - 1) / (m B), (P - 1) / (m B_i) )).
 * tests/test_coll_ps.c checks both against the transfer level: equal to 1e-6 where an uplink
 * or a NIC reached only across the core is the bottleneck; where the bottleneck is a server's
 * own NIC or intra link, the pushes from its own leaf or node reach it first (2 alpha, 2
 * alpha_i away) and fill it before the others arrive, so each phase ends up to a - a_near
 * earlier than the form, which takes the longest route's latency (4 alpha in all there). And
 * SimGrid shares a saturated link between flows inversely to their round-trip times
 * (simgrid/simgrid, docs/source/Models.rst, "The TCP models"), not evenly: where near pushes
 * (inside a node) and far ones share a server's intra link that is not itself the bottleneck,
 * the near ones can hold the far ones below their NIC's share for a while (6% longer than the
 * form with intra links at 4 times the NIC's rate, tests/test_coll_ps.c), which the form,
 * max-min fair, does not price. */
#include "coll_impl.h"
#include "xalloc.h"

#include <math.h>
#include <string.h>

int coll_ps_net_init(Comm *c, const Cluster *cl)
{
    PsNet *n = &c->ps_net;
    n->topo = cl->topology;
    n->leaf = cl->leaf_size > 0 ? cl->leaf_size : 1;
    n->G = cl->gpus_per_node > 0 ? cl->gpus_per_node : 1;
    n->q = cluster_gpus_per_nic(cl);
    n->nic_Bps = cl->bandwidth_Bps * cluster_link_share(cl);
    n->up_Bps = n->leaf * cl->bandwidth_Bps / cl->oversubscription * cluster_link_share(cl);
    n->nvl_Bps = cl->intra_bandwidth_Bps * cluster_intra_link_share(cl);
    n->lat_s = cl->latency_s;
    n->intra_lat_s = cl->intra_latency_s;
    c->ps_host = bw_xcalloc((size_t)c->ps_servers, sizeof *c->ps_host, "coll_ps_net.c: ps_host");
    c->ps_scratch = bw_xcalloc((size_t)c->P * 3 + (size_t)c->ps_servers, sizeof *c->ps_scratch,
                               "coll_ps_net.c: ps_scratch");
    if (!c->ps_host || !c->ps_scratch) return 0;
    for (int s = 0; s < c->ps_servers; s++)
        c->ps_host[s] = c->ps_own              ? -1
                        : n->topo == TOPO_STAR ? s
                                               : (int)((long)s * c->P / c->ps_servers);
    return 1;
}

int coll_ps_host(const Comm *c, int server)
{
    return c->ps_host[server];
}

/* fat-tree: the NICs and the leaves' uplinks (the loads in the header comment) */
static double fat_tree_s(const Comm *c, const double *hosted, double N, double *in)
{
    const PsNet *n = &c->ps_net;
    const int P = c->P, L = n->leaf, leaves = (P + L - 1) / L;
    double worst = 0;
    memset(in, 0, sizeof *in * (size_t)leaves);
    for (int w = 0; w < P; w++) {
        in[w / L] += hosted[w];
        worst = fmax(worst, (N - hosted[w]) / n->nic_Bps);
        worst = fmax(worst, (double)(P - 1) * hosted[w] / n->nic_Bps);
    }
    for (int k = 0; k < leaves; k++) {
        const int Lk = P - k * L < L ? P - k * L : L;
        worst = fmax(worst, (double)Lk * (N - in[k]) / n->up_Bps);
        worst = fmax(worst, in[k] * (double)(P - Lk) / n->up_Bps);
    }
    return worst;
}

/* hierarchical: the GPUs' intra links and the NICs (the loads in the header comment) */
static double hierarchical_s(const Comm *c, const double *hosted, double N, double *node)
{
    const PsNet *n = &c->ps_net;
    const int P = c->P, G = n->G, q = n->q;
    double *nic = node + P, worst = 0;
    memset(node, 0, sizeof *node * (size_t)P * 2);
    for (int w = 0; w < P; w++) {
        node[w / G] += hosted[w];
        nic[w / q] += hosted[w];
    }
    for (int w = 0; w < P; w++) {
        const double h = hosted[w], here = node[w / G];
        if (q > 1) {
            worst = fmax(worst, (N - h) / n->nvl_Bps);
            worst = fmax(worst, (double)(P - 1) * h / n->nvl_Bps);
        } else {
            worst = fmax(worst, (here - h) / n->nvl_Bps);
            worst = fmax(worst, (double)(G - 1) * h / n->nvl_Bps);
        }
        if (w % q) continue; /* NIC w / q, once */
        worst = fmax(worst, (double)q * (N - here) / n->nic_Bps);
        worst = fmax(worst, nic[w / q] * (double)(P - G) / n->nic_Bps);
    }
    return worst;
}

double coll_ps_net_push_s(Comm *c, const double *served, double N, double *lat)
{
    const PsNet *n = &c->ps_net;
    const int P = c->P;
    double *hosted = c->ps_scratch, worst = 0;
    memset(hosted, 0, sizeof *hosted * (size_t)P);
    for (int s = 0; s < c->ps_servers; s++) {
        if (c->ps_own) /* a host of its own: its NIC in, from every worker */
            worst = fmax(worst, (double)P * served[s] / n->nic_Bps);
        else
            hosted[c->ps_host[s]] += served[s];
    }
    const int many = n->topo == TOPO_FAT_TREE ? P > n->leaf : P > n->G;
    if (n->topo == TOPO_FAT_TREE) {
        worst = fmax(worst, fat_tree_s(c, hosted, N, c->ps_scratch + P));
        *lat = c->ps_own ? 3 * n->lat_s : many ? 4 * n->lat_s : 2 * n->lat_s;
    } else {
        worst = fmax(worst, hierarchical_s(c, hosted, N, c->ps_scratch + P));
        const double cross = n->q > 1 ? 2 * n->lat_s + 2 * n->intra_lat_s : 2 * n->lat_s;
        *lat = c->ps_own ? (n->q > 1 ? 2 * n->lat_s + n->intra_lat_s : 2 * n->lat_s)
               : many    ? fmax(cross, n->G > 1 ? 2 * n->intra_lat_s : 0)
                         : 2 * n->intra_lat_s;
    }
    return worst;
}
