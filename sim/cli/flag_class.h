/* flag_class.h: what each flag of the simulating commands (run, compare, sweep, replay) changes.
 * A run has two halves (docs/ARCHITECTURE.md): its dynamics (the training: gradients, losses,
 * accuracy, the policy's decisions) and its price (what each step costs on the simulated cluster).
 * A flag of the price leaves the dynamics of a price-blind policy bit for bit as they are, so one
 * training serves every scenario that differs only in price flags (bellows sweep prices them by
 * replaying its trace). Every flag is classed once, here; tests/test_sweep.c fails when a flag of
 * the tables has no class. */
#ifndef BELLOWS_FLAG_CLASS_H
#define BELLOWS_FLAG_CLASS_H

#include "cli.h"

typedef enum {
    FLAG_UNCLASSED = 0, /* not in the list: a new flag someone must class */
    FLAG_DYNAMICS,      /* changes the training: model, data, optimiser, policy, compressor, ... */
    FLAG_PRICE,         /* changes only what steps cost: network, GPU, workload, overlap, ... */
    FLAG_RUN            /* neither: where results go, how many run at once, what is printed */
} FlagClass;

/* The class of flag `name` (without "--"); the model registry's options are dynamics. */
FlagClass flag_class(const char *name);
const char *flag_class_name(FlagClass c); /* "dynamics", "price", "run", "unclassed" */

/* What a flag of text (CLI_STRING) names on disk: the mechanism "inputs are never outputs"
 * (io_check.h) reads it. A new text flag must be classed here (tests/test_cli_io.c fails). */
typedef enum {
    FLAG_FILE_UNCLASSED = 0,
    FLAG_FILE_NONE,     /* no file: a name, a list, a range, a data folder only read */
    FLAG_FILE_IN,       /* a file read (--platform, --trace) */
    FLAG_FILE_IN_NAMED, /* a built-in's name, or a file read: a '/' or .json/.jsonl[.gz] */
    FLAG_FILE_IN_SPECS, /* plug-in specs, NAME or PATH.so|.py[:k=v,...], several with commas */
    FLAG_FILE_IN_LIST,  /* files read, several with commas (compare --traces) */
    FLAG_FILE_OUT,      /* a file written (--timeline, --record-trace) */
    FLAG_FILE_OUT_DIR   /* the folder written into (--out) */
} FlagFile;
FlagFile flag_file(const char *name);

/* Whether `value`, given to flag o (called name), lists several scenarios, as bellows sweep reads
 * a command line: a list "A,B" or an integer range "LO..HI" of a flag that sweep varies. A comma
 * inside one plug-in spec's options (bytescheduler:partition=1048576,credit=2: "credit=2" holds
 * '=' and no ':', so it continues the spec) or inside a value that is one list of its own
 * (--hosts gpu0,gpu1, --slowdown 2,1, --seeds) is not. Returns the number of values: 0 or 1
 * for one scenario (0: not a flag sweep varies), 2 for a range of any length. */
int flag_scenarios(const CliOpt *o, const char *name, const char *value);

#endif
