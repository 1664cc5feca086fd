/* costs.c: cost profiles (costs.h): the built-ins and loading a file, the checks a run makes
 * against its compressor and network, and the price of one stage of an operation. The built-ins
 * are the JSON files of sim/costs/profiles/, embedded at build time (sim/workload/
 * embed_profiles.cmake writes cost_profiles.h in the build folder); `ideal` is no file but the
 * roofline itself. */
#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cluster.h"
#include "xalloc.h"
#include "costs_impl.h"
#include "infile.h"
#include "cost_profiles.h" /* generated: cost_profiles[], cost_profile_names[] */

#define N_BUILTINS ((int)(sizeof cost_profiles / sizeof *cost_profiles))

static const char *const PRECISIONS[3] = {"fp32", "tf32", "bf16"};

static const CostProfile IDEAL = {
    .name = "ideal",
    .spec = "ideal",
    .source = "the roofline: each operation at the GPU's sustained flop rate or memory bandwidth, "
              "whichever is slower; no fixed costs; collectives at the links' full rate",
    .implementation = "none: the hardware's own limits",
    .ideal = 1,
};

const CostProfile *costs_ideal(void)
{
    return &IDEAL;
}

const char *const *costs_builtin_names(void)
{
    return cost_profile_names;
}

int costs_builtin_text(const char *name, const char **text, size_t *len)
{
    for (int i = 0; i < N_BUILTINS; i++)
        if (strcmp(cost_profiles[i].name, name) == 0) {
            *text = (const char *)cost_profiles[i].json;
            *len = cost_profiles[i].len;
            return 1;
        }
    return 0;
}

/* ---- loading ---- */

static int ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), m = strlen(tail);
    return n >= m && strcmp(s + n - m, tail) == 0;
}

static void list_names(char *buf, size_t size)
{
    snprintf(buf, size, "ideal, %s", COSTS_DEFAULT);
    for (int i = 0; i < N_BUILTINS; i++) {
        size_t n = strlen(buf);
        snprintf(buf + n, size - n, ", %s", cost_profiles[i].name);
    }
}

/* A built-in by name into a new profile. */
static int load_builtin(const char *name, const char *flag, CostProfile **out, BwError *err)
{
    for (int i = 0; i < N_BUILTINS; i++)
        if (strcmp(cost_profiles[i].name, name) == 0) {
            int rc = costs_parse(NULL, (const char *)cost_profiles[i].json, cost_profiles[i].len,
                                 flag, name, out, err);
            if (rc == BW_OK)
                costs_validation_text(name, (*out)->validation, sizeof(*out)->validation);
            return rc;
        }
    char names[512];
    list_names(names, sizeof names);
    return bw_fail(err, BW_EUSAGE,
                   "%s %s: unknown cost profile (the built-ins: %s; or a FILE.json)", flag, name,
                   names);
}

/* `pytorch` is pytorch-<gpu>, lower case; ideal when the GPU is given by its rate. */
static int load_default(const char *flag, const char *gpu, CostProfile **out, BwError *err)
{
    if (!gpu) {
        CostProfile *p = bw_xmalloc(sizeof *p, "costs.c: p");
        if (!p) return bw_fail(err, BW_ERUNTIME, "out of memory");
        *p = IDEAL;
        snprintf(p->source, sizeof p->source,
                 "%s: the GPU is given by its rate (--gpu-flops), for which no implementation "
                 "was measured, so the roofline",
                 COSTS_DEFAULT);
        *out = p;
        return BW_OK;
    }
    char name[64];
    snprintf(name, sizeof name, "%s-%s", COSTS_DEFAULT, gpu);
    for (char *c = name; *c; c++) *c = (char)tolower((unsigned char)*c);
    return load_builtin(name, flag, out, err);
}

int costs_load(const char *spec, const char *flag, const char *gpu, CostProfile **out, BwError *err)
{
    assert(spec && flag && out);
    *out = NULL;
    int rc;
    if (strcmp(spec, "ideal") == 0) {
        CostProfile *p = bw_xmalloc(sizeof *p, "costs.c: p");
        if (!p) return bw_fail(err, BW_ERUNTIME, "out of memory");
        *p = IDEAL;
        *out = p;
        return BW_OK;
    }
    if (strcmp(spec, COSTS_DEFAULT) == 0)
        rc = load_default(flag, gpu, out, err);
    else if (strchr(spec, '/') || ends_with(spec, ".json"))
        rc = (rc = infile_check(flag, spec, err))
                 ? rc
                 : costs_parse(spec, NULL, 0, flag, spec, out, err);
    else
        rc = load_builtin(spec, flag, out, err);
    if (rc != BW_OK) return rc;
    CostProfile *p = *out;
    snprintf(p->spec, sizeof p->spec, "%s", spec);
    /* a GPU given by its rate (gpu NULL, --gpu-flops) takes any profile: its compute at that
     * rate, the rest (calls, cycle, link shares, the optimiser's and compressors' rates) as the
     * profile measured it on its own GPU; the CLI notes it (issue 47) */
    if (!p->ideal && gpu && strcasecmp(gpu, p->gpu) != 0) {
        rc = bw_fail(err, BW_EUSAGE,
                     "%s %s: the profile describes %s on a %s, but the cluster's GPU is %s: add "
                     "--gpu %s, or choose a profile of the cluster's GPU (bellows costs)",
                     flag, spec, p->implementation, p->gpu, gpu, p->gpu);
        costs_free(p);
        *out = NULL;
    }
    return rc;
}

void costs_free(CostProfile *p)
{
    free(p);
}

/* ---- pricing ---- */

int costs_check(const CostProfile *p, unsigned ops_mask, CostNet net, const char *who,
                const char *flag, BwError *err)
{
    if (p->ideal) return BW_OK;
    for (int op = 0; op < COST_OP_COUNT; op++)
        if ((ops_mask & COST_OP_BIT(op)) && !p->ops[op].present)
            return bw_fail(err, BW_EUSAGE,
                           "%s %s: no operation \"%s\" in the profile, which %s needs (add it to "
                           "\"ops\"; sim/costs/README.md)",
                           flag, p->spec, costs_op_name((CostOp)op), who);
    if (!p->net[net].present)
        return bw_fail(err, BW_EUSAGE,
                       "%s %s: the profile gives no link share for --transport %s (it has no "
                       "\"networks\": \"%s\")",
                       flag, p->spec, costs_net_name(net), costs_net_name(net));
    return BW_OK;
}

/* One link share of p at a link of link_Bps: what it leaves must be a bandwidth bellows
 * simulates, as --bandwidth must be. */
static int check_share(const CostProfile *p, CostNet net, int allgather, const char *link,
                       double link_Bps, const char *flag, BwError *err)
{
    const double share = costs_link_share(p, net, allgather, link_Bps), x = share * link_Bps;
    if (x >= CLUSTER_MIN_RATE && x <= CLUSTER_MAX_BANDWIDTH_BPS) return BW_OK;
    return bw_fail(err, BW_EUSAGE,
                   "%s %s: networks.%s.%s: a share of %g of a %s of %g bytes/s leaves %g "
                   "bytes/s; expected a link of %g to %g bytes/s (what bellows simulates)",
                   flag, p->spec, costs_net_name(net), allgather ? "allgather" : "allreduce", share,
                   link, link_Bps, x, CLUSTER_MIN_RATE, CLUSTER_MAX_BANDWIDTH_BPS);
}

int costs_check_links(const CostProfile *p, CostNet net, double bandwidth_Bps, double intra_Bps,
                      const char *flag, BwError *err)
{
    if (p->ideal || !p->net[net].present) return BW_OK;
    const CostNet intra = p->net[COST_NET_NVLINK].present ? COST_NET_NVLINK : net;
    int rc = BW_OK;
    for (int ag = 0; rc == BW_OK && ag < 2; ag++)
        rc = check_share(p, net, ag, "NIC", bandwidth_Bps, flag, err);
    for (int ag = 0; rc == BW_OK && intra_Bps > 0 && ag < 2; ag++)
        rc = check_share(p, intra, ag, "intra-node link", intra_Bps, flag, err);
    return rc;
}

/* The rate at size: log-log interpolation between the points, constant beyond them. The logs
 * are taken of each number alone (a ratio of two sizes or rates a profile may give, 1e300 over
 * 1e-305, overflows), the fraction is kept in [0, 1], and equal rates or an exact point give
 * that rate itself: the result is always between the two rates, never NaN. */
static double rate_at(const CostOpRate *r, double size)
{
    const CostPoint *pt = r->points;
    if (r->n_points == 1 || size <= pt[0].size) return pt[0].rate;
    if (size >= pt[r->n_points - 1].size) return pt[r->n_points - 1].rate;
    int i = 1;
    while (pt[i].size < size) i++;
    const CostPoint *a = &pt[i - 1], *b = &pt[i];
    if (size == b->size || a->rate == b->rate) return b->rate;
    const double ls = log(size), la = log(a->size), lb = log(b->size);
    if (!(lb > la)) return b->rate; /* two sizes a rounding apart */
    double f = (ls - la) / (lb - la);
    f = f < 0 ? 0 : f > 1 ? 1 : f;
    const double lr = log(a->rate) + f * (log(b->rate) - log(a->rate));
    const double lo = fmin(a->rate, b->rate), hi = fmax(a->rate, b->rate), x = exp(lr);
    return x < lo ? lo : x > hi ? hi : x;
}

double costs_op_seconds(const CostProfile *p, CostOp op, double size)
{
    assert(!p->ideal && op >= 0 && op < COST_OP_COUNT && p->ops[op].present);
    const CostOpRate *r = &p->ops[op];
    double t = r->kernels * p->kernel_s;
    if (size > 0) t += size / rate_at(r, size);
    return t;
}

double costs_share(const CostProfile *p, CostNet net, int allgather)
{
    if (p->ideal) return 1.0;
    assert(p->net[net].present);
    return allgather ? p->net[net].allgather : p->net[net].allreduce;
}

double costs_link_share(const CostProfile *p, CostNet net, int allgather, double link_Bps)
{
    const double share = costs_share(p, net, allgather);
    return p->ideal ? share : costs_capped_share(share, p->net[net].cap_Bps, link_Bps);
}

double costs_capped_share(double share, double cap_Bps, double link_Bps)
{
    if (!(cap_Bps > 0) || !(link_Bps > 0)) return share;
    const double capped = cap_Bps / link_Bps;
    return capped < share ? capped : share;
}

int costs_set_sockets(CostProfile *p, CostNet net, int threads, int socks)
{
    CostNetShare *s = &p->net[net];
    if (p->ideal || !s->present || s->busbw || !(s->socket_cap_Bps > 0)) return 0;
    s->threads = threads;
    s->socks = socks;
    s->cap_Bps = s->socket_cap_Bps * threads * socks;
    return 1;
}

double costs_efficiency(const CostProfile *p, const char *precision)
{
    if (p->ideal) return 0;
    for (int i = 0; i < 3; i++)
        if (strcmp(precision, PRECISIONS[i]) == 0) return p->efficiency[i];
    return 0;
}

double costs_workload_efficiency(const CostProfile *p, const char *precision, const char *workload)
{
    if (p->ideal) return 0;
    for (int w = 0; workload && w < p->n_workload_eff; w++)
        for (int i = 0; i < 3; i++)
            if (strcmp(workload, p->workload_eff[w].workload) == 0 &&
                strcmp(precision, PRECISIONS[i]) == 0 && p->workload_eff[w].efficiency[i] > 0)
                return p->workload_eff[w].efficiency[i];
    return costs_efficiency(p, precision);
}

double costs_partition_s(const CostProfile *p, const char *spec)
{
    if (!p || p->ideal || !spec) return 0;
    const size_t n = strcspn(spec, ":");
    for (int i = 0; i < p->n_sched_cost; i++)
        if (strlen(p->sched_cost[i].schedule) == n &&
            strncmp(spec, p->sched_cost[i].schedule, n) == 0)
            return p->sched_cost[i].partition_s;
    return 0;
}

const CostHook *costs_hook(const CostProfile *p, const char *spec)
{
    if (!p || p->ideal || !spec) return NULL;
    const size_t n = strcspn(spec, ":");
    for (int i = 0; i < p->n_hooks; i++)
        if (strlen(p->hooks[i].compressor) == n && strncmp(spec, p->hooks[i].compressor, n) == 0)
            return &p->hooks[i];
    return NULL;
}

/* ---- the listing ---- */

/* " tcp (allreduce 0.95, allgather 0.95 of the link, at most 7.5 Gbit/s)" */
static void print_shares(FILE *out, int n, const CostNetShare *s)
{
    fprintf(out, " %s (allreduce %.2f, allgather %.2f of the link", costs_net_name((CostNet)n),
            s->allreduce, s->allgather);
    if (s->cap_Bps > 0 && s->threads * s->socks > 1)
        fprintf(out, ", at most %.3g Gbit/s: %dx%d sockets at %.3g each", s->cap_Bps * 8 / 1e9,
                s->threads, s->socks, s->socket_cap_Bps * 8 / 1e9);
    else if (s->cap_Bps > 0)
        fprintf(out, ", at most %.3g Gbit/s", s->cap_Bps * 8 / 1e9);
    fprintf(out, ")");
}

void costs_print_hooks(FILE *out, const CostProfile *p)
{
    for (int i = 0; i < p->n_hooks; i++) {
        const CostHook *h = &p->hooks[i];
        fprintf(out, "  hook       %s as %s runs it:%s%s", h->compressor, p->hook_framework,
                h->synchronizes ? " waits for its bucket's collectives (no overlap)" : "",
                h->orthogonalises_query ? "; orthogonalises Q and P" : "");
        if (h->qr_above_rank) fprintf(out, "; by QR above rank %d", h->qr_above_rank);
        fputc('\n', out);
    }
}

static void print_profile(FILE *out, const CostProfile *p)
{
    fprintf(out, "\n%-14s %s: %s\n", p->name, p->gpu, p->implementation);
    if (p->device[0])
        fprintf(out, "  measured   on %s (%s), %s\n", p->device, p->versions, p->date);
    char none[32] = "";
    for (int i = 0; i < 3; i++)
        if (p->efficiency[i] > 0)
            fprintf(out, "  compute    %.3g of the %s peak\n", p->efficiency[i], PRECISIONS[i]);
        else
            snprintf(none + strlen(none), sizeof none - strlen(none), "%s%s", *none ? ", " : "",
                     PRECISIONS[i]);
    for (int w = 0; w < p->n_workload_eff; w++)
        for (int i = 0; i < 3; i++)
            if (p->workload_eff[w].efficiency[i] > 0)
                fprintf(out, "  compute    %.3g of the %s peak for %s (in its direct flops)\n",
                        p->workload_eff[w].efficiency[i], PRECISIONS[i],
                        p->workload_eff[w].workload);
    if (*none) /* what a run at those precisions assumes (cluster_apply_costs) */
        fprintf(out, "  compute    none for %s: runs assume 0.5 of the peak, not calibrated\n",
                none);
    fprintf(out, "  fixed      %.3g us a tensor, %.3g us a kernel, %.3g us a collective call\n",
            1e6 * p->tensor_s, 1e6 * p->kernel_s, 1e6 * p->collective_s);
    if (p->cycle_s > 0)
        fprintf(out, "  cycle      collectives start on a thread that wakes every %.3g ms\n",
                1e3 * p->cycle_s);
    if (p->interference > 1)
        fprintf(out, "  overlap    compute beside a collective %.3gx as long\n", p->interference);
    for (int i = 0; i < p->n_sched_cost; i++)
        fprintf(out, "  schedule   %s: %.3g us a partition\n", p->sched_cost[i].schedule,
                1e6 * p->sched_cost[i].partition_s);
    fprintf(out, "  ops       ");
    for (int op = 0; op < COST_OP_COUNT; op++)
        if (p->ops[op].present) fprintf(out, " %s", costs_op_name((CostOp)op));
    fprintf(out, "\n  networks  ");
    for (int n = 0; n < COST_NET_COUNT; n++)
        if (p->net[n].present && p->net[n].busbw)
            fprintf(out, " %s (nccl-tests' busbw at %d and %d GPU counts per NIC, on %.4g Gbps)",
                    costs_net_name((CostNet)n), p->net[n].n_tables[0], p->net[n].n_tables[1],
                    p->net[n].link_Bps * 8 / 1e9);
        else if (p->net[n].present)
            print_shares(out, n, &p->net[n]);
    fprintf(out, "\n  allgathers %s the backward\n", p->allgather_overlaps ? "overlap" : "follow");
    costs_print_hooks(out, p);
    if (p->horovod.present)
        fprintf(
            out,
            "  horovod    %s: a cycle of %g ms, tensors fused up to %g MiB, response cache %s\n",
            p->horovod.version, 1e3 * p->horovod.cycle_s, p->horovod.fusion_bytes / 1048576.0,
            p->horovod.response_cache ? "on" : "off");
    fprintf(out, "  source     %s\n", p->source);
}

void costs_print_list(FILE *out)
{
    fprintf(out,
            "cost profiles (--costs NAME|FILE.json): what an implementation pays on a GPU beside "
            "the\nroofline: fixed costs per tensor, kernel and collective call, the rate of each "
            "operation the\ncompressors use, the share of a link its collectives reach (per "
            "--transport), whether\nallgathers overlap the backward, and the compute's "
            "efficiency. Default: %s, the PyTorch\nprofile of the cluster's GPU. Format: "
            "sim/costs/README.md.\n",
            COSTS_DEFAULT);
    fprintf(out, "\n%-14s %s\n  source     %s\n", IDEAL.name, IDEAL.implementation, IDEAL.source);
    for (int i = 0; i < N_BUILTINS; i++) {
        CostProfile *p = NULL;
        BwError err;
        int rc = costs_parse(NULL, (const char *)cost_profiles[i].json, cost_profiles[i].len,
                             "costs", cost_profiles[i].name, &p, &err);
        assert(rc == BW_OK && "a built-in cost profile does not parse"); /* tested */
        (void)rc;
        if (p) print_profile(out, p);
        costs_free(p);
    }
}
