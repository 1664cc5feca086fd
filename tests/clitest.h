/* clitest.h: running the bellows binary from a CMocka suite. A scratch folder per suite (TMP,
 * made by clitest_setup and removed by clitest_teardown); bw("ARGS") runs `bellows ARGS`
 * through the shell with "@" standing for TMP, stdout and stderr captured in TMP/stdout and
 * TMP/stderr; expect_refusal checks a usage error the way every bad input must be answered:
 * exit 2, one line on stderr that starts "bellows: " and holds the needle, and the scratch
 * folder exactly as it was. Header-only; include it after testutil.h. */
#ifndef BELLOWS_CLITEST_H
#define BELLOWS_CLITEST_H

#include <stdarg.h>
#include <sys/wait.h>
#include <unistd.h>

#include "blas_cpu.h"
#include "smalldata.h"

static char TMP[64];

/* Runs the shell command cmd in a process group of its own, so that a test can signal bellows
 * and every process it starts (kill(-pid, ...)); returns its pid. */
static inline pid_t clitest_spawn(const char *cmd)
{
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        setpgid(0, 0);
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    setpgid(pid, pid);
    return pid;
}

/* Sets OPENBLAS_CORETYPE to the kernels bellows pins (blas_cpu.h) where this CPU runs them, so
 * that every bellows the suite starts inherits it instead of exec'ing itself again to set it
 * (a third of test_cli's CPU time); that re-exec is test_cli_results'
 * test_the_blas_kernels_are_pinned. A variable the caller set is kept. */
static inline void clitest_pin_kernels(void)
{
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        setenv("OPENBLAS_CORETYPE", BLAS_CPU_PINNED, 0);
}

static inline int clitest_setup(void **state)
{
    (void)state;
    make_tmpdir(TMP, sizeof TMP);
    clitest_pin_kernels();
    return 0;
}

/* For the cases that only start bellows and read what it says: valgrind (scripts/valgrind.sh)
 * checks the test process alone, and the bellows they start run natively under it, as in
 * build/'s ctest pass (and under the sanitizers in build-asan/'s, where these cases still run):
 * skipped under valgrind. */
#define SKIP_UNDER_VALGRIND()                                                                      \
    do {                                                                                           \
        if (getenv("BELLOWS_VALGRIND")) skip();                                                    \
    } while (0)

/* The packaged Fashion-MNIST's first 4096 training and 1000 test samples in TMP/fmnist
 * (smalldata.h): a run given CLITEST_DATA and at most that many samples is the run on the
 * packaged set, without reading its 60,000 images. A suite that takes it sets up with
 * clitest_setup_data. */
#define CLITEST_DATA "--data-dir @/fmnist"

static inline int clitest_setup_data(void **state)
{
    clitest_setup(state);
    char dir[128];
    snprintf(dir, sizeof dir, "%s/fmnist", TMP);
    smalldata_write(dir, 4096, 1000);
    return 0;
}

static inline int clitest_teardown(void **state)
{
    (void)state;
    rm_tree(TMP);
    return 0;
}

/* fmt's text with every '@' replaced by TMP. */
static inline void clitest_expand(char *out, size_t n, const char *fmt, va_list ap)
{
    char raw[4096];
    vsnprintf(raw, sizeof raw, fmt, ap);
    size_t used = 0;
    for (const char *p = raw; *p && used + 1 < n; p++) {
        if (*p == '@')
            used += (size_t)snprintf(out + used, n - used, "%s", TMP);
        else
            out[used++] = *p;
    }
    out[used < n ? used : n - 1] = '\0';
}

/* text with every '@' replaced by TMP. */
static inline void clitest_expand_text(char *out, size_t n, const char *text)
{
    size_t used = 0;
    for (const char *p = text; *p && used + 1 < n; p++) {
        if (*p == '@')
            used += (size_t)snprintf(out + used, n - used, "%s", TMP);
        else
            out[used++] = *p;
    }
    out[used < n ? used : n - 1] = '\0';
}

/* Runs `bellows ARGS` (printf-style, "@" for TMP); returns its exit status. A death by a
 * signal fails the test. */
#if defined(__GNUC__)
__attribute__((format(printf, 1, 2)))
#endif
static inline int
bw(const char *fmt, ...)
{
    char args[4096], cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    clitest_expand(args, sizeof args, fmt, ap);
    va_end(ap);
    snprintf(cmd, sizeof cmd, "%s %s >%s/stdout 2>%s/stderr </dev/null", BELLOWS_BIN, args, TMP,
             TMP);
    int st = system(cmd);
    if (!WIFEXITED(st)) fail_msg("'%s' did not exit normally (status %d)", args, st);
    return WEXITSTATUS(st);
}

/* TMP/name (name "stdout" or "stderr" after bw, or any file under TMP), malloc'd; NULL if absent.
 */
static inline char *tmp_file(const char *name)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", TMP, name);
    return slurp(path, NULL);
}

/* Writes text into TMP/name. */
static inline void write_tmp(const char *name, const char *text)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", TMP, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* Every path under TMP but the captured outputs, with its size, sorted: what a refusal must
 * leave as it was. */
static inline char *tmp_listing(void)
{
    char cmd[512], path[128];
    snprintf(path, sizeof path, "%s/.listing", TMP);
    snprintf(cmd, sizeof cmd,
             "cd %s && find . -path ./stdout -prune -o -path ./stderr -prune -o -path ./.listing "
             "-prune -o -printf '%%p %%s\\n' | LC_ALL=C sort >.listing",
             TMP);
    assert_int_equal(system(cmd), 0);
    char *text = slurp(path, NULL);
    unlink(path);
    assert_non_null(text);
    return text;
}

/* `bellows ARGS` must be refused as bad input: exit 2, one line on stderr starting "bellows: "
 * and holding needle, nothing under TMP changed. */
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static inline void
expect_refusal(const char *needle, const char *fmt, ...)
{
    char args[4096], want[1024];
    va_list ap;
    va_start(ap, fmt);
    clitest_expand(args, sizeof args, fmt, ap);
    va_end(ap);
    clitest_expand_text(want, sizeof want, needle);
    needle = want;
    char *before = tmp_listing();
    int status = bw("%s", args);
    char *err = tmp_file("stderr");
    char *after = tmp_listing();
    assert_non_null(err);
    if (status != 2) fail_msg("'%s': exit %d, expected 2 (stderr: %s)", args, status, err);
    if (strncmp(err, "bellows: ", 9) != 0 || count_lines(err) != 1)
        fail_msg("'%s': expected one line starting 'bellows: ', got: %s", args, err);
    if (strncmp(err + 9, "bellows", 7) == 0)
        fail_msg("'%s': the message repeats 'bellows': %s", args, err);
    if (!strstr(err, needle)) fail_msg("'%s': the message lacks '%s': %s", args, needle, err);
    if (strcmp(before, after) != 0)
        fail_msg("'%s' changed the scratch folder:\nbefore:\n%s\nafter:\n%s", args, before, after);
    free(before);
    free(err);
    free(after);
}

/* Field k (from 0) of the line of csv that starts with prefix, as a number (NAN if empty). */
static inline double csv_num_at(const char *csv, const char *prefix, int k)
{
    const char *line = strstr(csv, prefix);
    if (!line) fail_msg("no row %s", prefix);
    for (int i = 0; i < k; i++) {
        line = strchr(line, ',');
        if (!line) fail_msg("row %s has no field %d", prefix, k);
        line++;
    }
    if (*line == ',' || *line == '\n') return NAN;
    return strtod(line, NULL);
}

/* A number of summary.json ("key": value) in TMP/dir; NAN for null. */
static inline double summary_num(const char *dir, const char *key)
{
    char name[512], pat[96];
    snprintf(name, sizeof name, "%.400s/summary.json", dir);
    char *text = tmp_file(name);
    if (!text) fail_msg("%s/%s missing", TMP, name);
    snprintf(pat, sizeof pat, "\"%s\": ", key);
    char *at = strstr(text, pat);
    if (!at) fail_msg("%s lacks %s", name, key);
    at += strlen(pat);
    double x = strncmp(at, "null", 4) == 0 ? NAN : strtod(at, NULL);
    free(text);
    return x;
}

#endif
