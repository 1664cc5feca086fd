/* csv.h: the little CSV the result files need: fields quoted only when they hold a comma, a
 * quote or a newline (RFC 4180), one record per line. */
#ifndef BELLOWS_CSV_H
#define BELLOWS_CSV_H

#include <stdio.h>

/* Writes s as one field, quoted if needed. */
void csv_field(FILE *f, const char *s);

/* Writes s as one field, always quoted, its quotes doubled: a column whose fields are quoted
 * whatever they hold (compare.csv's policy). */
void csv_field_quoted(FILE *f, const char *s);

/* Splits one line into at most max fields, in place (quotes undone, the trailing newline
 * dropped). Returns the count. */
int csv_split(char *line, char **fields, int max);

/* The number in a field; NaN when the field is empty. */
double csv_num(const char *s);

/* The index of the column called name in a split header, or -1. */
int csv_column(char *const *header, int n, const char *name);

#endif
