/* spec.h: plug-in specifications written on the command line as NAME[:key=value,...]
 * (`--policy accordion:eta=0.5,interval=2`, `--compressor topk:ef=0`). A plug-in declares its
 * options in a table of SpecOpt; spec_resolve checks a parsed Spec against that table (unknown
 * keys, bad numbers, out-of-range values and unknown choices are usage errors naming the flag,
 * the key and what was expected), and the same table prints the `bellows policies` listing. */
#ifndef BELLOWS_SPEC_H
#define BELLOWS_SPEC_H

#include <stdio.h>

#include "status.h"

#define SPEC_MAX_KV   16
#define SPEC_MAX_TEXT 256
#define SPEC_MAX_NAME 32 /* names and keys are shorter */

typedef struct {
    char flag[32]; /* the flag it came from, for messages: "--policy" */
    char name[SPEC_MAX_NAME];
    char path[SPEC_MAX_TEXT]; /* spec_parse_plugin: a plugin's file ("" for a name) */
    int n;
    char key[SPEC_MAX_KV][32];
    char val[SPEC_MAX_KV][64];
} Spec;

/* Parses "name" or "name:k=v,k=v". Names and keys are [a-z0-9_-]+ (a key typed in upper case
 * is read in lower: "H=50" is "h=50"); a key may appear once. */
int spec_parse(const char *text, const char *flag, Spec *out, BwError *err);

/* The same, and also "path[:k=v,...]" where the name part (up to the first ':') holds a '/' or
 * ends in ".so" or ".py": a plugin's or Python policy's file, kept in path (name stays ""). A
 * path is made of [A-Za-z0-9._/+-] (so it is a safe CSV field and, with '/' replaced, a safe
 * folder name), at most SPEC_MAX_TEXT - 1 bytes. Other names are checked as spec_parse checks
 * them. */
int spec_parse_plugin(const char *text, const char *flag, Spec *out, BwError *err);

/* 1 if the name part of text (up to the first ':') holds a '/' or ends in ".so" or ".py". */
int spec_is_path(const char *text);

/* Splits a list of specs separated by commas, where an item holding '=' and no ':' continues
 * the previous spec's options: "sync,static:level=4,accordion:critical=2,normal=1" gives
 * "sync", "static:level=4", "accordion:critical=2,normal=1". Returns the count in *n. */
int spec_split_list(const char *text, const char *flag, char items[][SPEC_MAX_TEXT], int max,
                    int *n, BwError *err);

/* An item of compare's --policies, POLICY[@COMPRESSOR] ("static:level=2@powersgd",
 * "static:level=0.01@topk:ef=0"): the policy's spec into policy and the compressor's into
 * compressor ("" without an '@': the run's --compressor). Each holds SPEC_MAX_TEXT bytes. An
 * empty part, or a second '@', is a usage error naming flag. */
int spec_split_compressor(const char *item, const char *flag, char *policy, char *compressor,
                          BwError *err);

typedef enum { SPEC_DOUBLE, SPEC_INT, SPEC_CHOICE } SpecType;

typedef struct {
    const char *key;
    SpecType type;
    const char *def;     /* default, as text; NULL: none (the plug-in decides, say so in help) */
    double lo, hi;       /* inclusive range of numbers */
    const char *choices; /* SPEC_CHOICE: "rank0|all" */
    const char *help;
} SpecOpt;

/* The number of entries of a SpecOpt table, from its size: a plug-in writes
 * `.opts = OPTS, .n_opts = SPEC_N(OPTS)`, so a count cannot drift from its table. opts must be
 * the array itself; given a pointer, gcc and clang warn (-Wsizeof-pointer-div, in -Wall). */
#define SPEC_N(opts) ((int)(sizeof(opts) / sizeof *(opts)))

typedef struct {
    int set;    /* 1 if given or defaulted, 0 if no default and not given */
    double num; /* SPEC_DOUBLE and SPEC_INT */
    int choice; /* SPEC_CHOICE: index into choices */
} SpecVal;

/* Fills vals[n_opts] from the spec's keys and the table's defaults. */
int spec_resolve(const Spec *s, const SpecOpt *opts, int n_opts, SpecVal *vals, BwError *err);
/* The same, with messages that start "LABEL: " instead of "FLAG NAME: ". */
int spec_resolve_as(const Spec *s, const char *label, const SpecOpt *opts, int n_opts,
                    SpecVal *vals, BwError *err);

/* s is a name of [a-z0-9_-], 1 to SPEC_MAX_NAME - 1 bytes: a plug-in's name or an option's key. */
int spec_name_ok(const char *s);
/* Entry i of a plug-in's option table, the table converted to SpecOpt up to i: its key a name
 * declared once, its help, its choices "a|b|..." or a finite range, and a default the option
 * accepts. type_known: the plug-in's own type was DOUBLE, INT or CHOICE (else raw_type, its
 * number, is in the message). Usage errors start "WHAT: option ...". */
int spec_opt_check(const SpecOpt *opts, int i, int raw_type, int type_known, const char *what,
                   BwError *err);

/* "    key=default  help" lines, one per option. */
void spec_print_opts(FILE *out, const SpecOpt *opts, int n_opts);

/* Formats a spec back as text (name:k=v,... in the given order). */
void spec_format(const Spec *s, char *buf, size_t n);

#endif
