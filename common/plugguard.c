/* plugguard.c: see plugguard.h. */
#include "plugguard.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

struct PlugGuard {
    volatile sig_atomic_t running; /* a plug-in call is under way */
    volatile sig_atomic_t said;    /* the process said how it ended */
    char kind[16], flag[16], spec[400], phase[64];
};

static PlugGuard own;
static PlugGuard *cur = &own;

/* The process's working folder when the first plug-in call began (bellows never changes it):
 * restored after every plug-in call, so that a plug-in's chdir() moves no output or input. */
static int start_cwd = -1;

/* A plug-in's fork(): its child is ended at once (a copy of bellows, its simulation's threads
 * gone, would block for good), and the plug-in that forked is kept here for the run to fail
 * with (plugguard_forked). */
static char forked_what[600];
static volatile sig_atomic_t forked;
/* In this process's own memory, copied by the fork: the record may be in a page shared with a
 * parent, which goes on (and leaves the plug-in's call) while the child starts. */
static volatile sig_atomic_t forking_in_plugin;

static void on_fork_prepare(void)
{
    forking_in_plugin = cur->running;
    if (cur->running && !forked) forked = plugguard_describe(NULL, forked_what, sizeof forked_what);
}

static void on_fork_parent(void)
{
    forking_in_plugin = 0;
}

static void on_fork_child(void)
{
    if (forking_in_plugin) _exit(127);
}

/* Once, at the first plug-in call: the folder to restore and the fork handlers. */
static void watch_plugins(void)
{
    static int watching;
    if (watching) return;
    watching = 1;
    start_cwd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
#if defined(O_PATH)
    if (start_cwd < 0) start_cwd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC); /* unreadable */
#endif
    pthread_atfork(on_fork_prepare, on_fork_parent, on_fork_child);
}

int plugguard_forked(char *buf, size_t n)
{
    if (!forked) return 0;
    snprintf(buf, n, "%s", forked_what);
    return 1;
}

PlugGuard *plugguard_share(void)
{
    void *p =
        mmap(NULL, sizeof(PlugGuard), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return NULL;
    memset(p, 0, sizeof(PlugGuard));
    return p;
}

void plugguard_free(PlugGuard *g)
{
    if (g) munmap(g, sizeof *g);
}

void plugguard_use(PlugGuard *g)
{
    PlugGuard *next = g ? g : &own;
    *next = *cur; /* a call under way stays recorded */
    cur = next;
}

static void copy(char *dst, size_t n, const char *src)
{
    size_t i = 0;
    for (; src && src[i] && i + 1 < n; i++) dst[i] = src[i];
    dst[i] = '\0';
}

void plugguard_enter(const char *kind, const char *flag, const char *spec, const char *phase)
{
    watch_plugins();
    cur->running = 0; /* a handler never reads a record half written */
    copy(cur->kind, sizeof cur->kind, kind);
    copy(cur->flag, sizeof cur->flag, flag);
    copy(cur->spec, sizeof cur->spec, spec);
    copy(cur->phase, sizeof cur->phase, phase);
    cur->running = 1;
}

void plugguard_leave(void)
{
    if (cur->running && start_cwd >= 0 && fchdir(start_cwd) != 0) {
        /* the folder bellows started in is gone: nothing to restore */
    }
    cur->running = 0;
}

/* Appends src to buf[n] at *at, control characters as '?'. */
static void append(char *buf, size_t n, size_t *at, const char *src)
{
    for (size_t i = 0; src[i] && *at + 1 < n; i++)
        buf[(*at)++] = (unsigned char)src[i] < 0x20 || src[i] == 0x7f ? '?' : src[i];
    buf[*at] = '\0';
}

int plugguard_describe(const PlugGuard *g, char *buf, size_t n)
{
    const PlugGuard *r = g ? g : cur;
    size_t at = 0;
    if (!n) return 0;
    buf[0] = '\0';
    if (!r->running) return 0;
    append(buf, n, &at, "the ");
    append(buf, n, &at, r->kind);
    append(buf, n, &at, " plug-in ");
    append(buf, n, &at, r->spec);
    append(buf, n, &at, " (");
    append(buf, n, &at, r->flag);
    append(buf, n, &at, "), in its ");
    append(buf, n, &at, r->phase);
    return 1;
}

void plugguard_said(void)
{
    cur->said = 1;
}

int plugguard_was_said(const PlugGuard *g)
{
    return (g ? g : cur)->said != 0;
}
