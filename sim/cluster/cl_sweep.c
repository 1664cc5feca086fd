/* cl_sweep.c: bellows cluster --set, a sweep over a cluster file's keys. Each axis is a key of
 * the top level ("oversubscription", "bandwidth", "placement", ...) or of one job as JOB.KEY
 * ("b.policy", "b.compressor", "b.start_s", ...) with a list of values ("1,2,4"; a value holding
 * '=' and no ':' continues the previous one's options, as in --policies, so
 * "b.policy=sync,accordion:critical=4,normal=1" has two). The points are the cross product, the
 * first axis slowest; each is the file with those keys set (cl_file_set), run as a cluster of its
 * own into DIR/points/KEY=VALUE_.../. */
#include "cl_sweep.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

/* An argument that continues --set's list: KEY=VALUES, not a flag. */
int cl_set_item(const char *arg)
{
    return arg[0] != '-' && strchr(arg, '=') != NULL;
}

int cl_axes_parse(const char *text, ClAxis *axes, int *n, BwError *err)
{
    *n = 0;
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", text);
    for (char *tok = strtok(buf, " "); tok; tok = strtok(NULL, " ")) {
        char *eq = strchr(tok, '=');
        if (!eq || eq == tok || !eq[1])
            return bw_fail(err, BW_EUSAGE,
                           "--set: expected KEY=V1,V2,... or JOB.KEY=V1,V2,... separated by "
                           "spaces, got '%s'",
                           tok);
        if (*n == CL_MAX_AXES)
            return bw_fail(err, BW_EUSAGE, "--set: at most %d keys", CL_MAX_AXES);
        ClAxis *a = &axes[(*n)++];
        *eq = '\0';
        snprintf(a->key, sizeof a->key, "%s", tok);
        for (int k = 0; k < *n - 1; k++)
            if (strcmp(axes[k].key, a->key) == 0)
                return bw_fail(err, BW_EUSAGE, "--set: key '%s' given twice", a->key);
        int rc = spec_split_list(eq + 1, "--set", a->values, CL_MAX_VALUES, &a->n, err);
        if (rc) return rc;
    }
    if (*n == 0) return bw_fail(err, BW_EUSAGE, "--set: expected KEY=V1,V2,...");
    return BW_OK;
}

long cl_axes_points(const ClAxis *axes, int n)
{
    long p = 1;
    for (int k = 0; k < n; k++) p *= axes[k].n;
    return p;
}

void cl_axes_point(const ClAxis *axes, int n, long point, int *value)
{
    for (int k = n - 1; k >= 0; k--) {
        value[k] = (int)(point % axes[k].n);
        point /= axes[k].n;
    }
}

/* A folder name's byte: [A-Za-z0-9._+=-] as it is, anything else '-'. */
static char folder_byte(char c)
{
    return isalnum((unsigned char)c) || strchr("._+=-", c) ? c : '-';
}

void cl_axes_folder(const ClAxis *axes, int n, const int *value, char *buf, size_t size)
{
    size_t used = 0;
    for (int k = 0; k < n && used + 1 < size; k++) {
        char item[2 * SPEC_MAX_TEXT + 4];
        snprintf(item, sizeof item, "%s%s=%s", k ? "_" : "", axes[k].key, axes[k].values[value[k]]);
        for (const char *p = item; *p && used + 1 < size; p++) buf[used++] = folder_byte(*p);
    }
    buf[used] = '\0';
}

int cl_axes_apply(json_t *root, const char *path, const ClAxis *axes, int n, const int *value,
                  BwError *err)
{
    for (int k = 0; k < n; k++) {
        int rc = cl_file_set(root, path, axes[k].key, axes[k].values[value[k]], err);
        if (rc) return rc;
    }
    return BW_OK;
}

/* "KEY=VALUE" as a folder name's part. */
static void axis_part(const ClAxis *a, int v, char *buf, size_t size)
{
    snprintf(buf, size, "%s=%s", a->key, a->values[v]);
    for (char *p = buf; *p; p++) *p = folder_byte(*p);
}

int cl_axes_check(const ClAxis *axes, int n, BwError *err)
{
    size_t longest = 0;
    for (int k = 0; k < n; k++) {
        const ClAxis *a = &axes[k];
        size_t widest = 0;
        for (int i = 0; i < a->n; i++) {
            char x[2 * SPEC_MAX_TEXT], y[2 * SPEC_MAX_TEXT];
            axis_part(a, i, x, sizeof x);
            if (strlen(x) > widest) widest = strlen(x);
            for (int j = 0; j < i; j++) {
                axis_part(a, j, y, sizeof y);
                if (strcmp(x, y) == 0)
                    return bw_fail(err, BW_EUSAGE,
                                   "--set: %s's values '%s' and '%s' would both write the folder "
                                   "points/%s (a folder's name keeps [A-Za-z0-9._+=-] and turns "
                                   "the rest into '-'); give values that differ there",
                                   a->key, a->values[j], a->values[i], x);
            }
        }
        longest += widest + (k ? 1 : 0);
    }
    if (longest > 255)
        return bw_fail(err, BW_EUSAGE,
                       "--set: a point's folder name (KEY=VALUE_KEY=VALUE...) would be %zu bytes, "
                       "more than a file name's 255; set fewer keys or shorter values",
                       longest);
    return BW_OK;
}
