/* csv.c: see csv.h. */
#include "csv.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void csv_field_quoted(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"') fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

void csv_field(FILE *f, const char *s)
{
    if (strpbrk(s, ",\"\n"))
        csv_field_quoted(f, s);
    else
        fputs(s, f);
}

int csv_split(char *line, char **fields, int max)
{
    line[strcspn(line, "\r\n")] = '\0';
    int n = 0;
    char *p = line;
    while (n < max) {
        char *w = p, *start = p;
        if (*p == '"') {
            p++;
            while (*p) {
                if (*p == '"' && p[1] == '"') {
                    *w++ = '"';
                    p += 2;
                } else if (*p == '"') {
                    p++;
                    break;
                } else {
                    *w++ = *p++;
                }
            }
        }
        while (*p && *p != ',') *w++ = *p++;
        fields[n++] = start;
        int more = *p == ',';
        *w = '\0';
        if (!more) break;
        p++;
    }
    return n;
}

double csv_num(const char *s)
{
    return *s ? strtod(s, NULL) : NAN;
}

int csv_column(char *const *header, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(header[i], name) == 0) return i;
    return -1;
}
