/* coll_ps_inflight.c: the analytic price of fifo's partitions in flight on parameter servers
 * (coll_ps.c runs the servers); apart from coll_ps.c so that the analytic backend
 * (coll_analytic.c) calls it and coll_ps.c calls the analytic backend one way
 * (scripts/callgraph.py: no cycle among sim/net's files). */
#include "coll_impl.h"

#include <assert.h>
#include <math.h>

/* ---- the analytic price of a call's partitions in flight ----
 *
 * fifo on parameter servers, as BytePS and MXNet's KVStore run it (shared/REFERENCES.md;
 * byteps/common/scheduled_queue.cc: no credit unless BYTEPS_SCHEDULING_CREDIT is set): a call of
 * N bytes is cut into K partitions of at most the partition size (the last one the rest), sent to
 * the servers round-robin, and every partition is pushed at once; a server pulls each back once
 * it has summed it. On a star, with S_s the bytes server s is sent, r the workers whose pushes
 * cross the network (p - 1 colocated, p on hosts of their own), the push phase loads
 *   - colocated, host h's NIC: into it, the r pushes of the partitions it serves, r S_h; out of
 *     it, its own pushes to the other servers, N - S_h (a host serving none: N);
 *   - hosts of their own: a server's NIC r S_s into it; a worker's N out of it;
 * and the pull phase the same bytes in the other direction. Under max-min fair sharing (the
 * fluid model SimGrid's links follow), each phase lasts its busiest NIC direction's bytes at the
 * link's rate, after the route's latency, so the call takes
 *     T = 2 (a + b L),  L = max( max_s r S_s, max_h (N - S_h) )     (colocated)
 *     T = 2 (a + b L),  L = max( max_s r S_s, N )                   (hosts of their own)
 * with a the route's latency (two NIC links) and b the seconds per byte at the link's share.
 * One partition (K = 1) gives 2 (a + r N b), the one call's form above; K partitions spread
 * evenly over p colocated servers give 2 (a + (p - 1)/p N b), the bandwidth term of a ring
 * allreduce (Patarasuk and Yuan, JPDC 2009): each host's NIC carries the bytes a ring's does,
 * the point of BytePS's colocated servers (Jiang et al., OSDI 2020). The form takes the two
 * phases one after the other. At the transfer level a partition's pull starts as soon as its
 * pushes are in: with an even spread the two agree exactly; with an uneven one, an early pull
 * takes a share of a NIC from the pushes still on it (24% longer than the form in
 * tests/test_coll_ps.c's case of 3.5 partitions over 4 servers; within 2% on VGG-16's step,
 * tests/test_ps_inflight.sh, where most partitions belong to large tensors). */

void coll_comm_set_ps_partition(Comm *c, double bytes)
{
    assert(c->ops->servers && c->backend == COLL_ANALYTIC && bytes >= 0 && isfinite(bytes));
    c->ps_partition = bytes;
}

/* Calls j in [0, m) with (first + j) % S == s, first already reduced mod S. */
static double rr_count(long first, long m, int S, int s)
{
    const long o = ((long)s - first + S) % S;
    return o < m ? (double)((m - 1 - o) / S + 1) : 0.0;
}

int coll_ps_split(const Comm *c, size_t count, size_t es, size_t *per, long *k)
{
    const double part = c->ps_partition > 0 ? c->ps_partition : COLL_PS_PARTITION_BYTES;
    const double N = (double)count * (double)es;
    *per = count; /* elements a partition, as the schedules cut them (sched_plan.c) */
    if (N > part) {
        *per = (size_t)floor(part / (double)es);
        if (*per < 1) *per = 1;
    }
    const size_t whole = count > 0 ? count : 1; /* an empty call is still a partition */
    *k = (long)((whole + *per - 1) / *per);
    return c->ops->servers && (*k > 1 || c->ps_net.topo != TOPO_STAR);
}

/* The push phase's seconds (before the curve's factor) on a star: the busiest NIC's bytes, L,
 * at the NIC's rate (the closed form above). */
static double star_push_s(const Comm *c, int rank, const double *served, double N, double *mine)
{
    const int S = c->ps_servers, P = c->P;
    const double r = c->ps_remote;
    double L = c->ps_own || S < P ? N : 0;
    for (int s = 0; s < S; s++) {
        L = fmax(L, r * served[s]);
        if (!c->ps_own) L = fmax(L, N - served[s]);
        if (!c->ps_own && s == rank) *mine = served[s];
    }
    return L;
}

double coll_ps_inflight_call(Comm *c, int rank, size_t count, size_t es, double f)
{
    assert(c->ops->servers);
    const int S = c->ps_servers, P = c->P;
    const double N = (double)count * (double)es;
    size_t per;
    long K;
    coll_ps_split(c, count, es, &per, &K);
    const long first = c->ps_calls[rank] % S;
    const double full = (double)per * (double)es, last = N - (double)(K - 1) * full;
    const int last_server = (int)((first + K - 1) % S);
    double *served = c->ps_scratch + 3 * P, mine = 0; /* [S]; coll_ps_net.c uses the rest */
    for (int s = 0; s < S; s++)
        served[s] = rr_count(first, K - 1, S, s) * full + (s == last_server ? last : 0);
    double t = 0;
    if (c->ps_net.topo == TOPO_STAR) {
        t = 2.0 * (c->a_s + star_push_s(c, rank, served, N, &mine) * f * c->b);
    } else {
        double lat;
        const double push = coll_ps_net_push_s(c, served, N, &lat);
        for (int s = 0; !c->ps_own && s < S; s++)
            if (c->ps_host[s] == rank) mine = served[s];
        t = 2.0 * (lat + push * f);
    }
    if (P > 1) c->stats[rank].bytes_sent += (double)(P - 1) * mine + (N - mine);
    c->ps_calls[rank] += K;
    return P > 1 ? t : 0.0;
}
