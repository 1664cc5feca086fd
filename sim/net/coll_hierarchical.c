/* coll_hierarchical.c: the two-level allreduce of a cluster of nodes of G GPUs: a ring
 * reduce-scatter inside each node, a ring allreduce of each GPU's share between the nodes (GPU i
 * of every node), a ring allgather inside each node: 2(g-1) a_l + 2 (g-1)/g n b_l + 2(m-1) a_g +
 * 2 (m-1)/m (n/g) b_g for m nodes. Its messages carry the data. Its entry in collectives.def's
 * table. */
#include "coll_impl.h"

static void hierarchical(Comm *c, int rank, unsigned char *buf, size_t n, Dtype dt)
{
    const int G = c->G, nodes = c->P / G, node = rank / G, li = rank % G;
    const int *local = c->ranks + node * G, *peers = c->peers + li * nodes;
    coll_ring_reduce_scatter(c, local, G, li, buf, 0, n, dt);
    size_t a, b;
    coll_chunk(0, n, G, (li + 1) % G, &a, &b);
    coll_ring_reduce_scatter(c, peers, nodes, node, buf, a, b, dt);
    coll_ring_allgather(c, peers, nodes, node, buf, a, b, dt);
    coll_ring_allgather(c, local, G, li, buf, 0, n, dt);
}

static int hier_allreduce(Comm *c, int rank, const unsigned char *buf, unsigned char *out, size_t n,
                          Dtype dt, int mean)
{
    (void)buf, (void)mean; /* out is buf: the data travels with the messages */
    hierarchical(c, rank, out, n, dt);
    return 0;
}

static double hier_time_s(const CollShape *s, double n)
{
    const int g = s->g, m = s->p / g;
    return 2.0 * (g - 1) * s->a_local + 2.0 * (g - 1) / g * n * s->b_local + 2.0 * (m - 1) * s->a +
           2.0 * (m - 1) / m * (n / g) * s->b;
}

static double hier_bytes(const Comm *c, int rank, double n)
{
    (void)rank;
    int P = c->price_P, G = c->G, m = P / G; /* price_P: --price-workers */
    return 2.0 * (G - 1) / G * n + 2.0 * (m - 1) / m * n / G;
}

static double hier_messages(const Cluster *cl)
{
    const double P = cl->workers;
    return 2 * P * (cl->gpus_per_node - 1) + 2 * P * (P / cl->gpus_per_node);
}

const CollAlgoOps coll_hierarchical_ops = {.allreduce = hier_allreduce,
                                           .time_s = hier_time_s,
                                           .bytes = hier_bytes,
                                           .messages = hier_messages,
                                           .sums = COLL_SUMS_ARRIVING,
                                           .per_node = 1};
