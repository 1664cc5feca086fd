/* costs_validation.c: how far each built-in cost profile is validated, from
 * sim/costs/validation/summary.json (written by `bellows validate --write-summary`, embedded at
 * build time as cost_validation.h): "median error 8%, worst 19% over 24 published rows". */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#include "xalloc.h"
#include "costs_impl.h"
#include "cost_validation.h" /* generated: cost_validations[] */

void costs_validation_text(const char *name, char *buf, size_t n)
{
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof cost_validations / sizeof *cost_validations; i++) {
        if (strcmp(cost_validations[i].name, "summary") != 0) continue;
        json_t *root =
            json_loadb((const char *)cost_validations[i].json, cost_validations[i].len, 0, NULL);
        json_t *p = json_object_get(json_object_get(root, "profiles"), name);
        json_t *rows = json_object_get(p, "rows"), *med = json_object_get(p, "median_error"),
               *worst = json_object_get(p, "worst_error");
        if (json_is_integer(rows) && json_is_number(med) && json_is_number(worst) &&
            json_integer_value(rows) > 0)
            snprintf(buf, n, "median error %.0f%%, worst %.0f%% over %lld published rows",
                     100 * json_number_value(med), 100 * json_number_value(worst),
                     (long long)json_integer_value(rows));
        json_decref(root);
    }
}

const char *costs_framework(const CostProfile *p)
{
    if (p->ideal) return "roofline";
    if (p->horovod.present) return "horovod"; /* its own way of running the allreduces */
    if (strncmp(p->implementation, "PyTorch", 7) == 0) return "pytorch";
    if (strncmp(p->implementation, "TensorFlow", 10) == 0) return "tensorflow";
    return "other";
}

/* Appends ", what" (or "what" first) to why. */
static void differs(char *why, size_t n, const char *what)
{
    if (!why) return;
    size_t k = strlen(why);
    snprintf(why + k, n - k, "%s%s", k ? ", " : "", what);
}

/* A --sharding mode's ZeRO stage (Rajbhandari et al., SC20, section 5: P_os, P_os+g,
 * P_os+g+p), 0 for DDP (""); -1 for hybrid, a kind of its own. */
static int zero_stage(const char *sharding)
{
    static const char *const STAGES[] = {"", "zero1", "zero2", "zero3"};
    for (int k = 0; k < 4; k++)
        if (strcmp(sharding, STAGES[k]) == 0) return k;
    return -1;
}

/* ZeRO++'s collective `name` in a canonical --zeropp list: its item ("qwz:int8"), or "" */
static void zeropp_item(const char *list, const char *name, char *out, size_t n)
{
    const size_t len = strlen(name);
    out[0] = '\0';
    for (const char *p = list; *p; p += strcspn(p, ","), p += *p == ',') {
        const size_t item = strcspn(p, ",");
        if (strncmp(p, name, len) == 0 && (item == len || p[len] == ':')) {
            snprintf(out, n, "%.*s", (int)item, p);
            return;
        }
    }
}

/* The sharding's and ZeRO++'s terms of the distance (costs.h). */
static double shard_terms(const CostSetting *run, const CostSetting *row, char *why, size_t n)
{
    double d = 0;
    const int a = zero_stage(run->sharding), b = zero_stage(row->sharding);
    if (strcmp(run->sharding, row->sharding) != 0)
        d += a >= 0 && b >= 0 ? abs(a - b) / 3.0 : 1, differs(why, n, "sharding");
    static const char *const ZPP[] = {"qwz", "hpz", "qgz"};
    int k = 0;
    for (int i = 0; i < 3; i++) {
        char x[16], y[16];
        zeropp_item(run->zeropp, ZPP[i], x, sizeof x);
        zeropp_item(row->zeropp, ZPP[i], y, sizeof y);
        k += strcmp(x, y) != 0;
    }
    if (k) d += k / 3.0, differs(why, n, "ZeRO++");
    return d;
}

double costs_setting_distance(const CostSetting *run, const CostSetting *row, char *why, size_t n)
{
    if (why && n) why[0] = '\0';
    double d = 0, t;
    if (strcmp(run->family, row->family) != 0) d += 1, differs(why, n, "model");
    if (strcmp(run->framework, row->framework) != 0) d += 1, differs(why, n, "framework");
    if (run->transport != row->transport) d += 1, differs(why, n, "transport");
    if (strcmp(run->gpu, row->gpu) != 0) d += 1, differs(why, n, "GPU");
        /* a ratio of rates or counts; one not known (0: a platform file's before it is loaded) is
         * as far as another kind */
#define LOG_TERM(a, b, lg, scale) ((a) > 0 && (b) > 0 ? fabs(lg((double)(a) / (b))) / (scale) : 1)
    if ((t = LOG_TERM(run->gbps, row->gbps, log10, 1)) > 0) d += t, differs(why, n, "bandwidth");
    if ((t = LOG_TERM(run->gpus_per_nic, row->gpus_per_nic, log2, 3)) > 0)
        d += t, differs(why, n, "GPUs per NIC");
    if ((t = LOG_TERM(run->sockets, row->sockets, log2, 6)) > 0) d += t, differs(why, n, "sockets");
#undef LOG_TERM
    return d + shard_terms(run, row, why, n);
}

typedef struct {
    const char *id;
    double error, distance;
} Near;

static int by_distance(const void *a, const void *b)
{
    const Near *x = a, *y = b;
    if (x->distance != y->distance) return x->distance < y->distance ? -1 : 1;
    return strcmp(x->id, y->id);
}

static const char *jstr(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    return json_is_string(v) ? json_string_value(v) : "";
}

/* Row r of the summary as a setting; 0 when it lacks a field. */
static int row_setting(const json_t *r, CostSetting *s)
{
    const json_t *g = json_object_get(r, "gbps"), *k = json_object_get(r, "gpus_per_nic"),
                 *so = json_object_get(r, "sockets");
    int tr = costs_net_parse(jstr(r, "transport"));
    if (!json_is_number(g) || !json_is_number(k) || !json_is_integer(so) || tr < 0) return 0;
    snprintf(s->family, sizeof s->family, "%s", jstr(r, "family"));
    snprintf(s->framework, sizeof s->framework, "%s", jstr(r, "framework"));
    snprintf(s->gpu, sizeof s->gpu, "%s", jstr(r, "gpu"));
    s->transport = tr;
    s->sockets = (int)json_integer_value(so);
    s->gbps = json_number_value(g);
    s->gpus_per_nic = json_number_value(k);
    /* optional: rows of DDP without ZeRO++ leave them out */
    snprintf(s->sharding, sizeof s->sharding, "%s", jstr(r, "sharding"));
    snprintf(s->zeropp, sizeof s->zeropp, "%s", jstr(r, "zeropp"));
    return s->gbps > 0 && s->gpus_per_nic > 0 && s->sockets > 0;
}

static int by_abs(const void *a, const void *b)
{
    const double x = fabs(*(const double *)a), y = fabs(*(const double *)b);
    return (x > y) - (x < y);
}

/* The line for the near rows a[0..n) (n > 0, sorted), or for the nearest far one. */
static void near_text(const CostSetting *s, const Near *a, int n_near, const json_t *far, char *buf,
                      size_t n)
{
    if (n_near == 0) {
        char why[128];
        CostSetting r;
        row_setting(far, &r);
        costs_setting_distance(s, &r, why, sizeof why);
        snprintf(buf, n,
                 "no published row near this setting; the nearest, %s (%+.1f%%), at distance "
                 "%.2f: another %s",
                 a[0].id, 100 * a[0].error, a[0].distance, why);
        return;
    }
    double *err = bw_xmalloc(sizeof *err * (size_t)n_near, "costs_validation.c: err");
    const int k = n_near;
    for (int i = 0; i < k; i++) err[i] = a[i].error;
    qsort(err, (size_t)k, sizeof *err, by_abs);
    const double med = k % 2 ? fabs(err[k / 2]) : (fabs(err[k / 2 - 1]) + fabs(err[k / 2])) / 2;
    size_t at = (size_t)snprintf(buf, n,
                                 "%d published row%s near this setting (median error %.1f%%, "
                                 "worst %.1f%%); nearest:",
                                 n_near, n_near == 1 ? "" : "s", 100 * med, 100 * fabs(err[k - 1]));
    free(err);
    for (int i = 0; i < n_near && i < 3 && at < n; i++)
        at += (size_t)snprintf(buf + at, n - at, "%s %s (%+.1f%%, distance %.2f)", i ? "," : "",
                               a[i].id, 100 * a[i].error, a[i].distance);
}

void costs_validation_near(const CostSetting *s, char *buf, size_t n)
{
    snprintf(buf, n, "no published row near this setting");
    for (size_t i = 0; i < sizeof cost_validations / sizeof *cost_validations; i++) {
        if (strcmp(cost_validations[i].name, "summary") != 0) continue;
        json_t *root =
            json_loadb((const char *)cost_validations[i].json, cost_validations[i].len, 0, NULL);
        const json_t *rows = json_object_get(root, "rows"), *far = NULL;
        const size_t m = json_array_size(rows);
        Near *a = m ? bw_xcalloc(m, sizeof *a, "costs_validation.c: a") : NULL;
        int k = 0, n_near = 0;
        for (size_t j = 0; a && j < m; j++) {
            const json_t *r = json_array_get(rows, j), *e = json_object_get(r, "error");
            CostSetting rs;
            if (!row_setting(r, &rs) || !json_is_number(e)) continue;
            a[k] = (Near){jstr(r, "id"), json_number_value(e),
                          costs_setting_distance(s, &rs, NULL, 0)};
            n_near += a[k].distance < COSTS_NEAR_DISTANCE;
            k++;
        }
        if (k) {
            qsort(a, (size_t)k, sizeof *a, by_distance);
            for (size_t j = 0; !far && j < m; j++)
                if (strcmp(jstr(json_array_get(rows, j), "id"), a[0].id) == 0)
                    far = json_array_get(rows, j);
            near_text(s, a, n_near, far, buf, n);
        }
        free(a);
        json_decref(root);
    }
}
