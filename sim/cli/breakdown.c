/* breakdown.c: compare's time_breakdown.csv, the data of its time_breakdown plot: where each
 * policy's simulated time went up to the target accuracy, the time the table's tta_s reports
 * (see breakdown.h). Each run's steps.csv gives rank 0's compute, compression, communication
 * and waiting seconds of every step; their sum over the steps that end by the run's time to
 * accuracy is that time. */
#include "breakdown.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "csv.h"
#include "outfile.h"

enum { B_COMPUTE, B_COMPRESS, B_COMM, B_WAIT, B_N };

/* Rank 0's books over the steps of dir/steps.csv that end by until_s (NAN: every step) into
 * books[B_N]; -1 if the file cannot be read. */
static int sum_steps(const char *dir, double until_s, double *books)
{
    char path[4400], line[4096];
    snprintf(path, sizeof path, "%.4200s/steps.csv", dir);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    static const char *const names[B_N] = {"compute_s", "compression_s", "communication_s",
                                           "wait_s"};
    char *fields[32];
    int col[B_N], end = -1, ok = fgets(line, sizeof line, f) != NULL;
    int n = ok ? csv_split(line, fields, 32) : 0;
    for (int b = 0; b < B_N; b++) ok = ok && (col[b] = csv_column(fields, n, names[b])) >= 0;
    ok = ok && (end = csv_column(fields, n, "end_s")) >= 0;
    memset(books, 0, sizeof(double) * B_N);
    /* the step that reached the target ends at the evaluation's time (until_s comes through
     * the runner's pipe with 9 digits: a relative margin of 1e-8 takes that step, not the next) */
    const double until = isfinite(until_s) ? until_s * (1 + 1e-8) : INFINITY;
    while (ok && fgets(line, sizeof line, f)) {
        n = csv_split(line, fields, 32);
        if (n <= end || n <= col[B_WAIT] || csv_num(fields[end]) > until) break;
        for (int b = 0; b < B_N; b++) books[b] += csv_num(fields[col[b]]);
    }
    fclose(f);
    return ok ? 0 : -1;
}

int breakdown_books(const char *dir, double until_s, double books[4])
{
    return sum_steps(dir, until_s, books);
}

int breakdown_write(const char *out, const Breakdown *b, BwError *err)
{
    OutFile of;
    int rc = outfile_open(&of, out, "time_breakdown.csv", err);
    if (rc) return rc;
    fputs("policy,seeds_to_target,seeds,compute_s,compression_s,communication_s,wait_s\n", of.f);
    for (int k = 0; k < b->n_pol; k++) {
        double mean[B_N] = {0}, books[B_N];
        int used = 0, reached = 0;
        for (int i = 0; i < b->n_seeds; i++) {
            const int j = i * b->n_pol + k;
            char dir[4200];
            snprintf(dir, sizeof dir, "%s/%s", out, b->folders[j]);
            if (b->failed[j] || sum_steps(dir, b->tta[j], books) != 0) continue;
            used++;
            reached += isfinite(b->tta[j]);
            for (int x = 0; x < B_N; x++) mean[x] += books[x];
        }
        csv_field(of.f, b->labels[k]);
        fprintf(of.f, ",%d,%d", reached, used);
        for (int x = 0; x < B_N; x++) fprintf(of.f, ",%.9g", used ? mean[x] / used : NAN);
        fputc('\n', of.f);
    }
    return outfile_commit(&of, err);
}
