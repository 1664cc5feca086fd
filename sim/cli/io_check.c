/* io_check.c: inputs are never outputs (io_check.h). Paths are compared as files (device and
 * inode) when both exist, else as absolute paths whose longest existing folder is resolved
 * (realpath: links, "..") and whose rest is normalised by hand. */
#include "io_check.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "flag_class.h"
#include "spec.h"
#include "xalloc.h"

#define IO_PATH 8192

void io_free(IoFiles *io)
{
    for (int i = 0; i < io->n; i++) free(io->f[i].path);
    free(io->f);
    free(io->out_dir);
    memset(io, 0, sizeof *io);
}

static void add(IoFiles *io, const char *label, const char *path, int out)
{
    if (!path || !path[0]) return;
    IoFile *f = bw_xrealloc(io->f, sizeof *f * (size_t)(io->n + 1), "io_check.c: f");
    if (!f) return; /* out of memory: one check fewer, never a false refusal */
    io->f = f;
    f = &io->f[io->n];
    snprintf(f->label, sizeof f->label, "%s", label);
    if (!(f->path = bw_xstrdup(path, "io_check.c: f->path"))) return;
    f->out = out;
    io->n++;
}

static int ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), k = strlen(tail);
    return n >= k && strcmp(s + n - k, tail) == 0;
}

void io_input(IoFiles *io, const char *flag, const char *label, const char *value)
{
    char own[80];
    snprintf(own, sizeof own, "--%s", flag);
    if (!label) label = own;
    if (!value) return;
    switch (flag_file(flag)) {
    case FLAG_FILE_IN:
        add(io, label, value, 0);
        return;
    case FLAG_FILE_IN_NAMED: /* the loaders' rule (costs_load, workload_load) */
        if (strchr(value, '/') || ends_with(value, ".json") || ends_with(value, ".jsonl") ||
            ends_with(value, ".jsonl.gz"))
            add(io, label, value, 0);
        return;
    case FLAG_FILE_IN_SPECS: {
        char items[16][SPEC_MAX_TEXT], path[SPEC_MAX_TEXT];
        int n = 0;
        BwError ignore;
        if (spec_split_list(value, own, items, 16, &n, &ignore) != BW_OK) n = 0;
        for (int i = 0; i < n; i++)
            if (spec_is_path(items[i])) {
                snprintf(path, sizeof path, "%.*s", (int)strcspn(items[i], ":"), items[i]);
                add(io, label, path, 0);
            }
        return;
    }
    case FLAG_FILE_IN_LIST: {     /* each file of the list is read */
        enum { MAX_FILES = 256 }; /* own_traces.h's OWN_TRACES_MAX */
        char(*items)[SPEC_MAX_TEXT] = bw_xcalloc(MAX_FILES, SPEC_MAX_TEXT, "--traces");
        int n = 0;
        BwError ignore;
        if (spec_split_list(value, own, items, MAX_FILES, &n, &ignore) != BW_OK) n = 0;
        for (int i = 0; i < n; i++) add(io, label, items[i], 0);
        free(items);
        return;
    }
    default:
        return;
    }
}

void io_input_file(IoFiles *io, const char *label, const char *path)
{
    add(io, label, path, 0);
}

void io_output(IoFiles *io, const char *label, const char *path)
{
    add(io, label, path, 1);
}

void io_out_dir(IoFiles *io, const char *label, const char *dir)
{
    free(io->out_dir);
    io->out_dir = dir ? bw_xstrdup(dir, "io_check.c: a copy") : NULL;
    snprintf(io->out_label, sizeof io->out_label, "%s", label);
}

void io_flags(IoFiles *io, const CliOpt *opts, int n, const void *values, const char *where)
{
    for (int i = 0; i < n; i++) {
        const CliOpt *o = &opts[i];
        FlagFile role = flag_file(o->name);
        if (role == FLAG_FILE_NONE || o->kind != CLI_STRING) continue;
        const char *v = *(const char *const *)(o->dest ? o->dest : (const char *)values + o->at);
        char label[160];
        if (where) {
            int k = snprintf(label, sizeof label, "%.100skey \"", where);
            for (const char *c = o->name; *c && k + 2 < (int)sizeof label; c++)
                label[k++] = *c == '-' ? '_' : *c;
            snprintf(label + k, sizeof label - (size_t)k, "\"");
        } else {
            snprintf(label, sizeof label, "--%s", o->name);
        }
        if (role == FLAG_FILE_OUT)
            io_output(io, label, v);
        else if (role == FLAG_FILE_OUT_DIR)
            io_out_dir(io, label, v);
        else
            io_input(io, o->name, label, v);
    }
}

/* path as an absolute one: its longest existing folder resolved, the rest normalised. */
static void resolve(const char *path, char *out, size_t n)
{
    char buf[IO_PATH], rest[IO_PATH] = "", real[PATH_MAX], cwd[PATH_MAX];
    if (path[0] == '/' || !getcwd(cwd, sizeof cwd))
        snprintf(buf, sizeof buf, "%s", path);
    else
        snprintf(buf, sizeof buf, "%s/%s", cwd, path);
    while (!realpath(buf, real)) { /* move the last part into rest */
        char *slash = strrchr(buf, '/');
        if (!slash || slash == buf) {
            snprintf(real, sizeof real, "/");
            snprintf(rest, sizeof rest, "%s", buf + (slash ? 1 : 0));
            break;
        }
        char tmp[IO_PATH];
        snprintf(tmp, sizeof tmp, "%s%s%s", slash + 1, rest[0] ? "/" : "", rest);
        snprintf(rest, sizeof rest, "%s", tmp);
        *slash = '\0';
    }
    snprintf(out, n, "%s", strcmp(real, "/") ? real : "");
    for (char *part = strtok(rest, "/"); part; part = strtok(NULL, "/")) {
        if (strcmp(part, ".") == 0) continue;
        if (strcmp(part, "..") == 0) {
            char *slash = strrchr(out, '/');
            if (slash) *slash = '\0';
            continue;
        }
        size_t used = strlen(out);
        snprintf(out + used, n - used, "/%s", part);
    }
    if (!out[0]) snprintf(out, n, "/");
}

/* Whether files a and b (resolved ra, rb) are one. */
static int same_file(const char *a, const char *b, const char *ra, const char *rb)
{
    struct stat sa, sb;
    if (stat(a, &sa) == 0 && stat(b, &sb) == 0)
        return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    return strcmp(ra, rb) == 0;
}

int io_check(const IoFiles *io, BwError *err)
{
    static char ra[IO_PATH], rb[IO_PATH], rdir[IO_PATH];
    if (io->out_dir) resolve(io->out_dir, rdir, sizeof rdir);
    const size_t dir_len = io->out_dir ? strlen(rdir) : 0;
    for (int i = 0; i < io->n; i++) {
        const IoFile *a = &io->f[i];
        resolve(a->path, ra, sizeof ra);
        if (!a->out && io->out_dir && strncmp(ra, rdir, dir_len) == 0 &&
            (ra[dir_len] == '/' || ra[dir_len] == '\0' || dir_len == 1))
            return bw_fail(err, BW_EUSAGE,
                           "%s %s: lies inside %s %s, where bellows writes its results (--force "
                           "writes over files of the same names); keep inputs outside the "
                           "output folder",
                           a->label, a->path, io->out_label, io->out_dir);
        for (int j = 0; a->out && j < io->n; j++) {
            const IoFile *b = &io->f[j];
            if (j == i || (b->out && j < i)) continue; /* each pair of outputs once */
            resolve(b->path, rb, sizeof rb);
            if (same_file(a->path, b->path, ra, rb))
                return bw_fail(err, BW_EUSAGE, "%s %s: is the same file as %s's %s; %s", a->label,
                               a->path, b->label, b->path,
                               b->out ? "give each a file of its own"
                                      : "bellows would write over its input: choose another "
                                        "name");
        }
    }
    return BW_OK;
}
