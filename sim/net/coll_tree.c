/* coll_tree.c: the binomial-tree allreduce, a reduce to rank 0 then a broadcast from it (coll_msg.c
 * coll_tree_broadcast): 2 ceil(log2 p) (a + n b), level by level on a hierarchical cluster or a
 * fat-tree (coll_hier_steps.c). Its messages carry the data, each parent
 * adding its children's. Its entry in collectives.def's table. */
#include "coll_impl.h"

static void tree_reduce(Comm *c, int rank, unsigned char *buf, size_t n, Dtype dt)
{
    for (int mask = 1; mask < c->P; mask <<= 1) {
        if (rank & mask) {
            coll_sendrecv(c, rank, rank - mask, buf, n * dt_size(dt), -1);
            return;
        }
        if (rank + mask < c->P) {
            coll_add_into(c, rank, dt, buf, coll_sendrecv(c, rank, -1, NULL, 0, rank + mask));
        }
    }
}

static int tree_allreduce(Comm *c, int rank, const unsigned char *buf, unsigned char *out, size_t n,
                          Dtype dt, int mean)
{
    (void)buf, (void)mean; /* out is buf: the data travels with the messages */
    tree_reduce(c, rank, out, n, dt);
    coll_tree_broadcast(c, rank, 0, out, n * dt_size(dt));
    return 0;
}

static double tree_flat_s(const CollShape *s, double n)
{
    return 2.0 * coll_ceil_log2(s->p) * (s->a + n * s->b);
}

/* On nodes (leaves) of several GPUs a level's pairs are inside one or across
 * (coll_hier_steps.c): the levels of masks below the node's GPUs stay inside, and those above
 * cross one NIC (uplink) a sender, not a node's GPUs' share of it */
static double tree_time_s(const CollShape *s, double n)
{
    return coll_hier_steps_apply(s) ? coll_hier_tree_s(s, n) : tree_flat_s(s, n);
}

static double tree_bytes(const Comm *c, int rank, double n)
{
    const double log_p = coll_ceil_log2(c->price_P);
    if (c->price_P != c->P) /* --price-workers: every rank pays the mean of the priced GPUs' */
        return (log_p * n + 2.0 * (c->price_P - 1) * n) / c->price_P;
    return rank == 0 ? log_p * n : 2.0 * n;
}

static double tree_messages(const Cluster *cl)
{
    const double P = cl->workers;
    return 2 * (P - 1);
}

const CollAlgoOps coll_tree_ops = {.allreduce = tree_allreduce,
                                   .time_s = tree_time_s,
                                   .bytes = tree_bytes,
                                   .messages = tree_messages,
                                   .sums = COLL_SUMS_ARRIVING,
                                   .steps_by_pairs = 1};
