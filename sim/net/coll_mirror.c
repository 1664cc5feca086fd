/* coll_mirror.c: a run's collectives taken apart (coll.h, coll_comm_create_mirror): the data on
 * a zero-time mirror that logs each rank's calls, and the messages replayed on the simulated
 * communicator afterwards, without data. The mirror sums as the simulated communicator would
 * (coll_sum.c: a ring's order or rank order), so the bits are the same; the replay makes the
 * same calls in the same order with the same sizes, so the messages, times and books are too. */
#include "coll_impl.h"
#include "xalloc.h"

#include <assert.h>
#include <stdlib.h>

Comm *coll_comm_create_mirror(const Cluster *cl, const Comm *sim)
{
    const int transfer = sim->backend == COLL_TRANSFER;
    if (transfer && sim->ops->sums == COLL_SUMS_ARRIVING) return NULL;
    Comm *c = coll_comm_create_zero_time(cl, sim->algo);
    if (!c) return NULL;
    c->ring_order = transfer && sim->ops->sums == COLL_SUMS_RING; /* or a server's rank order */
    c->log = bw_xcalloc((size_t)c->P, sizeof *c->log, "coll_mirror.c: c->log");
    if (!c->log) {
        coll_comm_free(c);
        return NULL;
    }
    return c;
}

void coll_replay(Comm *sim, Comm *mirror, int rank)
{
    CallLog *l = &mirror->log[rank];
    for (int i = 0; i < l->n; i++) {
        const CollCall *k = &l->calls[i];
        if (k->kind == CALL_ALLREDUCE)
            coll_allreduce_dt(sim, rank, NULL, k->count, k->dt, 0);
        else if (k->kind == CALL_ALLGATHER)
            coll_cost_allgather_sizes(sim, rank, k->count, l->sizes + k->sizes_at);
        else
            coll_broadcast(sim, rank, k->root, NULL, k->count);
    }
    l->n = 0;
    l->n_sizes = 0;
}
