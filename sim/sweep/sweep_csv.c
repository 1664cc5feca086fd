/* sweep_csv.c: a sweep's files: sweep.csv (one row per finished run, rewritten atomically each
 * time a run ends, so a sweep killed at any moment leaves a complete file holding exactly the
 * finished runs) and sweep.json (what the sweep is); and --resume, which reads both back,
 * refuses a folder of another sweep and marks the finished runs done. */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "csv.h"
#include "xalloc.h"
#include "outfile.h"
#include "sweep_impl.h"

/* sweep.json holds no more than this; longer is not a sweep.json this code wrote */
#define JSON_MAX (1 << 20)

void sweep_csv_num(FILE *f, double x, const char *fmt)
{
    if (isfinite(x)) fprintf(f, fmt, x);
}

static void write_header(const Sweep *s, FILE *f)
{
    for (int a = 0; a < s->n_axes; a++) fprintf(f, "%s,", s->axes[a].name);
    fputs("seed,policy,folder,", f);
    runner_csv_header(f, s->islands);
    fputs(",run_index\n", f);
}

static void write_row(const Sweep *s, FILE *f, long r)
{
    const Run *run = &s->runs[r];
    const RunRow *x = &run->row;
    for (int a = 0; a < s->n_axes; a++) {
        csv_field(f, sweep_point_value(s, run->point, a));
        fputc(',', f);
    }
    char folder[4096];
    sweep_run_folder(s, r, folder, sizeof folder);
    fprintf(f, "%d,", s->seeds[run->seed_i]);
    csv_field(f, s->policies[run->policy_i]);
    fputc(',', f);
    csv_field(f, folder);
    fputc(',', f);
    const Run *b = sweep_baseline_of(s, run);
    runner_csv_row(f, x, b ? b->row.tta / x->tta : NAN,
                   b ? runner_bytes_ratio(x, &b->row, s->f.run.stop_at_target) : NAN,
                   RUNNER_CSV_SWEEP);
    fprintf(f, ",%ld\n", r);
}

/* sweep.csv: the finished runs in the sweep's order. */
int sweep_write_csv(const Sweep *s, BwError *err)
{
    OutFile of;
    int rc = outfile_open(&of, s->out, "sweep.csv", err);
    if (rc) return rc;
    write_header(s, of.f);
    for (long r = 0; r < s->n_runs; r++)
        if (s->runs[r].done) write_row(s, of.f, r);
    return outfile_commit(&of, err);
}

/* sweep.json: what the sweep is, for --resume and bellows merge to refuse a different sweep. */
static void sweep_json(const Sweep *s, FILE *f)
{
    char base[8192];
    size_t used = 0;
    base[0] = '\0';
    for (int i = 0; i < s->n_base && used < sizeof base; i++)
        used += (size_t)snprintf(base + used, sizeof base - used, "%s%s", i ? " " : "", s->base[i]);
    JsonW w;
    jsonw_begin(&w, f);
    jsonw_object(&w, NULL);
    jsonw_string(&w, "command", "sweep");
    jsonw_string(&w, "base_args", base);
    jsonw_array(&w, "axes");
    for (int a = 0; a < s->n_axes; a++) {
        jsonw_object(&w, NULL);
        jsonw_string(&w, "flag", s->axes[a].name);
        jsonw_array(&w, "values");
        for (int k = 0; k < s->axes[a].n; k++) jsonw_string(&w, NULL, s->axes[a].value[k]);
        jsonw_end_array(&w);
        jsonw_end_object(&w);
    }
    jsonw_end_array(&w);
    jsonw_array(&w, "seeds");
    for (int k = 0; k < s->n_seeds; k++) jsonw_long(&w, NULL, s->seeds[k]);
    jsonw_end_array(&w);
    jsonw_array(&w, "policies");
    for (int k = 0; k < s->n_policies; k++) jsonw_string(&w, NULL, s->policies[k]);
    jsonw_end_array(&w);
    jsonw_string(&w, "baseline", s->policies[s->baseline]);
    if (s->traces_list) jsonw_string(&w, "traces", s->traces_list); /* sweep --traces */
    jsonw_long(&w, "runs", s->n_runs);
    char shard[32];
    snprintf(shard, sizeof shard, "%d/%d", s->shard_k, s->shard_n);
    if (s->merged) snprintf(shard, sizeof shard, "merged");
    jsonw_string(&w, "shard", shard);
    jsonw_end_object(&w);
}

int sweep_write_json(const Sweep *s, BwError *err)
{
    OutFile of;
    int rc = outfile_open(&of, s->out, "sweep.json", err);
    if (rc) return rc;
    sweep_json(s, of.f);
    return outfile_commit(&of, err);
}

/* Text without its "shard" line: equal for the shards and resumptions of one sweep. */
static char *without_shard(const char *text)
{
    char *out = bw_xmalloc(strlen(text) + 1, "sweep_csv.c: out"), *o = out;
    if (!out) return NULL;
    for (const char *p = text; *p;) {
        const char *eol = strchr(p, '\n');
        size_t len = eol ? (size_t)(eol - p + 1) : strlen(p);
        memcpy(o, p, len);
        o[len] = '\0';
        if (!strstr(o, "\"shard\"")) o += len; /* keep the line */
        p += len;
    }
    *o = '\0';
    return out;
}

/* dir/sweep.json without its "shard" line, or NULL if there is none (or no memory). */
char *sweep_json_scenario(const char *dir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/sweep.json", dir);
    FILE *f = fopen(path, "r");
    if (!f) return NULL;
    char *text = bw_xmalloc(JSON_MAX, "sweep_csv.c: text");
    size_t len = text ? fread(text, 1, JSON_MAX - 1, f) : 0;
    fclose(f);
    if (!text) return NULL;
    text[len] = '\0';
    char *scenario = without_shard(text);
    free(text);
    return scenario;
}

/* --resume: the folder must hold this very sweep (same flags, axes, seeds and policies). */
static int check_same_sweep(const Sweep *s, BwError *err)
{
    char *old = sweep_json_scenario(s->out);
    if (!old) return BW_OK; /* interrupted before it was written */
    char *now = NULL, *ours = NULL;
    size_t now_len = 0;
    FILE *mem = open_memstream(&now, &now_len);
    if (mem) {
        sweep_json(s, mem);
        fclose(mem);
        ours = without_shard(now);
    }
    int same = ours && strcmp(old, ours) == 0;
    free(old);
    free(now);
    free(ours);
    if (!same)
        return bw_fail(err, BW_EUSAGE,
                       "--resume: %s holds a different sweep (other flags, values, seeds or "
                       "policies; see its sweep.json)",
                       s->out);
    return BW_OK;
}

/* A sweep killed with SIGKILL while rewriting sweep.csv leaves its temporary file behind. */
static void remove_stale_temporaries(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strncmp(e->d_name, ".sweep.csv.tmp.", 15) == 0 ||
            strncmp(e->d_name, ".sweep.json.tmp.", 16) == 0) {
            char path[8192];
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            unlink(path);
        }
    closedir(d);
}

/* The run a sweep.csv row (split in fld) records, or -1 if it is no run of this sweep. */
static long run_of_row(const Sweep *s, char **fld)
{
    char *end;
    long r = strtol(fld[s->n_axes + SWEEP_CSV_COLUMNS - 1], &end, 10);
    if (*end != '\0' || r < 0 || r >= s->n_runs) return -1;
    /* the run of that index must have these values, seed and policy */
    const Run *want = &s->runs[r];
    for (int a = 0; a < s->n_axes; a++)
        if (strcmp(sweep_point_value(s, want->point, a), fld[a]) != 0) return -1;
    if (atoi(fld[s->n_axes]) != s->seeds[want->seed_i] ||
        strcmp(s->policies[want->policy_i], fld[s->n_axes + 1]) != 0)
        return -1;
    return r;
}

/* A row's figures, as write_row wrote them (x: the fields from status on). */
void sweep_read_figures(RunRow *row, char *const *x)
{
    snprintf(row->status, sizeof row->status, "%s", x[0]);
    row->final = csv_num(x[1]);
    row->best = csv_num(x[2]);
    row->tta = csv_num(x[3]);
    row->bytes = csv_num(x[5]);
    row->sim_time = csv_num(x[7]);
    row->compute = csv_num(x[8]);
    row->compress = csv_num(x[9]);
    row->comm = csv_num(x[10]);
    row->wait = csv_num(x[11]);
    row->steps = atol(x[12]);
}

/* The figures of a row (x: the fields from status on), each in its range: what a run writes,
 * so that an edited row is caught before it is read. */
static int check_figures(char *const *x, const char *where, BwError *err)
{
    static const struct {
        int col; /* from status */
        const char *name;
        double lo, hi;
        int may_be_empty;
    } F[] = {{1, "final_test_accuracy", 0, 1, 0},
             {2, "best_test_accuracy", 0, 1, 0},
             {3, "time_to_accuracy_s", 0, 1e300, 1},
             {4, "speedup", 0, 1e300, 1},
             {5, "bytes_per_worker", 0, 1e300, 0},
             {6, "bytes_ratio", 0, 1e300, 1},
             {7, "sim_time_s", 0, 1e300, 0},
             {8, "compute_s", 0, 1e300, 0},
             {9, "compression_s", 0, 1e300, 0},
             {10, "communication_s", 0, 1e300, 0},
             {11, "wait_s", 0, 1e300, 0},
             {12, "steps", 0, 1e15, 0}};
    if (strcmp(x[0], "completed") != 0 && strcmp(x[0], "reached_target") != 0 &&
        strcmp(x[0], "diverged") != 0)
        return bw_fail(err, BW_EUSAGE,
                       "%s: status '%s': expected completed, reached_target or diverged", where,
                       x[0]);
    for (size_t k = 0; k < sizeof F / sizeof *F; k++) {
        const char *t = x[F[k].col];
        if (!*t && (F[k].may_be_empty || strcmp(x[0], "diverged") == 0)) continue;
        char *end;
        double v = strtod(t, &end);
        if (!*t || *end || !(v >= F[k].lo && v <= F[k].hi))
            return bw_fail(err, BW_EUSAGE, "%s: %s '%s': expected a number in [%g, %g]%s", where,
                           F[k].name, t, F[k].lo, F[k].hi, F[k].may_be_empty ? " or nothing" : "");
    }
    return BW_OK;
}

int sweep_check_row(const Sweep *s, char **fld, int n, const char *where, long *run, BwError *err)
{
    if (n != s->n_axes + SWEEP_CSV_COLUMNS)
        return bw_fail(err, BW_EUSAGE, "%s: expected %d fields, got %d", where,
                       s->n_axes + SWEEP_CSV_COLUMNS, n);
    long r = run_of_row(s, fld);
    if (r < 0)
        return bw_fail(err, BW_EUSAGE,
                       "%s is not a run of this sweep (its run_index, values, seed or policy "
                       "'%s' do not match the sweep's)",
                       where, fld[s->n_axes + 1]);
    *run = r;
    return check_figures(fld + s->n_axes + 3, where, err);
}

/* One row of sweep.csv (line lineno of path): its run is done, with its figures. */
static int read_row(Sweep *s, char *line, const char *path, int lineno, BwError *err)
{
    char *fld[SWEEP_MAX_AXES + 20], where[4200];
    int n = csv_split(line, fld, SWEEP_MAX_AXES + 20);
    long r;
    snprintf(where, sizeof where, "--resume: %s line %d", path, lineno);
    int rc = sweep_check_row(s, fld, n, where, &r, err);
    if (rc) return rc;
    Run *run = &s->runs[r];
    if (run->done)
        return bw_fail(err, BW_EUSAGE, "--resume: %s line %d repeats a run", path, lineno);
    run->done = 1;
    sweep_read_figures(&run->row, fld + s->n_axes + 3);
    return BW_OK;
}

/* Whether the header of f is this sweep's. */
static int same_header(const Sweep *s, FILE *f)
{
    char header[4096], expect[4096];
    FILE *mem = fmemopen(expect, sizeof expect, "w");
    if (!mem) return 0;
    write_header(s, mem);
    fclose(mem);
    return fgets(header, sizeof header, f) && strcmp(header, expect) == 0;
}

/* --resume: marks the runs already in sweep.csv as done, with their figures. */
static int read_finished(Sweep *s, BwError *err)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/sweep.csv", s->out);
    FILE *f = fopen(path, "r");
    if (!f) return BW_OK; /* nothing finished yet */
    int rc = BW_OK, lineno = 1;
    if (!same_header(s, f))
        rc = bw_fail(err, BW_EUSAGE,
                     "--resume: %s has other columns than this sweep (different swept flags?)",
                     path);
    char *line = NULL;
    size_t cap = 0;
    while (rc == BW_OK && getline(&line, &cap, f) > 0) {
        lineno++;
        line[strcspn(line, "\n")] = '\0';
        rc = read_row(s, line, path, lineno, err);
    }
    free(line);
    fclose(f);
    return rc;
}

/* --resume: the folder holds this sweep (or nothing yet); its finished runs are done. */
int sweep_resume(Sweep *s, BwError *err)
{
    remove_stale_temporaries(s->out);
    int rc = check_same_sweep(s, err);
    if (rc == BW_OK) rc = read_finished(s, err);
    return rc;
}
