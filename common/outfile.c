/* outfile.c: atomic result files (temporary name, fsync, rename) and the JSON writer. */
#include "outfile.h"

#include <errno.h>
#include <signal.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int outdir_create(const char *dir, BwError *err)
{
    char path[4096];
    size_t len = strlen(dir);
    if (len == 0 || len >= sizeof path) return bw_fail(err, BW_EUSAGE, "--out: bad folder name");
    memcpy(path, dir, len + 1);
    for (char *p = path + 1;; p++) {
        if (*p == '/' || *p == '\0') {
            char saved = *p;
            *p = '\0';
            if (mkdir(path, 0777) != 0 && errno != EEXIST) {
                /* A path the user cannot have (no permission, a file in the way, read-only) is
                 * bad input; a machine problem (disk full, I/O) is a runtime failure. */
                int machine = errno == ENOSPC || errno == EIO || errno == EDQUOT || errno == ENOMEM;
                return bw_fail(err, machine ? BW_ERUNTIME : BW_EUSAGE,
                               "--out: cannot create folder '%s': %s", path, strerror(errno));
            }
            *p = saved;
            if (saved == '\0') break;
        }
    }
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return bw_fail(err, BW_EUSAGE, "--out: '%s' is not a folder", dir);
    return BW_OK;
}

/* The temporary files being written, so that a signal handler can remove them. */
#define MAX_LIVE 8
static char *volatile live[MAX_LIVE];

static void live_add(char *tmp)
{
    for (int i = 0; i < MAX_LIVE; i++)
        if (!live[i]) {
            live[i] = tmp;
            return;
        }
}

static void live_remove(const char *tmp)
{
    for (int i = 0; i < MAX_LIVE; i++)
        if (live[i] == tmp) live[i] = NULL;
}

static void on_fatal_signal(int sig)
{
    for (int i = 0; i < MAX_LIVE; i++)
        if (live[i]) unlink(live[i]); /* async-signal-safe */
    signal(sig, SIG_DFL);
    raise(sig);
}

static volatile sig_atomic_t interrupted;
/* Called at the first SIGINT: a policy running in an embedded interpreter is told there. */
static void (*volatile interrupt_hook)(void);

static void on_interrupt(int sig)
{
    if (interrupted) on_fatal_signal(sig);
    interrupted = 1;
    if (interrupt_hook) interrupt_hook();
}

void outfile_on_interrupt(void (*hook)(void))
{
    interrupt_hook = hook;
}

void outfile_interrupt_softly(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_interrupt;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
}

int outfile_interrupted(void)
{
    return interrupted != 0;
}

void outdir_remove_if_new(const char *dir, int existed)
{
    if (dir && !existed) rmdir(dir); /* fails, harmlessly, unless empty */
}

void outfile_cleanup_on_signals(void)
{
    signal(SIGINT, on_fatal_signal);
    signal(SIGTERM, on_fatal_signal);
    signal(SIGHUP, on_fatal_signal);
    /* past a file-size limit, writes fail with EFBIG (a reported error) instead of a kill */
    signal(SIGXFSZ, SIG_IGN);
}

int outfile_open(OutFile *of, const char *dir, const char *name, BwError *err)
{
    memset(of, 0, sizeof *of);
    int n1 = snprintf(of->path, sizeof of->path, "%s/%s", dir, name);
    int n2 = snprintf(of->tmp, sizeof of->tmp, "%s/.%s.tmp.XXXXXX", dir, name);
    if (n1 < 0 || n2 < 0 || (size_t)n1 >= sizeof of->path || (size_t)n2 >= sizeof of->tmp)
        return bw_fail(err, BW_EUSAGE, "--out: path too long");
    /* A signal between creating the temporary and registering it would leave it behind:
     * hold the fatal signals off across the two (they are delivered right after). */
    sigset_t fatal, saved;
    sigemptyset(&fatal);
    sigaddset(&fatal, SIGINT);
    sigaddset(&fatal, SIGTERM);
    sigaddset(&fatal, SIGHUP);
    sigprocmask(SIG_BLOCK, &fatal, &saved);
    int fd = mkstemp(of->tmp);
    int mkstemp_errno = errno;
    if (fd >= 0) live_add(of->tmp);
    sigprocmask(SIG_SETMASK, &saved, NULL);
    if (fd < 0) {
        of->tmp[0] = '\0';
        return bw_fail(err, BW_ERUNTIME, "%s: cannot create: %s", of->path,
                       strerror(mkstemp_errno));
    }
    fchmod(fd, 0644);
    of->f = fdopen(fd, "w");
    if (!of->f) {
        close(fd);
        live_remove(of->tmp);
        unlink(of->tmp);
        of->tmp[0] = '\0';
        return bw_fail(err, BW_ERUNTIME, "%s: cannot open: %s", of->path, strerror(errno));
    }
    return BW_OK;
}

int outfile_commit(OutFile *of, BwError *err)
{
    int failed = ferror(of->f) || fflush(of->f) != 0 || fsync(fileno(of->f)) != 0;
    int saved = errno;
    if (fclose(of->f) != 0 && !failed) {
        failed = 1;
        saved = errno;
    }
    of->f = NULL;
    if (!failed && rename(of->tmp, of->path) == 0) {
        live_remove(of->tmp);
        of->tmp[0] = '\0';
        return BW_OK;
    }
    if (!failed) saved = errno;
    unlink(of->tmp);
    live_remove(of->tmp);
    of->tmp[0] = '\0';
    return bw_fail(err, BW_ERUNTIME, "%s: write failed: %s", of->path,
                   saved ? strerror(saved) : "I/O error");
}

void outfile_abort(OutFile *of)
{
    if (of->f) fclose(of->f);
    of->f = NULL;
    if (of->tmp[0]) unlink(of->tmp);
    live_remove(of->tmp);
    of->tmp[0] = '\0';
}

/* ---- JSON ---- */

static void jsonw_indent(JsonW *w)
{
    fputc('\n', w->f);
    for (int i = 0; i < w->depth; i++) fputs("  ", w->f);
}

static void jsonw_quoted(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"':
            fputs("\\\"", f);
            break;
        case '\\':
            fputs("\\\\", f);
            break;
        case '\n':
            fputs("\\n", f);
            break;
        case '\t':
            fputs("\\t", f);
            break;
        case '\r':
            fputs("\\r", f);
            break;
        default:
            if (*p < 0x20)
                fprintf(f, "\\u%04x", *p);
            else
                fputc(*p, f);
        }
    }
    fputc('"', f);
}

/* Writes the separator, indentation and key of the next member. */
static void jsonw_key(JsonW *w, const char *key)
{
    if (w->depth > 0) {
        if (!w->first[w->depth]) fputc(',', w->f);
        w->first[w->depth] = 0;
        jsonw_indent(w);
    }
    if (key) {
        jsonw_quoted(w->f, key);
        fputs(": ", w->f);
    }
}

void jsonw_begin(JsonW *w, FILE *f)
{
    memset(w, 0, sizeof *w);
    w->f = f;
}

static void jsonw_open(JsonW *w, const char *key, char c)
{
    jsonw_key(w, key);
    fputc(c, w->f);
    w->depth++;
    w->first[w->depth] = 1;
}

static void jsonw_close(JsonW *w, char c)
{
    int empty = w->first[w->depth];
    w->depth--;
    if (!empty) jsonw_indent(w);
    fputc(c, w->f);
    if (w->depth == 0) fputc('\n', w->f);
}

void jsonw_object(JsonW *w, const char *key)
{
    jsonw_open(w, key, '{');
}
void jsonw_end_object(JsonW *w)
{
    jsonw_close(w, '}');
}
void jsonw_array(JsonW *w, const char *key)
{
    jsonw_open(w, key, '[');
}
void jsonw_end_array(JsonW *w)
{
    jsonw_close(w, ']');
}

void jsonw_string(JsonW *w, const char *key, const char *v)
{
    jsonw_key(w, key);
    if (v)
        jsonw_quoted(w->f, v);
    else
        fputs("null", w->f);
}

void jsonw_double(JsonW *w, const char *key, double v)
{
    jsonw_key(w, key);
    if (!isfinite(v)) {
        fputs("null", w->f);
        return;
    }
    /* the shortest of 15 or 17 digits that reads back as v: exact (bytes, simulated seconds)
     * without printing 0.1 as 0.10000000000000001 */
    char text[32];
    snprintf(text, sizeof text, "%.15g", v);
    if (strtod(text, NULL) != v) snprintf(text, sizeof text, "%.17g", v);
    fputs(text, w->f);
}

void jsonw_long(JsonW *w, const char *key, long long v)
{
    jsonw_key(w, key);
    fprintf(w->f, "%lld", v);
}

void jsonw_bool(JsonW *w, const char *key, int v)
{
    jsonw_key(w, key);
    fputs(v ? "true" : "false", w->f);
}

void jsonw_null(JsonW *w, const char *key)
{
    jsonw_key(w, key);
    fputs("null", w->f);
}
