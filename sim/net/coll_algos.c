/* coll_algos.c: the table of allreduce algorithms, one entry per line of collectives.def (each
 * algorithm's CollAlgoOps in its own file, coll_FILE.c), and what the layers above ask of it
 * (coll.h). Nothing outside this table and the algorithms' files names an algorithm. */
#include "coll_impl.h"

#include <stdio.h>
#include <string.h>

#define COLL_ALGO(ID, file, name) extern const CollAlgoOps coll_##file##_ops;
#include "collectives.def"
#undef COLL_ALGO

static const struct {
    const char *name;
    const CollAlgoOps *ops;
} ALGOS[COLL_N_ALGOS] = {
#define COLL_ALGO(ID, file, name) {name, &coll_##file##_ops},
#include "collectives.def"
#undef COLL_ALGO
};

int coll_algo_parse(const char *name)
{
    for (int i = 0; i < COLL_N_ALGOS; i++)
        if (strcmp(name, ALGOS[i].name) == 0) return i;
    return -1;
}

const char *coll_algo_name(CollAlgo a)
{
    return ALGOS[a].name;
}

const CollAlgoOps *coll_algo_ops(CollAlgo a)
{
    return ALGOS[a].ops;
}

int coll_algo_servers(CollAlgo a)
{
    return ALGOS[a].ops->servers;
}

int coll_algo_per_node(CollAlgo a)
{
    return ALGOS[a].ops->per_node;
}

int coll_algo_sums_once(CollAlgo a)
{
    return ALGOS[a].ops->sums != COLL_SUMS_ARRIVING;
}

int coll_algo_group(CollAlgo a, const Cluster *c)
{
    const CollAlgoOps *o = ALGOS[a].ops;
    return o->group ? o->group(c) : c->gpus_per_node;
}

double coll_algo_messages(CollAlgo a, const Cluster *c)
{
    return ALGOS[a].ops->messages(c);
}

void coll_algo_sum_order(CollAlgo a, CollBackend backend, int gpus_per_node, char *buf, size_t n)
{
    const CollAlgoOps *o = ALGOS[a].ops;
    if (backend == COLL_ANALYTIC || o->sums == COLL_SUMS_RANK)
        snprintf(buf, n, "rank"); /* the analytic backend and a server sum in rank order */
    else if (o->per_node)
        snprintf(buf, n, "%s/%d", ALGOS[a].name, gpus_per_node);
    else
        snprintf(buf, n, "%s", ALGOS[a].name);
}
