/* costs_names.c: the names of a cost profile's operations and networks and the text of NCCL's
 * socket counts (costs.h), which the profiles' files (costs_json.c) and the checks (costs.c) both
 * read; a file of their own so that costs.c calls the parser and the parser calls neither back
 * (scripts/callgraph.py: no cycle). */
#include <assert.h>
#include <stdio.h>
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "costs_impl.h"

static const char *const OP_NAMES[COST_OP_COUNT] = {
    "elementwise", "matmul",    "orthogonalise", "topk",   "quantise", "pack",
    "scatter",     "optimizer", "random",        "blockq", "qr"};
static const char *const NET_NAMES[COST_NET_COUNT] = {"tcp", "rdma", "nvlink"};
const char *costs_op_name(CostOp op)
{
    assert(op >= 0 && op < COST_OP_COUNT);
    return OP_NAMES[op];
}

int costs_op_parse(const char *name)
{
    for (int i = 0; i < COST_OP_COUNT; i++)
        if (strcmp(name, OP_NAMES[i]) == 0) return i;
    return -1;
}

void costs_op_names(char *buf, size_t size)
{
    buf[0] = '\0';
    for (int i = 0; i < COST_OP_COUNT; i++) {
        size_t n = strlen(buf);
        snprintf(buf + n, size - n, "%s%s", i ? ", " : "", OP_NAMES[i]);
    }
}

const char *costs_net_name(CostNet n)
{
    assert(n >= 0 && n < COST_NET_COUNT);
    return NET_NAMES[n];
}

int costs_net_parse(const char *name)
{
    for (int i = 0; i < COST_NET_COUNT; i++)
        if (strcmp(name, NET_NAMES[i]) == 0) return i;
    return -1;
}

const char *costs_sockets_parse(const char *text, int *threads, int *socks)
{
    static const char why[] = "expected THREADSxSOCKETS, NCCL_SOCKET_NTHREADS x "
                              "NCCL_NSOCKS_PERTHREAD, e.g. 2x8: threads 1 to 16 and their "
                              "product with the sockets at most 64 (NCCL's MAX_THREADS and "
                              "MAX_SOCKETS, src/transport/net_socket.cc)";
    char *end;
    errno = 0;
    long t = strtol(text, &end, 10), s = 0;
    int ok = end != text && (*end == 'x' || *end == 'X') && isdigit((unsigned char)*text);
    if (ok) {
        const char *rest = end + 1;
        s = strtol(rest, &end, 10);
        ok = end != rest && !*end && isdigit((unsigned char)*rest) && errno == 0;
    }
    if (!ok || t < 1 || t > COSTS_MAX_SOCKET_THREADS || s < 1 || t * s > COSTS_MAX_SOCKETS)
        return why;
    *threads = (int)t;
    *socks = (int)s;
    return NULL;
}
