/* spec.c: parsing and checking NAME[:key=value,...] plug-in specifications (see spec.h). */
#include "spec.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int valid_word(const char *s, size_t len)
{
    if (len == 0) return 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!(islower(c) || isdigit(c) || c == '_' || c == '-')) return 0;
    }
    return 1;
}

static int valid_path(const char *s, size_t len)
{
    if (len == 0) return 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!(isalnum(c) || c == '.' || c == '_' || c == '/' || c == '+' || c == '-')) return 0;
    }
    return 1;
}

int spec_is_path(const char *text)
{
    const char *colon = strchr(text, ':');
    size_t len = colon ? (size_t)(colon - text) : strlen(text);
    return memchr(text, '/', len) || (len >= 3 && memcmp(text + len - 3, ".so", 3) == 0) ||
           (len >= 3 && memcmp(text + len - 3, ".py", 3) == 0);
}

static int parse_options(const char *text, const char *p, const char *flag, Spec *out,
                         BwError *err);

static int parse(const char *text, const char *flag, int paths, Spec *out, BwError *err)
{
    memset(out, 0, sizeof *out);
    snprintf(out->flag, sizeof out->flag, "%s", flag);
    const char *colon = strchr(text, ':');
    size_t name_len = colon ? (size_t)(colon - text) : strlen(text);
    if (paths && spec_is_path(text)) {
        if (!valid_path(text, name_len) || name_len >= sizeof out->path)
            return bw_fail(err, BW_EUSAGE,
                           "%s '%s': a plugin's path is made of A-Z a-z 0-9 . _ / + - only "
                           "(expected PATH.so, PATH.py or PATH:key=value,...)",
                           flag, text);
    } else if (!valid_word(text, name_len) || name_len >= SPEC_MAX_NAME) {
        return bw_fail(err, BW_EUSAGE, "%s '%s': expected NAME or NAME:key=value,...", flag, text);
    }
    memcpy(paths && spec_is_path(text) ? out->path : out->name, text, name_len);
    if (!colon) return BW_OK;
    return parse_options(text, colon + 1, flag, out, err);
}

int spec_parse(const char *text, const char *flag, Spec *out, BwError *err)
{
    return parse(text, flag, 0, out, err);
}

int spec_parse_plugin(const char *text, const char *flag, Spec *out, BwError *err)
{
    return parse(text, flag, 1, out, err);
}

/* A key as typed, upper case read as lower ("H=50" is "h=50": the papers' H of DiLoCo). */
static int valid_key(const char *s, size_t len, char *key, size_t cap)
{
    if (len >= cap) return 0;
    for (size_t i = 0; i < len; i++) key[i] = (char)tolower((unsigned char)s[i]);
    key[len] = 0;
    return valid_word(key, len);
}

static int parse_options(const char *text, const char *p, const char *flag, Spec *out, BwError *err)
{
    if (*p == '\0')
        return bw_fail(err, BW_EUSAGE, "%s '%s': expected key=value after ':'", flag, text);
    while (*p) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        const char *eq = memchr(p, '=', len);
        if (!eq)
            return bw_fail(err, BW_EUSAGE, "%s '%s': option '%.*s' is not key=value", flag, text,
                           (int)len, p);
        size_t klen = (size_t)(eq - p), vlen = len - klen - 1;
        char key[sizeof out->key[0]];
        if (!valid_key(p, klen, key, sizeof key))
            return bw_fail(err, BW_EUSAGE, "%s '%s': bad option name '%.*s'", flag, text, (int)klen,
                           p);
        if (vlen == 0 || vlen >= sizeof out->val[0])
            return bw_fail(err, BW_EUSAGE, "%s '%s': option '%.*s' has %s value", flag, text,
                           (int)klen, p, vlen == 0 ? "an empty" : "a too long");
        if (out->n == SPEC_MAX_KV)
            return bw_fail(err, BW_EUSAGE, "%s '%s': more than %d options", flag, text,
                           SPEC_MAX_KV);
        for (int i = 0; i < out->n; i++)
            if (strcmp(out->key[i], key) == 0)
                return bw_fail(err, BW_EUSAGE, "%s '%s': option '%s' given twice", flag, text,
                               out->key[i]);
        memcpy(out->key[out->n], key, klen);
        memcpy(out->val[out->n], eq + 1, vlen);
        out->n++;
        if (!comma) break;
        p = comma + 1;
        if (*p == '\0') return bw_fail(err, BW_EUSAGE, "%s '%s': trailing ','", flag, text);
    }
    return BW_OK;
}

int spec_split_compressor(const char *item, const char *flag, char *policy, char *compressor,
                          BwError *err)
{
    const char *at = strchr(item, '@');
    size_t len = at ? (size_t)(at - item) : strlen(item);
    if (len == 0 || (at && (!at[1] || strchr(at + 1, '@'))))
        return bw_fail(err, BW_EUSAGE,
                       "%s '%s': expected POLICY or POLICY@COMPRESSOR (static:level=2@powersgd)",
                       flag, item);
    snprintf(policy, SPEC_MAX_TEXT, "%.*s", (int)len, item);
    snprintf(compressor, SPEC_MAX_TEXT, "%s", at ? at + 1 : "");
    return BW_OK;
}

int spec_split_list(const char *text, const char *flag, char items[][SPEC_MAX_TEXT], int max,
                    int *n, BwError *err)
{
    *n = 0;
    const char *p = text;
    if (*p == '\0') return bw_fail(err, BW_EUSAGE, "%s: expected a list of specs", flag);
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (len == 0) return bw_fail(err, BW_EUSAGE, "%s '%s': empty item in the list", flag, text);
        const char *eq = memchr(p, '=', len), *colon = memchr(p, ':', len);
        if (eq && !colon) { /* key=value continuing the previous spec */
            if (*n == 0)
                return bw_fail(err, BW_EUSAGE, "%s '%s': option '%.*s' before any name", flag, text,
                               (int)len, p);
            size_t have = strlen(items[*n - 1]);
            if (have + 1 + len >= SPEC_MAX_TEXT)
                return bw_fail(err, BW_EUSAGE, "%s: spec too long", flag);
            items[*n - 1][have] = ',';
            memcpy(items[*n - 1] + have + 1, p, len);
            items[*n - 1][have + 1 + len] = '\0';
        } else {
            if (*n == max) return bw_fail(err, BW_EUSAGE, "%s: more than %d specs", flag, max);
            if (len >= SPEC_MAX_TEXT) return bw_fail(err, BW_EUSAGE, "%s: spec too long", flag);
            memcpy(items[*n], p, len);
            items[*n][len] = '\0';
            (*n)++;
        }
        if (!comma) break;
        p = comma + 1;
    }
    return BW_OK;
}

/* index of word in "a|b|c", or -1 */
static int choice_index(const char *choices, const char *word)
{
    size_t wl = strlen(word);
    int i = 0;
    for (const char *p = choices;; i++) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == wl && memcmp(p, word, wl) == 0) return i;
        if (!bar) return -1;
        p = bar + 1;
    }
}

static int convert(const char *label, const SpecOpt *o, const char *text, SpecVal *v, BwError *err)
{
    if (o->type == SPEC_CHOICE) {
        int i = choice_index(o->choices, text);
        if (i < 0)
            return bw_fail(err, BW_EUSAGE, "%s: %s=%s: expected one of %s", label, o->key, text,
                           o->choices);
        v->choice = i;
        v->set = 1;
        return BW_OK;
    }
    char *end;
    errno = 0;
    double x = strtod(text, &end);
    if (end == text || *end != '\0' || errno == ERANGE || !isfinite(x))
        return bw_fail(err, BW_EUSAGE, "%s: %s=%s: expected %s", label, o->key, text,
                       o->type == SPEC_INT ? "an integer" : "a number");
    if (o->type == SPEC_INT && x != floor(x))
        return bw_fail(err, BW_EUSAGE, "%s: %s=%s: expected an integer", label, o->key, text);
    if (x < o->lo || x > o->hi)
        return bw_fail(err, BW_EUSAGE, "%s: %s=%s: expected a value in [%g, %g]", label, o->key,
                       text, o->lo, o->hi);
    v->num = x;
    v->set = 1;
    return BW_OK;
}

int spec_resolve(const Spec *s, const SpecOpt *opts, int n_opts, SpecVal *vals, BwError *err)
{
    char label[sizeof s->flag + sizeof s->name + 2];
    snprintf(label, sizeof label, "%s %s", s->flag, s->name);
    return spec_resolve_as(s, label, opts, n_opts, vals, err);
}

int spec_resolve_as(const Spec *s, const char *label, const SpecOpt *opts, int n_opts,
                    SpecVal *vals, BwError *err)
{
    for (int k = 0; k < s->n; k++) {
        int found = 0;
        for (int i = 0; i < n_opts; i++) found |= strcmp(opts[i].key, s->key[k]) == 0;
        if (!found) {
            char known[256] = "";
            size_t used = 0;
            for (int i = 0; i < n_opts && used < sizeof known; i++)
                used += (size_t)snprintf(known + used, sizeof known - used, "%s%s", i ? ", " : "",
                                         opts[i].key);
            return bw_fail(err, BW_EUSAGE, "%s: unknown option '%s' (known: %s)", label, s->key[k],
                           n_opts ? known : "none");
        }
    }
    for (int i = 0; i < n_opts; i++) {
        const SpecOpt *o = &opts[i];
        memset(&vals[i], 0, sizeof vals[i]);
        const char *text = o->def;
        for (int k = 0; k < s->n; k++)
            if (strcmp(s->key[k], o->key) == 0) text = s->val[k];
        if (text) {
            int rc = convert(label, o, text, &vals[i], err);
            if (rc) return rc;
        }
    }
    return BW_OK;
}

void spec_print_opts(FILE *out, const SpecOpt *opts, int n_opts)
{
    for (int i = 0; i < n_opts; i++) {
        char left[96];
        if (opts[i].type == SPEC_CHOICE)
            snprintf(left, sizeof left, "%s=%s (%s)", opts[i].key, opts[i].def ? opts[i].def : "-",
                     opts[i].choices);
        else
            snprintf(left, sizeof left, "%s=%s", opts[i].key, opts[i].def ? opts[i].def : "-");
        fprintf(out, "    %-28s %s\n", left, opts[i].help);
    }
}

void spec_format(const Spec *s, char *buf, size_t n)
{
    size_t used = (size_t)snprintf(buf, n, "%s", s->path[0] ? s->path : s->name);
    for (int k = 0; k < s->n && used < n; k++)
        used +=
            (size_t)snprintf(buf + used, n - used, "%c%s=%s", k ? ',' : ':', s->key[k], s->val[k]);
}

int spec_name_ok(const char *s)
{
    return s && strlen(s) < SPEC_MAX_NAME && valid_word(s, strlen(s));
}

static int choices_ok(const char *ch)
{
    return ch && *ch && *ch != '|' && ch[strlen(ch) - 1] != '|' && !strstr(ch, "||");
}

int spec_opt_check(const SpecOpt *opts, int i, int raw_type, int type_known, const char *what,
                   BwError *err)
{
    const SpecOpt *o = &opts[i];
    if (!spec_name_ok(o->key))
        return bw_fail(err, BW_EUSAGE, "%s: option %d: key is not a name of [a-z0-9_-] (< 32)",
                       what, i);
    for (int j = 0; j < i; j++)
        if (strcmp(opts[j].key, o->key) == 0)
            return bw_fail(err, BW_EUSAGE, "%s: option '%s' is declared twice", what, o->key);
    if (!type_known)
        return bw_fail(err, BW_EUSAGE, "%s: option '%s': type %d is not DOUBLE, INT or CHOICE",
                       what, o->key, raw_type);
    if (!o->help) return bw_fail(err, BW_EUSAGE, "%s: option '%s' has no help", what, o->key);
    if (o->type == SPEC_CHOICE && !choices_ok(o->choices))
        return bw_fail(err, BW_EUSAGE, "%s: option '%s': choices must be \"a|b|...\"", what,
                       o->key);
    if (o->type != SPEC_CHOICE && !(isfinite(o->lo) && isfinite(o->hi) && o->lo <= o->hi))
        return bw_fail(err, BW_EUSAGE, "%s: option '%s': range [%g, %g] is empty or not finite",
                       what, o->key, o->lo, o->hi);
    /* the default must be a value the option accepts */
    Spec s;
    memset(&s, 0, sizeof s);
    snprintf(s.flag, sizeof s.flag, "%s", "default");
    snprintf(s.name, sizeof s.name, "%s", o->key);
    SpecVal sv;
    BwError inner = {{0}};
    if (o->def && spec_resolve(&s, o, 1, &sv, &inner))
        return bw_fail(err, BW_EUSAGE, "%s: option '%s': its default '%s' is not valid (%s)", what,
                       o->key, o->def, inner.msg);
    return BW_OK;
}
