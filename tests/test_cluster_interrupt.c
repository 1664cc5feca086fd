/* test_cluster_interrupt.c: Ctrl-C in bellows cluster (SIGINT to its process group, as a
 * terminal sends it). In point 2 of a --set sweep: point 1's results stay (they were deleted,
 * and the message said "nothing written"), the stopped point's folder goes, and --resume runs
 * only what is missing; while the command looks for gnuplot: it stops, exit 130 (it said
 * "gnuplot not found" and went on); before any run starts: exit 130 with a message. */
#include "testutil.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "clitest.h"

#define SMALL     "\"epochs\": 1, \"train_samples\": 1024, \"test_samples\": 200"
#define JOB(name) "{\"name\": \"" name "\", \"workers\": 2, " SMALL ", \"compressor\": \"none\"}"

/* Starts `[env] bellows ARGS` ("@" for TMP) in a process group of its own, waits until its
 * stdout holds needle, or (needle starting with '/') until that file exists, sends SIGINT to
 * the group and returns the exit status (130 for a death by SIGINT, as a shell says; another
 * signal fails). */
static int interrupt(const char *env, const char *args, const char *needle)
{
    char cmd[2048], raw[2048], wait_for[512];
    snprintf(raw, sizeof raw, "exec env %s %s %s >@/stdout 2>@/stderr </dev/null", env, BELLOWS_BIN,
             args);
    clitest_expand_text(cmd, sizeof cmd, raw);
    clitest_expand_text(wait_for, sizeof wait_for, needle);
    write_tmp("stdout", "");
    pid_t pid = clitest_spawn(cmd);
    int ready = 0;
    for (int tries = 0; tries < 12000 && !ready; tries++) {
        usleep(5000);
        char *out = tmp_file("stdout");
        ready = wait_for[0] == '/' ? file_exists(wait_for) : out && strstr(out, wait_for) != NULL;
        free(out);
    }
    assert_true(ready);
    usleep(200000);
    kill(-pid, SIGINT);
    int st;
    waitpid(pid, &st, 0);
    if (WIFSIGNALED(st) && WTERMSIG(st) == SIGINT) return 130; /* what a shell reports */
    if (!WIFEXITED(st)) fail_msg("'%s' died of signal %d", args, WTERMSIG(st));
    return WEXITSTATUS(st);
}

static void expect_stderr(const char *needle)
{
    char *err = tmp_file("stderr");
    if (!err || !strstr(err, needle)) fail_msg("stderr lacks '%s': %s", needle, err);
    free(err);
}

/* Point 1 finished, point 2 stopped: point 1 and sweep.csv's row of it stay. */
static void test_a_stopped_point_keeps_the_finished_ones(void **state)
{
    (void)state;
    write_tmp("c.json", "{\"jobs\": [" JOB("a") ", " JOB("b") "]}");
    int rc = interrupt("",
                       "cluster @/c.json --alone none --out @/o --set "
                       "a.train_samples=1024,16384 --set a.epochs=1,100",
                       "# point 2 of 4");
    assert_int_equal(rc, 130);
    expect_stderr("bellows: cluster: point 2 of 4: ");
    expect_stderr("the 1 finished point stays in");
    char *one = tmp_file("o/points/a.train_samples=1024_a.epochs=1/cluster.json");
    assert_non_null(one);
    free(one);
    char path[256];
    snprintf(path, sizeof path, "%s/o/points/a.train_samples=1024_a.epochs=100", TMP);
    assert_false(file_exists(path));
    char *csv = tmp_file("o/sweep.csv");
    assert_non_null(csv);
    assert_int_equal(count_lines(csv), 3); /* the header, jobs a and b of point 1 */
    free(csv);
}

/* --resume reads the finished points back and runs the others. */
static void test_resume_runs_only_what_is_missing(void **state)
{
    (void)state;
    write_tmp("c.json", "{\"jobs\": [" JOB("a") ", " JOB("b") "]}");
    const char *args = "cluster @/c.json --alone none --out @/r --set a.seed=1,2";
    assert_int_equal(bw("%s", args), 0);
    char *whole = tmp_file("r/sweep.csv"), *first = tmp_file("r/points/a.seed=1/cluster.json");
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -r %s/r/points/a.seed=2 %s/r/sweep.csv", TMP, TMP);
    assert_int_equal(system(cmd), 0);
    expect_refusal("--force: not with --resume", "%s --resume --force", args);
    assert_int_equal(bw("%s --resume", args), 0);
    char *out = tmp_file("stdout");
    assert_non_null(strstr(out, "# done already (--resume): "));
    free(out);
    char *again = tmp_file("r/sweep.csv"),
         *first_again = tmp_file("r/points/a.seed=1/cluster.json");
    assert_string_equal(first, first_again); /* not run again: its wall time would differ */
    /* the same rows (the folders and figures) as the run that was not interrupted */
    assert_string_equal(whole, again);
    /* the file changed (or --set's values did): a finished point is another cluster's */
    assert_int_equal(system(cmd), 0);
    write_tmp("c.json", "{\"jobs\": [" JOB("a") ", " JOB("b") "], \"bandwidth\": \"1Gbps\"}");
    expect_refusal("r/points/a.seed=1/cluster.json: was made from another cluster file",
                   "%s --resume", args);
    write_tmp("c.json", "{\"jobs\": [" JOB("a") ", " JOB("b") "]}");
    expect_refusal("r/points/a.seed=1: is no point of this --set",
                   "cluster @/c.json --alone none --out @/r --set a.seed=1,2 --set b.seed=5 "
                   "--resume");
    free(whole);
    free(again);
    free(first);
    free(first_again);
}

/* A Ctrl-C while the command looks for gnuplot (a gnuplot that takes its time) stops it. */
static void test_a_ctrl_c_while_looking_for_gnuplot_stops(void **state)
{
    (void)state;
    char cmd[512];
    snprintf(cmd, sizeof cmd,
             "mkdir %s/bin && printf '#!/bin/sh\\ntouch %s/looking\\nexec sleep 30\\n' "
             ">%s/bin/gnuplot && chmod +x %s/bin/gnuplot",
             TMP, TMP, TMP, TMP);
    assert_int_equal(system(cmd), 0);
    write_tmp("c.json", "{\"jobs\": [" JOB("a") ", " JOB("b") "]}");
    char env[1024];
    snprintf(env, sizeof env, "PATH=%s/bin:%s", TMP, getenv("PATH"));
    int rc =
        interrupt(env, "cluster @/c.json --alone none --out @/g --set a.seed=1,2", "@/looking");
    assert_int_equal(rc, 130);
    expect_stderr("bellows: cluster: interrupted after point 1 of 2; the 1 finished point stays");
    char *out = tmp_file("stdout");
    if (strstr(out, "gnuplot not found") || strstr(out, "# point 2")) fail_msg("stdout: %s", out);
    free(out);
}

/* compare and sweep likewise: a Ctrl-C while they look for gnuplot (their soft SIGINT
 * handler only sets a flag) stops them with exit 130, not "gnuplot not found" and exit 0. */
static void test_compare_and_sweep_stop_while_looking_for_gnuplot(void **state)
{
    (void)state;
    char cmd[512], env[1024];
    snprintf(cmd, sizeof cmd,
             "mkdir -p %s/bin && printf '#!/bin/sh\\ntouch %s/looking\\nexec sleep 30\\n' "
             ">%s/bin/gnuplot && chmod +x %s/bin/gnuplot",
             TMP, TMP, TMP, TMP);
    assert_int_equal(system(cmd), 0);
    snprintf(env, sizeof env, "PATH=%s/bin:%s", TMP, getenv("PATH"));
    const char *runs[] = {"compare --policies sync --seeds 1 --workers 2 --epochs 1 "
                          "--train-samples 512 --test-samples 100 --out @/cg",
                          "sweep --policies sync --seed 1 --workers 2 --epochs 1 "
                          "--train-samples 512 --test-samples 100 --bandwidth 1Gbps,10Gbps "
                          "--out @/sg"};
    for (int i = 0; i < 2; i++) {
        char looking[256];
        snprintf(looking, sizeof looking, "%s/looking", TMP);
        unlink(looking);
        assert_int_equal(interrupt(env, runs[i], "@/looking"), 130);
        expect_stderr("interrupted while looking for gnuplot");
        char *out = tmp_file("stdout");
        if (out && strstr(out, "gnuplot not found")) fail_msg("stdout: %s", out);
        free(out);
    }
}

#define SIXTEEN "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16"

/* A Ctrl-C before any simulation starts (bellows checks --set's points): a message, exit 130. */
static void test_a_ctrl_c_before_the_run_says_so(void **state)
{
    (void)state;
    write_tmp("c.json", "{\"jobs\": [" JOB("a") ", " JOB("b") "]}");
    int rc =
        interrupt("", "cluster @/c.json --out @/b --set a.seed=" SIXTEEN " --set b.seed=" SIXTEEN,
                  "# checking the");
    assert_int_equal(rc, 130);
    expect_stderr("bellows: interrupted; no file half-written");
    char path[256];
    snprintf(path, sizeof path, "%s/b", TMP);
    assert_false(file_exists(path));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, clitest_setup, clitest_teardown)
        T(test_a_stopped_point_keeps_the_finished_ones),
        T(test_resume_runs_only_what_is_missing),
        T(test_a_ctrl_c_while_looking_for_gnuplot_stops),
        T(test_a_ctrl_c_before_the_run_says_so),
        T(test_compare_and_sweep_stop_while_looking_for_gnuplot),
#undef T
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
