/* outfile.c: atomic result files (temporary name, fsync, rename) and the JSON writer. */
#include "outfile.h"
#include "plugguard.h"

#include <errno.h>
#include <signal.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static void new_dir_add(const char *dir);

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
            int made = mkdir(path, 0777) == 0;
            if (made) new_dir_add(path);
            if (!made && errno != EEXIST) {
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

/* What a fatal signal must not leave behind, in static storage a handler may read: the
 * temporary files being written, the folders this process created (removed if still empty,
 * newest first), and the child processes running a simulation (sent the signal and waited for
 * first, so that their own temporaries and folders go before this process's folders). */
#define MAX_LIVE     16
#define MAX_NEW_DIRS 16
#define MAX_CHILDREN 64
/* each entry with the process that made it: a fork's child inherits the lists, and must
 * leave its parent's entries to the parent */
static char *volatile live[MAX_LIVE];
static volatile pid_t live_owner[MAX_LIVE];
/* the folders, absolute (a plug-in's chdir() does not move them), in this process's memory or in
 * a page shared with a supervisor (outfile_share_dirs), which removes a dead child's */
typedef struct {
    volatile sig_atomic_t n;
    volatile pid_t owner[MAX_NEW_DIRS];
    char dir[MAX_NEW_DIRS][4096];
} NewDirs;
static NewDirs own_dirs;
static NewDirs *new_dirs = &own_dirs;
static volatile pid_t children[MAX_CHILDREN], children_owner[MAX_CHILDREN];

static void live_add(char *tmp)
{
    for (int i = 0; i < MAX_LIVE; i++)
        if (!live[i]) {
            live_owner[i] = getpid();
            live[i] = tmp;
            return;
        }
}

static void live_remove(const char *tmp)
{
    for (int i = 0; i < MAX_LIVE; i++)
        if (live[i] == tmp) live[i] = NULL;
}

/* Holds the signals whose handlers read the lists off while they change. */
static void hold_signals(sigset_t *saved)
{
    sigset_t fatal;
    sigemptyset(&fatal);
    const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL};
    for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++) sigaddset(&fatal, sigs[i]);
    sigprocmask(SIG_BLOCK, &fatal, saved);
}

void outfile_track(char *tmp)
{
    sigset_t saved;
    hold_signals(&saved);
    live_add(tmp);
    sigprocmask(SIG_SETMASK, &saved, NULL);
}

void outfile_untrack(const char *tmp)
{
    live_remove(tmp);
}

void outdir_track_below(const char *root, const char *dir)
{
    char path[4096];
    if (!root || !dir) return; /* a run that writes no folder (runner_child's dir NULL) */
    size_t r = strlen(root), n = strlen(dir);
    if (n >= sizeof path || n <= r || strncmp(dir, root, r) != 0 || dir[r] != '/') return;
    memcpy(path, dir, n + 1);
    for (size_t i = r + 1; i <= n; i++)
        if (path[i] == '/' || path[i] == '\0') {
            char c = path[i];
            path[i] = '\0';
            new_dir_add(path);
            path[i] = c;
        }
}

void outfile_track_child(pid_t pid)
{
    for (int i = 0; i < MAX_CHILDREN; i++)
        if (!children[i]) {
            children_owner[i] = getpid();
            children[i] = pid;
            return;
        }
}

void outfile_untrack_child(pid_t pid)
{
    for (int i = 0; i < MAX_CHILDREN; i++)
        if (children[i] == pid) children[i] = 0;
}

/* A folder outdir_create made; a fork's child keeps its parent's list (harmless: rmdir leaves
 * a folder that is not empty). */
static void new_dir_add(const char *dir)
{
    sigset_t saved;
    hold_signals(&saved);
    NewDirs *d = new_dirs;
    if (d->n < MAX_NEW_DIRS) {
        char cwd[4096];
        int n = dir[0] != '/' && getcwd(cwd, sizeof cwd)
                    ? snprintf(d->dir[d->n], sizeof d->dir[0], "%s/%s", cwd, dir)
                    : -1;
        if (n < 0 || (size_t)n >= sizeof d->dir[0])
            snprintf(d->dir[d->n], sizeof d->dir[0], "%s", dir);
        d->owner[d->n] = getpid();
        d->n++;
    }
    sigprocmask(SIG_SETMASK, &saved, NULL);
}

void outfile_remove_dirs_of(pid_t pid)
{
    const NewDirs *d = new_dirs;
    for (int i = d->n - 1; i >= 0; i--)
        if (d->owner[i] == pid) rmdir(d->dir[i]);
}

void outfile_share_dirs(void)
{
    NewDirs *p = mmap(NULL, sizeof *p, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return; /* then a dead child's folders stay, as before */
    memcpy((void *)p, (const void *)new_dirs, sizeof *p);
    new_dirs = p;
}

/* Everything above, with async-signal-safe calls only: the children first (sent sig, waited
 * for), then the temporaries, then the empty new folders, newest first. */
static void clean_up(int sig)
{
    const pid_t me = getpid();
    for (int i = 0; i < MAX_CHILDREN; i++)
        if (children[i] > 0 && children_owner[i] == me)
            kill(children[i], sig == SIGINT ? SIGINT : SIGTERM);
    for (int i = 0; i < MAX_CHILDREN; i++)
        if (children[i] > 0 && children_owner[i] == me) waitpid(children[i], NULL, 0);
    for (int i = 0; i < MAX_LIVE; i++)
        if (live[i] && live_owner[i] == me) unlink(live[i]);
    outfile_remove_dirs_of(me);
}

static volatile sig_atomic_t interrupted, hard;
static volatile pid_t main_pid; /* the command's process, not a child running a simulation */

/* Writes s to stderr (async-signal-safe). */
static void say(const char *s)
{
    ssize_t w = write(STDERR_FILENO, s, strlen(s));
    (void)w;
}

static void on_fatal_signal(int sig)
{
    static char plugin[600];
    if (sig == SIGINT && !interrupted && !hard && getpid() == main_pid)
        /* a Ctrl-C before a command's run (or in a command that runs none) */
        say("bellows: interrupted; no file half-written (temporary files and empty new folders "
            "removed)\n");
    if (sig == SIGABRT || sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL) {
        if (plugguard_describe(NULL, plugin, sizeof plugin)) {
            say("bellows: crashed in ");
            say(plugin);
            say(sig == SIGABRT ? " (abort)" : " (a fault)");
            say("; temporary files and empty new folders removed, no results\n");
        } else {
            say("bellows: crashed (a failed assertion, or a library's abort or fault); "
                "temporary files and empty new folders removed, no results\n");
        }
        plugguard_said();
    } else if ((sig == SIGTERM || sig == SIGHUP) &&
               plugguard_describe(NULL, plugin, sizeof plugin)) {
        /* a plug-in's raise(SIGTERM) or kill(getpid(), ...), or one sent while its call ran */
        say("bellows: ");
        say(sig == SIGTERM ? "SIGTERM" : "SIGHUP");
        say(" arrived in ");
        say(plugin);
        say(" (raised by it, or sent to bellows while it ran); temporary files and empty new "
            "folders removed, no results\n");
        plugguard_said();
    }
    clean_up(sig);
    signal(sig, SIG_DFL);
    raise(sig);
}

/* Called at the first SIGINT: a policy running in an embedded interpreter is told there. */
static void (*volatile interrupt_hook)(void);

/* A first SIGINT sets the flag; a second, or one that comes while the process runs code that
 * may never return to look at the flag (outfile_interrupt_hard), kills at once. */
static void on_interrupt(int sig)
{
    if (hard && !interrupted) {
        static const char msg[] = "bellows: interrupted inside a policy's own code (it did not "
                                  "return); nothing written\n";
        ssize_t w = write(STDERR_FILENO, msg, sizeof msg - 1);
        (void)w;
    }
    if (interrupted || hard) on_fatal_signal(sig);
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

void outfile_interrupt_hard(int on)
{
    hard = on;
}

int outfile_interrupted(void)
{
    return interrupted != 0;
}

void outdir_remove_if_new(const char *dir, int existed)
{
    if (dir && !existed) rmdir(dir);  /* fails, harmlessly, unless empty */
    outfile_remove_dirs_of(getpid()); /* and the empty folders made on the way */
}

/* The message and status of an exit() while a run is guarded (outfile_guard_exit). */
static char guard_msg[512];
static volatile sig_atomic_t guarded;

/* An exit() inside a plug-in's call (bellows itself never exits there), or while a run is
 * guarded: a failure that names the plug-in, or the suspects. */
static void on_exit_while_guarded(void)
{
    static char plugin[600];
    if (plugguard_describe(NULL, plugin, sizeof plugin)) {
        say("bellows: ");
        say(plugin);
        say(", called exit() before the run ended; no results (nothing written)\n");
    } else if (guarded) {
        say(guard_msg);
    } else {
        return;
    }
    plugguard_said();
    clean_up(SIGTERM);
    _exit(1);
}

void outfile_exit_now(int status)
{
    clean_up(SIGTERM);
    _exit(status);
}

static void register_exit_guard(void)
{
    static int registered;
    if (!registered) registered = atexit(on_exit_while_guarded) == 0;
}

void outfile_guard_exit(const char *what)
{
    register_exit_guard();
    snprintf(guard_msg, sizeof guard_msg,
             "bellows: %s called exit() before the run ended; no results (nothing written)\n",
             what);
    guard_msg[sizeof guard_msg - 2] = '\n';
    for (char *c = guard_msg; c[1]; c++)
        if ((unsigned char)*c < 0x20) *c = '?';
    guarded = 1;
}

void outfile_unguard_exit(void)
{
    guarded = 0;
}

void outfile_main_process(void)
{
    main_pid = getpid();
}

void outfile_cleanup_on_signals(void)
{
    main_pid = getpid();
    register_exit_guard();
    signal(SIGINT, on_fatal_signal);
    signal(SIGTERM, on_fatal_signal);
    signal(SIGHUP, on_fatal_signal);
    signal(SIGABRT, on_fatal_signal); /* an assert, or a plugin's abort() */
#if !defined(__SANITIZE_ADDRESS__)
    /* a plugin's crash; the sanitizers keep these for their own reports */
    signal(SIGSEGV, on_fatal_signal);
    signal(SIGBUS, on_fatal_signal);
    signal(SIGFPE, on_fatal_signal);
    signal(SIGILL, on_fatal_signal);
#endif
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
    sigset_t saved;
    hold_signals(&saved);
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
