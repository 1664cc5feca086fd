/* coll_msg.c: the messages of the transfer-level collectives (coll_impl.h's coll_sendrecv and
 * its helpers; coll.c's header says how they are zero-copy), and the ring and binomial-tree
 * steps several algorithms share (coll_ring.c, coll_hierarchical.c, coll_tree.c, coll.c's
 * allgather and broadcast). */
#include "coll_impl.h"
#include "xalloc.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <simgrid/comm.h>
#include <simgrid/engine.h>
#include <simgrid/mailbox.h>

static sg_mailbox_t mbox(Comm *c, int dst, int src)
{
    sg_mailbox_t *m = &c->mb[(size_t)dst * c->P + src];
    if (!*m) {
        char name[64];
        if (c->tag > 0) /* a job of several in one engine (coll_comm_set_tag) */
            snprintf(name, sizeof name, "coll:%d:%d<-%d", c->tag, dst, src);
        else
            snprintf(name, sizeof name, "coll:%d<-%d", dst, src);
        *m = sg_mailbox_by_name(name);
        c->mb_named = 1;
    }
    return *m;
}

/* A free descriptor of rank me's (read by its receiver), or a new one. */
static Msg *msg_free(Comm *c, int me)
{
    RankState *rs = &c->rs[me];
    for (int i = 0; i < rs->n_msgs; i++)
        if (!rs->msgs[i]->unread) return rs->msgs[i];
    Msg **grown = bw_xrealloc_n(rs->msgs, (size_t)(rs->n_msgs + 1), sizeof *grown, "coll");
    rs->msgs = grown;
    Msg *m = bw_xcalloc(1, sizeof *m, "coll: a message");
    return rs->msgs[rs->n_msgs++] = m;
}

/* The receiver has read m's bytes (NULL: nothing was received). */
void coll_msg_done(Msg *m)
{
    if (m) m->unread = 0;
}

/* m's bytes into its own stage, so that the sender may change or free its buffer. */
static void msg_stage(Msg *m)
{
    if (!m->unread || !m->data || m->data == m->stage || !m->bytes) return;
    if (m->bytes > m->stage_cap) {
        free(m->stage);
        m->stage = bw_xmalloc(m->bytes, "coll: a message's staging copy");
        m->stage_cap = m->bytes;
    }
    memcpy(m->stage, m->data, m->bytes);
    m->data = m->stage;
}

/* Rank me is about to write p[0..len): its unread messages from those bytes are staged first.
 * (Ranges compared as addresses: the bytes of one buffer, or of distinct ones.) */
static void protect(Comm *c, int me, const unsigned char *p, size_t len)
{
    const RankState *rs = &c->rs[me];
    const uintptr_t lo = (uintptr_t)p, hi = lo + len;
    for (int i = 0; i < rs->n_msgs; i++) {
        Msg *m = rs->msgs[i];
        if (!m->unread || !m->data || m->data == m->stage) continue;
        const uintptr_t mlo = (uintptr_t)m->data;
        if (mlo < hi && lo < mlo + m->bytes) msg_stage(m);
    }
}

/* Before a collective returns: none of rank me's unread messages may point into the caller's
 * buffers any more. */
void coll_release(Comm *c, int me)
{
    const RankState *rs = &c->rs[me];
    for (int i = 0; i < rs->n_msgs; i++) msg_stage(rs->msgs[i]);
}

/* Sends send[0..bytes) to rank `to` (if to >= 0) while receiving from rank `from` (if
 * from >= 0); returns the received message, which the caller reads and hands to msg_done
 * before its next sendrecv. send NULL: a message of that size with no data (sizes only). */
Msg *coll_sendrecv(Comm *c, int me, int to, const void *send, size_t bytes, int from)
{
    sg_comm_t comms[2];
    size_t n = 0;
    void *got = NULL;
    const double t0 = c->wire ? simgrid_get_clock() : 0;
    if (to >= 0) {
        Msg *m = msg_free(c, me);
        m->data = send;
        m->bytes = bytes;
        m->unread = 1;
        const double f = c->rs[me].factor; /* coll_comm_set_share_curves */
        const long wire = f > 0 ? (long)llround((double)bytes * f) : (long)bytes;
        comms[n++] = sg_mailbox_put_async(mbox(c, to, me), m, wire);
        c->stats[me].bytes_sent += (double)bytes;
    }
    if (from >= 0) comms[n++] = sg_mailbox_get_async(mbox(c, me, from), &got);
    sg_comm_wait_all(comms, n);
    if (c->wire && to >= 0) c->wire(c->wire_arg, me, to, (double)bytes, t0, simgrid_get_clock());
    return got;
}

/* Rank me adds the received message into dst, element by element in order, and releases it. */
void coll_add_into(Comm *c, int me, Dtype dt, unsigned char *dst, Msg *m)
{
    if (dst && m->bytes) {
        protect(c, me, dst, m->bytes);
        dt_add(dt, dst, m->data, m->bytes / dt_size(dt));
    }
    coll_msg_done(m);
}

/* Rank me copies the received message into dst (NULL: a dataless call) and releases it. */
void coll_copy_from(Comm *c, int me, unsigned char *dst, Msg *m)
{
    if (dst && m->bytes) {
        protect(c, me, dst, m->bytes);
        memcpy(dst, m->data, m->bytes);
    }
    coll_msg_done(m);
}

/* The algorithms below work on buf as count elements of type dt; lo, hi, a, b count elements. */

/* Ring reduce-scatter of buf[lo, hi) over the ranks g[0..gn), this rank being g[i]; afterwards
 * g[i] holds the sum of chunk (i + 1) mod gn. */
void coll_ring_reduce_scatter(Comm *c, const int *g, int gn, int i, unsigned char *buf, size_t lo,
                              size_t hi, Dtype dt)
{
    const size_t es = dt_size(dt);
    int next = g[(i + 1) % gn], prev = g[coll_mod(i - 1, gn)];
    for (int s = 0; s < gn - 1; s++) {
        size_t a, b;
        coll_chunk(lo, hi, gn, coll_mod(i - s, gn), &a, &b);
        Msg *m = coll_sendrecv(c, g[i], next, coll_at(buf, a * es), (b - a) * es, prev);
        coll_chunk(lo, hi, gn, coll_mod(i - s - 1, gn), &a, &b);
        coll_add_into(c, g[i], dt, coll_at(buf, a * es), m);
    }
}

/* The matching allgather: g[i] starts with chunk (i + 1) mod gn and ends with all. */
void coll_ring_allgather(Comm *c, const int *g, int gn, int i, unsigned char *buf, size_t lo,
                         size_t hi, Dtype dt)
{
    const size_t es = dt_size(dt);
    int next = g[(i + 1) % gn], prev = g[coll_mod(i - 1, gn)];
    for (int s = 0; s < gn - 1; s++) {
        size_t a, b;
        coll_chunk(lo, hi, gn, coll_mod(i + 1 - s, gn), &a, &b);
        Msg *m = coll_sendrecv(c, g[i], next, coll_at(buf, a * es), (b - a) * es, prev);
        coll_chunk(lo, hi, gn, coll_mod(i - s, gn), &a, &b);
        coll_copy_from(c, g[i], coll_at(buf, a * es), m);
    }
}

void coll_tree_broadcast(Comm *c, int rank, int root, void *buf, size_t bytes)
{
    const int P = c->P, vr = coll_mod(rank - root, P);
    int top = 1;
    while (top < P) top <<= 1;
    for (int mask = top / 2; mask >= 1; mask >>= 1) {
        if ((vr & (2 * mask - 1)) == 0 && vr + mask < P) {
            coll_sendrecv(c, rank, (vr + mask + root) % P, buf, bytes, -1);
        } else if ((vr & (2 * mask - 1)) == mask) {
            coll_copy_from(c, rank, buf,
                           coll_sendrecv(c, rank, -1, NULL, 0, coll_mod(vr - mask + root, P)));
        }
    }
}
