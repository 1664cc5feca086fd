/* costs_horovod.c: a cost profile's "horovod" object (CostHorovod, costs.h; the format in
 * sim/costs/README.md): the fusion threshold, the cycle, the response cache, the fusion copies,
 * the controller and the operations' library of one Horovod release, as its code sets them
 * (horovod/common/operations.cc's InitializeHorovodOnce, global_state.h). Every field is
 * required but cache_capacity, so that a profile states (and cites) each default it prices. */
#include <math.h>
#include <string.h>

#include "costs_impl.h"

static const char *const hvd_keys[] = {"version",
                                       "fusion_threshold_bytes",
                                       "cycle_ms",
                                       "response_cache",
                                       "cache_capacity",
                                       "batched_memcpy",
                                       "controller",
                                       "operations",
                                       NULL};

static int hvd_only_keys(const JsonAt *at, const json_t *o)
{
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)o, key, v)
    {
        (void)v;
        int ok = !strcmp(key, "source") || !strcmp(key, "software");
        for (int i = 0; !ok && hvd_keys[i]; i++) ok = !strcmp(key, hvd_keys[i]);
        if (!ok) return json_at_fail(at, "unknown key \"%s\"", key);
    }
    return BW_OK;
}

static int hvd_bool(const JsonAt *at, const json_t *o, const char *key, int *out)
{
    const json_t *v = json_object_get(o, key);
    if (!json_is_boolean(v)) return json_at_fail(at, "\"%s\" must be true or false", key);
    *out = json_is_true(v);
    return BW_OK;
}

/* A string key that is one of a[0] or a[1]. */
static int hvd_choice(JsonAt *at, const json_t *o, const char *key, const char *a, const char *b,
                      char *out, size_t n)
{
    int rc = json_at_str(at, o, key, 1, out, n);
    if (rc == BW_OK && strcmp(out, a) && strcmp(out, b))
        rc = json_at_fail(at, "\"%s\" must be \"%s\" or \"%s\", not \"%s\"", key, a, b, out);
    return rc;
}

static int hvd_numbers(const JsonAt *at, const json_t *o, CostHorovod *h)
{
    const json_t *v = json_object_get(o, "fusion_threshold_bytes");
    const double f = json_is_number(v) ? json_number_value(v) : NAN;
    if (!(f >= 0 && f <= (double)COSTS_HVD_MAX_THRESHOLD) || f != floor(f))
        return json_at_fail(at,
                            "\"fusion_threshold_bytes\" must be a whole number of bytes from 0 "
                            "(no fusion) to %llu",
                            COSTS_HVD_MAX_THRESHOLD);
    h->fusion_bytes = f;
    v = json_object_get(o, "cycle_ms");
    const double c = json_is_number(v) ? json_number_value(v) : NAN;
    if (!(c > 0 && c <= COSTS_HVD_MAX_CYCLE_MS))
        return json_at_fail(at, "\"cycle_ms\" must be a number of milliseconds > 0 and at most %g",
                            COSTS_HVD_MAX_CYCLE_MS);
    h->cycle_s = c / 1e3;
    h->cache_capacity = 1024; /* horovod/common/global_state.h: cache_capacity = 1024 */
    v = json_object_get(o, "cache_capacity");
    if (v && (!json_is_integer(v) || json_integer_value(v) < 1 ||
              json_integer_value(v) > COSTS_HVD_MAX_CACHE))
        return json_at_fail(at, "\"cache_capacity\" must be a whole number from 1 to %d",
                            COSTS_HVD_MAX_CACHE);
    if (v) h->cache_capacity = (int)json_integer_value(v);
    return BW_OK;
}

int costs_parse_horovod(JsonAt *at, const json_t *o, CostProfile *p)
{
    if (!o) return BW_OK;
    if (!json_is_object(o))
        return json_at_fail(at, "\"horovod\" must be an object: {\"version\": TEXT, "
                                "\"fusion_threshold_bytes\": B, \"cycle_ms\": C, ...}");
    const size_t back = strlen(at->where);
    snprintf(at->where + back, sizeof at->where - back, "horovod: ");
    CostHorovod h = {.present = 1};
    int rc = hvd_only_keys(at, o);
    if (rc == BW_OK) rc = json_at_str(at, o, "version", 1, h.version, sizeof h.version);
    if (rc == BW_OK) rc = hvd_numbers(at, o, &h);
    if (rc == BW_OK) rc = hvd_bool(at, o, "response_cache", &h.response_cache);
    if (rc == BW_OK) rc = hvd_bool(at, o, "batched_memcpy", &h.batched_memcpy);
    if (rc == BW_OK)
        rc = hvd_choice(at, o, "controller", "mpi", "gloo", h.controller, sizeof h.controller);
    if (rc == BW_OK)
        rc = hvd_choice(at, o, "operations", "nccl", "mpi", h.operations, sizeof h.operations);
    if (rc == BW_OK && !p->ops[COST_OP_ELEMENTWISE].present)
        rc = json_at_fail(at, "needs \"ops\": \"elementwise\", the rate of the fusion buffer's "
                              "copies");
    if (rc == BW_OK && p->cycle_s > 0)
        rc = json_at_fail(at, "the cycle is Horovod's \"cycle_ms\": leave \"fixed\": "
                              "\"cycle_s\" out");
    at->where[back] = '\0';
    if (rc != BW_OK) return rc;
    p->horovod = h;
    p->cycle_s = h.cycle_s; /* the schedules' and the averaging's rounds (cost_cycle_wait_s) */
    return BW_OK;
}

void costs_print_horovod(FILE *out, const CostProfile *p, const json_t *o)
{
    const CostHorovod *h = &p->horovod;
    if (!h->present) return;
    fprintf(out,
            "  framework horovod %s: fusion threshold %.0f bytes (%.4g MiB), cycle %.4g ms, "
            "response cache %s",
            h->version, h->fusion_bytes, h->fusion_bytes / 1048576.0, 1e3 * h->cycle_s,
            h->response_cache ? "on" : "off");
    if (h->response_cache) fprintf(out, " (%d tensors)", h->cache_capacity);
    fprintf(out, ", fusion copies %s, controller %s, allreduce over %s\n",
            h->batched_memcpy ? "batched" : "a copy a tensor", h->controller, h->operations);
    const json_t *sw = json_object_get(o, "software"), *src = json_object_get(o, "source");
    fprintf(out, "    software: %s\n",
            json_is_string(sw) ? json_string_value(sw)
            : p->software[0]   ? p->software
                               : "not stated");
    fprintf(out, "    source: %s\n", json_is_string(src) ? json_string_value(src) : "not stated");
}

/* How near a cycle a time counts as on it, in cycles: far above a double's rounding of the
 * clock (1e-16 s a step), far below any time a step prices */
#define HVD_ON_CYCLE 1e-9

/* The first cycle at or after `now` (RunLoopOnce, horovod/common/operations.cc v0.21.0: a cycle
 * sleeps until last_cycle_start + HOROVOD_CYCLE_TIME, or not at all when the last cycle's work
 * ran past that): busy, the thread's last work ended at now: max(last + cycle, now); idle, the
 * thread woke every cycle since last with nothing to do: the first last + m cycle >= now. */
double costs_horovod_cycle_start(double now, double last, double cycle_s, int busy)
{
    if (busy) return fmax(last + cycle_s, now);
    if (!(now > last)) return last;
    double s = last + cycle_s * ceil((now - last) / cycle_s);
    if (s < now) s += cycle_s; /* ceil's quotient rounded down */
    /* now on a cycle but for the clock's rounding (a backward of whole cycles that starts at
     * 2837.31 us): that cycle takes it, not the next, in every step alike */
    if (s - cycle_s >= now - HVD_ON_CYCLE * cycle_s) s -= cycle_s;
    return fmax(s, now);
}

/* The tensors a cycle at s takes, t[i ..) ready by s: fused in order while their bytes stay
 * within the threshold (Controller::FuseResponses; a tensor above it alone, threshold 0: each
 * alone), one call after the other; returns the end of the cycle's work and the next tensor. */
static double hvd_cycle(const CostHorovod *h, const HvdTensor *t, int n, int *i, double s,
                        double (*busy_s)(void *, const HvdCall *), void *ctx, HvdCall *calls,
                        int *nc)
{
    double end = s;
    int first = 1;
    while (*i < n && t[*i].ready_s <= s) {
        HvdCall c = {
            .first = *i, .n = 1, .bytes = t[*i].bytes, .start_s = end, .opens_cycle = first};
        for (++*i; *i < n && t[*i].ready_s <= s && c.bytes + t[*i].bytes <= h->fusion_bytes; ++*i)
            c.n++, c.bytes += t[*i].bytes;
        if (busy_s) end += busy_s(ctx, &c);
        calls[(*nc)++] = c;
        first = 0;
    }
    return end;
}

int costs_horovod_fuse(const CostHorovod *h, const HvdTensor *t, int n,
                       double (*busy_s)(void *ctx, const HvdCall *call), void *ctx, HvdCall *calls)
{
    int nc = 0, i = 0;
    double s = 0; /* a cycle starts with the backward (t = 0) */
    while (i < n) {
        if (t[i].ready_s > s) /* idle until then: the grid's first cycle that finds it */
            s = costs_horovod_cycle_start(t[i].ready_s, s, h->cycle_s, 0);
        const double end = hvd_cycle(h, t, n, &i, s, busy_s, ctx, calls, &nc);
        s = fmax(s + h->cycle_s, end); /* RunLoopOnce's next cycle */
    }
    return nc;
}
