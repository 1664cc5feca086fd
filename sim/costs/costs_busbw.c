/* costs_busbw.c: a network's "busbw" tables in a cost profile (the format is in
 * sim/costs/README.md): the bus bandwidth nccl-tests reports (NVIDIA/nccl-tests,
 * doc/PERFORMANCE.md: allreduce busbw = S/t x 2(n-1)/n, allgather (n-1)/n, "comparable with
 * the hardware peak bandwidth, independently of the number of ranks") at rising message sizes,
 * one table per number of GPUs behind each NIC, and the curve of link shares a cluster's
 * collectives run at (busbw over the rate of the link it was measured on). Kept apart from
 * costs_json.c, which calls costs_parse_busbw for a network that has the key. */
#include <math.h>
#include <string.h>

#include "costs_impl.h"

/* [[bytes, GB/s], ...]: 1 to COSTS_BUSBW_POINTS pairs of finite positive numbers, bytes rising,
 * each busbw between BUSBW_MIN_SHARE and 1 of the measured link's rate, link_Bps (a collective
 * over NICs does not beat their line rate: a log that does was measured on more links). */
static int parse_points(const JsonAt *at, const json_t *a, double link_Bps, CostBusbwTable *t)
{
    size_t n = json_is_array(a) ? json_array_size(a) : 0;
    const char *must = "\"points\" must be a list of 1 to 32 [bytes, busbw in GB/s] pairs of "
                       "finite positive numbers, bytes rising";
    if (n < 1 || n > COSTS_BUSBW_POINTS) return json_at_fail(at, "%s", must);
    for (size_t i = 0; i < n; i++) {
        json_t *p = json_array_get(a, i);
        json_t *s = json_array_get(p, 0), *v = json_array_get(p, 1);
        double bytes = json_is_number(s) ? json_number_value(s) : NAN;
        double gbps = json_is_number(v) ? json_number_value(v) : NAN;
        if (!json_is_array(p) || json_array_size(p) != 2 || !isfinite(bytes) || !(bytes > 0) ||
            !isfinite(gbps) || !(gbps > 0) || gbps > 1e6 || (i > 0 && !(bytes > t->bytes[i - 1])))
            return json_at_fail(at, "%s (pair %zu)", must, i);
        t->bytes[i] = bytes;
        t->busbw_Bps[i] = gbps * 1e9; /* nccl-tests' GB/s are 1e9 bytes a second */
        const double share = t->busbw_Bps[i] / link_Bps;
        if (!(share >= BUSBW_MIN_SHARE && share <= 1 + 1e-9))
            return json_at_fail(at,
                                "pair %zu: a busbw of %g GB/s is %g of the link's %g GB/s "
                                "(\"link_Gbps\"); expected %g to 1 of it",
                                i, gbps, share, link_Bps / 1e9, BUSBW_MIN_SHARE);
    }
    t->n = (int)n;
    return BW_OK;
}

/* "allreduce": [{"gpus_per_nic": G, "points": [...]}, ...], gpus_per_nic rising. */
static int parse_tables(JsonAt *at, const json_t *a, const char *op, CostNetShare *s, int k)
{
    size_t n = json_is_array(a) ? json_array_size(a) : 0;
    size_t back = strlen(at->where);
    snprintf(at->where + back, sizeof at->where - back, "%s: ", op);
    if (n < 1 || n > COSTS_BUSBW_TABLES)
        return json_at_fail(at,
                            "must be a list of 1 to %d tables {\"gpus_per_nic\": G, "
                            "\"points\": [[bytes, GB/s], ...]}, gpus_per_nic rising",
                            COSTS_BUSBW_TABLES);
    for (size_t i = 0; i < n; i++) {
        const json_t *o = json_array_get(a, i);
        CostBusbwTable *t = &s->tables[k][i];
        const char *key;
        json_t *v;
        if (!json_is_object(o)) return json_at_fail(at, "table %zu must be an object", i);
        json_object_foreach((json_t *)o, key, v)
        {
            (void)v;
            if (strcmp(key, "gpus_per_nic") && strcmp(key, "points") && strcmp(key, "source"))
                return json_at_fail(at, "table %zu: unknown key \"%s\"", i, key);
        }
        json_t *g = json_object_get(o, "gpus_per_nic");
        t->gpus_per_nic = json_is_number(g) ? json_number_value(g) : NAN;
        if (!isfinite(t->gpus_per_nic) || t->gpus_per_nic < 1 || t->gpus_per_nic > 1024 ||
            (i > 0 && !(t->gpus_per_nic > s->tables[k][i - 1].gpus_per_nic)))
            return json_at_fail(at,
                                "table %zu: \"gpus_per_nic\" must be a number from 1 to 1024, "
                                "rising from table to table",
                                i);
        int rc = parse_points(at, json_object_get(o, "points"), s->link_Bps, t);
        if (rc != BW_OK) return rc;
    }
    s->n_tables[k] = (int)n;
    at->where[back] = '\0';
    return BW_OK;
}

int costs_parse_busbw(JsonAt *at, const json_t *net, CostNetShare *s)
{
    static const char *const known[] = {"link_Gbps", "allreduce", "allgather", "source", NULL};
    if (json_object_get(net, "allreduce") || json_object_get(net, "allgather"))
        return json_at_fail(at, "give either \"busbw\" or the shares \"allreduce\" and "
                                "\"allgather\", not both");
    const json_t *b = json_object_get(net, "busbw");
    if (!json_is_object(b))
        return json_at_fail(at, "\"busbw\" must be an object with \"link_Gbps\" and "
                                "\"allreduce\" tables");
    size_t back = strlen(at->where);
    snprintf(at->where + back, sizeof at->where - back, "busbw: ");
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)b, key, v)
    {
        (void)v;
        int ok = 0;
        for (int i = 0; !ok && known[i]; i++) ok = strcmp(key, known[i]) == 0;
        if (!ok) return json_at_fail(at, "unknown key \"%s\"", key);
    }
    json_t *l = json_object_get(b, "link_Gbps");
    double gbps = json_is_number(l) ? json_number_value(l) : NAN;
    if (!isfinite(gbps) || !(gbps > 0) || gbps > 1e7)
        return json_at_fail(at, "\"link_Gbps\" must be the measured link's rate in Gbit/s, a "
                                "number > 0 and at most 1e7");
    s->link_Bps = gbps * 1e9 / 8;
    int rc = parse_tables(at, json_object_get(b, "allreduce"), "allreduce", s, 0);
    if (rc == BW_OK && json_object_get(b, "allgather"))
        rc = parse_tables(at, json_object_get(b, "allgather"), "allgather", s, 1);
    if (rc != BW_OK) return rc;
    at->where[back] = '\0';
    s->busbw = 1;
    s->present = 1;
    s->allreduce = s->allgather = 1; /* the links at line rate: the tables scale each call */
    return BW_OK;
}

/* The share of table t at bytes: log-log between its points, constant beyond. */
static double table_share(const CostBusbwTable *t, double link_Bps, double bytes)
{
    CollShareCurve k = {.n = t->n};
    for (int i = 0; i < t->n; i++) {
        k.bytes[i] = t->bytes[i];
        k.share[i] = t->busbw_Bps[i] / link_Bps;
    }
    return coll_share_curve_at(&k, bytes);
}

/* Adds x to the rising list xs[*n] unless it is there already. */
static void add_size(double *xs, int *n, double x)
{
    int i = 0;
    while (i < *n && xs[i] < x) i++;
    if (i < *n && xs[i] == x) return;
    memmove(xs + i + 1, xs + i, sizeof *xs * (size_t)(*n - i));
    xs[i] = x;
    (*n)++;
}

int costs_busbw_curve(const CostProfile *p, CostNet net, int allgather, double gpus_per_nic,
                      CollShareCurve *out)
{
    memset(out, 0, sizeof *out);
    const CostNetShare *s = &p->net[net];
    if (p->ideal || !s->busbw) return 0;
    int k = allgather && s->n_tables[1] > 0 ? 1 : 0;
    const CostBusbwTable *ts = s->tables[k];
    int n = s->n_tables[k], hi = 0;
    while (hi < n - 1 && ts[hi].gpus_per_nic < gpus_per_nic) hi++;
    int lo = hi > 0 && ts[hi].gpus_per_nic > gpus_per_nic ? hi - 1 : hi;
    double f = lo == hi ? 0
                        : log(gpus_per_nic / ts[lo].gpus_per_nic) /
                              log(ts[hi].gpus_per_nic / ts[lo].gpus_per_nic);
    for (int i = 0; i < ts[lo].n; i++) add_size(out->bytes, &out->n, ts[lo].bytes[i]);
    for (int i = 0; lo != hi && i < ts[hi].n; i++) add_size(out->bytes, &out->n, ts[hi].bytes[i]);
    for (int i = 0; i < out->n; i++) {
        double a = table_share(&ts[lo], s->link_Bps, out->bytes[i]);
        double b = table_share(&ts[hi], s->link_Bps, out->bytes[i]);
        out->share[i] = a + f * (b - a);
    }
    return 1;
}
