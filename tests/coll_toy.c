/* coll_toy.c: a toy allreduce, added to the collectives' table by a test as a new algorithm
 * would be (docs/ARCHITECTURE.md, "Adding a collective algorithm"): this one file, and its line
 * COLL_ALGO(TOY, toy, "toy") in tests/coll_toy.def, which sim/net/collectives.def includes for
 * tests/test_coll_toy.c's own build of the collectives. The algorithm, "flat": every rank sends
 * its n bytes to rank 0, which takes them one at a time in rank order and adds each as it comes
 * (so its sum is rank order's); then rank 0 sends the sum to each rank, one at a time. Every
 * message goes alone on the links, so on a star it takes 2 (p-1) (a + n b). */
#include "coll_impl.h"

static int toy_allreduce(Comm *c, int rank, const unsigned char *buf, unsigned char *out, size_t n,
                         Dtype dt, int mean)
{
    (void)buf, (void)mean; /* out is buf: the data travels with the messages */
    const size_t bytes = n * dt_size(dt);
    if (rank == 0) {
        for (int r = 1; r < c->P; r++)
            coll_add_into(c, 0, dt, out, coll_sendrecv(c, 0, -1, NULL, 0, r));
        for (int r = 1; r < c->P; r++) coll_sendrecv(c, 0, r, out, bytes, -1);
    } else {
        coll_sendrecv(c, rank, 0, out, bytes, -1);
        coll_copy_from(c, rank, out, coll_sendrecv(c, rank, -1, NULL, 0, 0));
    }
    return 0; /* the caller divides for a mean */
}

static double toy_time_s(const CollShape *s, double n)
{
    return 2.0 * (s->p - 1) * (s->a + n * s->b);
}

static double toy_bytes(const Comm *c, int rank, double n)
{
    return rank == 0 ? (c->P - 1) * n : n;
}

static double toy_messages(const Cluster *cl)
{
    return 2.0 * (cl->workers - 1);
}

const CollAlgoOps coll_toy_ops = {.allreduce = toy_allreduce,
                                  .time_s = toy_time_s,
                                  .bytes = toy_bytes,
                                  .messages = toy_messages,
                                  .sums = COLL_SUMS_ARRIVING};
