/* costs_hvd_release.c: --horovod's releases and their "horovod" put over any profile (costs.h:
 * costs_horovod_release, costs_set_horovod; the flags in sim/cli/hvd_args.c). A file of its own
 * so that the parser (costs_json.c) calls costs_horovod.c and this file calls the parser and the
 * built-ins (costs.c) with no cycle among them (scripts/callgraph.py). */
#include <assert.h>
#include <stdio.h>
#include <string.h>

#include "costs_impl.h"

/* The releases are the built-ins named horovod-RELEASE-GPU, which gen_costs.py writes from its
 * one table of each release's defaults (HOROVOD, each cited to the release's operations.cc and
 * global_state.h): their "horovod" objects are that table, parsed and checked as any profile's. */

/* A built-in's RELEASE (between "horovod-" and the next '-') into key; 0 when name is not one. */
static int hvd_builtin_key(const char *name, char *key, size_t n)
{
    static const char prefix[] = "horovod-";
    if (strncmp(name, prefix, sizeof prefix - 1) != 0) return 0;
    const char *k = name + sizeof prefix - 1;
    const size_t len = strcspn(k, "-");
    if (len == 0 || len >= n || !k[len]) return 0;
    memcpy(key, k, len);
    key[len] = '\0';
    return 1;
}

int costs_horovod_release(const char *release, CostHorovod *h, char *key, size_t n)
{
    const char *const *names = costs_builtin_names();
    for (int i = 0; names[i]; i++) {
        char k[24];
        const char *text;
        size_t len;
        CostProfile *p = NULL;
        if (!hvd_builtin_key(names[i], k, sizeof k) || !costs_builtin_text(names[i], &text, &len))
            continue;
        BwError ignore;
        if (costs_parse(NULL, text, len, "--horovod", names[i], &p, &ignore) != BW_OK) continue;
        const int hit = p->horovod.present &&
                        (strcmp(k, release) == 0 || strcmp(p->horovod.version, release) == 0);
        if (hit) {
            *h = p->horovod;
            snprintf(key, n, "%s", k);
        }
        costs_free(p);
        if (hit) return 1;
    }
    return 0;
}

void costs_horovod_releases(char *buf, size_t n)
{
    const char *const *names = costs_builtin_names();
    size_t at = 0;
    buf[0] = '\0';
    for (int i = 0; names[i] && at < n; i++) {
        char k[24];
        if (hvd_builtin_key(names[i], k, sizeof k) && !strstr(buf, k))
            at += (size_t)snprintf(buf + at, n - at, "%s%s", at ? ", " : "", k);
    }
}

static int hvd_same(const CostHorovod *a, const CostHorovod *b)
{
    return a->present == b->present &&
           (!a->present ||
            (strcmp(a->version, b->version) == 0 && a->fusion_bytes == b->fusion_bytes &&
             a->cycle_s == b->cycle_s && a->response_cache == b->response_cache &&
             a->cache_capacity == b->cache_capacity && a->batched_memcpy == b->batched_memcpy &&
             strcmp(a->controller, b->controller) == 0 &&
             strcmp(a->operations, b->operations) == 0));
}

/* dst (n bytes, at most 512) = head + tail, head cut to leave the tail whole (head may be dst). */
static void hvd_text(char *dst, size_t n, const char *head, const char *tail)
{
    char buf[512];
    assert(n > 0 && n <= sizeof buf);
    const size_t t = strlen(tail) < n - 1 ? strlen(tail) : n - 1;
    const size_t h = strlen(head) < n - 1 - t ? strlen(head) : n - 1 - t;
    memcpy(buf, head, h);
    memcpy(buf + h, tail, t);
    buf[h + t] = '\0';
    memcpy(dst, buf, h + t + 1);
}

/* p's implementation and software under h (present 0: off), named as the profile base. */
static void hvd_describe(CostProfile *p, const CostHorovod *h, const char *key, const char *base)
{
    char head[sizeof p->implementation] = "", tail[200];
    if (h->present) {
        snprintf(tail, sizeof tail,
                 "Horovod %s (--horovod %.16s): its tensor fusion and cycle over %.63s's rates "
                 "and links",
                 h->version, key, base);
    } else { /* the framework's own words first (costs_framework), then what runs */
        const char *plus = strstr(p->implementation, " + ");
        const int k =
            (int)(plus ? (size_t)(plus - p->implementation) : strcspn(p->implementation, ","));
        snprintf(head, sizeof head, "%.*s", k, p->implementation);
        snprintf(tail, sizeof tail,
                 ", DDP's buckets in place of Horovod (--horovod off), %.63s's rates and links",
                 base);
    }
    hvd_text(p->implementation, sizeof p->implementation, head, tail);
    if (h->present)
        snprintf(tail, sizeof tail, "%sHorovod %s runs the allreduces (--horovod %.16s)",
                 p->software[0] ? "; " : "", h->version, key);
    else
        snprintf(tail, sizeof tail, "%sHorovod off (--horovod off)", p->software[0] ? "; " : "");
    hvd_text(p->software, sizeof p->software, p->software, tail);
}

/* --horovod off over a built-in horovod-RELEASE-GPU: the DDP communication hooks of the PyTorch
 * built-in it was made from, pytorch-GPU (gen_costs.py's profile_horovod: profile(GPU) with its
 * "hooks" popped, as Horovod runs none), so that a compressor's hook under DDP is priced as
 * pytorch-v100 prices it (powerSGD_hook's synchronisation and Q's orthogonalisation). A file's
 * hooks are its own (base names no built-in): none given, none run. Returns 1 when it gave
 * them, pytorch-GPU's name in name (64 bytes). */
static int hvd_ddp_hooks(CostProfile *p, const char *base, char name[64])
{
    char key[24];
    const char *text;
    size_t len;
    if (p->n_hooks || !hvd_builtin_key(base, key, sizeof key) ||
        !costs_builtin_text(base, &text, &len))
        return 0;
    snprintf(name, 64, "pytorch-%.40s", base + strlen("horovod-") + strlen(key) + 1);
    CostProfile *q = NULL;
    BwError ignore;
    if (!costs_builtin_text(name, &text, &len) ||
        costs_parse(NULL, text, len, "--horovod", name, &q, &ignore) != BW_OK)
        return 0;
    memcpy(p->hooks, q->hooks, sizeof p->hooks);
    p->n_hooks = q->n_hooks;
    snprintf(p->hook_framework, sizeof p->hook_framework, "%s", q->hook_framework);
    costs_free(q);
    return p->n_hooks > 0;
}

int costs_set_horovod(CostProfile *p, const CostHorovod *h, const char *key)
{
    const CostHorovod off = {0};
    if (!h) h = &off;
    if (hvd_same(&p->horovod, h)) return 0;
    char base[sizeof p->name], tail[40], from[64];
    snprintf(base, sizeof base, "%s", p->name);
    snprintf(tail, sizeof tail, "+horovod-%.16s", h->present ? key : "off");
    hvd_text(p->name, sizeof p->name, base, tail);
    hvd_describe(p, h, key, base);
    p->validation[0] = '\0'; /* its rows ran the profile's own framework */
    if (h->present) {        /* Horovod runs no DDP communication hook (as profile_horovod) */
        p->n_hooks = 0;
        p->hook_framework[0] = '\0';
    } else if (hvd_ddp_hooks(p, base, from)) {
        char said[160];
        snprintf(said, sizeof said, "; DDP's communication hooks %.64s's (%.40s)", from,
                 p->hook_framework);
        hvd_text(p->software, sizeof p->software, p->software, said);
    }
    p->horovod = *h;
    p->cycle_s = h->cycle_s;
    return 1;
}
