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

/* Runs gnuplot on plots/NAME with -e "scriptdir='...'; " expr. */
static int run_script(const char *name, const char *expr_in, const char *dir, BwError *err)
{
    static char expr[20000];
    if (strpbrk(scripts_dir(), "'\"\\\n"))
        return bw_fail(err, BW_ERUNTIME, "plots: the scripts' folder name is unfit for gnuplot");
    snprintf(expr, sizeof expr, "scriptdir='%s'; %s", scripts_dir(), expr_in);
    char script[4096];
    snprintf(script, sizeof script, "%s/%s", scripts_dir(), name);
    if (access(script, R_OK) != 0)
        return bw_fail(err, BW_ERUNTIME,
                       "plots: %s not found (set BELLOWS_PLOTS_DIR to bellows' plots folder)",
                       script);
    /* gnuplot's chatter (warnings about flat ranges) is kept and shown only if it fails */
    FILE *log = tmpfile();
    if (!log) return bw_fail(err, BW_ERUNTIME, "plots: cannot create a temporary file");
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        fclose(log);
        return bw_fail(err, BW_ERUNTIME, "plots: cannot fork");
    }
    if (pid == 0) {
        dup2(fileno(log), STDERR_FILENO);
        execlp("gnuplot", "gnuplot", "-e", expr, script, (char *)NULL);
        _exit(127);
    }
    int st;
    int failed = waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0;
    char last[512] = "", line[512];
    rewind(log);
    while (fgets(line, sizeof line, log))
        if (strspn(line, " \t\n") < strlen(line)) snprintf(last, sizeof last, "%s", line);
    fclose(log);
    last[strcspn(last, "\n")] = '\0';
    if (failed)
        return bw_fail(err, BW_ERUNTIME, "plots: gnuplot failed on %s: %s", dir,
                       last[0] ? last : "(no message)");
    return BW_OK;
}

static int runs_script(const char *script, const char *dir, const char *const *runs,
                       const char *const *labels, int n, double target, BwError *err);

int plots_compare(const char *dir, const char *const *runs, const char *const *labels, int n,
                  double target, BwError *err)
{
    return runs_script("compare.gp", dir, runs, labels, n, target, err);
}

int plots_curves(const char *dir, const char *const *runs, const char *const *labels, int n,
                 double target, BwError *err)
{
    return runs_script("curves.gp", dir, runs, labels, n, target, err);
}

/* A script over several run folders of dir, labelled. */
static int runs_script(const char *script, const char *dir, const char *const *runs,
                       const char *const *labels, int n, double target, BwError *err)
{
    static char expr[16384];
    expr[0] = '\0';
#define SYNTAX(s) append_text(expr, sizeof expr, s, 0)
#define NAME(s)   append_text(expr, sizeof expr, s, 1)
    int bad = SYNTAX("dir='") || NAME(dir) || SYNTAX("'; runs='");
    for (int i = 0; i < n && !bad; i++) bad = (i && SYNTAX(" ")) || NAME(runs[i]);
    bad = bad || SYNTAX("'; labels='");
    for (int i = 0; i < n && !bad; i++) bad = (i && SYNTAX(" ")) || NAME(labels[i]);
    char tail[64];
    snprintf(tail, sizeof tail, "'; target=%.6g", target > 0 ? target : 0.0);
    bad = bad || SYNTAX(tail);
#undef SYNTAX
#undef NAME
    if (bad) return bw_fail(err, BW_ERUNTIME, "plots: folder or policy names unfit for gnuplot");
    return run_script(script, expr, dir, err);
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

int plots_run(const char *dir, double target, BwError *err)
{
    static char expr[8192];
    expr[0] = '\0';
    char tail[64];
    snprintf(tail, sizeof tail, "'; target=%.6g", target > 0 ? target : 0.0);
    if (append_text(expr, sizeof expr, "dir='", 0) || append_text(expr, sizeof expr, dir, 1) ||
        append_text(expr, sizeof expr, tail, 0))
        return bw_fail(err, BW_ERUNTIME, "plots: folder name unfit for gnuplot");
    return run_script("run.gp", expr, dir, err);
}
