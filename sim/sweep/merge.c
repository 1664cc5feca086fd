/* merge.c: `bellows merge`: joins the sweep.csv files of the shards of one sweep into one, in
 * the sweep's order, with each folder made absolute and the speedups against the baseline
 * recomputed (a shard may not hold the baseline of its runs), then sweep.json and the heatmap's
 * grid (merged.c), so the merged folder plots as a whole sweep does. Refuses folders of
 * different sweeps, runs present twice, rows that are not the sweep's runs or whose figures are
 * out of range (an edited shard), and an --out that is not new or empty (unless --force) or is
 * one of the shards; everything is checked before anything is written, and a merge whose
 * writing fails removes what it wrote. Says how many of the sweep's runs are missing. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "csv.h"
#include "xalloc.h"
#include "outfile.h"
#include "sweep.h"
#include "sweep_impl.h"

#define MAX_DIRS 256

/* The columns (after the swept flags' ones) merge reads or rewrites. */
enum {
    COL_POLICY = 1,
    COL_FOLDER = 2,
    COL_STATUS = 3,
    COL_TTA = 6,
    COL_SPEEDUP = 7,
    COL_BYTES = 8,
    COL_RATIO = 9
};

typedef struct {
    long index;
    char *fields[SWEEP_MAX_AXES + 20];
    int n;
    char *line; /* owns the fields' text */
    const char *dir;
} MergeRow;

typedef struct {
    const char *out, *dirs[MAX_DIRS];
    int n_dirs, force;
    Sweep *sweep;   /* the first folder's sweep.json, its runs planned */
    char *scenario; /* the first folder's sweep.json without its shard */
    char header[4096], baseline[SPEC_MAX_TEXT];
    MergeRow *rows;
    long n_rows, cap;
} Merge;

static void merge_free(Merge *m)
{
    for (long i = 0; i < m->n_rows; i++) free(m->rows[i].line);
    free(m->rows);
    free(m->scenario);
    sweep_merged_free(m->sweep);
}

static int cmp_rows(const void *a, const void *b)
{
    const MergeRow *x = a, *y = b;
    return (x->index > y->index) - (x->index < y->index);
}

static const char *json_string_field(const char *json, const char *key, char *buf, size_t n)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\": \"", key);
    const char *p = strstr(json, pat);
    if (!p) return NULL;
    p += strlen(pat);
    size_t len = strcspn(p, "\"");
    snprintf(buf, n, "%.*s", (int)(len < n ? len : n - 1), p);
    return buf;
}

/* --out DIR and the folders; CLI_HELP after printing the help. */
static int parse_args(Merge *m, int argc, char **argv, BwError *err)
{
    int rc = BW_OK;
    for (int i = 0; i < argc && rc == BW_OK; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            printf("usage: bellows merge --out DIR [--force] SWEEP_DIR...\n\nJoins the sweep.csv "
                   "files of the shards of one sweep (bellows sweep --shard K/N) into "
                   "DIR/sweep.csv,\nin the sweep's order, with speedups against the baseline "
                   "recomputed. Refuses folders of\ndifferent sweeps, runs present twice and rows "
                   "that are not the sweep's runs. DIR must be\nnew or empty (--force: write "
                   "over it), and not one of the shards.\n");
            return CLI_HELP;
        }
        if (strcmp(argv[i], "--out") == 0 && i + 1 < argc)
            m->out = argv[++i];
        else if (strncmp(argv[i], "--out=", 6) == 0)
            m->out = argv[i] + 6;
        else if (strcmp(argv[i], "--force") == 0)
            m->force = 1;
        else if (strncmp(argv[i], "--", 2) == 0)
            rc = bw_fail(err, BW_EUSAGE, "merge: unknown flag '%s'", argv[i]);
        else if (m->n_dirs < MAX_DIRS)
            m->dirs[m->n_dirs++] = argv[i];
    }
    if (rc == BW_OK && !m->out) rc = bw_fail(err, BW_EUSAGE, "--out: merge needs an output folder");
    if (rc == BW_OK && m->n_dirs == 0)
        rc = bw_fail(err, BW_EUSAGE, "merge: expected the sweep folders to merge");
    if (rc == BW_OK && m->out[0] == '\0') rc = bw_fail(err, BW_EUSAGE, "--out: expected a folder");
    if (rc == BW_OK) rc = run_check_out(m->out, m->force, err);
    char out_real[4096], dir_real[4096];
    for (int d = 0; rc == BW_OK && d < m->n_dirs; d++) /* never into a shard, --force or not */
        if (realpath(m->out, out_real) && realpath(m->dirs[d], dir_real) &&
            strcmp(out_real, dir_real) == 0)
            rc = bw_fail(err, BW_EUSAGE,
                         "--out %s: is the shard %s itself; merge into a folder of its own", m->out,
                         m->dirs[d]);
    return rc;
}

/* Folder d must hold the same sweep as the first. */
static int check_scenario(Merge *m, int d, BwError *err)
{
    char *sc = sweep_json_scenario(m->dirs[d]);
    if (!sc)
        return bw_fail(err, BW_EUSAGE, "merge: %s: not a sweep folder (no readable sweep.json)",
                       m->dirs[d]);
    if (!m->scenario) {
        m->scenario = sc;
        json_string_field(sc, "baseline", m->baseline, sizeof m->baseline);
        return BW_OK;
    }
    int same = strcmp(m->scenario, sc) == 0;
    free(sc);
    if (!same)
        return bw_fail(err, BW_EUSAGE,
                       "merge: %s is a different sweep from %s (sweep.json differs)", m->dirs[d],
                       m->dirs[0]);
    return BW_OK;
}

/* One line of a sweep.csv, kept (split) as a row. */
static int add_row(Merge *m, const char *line, int d, const char *path, int lineno, BwError *err)
{
    if (m->n_rows == m->cap) {
        long cap = m->cap ? 2 * m->cap : 256;
        MergeRow *rows = bw_xrealloc(m->rows, sizeof *rows * (size_t)cap, "merge.c: rows");
        if (!rows) return bw_fail(err, BW_ERUNTIME, "out of memory");
        m->rows = rows;
        m->cap = cap;
    }
    MergeRow *r = &m->rows[m->n_rows];
    r->line = bw_xstrdup(line, "merge.c: r->line");
    if (!r->line) return bw_fail(err, BW_ERUNTIME, "out of memory");
    r->n = csv_split(r->line, r->fields, SWEEP_MAX_AXES + 20);
    r->dir = m->dirs[d];
    char where[4200];
    snprintf(where, sizeof where, "merge: %s line %d", path, lineno);
    int rc = sweep_check_row(m->sweep, r->fields, r->n, where, &r->index, err);
    if (rc) {
        free(r->line);
        return rc;
    }
    m->n_rows++;
    return BW_OK;
}

/* The rows of folder d's sweep.csv, whose header must be the first folder's. */
static int read_rows(Merge *m, int d, BwError *err)
{
    char path[4096], head[4096];
    snprintf(path, sizeof path, "%s/sweep.csv", m->dirs[d]);
    FILE *f = fopen(path, "r");
    if (!f || !fgets(head, sizeof head, f)) {
        if (f) fclose(f);
        return bw_fail(err, BW_EUSAGE, "merge: %s: missing or empty", path);
    }
    int rc = BW_OK;
    if (!m->header[0])
        snprintf(m->header, sizeof m->header, "%s", head);
    else if (strcmp(m->header, head) != 0)
        rc = bw_fail(err, BW_EUSAGE, "merge: %s has other columns than %s/sweep.csv", path,
                     m->dirs[0]);
    char *line = NULL;
    size_t cap = 0;
    for (int lineno = 2; rc == BW_OK && getline(&line, &cap, f) > 0; lineno++) {
        line[strcspn(line, "\n")] = '\0';
        rc = add_row(m, line, d, path, lineno, err);
    }
    free(line);
    fclose(f);
    return rc;
}

/* Row r as merged: its folder absolute, its speedup and bytes ratio against the baseline row
 * of the same swept values and seed (none when either diverged). */
static void write_row(const Merge *m, FILE *f, const MergeRow *r, int n_axes)
{
    const MergeRow *b = NULL;
    for (long j = 0; j < m->n_rows && !b; j++) {
        int same = strcmp(m->rows[j].fields[n_axes + COL_POLICY], m->baseline) == 0;
        for (int a = 0; a <= n_axes && same; a++) /* the values and the seed */
            same = strcmp(m->rows[j].fields[a], r->fields[a]) == 0;
        if (same) b = &m->rows[j];
    }
    if (b && (strcmp(b->fields[n_axes + COL_STATUS], "diverged") == 0 ||
              strcmp(r->fields[n_axes + COL_STATUS], "diverged") == 0))
        b = NULL;
    double tta = csv_num(r->fields[n_axes + COL_TTA]),
           bytes = csv_num(r->fields[n_axes + COL_BYTES]);
    double speed = b ? csv_num(b->fields[n_axes + COL_TTA]) / tta : NAN;
    double ratio = b ? bytes / csv_num(b->fields[n_axes + COL_BYTES]) : NAN;
    /* --stop-at-target: bytes to the target only against bytes to the target (runner.h) */
    const char *common = m->sweep->base_text;
    if (b && common && strstr(common, "--stop-at-target") &&
        !(isfinite(tta) && isfinite(csv_num(b->fields[n_axes + COL_TTA]))))
        ratio = NAN;
    char folder[8192], abs_dir[4096];
    if (!realpath(r->dir, abs_dir)) snprintf(abs_dir, sizeof abs_dir, "%s", r->dir);
    snprintf(folder, sizeof folder, "%s/%s", abs_dir, r->fields[n_axes + COL_FOLDER]);
    for (int k = 0; k < r->n; k++) {
        if (k) fputc(',', f);
        if (k == n_axes + COL_FOLDER)
            csv_field(f, folder);
        else if (k == n_axes + COL_SPEEDUP)
            sweep_csv_num(f, speed, "%.6g");
        else if (k == n_axes + COL_RATIO)
            sweep_csv_num(f, ratio, "%.6g");
        else
            csv_field(f, r->fields[k]);
    }
    fputc('\n', f);
}

/* The rows in the sweep's order; a run in two folders is refused. */
static int check_twice(Merge *m, BwError *err)
{
    if (m->n_rows) qsort(m->rows, (size_t)m->n_rows, sizeof *m->rows, cmp_rows);
    for (long i = 1; i < m->n_rows; i++)
        if (m->rows[i].index == m->rows[i - 1].index)
            return bw_fail(err, BW_EUSAGE, "merge: run %ld is in both %s and %s", m->rows[i].index,
                           m->rows[i - 1].dir, m->rows[i].dir);
    return BW_OK;
}

/* The rows into --out/sweep.csv. */
static int write_merged(Merge *m, BwError *err)
{
    OutFile of;
    int rc = outfile_open(&of, m->out, "sweep.csv", err);
    if (rc) return rc;
    fputs(m->header, of.f);
    int n_axes = m->n_rows ? m->rows[0].n - SWEEP_CSV_COLUMNS : 0;
    for (long i = 0; i < m->n_rows; i++) write_row(m, of.f, &m->rows[i], n_axes);
    return outfile_commit(&of, err);
}

/* sweep.json and the heatmap's grid of the merged folder (merged.c). */
static int write_sweep_files(const Merge *m, BwError *err)
{
    MergedRun *runs =
        bw_xmalloc(sizeof *runs * (size_t)(m->n_rows ? m->n_rows : 1), "merge.c: runs");
    if (!runs) return bw_fail(err, BW_ERUNTIME, "out of memory");
    int n_axes = m->n_rows ? m->rows[0].n - SWEEP_CSV_COLUMNS : 0;
    for (long i = 0; i < m->n_rows; i++)
        runs[i] = (MergedRun){m->rows[i].index, m->rows[i].fields + n_axes + 3, m->rows[i].dir};
    int rc = sweep_merged_write(m->sweep, m->out, runs, m->n_rows, err);
    free(runs);
    return rc;
}

/* Everything checked, then the three files written; on a failure, what was written goes. */
static int write_all(Merge *m, BwError *err)
{
    int existed = access(m->out, F_OK) == 0;
    int rc = outdir_create(m->out, err);
    if (rc == BW_OK) rc = write_merged(m, err);
    if (rc == BW_OK) rc = write_sweep_files(m, err);
    if (rc && rc != BW_EUSAGE) {
        const char *names[] = {"sweep.csv", "sweep.json", "speedup_grid.dat"};
        for (size_t k = 0; k < sizeof names / sizeof *names && !existed; k++) {
            char path[4200];
            snprintf(path, sizeof path, "%s/%s", m->out, names[k]);
            unlink(path);
        }
        outdir_remove_if_new(m->out, existed);
    }
    return rc;
}

int cmd_merge(int argc, char **argv, BwError *err)
{
    Merge m;
    memset(&m, 0, sizeof m);
    int rc = parse_args(&m, argc, argv, err);
    for (int d = 0; d < m.n_dirs && rc == BW_OK; d++) {
        rc = check_scenario(&m, d, err);
        if (rc == BW_OK && !m.sweep && !(m.sweep = sweep_merged_open(m.dirs[0], err)))
            rc = BW_EUSAGE;
        if (rc == BW_OK) rc = read_rows(&m, d, err);
    }
    if (rc == BW_OK) rc = check_twice(&m, err);
    if (rc == BW_OK) rc = write_all(&m, err);
    long n_runs = m.sweep ? m.sweep->n_runs : 0;
    if (rc == BW_OK && m.n_rows == n_runs)
        printf("# merged %ld runs from %d folders into %s/sweep.csv\n", m.n_rows, m.n_dirs, m.out);
    else if (rc == BW_OK)
        printf("# merged %ld of the sweep's %ld runs from %d folders into %s/sweep.csv: %ld runs "
               "missing (shards not given, or not finished)\n",
               m.n_rows, n_runs, m.n_dirs, m.out, n_runs - m.n_rows);
    merge_free(&m);
    return rc == CLI_HELP ? BW_OK : rc;
}
