/* plots.c: runs gnuplot on a compare folder (see plots.h). The scripts are found in
 * $BELLOWS_PLOTS_DIR or, by default, in the source tree's plots/ folder. */
#include "plots.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef BELLOWS_PLOTS_DIR
#define BELLOWS_PLOTS_DIR "plots"
#endif

static const char *scripts_dir(void)
{
    const char *env = getenv("BELLOWS_PLOTS_DIR");
    return env && *env ? env : BELLOWS_PLOTS_DIR;
}

int plots_available(void)
{
    return system("gnuplot --version >/dev/null 2>&1") == 0;
}

/* Appends s to buf; a name (not gnuplot syntax) may not hold what would end a string. */
static int append_text(char *buf, size_t cap, const char *s, int is_name)
{
    if (is_name && strpbrk(s, "'\"\\\n")) return -1;
    size_t have = strlen(buf), add = strlen(s);
    if (have + add + 1 > cap) return -1;
    memcpy(buf + have, s, add + 1);
    return 0;
}

/* Runs gnuplot on plots/NAME with -e expr. */
static int run_script(const char *name, const char *expr, const char *dir, BwError *err)
{
    char script[4096];
    snprintf(script, sizeof script, "%s/%s", scripts_dir(), name);
    if (access(script, R_OK) != 0)
        return bw_fail(err, BW_ERUNTIME,
                       "plots: %s not found (set BELLOWS_PLOTS_DIR to bellows' plots folder)",
                       script);
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) return bw_fail(err, BW_ERUNTIME, "plots: cannot fork");
    if (pid == 0) {
        execlp("gnuplot", "gnuplot", "-e", expr, script, (char *)NULL);
        _exit(127);
    }
    int st;
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        return bw_fail(err, BW_ERUNTIME, "plots: gnuplot failed on %s (status %d)", dir,
                       WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    return BW_OK;
}

int plots_compare(const char *dir, const char *const *runs, const char *const *labels, int n,
                  BwError *err)
{
    static char expr[16384];
    expr[0] = '\0';
#define SYNTAX(s) append_text(expr, sizeof expr, s, 0)
#define NAME(s)   append_text(expr, sizeof expr, s, 1)
    int bad = SYNTAX("dir='") || NAME(dir) || SYNTAX("'; runs='");
    for (int i = 0; i < n && !bad; i++) bad = (i && SYNTAX(" ")) || NAME(runs[i]);
    bad = bad || SYNTAX("'; labels='");
    for (int i = 0; i < n && !bad; i++) bad = (i && SYNTAX(" ")) || NAME(labels[i]);
    bad = bad || SYNTAX("'");
#undef SYNTAX
#undef NAME
    if (bad) return bw_fail(err, BW_ERUNTIME, "plots: folder or policy names unfit for gnuplot");
    return run_script("compare.gp", expr, dir, err);
}

int plots_sweep(const char *dir, const char *const *labels, int n, BwError *err)
{
    static char expr[16384];
    expr[0] = '\0';
#define SYNTAX(s) append_text(expr, sizeof expr, s, 0)
#define NAME(s)   append_text(expr, sizeof expr, s, 1)
    int bad = SYNTAX("dir='") || NAME(dir) || SYNTAX("'; labels='");
    for (int i = 0; i < n && !bad; i++) bad = (i && SYNTAX(" ")) || NAME(labels[i]);
    bad = bad || SYNTAX("'");
#undef SYNTAX
#undef NAME
    if (bad) return bw_fail(err, BW_ERUNTIME, "plots: folder or policy names unfit for gnuplot");
    return run_script("sweep.gp", expr, dir, err);
}
