/* coll_group.c: a communicator of a contiguous group of another's ranks (coll.h,
 * coll_comm_create_group): an island's ring inside a run on --topology islands. Its books are
 * the parent's, at the group's ranks, so a rank's bytes and time add up in one place. */
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
