/* cl_place.c: where each job's ranks run on the cluster's GPUs. Jobs that name their "hosts"
 * take those first (GPU indices, or host names: gpuK on a generated cluster, the file's names on
 * a platform file); the others follow in the file's order by their placement: packed fills the
 * lowest free GPUs in order (a job's ranks share leaf switches or nodes as much as they can),
 * spread deals its ranks round-robin over the switches (fat-tree leaves, hierarchical nodes),
 * each rank on its switch's lowest free GPU. On a star every GPU has a port of its own, so
 * spread is packed there; a platform file's switches are not known, so it takes packed only.
 * On islands (--topology islands) a job's ranks fill its islands' share in order: rank r on
 * island r / (N / K), the lowest free GPU there, as the job's own view of its islands takes them
 * (sim/driver/islands.c: island k holds ranks k N/K .. (k+1) N/K - 1), so a job's workers must
 * be a multiple of the islands and its "hosts" are not taken.
 * A GPU taken twice, a host not in the cluster or a job that does not fit is a usage error
 * naming the job and the key. */
#include "cl_impl.h"
#include "xalloc.h"

#include <stdlib.h>
#include <string.h>

/* The index of host name h in the cluster, or -1. */
static int host_index(const ClPlan *p, const char *h)
{
    if (p->platform.platform_file) {
        for (int g = 0; g < p->gpus; g++)
            if (strcmp(p->platform.hosts[g], h) == 0) return g;
        return -1;
    }
    long g = strncmp(h, "gpu", 3) == 0 ? strtol(h + 3, NULL, 10) : -1;
    char name[32];
    snprintf(name, sizeof name, "gpu%ld", g);
    return g >= 0 && g < p->gpus && strcmp(name, h) == 0 ? (int)g : -1; /* "gpu-0" is none */
}

/* A job's "hosts" as GPU indices, taken in owner[]. */
static int place_hosts(ClPlan *p, ClJob *job, int *owner, BwError *err)
{
    const ClJobSpec *j = job->spec;
    for (int r = 0; r < j->n_hosts; r++) {
        char *end;
        long g = j->hosts_indices ? strtol(j->hosts[r], &end, 10) : host_index(p, j->hosts[r]);
        if (g < 0 || g >= p->gpus) {
            char range[192];
            if (p->platform.platform_file)
                snprintf(range, sizeof range, "the platform's hosts or the top-level \"hosts\"");
            else
                snprintf(range, sizeof range,
                         "%s0 to %s%d; the top-level \"workers\" sizes the cluster, by default "
                         "the jobs' workers added up",
                         j->hosts_indices ? "" : "gpu", j->hosts_indices ? "" : "gpu", p->gpus - 1);
            return bw_fail(err, BW_EUSAGE,
                           "%s: job \"%s\": key \"hosts\": %s is not a GPU of the cluster of %d "
                           "(%s)",
                           p->spec->path, j->name, j->hosts[r], p->gpus, range);
        }
        if (owner[g] == job - p->jobs)
            return bw_fail(err, BW_EUSAGE, "%s: job \"%s\": key \"hosts\": %s is listed twice",
                           p->spec->path, j->name, j->hosts[r]);
        if (owner[g] >= 0)
            return bw_fail(err, BW_EUSAGE,
                           "%s: job \"%s\": key \"hosts\": GPU %s is job \"%s\"'s too; two "
                           "jobs on one GPU",
                           p->spec->path, j->name, j->hosts[r], p->jobs[owner[g]].spec->name);
        owner[g] = (int)(job - p->jobs);
        job->gpus[r] = (int)g;
    }
    return BW_OK;
}

/* The lowest free GPU of switch k, or -1. */
static int free_in_group(const ClPlan *p, const int *owner, int k)
{
    for (int g = k * p->group_size; g < (k + 1) * p->group_size && g < p->gpus; g++)
        if (owner[g] < 0) return g;
    return -1;
}

/* On islands: rank r on island r / (N / K), its lowest free GPU; a usage error when one is full. */
static int place_islands(ClPlan *p, ClJob *job, int *owner, BwError *err)
{
    const int K = p->platform.islands, per = job->N / K;
    for (int r = 0; r < job->N; r++) {
        const int g = free_in_group(p, owner, r / per);
        if (g < 0)
            return bw_fail(err, BW_EUSAGE,
                           "%s: job \"%s\": key \"workers\": %d GPUs on each of the %d islands, "
                           "but island %d has no free GPU left",
                           p->spec->path, job->spec->name, per, K, r / per);
        owner[g] = (int)(job - p->jobs);
        job->gpus[r] = g;
    }
    return BW_OK;
}

/* packed or spread: job's ranks on free GPUs (the caller checked that enough are free). */
static void place_auto(ClPlan *p, ClJob *job, int *owner)
{
    const char *how = job->spec->placement[0] ? job->spec->placement : p->spec->placement;
    const int spread = strcmp(how, "spread") == 0 && p->group_size > 1;
    for (int r = 0, k = 0, g = 0; r < job->N; r++) {
        if (spread) {
            int got = -1;
            for (int tried = 0; got < 0 && tried < p->groups; tried++, k = (k + 1) % p->groups)
                got = free_in_group(p, owner, k);
            g = got;
        } else {
            while (owner[g] >= 0) g++;
        }
        owner[g] = (int)(job - p->jobs);
        job->gpus[r] = g;
    }
}

/* The switches a spread placement deals over. */
static void groups(ClPlan *p)
{
    const Cluster *c = &p->platform;
    p->group_size = c->platform_file                   ? 1
                    : c->topology == TOPO_FAT_TREE     ? c->leaf_size
                    : c->topology == TOPO_HIERARCHICAL ? c->gpus_per_node
                    : c->topology == TOPO_ISLANDS      ? cluster_island_size(c)
                                                       : 1;
    p->groups = (p->gpus + p->group_size - 1) / p->group_size;
}

int cl_in_rank_order(const ClPlan *p, const ClJob *job)
{
    if (p->platform.topology == TOPO_ISLANDS || p->group_size <= 1) return 1;
    const int size = p->group_size;
    char *seen = bw_xcalloc((size_t)p->groups, 1, "cl_place.c: seen");
    int ok = 1;
    for (int r = 0; r < job->N && ok; r++) { /* a switch a block of size ranks, in order */
        const int k = job->gpus[r] / size;
        if (r % size == 0)
            ok = !seen[k], seen[k] = 1;
        else
            ok = k == job->gpus[r - 1] / size;
    }
    free(seen);
    return ok;
}

int cl_place(ClPlan *p, BwError *err)
{
    groups(p);
    int *owner = bw_xmalloc(sizeof *owner * (size_t)p->gpus, "cl_place.c: owner"), rc = BW_OK,
        free_gpus = p->gpus;
    for (int g = 0; g < p->gpus; g++) owner[g] = -1;
    for (int j = 0; j < p->n_jobs && !rc; j++) {
        ClJob *job = &p->jobs[j];
        job->gpus = bw_xcalloc((size_t)job->N, sizeof *job->gpus, "cl_place.c: job->gpus");
        if (p->platform.platform_file &&
            strcmp(job->spec->placement[0] ? job->spec->placement : p->spec->placement, "spread") ==
                0 &&
            !job->spec->n_hosts)
            rc = job->spec->placement[0] /* the job's own key, or the top level's */
                     ? bw_fail(err, BW_EUSAGE,
                               "%s: job \"%s\": key \"placement\": spread needs a generated "
                               "fat-tree or hierarchical cluster (a platform file's switches are "
                               "not known); use packed or hosts",
                               p->spec->path, job->spec->name)
                     : bw_fail(err, BW_EUSAGE,
                               "%s: key \"placement\": spread needs a generated fat-tree or "
                               "hierarchical cluster (a platform file's switches are not "
                               "known); use packed, or give the jobs hosts",
                               p->spec->path);
        else if (p->platform.topology == TOPO_ISLANDS && job->spec->n_hosts)
            rc = bw_fail(err, BW_EUSAGE,
                         "%s: job \"%s\": key \"hosts\": not on --topology islands (a job's "
                         "ranks fill its islands in order)",
                         p->spec->path, job->spec->name);
        else if (p->platform.topology == TOPO_ISLANDS && job->N % p->platform.islands)
            rc = bw_fail(err, BW_EUSAGE,
                         "%s: job \"%s\": key \"workers\": %d GPUs do not make %d equal islands",
                         p->spec->path, job->spec->name, job->N, p->platform.islands);
        else if (job->spec->n_hosts)
            rc = place_hosts(p, job, owner, err);
    }
    for (int j = 0; j < p->n_jobs; j++) free_gpus -= p->jobs[j].spec->n_hosts;
    for (int j = 0; j < p->n_jobs && !rc; j++) {
        ClJob *job = &p->jobs[j];
        if (job->spec->n_hosts) continue;
        if (job->N > free_gpus)
            rc = bw_fail(err, BW_EUSAGE,
                         "%s: job \"%s\": key \"%s\": %d GPUs, but %d of the cluster's %d "
                         "are free (the top-level \"workers\" sizes the cluster)",
                         p->spec->path, job->spec->name,
                         job->N > job->P ? "price_workers" : "workers", job->N, free_gpus, p->gpus);
        else if (p->platform.topology == TOPO_ISLANDS)
            rc = place_islands(p, job, owner, err);
        else
            place_auto(p, job, owner);
        free_gpus -= job->N;
    }
    free(owner);
    return rc;
}
