/* coll_log.c: a mirror's log of each rank's calls (coll_mirror.c), which coll.c's calls append
 * to and coll_comm_free frees; apart from the mirror so that coll.c calls it and the mirror calls
 * coll.c one way (scripts/callgraph.py: no cycle among sim/net's files). */
#include "coll_impl.h"
#include "xalloc.h"

#include <stdlib.h>

void coll_log_call(Comm *c, int rank, CallKind kind, Dtype dt, int root, size_t count,
                   const size_t *sizes)
{
    CallLog *l = &c->log[rank];
    if (l->n == l->cap) {
        const int cap = l->cap ? 2 * l->cap : 8;
        CollCall *grown = bw_xrealloc_n(l->calls, (size_t)cap, sizeof *grown, "a mirror's log");
        l->calls = grown;
        l->cap = cap;
    }
    CollCall *k = &l->calls[l->n++];
    *k = (CollCall){.kind = kind, .dt = dt, .root = root, .count = count, .sizes_at = l->n_sizes};
    if (!sizes) return;
    if (l->n_sizes + (size_t)c->P > l->cap_sizes) {
        const size_t cap = 2 * (l->n_sizes + (size_t)c->P);
        size_t *grown = bw_xrealloc_n(l->sizes, cap, sizeof *grown, "a mirror's log");
        l->sizes = grown;
        l->cap_sizes = cap;
    }
    for (int r = 0; r < c->P; r++) l->sizes[l->n_sizes++] = sizes[r];
}

void coll_log_free(Comm *c)
{
    for (int r = 0; c->log && r < c->P; r++) {
        free(c->log[r].calls);
        free(c->log[r].sizes);
    }
    free(c->log);
    c->log = NULL;
}
