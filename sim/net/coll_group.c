/* coll_group.c: a communicator of a contiguous group of another's ranks (coll.h,
 * coll_comm_create_group): an island's ring inside a run on --topology islands. Its books are
 * the parent's, at the group's ranks, so a rank's bytes and time add up in one place;
 * coll_stats_fold adds another communicator's books to a rank's there (hybrid sharding's strided
 * groups). */
#include "coll_impl.h"

#include <stdlib.h>

Comm *coll_comm_create_group(const Cluster *sub, Comm *parent, int first)
{
    Comm *c = coll_comm_create(sub, COLL_RING, parent->backend);
    if (!c) return NULL;
    free(c->stats);
    c->stats = parent->stats + first; /* ranks first .. first + P - 1 of the parent's books */
    c->shares_stats = 1;
    c->tag = 1000000 + first; /* mailboxes of its own: coll:TAG:dst<-src, local ranks */
    return c;
}

void coll_stats_fold(Comm *into, int into_rank, const Comm *c, int rank, const CollStats *before)
{
    const CollStats *now = &c->stats[rank];
    CollStats *to = &into->stats[into_rank];
    to->bytes_sent += now->bytes_sent - before->bytes_sent;
    to->time_s += now->time_s - before->time_s;
    to->calls += now->calls - before->calls;
    to->payload_bytes += now->payload_bytes - before->payload_bytes;
}
