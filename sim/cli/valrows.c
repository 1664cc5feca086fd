/* valrows.c: the rows of `bellows validate` (see valrows.h). */
#include "valrows.h"
#include "xalloc.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const FIELDS[] = {"id",  "group",     "figure", "unit",
                                     "fit", "tolerance", "source", "setting"};
#define N_FIELDS 8

/* One CSV line (no newline) into fields[0..max), each at most 2047 bytes; quotes as RFC 4180.
 * Returns the number of fields (max + 1: more than max), or -1 (*bad: which) when one is too
 * long or a quote is not closed. */
static int split_line(const char *line, char fields[][2048], int max, int *bad)
{
    int n = 0;
    const char *p = line;
    for (;;) {
        if (n == max) return max + 1; /* too many */
        size_t k = 0;
        char *out = fields[n];
        if (*p == '"') {
            p++;
            for (;;) {
                if (*p == '\0') {
                    *bad = n;
                    return -1;
                }
                if (*p == '"' && p[1] == '"') {
                    p++;
                } else if (*p == '"') {
                    p++;
                    break;
                }
                if (k + 1 >= 2048) {
                    *bad = n;
                    return -1;
                }
                out[k++] = *p++;
            }
        }
        while (*p && *p != ',') {
            if (k + 1 >= 2048) {
                *bad = n;
                return -1;
            }
            out[k++] = *p++;
        }
        out[k] = '\0';
        n++;
        if (*p != ',') return n;
        p++;
    }
}

static int find_id(const ValRows *r, const char *id)
{
    for (int i = 0; i < r->n; i++)
        if (strcmp(r->rows[i].id, id) == 0) return i;
    return -1;
}

static int copy_field(char *dst, size_t n, const char *src)
{
    if (strlen(src) >= n) return -1;
    memcpy(dst, src, strlen(src) + 1);
    return 0;
}

/* "A / B": two earlier rows of one unit, both img/s or both TFLOPS (a speed-up at one setting,
 * as ZeRO++'s over its ZeRO-3 baseline) */
static int parse_ratio(const ValRows *r, ValRow *row, const char *where, BwError *err)
{
    char a[64], b[64], extra[2];
    if (sscanf(row->setting, " %63[A-Za-z0-9._-] / %63[A-Za-z0-9._-] %1s", a, b, extra) != 2)
        return bw_fail(err, BW_EUSAGE,
                       "%s: field setting: a ratio row's setting must be \"A / B\", two earlier "
                       "rows' ids, not \"%.200s\"",
                       where, row->setting);
    const char *ids[2] = {a, b};
    for (int k = 0; k < 2; k++) {
        int i = find_id(r, ids[k]);
        if (i < 0 || (r->rows[i].unit != VALROW_IMG_S && r->rows[i].unit != VALROW_TFLOPS))
            return bw_fail(err, BW_EUSAGE,
                           "%s: field setting: \"%s\" is not an earlier img/s or TFLOPS row's id",
                           where, ids[k]);
        row->ratio_of[k] = i;
    }
    if (r->rows[row->ratio_of[0]].unit != r->rows[row->ratio_of[1]].unit)
        return bw_fail(err, BW_EUSAGE,
                       "%s: field setting: \"%s\" and \"%s\" are of different units (a ratio "
                       "divides img/s by img/s or TFLOPS by TFLOPS)",
                       where, a, b);
    return BW_OK;
}

static int parse_number_field(const char *s, double *x)
{
    char *end;
    *x = strtod(s, &end);
    return end != s && *end == '\0' && isfinite(*x) ? 0 : -1;
}

/* The fields of one row, checked, into row. */
static int parse_row(ValRows *r, char f[][2048], ValRow *row, const char *where, BwError *err)
{
    const char *id = f[0];
    size_t idn = strlen(id);
    if (idn == 0 || idn >= sizeof row->id ||
        strspn(id, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnop"
                   "qrstuvwxyz0123456789._-") != idn)
        return bw_fail(err, BW_EUSAGE,
                       "%s: field id: \"%.80s\" must be 1 to 63 of A-Z a-z 0-9 . _ -", where, id);
    if (find_id(r, id) >= 0)
        return bw_fail(err, BW_EUSAGE, "%s: field id: \"%s\" is already a row's id", where, id);
    strcpy(row->id, id);
    if (!f[1][0] || copy_field(row->group, sizeof row->group, f[1]))
        return bw_fail(err, BW_EUSAGE, "%s: field group: must be 1 to 31 characters", where);
    if (strcmp(f[2], "-") == 0) /* not published: a ratio's operand (checked below) */
        row->figure = NAN;
    else if (parse_number_field(f[2], &row->figure) || !(row->figure > 0))
        return bw_fail(err, BW_EUSAGE,
                       "%s: field figure: \"%.80s\" must be a number > 0 (or -, not published)",
                       where, f[2]);
    if (strcmp(f[3], "img/s") == 0)
        row->unit = VALROW_IMG_S;
    else if (strcmp(f[3], "ratio") == 0)
        row->unit = VALROW_RATIO;
    else if (strcmp(f[3], "TFLOPS") == 0)
        row->unit = VALROW_TFLOPS;
    else
        return bw_fail(err, BW_EUSAGE, "%s: field unit: \"%.80s\" must be img/s, ratio or TFLOPS",
                       where, f[3]);
    if (strcmp(f[4], "fit") != 0 && strcmp(f[4], "predict") != 0)
        return bw_fail(err, BW_EUSAGE, "%s: field fit: \"%.80s\" must be fit or predict", where,
                       f[4]);
    row->fit = strcmp(f[4], "fit") == 0;
    char pct[64];
    size_t tn = strlen(f[5]);
    double tol;
    snprintf(pct, sizeof pct, "%.*s", tn >= 2 && tn < sizeof pct ? (int)tn - 1 : 0, f[5]);
    if (strcmp(f[5], "none") == 0) {
        row->tolerance = -1;
    } else if (tn >= 2 && f[5][tn - 1] == '%' && !parse_number_field(pct, &tol) && tol > 0 &&
               tol <= 1000) {
        row->tolerance = tol / 100;
    } else {
        return bw_fail(err, BW_EUSAGE,
                       "%s: field tolerance: \"%.80s\" must be a percentage > 0 (\"20%%\") or "
                       "none",
                       where, f[5]);
    }
    if (isnan(row->figure) && (row->unit != VALROW_IMG_S || row->tolerance >= 0))
        return bw_fail(err, BW_EUSAGE,
                       "%s: field figure: - (not published) is for an img/s row with tolerance "
                       "none, a ratio's operand",
                       where);
    if (!f[6][0] || copy_field(row->source, sizeof row->source, f[6]))
        return bw_fail(err, BW_EUSAGE, "%s: field source: must be 1 to 511 characters", where);
    if (copy_field(row->setting, sizeof row->setting, f[7]))
        return bw_fail(err, BW_EUSAGE, "%s: field setting: longer than %zu characters", where,
                       sizeof row->setting - 1);
    if (row->unit == VALROW_RATIO) return parse_ratio(r, row, where, err);
    row->n_alts = 0;
    char buf[sizeof row->setting];
    char *argv[VALROW_MAX_ARGS];
    for (const char *p = row->setting; p; p = strchr(p, ';') ? strchr(p, ';') + 1 : NULL) {
        if (row->n_alts == VALROW_MAX_ALTS)
            return bw_fail(err, BW_EUSAGE, "%s: field setting: more than %d settings", where,
                           VALROW_MAX_ALTS);
        int k = row->n_alts++;
        int argc = valrows_args(row, k, buf, sizeof buf, argv);
        if (argc <= 0)
            return argc ? bw_fail(err, BW_EUSAGE,
                                  "%s: field setting: setting %d has more than "
                                  "%d words",
                                  where, k + 1, VALROW_MAX_ARGS)
                        : bw_fail(err, BW_EUSAGE, "%s: field setting: setting %d is empty", where,
                                  k + 1);
    }
    row->first_job = r->n_jobs;
    r->n_jobs += row->n_alts;
    return BW_OK;
}

int valrows_args(const ValRow *r, int k, char *buf, size_t n, char **argv)
{
    const char *p = r->setting;
    for (int i = 0; i < k && p; i++) p = strchr(p, ';') ? strchr(p, ';') + 1 : NULL;
    if (!p) return 0;
    const char *end = strchr(p, ';');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    if (len >= n) return -1;
    memcpy(buf, p, len);
    buf[len] = '\0';
    int argc = 0;
    for (char *t = strtok(buf, " \t"); t; t = strtok(NULL, " \t")) {
        if (argc == VALROW_MAX_ARGS) return -1;
        argv[argc++] = t;
    }
    return argc;
}

static int parse_header(const char *name, int line, const char *text, BwError *err)
{
    char want[128] = "";
    for (int i = 0; i < N_FIELDS; i++) {
        strcat(want, FIELDS[i]);
        if (i + 1 < N_FIELDS) strcat(want, ",");
    }
    if (strcmp(text, want) != 0)
        return bw_fail(err, BW_EUSAGE, "%s:%d: the header must be \"%s\", not \"%.120s\"", name,
                       line, want, text);
    return BW_OK;
}

int valrows_parse(const char *name, const char *text, ValRows *out, BwError *err)
{
    memset(out, 0, sizeof *out);
    char(*f)[2048] = bw_xmalloc(N_FIELDS * sizeof *f, "valrows.c: memory");
    char *line = bw_xmalloc(N_FIELDS * 2048 + 16, "valrows.c: line");
    if (!f || !line) {
        free(f);
        free(line);
        return bw_fail(err, BW_ERUNTIME, "out of memory");
    }
    int rc = BW_OK, lineno = 0, header = 0;
    for (const char *p = text; rc == BW_OK && *p;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        lineno++;
        char where[600];
        snprintf(where, sizeof where, "%.500s:%d", name, lineno);
        if (len > N_FIELDS * 2048) {
            rc = bw_fail(err, BW_EUSAGE, "%s: the line is too long", where);
            break;
        }
        memcpy(line, p, len);
        line[len] = '\0';
        if (len && line[len - 1] == '\r') line[--len] = '\0';
        p = nl ? nl + 1 : p + len;
        if (len == 0 || line[0] == '#') continue;
        if (!header) {
            rc = parse_header(name, lineno, line, err);
            header = 1;
            continue;
        }
        int bad = 0, nf = split_line(line, f, N_FIELDS, &bad);
        if (nf < 0) {
            rc = bw_fail(err, BW_EUSAGE, "%s: field %s: an unclosed quote or over 2047 characters",
                         where, FIELDS[bad]);
            break;
        }
        if (nf != N_FIELDS) {
            rc = bw_fail(err, BW_EUSAGE, "%s: %s fields, expected %d (%s)", where,
                         nf > N_FIELDS ? "more than 8"
                         : nf == 1     ? "1"
                                       : "fewer",
                         N_FIELDS, "id,group,figure,unit,fit,tolerance,source,setting");
            break;
        }
        ValRow *grown =
            bw_xrealloc(out->rows, (size_t)(out->n + 1) * sizeof *grown, "valrows.c: grown");
        if (!grown) {
            rc = bw_fail(err, BW_ERUNTIME, "out of memory");
            break;
        }
        out->rows = grown;
        ValRow *row = &out->rows[out->n];
        memset(row, 0, sizeof *row);
        row->line = lineno;
        if ((rc = parse_row(out, f, row, where, err)) == BW_OK) out->n++;
    }
    if (rc == BW_OK && out->n == 0)
        rc = bw_fail(err, BW_EUSAGE, "%s: no rows (a header, then a row a line)", name);
    free(f);
    free(line);
    if (rc) valrows_free(out);
    return rc;
}

void valrows_free(ValRows *r)
{
    free(r->rows);
    memset(r, 0, sizeof *r);
}
