/* coll_halving_doubling.c: Rabenseifner's allreduce, a recursive-halving reduce-scatter and a
 * recursive-doubling allgather (Thakur, Rabenseifner, Gropp, "Optimization of Collective
 * Communication Operations in MPICH", IJHPCA 19(1), 2005): 2 log2(p) a + 2 (p-1)/p n b for p a
 * power of two; otherwise the first 2r ranks (r = p - 2^floor(log2 p)) pair up first and the
 * results go back at the end. Its messages carry the data, each rank adding what it receives.
 * On a hierarchical cluster (a fat-tree) each step is priced by its pairs, inside a node (a
 * leaf) or across (coll_hier_steps.c). Its entry in collectives.def's table. */
#include "coll_impl.h"

#include <math.h>

static void halving_doubling(Comm *c, int rank, unsigned char *buf, size_t n, Dtype dt)
{
    const int P = c->P;
    int p2 = 1;
    while (p2 * 2 <= P) p2 *= 2;
    const int rem = P - p2;
    const size_t es = dt_size(dt);
    int nr; /* rank among the p2 that take part in the halving and doubling */
    if (rank < 2 * rem) {
        if (rank % 2 == 0) {
            coll_sendrecv(c, rank, rank + 1, buf, n * es, -1);
            nr = -1;
        } else {
            coll_add_into(c, rank, dt, buf, coll_sendrecv(c, rank, -1, NULL, 0, rank - 1));
            nr = rank / 2;
        }
    } else {
        nr = rank - rem;
    }
    if (nr >= 0) {
        size_t lo = 0, hi = n, los[32], his[32];
        int steps = 0;
        for (int d = p2 / 2; d >= 1; d /= 2, steps++) {
            int pn = nr ^ d, partner = pn < rem ? 2 * pn + 1 : pn + rem;
            size_t mid = lo + (hi - lo) / 2;
            los[steps] = lo;
            his[steps] = hi;
            Msg *m;
            if (nr < pn) { /* keep the lower half */
                m = coll_sendrecv(c, rank, partner, coll_at(buf, mid * es), (hi - mid) * es,
                                  partner);
                coll_add_into(c, rank, dt, coll_at(buf, lo * es), m);
                hi = mid;
            } else {
                m = coll_sendrecv(c, rank, partner, coll_at(buf, lo * es), (mid - lo) * es,
                                  partner);
                coll_add_into(c, rank, dt, coll_at(buf, mid * es), m);
                lo = mid;
            }
        }
        for (int k = steps - 1; k >= 0; k--) {
            int d = p2 >> (k + 1), pn = nr ^ d, partner = pn < rem ? 2 * pn + 1 : pn + rem;
            size_t mid = los[k] + (his[k] - los[k]) / 2;
            Msg *m =
                coll_sendrecv(c, rank, partner, coll_at(buf, lo * es), (hi - lo) * es, partner);
            coll_copy_from(c, rank, coll_at(buf, (nr < pn ? mid : los[k]) * es), m);
            lo = los[k];
            hi = his[k];
        }
    }
    if (rank < 2 * rem) {
        if (rank % 2 == 1) {
            coll_sendrecv(c, rank, rank - 1, buf, n * es, -1);
        } else {
            coll_copy_from(c, rank, buf, coll_sendrecv(c, rank, -1, NULL, 0, rank + 1));
        }
    }
}

static int hd_allreduce(Comm *c, int rank, const unsigned char *buf, unsigned char *out, size_t n,
                        Dtype dt, int mean)
{
    (void)buf, (void)mean; /* out is buf: the data travels with the messages */
    halving_doubling(c, rank, out, n, dt);
    return 0;
}

/* One rate for every step (a star, islands, a fat-tree of one leaf: the steps' routes alike) */
static double hd_flat_s(const CollShape *s, double n)
{
    const int p = s->p;
    const double a = s->a, b = s->b;
    int lg = 0;
    while ((2 << lg) <= p) lg++;
    int p2 = 1 << lg;
    double t = 2.0 * lg * a + 2.0 * (p2 - 1) / p2 * n * b;
    return p2 == p ? t : t + 2.0 * (a + n * b); /* fold in and out the extra ranks */
}

/* On nodes (leaves) of several GPUs a step's pairs are inside one or across (coll_hier_steps.c) */
static double hd_time_s(const CollShape *s, double n)
{
    return coll_hier_steps_apply(s) ? coll_hier_hd_s(s, n) : hd_flat_s(s, n);
}

static double hd_bytes(const Comm *c, int rank, double n)
{
    int P = c->price_P; /* --price-workers: the priced GPUs' folding */
    int p2 = 1;
    while (p2 * 2 <= P) p2 *= 2;
    int rem = P - p2;
    double core = 2.0 * (p2 - 1) / p2 * n;
    if (P != c->P) /* --price-workers: every rank pays the mean of the priced GPUs' (below) */
        return (2.0 * rem * n + (double)(P - rem) * core) / P;
    if (rank >= 2 * rem) return core;
    return rank % 2 == 0 ? n : n + core; /* even: folds in; odd: takes part, sends back */
}

static double hd_messages(const Cluster *cl)
{
    const double P = cl->workers;
    return 2 * P * ceil(log2(P));
}

const CollAlgoOps coll_halving_doubling_ops = {.allreduce = hd_allreduce,
                                               .time_s = hd_time_s,
                                               .bytes = hd_bytes,
                                               .messages = hd_messages,
                                               .sums = COLL_SUMS_ARRIVING,
                                               .steps_by_pairs = 1};
