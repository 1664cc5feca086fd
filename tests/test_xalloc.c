/* test_xalloc.c: common/xalloc.h, the one way an allocation with no error to return fails. A
 * child asks for what no machine has; the parent reads its stderr and its exit status. */
#include <dirent.h>
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

#include "outfile.h"
#include "status.h"
#include "testutil.h"
#include "xalloc.h"

/* Under AddressSanitizer an impossible size returns NULL, as libc's malloc does, instead of
 * ASan's own report (test.sh's ASAN_OPTIONS does not set this flag). */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
    return "allocator_may_return_null=1";
}

enum { ASK_MALLOC, ASK_CALLOC, ASK_REALLOC, ASK_REALLOC_N };

/* In a child: an open result file's temporary in dir (if dir), then the impossible request. */
static void child_asks(int how, const char *dir)
{
    OutFile of;
    if (dir && outfile_open(&of, dir, "result.csv", NULL) != BW_OK) _exit(90);
    void *keep = bw_xmalloc(16, "a test's first block"); /* a small one succeeds */
    switch (how) {
    case ASK_MALLOC:
        (void)bw_xmalloc(SIZE_MAX / 2, "a test's malloc");
        break;
    case ASK_CALLOC:
        (void)bw_xcalloc(SIZE_MAX / 16, 8, "a test's calloc");
        break;
    case ASK_REALLOC:
        keep = bw_xrealloc(keep, SIZE_MAX / 2, "a test's realloc");
        break;
    case ASK_REALLOC_N:
        keep = bw_xrealloc_n(keep, SIZE_MAX / 4, 8, "a test's array");
        break;
    }
    free(keep);
    _exit(91); /* not reached when the helper works */
}

/* Runs child_asks(how, dir) in a child; its stderr into err, its wait status returned. */
static int run_child(int how, const char *dir, char *err, size_t n)
{
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        dup2(fds[1], STDERR_FILENO);
        child_asks(how, dir);
    }
    close(fds[1]);
    size_t len = 0;
    ssize_t got;
    while (len + 1 < n && (got = read(fds[0], err + len, n - 1 - len)) > 0) len += (size_t)got;
    err[len] = '\0';
    close(fds[0]);
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    return st;
}

static void expect(int how, const char *line)
{
    char err[1024];
    int st = run_child(how, NULL, err, sizeof err);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), BW_ERUNTIME);
    if (!strstr(err, line)) fail_msg("stderr: \"%s\", expected the line \"%s\"", err, line);
}

static void test_an_impossible_malloc_says_so_and_exits_1(void **state)
{
    (void)state;
    char line[200];
    snprintf(line, sizeof line, "bellows: out of memory (%zu bytes) in a test's malloc\n",
             SIZE_MAX / 2);
    expect(ASK_MALLOC, line);
}

static void test_an_impossible_calloc_and_realloc_say_so_and_exit_1(void **state)
{
    (void)state;
    char line[200];
    snprintf(line, sizeof line, "bellows: out of memory (%zu bytes) in a test's calloc\n",
             (SIZE_MAX / 16) * 8);
    expect(ASK_CALLOC, line);
    snprintf(line, sizeof line, "bellows: out of memory (%zu bytes) in a test's realloc\n",
             SIZE_MAX / 2);
    expect(ASK_REALLOC, line);
}

static void test_an_array_past_size_max_is_out_of_memory(void **state)
{
    (void)state;
    char line[200];
    snprintf(line, sizeof line, "bellows: out of memory (more than %zu bytes) in a test's array\n",
             SIZE_MAX);
    expect(ASK_REALLOC_N, line);
}

static void test_out_of_memory_removes_the_temporaries(void **state)
{
    (void)state;
    char dir[64], err[1024];
    make_tmpdir(dir, sizeof dir);
    int st = run_child(ASK_MALLOC, dir, err, sizeof err);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), BW_ERUNTIME);
    DIR *d = opendir(dir);
    assert_non_null(d);
    int entries = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) entries++;
    closedir(d);
    assert_int_equal(entries, 0); /* .result.csv.tmp.XXXXXX is gone */
    rm_tree(dir);
}

static void test_small_requests_succeed(void **state)
{
    (void)state;
    unsigned char *p = bw_xcalloc(0, 8, "zero"); /* 0 bytes: a block, not NULL */
    assert_non_null(p);
    p = bw_xrealloc_n(p, 100, 3, "grown");
    memset(p, 7, 300);
    p = bw_xrealloc(p, 0, "shrunk");
    assert_non_null(p);
    free(p);
    free(bw_xmalloc(0, "none"));
    char *s = bw_xstrdup("a copy", "copy"), *e = bw_xstrdup("", "empty");
    assert_string_equal(s, "a copy");
    assert_string_equal(e, "");
    free(s);
    free(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_an_impossible_malloc_says_so_and_exits_1),
        cmocka_unit_test(test_an_impossible_calloc_and_realloc_say_so_and_exit_1),
        cmocka_unit_test(test_an_array_past_size_max_is_out_of_memory),
        cmocka_unit_test(test_out_of_memory_removes_the_temporaries),
        cmocka_unit_test(test_small_requests_succeed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
