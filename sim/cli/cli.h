/* cli.h: table-driven command-line flags. Each command describes its flags once, in a CliOpt
 * table; the same table fills the destinations (defaults first), validates every value with
 * its range, and prints --help with each flag's default and unit. Errors name the flag and what
 * was expected, and are BW_EUSAGE (exit status 2). */
#ifndef BELLOWS_CLI_H
#define BELLOWS_CLI_H

#include <stddef.h>
#include <stdio.h>

#include "status.h"

typedef enum {
    CLI_INT,         /* int; min..max */
    CLI_LONG,        /* long (for seeds); min..max */
    CLI_DOUBLE,      /* double; min..max, finite */
    CLI_STRING,      /* const char * (points into argv or the default) */
    CLI_CHOICE,      /* const char *, one of choices ("a|b|c") */
    CLI_FLAG,        /* int set to 1, takes no value */
    CLI_INT_LIST,    /* CliIntList, comma-separated; each in min..max */
    CLI_DOUBLE_LIST, /* CliDoubleList, comma-separated; each in min..max */
    CLI_BANDWIDTH,   /* double, bytes per second, from "10Gbps" etc. (units.h) */
    CLI_DURATION,    /* double, seconds, from "5us" etc. */
    CLI_FLOPS,       /* double, flop/s, from "15.7T" etc. */
} CliKind;

#define CLI_LIST_MAX 16
typedef struct {
    int n;
    int v[CLI_LIST_MAX];
} CliIntList;
typedef struct {
    int n;
    double v[CLI_LIST_MAX];
} CliDoubleList;

/* An option's value goes to dest, or, when dest is NULL, to `at` bytes into the values struct
 * handed to cli_parse: shared tables (train_args, cluster_args, run_args) use offsets, so one
 * table serves any number of parses into state that the caller owns and passes. */
typedef struct {
    const char *name; /* without the leading "--" */
    CliKind kind;
    void *dest;
    const char *def;  /* default, as it would be typed; NULL: none (strings stay NULL) */
    const char *unit; /* shown in --help after the value, e.g. "samples"; may be NULL */
    const char *help;
    double min, max;     /* for numbers and list items; for quantities with units (bandwidth,
                            duration, flop rate) too when max is above 0 */
    const char *choices; /* for CLI_CHOICE */
    int max_items;       /* for lists (0: CLI_LIST_MAX) */
    size_t at;           /* with dest NULL: offset of the value in the values struct */
} CliOpt;

/* Returned by cli_parse when --help or -h was given. */
#define CLI_HELP (-1)

/* Applies defaults, then parses argv[0..argc) (flags only; "--name value" or "--name=value")
 * into each option's dest, or into values (offsets, see CliOpt.at; may be NULL when every
 * option has a dest). set[i] (may be NULL) receives 1 for every flag given explicitly. Returns
 * BW_OK, CLI_HELP or BW_EUSAGE with err naming the command and the flag. */
int cli_parse(const char *command, const CliOpt *opts, int n_opts, void *values, int argc,
              char **argv, int *set, BwError *err);

/* Whether the flag called name was given explicitly, from the set[] that cli_parse filled. */
int cli_given(const CliOpt *opts, int n_opts, const int *set, const char *name);

/* Prints "usage" and "about", then every flag with its value type, unit, default and help; with
 * BELLOWS_HELP_FORMAT=tsv in the environment, the same as tab-separated lines for the build's
 * man page and bash completion (scripts/gen_docs.sh). */
void cli_print_help(FILE *out, const char *usage, const char *about, const CliOpt *opts,
                    int n_opts);

/* Copies n tables into one, for commands that combine shared flag tables (out must hold them
 * all); the offsets of table t move by bases[t] (bases may be NULL), so that the tables of
 * several structs address one struct that holds them all. Returns the total. */
int cli_concat(CliOpt *out, int cap, const CliOpt *const *tables, const int *counts,
               const size_t *bases, int n);

/* Parsers shared with other modules; they name `flag` in their errors. */
int cli_parse_int(const char *flag, const char *text, double min, double max, int *out,
                  BwError *err);
int cli_parse_double(const char *flag, const char *text, double min, double max, double *out,
                     BwError *err);

#endif
