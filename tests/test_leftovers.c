/* test_leftovers.c: however a command ends, it leaves nothing half-made and says why. SIGTERM,
 * SIGHUP and a second Ctrl-C remove the trace writer's temporary and the folders the command
 * made; a compare killed by SIGTERM passes it on to its runs and leaves no empty run folder; a
 * sweep killed by SIGKILL leaves no run going on as an orphan; a plugin that calls exit(0) or
 * abort() is a failure with a message, and one that never returns yields to one Ctrl-C; a full
 * disk while writing the trace keeps the run's results; an interrupted reproduction writes no
 * report. Commands run in their own process group, as from a terminal. */
#include "testutil.h"

#include "clitest.h"

#include <signal.h>
#include <sys/stat.h>

#define LONG "--train-samples 8192 --test-samples 100 --batch 8 --workers 2 --epochs 50 --quiet"

/* Starts `bellows ARGS` ("@" for TMP) in its own process group, stdout and stderr into TMP/out
 * and TMP/err; returns its pid (= its group). */
static pid_t start(const char *args)
{
    char expanded[4096], cmd[8192];
    clitest_expand_text(expanded, sizeof expanded, args);
    snprintf(cmd, sizeof cmd, "exec %s %s >%s/out 2>%s/err </dev/null", BELLOWS_BIN, expanded, TMP,
             TMP);
    return clitest_spawn(cmd);
}

/* Waits (up to 60 s) until TMP/name exists, and holds needle when given. */
static void wait_for(const char *name, const char *needle)
{
    for (int tries = 0; tries < 12000; tries++) {
        char *text = tmp_file(name);
        int ready = text && (!needle || strstr(text, needle));
        free(text);
        if (ready) return;
        usleep(5000);
    }
    fail_msg("%s/%s never held '%s'", TMP, name, needle ? needle : "");
}

/* Waits for pid, then (up to 10 s) until nothing of its process group is left. */
static int finish(pid_t pid)
{
    int st;
    waitpid(pid, &st, 0);
    for (int tries = 0; tries < 2000 && kill(-pid, 0) == 0; tries++) usleep(5000);
    if (kill(-pid, 0) == 0) fail_msg("processes of group %d outlived it", (int)pid);
    return st;
}

/* No temporary file and no empty folder under TMP, and no path named `gone`. */
static void expect_nothing_left(const char *gone)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "find %s -name '.*.tmp.*' -o -type d -empty | grep -q .", TMP);
    if (system(cmd) == 0) {
        snprintf(cmd, sizeof cmd, "find %s -name '.*.tmp.*' -o -type d -empty >&2", TMP);
        assert_int_equal(system(cmd), 0);
        fail_msg("a temporary file or an empty folder was left (above)");
    }
    if (gone) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", TMP, gone);
        struct stat st;
        if (stat(path, &st) == 0) fail_msg("%s was left", path);
    }
}

static void test_signals_remove_the_trace_temporary_and_new_folders(void **state)
{
    (void)state;
    const int sigs[] = {SIGTERM, SIGHUP, SIGINT};
    for (int k = 0; k < 3; k++) {
        pid_t pid = start("run " LONG " --out @/new/out --record-trace @/t.jsonl.gz");
        wait_for("out", "# policy");
        usleep(200000);
        kill(-pid, sigs[k]);
        if (sigs[k] == SIGINT) kill(-pid, SIGINT); /* a second Ctrl-C kills at once */
        int st = finish(pid);
        assert_true(WIFSIGNALED(st) || (WIFEXITED(st) && WEXITSTATUS(st) == 130));
        expect_nothing_left("new");
        char path[512];
        snprintf(path, sizeof path, "%s/t.jsonl.gz", TMP);
        assert_false(file_exists(path));
    }
}

static void test_a_killed_compare_leaves_no_empty_run_folder(void **state)
{
    (void)state;
    pid_t pid = start("compare " LONG " --policies sync,static,cpsgd --jobs 2 --no-plots "
                      "--out @/cmp");
    wait_for("out", "run folders in");
    usleep(300000);
    kill(pid, SIGTERM); /* the parent only: it passes the signal on to its runs */
    int st = finish(pid);
    assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM);
    expect_nothing_left("cmp");
}

static void test_a_sweep_killed_by_sigkill_leaves_no_orphan(void **state)
{
    (void)state;
    pid_t pid = start("sweep " LONG " --bandwidth 1Gbps,10Gbps --policies sync,static -j 2 "
                      "--no-plots --out @/sw");
    wait_for("sw/sweep.json", NULL);
    usleep(300000);
    kill(pid, SIGKILL); /* nothing of the parent runs: its runs see it die */
    finish(pid);
    /* the runs removed their own folders; the parent's sweep.csv and sweep.json stay, and the
     * traces folder its trainings were writing into (SIGKILL leaves the parent no time to
     * remove it, empty); the folder goes, so that the next tests see only their own leftovers */
    char cmd[512];
    snprintf(cmd, sizeof cmd, "find %s/sw -name '.*.tmp.*' | grep -q .", TMP);
    assert_int_not_equal(system(cmd), 0);
    snprintf(cmd, sizeof cmd, "%s/sw", TMP);
    rm_tree(cmd);
}

static void test_a_plugin_that_exits_or_aborts_fails_with_a_message(void **state)
{
    (void)state;
    const char *plugins[] = {PLUGIN_EXIT, PLUGIN_ABORT};
    const char *says[] = {"called exit() before the run ended; no results", "crashed"};
    for (int k = 0; k < 2; k++) {
        char args[1024];
        snprintf(args, sizeof args, "run " LONG " --policy %s --out @/p --record-trace @/p.jsonl",
                 plugins[k]);
        int st = finish(start(args));
        if (k == 0) assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 1);
        if (k == 1) assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
        char *err = tmp_file("err");
        if (!strstr(err, says[k])) fail_msg("stderr lacks '%s': %s", says[k], err);
        free(err);
        expect_nothing_left("p");
        expect_nothing_left("p.jsonl");
    }
    /* in a compare, the run is a failure that the table reports */
    char args[1024];
    snprintf(
        args, sizeof args,
        "compare --train-samples 1024 --test-samples 100 --batch 8 --workers 2 --epochs 1 --quiet "
        "--policies sync,%s --seed 1 --no-plots --out @/pc",
        PLUGIN_EXIT);
    int st = finish(start(args));
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 1);
    char *err = tmp_file("err");
    assert_non_null(strstr(err, "called exit() before the run ended"));
    assert_non_null(strstr(err, "compare: 1 of 2 runs failed"));
    free(err);
}

static void test_a_plugin_that_never_returns_yields_to_one_ctrl_c(void **state)
{
    (void)state;
    char args[1024];
    snprintf(args, sizeof args, "run " LONG " --policy %s --out @/loop", PLUGIN_LOOP);
    pid_t pid = start(args);
    wait_for("out", "# policy");
    usleep(500000); /* at step 3 by now, in the loop */
    kill(-pid, SIGINT);
    int st = finish(pid);
    assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGINT);
    char *err = tmp_file("err");
    assert_non_null(strstr(err, "interrupted inside a policy's own code"));
    free(err);
    expect_nothing_left("loop");
}

static void test_a_full_disk_while_recording_keeps_the_results(void **state)
{
    (void)state;
    char cmd[1024];
    /* a file-size limit (30 KB in 512-byte blocks, 60 in 1 KiB ones): the run's own files
     * fit (steps.csv: 24 KB), the plain trace (80 KB) does not */
    snprintf(cmd, sizeof cmd,
             "ulimit -f 60; %s run --train-samples 8192 --test-samples 100 --batch 16 --epochs 1 "
             "--workers 2 --quiet --out %s/full --record-trace %s/full.jsonl >/dev/null "
             "2>%s/err",
             BELLOWS_BIN, TMP, TMP, TMP);
    int st = system(cmd);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 1);
    char *err = tmp_file("err");
    assert_non_null(strstr(err, "full.jsonl: write failed: File too large (the run's results are "
                                "in"));
    free(err);
    assert_true(summary_num("full", "steps") == 256);
    expect_nothing_left("full.jsonl");
}

static void test_an_interrupted_reproduction_writes_no_report(void **state)
{
    (void)state;
    pid_t pid = start("reproduce adpsgd --smoke --no-plots -j 1 --out @/rep");
    wait_for("out", "## [1/");
    usleep(300000);
    kill(-pid, SIGINT);
    int st = finish(pid);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 130);
    char *err = tmp_file("err");
    assert_non_null(strstr(err, "bellows: reproduce: interrupted in sweep 1 of"));
    /* one line of ours (a sanitizer build adds its own warnings about SimGrid's stacks) */
    int ours = 0;
    for (char *p = err; p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        ours += !strncmp(p, "bellows: ", 9);
    if (ours != 1) fail_msg("%d lines of ours on stderr: %s", ours, err);
    free(err);
    char path[512];
    snprintf(path, sizeof path, "%s/rep/report.md", TMP);
    assert_false(file_exists(path));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_signals_remove_the_trace_temporary_and_new_folders),
        cmocka_unit_test(test_a_killed_compare_leaves_no_empty_run_folder),
        cmocka_unit_test(test_a_sweep_killed_by_sigkill_leaves_no_orphan),
        cmocka_unit_test(test_a_plugin_that_exits_or_aborts_fails_with_a_message),
        cmocka_unit_test(test_a_plugin_that_never_returns_yields_to_one_ctrl_c),
        cmocka_unit_test(test_a_full_disk_while_recording_keeps_the_results),
        cmocka_unit_test(test_an_interrupted_reproduction_writes_no_report),
    };
    return cmocka_run_group_tests(tests, clitest_setup, clitest_teardown);
}
