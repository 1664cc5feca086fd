/* cells.c: the sweeps' files read back into cells, one per (experiment, setting, role,
 * bandwidth) with a value per seed, and the statistics over seeds the report prints. Only files
 * the sweeps wrote are read (sweep.csv, and each run's evals.csv and steps.csv), so the report
 * can be rebuilt at any time and a missing or unfinished run is a missing value (NaN). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_statistics_double.h>

#include "csv.h"
#include "reproduce_internal.h"

/* The columns of sweep.csv the cells take, by index in its header (-1: absent). */
enum {
    COL_BW,
    COL_SEED,
    COL_POLICY,
    COL_FOLDER,
    COL_STATUS,
    COL_FINAL,
    COL_TTA,
    COL_BYTES,
    COL_TIME,
    COL_COMPUTE,
    COL_COMPRESS,
    COL_COMM,
    COL_WAIT,
    COL_STEPS,
    N_COLS
};
static const char *const COL_NAME[N_COLS] = {"bandwidth",
                                             "seed",
                                             "policy",
                                             "folder",
                                             "status",
                                             "final_test_accuracy",
                                             "time_to_accuracy_s",
                                             "bytes_per_worker",
                                             "sim_time_s",
                                             "compute_s",
                                             "compression_s",
                                             "communication_s",
                                             "wait_s",
                                             "steps"};

static void cells_clear(Repro *r)
{
    for (int e = 0; e < N_EXPS; e++)
        for (int s = 0; s < MAX_SETTINGS; s++)
            for (int k = 0; k < MAX_ROLES; k++)
                for (int b = 0; b < MAX_BWS; b++) {
                    Cell *c = &r->cells[e][s][k][b];
                    memset(c, 0, sizeof *c);
                    for (int i = 0; i < MAX_SEEDS; i++)
                        c->final[i] = c->tta[i] = c->bytes[i] = c->time[i] = c->compute[i] =
                            c->compress[i] = c->comm[i] = c->wait[i] = c->steps[i] = c->loss[i] =
                                c->tta_step[i] = c->tta_bytes[i] = NAN;
                }
}

/* From a run's evals.csv: the step and bytes of the first evaluation at or above target, and the
 * training loss at the last evaluation. */
static void reached_at(const char *run_dir, double target, double *step, double *bytes,
                       double *loss)
{
    *step = *bytes = *loss = NAN;
    char path[4200], line[4096];
    snprintf(path, sizeof path, "%s/evals.csv", run_dir);
    FILE *f = fopen(path, "r");
    if (!f) return;
    char *fld[16];
    int c_acc = -1, c_step = -1, c_bytes = -1, c_loss = -1, first = 1;
    while (fgets(line, sizeof line, f)) {
        int n = csv_split(line, fld, 16);
        if (first) {
            c_acc = csv_column(fld, n, "test_accuracy");
            c_step = csv_column(fld, n, "step");
            c_bytes = csv_column(fld, n, "bytes_rank0");
            c_loss = csv_column(fld, n, "train_loss");
            if (c_bytes < 0) /* a folder written before the column's rename */
                c_bytes = csv_column(fld, n, "bytes_per_worker");
            first = 0;
            if (c_acc < 0 || c_step < 0 || c_bytes < 0) break;
            continue;
        }
        if (c_loss >= 0 && n > c_loss) *loss = csv_num(fld[c_loss]);
        if (isnan(*step) && n > c_acc && n > c_step && n > c_bytes &&
            csv_num(fld[c_acc]) >= target) {
            *step = csv_num(fld[c_step]);
            *bytes = csv_num(fld[c_bytes]);
        }
    }
    fclose(f);
}

static int seed_index(const Repro *r, int seed)
{
    for (int k = 0; k < r->seeds.n; k++)
        if (r->seeds.v[k] == seed) return k;
    return -1;
}

/* One row x of a sweep.csv of job j (in sweep_dir, under --out) into its cell. Returns 1 if it
 * belongs to the reproduction (its bandwidth, policy and seed are the job's), 0 if it was skipped.
 */
static int read_row(Repro *r, const Job *j, const char *sweep_dir, char **x, const int *col)
{
    int b = -1, k = -1, si = seed_index(r, atoi(x[col[COL_SEED]]));
    for (int i = 0; i < MAX_BWS; i++)
        if (strcmp(x[col[COL_BW]], PAPERS_BW[j->exp][i]) == 0) b = i;
    for (int i = 0; i < j->n_pol; i++)
        if (strcmp(x[col[COL_POLICY]], j->policy[i]) == 0) k = i;
    if (b < 0 || k < 0 || si < 0) return 0;
    Cell *c = &r->cells[j->exp][j->setting][j->role[k]][b];
    snprintf(c->policy, sizeof c->policy, "%s", j->policy[k]);
    c->diverged += strcmp(x[col[COL_STATUS]], "diverged") == 0;
    c->final[si] = csv_num(x[col[COL_FINAL]]);
    c->tta[si] = csv_num(x[col[COL_TTA]]);
    c->bytes[si] = csv_num(x[col[COL_BYTES]]);
    c->time[si] = csv_num(x[col[COL_TIME]]);
    c->compute[si] = csv_num(x[col[COL_COMPUTE]]);
    /* a sweep written before the column existed charged no compression */
    c->compress[si] = col[COL_COMPRESS] >= 0 ? csv_num(x[col[COL_COMPRESS]]) : 0.0;
    c->comm[si] = csv_num(x[col[COL_COMM]]);
    c->wait[si] = csv_num(x[col[COL_WAIT]]);
    c->steps[si] = csv_num(x[col[COL_STEPS]]);
    char run_dir[4096];
    const char *folder = x[col[COL_FOLDER]];
    if (snprintf(run_dir, sizeof run_dir, "%s/%s/%s", r->out, sweep_dir, folder) >=
        (int)sizeof run_dir)
        return 0;
    double target = papers_setting(j->exp, j->setting)->sim->target[r->size];
    reached_at(run_dir, target, &c->tta_step[si], &c->tta_bytes[si], &c->loss[si]);
    if (si == 0 &&
        snprintf(c->first_run, sizeof c->first_run, "%.200s/%.300s", sweep_dir, folder) < 0)
        c->first_run[0] = '\0';
    c->n++;
    return 1;
}

/* Reads a sweep.csv of job j (sweep_dir, under --out) into the cells. Returns the runs read. */
static int read_sweep(Repro *r, const Job *j, const char *sweep_dir)
{
    char path[8300], line[8192];
    snprintf(path, sizeof path, "%s/%s/sweep.csv", r->out, sweep_dir);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char *h[32], *x[32], head[8192];
    if (!fgets(head, sizeof head, f)) {
        fclose(f);
        return 0;
    }
    int nh = csv_split(head, h, 32), col[N_COLS];
    for (int i = 0; i < N_COLS; i++) col[i] = csv_column(h, nh, COL_NAME[i]);
    int read = 0;
    while (fgets(line, sizeof line, f)) {
        int n = csv_split(line, x, 32);
        if (n < nh || col[COL_BW] < 0 || col[COL_STEPS] < 0) continue;
        read += read_row(r, j, sweep_dir, x, col);
    }
    fclose(f);
    return read;
}

/* A job's runs as priced at every bandwidth (price.c), one pricing sweep per seed and policy, or
 * its sweep's own runs at every bandwidth.
 * Returns the runs read (a run priced at two bandwidths counts twice). */
static int read_job(Repro *r, const Job *j)
{
    int read = 0;
    char dir[256];
    if (!j->priced) {
        snprintf(dir, sizeof dir, "sweeps/%s", j->folder);
        return read_sweep(r, j, dir);
    }
    for (int i = 0; i < r->seeds.n; i++)
        for (int k = 0; k < j->n_pol; k++) {
            jobs_price_folder(j, r->seeds.v[i], k, dir, sizeof dir);
            read += read_sweep(r, j, dir);
        }
    return read;
}

int cells_read(Repro *r)
{
    cells_clear(r);
    int runs = 0;
    for (int i = 0; i < r->n_jobs; i++) runs += read_job(r, &r->job[i]);
    return runs;
}

/* Mean of the finite values (NaN if none); *k receives their count. */
double cells_mean(const Repro *r, const double *v, int *k)
{
    double s = 0;
    int n = 0;
    for (int i = 0; i < r->seeds.n; i++)
        if (isfinite(v[i])) s += v[i], n++;
    if (k) *k = n;
    return n ? s / n : NAN;
}

double cells_sd(const Repro *r, const double *v)
{
    double x[MAX_SEEDS];
    int n = 0;
    for (int i = 0; i < r->seeds.n; i++)
        if (isfinite(v[i])) x[n++] = v[i];
    return n > 1 ? gsl_stats_sd(x, 1, (size_t)n) : NAN;
}

/* ratio of means a/b over the seeds */
double cells_ratio(const Repro *r, const double *a, const double *b)
{
    return cells_mean(r, a, NULL) / cells_mean(r, b, NULL);
}

/* Accordion's regime in each epoch of a run, from the policy_state column of its steps.csv
 * (the second step of each epoch, after the lr-decay rule and the last check took effect):
 * "CC CC NN ..." (C critical, N normal; one letter per matrix layer, or one for the batch). */
void cells_regimes(const Repro *r, const char *run_dir, char *buf, size_t n)
{
    char path[4200], line[4096];
    snprintf(path, sizeof path, "%s/%s/steps.csv", r->out, run_dir);
    buf[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f) return;
    char *fld[32];
    int c_epoch = -1, c_state = -1, first = 1, epoch = -1, seen = 0;
    size_t k = 0;
    while (fgets(line, sizeof line, f)) {
        int m = csv_split(line, fld, 32);
        if (first) {
            c_epoch = csv_column(fld, m, "epoch");
            c_state = csv_column(fld, m, "policy_state");
            first = 0;
            if (c_epoch < 0 || c_state < 0) break;
            continue;
        }
        if (m <= c_state) continue;
        int e = atoi(fld[c_epoch]);
        if (e != epoch) epoch = e, seen = 0;
        if (++seen != 2) continue;
        const char *st = fld[c_state];
        int batch = strstr(st, "batch=") != NULL;
        if (k + 2 < n && k) buf[k++] = ' ';
        for (const char *q = st; *q && k + 1 < n; q++) {
            if (*q == 'C' || *q == 'N') buf[k++] = *q;
            if (batch) break;
        }
        buf[k] = '\0';
    }
    fclose(f);
}
