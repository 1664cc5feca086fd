/* cli.c: the flag parser and help printer behind every bellows command (see cli.h). Numbers
 * must be the whole token (no trailing junk), finite, and in range. */
#include "cli.h"

#include "units.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int cli_parse_double(const char *flag, const char *text, double min, double max, double *out,
                     BwError *err)
{
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (end == text || *end != '\0' || errno == ERANGE || !isfinite(v))
        return bw_fail(err, BW_EUSAGE, "--%s: expected a number, got '%s'", flag, text);
    if (v < min || v > max)
        return bw_fail(err, BW_EUSAGE, "--%s: expected a number in [%g, %g], got '%s'", flag, min,
                       max, text);
    *out = v;
    return BW_OK;
}

static int parse_long(const char *flag, const char *text, double min, double max, long *out,
                      BwError *err)
{
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (end == text || *end != '\0' || errno == ERANGE)
        return bw_fail(err, BW_EUSAGE, "--%s: expected an integer, got '%s'", flag, text);
    if ((double)v < min || (double)v > max)
        return bw_fail(err, BW_EUSAGE, "--%s: expected an integer in [%.0f, %.0f], got '%s'", flag,
                       min, max, text);
    *out = v;
    return BW_OK;
}

int cli_parse_int(const char *flag, const char *text, double min, double max, int *out,
                  BwError *err)
{
    long v = 0;
    int rc = parse_long(flag, text, min, max, &v, err);
    if (rc == BW_OK) *out = (int)v;
    return rc;
}

static int choice_ok(const char *choices, const char *v)
{
    size_t len = strlen(v);
    for (const char *p = choices; *p;) {
        const char *bar = strchr(p, '|');
        size_t n = bar ? (size_t)(bar - p) : strlen(p);
        if (n == len && strncmp(p, v, n) == 0 && len > 0) return 1;
        p += n + (bar ? 1 : 0);
    }
    return 0;
}

/* Splits a comma-separated list and parses each item. */
/* Where an option's value goes: its own pointer, or its offset into the parse's values. */
static void *dest_of(const CliOpt *o, void *values)
{
    assert(o->dest || values);
    return o->dest ? o->dest : (char *)values + o->at;
}

static int parse_list(const CliOpt *o, void *dest, const char *text, BwError *err)
{
    int max_items = o->max_items > 0 ? o->max_items : CLI_LIST_MAX;
    int n = 0;
    char item[128];
    const char *p = text;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (len == 0 || len >= sizeof item)
            return bw_fail(err, BW_EUSAGE, "--%s: expected a comma-separated list, got '%s'",
                           o->name, text);
        if (n == max_items)
            return bw_fail(err, BW_EUSAGE, "--%s: at most %d items, got '%s'", o->name, max_items,
                           text);
        memcpy(item, p, len);
        item[len] = '\0';
        int rc;
        if (o->kind == CLI_INT_LIST)
            rc = cli_parse_int(o->name, item, o->min, o->max, &((CliIntList *)dest)->v[n], err);
        else
            rc = cli_parse_double(o->name, item, o->min, o->max, &((CliDoubleList *)dest)->v[n],
                                  err);
        if (rc) return rc;
        n++;
        if (!comma) break;
        p = comma + 1;
    }
    if (o->kind == CLI_INT_LIST)
        ((CliIntList *)dest)->n = n;
    else
        ((CliDoubleList *)dest)->n = n;
    return BW_OK;
}

/* A quantity with units (units.h), then its range [min, max] when the table gives one (max
 * above 0), said in the flag's units. */
static int assign_with_units(const CliOpt *o, double *dest, const char *text, BwError *err)
{
    double v;
    int rc = o->kind == CLI_BANDWIDTH  ? units_parse_bandwidth(o->name, text, &v, err)
             : o->kind == CLI_DURATION ? units_parse_duration(o->name, text, &v, err)
                                       : units_parse_flops(o->name, text, &v, err);
    if (rc) return rc;
    if (o->max > 0 && (v < o->min || v > o->max)) {
        char lo[32], hi[32];
        if (o->kind == CLI_BANDWIDTH) {
            units_format_bandwidth(o->min, lo, sizeof lo);
            units_format_bandwidth(o->max, hi, sizeof hi);
        } else if (o->kind == CLI_DURATION) {
            units_format_duration(o->min, lo, sizeof lo);
            units_format_duration(o->max, hi, sizeof hi);
        } else {
            snprintf(lo, sizeof lo, "%g", o->min);
            snprintf(hi, sizeof hi, "%g", o->max);
        }
        return bw_fail(err, BW_EUSAGE,
                       "--%s: expected %s to %s (what bellows simulates with representable times), "
                       "got '%s'",
                       o->name, lo, hi, text);
    }
    *dest = v;
    return BW_OK;
}

static int assign(const CliOpt *o, void *dest, const char *text, BwError *err)
{
    switch (o->kind) {
    case CLI_INT:
        return cli_parse_int(o->name, text, o->min, o->max, dest, err);
    case CLI_LONG:
        return parse_long(o->name, text, o->min, o->max, dest, err);
    case CLI_DOUBLE:
        return cli_parse_double(o->name, text, o->min, o->max, dest, err);
    case CLI_STRING:
        if (text[0] == '\0')
            return bw_fail(err, BW_EUSAGE, "--%s: expected a value, got an empty string", o->name);
        *(const char **)dest = text;
        return BW_OK;
    case CLI_CHOICE:
        if (!choice_ok(o->choices, text))
            return bw_fail(err, BW_EUSAGE, "--%s: expected one of %s, got '%s'", o->name,
                           o->choices, text);
        *(const char **)dest = text;
        return BW_OK;
    case CLI_FLAG:
        *(int *)dest = 1;
        return BW_OK;
    case CLI_INT_LIST:
    case CLI_DOUBLE_LIST:
        return parse_list(o, dest, text, err);
    case CLI_BANDWIDTH:
    case CLI_DURATION:
    case CLI_FLOPS:
        return assign_with_units(o, dest, text, err);
    }
    return BW_EUSAGE;
}

static int has_flag(const CliOpt *opts, int n_opts, const char *name)
{
    for (int i = 0; i < n_opts; i++)
        if (strcmp(opts[i].name, name) == 0) return 1;
    return 0;
}

int cli_parse(const char *command, const CliOpt *opts, int n_opts, void *values, int argc,
              char **argv, int *set, BwError *err)
{
    for (int i = 0; i < n_opts; i++) {
        const CliOpt *o = &opts[i];
        void *dest = dest_of(o, values);
        if (set) set[i] = 0;
        if (o->kind == CLI_FLAG) *(int *)dest = 0;
        if (o->kind == CLI_STRING || o->kind == CLI_CHOICE) *(const char **)dest = o->def;
        if (o->kind == CLI_INT_LIST) ((CliIntList *)dest)->n = 0;
        if (o->kind == CLI_DOUBLE_LIST) ((CliDoubleList *)dest)->n = 0;
        if (o->def && o->kind != CLI_STRING && o->kind != CLI_FLAG) {
            int rc = assign(o, dest, o->def, err);
            assert(rc == BW_OK && "a flag table's default does not parse");
            (void)rc;
        }
    }
    /* messages start with the command's own name: main puts "bellows: " before them */
    const char *cmd = strncmp(command, "bellows ", 8) == 0 ? command + 8 : command;
    for (int a = 0; a < argc; a++) {
        const char *arg = argv[a];
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) return CLI_HELP;
        char jobs[64]; /* -j N and -jN: --jobs, where the command has it */
        if (strncmp(arg, "-j", 2) == 0 && has_flag(opts, n_opts, "jobs")) {
            if (arg[2])
                snprintf(jobs, sizeof jobs, "--jobs=%.50s", arg + 2);
            else
                snprintf(jobs, sizeof jobs, "--jobs");
            arg = jobs;
        }
        if (strncmp(arg, "--", 2) != 0 || arg[2] == '\0')
            return bw_fail(err, BW_EUSAGE,
                           "%s: unexpected argument '%s' (flags start with --; see %s --help)", cmd,
                           arg, command);
        const char *name = arg + 2;
        const char *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        int found = -1;
        for (int i = 0; i < n_opts; i++)
            if (strlen(opts[i].name) == len && strncmp(opts[i].name, name, len) == 0) found = i;
        if (found < 0)
            return bw_fail(err, BW_EUSAGE, "%s: unknown flag '--%.*s' (see %s --help)", cmd,
                           (int)len, name, command);
        const CliOpt *o = &opts[found];
        if (set && set[found]) return bw_fail(err, BW_EUSAGE, "--%s: given twice", o->name);
        const char *value = NULL;
        if (o->kind == CLI_FLAG) {
            if (eq) return bw_fail(err, BW_EUSAGE, "--%s: takes no value", o->name);
        } else if (eq) {
            value = eq + 1;
        } else {
            if (a + 1 >= argc) return bw_fail(err, BW_EUSAGE, "--%s: missing value", o->name);
            value = argv[++a];
        }
        int rc = assign(o, dest_of(o, values), value, err);
        if (rc) return rc;
        if (set) set[found] = 1;
    }
    return BW_OK;
}

int cli_given(const CliOpt *opts, int n_opts, const int *set, const char *name)
{
    for (int i = 0; i < n_opts; i++)
        if (strcmp(opts[i].name, name) == 0) return set[i];
    assert(!"cli_given: no such flag in the table");
    return 0;
}

static const char *kind_meta(const CliOpt *o)
{
    switch (o->kind) {
    case CLI_INT:
    case CLI_LONG:
        return "N";
    case CLI_DOUBLE:
        return "X";
    case CLI_STRING:
        return "TEXT";
    case CLI_CHOICE:
        return o->choices;
    case CLI_FLAG:
        return "";
    case CLI_INT_LIST:
        return "N,N,...";
    case CLI_DOUBLE_LIST:
        return "X,X,...";
    case CLI_BANDWIDTH:
        return "BW";
    case CLI_DURATION:
        return "TIME";
    case CLI_FLOPS:
        return "RATE";
    }
    return "";
}

/* The same table as tab-separated lines (BELLOWS_HELP_FORMAT=tsv), which scripts/gen_docs.sh
 * turns into the man page and the bash completion at build time: "usage\tTEXT", one
 * "about\tLINE" per line of about, then "flag\tNAME\tMETA\tUNIT\tDEFAULT\tHELP" per flag. */
static void print_help_tsv(FILE *out, const char *usage, const char *about, const CliOpt *opts,
                           int n_opts)
{
    fprintf(out, "usage\t%s\n", usage);
    for (const char *line = about; *line;) {
        size_t n = strcspn(line, "\n");
        fprintf(out, "about\t%.*s\n", (int)n, line);
        line += n + (line[n] ? 1 : 0);
    }
    for (int i = 0; i < n_opts; i++) {
        const CliOpt *o = &opts[i];
        fprintf(out, "flag\t%s\t%s\t%s\t%s\t%s\n", o->name, kind_meta(o), o->unit ? o->unit : "",
                o->def ? o->def : "", o->help);
    }
    fprintf(out, "flag\thelp\t\t\t\tshow this help and exit\n");
}

void cli_print_help(FILE *out, const char *usage, const char *about, const CliOpt *opts, int n_opts)
{
    const char *format = getenv("BELLOWS_HELP_FORMAT");
    if (format && strcmp(format, "tsv") == 0) {
        print_help_tsv(out, usage, about, opts, n_opts);
        return;
    }
    fprintf(out, "usage: %s\n\n%s\n\nflags:\n", usage, about);
    for (int i = 0; i < n_opts; i++) {
        const CliOpt *o = &opts[i];
        char left[96];
        const char *meta = kind_meta(o);
        snprintf(left, sizeof left, "--%s%s%s", o->name, *meta ? " " : "", meta);
        fprintf(out, "  %-28s %s", left, o->help);
        if (o->unit) fprintf(out, " [%s]", o->unit);
        if (o->def) fprintf(out, " (default: %s)", o->def);
        fputc('\n', out);
    }
    fprintf(out, "  %-28s %s\n", "--help", "show this help and exit");
}

int cli_concat(CliOpt *out, int cap, const CliOpt *const *tables, const int *counts,
               const size_t *bases, int n)
{
    int total = 0;
    (void)cap; /* read by the assert only */
    for (int t = 0; t < n; t++) {
        assert(total + counts[t] <= cap);
        memcpy(out + total, tables[t], sizeof(CliOpt) * (size_t)counts[t]);
        for (int i = 0; bases && i < counts[t]; i++)
            if (!out[total + i].dest) out[total + i].at += bases[t];
        total += counts[t];
    }
    return total;
}
