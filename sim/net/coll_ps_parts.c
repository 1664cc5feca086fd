/* coll_ps_parts.c: a parameter-server allreduce cut into partitions, at the transfer level
 * (issue 47: a fused call spread over every server). BytePS (Jiang et al., OSDI 2020;
 * bytedance/byteps, common/operations.cc's PartitionTensor) cuts each tensor into partitions of
 * BYTEPS_PARTITION_BYTES and sends each to a server, every partition's push posted at once;
 * MXNet's KVStore likewise slices a big array over all servers (shared/REFERENCES.md,
 * "Communication scheduling systems"). Here partition j of a call goes to server
 * (first + j) % servers, first the rank's round robin so far (coll_ps_inflight.c counts the same
 * way and gives the closed form; coll_ps_net.c the places and links).
 *
 * Every rank posts the push and the pull of each partition whose server is not itself; a
 * colocated server is played by the rank on its host inside its own call (as coll_ps.c does for
 * one server), a server on a host of its own by a short-lived actor there, started by the first
 * rank to enter the call. A server waits for its partitions' pushes and sends a partition's
 * pulls as soon as all of that partition's pushes are in. The messages carry no data: with data,
 * the first server with a partition complete sums the whole call once, in rank order (every rank
 * has entered it by then, and none leaves before its pulls, which follow the sum). */
#include "coll_impl.h"
#include "xalloc.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>

#include <simgrid/actor.h>
#include <simgrid/comm.h>
#include <simgrid/engine.h>
#include <simgrid/host.h>
#include <simgrid/mailbox.h>

/* The mailbox of (server, rank): pushes into the server (pull 0) or pulls out of it (here, so
 * that coll_ps.c calls this file one way: scripts/callgraph.py). */
sg_mailbox_t coll_ps_mbox(Comm *c, int server, int rank, int pull)
{
    sg_mailbox_t *m = &c->ps_mb[((size_t)server * (size_t)c->P + (size_t)rank) * 2 + (size_t)pull];
    if (!*m) {
        char name[64];
        snprintf(name, sizeof name, "ps%p:%d:%d:%c", (void *)c, server, rank, pull ? 'l' : 's');
        *m = sg_mailbox_by_name(name);
    }
    return *m;
}

/* One call as a server sees it. */
typedef struct {
    Comm *c;
    int server, self; /* self: the rank on the server's host (colocated), or -1 */
    long call, first, k;
    size_t per, n; /* elements a partition, in the call */
    Dtype dt;
    int mean, data;
} PartsCall;

static double part_bytes(const PartsCall *p, long j)
{
    const size_t lo = (size_t)j * p->per, len = p->n - lo < p->per ? p->n - lo : p->per;
    return (double)len * (double)dt_size(p->dt);
}

/* The first of the call's partitions server s serves (>= k when none); then every S-th. */
static long first_part(const PartsCall *p, int s)
{
    const int S = p->c->ps_servers;
    return ((long)s - p->first % S + S) % S;
}

/* The bytes server s is sent by each rank whose push crosses the network. */
static double served_bytes(const PartsCall *p, int s)
{
    double b = 0;
    for (long j = first_part(p, s); j < p->k; j += p->c->ps_servers) b += part_bytes(p, j);
    return b;
}

/* The pulls of partition j to every rank but self, into pulls[*m ...]; the pushes' books
 * (coll_comm_set_wire) from t0. */
static void post_pulls(const PartsCall *p, long j, double t0, sg_comm_t *pulls, size_t *m)
{
    Comm *c = p->c;
    const double t = simgrid_get_clock(), bytes = part_bytes(p, j);
    if (p->data && c->ps_summed < p->call) {
        coll_sum_into_all(c, p->n, p->dt, p->mean, 0);
        c->ps_summed = p->call;
    }
    for (int w = 0; w < c->P; w++) {
        if (w == p->self) continue;
        pulls[(*m)++] = sg_mailbox_put_async(coll_ps_mbox(c, p->server, w, 1), c, (long)bytes);
        if (c->wire && p->self >= 0) c->wire(c->wire_arg, w, p->self, bytes, t0, t);
    }
}

/* The server's part: its partitions' pushes in, each one's pulls out once it is complete. */
static void serve_parts(const PartsCall *p)
{
    Comm *c = p->c;
    const int P = c->P, S = c->ps_servers, senders = P - (p->self >= 0);
    const long j0 = first_part(p, p->server), mine = j0 < p->k ? (p->k - 1 - j0) / S + 1 : 0;
    if (mine == 0 || senders == 0) return;
    const size_t total = (size_t)mine * (size_t)senders;
    sg_comm_t *in = bw_xrealloc_n(NULL, total, sizeof *in, "a parameter server's pushes");
    sg_comm_t *out = bw_xrealloc_n(NULL, total, sizeof *out, "a parameter server's pulls");
    long *of = bw_xrealloc_n(NULL, total, sizeof *of, "a parameter server's pushes");
    int *arrived = bw_xcalloc((size_t)mine, sizeof *arrived, "a parameter server's pushes");
    void *got;
    size_t m = 0, pulls = 0;
    const double t0 = simgrid_get_clock();
    for (long t = 0; t < mine; t++)
        for (int w = 0; w < P; w++)
            if (w != p->self) {
                of[m] = t;
                in[m++] = sg_mailbox_get_async(coll_ps_mbox(c, p->server, w, 0), &got);
            }
    while (m > 0) {
        const ssize_t i = sg_comm_wait_any(in, m);
        assert(i >= 0 && (size_t)i < m);
        const long t = of[i];
        in[i] = in[--m]; /* the finished one is released by SimGrid */
        of[i] = of[m];
        if (++arrived[t] == senders) post_pulls(p, j0 + t * S, t0, out, &pulls);
    }
    const double t1 = simgrid_get_clock();
    sg_comm_wait_all(out, pulls);
    for (int w = 0; c->wire && p->self >= 0 && w < P; w++) /* the pulls' books, at the end */
        if (w != p->self)
            c->wire(c->wire_arg, p->self, w, served_bytes(p, p->server), t1, simgrid_get_clock());
    free(in);
    free(out);
    free(of);
    free(arrived);
}

static void parts_server_actor(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    PartsCall *p = sg_actor_self_get_data();
    serve_parts(p);
    free(p);
}

/* Servers on hosts of their own: one actor a server for the call. */
static void spawn_servers(const PartsCall *proto)
{
    for (int s = 0; s < proto->c->ps_servers; s++) {
        if (first_part(proto, s) >= proto->k) continue;
        PartsCall *p = bw_xmalloc(sizeof *p, "a parameter server");
        *p = *proto;
        p->server = s;
        char name[32];
        snprintf(name, sizeof name, "ps%d", s);
        sg_host_t host = sg_host_by_name(name);
        assert(host && "the platform holds the ps hosts (cluster_write_xml)");
        sg_actor_t a = sg_actor_init(name, host);
        sg_actor_set_data(a, p);
        sg_actor_start(a, parts_server_actor, 0, NULL);
    }
}

void coll_ps_allreduce_parts(Comm *c, int rank, const unsigned char *buf, unsigned char *out,
                             size_t n, Dtype dt, int mean, size_t per, long k)
{
    assert(c->ops->servers && k >= 1);
    const int S = c->ps_servers;
    if (buf) {
        c->bufs[rank] = buf;
        c->outs[rank] = out;
    }
    const long first = c->ps_calls[rank] % S;
    c->ps_calls[rank] += k;
    PartsCall p = {c, -1, -1, c->ps_calls[rank], first, k, per, n, dt, mean, buf != NULL};
    for (int s = 0; !c->ps_own && s < S; s++)
        if (c->ps_host[s] == rank) p.server = s, p.self = rank;
    if (c->ps_own && p.call > c->ps_spawned) { /* the first rank in starts the call's servers */
        c->ps_spawned = p.call;
        spawn_servers(&p);
    }
    sg_comm_t *comms = bw_xrealloc_n(NULL, (size_t)k * 2, sizeof *comms, "a push and pull");
    void *got;
    size_t m = 0;
    double sent = 0;
    for (long j = 0; j < k; j++) {
        const int s = (int)((first + j) % S);
        if (s == p.server) continue;
        const double bytes = part_bytes(&p, j);
        comms[m++] = sg_mailbox_put_async(coll_ps_mbox(c, s, rank, 0), c, (long)bytes);
        comms[m++] = sg_mailbox_get_async(coll_ps_mbox(c, s, rank, 1), &got);
        sent += bytes;
    }
    if (p.server >= 0) {
        serve_parts(&p);
        sent += (double)(c->P - 1) * served_bytes(&p, p.server);
    }
    sg_comm_wait_all(comms, m);
    free(comms);
    c->stats[rank].bytes_sent += sent;
}
