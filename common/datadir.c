/* datadir.c: the data folder beside the executable (datadir.h). Linux: the executable's path
 * is /proc/self/exe. */
#include "datadir.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef BELLOWS_DATADIR_REL
#define BELLOWS_DATADIR_REL "../share/bellows"
#endif

static int is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int datadir_find(const char *sub, char *out, size_t n)
{
    char exe[4096];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) out[0] = '\0';
    if (len <= 0) return 0;
    exe[len] = '\0';
    char *slash = strrchr(exe, '/');
    if (!slash) return 0;
    *slash = '\0';
    static const char *const rel[] = {BELLOWS_DATADIR_REL, "share/bellows"}; /* installed, build */
    for (size_t i = 0; i < sizeof rel / sizeof *rel; i++) {
        int w = snprintf(out, n, "%s/%s/%s", exe, rel[i], sub);
        if (w > 0 && (size_t)w < n && is_dir(out)) return 1;
    }
    if (n > 0) out[0] = '\0';
    return 0;
}
