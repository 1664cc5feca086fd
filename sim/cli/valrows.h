/* valrows.h: the published measurements `bellows validate` checks, one row each, read from one
 * CSV file (sim/costs/validation/rows.csv, embedded at build time; or --rows FILE). The header is
 *   id,group,figure,unit,fit,tolerance,source,setting
 * - id: a name of [A-Za-z0-9._-], unique;
 * - group: what the row checks (scaling, compression, ...), for the summary per group;
 * - figure: the measurement, a number > 0, in unit;
 * - unit: img/s (a run's images per simulated second: workers x images per GPU x steps / time)
 *   or ratio (the setting is "A / B", two earlier img/s rows: the quotient of theirs) or TFLOPS
 *   (per GPU: the samples a GPU trains per simulated second x the workload's flops a sample,
 *   forward and backward as its profile counts them, / 1e12; a setting with --workload);
 * - fit: fit (a constant of the profile, or a flag, was set from this row) or predict;
 * - tolerance: the largest |error| allowed, as "20%", or "none" (the row is reported only);
 * - source: where the figure is published (a URL or paper, its table);
 * - setting: bellows run's flags, or several settings separated by ';' whose mean
 *   throughput is the prediction (a row that averages variants, as GRACE's table does).
 * Fields may be double-quoted ("" for a quote); a line that starts with '#' and blank lines
 * are skipped. */
#ifndef BELLOWS_VALROWS_H
#define BELLOWS_VALROWS_H

#include "status.h"

#define VALROW_MAX_ALTS 8
#define VALROW_MAX_ARGS 96

typedef enum { VALROW_IMG_S, VALROW_RATIO, VALROW_TFLOPS } ValUnit;

typedef struct {
    char id[64], group[32], source[512], setting[2048];
    double figure;
    double tolerance; /* < 0: none (reported only) */
    ValUnit unit;
    int fit;         /* 1: fitted from this row */
    int line;        /* in the file */
    int ratio_of[2]; /* VALROW_RATIO: the rows A and B */
    int n_alts;      /* VALROW_IMG_S, VALROW_TFLOPS: settings averaged */
    int first_job;   /* their jobs are first_job .. first_job + n_alts - 1 */
} ValRow;

typedef struct {
    ValRow *rows;
    int n;
    int n_jobs; /* the runs: every setting of every img/s and TFLOPS row */
} ValRows;

/* Parses text (the contents of the file named name) into rows. A malformed row, a bad header or
 * no rows: BW_EUSAGE with "NAME:LINE: field FIELD: ..." in err, and nothing allocated. */
int valrows_parse(const char *name, const char *text, ValRows *out, BwError *err);
void valrows_free(ValRows *r);

/* Setting k (0-based) of row r, split into words (at most VALROW_MAX_ARGS), in buf (which
 * holds the setting's length + 1): the count, or -1 when it has too many. */
int valrows_args(const ValRow *r, int k, char *buf, size_t n, char **argv);

#endif
