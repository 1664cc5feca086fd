/* costs_json.c: the cost-profile parser (the format is in sim/costs/README.md). Every field is
 * checked as it is read; an error is a usage error naming the flag, the file (or built-in) and
 * the field with what it must be. Keys a profile does not know are refused inside "fixed",
 * "ops", "networks" and an operation (a misspelt constant would silently fall back), and ignored
 * elsewhere, so a file can carry notes and the source of each constant ("source" keys). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cluster.h"
#include "xalloc.h"
#include "costs_impl.h"
#include "jsonfield.h"

/* clang refuses a floating comparison here (C11 6.6: not an integer constant expression; the
 * fuzzers build this file with clang); gcc, which builds bellows, checks it */
#if !defined(__clang__)
_Static_assert(COSTS_MAX_WORKLOAD_EFFICIENCY == CLUSTER_MAX_PROFILE_EFFICIENCY,
               "a workload's efficiency: the same bound in the profile and the cluster");
#endif

typedef struct {
    JsonAt loc; /* "FLAG LABEL: " then the path to the field */
} Ctx;

/* A finite number > 0 and at most max (every constant of a profile is one). */
static int get_num(const Ctx *c, const json_t *o, const char *key, double max, double *out)
{
    json_t *v = json_object_get(o, key);
    double x = json_is_number(v) ? json_number_value(v) : NAN;
    if (!isfinite(x) || !(x > 0) || x > max)
        return json_at_fail(&c->loc, "\"%s\" must be a number > 0 and at most %g", key, max);
    *out = x;
    return BW_OK;
}

/* Refuses a key of o that is neither in known[] nor "source" or "software" (the software
 * generation a constant was measured under: `bellows costs NAME` prints both). */
static int only_keys(const Ctx *c, const json_t *o, const char *const *known, const char *what)
{
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)o, key, v)
    {
        (void)v;
        int ok = strcmp(key, "source") == 0 || strcmp(key, "software") == 0;
        for (int i = 0; !ok && known[i]; i++) ok = strcmp(key, known[i]) == 0;
        if (!ok) return json_at_fail(&c->loc, "%s: unknown key \"%s\"", what, key);
    }
    return BW_OK;
}

/* Appends "ops.topk: " (or any path) to where; returns the length to cut back to. */
static size_t enter(Ctx *c, const char *path)
{
    size_t n = strlen(c->loc.where);
    snprintf(c->loc.where + n, sizeof c->loc.where - n, "%s: ", path);
    return n;
}

/* "rate": [[size, rate], ...], 1 to COSTS_MAX_POINTS pairs of positive numbers, sizes rising;
 * each rate in the range of a GPU's (--gpu-flops), what bellows simulates: a stage at a rate
 * below it would stall SimGrid's solver, and a run of stages too slow for the simulated-time
 * limit is refused when it runs. */
static int parse_rate(const Ctx *c, const json_t *a, CostOpRate *r)
{
    size_t n = json_is_array(a) ? json_array_size(a) : 0;
    const char *must = "\"rate\" must be a list of 1 to 16 [size, units per second] pairs of "
                       "finite positive numbers, sizes rising";
    if (n < 1 || n > COSTS_MAX_POINTS) return json_at_fail(&c->loc, "%s", must);
    for (size_t i = 0; i < n; i++) {
        json_t *p = json_array_get(a, i);
        json_t *s = json_array_get(p, 0), *v = json_array_get(p, 1);
        double size = json_is_number(s) ? json_number_value(s) : NAN;
        double rate = json_is_number(v) ? json_number_value(v) : NAN;
        if (!json_is_array(p) || json_array_size(p) != 2 || !isfinite(size) || !(size > 0) ||
            !isfinite(rate) || !(rate > 0) || (i > 0 && !(size > r->points[i - 1].size)))
            return json_at_fail(&c->loc, "%s (pair %zu)", must, i);
        if (rate < CLUSTER_MIN_FLOPS || rate > CLUSTER_MAX_FLOPS)
            return json_at_fail(&c->loc,
                                "\"rate\" pair %zu: %g units per second; expected %g to %g (what "
                                "bellows simulates)",
                                i, rate, CLUSTER_MIN_FLOPS, CLUSTER_MAX_FLOPS);
        r->points[i] = (CostPoint){size, rate};
    }
    r->n_points = (int)n;
    return BW_OK;
}

static int parse_op(Ctx *c, const json_t *o, CostOpRate *r)
{
    static const char *const known[] = {"kernels", "rate", NULL};
    if (!json_is_object(o))
        return json_at_fail(&c->loc, "must be an object with \"kernels\" and \"rate\"");
    int rc = only_keys(c, o, known, "an operation");
    if (rc == BW_OK) rc = get_num(c, o, "kernels", 1e6, &r->kernels);
    if (rc == BW_OK) rc = parse_rate(c, json_object_get(o, "rate"), r);
    r->present = rc == BW_OK;
    return rc;
}

static int parse_ops(Ctx *c, const json_t *ops, CostProfile *p)
{
    if (!ops) return BW_OK; /* a profile may price no operation (then no compressor needs one) */
    if (!json_is_object(ops))
        return json_at_fail(&c->loc, "\"ops\" must be an object of operations");
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)ops, key, v)
    {
        if (strcmp(key, "source") == 0 || strcmp(key, "software") == 0) continue;
        int op = costs_op_parse(key);
        if (op < 0) {
            char names[160];
            costs_op_names(names, sizeof names);
            return json_at_fail(&c->loc, "\"ops\": unknown operation \"%s\" (the operations: %s)",
                                key, names);
        }
        char path[64];
        snprintf(path, sizeof path, "ops.%s", key);
        size_t back = enter(c, path);
        int rc = parse_op(c, v, &p->ops[op]);
        if (rc != BW_OK) return rc;
        c->loc.where[back] = '\0';
    }
    return BW_OK;
}

/* "sockets": "TxS", NCCL's socket threads x sockets per thread, only beside "cap_gbps" (one
 * stream's rate, which they multiply) and only for tcp, NCCL's socket transport. */
static int parse_sockets(const Ctx *c, const json_t *v, int net, CostNetShare *s)
{
    s->threads = s->socks = 1; /* NCCL's defaults outside AWS and GCP: one stream */
    json_t *k = json_object_get(v, "sockets");
    if (!k) return BW_OK;
    if (net != COST_NET_TCP || !json_object_get(v, "cap_gbps"))
        return json_at_fail(&c->loc, "\"sockets\": NCCL's socket streams multiply one's rate, "
                                     "\"cap_gbps\", of a tcp network; give both, on tcp");
    const char *why = json_is_string(k)
                          ? costs_sockets_parse(json_string_value(k), &s->threads, &s->socks)
                          : "expected a string THREADSxSOCKETS, e.g. \"2x8\"";
    return why ? json_at_fail(&c->loc, "\"sockets\": %s", why) : BW_OK;
}

/* "cap_gbps": optional, Gbit/s in the range of a link bellows simulates; not beside "busbw",
 * whose tables are the rates themselves. */
static int parse_cap(const Ctx *c, const json_t *v, CostNetShare *s)
{
    if (!json_object_get(v, "cap_gbps")) return BW_OK;
    if (s->busbw)
        return json_at_fail(&c->loc, "\"cap_gbps\" with \"busbw\": nccl-tests' tables are the "
                                     "rates already; give one or the other");
    double gbps = 0;
    int rc = get_num(c, v, "cap_gbps", CLUSTER_MAX_BANDWIDTH_BPS * 8 / 1e9, &gbps);
    if (rc == BW_OK && gbps * 1e9 / 8 < CLUSTER_MIN_RATE)
        rc = json_at_fail(&c->loc, "\"cap_gbps\" must be at least %g", CLUSTER_MIN_RATE * 8 / 1e9);
    if (rc == BW_OK) s->socket_cap_Bps = gbps * 1e9 / 8;
    s->cap_Bps = s->socket_cap_Bps * s->threads * s->socks;
    return rc;
}

static int parse_networks(Ctx *c, const json_t *nets, CostProfile *p)
{
    static const char *const known[] = {"allreduce", "allgather", "busbw",
                                        "cap_gbps",  "sockets",   NULL};
    if (!json_is_object(nets) || json_object_size(nets) == 0)
        return json_at_fail(
            &c->loc, "\"networks\" must be an object with at least one of \"tcp\", \"rdma\", "
                     "\"nvlink\"");
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)nets, key, v)
    {
        if (strcmp(key, "source") == 0 || strcmp(key, "software") == 0) continue;
        int n = costs_net_parse(key);
        if (n < 0)
            return json_at_fail(
                &c->loc, "\"networks\": unknown network kind \"%s\" (tcp, rdma or nvlink)", key);
        char path[64];
        snprintf(path, sizeof path, "networks.%s", key);
        size_t back = enter(c, path);
        if (!json_is_object(v))
            return json_at_fail(&c->loc, "must be an object with \"allreduce\", \"allgather\"");
        CostNetShare *s = &p->net[n];
        int rc = only_keys(c, v, known, "a network");
        if (rc == BW_OK && json_object_get(v, "busbw")) /* nccl-tests' tables: costs_busbw.c */
            rc = costs_parse_busbw(&c->loc, v, s);
        if (rc == BW_OK && !s->busbw) rc = get_num(c, v, "allreduce", 1, &s->allreduce);
        if (rc == BW_OK && !s->busbw) rc = get_num(c, v, "allgather", 1, &s->allgather);
        rc = rc == BW_OK ? parse_sockets(c, v, n, s) : rc;
        rc = rc == BW_OK ? parse_cap(c, v, s) : rc;
        if (rc != BW_OK) return rc;
        s->present = 1;
        c->loc.where[back] = '\0';
    }
    return BW_OK;
}

static int parse_fixed(Ctx *c, const json_t *f, CostProfile *p)
{
    static const char *const known[] = {"tensor_s", "kernel_s", "collective_s", "cycle_s", NULL};
    if (!json_is_object(f))
        return json_at_fail(&c->loc, "\"fixed\" must be an object with \"tensor_s\", \"kernel_s\", "
                                     "\"collective_s\"");
    size_t back = enter(c, "fixed");
    int rc = only_keys(c, f, known, "\"fixed\"");
    if (rc == BW_OK) rc = get_num(c, f, "tensor_s", 1, &p->tensor_s);
    if (rc == BW_OK) rc = get_num(c, f, "kernel_s", 1, &p->kernel_s);
    if (rc == BW_OK) rc = get_num(c, f, "collective_s", 1, &p->collective_s);
    if (rc == BW_OK && json_object_get(f, "cycle_s")) rc = get_num(c, f, "cycle_s", 1, &p->cycle_s);
    c->loc.where[back] = '\0';
    return rc;
}

/* The sustained rate an efficiency eff gives the profile's GPU at precision i (fp32, tf32,
 * bf16) must be one bellows simulates, as --gpu-efficiency's must; a precision the GPU lacks has
 * no efficiency. */
static int check_gpu_rate(const Ctx *c, const char *key, int i, double eff, const CostProfile *p)
{
    const GpuProfile *g = cluster_gpu_find(p->gpu);
    const double peak = i == 0 ? g->fp32_flops : i == 1 ? g->tf32_flops : g->bf16_flops;
    if (peak == 0) return json_at_fail(&c->loc, "\"%s\": the %s has no %s rate", key, g->name, key);
    if (eff < CLUSTER_MIN_EFFICIENCY)
        return json_at_fail(&c->loc, "\"%s\": %g; expected a fraction of %g to 1", key, eff,
                            CLUSTER_MIN_EFFICIENCY);
    const double rate = peak * eff;
    if (rate < CLUSTER_MIN_FLOPS || rate > CLUSTER_MAX_FLOPS)
        return json_at_fail(&c->loc,
                            "\"%s\": %g of the %s's %g flop/s is %g flop/s; expected %g to %g "
                            "(what bellows simulates)",
                            key, eff, g->name, peak, rate, CLUSTER_MIN_FLOPS, CLUSTER_MAX_FLOPS);
    return BW_OK;
}

/* {"fp32": x, "tf32": y, "bf16": z}, each optional, in (0, max], into eff[3]. */
static int parse_precisions(Ctx *c, const json_t *e, const char *const *known, double max,
                            double *eff, const CostProfile *p)
{
    int rc = BW_OK;
    for (int i = 0; rc == BW_OK && i < 3; i++)
        if (json_object_get(e, known[i]) && (rc = get_num(c, e, known[i], max, &eff[i])) == BW_OK)
            rc = check_gpu_rate(c, known[i], i, eff[i], p);
    return rc;
}

/* "workloads": {NAME: {"fp32": x, ...}, ...}: each workload's own efficiency, in its direct
 * flops, up to COSTS_MAX_WORKLOAD_EFFICIENCY. */
static int parse_workload_eff(Ctx *c, const json_t *w, CostProfile *p)
{
    static const char *const known[] = {"fp32", "tf32", "bf16", NULL};
    if (!w) return BW_OK;
    if (!json_is_object(w) || json_object_size(w) > COSTS_MAX_WORKLOADS)
        return json_at_fail(&c->loc,
                            "\"workloads\" must be an object of at most %d workloads, "
                            "each {\"fp32\": x, ...}",
                            COSTS_MAX_WORKLOADS);
    const char *name;
    json_t *v;
    int rc = BW_OK;
    json_object_foreach((json_t *)w, name, v)
    {
        if (strcmp(name, "source") == 0 || strcmp(name, "software") == 0) continue;
        size_t back = enter(c, name);
        if (!json_is_object(v) || strlen(name) >= sizeof p->workload_eff[0].workload)
            rc = json_at_fail(&c->loc, "expected {\"fp32\": x, ...} under a workload's name");
        if (rc == BW_OK) rc = only_keys(c, v, known, "a workload's efficiency");
        int k = p->n_workload_eff;
        if (rc == BW_OK) {
            snprintf(p->workload_eff[k].workload, sizeof p->workload_eff[k].workload, "%s", name);
            rc = parse_precisions(c, v, known, COSTS_MAX_WORKLOAD_EFFICIENCY,
                                  p->workload_eff[k].efficiency, p);
            p->n_workload_eff++;
        }
        c->loc.where[back] = '\0';
        if (rc) return rc;
    }
    return rc;
}

/* "efficiency": {"fp32": x, "tf32": y, "bf16": z, "workloads": {...}}, each optional, the
 * precisions in (0, 1]. */
static int parse_efficiency(Ctx *c, const json_t *e, CostProfile *p)
{
    static const char *const known[] = {"fp32", "tf32", "bf16", "workloads", NULL};
    if (!e) return BW_OK;
    if (!json_is_object(e))
        return json_at_fail(&c->loc, "\"efficiency\" must be an object of precisions");
    size_t back = enter(c, "efficiency");
    int rc = only_keys(c, e, known, "\"efficiency\"");
    if (rc == BW_OK) rc = parse_precisions(c, e, known, 1, p->efficiency, p);
    if (rc == BW_OK) {
        size_t in = enter(c, "workloads");
        rc = parse_workload_eff(c, json_object_get(e, "workloads"), p);
        c->loc.where[in] = '\0';
    }
    c->loc.where[back] = '\0';
    return rc;
}

/* "measured": {"device", "versions", "date"}, each optional: where calibrate.py ran. */
static int parse_measured(Ctx *c, const json_t *m, CostProfile *p)
{
    if (!m) return BW_OK;
    if (!json_is_object(m)) return json_at_fail(&c->loc, "\"measured\" must be an object");
    size_t back = enter(c, "measured");
    int rc = json_at_str(&c->loc, m, "device", 0, p->device, sizeof p->device);
    if (rc == BW_OK) rc = json_at_str(&c->loc, m, "versions", 0, p->versions, sizeof p->versions);
    if (rc == BW_OK) rc = json_at_str(&c->loc, m, "date", 0, p->date, sizeof p->date);
    c->loc.where[back] = '\0';
    return rc;
}

static int parse_allgather(Ctx *c, const json_t *a, CostProfile *p)
{
    static const char *const known[] = {"overlaps_backward", NULL};
    json_t *o = json_object_get(a, "overlaps_backward");
    if (!json_is_object(a) || !json_is_boolean(o))
        return json_at_fail(&c->loc,
                            "\"allgather\" must be {\"overlaps_backward\": true or false}");
    int rc = only_keys(c, a, known, "\"allgather\"");
    p->allgather_overlaps = json_is_true(o);
    return rc;
}

/* "interference": {"compute": s}, optional: the compute beside a collective takes s times as
 * long, 1 <= s <= COSTS_MAX_INTERFERENCE. */
static int parse_interference(Ctx *c, const json_t *o, CostProfile *p)
{
    static const char *const known[] = {"compute", NULL};
    p->interference = 1;
    if (!o) return BW_OK;
    if (!json_is_object(o))
        return json_at_fail(&c->loc, "\"interference\" must be {\"compute\": a slowdown}");
    size_t back = enter(c, "interference");
    int rc = only_keys(c, o, known, "\"interference\"");
    if (rc == BW_OK) rc = get_num(c, o, "compute", COSTS_MAX_INTERFERENCE, &p->interference);
    if (rc == BW_OK && p->interference < 1)
        rc = json_at_fail(&c->loc, "\"compute\" must be a slowdown of 1 (none) to %g",
                          COSTS_MAX_INTERFERENCE);
    c->loc.where[back] = '\0';
    return rc;
}

/* "schedules": {NAME: {"partition_s": x}, ...}, optional: at most COSTS_MAX_SCHEDULES, x in
 * (0, 1] seconds. */
static int parse_schedules(Ctx *c, const json_t *o, CostProfile *p)
{
    static const char *const known[] = {"partition_s", NULL};
    if (!o) return BW_OK;
    if (!json_is_object(o) || json_object_size(o) > COSTS_MAX_SCHEDULES + 2)
        return json_at_fail(&c->loc,
                            "\"schedules\" must be an object of at most %d schedules, "
                            "each {\"partition_s\": seconds}",
                            COSTS_MAX_SCHEDULES);
    size_t back = enter(c, "schedules");
    const char *name;
    json_t *v;
    int rc = BW_OK;
    json_object_foreach((json_t *)o, name, v)
    {
        if (strcmp(name, "source") == 0 || strcmp(name, "software") == 0) continue;
        size_t in = enter(c, name);
        const int k = p->n_sched_cost;
        if (k == COSTS_MAX_SCHEDULES || !json_is_object(v) ||
            strlen(name) >= sizeof p->sched_cost[0].schedule || strchr(name, ':'))
            rc = json_at_fail(&c->loc,
                              "expected {\"partition_s\": seconds} under a schedule's "
                              "name (at most %d)",
                              COSTS_MAX_SCHEDULES);
        if (rc == BW_OK) rc = only_keys(c, v, known, "a schedule's costs");
        if (rc == BW_OK) rc = get_num(c, v, "partition_s", 1, &p->sched_cost[k].partition_s);
        if (rc == BW_OK) {
            snprintf(p->sched_cost[k].schedule, sizeof p->sched_cost[k].schedule, "%s", name);
            p->n_sched_cost++;
        }
        c->loc.where[in] = '\0';
        if (rc) break;
    }
    c->loc.where[back] = '\0';
    return rc;
}

/* One compressor's hook: {"synchronizes": bool, "orthogonalises_query": bool, "qr_above_rank":
 * N}, each optional (false, 0), the last two for powersgd only; "qr_above_rank" (1 to 8: the
 * ranks PowerSGD's hook uses are small) needs the profile's "qr" operation. */
static int parse_hook(Ctx *c, const char *name, const json_t *v, const CostProfile *p, CostHook *h)
{
    static const char *const known[] = {"synchronizes", "orthogonalises_query", "qr_above_rank",
                                        NULL};
    if (!json_is_object(v) || strlen(name) >= sizeof h->compressor || strchr(name, ':'))
        return json_at_fail(&c->loc, "expected {\"synchronizes\": true or false, ...} under a "
                                     "compressor's name");
    int rc = only_keys(c, v, known, "a compressor's hook");
    for (int i = 0; rc == BW_OK && i < 2; i++) {
        json_t *b = json_object_get(v, known[i]);
        if (b && !json_is_boolean(b))
            rc = json_at_fail(&c->loc, "\"%s\" must be true or false", known[i]);
    }
    for (int i = 1; rc == BW_OK && i < 3; i++)
        if (json_object_get(v, known[i]) && strcmp(name, "powersgd") &&
            (i == 2 || json_is_true(json_object_get(v, known[i]))))
            rc = json_at_fail(&c->loc, "\"%s\" is PowerSGD's: only under \"powersgd\"", known[i]);
    const json_t *qr = json_object_get(v, known[2]);
    double above = 0;
    if (rc == BW_OK && qr) {
        above = json_is_integer(qr) ? (double)json_integer_value(qr) : NAN;
        if (!(above >= 1 && above <= 8))
            rc = json_at_fail(&c->loc,
                              "\"%s\" must be an integer from 1 to 8 (leave it out: "
                              "Gram-Schmidt at every rank)",
                              known[2]);
        else if (!p->ops[COST_OP_QR].present)
            rc = json_at_fail(&c->loc, "\"%s\" needs the operation \"qr\" in \"ops\"", known[2]);
    }
    if (rc) return rc;
    snprintf(h->compressor, sizeof h->compressor, "%s", name);
    h->synchronizes = json_is_true(json_object_get(v, known[0]));
    h->orthogonalises_query = json_is_true(json_object_get(v, known[1]));
    h->qr_above_rank = (int)above;
    return BW_OK;
}

/* "hooks": {"framework": "PyTorch 1.10", NAME: {...}, ...}, optional: at most COSTS_MAX_HOOKS
 * compressors' hooks, and the framework they model (required with any). */
static int parse_hooks(Ctx *c, const json_t *o, CostProfile *p)
{
    if (!o) return BW_OK;
    if (!json_is_object(o))
        return json_at_fail(&c->loc, "\"hooks\" must be an object: {\"framework\": TEXT, "
                                     "COMPRESSOR: {...}, ...}");
    size_t back = enter(c, "hooks");
    int rc = json_at_str(&c->loc, o, "framework", 1, p->hook_framework, sizeof p->hook_framework);
    const char *name;
    json_t *v;
    json_object_foreach((json_t *)o, name, v)
    {
        if (rc || !strcmp(name, "source") || !strcmp(name, "framework")) continue;
        size_t in = enter(c, name);
        if (p->n_hooks == COSTS_MAX_HOOKS)
            rc = json_at_fail(&c->loc, "at most %d compressors' hooks", COSTS_MAX_HOOKS);
        else
            rc = parse_hook(c, name, v, p, &p->hooks[p->n_hooks]);
        if (rc == BW_OK) p->n_hooks++;
        c->loc.where[in] = '\0';
    }
    c->loc.where[back] = '\0';
    return rc;
}

/* ops.qr is read only as PowerSGD's orthogonalisation above its hook's qr_above_rank: a profile
 * with the operation and no such hook would carry a rate that prices nothing. */
static int check_qr(Ctx *c, const CostProfile *p)
{
    if (!p->ops[COST_OP_QR].present) return BW_OK;
    for (int i = 0; i < p->n_hooks; i++)
        if (p->hooks[i].qr_above_rank > 0) return BW_OK;
    size_t back = enter(c, "ops.qr");
    int rc = json_at_fail(&c->loc, "priced only as PowerSGD's orthogonalisation above a rank: "
                                   "add \"qr_above_rank\" to \"hooks\": {\"powersgd\": ...}, or "
                                   "leave \"qr\" out");
    c->loc.where[back] = '\0';
    return rc;
}

/* "uncertainty", optional: {"version": COSTS_UNCERTAINTY_VERSION, "compute": r, "fixed": r,
 * "ops": r, "networks": r} (each group's relative range, 0 < r <= COSTS_MAX_UNCERTAINTY, all
 * four given), and "source" keys saying where each comes from. */
static int parse_uncertainty(Ctx *c, const json_t *o, CostProfile *p)
{
    static const char *const known[] = {
        "version",      "compute",    "fixed",           "ops", "networks", "compute_source",
        "fixed_source", "ops_source", "networks_source", NULL};
    if (!o) return BW_OK;
    if (!json_is_object(o))
        return json_at_fail(&c->loc,
                            "\"uncertainty\" must be {\"version\": %d, \"compute\": r, "
                            "\"fixed\": r, \"ops\": r, \"networks\": r}",
                            COSTS_UNCERTAINTY_VERSION);
    size_t back = enter(c, "uncertainty");
    int rc = only_keys(c, o, known, "\"uncertainty\"");
    json_t *v = json_object_get(o, "version");
    if (rc == BW_OK && (!json_is_integer(v) || json_integer_value(v) != COSTS_UNCERTAINTY_VERSION))
        rc = json_at_fail(&c->loc, "\"version\" must be %d, the field's format",
                          COSTS_UNCERTAINTY_VERSION);
    for (int g = 0; rc == BW_OK && g < COST_GROUP_COUNT; g++)
        rc = get_num(c, o, known[1 + g], COSTS_MAX_UNCERTAINTY, &p->uncertainty[g]);
    p->has_uncertainty = rc == BW_OK;
    c->loc.where[back] = '\0';
    return rc;
}

static int parse_root(Ctx *c, const json_t *root, CostProfile *p)
{
    if (!json_is_object(root)) return json_at_fail(&c->loc, "a cost profile must be a JSON object");
    json_t *v = json_object_get(root, "bellows_costs");
    if (!json_is_integer(v) || json_integer_value(v) != COSTS_FORMAT)
        return json_at_fail(&c->loc, "\"bellows_costs\" must be %d, the format's version",
                            COSTS_FORMAT);
    int rc = json_at_str(&c->loc, root, "name", 1, p->name, sizeof p->name);
    if (rc == BW_OK) rc = json_at_str(&c->loc, root, "source", 0, p->source, sizeof p->source);
    if (rc == BW_OK)
        rc = json_at_str(&c->loc, root, "software", 0, p->software, sizeof p->software);
    if (rc == BW_OK)
        rc = json_at_str(&c->loc, root, "implementation", 1, p->implementation,
                         sizeof p->implementation);
    if (rc == BW_OK) rc = json_at_str(&c->loc, root, "gpu", 1, p->gpu, sizeof p->gpu);
    if (rc == BW_OK && !cluster_gpu_find(p->gpu))
        rc = json_at_fail(&c->loc,
                          "\"gpu\": unknown GPU \"%s\" (bellows platform --help lists V100, A100, "
                          "H100)",
                          p->gpu);
    if (rc == BW_OK) rc = parse_measured(c, json_object_get(root, "measured"), p);
    if (rc == BW_OK) rc = parse_efficiency(c, json_object_get(root, "efficiency"), p);
    if (rc == BW_OK) rc = parse_fixed(c, json_object_get(root, "fixed"), p);
    if (rc == BW_OK) rc = parse_ops(c, json_object_get(root, "ops"), p);
    if (rc == BW_OK) rc = parse_networks(c, json_object_get(root, "networks"), p);
    if (rc == BW_OK) rc = parse_allgather(c, json_object_get(root, "allgather"), p);
    if (rc == BW_OK) rc = parse_interference(c, json_object_get(root, "interference"), p);
    if (rc == BW_OK) rc = parse_schedules(c, json_object_get(root, "schedules"), p);
    if (rc == BW_OK) rc = parse_hooks(c, json_object_get(root, "hooks"), p);
    if (rc == BW_OK) rc = check_qr(c, p);
    if (rc == BW_OK) rc = parse_uncertainty(c, json_object_get(root, "uncertainty"), p);
    if (rc == BW_OK) rc = costs_parse_horovod(&c->loc, json_object_get(root, "horovod"), p);
    return rc;
}

int costs_parse(const char *path, const char *text, size_t len, const char *flag, const char *label,
                CostProfile **out, BwError *err)
{
    *out = NULL;
    Ctx c = {.loc.err = err};
    snprintf(c.loc.where, sizeof c.loc.where, "%s %s: ", flag, label);
    json_error_t jerr;
    json_t *root = text ? json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr)
                        : json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) {
        if (jerr.line > 0)
            return json_at_fail(&c.loc, "line %d column %d: %s", jerr.line, jerr.column, jerr.text);
        return json_at_fail(&c.loc, "%s", jerr.text);
    }
    CostProfile *p = bw_xcalloc(1, sizeof *p, "costs_json.c: p");
    int rc = p ? parse_root(&c, root, p) : bw_fail(err, BW_ERUNTIME, "out of memory");
    json_decref(root);
    if (rc != BW_OK) {
        free(p);
        return rc;
    }
    if (!p->source[0]) snprintf(p->source, sizeof p->source, "%s", label);
    *out = p;
    return BW_OK;
}
