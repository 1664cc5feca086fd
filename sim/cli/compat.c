/* compat.c: the compatibility table (compat.def) as data, and its check (compat.h). */
#include "compat.h"

#include <string.h>

typedef struct {
    const char *flag, *what;
} Feature;

static const Feature FEATURES[COMPAT_N_FEATURES] = {
#define COMPAT_FEATURE(ID, flag, what) [COMPAT_##ID] = {flag, what},
#include "compat.def"
#undef COMPAT_FEATURE
};

typedef struct {
    CompatFeature a, b, c; /* c: COMPAT_N_FEATURES for a plain pair */
    const char *va, *vb, *vc, *why;
} Pair;

static const Pair PAIRS[] = {
#define COMPAT(A, va, B, vb, why)             {COMPAT_##A, COMPAT_##B, COMPAT_N_FEATURES, va, vb, NULL, why},
#define COMPAT_WHEN(A, va, B, vb, C, vc, why) {COMPAT_##A, COMPAT_##B, COMPAT_##C, va, vb, vc, why},
#include "compat.def"
#undef COMPAT
#undef COMPAT_WHEN
};
#define N_PAIRS ((int)(sizeof PAIRS / sizeof *PAIRS))

int compat_lines(void)
{
    return N_PAIRS;
}

void compat_line(int i, CompatFeature *a, const char **va, CompatFeature *b, const char **vb,
                 const char **why)
{
    compat_line_when(i, a, va, b, vb, NULL, NULL, why);
}

void compat_line_when(int i, CompatFeature *a, const char **va, CompatFeature *b, const char **vb,
                      CompatFeature *c, const char **vc, const char **why)
{
    if (c) *c = PAIRS[i].c;
    if (vc) *vc = PAIRS[i].vc;
    *a = PAIRS[i].a;
    *va = PAIRS[i].va;
    *b = PAIRS[i].b;
    *vb = PAIRS[i].vb;
    *why = PAIRS[i].why;
}

const char *compat_flag(CompatFeature f)
{
    return FEATURES[f].flag;
}

/* Whether v is one of "a|b|c". */
static int in_list(const char *list, const char *v)
{
    const size_t n = strlen(v);
    for (const char *p = list;;) {
        const size_t k = strcspn(p, "|");
        if (k == n && strncmp(p, v, n) == 0) return 1;
        if (!p[k]) return 0;
        p += k + 1;
    }
}

int compat_match(const char *values, const char *v)
{
    if (!v) return 0;
    if (strcmp(values, "*") == 0) return 1;
    if (values[0] == '!') return !in_list(values + 1, v);
    return in_list(values, v);
}

static int is_lazy(const CompatScene *s, CompatFeature f)
{
    return s->lazy && !s->value[f] && (s->lazy_features >> f & 1u);
}

/* Whether side f of a line cannot match without asking lazy: a value at hand that is not one of
 * values, or no value and none to ask for. */
static int cannot(const CompatScene *s, CompatFeature f, const char *values)
{
    if (s->value[f]) return !compat_match(values, s->value[f]);
    return !is_lazy(s, f);
}

/* Feature f's value, asking lazy for it once when the scene has none. */
static int value_of(CompatScene *s, CompatFeature f, const char **v, BwError *err)
{
    if (is_lazy(s, f)) {
        int rc = s->lazy(s, f, err);
        if (rc) return rc;
    }
    *v = s->value[f];
    return BW_OK;
}

static void named(const CompatScene *s, CompatFeature f, char *buf, size_t n)
{
    const char *shown = s->shown[f] ? s->shown[f] : s->value[f];
    const char *flag = s->flag[f] ? s->flag[f] : FEATURES[f].flag;
    if (strcmp(shown, "*") == 0 || flag[0] != '-') /* bellows cluster: no value to name */
        snprintf(buf, n, "%s", flag);
    else
        snprintf(buf, n, "%s %s", flag, shown);
}

/* Whether the scene matches side f of a line: its value (asked of lazy if need be) is one of
 * values. *rc: lazy's failure. */
static int side(CompatScene *s, CompatFeature f, const char *values, int *rc, BwError *err)
{
    const char *v;
    if ((*rc = value_of(s, f, &v, err))) return 0;
    return compat_match(values, v);
}

int compat_check(CompatScene *s, BwError *err)
{
    for (int i = 0; i < N_PAIRS; i++) {
        const Pair *p = &PAIRS[i];
        const int when = p->c != COMPAT_N_FEATURES;
        int rc = BW_OK;
        /* the values at hand first: a lazy one is found only when the others match */
        if (cannot(s, p->a, p->va) || cannot(s, p->b, p->vb) || (when && cannot(s, p->c, p->vc)))
            continue;
        int hit = side(s, p->a, p->va, &rc, err) && side(s, p->b, p->vb, &rc, err) &&
                  (!when || side(s, p->c, p->vc, &rc, err));
        if (rc) return rc;
        if (!hit) continue;
        char a[400], b[400], c[400] = "";
        named(s, p->a, a, sizeof a);
        named(s, p->b, b, sizeof b);
        if (when) {
            char n[380];
            named(s, p->c, n, sizeof n);
            snprintf(c, sizeof c, " (%s)", n);
        }
        return bw_fail(err, BW_EUSAGE, "%s with %s%s: %s", a, b, c, p->why);
    }
    return BW_OK;
}

void compat_print_tsv(FILE *out)
{
    for (int f = 0; f < COMPAT_N_FEATURES; f++)
        fprintf(out, "compat-feature\t%s\t%s\n", FEATURES[f].flag, FEATURES[f].what);
    for (int i = 0; i < N_PAIRS; i++) {
        const Pair *p = &PAIRS[i];
        const int when = p->c != COMPAT_N_FEATURES;
        fprintf(out, "compat\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", FEATURES[p->a].flag, p->va,
                FEATURES[p->b].flag, p->vb, when ? FEATURES[p->c].flag : "", when ? p->vc : "",
                p->why);
    }
}
