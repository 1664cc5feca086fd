/* test_interrupt.c: Ctrl-C. bellows run, compare and sweep are started in their own process
 * group and sent SIGINT (as a terminal sends it to the whole group) once they are running:
 * each exits 130 with one line saying what was done, leaves no temporary file, no empty folder
 * of its own making and no half-written result. */
#include "testutil.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

static char TMP[64];

static int setup(void **state)
{
    (void)state;
    make_tmpdir(TMP, sizeof TMP);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    rm_tree(TMP);
    return 0;
}

/* Starts `bellows ARGS` (stdout and stderr to TMP/out, TMP/err) in its own process group,
 * waits (up to 60 s) until the file `wait_for` exists, or holds `needle` when given, sends
 * SIGINT to the group and returns the wait status. */
static int interrupt(const char *args, const char *wait_for, const char *needle)
{
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        setpgid(0, 0);
        char cmd[2048];
        snprintf(cmd, sizeof cmd, "exec %s %s >%s/out 2>%s/err </dev/null", BELLOWS_BIN, args, TMP,
                 TMP);
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    setpgid(pid, pid);
    int ready = 0;
    for (int tries = 0; tries < 12000 && !ready; tries++) {
        usleep(5000);
        char *text = slurp(wait_for, NULL);
        ready = text && (!needle || strstr(text, needle));
        free(text);
    }
    assert_true(ready);
    kill(-pid, SIGINT);
    int st;
    waitpid(pid, &st, 0);
    for (int tries = 0; tries < 4000 && kill(-pid, 0) == 0; tries++) usleep(5000);
    return st;
}

static char *err_text(void)
{
    char path[128];
    snprintf(path, sizeof path, "%s/err", TMP);
    char *text = slurp(path, NULL);
    assert_non_null(text);
    return text;
}

static int no_tmp_files(const char *dir)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "find %s -name '.*.tmp.*' | grep -q .", dir);
    return system(cmd) != 0;
}

static void test_an_interrupted_run_says_where_and_leaves_nothing(void **state)
{
    (void)state;
    char args[1024], out[128];
    snprintf(args, sizeof args,
             "run --epochs 200 --train-samples 4096 --test-samples 200 --workers 2 --quiet "
             "--record-trace %s/t.jsonl.gz --out %s/run",
             TMP, TMP);
    snprintf(out, sizeof out, "%s/out", TMP);
    int st = interrupt(args, out, "# policy");
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 130) fail_msg("status %d", st);
    char *err = err_text();
    if (!strstr(err, "bellows: interrupted at step ") || !strstr(err, " of 6400; nothing written"))
        fail_msg("stderr: %s", err);
    free(err);
    snprintf(out, sizeof out, "%s/run", TMP);
    assert_false(file_exists(out));
    snprintf(out, sizeof out, "%s/t.jsonl.gz", TMP);
    assert_false(file_exists(out));
    assert_true(no_tmp_files(TMP));
}

static void test_an_interrupted_compare_keeps_only_finished_runs(void **state)
{
    (void)state;
    char args[1024], first[256], path[256];
    snprintf(
        args, sizeof args,
        "compare --epochs 40 --train-samples 4096 --test-samples 200 --workers 2 --quiet "
        "--no-plots --jobs 1 --seed 1 --policies sync,static:level=2,static:level=1 --out %s/cmp",
        TMP);
    /* once the first policy's summary is written, the second is running: interrupt it */
    snprintf(first, sizeof first, "%s/cmp/seed-1/1-sync/summary.json", TMP);
    int st = interrupt(args, first, NULL);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 130) fail_msg("status %d", st);
    char *err = err_text();
    if (!strstr(err, "bellows: compare: interrupted; ") || !strstr(err, " of 3 runs finished"))
        fail_msg("stderr: %s", err);
    free(err);
    snprintf(path, sizeof path, "%s/cmp/compare.csv", TMP);
    assert_false(file_exists(path));
    snprintf(path, sizeof path, "%s/cmp/seed-1/1-sync/summary.json", TMP);
    assert_true(file_exists(path));
    snprintf(path, sizeof path, "%s/cmp/seed-1/2-static-level-2", TMP);
    assert_false(file_exists(path));
    snprintf(path, sizeof path, "%s/cmp/seed-1/3-static-level-1", TMP);
    assert_false(file_exists(path));
    snprintf(path, sizeof path, "%s/cmp", TMP);
    assert_true(no_tmp_files(path));
}

/* A sweep that trains once and prices the rest, interrupted during its second training: one
 * run finished and its trace kept; --resume trains the other and prices both groups' rest. */
static void test_an_interrupted_sweep_keeps_its_finished_runs_and_traces(void **state)
{
    (void)state;
    char args[1024], first[256], path[256], cmd[2048];
    const char *sweep = "sweep --epochs 40 --train-samples 4096 --test-samples 200 --workers 2 "
                        "--seeds 1 --collectives analytic --bandwidth 1Gbps,10Gbps "
                        "--policies sync,static:level=2 --no-plots --quiet -j 1";
    snprintf(args, sizeof args, "%s --out %s/sw", sweep, TMP);
    snprintf(first, sizeof first, "%s/sw/runs/bandwidth-1Gbps/seed-1/1-sync/summary.json", TMP);
    int st = interrupt(args, first, NULL);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 130) fail_msg("status %d", st);
    char *err = err_text();
    if (!strstr(err, "bellows: sweep: interrupted; 1 of 4 runs finished; ") ||
        !strstr(err, "add --resume to run the rest"))
        fail_msg("stderr: %s", err);
    free(err);
    snprintf(path, sizeof path, "%s/sw", TMP);
    assert_true(no_tmp_files(path));
    snprintf(cmd, sizeof cmd,
             "[ $(ls %s/sw/traces | wc -l) -eq 1 ] && [ $(wc -l < %s/sw/sweep.csv) -eq 2 ]", TMP,
             TMP);
    assert_int_equal(system(cmd), 0);
    snprintf(cmd, sizeof cmd,
             "%s %s --resume --out %s/sw > %s/resume.out && grep -q '# this invocation: 1 "
             "training (and 0 more for the traces of its priced runs), 2 priced' %s/resume.out && "
             "[ $(wc -l < %s/sw/sweep.csv) -eq 5 ]",
             BELLOWS_BIN, sweep, TMP, TMP, TMP, TMP);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_an_interrupted_run_says_where_and_leaves_nothing),
        cmocka_unit_test(test_an_interrupted_compare_keeps_only_finished_runs),
        cmocka_unit_test(test_an_interrupted_sweep_keeps_its_finished_runs_and_traces),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
