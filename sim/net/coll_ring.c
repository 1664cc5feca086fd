/* coll_ring.c: the ring allreduce (Patarasuk and Yuan, "Bandwidth optimal all-reduce algorithms
 * for clusters of workstations", JPDC 69(2), 2009): a reduce-scatter then an allgather around
 * the ring of all ranks, 2(p-1) a + 2 (p-1)/p n b (a and b: its slowest hop's, on nodes of
 * several GPUs). Its entry in collectives.def's table. */
#include "coll_impl.h"

/* The last rank to enter a ring allreduce: every input is in place and none will change before
 * the sum is done, so with a pool the sum starts now on one of its threads, while the actors
 * simulate the messages (the pool's threads are idle then: every gradient job of the step was
 * waited for before the step's rendezvous). */
static void ring_sum_start(Comm *c, size_t n, Dtype dt, int mean)
{
    c->ring_entered = 0;
    if (!c->pool) return;
    c->ring_sum = (SumJob){c, n, dt, mean, 1};
    pool_submit(c->pool, &c->ring_job, coll_sum_job, &c->ring_sum);
    c->ring_pending = 1;
}

/* The ring allreduce: every message of the reduce-scatter and the allgather is simulated, with
 * its size but without data; the reduction itself is done once, by the first rank to finish, in
 * the order the messages would have added (coll_sum.c), into every rank's buffer. A rank can only
 * finish once every rank has entered the call and registered its buffer (its last chunk depends
 * on all of them), no rank writes its buffer while inside the call, and none returns before the
 * sum is done, so the sum reads every input intact and each rank returns with the result the
 * messages would have given it, in out. Returns whether it divided (mean). */
static int ring_allreduce(Comm *c, int rank, const unsigned char *buf, unsigned char *out, size_t n,
                          Dtype dt, int mean)
{
    long call = 0;
    if (buf) {
        call = ++c->rs[rank].ring_calls;
        c->bufs[rank] = buf;
        c->outs[rank] = out;
        if (++c->ring_entered == c->P) ring_sum_start(c, n, dt, mean);
    }
    coll_ring_reduce_scatter(c, c->ranks, c->P, rank, NULL, 0, n, dt);
    coll_ring_allgather(c, c->ranks, c->P, rank, NULL, 0, n, dt);
    if (buf && c->ring_summed < call) {
        if (c->ring_pending)
            pool_wait(c->pool, &c->ring_job);
        else
            coll_sum_into_all(c, n, dt, mean, 1);
        c->ring_pending = 0;
        c->ring_summed = call;
    }
    return buf != NULL;
}

/* On nodes of g > 1 GPUs the ring (ranks in order, a node's GPUs adjacent) has hops inside a
 * node (a_local, b_local) and hops across nodes (a, b), all in flight at every one of its steps:
 * a step ends with its slowest hop (a node of slow intra links, PCIe, holds back a fast NIC;
 * tests/test_coll_time.c checks it against the transfer level), so `steps` steps that move
 * `bytes` over a hop in all take the slower of steps a + bytes b and steps a_l + bytes b_l. */
double coll_ring_hops_s(const CollShape *s, double steps, double bytes)
{
    const double across = steps * s->a + bytes * s->b;
    if (s->g <= 1) return across;
    const double inside = steps * s->a_local + bytes * s->b_local;
    return inside > across ? inside : across;
}

static double ring_time_s(const CollShape *s, double n)
{
    const int p = s->p;
    return coll_ring_hops_s(s, 2.0 * (p - 1), 2.0 * (p - 1) / p * n);
}

static double ring_bytes(const Comm *c, int rank, double n)
{
    (void)rank;
    const int P = c->price_P; /* --price-workers: the priced GPUs' share */
    return 2.0 * (P - 1) / P * n;
}

static double ring_messages(const Cluster *cl)
{
    const double P = cl->workers;
    return 2 * P * (P - 1);
}

const CollAlgoOps coll_ring_ops = {.allreduce = ring_allreduce,
                                   .time_s = ring_time_s,
                                   .bytes = ring_bytes,
                                   .messages = ring_messages,
                                   .sums = COLL_SUMS_RING,
                                   .single_flow = 1};
