/* coll_analytic.c: the collectives' closed forms (Thakur, Rabenseifner, Gropp, "Optimization of
 * Collective Communication Operations in MPICH", IJHPCA 19(1), 2005; the ring: Patarasuk and
 * Yuan, JPDC 2009): an algorithm's time and the bytes each rank sends, what the analytic backend
 * charges (coll.c), through the algorithms' table (collectives.def: each algorithm's own
 * closed form and bytes in its file), and the offline communicator's books, charged for every rank
 * at once without SimGrid (the fast replay). coll.h gives the formulas. */
#include <assert.h>
#include <math.h>

#include "coll_impl.h"

int coll_ceil_log2(int p)
{
    int k = 0;
    while ((1 << k) < p) k++;
    return k;
}

double coll_allreduce_formula_s(CollAlgo algo, int p, int g, double n, double a, double b,
                                double al, double bl)
{
    if (p <= 1) return 0.0;
    const CollShape s = {p, g, a, b, al, bl, 0, 0, NULL};
    return coll_algo_ops(algo)->time_s(&s, n);
}

double coll_allreduce_bytes(const Comm *c, int rank, double n)
{
    return c->ops->bytes(c, rank, n);
}

double coll_allreduce_time_s(const Comm *c, double n)
{
    if (c->price_P <= 1) return 0.0;
    const CollShape s = {.p = c->price_P,
                         .g = c->hier_g ? c->hier_g : c->group,
                         .a = c->a_s,
                         .b = c->b,
                         .a_local = c->a_local_s,
                         .b_local = c->b_local,
                         .q = c->hier_q,
                         .b_nic = c->b_nic,
                         .steps = c->steps};
    return c->ops->time_s(&s, n);
}

/* An allgather is a ring whatever the allreduce (coll.c coll_allgather): its slowest hop, one
 * flow a link each way (b_ring), not the share of a NIC or uplink that c->b holds for the
 * allreduce's one-rate form when all of a node's or leaf's GPUs cross it at once. */
double coll_allgather_time_s(const Comm *c, double total)
{
    const int P = c->price_P;
    const CollShape s = {P, c->G, c->a_s, c->b_ring, c->a_local_s, c->b_local, 0, 0, NULL};
    return coll_ring_hops_s(&s, P - 1, (double)(P - 1) / P * total);
}

double coll_share_curve_at(const CollShareCurve *k, double bytes)
{
    assert(k->n > 0);
    const double *x = k->bytes, *y = k->share;
    if (k->n == 1 || bytes <= x[0]) return y[0];
    if (bytes >= x[k->n - 1]) return y[k->n - 1];
    int i = 1;
    while (x[i] < bytes) i++;
    double f = log(bytes / x[i - 1]) / log(x[i] / x[i - 1]);
    return exp(log(y[i - 1]) + f * log(y[i] / y[i - 1]));
}

double coll_curve_factor(const Comm *c, int allgather, double bytes)
{
    const CollShareCurve *k = &c->curve[allgather ? 1 : 0];
    return k->n > 0 ? 1.0 / coll_share_curve_at(k, bytes) : 1.0;
}

void coll_comm_set_share_curves(Comm *c, const CollShareCurve *allreduce,
                                const CollShareCurve *allgather)
{
    assert(allreduce && allreduce->n > 0 && allreduce->n <= COLL_CURVE_MAX);
    c->curve[0] = *allreduce;
    c->curve[1] = allgather && allgather->n > 0 ? *allgather : *allreduce;
}

/* ---- offline accounting: the analytic backend's books without SimGrid ---- */

double coll_charge_allreduce(Comm *c, size_t count, size_t elem_bytes)
{
    assert(!c->bar); /* an offline communicator */
    const double bytes = (double)count * (double)elem_bytes;
    const double f = coll_curve_factor(c, 0, bytes);
    double t = c->P > 1 ? coll_allreduce_time_s(c, f != 1 ? bytes * f : bytes) : 0.0;
    for (int r = 0; r < c->P; r++) {
        CollStats *s = &c->stats[r];
        size_t per;
        long k;
        if (c->ps_partition > 0 || coll_ps_split(c, count, elem_bytes, &per, &k)) {
            t = coll_ps_inflight_call(c, r, count, elem_bytes, f);
        } else {
            if (c->P > 1) s->bytes_sent += coll_allreduce_bytes(c, r, bytes);
            if (c->ops->servers) c->ps_calls[r]++;
        }
        s->payload_bytes += bytes;
        s->time_s += t;
        s->calls++;
    }
    return t;
}

double coll_charge_allgather(Comm *c, size_t bytes)
{
    assert(!c->bar);
    double total = 0; /* summed as the analytic allgather sums the ranks' sizes */
    for (int r = 0; r < c->P; r++) total += (double)bytes;
    total = coll_priced_total(c, total);
    double wire = c->allgather_factor > 0 ? total * c->allgather_factor : total;
    wire *= coll_curve_factor(c, 1, total);
    const double t = c->P > 1 ? coll_allgather_time_s(c, wire) : 0.0;
    for (int r = 0; r < c->P; r++) {
        CollStats *s = &c->stats[r];
        if (c->P > 1) s->bytes_sent += total - (double)bytes;
        s->payload_bytes += (double)bytes;
        s->time_s += t;
        s->calls++;
    }
    return t;
}
