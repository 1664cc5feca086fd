/* coll_ps.c: parameter servers, BytePS's way of summing gradients (Jiang et al., "A Unified
 * Architecture for Accelerating Distributed DNN Training in Heterogeneous GPU/CPU Clusters",
 * OSDI 2020; bytedance/byteps): every allreduce call (every partition of a schedule) goes to one
 * of N servers, chosen round-robin; each worker pushes its n bytes to that server, which sums
 * them and sends the sum back to each worker (the pull). A server shares rank s's host and NIC
 * (colocated, BytePS's default: that rank's own push and pull stay in memory) or has a host of
 * its own (Cluster.ps_own_hosts). With r = the workers whose pushes cross the network (p - 1
 * colocated, p otherwise), the r pushes share the server's NIC into it and the r pulls its NIC
 * out of it: 2 (a + r n b) on a star (coll.h; tests/test_coll_ps.c checks the messages' time
 * against it).
 *
 * At the transfer level the messages carry no data: the server sums the workers' buffers once,
 * in rank order, when every push has arrived (every rank has entered the call by then), before it
 * sends the pulls, so each rank returns with the sum. A colocated server is played by the rank
 * on its host inside its own call; a server on a host of its own is a short-lived actor on that
 * host, started by the first rank to enter the call. Calls on one communicator follow each
 * other on every rank, so the mailbox of each (server, rank) pair delivers them in order. */
#include "coll_impl.h"
#include "xalloc.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <simgrid/actor.h>
#include <simgrid/barrier.h>
#include <simgrid/comm.h>
#include <simgrid/engine.h>
#include <simgrid/host.h>
#include <simgrid/mailbox.h>

int coll_ps_init(Comm *c, const Cluster *cl)
{
    c->ps_servers = cl->ps_servers > 0 ? cl->ps_servers : 1;
    c->ps_own = cl->ps_own_hosts;
    c->ps_remote = c->ps_own ? c->P : c->P - 1;
    c->ps_calls = bw_xcalloc((size_t)c->P, sizeof *c->ps_calls, "coll_ps.c: c->ps_calls");
    c->ps_mb = bw_xcalloc((size_t)c->ps_servers * (size_t)c->P * 2, sizeof *c->ps_mb,
                          "coll_ps.c: c->ps_mb");
    return c->ps_calls && c->ps_mb && coll_ps_net_init(c, cl);
}

void coll_ps_free(Comm *c)
{
    free(c->ps_calls);
    free(c->ps_mb);
    free(c->ps_host);
    free(c->ps_scratch);
}

int coll_ps_servers(const Comm *c)
{
    return c->ps_servers; /* 0 but on a servers algorithm's communicator (coll_ps_init) */
}

double coll_ps_bytes(const Comm *c, int rank, int server, double n)
{
    if (c->P <= 1) return 0.0;
    if (!c->ps_own && rank == c->ps_host[server])
        return (double)(c->P - 1) * n; /* its pulls; its push stays */
    return n;
}

/* One call as its server sees it. */
typedef struct {
    Comm *c;
    int server, self; /* self: the rank on the server's host (colocated), or -1 */
    size_t n;         /* elements */
    Dtype dt;
    int mean, data;
} PsCall;

/* The server's part of a call: every remote push in, the sum (with data), every pull out. */
static void ps_serve(const PsCall *k)
{
    Comm *c = k->c;
    const int P = c->P;
    const size_t bytes = k->n * dt_size(k->dt);
    sg_comm_t *comms = bw_xrealloc_n(NULL, (size_t)P, sizeof *comms, "a parameter server");
    void **got = bw_xrealloc_n(NULL, (size_t)P, sizeof *got, "a parameter server");
    size_t m = 0;
    const double t0 = c->wire ? simgrid_get_clock() : 0;
    for (int w = 0; w < P; w++)
        if (w != k->self)
            comms[m++] = sg_mailbox_get_async(coll_ps_mbox(c, k->server, w, 0), &got[w]);
    sg_comm_wait_all(comms, m);
    const double t1 = c->wire ? simgrid_get_clock() : 0;
    if (k->data) coll_sum_into_all(c, k->n, k->dt, k->mean, 0);
    m = 0;
    for (int w = 0; w < P; w++)
        if (w != k->self)
            comms[m++] = sg_mailbox_put_async(coll_ps_mbox(c, k->server, w, 1), c, (long)bytes);
    sg_comm_wait_all(comms, m);
    /* the links' books (coll_comm_set_wire): a colocated server's pushes in and pulls out */
    for (int w = 0; c->wire && k->self >= 0 && w < P; w++)
        if (w != k->self) {
            c->wire(c->wire_arg, w, k->self, (double)bytes, t0, t1);
            c->wire(c->wire_arg, k->self, w, (double)bytes, t1, simgrid_get_clock());
        }
    free(comms);
    free(got);
}

/* A server on a host of its own, for one call: its PsCall is its data, freed here. */
static void ps_server_actor(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    PsCall *k = sg_actor_self_get_data();
    ps_serve(k);
    free(k);
}

static void ps_spawn(const PsCall *proto)
{
    PsCall *k = bw_xmalloc(sizeof *k, "a parameter server");
    *k = *proto;
    char name[32];
    snprintf(name, sizeof name, "ps%d", k->server);
    sg_host_t host = sg_host_by_name(name);
    assert(host && "the platform holds the ps hosts (cluster_write_xml)");
    sg_actor_t a = sg_actor_init(name, host);
    sg_actor_set_data(a, k);
    sg_actor_start(a, ps_server_actor, 0, NULL);
}

void coll_ps_allreduce(Comm *c, int rank, int server, const unsigned char *buf, unsigned char *out,
                       size_t n, Dtype dt, int mean)
{
    assert(c->ops->servers && server >= 0 && server < c->ps_servers);
    const size_t bytes = n * dt_size(dt);
    if (buf) {
        c->bufs[rank] = buf;
        c->outs[rank] = out;
    }
    const PsCall k = {c, server, c->ps_host[server], n, dt, mean, buf != NULL};
    const long call = ++c->ps_calls[rank];
    if (rank == k.self) { /* colocated: this rank is the server */
        ps_serve(&k);
        c->stats[rank].bytes_sent += (double)(c->P - 1) * (double)bytes;
        return;
    }
    if (c->ps_own && call > c->ps_spawned) { /* the first rank in starts the call's server */
        c->ps_spawned = call;
        ps_spawn(&k);
    }
    void *got = NULL;
    sg_comm_t comms[2] = {sg_mailbox_put_async(coll_ps_mbox(c, server, rank, 0), c, (long)bytes),
                          sg_mailbox_get_async(coll_ps_mbox(c, server, rank, 1), &got)};
    sg_comm_wait_all(comms, 2);
    c->stats[rank].bytes_sent += (double)bytes;
}

void coll_cost_ps(Comm *c, int rank, int server, size_t count, size_t elem_bytes)
{
    assert(c->ops->servers && server >= 0 && server < c->ps_servers);
    const double t0 = simgrid_get_clock();
    const Dtype dt = elem_bytes == 2 ? DT_F16 : DT_F32;
    const double bytes = (double)count * (double)dt_size(dt);
    if (c->P > 1 && c->backend == COLL_ANALYTIC) {
        sg_barrier_wait(c->bar);
        c->stats[rank].bytes_sent += coll_ps_bytes(c, rank, server, bytes);
        c->ps_calls[rank]++;
        if (!c->zero_time) sg_actor_sleep_for(coll_allreduce_time_s(c, bytes));
    } else if (c->P > 1) {
        coll_ps_allreduce(c, rank, server, NULL, NULL, count, dt, 0);
    }
    c->stats[rank].payload_bytes += bytes;
    c->stats[rank].time_s += simgrid_get_clock() - t0;
    c->stats[rank].calls++;
}

/* ---- the entry in collectives.def's table ---- */

static int ps_allreduce(Comm *c, int rank, const unsigned char *buf, unsigned char *out, size_t n,
                        Dtype dt, int mean)
{ /* the call's server: the rank's next in the round robin; it sums once, in rank order */
    size_t per;
    long k;
    if (coll_ps_split(c, n, dt_size(dt), &per, &k)) { /* BytePS's partitions (coll_ps_parts.c) */
        coll_ps_allreduce_parts(c, rank, buf, out, n, dt, mean, per, k);
        return buf != NULL;
    }
    coll_ps_allreduce(c, rank, (int)(c->ps_calls[rank] % c->ps_servers), buf, out, n, dt, mean);
    return buf != NULL;
}

static double ps_time_s(const CollShape *s, double n)
{ /* g: the workers whose pushes cross the network */
    return 2.0 * (s->a + s->g * n * s->b);
}

static double ps_bytes(const Comm *c, int rank, double n)
{ /* the call's server: the rank's next in the round robin */
    return coll_ps_bytes(c, rank, (int)(c->ps_calls[rank] % c->ps_servers), n);
}

static double ps_messages(const Cluster *cl)
{ /* a push and a pull of every worker whose server is elsewhere */
    const double P = cl->workers;
    return 2 * (cl->ps_own_hosts ? P : P - 1);
}

static int ps_group(const Cluster *cl)
{
    return cl->workers - !cl->ps_own_hosts;
}

const CollAlgoOps coll_ps_ops = {.allreduce = ps_allreduce,
                                 .time_s = ps_time_s,
                                 .bytes = ps_bytes,
                                 .messages = ps_messages,
                                 .group = ps_group,
                                 .sums = COLL_SUMS_RANK,
                                 .servers = 1};
