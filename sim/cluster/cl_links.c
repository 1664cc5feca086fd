/* cl_links.c: how busy the cluster's links were, over time. Every message of every job's
 * collectives is seen once delivered (coll_comm_set_wire: its ranks, bytes, and when it was
 * posted and done); its bytes go to each link of its route (SimGrid's own, sg_host_get_route:
 * each direction of a full-duplex link on its own, nic3_UP and nic3_DOWN), spread evenly over
 * the bins its time spans: from when its sender posted it to when the sender's exchange ended,
 * which also holds any wait for the receiver or the exchange's other half, so a bin's share can
 * be off (and read above 100%) where a link's total is exact. The bins start 1e-4 simulated seconds
 * wide; when a message ends past the last they are merged in pairs and their width doubles, so a
 * run of any length ends with between CL_BINS / 2 and CL_BINS bins of equal width and a last,
 * partial one. A link's bytes are exact; their spread over a message's window is even where
 * SimGrid's rate may not be. (SimGrid 3.32's link load plugin would read the rates themselves, but
 * it does not attach to the two halves of a full-duplex link and crashes on them.) Nothing here
 * takes simulated time or changes what SimGrid simulates. */
#include "cl_impl.h"
#include "xalloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <simgrid/engine.h>
#include <simgrid/host.h>
#include <simgrid/link.h>
#include <xbt/dynar.h>

#include "engine.h"
#include "outfile.h"

#define CL_BINS  512  /* even */
#define CL_DT0_S 1e-4 /* the first bins' width */

/* The links of the route from one GPU to another, found once. */
typedef struct {
    long key; /* from * gpus + to, or -1: empty */
    int n;
    int *links;
} Route;

struct ClLinks {
    sg_link_t *links;
    int n;
    int gpus;
    double dt_s;
    int n_bins;    /* bins holding bytes so far: [0, n_bins) */
    double *bytes; /* [n * CL_BINS]: link i's bin k at bytes[i * CL_BINS + k] */
    Route *routes; /* open addressing, cap a power of two */
    size_t cap, used;
    xbt_dynar_t found;
};

ClLinks *cl_links_create(int gpus)
{
    ClLinks *m = bw_xcalloc(1, sizeof *m, "cl_links.c: m");
    sg_link_t *all = sg_link_list();
    size_t count = sg_link_count();
    m->links = bw_xmalloc(sizeof *m->links * (count ? count : 1), "cl_links.c: m->links");
    for (size_t i = 0; i < count; i++)
        if (strncmp(sg_link_get_name(all[i]), "__", 2) != 0) {      /* not SimGrid's loopback */
            sg_link_set_data(all[i], (void *)(intptr_t)(m->n + 1)); /* its index, + 1 */
            m->links[m->n++] = all[i];
        }
    free(all);
    m->gpus = gpus;
    m->bytes =
        bw_xcalloc((size_t)(m->n ? m->n : 1) * CL_BINS, sizeof *m->bytes, "cl_links.c: m->bytes");
    m->dt_s = CL_DT0_S;
    m->cap = 64;
    m->routes = bw_xmalloc(sizeof *m->routes * m->cap, "cl_links.c: m->routes");
    for (size_t i = 0; i < m->cap; i++) m->routes[i].key = -1;
    m->found = xbt_dynar_new(sizeof(sg_link_t), NULL);
    return m;
}

static Route *slot(Route *t, size_t cap, long key)
{
    size_t i = (size_t)key * 0x9E3779B97F4A7C15ull & (cap - 1);
    while (t[i].key != -1 && t[i].key != key) i = (i + 1) & (cap - 1);
    return &t[i];
}

/* The route from GPU a to GPU b, as link indices. */
static const Route *route(ClLinks *m, int a, int b)
{
    const long key = (long)a * m->gpus + b;
    Route *r = slot(m->routes, m->cap, key);
    if (r->key == key) return r;
    if (2 * (m->used + 1) > m->cap) { /* grow, keeping the load under a half */
        Route *old = m->routes;
        size_t old_cap = m->cap;
        m->routes = bw_xmalloc(sizeof *m->routes * (m->cap *= 2), "cl_links.c: m->routes");
        for (size_t i = 0; i < m->cap; i++) m->routes[i].key = -1;
        for (size_t i = 0; i < old_cap; i++)
            if (old[i].key != -1) *slot(m->routes, m->cap, old[i].key) = old[i];
        free(old);
        r = slot(m->routes, m->cap, key);
    }
    xbt_dynar_reset(m->found);
    sg_host_get_route(engine_host(a), engine_host(b), m->found);
    r->key = key;
    r->n = 0;
    r->links =
        bw_xmalloc(sizeof *r->links * (xbt_dynar_length(m->found) + 1), "cl_links.c: r->links");
    unsigned k;
    sg_link_t l;
    xbt_dynar_foreach(m->found, k, l)
    {
        intptr_t i = (intptr_t)sg_link_get_data(l);
        if (i > 0) r->links[r->n++] = (int)(i - 1);
    }
    m->used++;
    return r;
}

/* Full: bins 2k and 2k+1 become bin k, twice as wide. */
static void merge(ClLinks *m)
{
    for (int i = 0; i < m->n; i++) {
        double *b = m->bytes + (size_t)i * CL_BINS;
        for (int k = 0; k < CL_BINS / 2; k++) b[k] = b[2 * k] + b[2 * k + 1];
        memset(b + CL_BINS / 2, 0, sizeof *b * CL_BINS / 2);
    }
    m->n_bins = (m->n_bins + 1) / 2;
    m->dt_s *= 2;
}

void cl_links_wire(void *arg, int src, int dst, double bytes, double t0_s, double t1_s)
{
    const ClWireJob *job = arg;
    ClLinks *m = job->links;
    const Route *r = route(m, job->gpus[src], job->gpus[dst]);
    while (t1_s >= CL_BINS * m->dt_s) merge(m);
    const int k0 = (int)(t0_s / m->dt_s), k1 = (int)(t1_s / m->dt_s);
    if (k1 + 1 > m->n_bins) m->n_bins = k1 + 1;
    for (int k = k0; k <= k1; k++) {
        double lo = k * m->dt_s > t0_s ? k * m->dt_s : t0_s;
        double hi = (k + 1) * m->dt_s < t1_s ? (k + 1) * m->dt_s : t1_s;
        double share = t1_s > t0_s ? bytes * (hi - lo) / (t1_s - t0_s) : bytes;
        for (int i = 0; i < r->n; i++) m->bytes[(size_t)r->links[i] * CL_BINS + k] += share;
    }
}

/* A link's total, for the order of the busiest. */
typedef struct {
    double bytes;
    int i;
    const char *name;
} LinkTotal;

static int by_bytes(const void *pa, const void *pb)
{
    const LinkTotal *a = pa, *b = pb;
    if (a->bytes != b->bytes) return a->bytes > b->bytes ? -1 : 1;
    return strcmp(a->name, b->name);
}

int cl_links_write(ClLinks *m, const char *dir, BwError *err)
{
    const double end = simgrid_get_clock();
    LinkTotal *order = bw_xcalloc((size_t)(m->n ? m->n : 1), sizeof *order, "cl_links.c: order");
    for (int i = 0; i < m->n; i++) {
        order[i].i = i;
        order[i].name = sg_link_get_name(m->links[i]);
        for (int k = 0; k < m->n_bins; k++) order[i].bytes += m->bytes[(size_t)i * CL_BINS + k];
    }
    qsort(order, (size_t)m->n, sizeof *order, by_bytes);
    OutFile of;
    int rc = outfile_open(&of, dir, "links.csv", err);
    if (rc) {
        free(order);
        return rc;
    }
    fputs("link,bandwidth_Bps,t0_s,t1_s,bytes,utilisation\n", of.f);
    for (int r = 0; r < m->n && r < CL_LINKS_TOP && order[r].bytes > 0; r++) {
        const int i = order[r].i;
        const double bw = sg_link_get_bandwidth(m->links[i]);
        for (int k = 0; k < m->n_bins; k++) {
            double t0 = k * m->dt_s, t1 = (k + 1) * m->dt_s < end ? (k + 1) * m->dt_s : end;
            double b = m->bytes[(size_t)i * CL_BINS + k];
            if (t1 > t0)
                fprintf(of.f, "%s,%.17g,%.9g,%.9g,%.17g,%.6f\n", order[r].name, bw, t0, t1, b,
                        b / ((t1 - t0) * bw));
        }
    }
    free(order);
    return outfile_commit(&of, err);
}

void cl_links_free(ClLinks *m)
{
    if (!m) return;
    for (size_t i = 0; i < m->cap; i++)
        if (m->routes[i].key != -1) free(m->routes[i].links);
    free(m->routes);
    xbt_dynar_free(&m->found);
    free(m->links);
    free(m->bytes);
    free(m);
}
