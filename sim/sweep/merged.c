/* merged.c: what makes a merged folder a sweep of its own: the sweep (axes, seeds, policies,
 * baseline) read back from a shard's sweep.json, the merged rows marked as its finished runs,
 * then its sweep.json (shard "merged") and the heatmap's grid, so that `bellows plot` draws a
 * merged sweep as it draws a whole one, and merge can say which runs no folder held. */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "sweep_impl.h"
#include "xalloc.h"

/* A string array of sweep.json into items (at most max), or -1 if it is not one. */
static int json_strings(json_t *arr, char items[][SPEC_MAX_TEXT], int max)
{
    if (!json_is_array(arr) || (int)json_array_size(arr) > max) return -1;
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v)
    {
        if (!json_is_string(v)) return -1;
        snprintf(items[i], SPEC_MAX_TEXT, "%s", json_string_value(v));
    }
    return (int)json_array_size(arr);
}

/* The axes of sweep.json into s; BW_OK or -1 when malformed. */
static int read_axes(json_t *axes, Sweep *s)
{
    if (!json_is_array(axes) || json_array_size(axes) > SWEEP_MAX_AXES) return -1;
    size_t a;
    json_t *ax;
    json_array_foreach(axes, a, ax)
    {
        const char *flag = json_string_value(json_object_get(ax, "flag"));
        Axis *x = &s->axes[a];
        if (!flag) return -1;
        snprintf(x->name, sizeof x->name, "%s", flag);
        x->n = json_strings(json_object_get(ax, "values"), x->value, SWEEP_MAX_VALUES);
        if (x->n < 1) return -1;
    }
    s->n_axes = (int)json_array_size(axes);
    return BW_OK;
}

/* The sweep that dir/sweep.json describes, into s (zeroed): everything merge needs to rebuild
 * its run list; s->base_text owns the common flags. */
static int read_sweep_json(const char *dir, Sweep *s, BwError *err)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/sweep.json", dir);
    json_error_t jerr;
    json_t *root = json_load_file(path, 0, &jerr);
    int ok = root && read_axes(json_object_get(root, "axes"), s) == BW_OK;
    json_t *seeds = ok ? json_object_get(root, "seeds") : NULL;
    ok = ok && json_is_array(seeds) && json_array_size(seeds) >= 1 &&
         json_array_size(seeds) <= CLI_LIST_MAX;
    for (size_t i = 0; ok && i < json_array_size(seeds); i++) {
        ok = json_is_integer(json_array_get(seeds, i));
        s->seeds[i] = (int)json_integer_value(json_array_get(seeds, i));
    }
    s->n_seeds = ok ? (int)json_array_size(seeds) : 0;
    if (ok)
        s->n_policies =
            json_strings(json_object_get(root, "policies"), s->policies, SWEEP_MAX_POLICIES);
    const char *base = ok ? json_string_value(json_object_get(root, "base_args")) : NULL;
    const char *baseline = ok ? json_string_value(json_object_get(root, "baseline")) : NULL;
    ok = ok && s->n_policies >= 1 && base && baseline;
    s->baseline = -1;
    for (int k = 0; ok && k < s->n_policies; k++)
        if (strcmp(s->policies[k], baseline) == 0) s->baseline = k;
    ok = ok && s->baseline >= 0;
    if (ok && base[0]) {
        s->base_text = bw_xstrdup(base, "merged.c: s->base_text");
        s->base[s->n_base++] = s->base_text;
    }
    const char *traces = ok ? json_string_value(json_object_get(root, "traces")) : NULL;
    if (traces) s->traces_list = bw_xstrdup(traces, "merged.c: s->traces_list");
    json_decref(root);
    if (!ok) return bw_fail(err, BW_EUSAGE, "merge: %s: not a sweep's sweep.json", path);
    return BW_OK;
}

Sweep *sweep_merged_open(const char *first_dir, BwError *err)
{
    Sweep *s = bw_xcalloc(1, sizeof *s, "merged.c: s");
    if (!s) {
        bw_fail(err, BW_ERUNTIME, "out of memory");
        return NULL;
    }
    int rc = read_sweep_json(first_dir, s, err);
    if (rc == BW_OK) rc = sweep_plan_runs(s, err);
    if (rc) {
        sweep_merged_free(s);
        return NULL;
    }
    return s;
}

void sweep_merged_free(Sweep *s)
{
    if (!s) return;
    free(s->runs);
    free(s->todo);
    free(s->base_text);
    free((char *)s->traces_list);
    free(s);
}

int sweep_merged_write(Sweep *s, const char *out, const MergedRun *runs, long n, BwError *err)
{
    for (long i = 0; i < n; i++) { /* every row was checked (sweep_check_row) */
        s->runs[runs[i].index].done = 1;
        sweep_read_figures(&s->runs[runs[i].index].row, runs[i].figures);
    }
    s->out = out;
    s->merged = 1;
    int rc = sweep_write_json(s, err);
    if (rc == BW_OK) rc = sweep_write_grid(s, err);
    return rc;
}
