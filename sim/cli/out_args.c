/* out_args.c: where a simulating command writes (run, compare, replay, sweep, bench): --out,
 * --force and --quiet, their table beside run_args.c's (RunOpts offsets, after its flags in the
 * help, as before they moved here), and the checks of an output path before anything runs:
 * --out's folder (run_check_out) and a file flag's (run_check_out_file: --record-trace,
 * --timeline). compare's default --out and sweep's help are run_args.c's shared_defaults. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "run_args.h"

#define OUT_OPT(name, kind, field, ...)                                                            \
    {                                                                                              \
        name, kind, NULL, __VA_ARGS__, offsetof(RunOpts, field)                                    \
    }

const CliOpt out_cli_opts[] = {
    OUT_OPT("out", CLI_STRING, out, NULL, NULL,
            "output folder, new or empty; without it nothing is "
            "written, the results are printed only (a path: --out none is a folder)",
            0, 0, NULL, 0),
    OUT_OPT("force", CLI_FLAG, force, NULL, NULL,
            "write into a non-empty --out: files of the same names are overwritten, nothing is "
            "removed (folders of an earlier, different command stay)",
            0, 0, NULL, 0),
    OUT_OPT("quiet", CLI_FLAG, quiet, NULL, NULL, "no progress line on stderr", 0, 0, NULL, 0),
};
const int out_cli_n_opts = (int)(sizeof out_cli_opts / sizeof *out_cli_opts);

/* Whether out can be written: the folder itself, or the nearest folder above it that exists
 * (where it will be made); a usage error now, not a failure after the simulation. */
static int check_writable(const char *out, BwError *err)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", out);
    struct stat st;
    while (stat(dir, &st) != 0) { /* up to the nearest folder that exists */
        char *slash = strrchr(dir, '/');
        if (!slash) {
            snprintf(dir, sizeof dir, ".");
            break;
        }
        if (slash == dir) {
            dir[1] = '\0';
            break;
        }
        *slash = '\0';
    }
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) return BW_OK; /* outdir_create says so */
    char probe[4200]; /* a file made and removed at once: permissions, a read-only disk */
    snprintf(probe, sizeof probe, "%.4000s/.bellows-probe.XXXXXX", dir);
    int fd = mkstemp(probe);
    if (fd < 0)
        return bw_fail(err, BW_EUSAGE, "--out %s: cannot write into %s: %s", out, dir,
                       strerror(errno));
    close(fd);
    unlink(probe);
    return BW_OK;
}

int run_check_out(const char *out, int force, BwError *err)
{
    int rc = check_writable(out, err);
    if (rc) return rc;
    DIR *d = opendir(out);
    if (!d) return BW_OK; /* new (or not a folder: outdir_create says so) */
    int full = 0;
    for (struct dirent *e; !full && (e = readdir(d)) != NULL;)
        full = strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(d);
    if (full && !force)
        return bw_fail(err, BW_EUSAGE,
                       "--out %s: the folder is not empty (earlier results?); choose a new "
                       "folder, or add --force to write over it",
                       out);
    return BW_OK;
}

/* --record-trace PATH (or --timeline PATH, flag): the file is written beside its final name,
 * so that folder must take new files, and PATH must not be a folder (found only at the end,
 * when the file is renamed onto it). example: a file name to suggest. */
int run_check_out_file(const char *flag, const char *path, const char *example, BwError *err)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash == dir) /* a file in / */
        dir[1] = '\0';
    else if (slash)
        *slash = '\0';
    else
        snprintf(dir, sizeof dir, ".");
    struct stat st;
    const char *why = NULL;
    if (!path[0])
        why = "empty name";
    else if (stat(dir, &st) != 0)
        why = strerror(errno);
    else if (!S_ISDIR(st.st_mode))
        why = "not a folder";
    else if (access(dir, W_OK) != 0)
        why = strerror(errno);
    if (why)
        return bw_fail(err, BW_EUSAGE, "%s %s: cannot write into %s: %s", flag, path, dir, why);
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        return bw_fail(err, BW_EUSAGE, "%s %s: is a folder; expected a file name such as %s/%s",
                       flag, path, path, example);
    return BW_OK;
}
