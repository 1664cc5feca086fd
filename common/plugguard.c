/* plugguard.c: see plugguard.h. */
#include "plugguard.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

struct PlugGuard {
    volatile sig_atomic_t running; /* a plug-in call is under way */
    volatile sig_atomic_t said;    /* the process said how it ended */
    char kind[16], flag[16], spec[400], phase[64];
};

static PlugGuard own;
static PlugGuard *cur = &own;

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
    cur->running = 0; /* a handler never reads a record half written */
    copy(cur->kind, sizeof cur->kind, kind);
    copy(cur->flag, sizeof cur->flag, flag);
    copy(cur->spec, sizeof cur->spec, spec);
    copy(cur->phase, sizeof cur->phase, phase);
    cur->running = 1;
}

void plugguard_leave(void)
{
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
