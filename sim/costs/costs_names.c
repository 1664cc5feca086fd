/* costs_names.c: the names of a cost profile's operations and networks (costs.h), which the
 * profiles' files (costs_json.c) and the checks (costs.c) both read; a file of their own so that
 * costs.c calls the parser and the parser calls neither back (scripts/callgraph.py: no cycle). */
#include <assert.h>
#include <stdio.h>
#include <string.h>

#include "costs_impl.h"

static const char *const OP_NAMES[COST_OP_COUNT] = {"elementwise", "matmul",    "orthogonalise",
                                                    "topk",        "quantise",  "pack",
                                                    "scatter",     "optimizer", "random"};
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
