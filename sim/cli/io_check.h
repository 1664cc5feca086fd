/* io_check.h: inputs are never outputs. Every file flag is classed once as an input or an
 * output (flag_file, flag_class.c); a command gathers the files its flags and arguments name
 * (IoFiles), and io_check refuses, before anything is written and whatever --force says: an
 * output that is the same file as an input or as another output (device and inode when both
 * exist, the resolved path otherwise), and an input that lies inside the folder the command
 * writes into (--out), where --force writes over files of the same names. A usage error names
 * both flags. Used by run, compare, replay, sweep, reproduce and cluster. */
#ifndef BELLOWS_IO_CHECK_H
#define BELLOWS_IO_CHECK_H

#include "cli.h"
#include "status.h"

typedef struct {
    char label[160]; /* "--costs", "cluster file", "c.json: job \"a\": key \"costs\"" */
    char *path;      /* as given (owned) */
    int out;         /* 1: written; 0: read */
} IoFile;

typedef struct {
    IoFile *f;
    int n;
    char out_label[160]; /* the output folder's flag, "--out" */
    char *out_dir;       /* NULL: none (owned) */
} IoFiles;

/* A zeroed IoFiles is empty; io_free empties it again. */
void io_free(IoFiles *io);
/* The files that value names when given to input flag `flag` (without "--"): a plug-in spec's
 * path (a list of specs: each), a profile's file (a built-in name is none), a file. label:
 * how messages name it (NULL: "--flag"). */
void io_input(IoFiles *io, const char *flag, const char *label, const char *value);
/* An input that is a file whatever it is called (the cluster file). */
void io_input_file(IoFiles *io, const char *label, const char *path);
/* A file the command writes. */
void io_output(IoFiles *io, const char *label, const char *path);
/* The folder the command writes into. */
void io_out_dir(IoFiles *io, const char *label, const char *dir);
/* Every file flag of a parsed table by its class (values as cli_parse filled them; opts address
 * them by offset or by dest). where: NULL for a command line ("--costs"), or how a file's keys
 * are named, "c.json: job \"a\": " (then "key \"costs\"" follows). */
void io_flags(IoFiles *io, const CliOpt *opts, int n, const void *values, const char *where);
/* The refusals above; BW_OK or BW_EUSAGE. */
int io_check(const IoFiles *io, BwError *err);

#endif
