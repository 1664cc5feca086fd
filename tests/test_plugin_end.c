/* test_plugin_end.c: a plug-in cannot end bellows silently. A policy or schedule .so (and a
 * Python policy) that calls exit(0) or _exit(0) (os._exit(0)) in its constructor, init, first
 * decision or mid-run, aborts, or stalls the simulation: bellows run exits non-zero and names
 * the plug-in, its kind and what it was doing; compare's table names it for the run it broke.
 * A plug-in's fork() is refused (its child ends at once, the run fails naming it), a SIGTERM it
 * raises is named, its chdir() moves no output, and a failed run leaves no folder; compare and
 * sweep report an _exit() in a plug-in's init as run does (issue 49 items 22-26).
 * The plug-ins are tests/plugins/ender.c, told what to do by BELLOWS_TEST_END. */
#include "testutil.h"

#include "clitest.h"

#include <signal.h>
#include <sys/stat.h>

#define SMALL "--train-samples 512 --test-samples 100 --batch 8 --workers 2 --epochs 1 --quiet"

/* `BELLOWS_TEST_END=END bellows ARGS` ("@" for TMP), stderr into TMP/stderr; its wait status. */
static int run_ending(const char *end, const char *args)
{
    char expanded[4096], cmd[8192];
    clitest_expand_text(expanded, sizeof expanded, args);
    snprintf(cmd, sizeof cmd,
             "cd %s && BELLOWS_TEST_END='%s' BELLOWS_TEST_DIR=%s exec %s %s >%s/stdout 2>%s/stderr "
             "</dev/null",
             TMP, end, TMP, BELLOWS_BIN, expanded, TMP, TMP);
    return system(cmd);
}

static void expect_stderr(const char *needle, const char *end, const char *args)
{
    char *err = tmp_file("stderr");
    if (!err || !strstr(err, needle))
        fail_msg("'%s' with BELLOWS_TEST_END='%s': stderr lacks '%s':\n%s", args, end, needle,
                 err ? err : "(none)");
    free(err);
}

/* The run and its plug-in flag for kind k (0: policy, 1: schedule). */
static void args_for(int k, char *out, size_t n)
{
    snprintf(out, n, "run " SMALL " %s %s --force --out @/o", k ? "--schedule" : "--policy",
             k ? ENDER_SCHEDULE : ENDER_POLICY);
}

static void test_an_exit_or_exit_underscore_anywhere_names_the_plugin(void **state)
{
    (void)state;
    static const char *const hows[] = {"exit", "_exit"};
    static const char *const whens[] = {"load", "init", "first", "mid"};
    static const char *const phases[] = {"in its loading", "in its init",
                                         "in its decision at step 0", "in its decision at step 2"};
    for (int k = 0; k < 2; k++)
        for (int h = 0; h < 2; h++)
            for (int w = 0; w < 4; w++) {
                char end[32], args[1024], needle[512];
                snprintf(end, sizeof end, "%s %s", hows[h], whens[w]);
                args_for(k, args, sizeof args);
                int st = run_ending(end, args);
                if (!WIFEXITED(st) || WEXITSTATUS(st) == 0)
                    fail_msg("'%s' with %s: status %d, expected a non-zero exit", args, end, st);
                snprintf(needle, sizeof needle, "bellows: the %s plug-in %s (%s), %s",
                         k ? "schedule" : "policy", k ? ENDER_SCHEDULE : ENDER_POLICY,
                         k ? "--schedule" : "--policy", phases[w]);
                expect_stderr(needle, end, args);
                char *summary = tmp_file("o/summary.json");
                if (summary) fail_msg("'%s' with %s wrote a summary", args, end);
                char out[1024];
                snprintf(out, sizeof out, "%s/o", TMP); /* nor left its folder (item 26) */
                if (access(out, F_OK) == 0) fail_msg("'%s' with %s left %s", args, end, out);
            }
}

static void test_an_abort_is_blamed_on_the_plugin_of_its_kind(void **state)
{
    (void)state;
    for (int k = 0; k < 2; k++) {
        char args[1024];
        args_for(k, args, sizeof args);
        int st = run_ending("abort mid", args);
        assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
        expect_stderr(k ? "crashed in the schedule plug-in" : "crashed in the policy plug-in",
                      "abort mid", args);
    }
}

static void test_a_stalled_simulation_fails_instead_of_completing(void **state)
{
    (void)state;
    for (int k = 0; k < 2; k++) {
        char args[1024];
        args_for(k, args, sizeof args);
        int st = run_ending("stall mid", args);
        assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 1);
        expect_stderr("the simulation stalled", "stall mid", args);
        assert_null(tmp_file("o/summary.json"));
    }
}

static void test_compare_names_the_plugin_that_ended_its_run(void **state)
{
    (void)state;
    int st =
        run_ending("_exit mid",
                   "compare " SMALL
                   " --no-plots --seeds 1 --policies sync --schedule " ENDER_SCHEDULE " --out @/c");
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 1);
    expect_stderr("the schedule plug-in " ENDER_SCHEDULE
                  " (--schedule), in its decision at step 2, "
                  "ended the run process",
                  "_exit mid", "compare");
}

#if defined(BW_HAVE_PYTHON)
static void test_a_python_os_exit_names_the_policy(void **state)
{
    (void)state;
    write_tmp("load.py", "import os\nos._exit(0)\n");
    write_tmp("mid.py",
              "import os\nimport bellows_policy as bp\n\n\nclass Mid(bp.Policy):\n"
              "    name = 'mid'\n    help = 'os._exit(0) at step 2'\n    mode = bp.GRADIENT\n\n"
              "    def decide(self, obs, decision):\n        if obs.step == 2:\n"
              "            os._exit(0)\n");
    static const char *const files[] = {"load", "mid"};
    static const char *const phases[] = {"in its loading", "in its decision at step 2"};
    for (int i = 0; i < 2; i++) {
        char args[1024], needle[1024];
        snprintf(args, sizeof args, "run " SMALL " --policy @/%s.py --force --out @/o", files[i]);
        int st = run_ending("none none", args);
        assert_true(WIFEXITED(st) && WEXITSTATUS(st) != 0);
        snprintf(needle, sizeof needle, "bellows: the policy plug-in %s/%s.py (--policy), %s", TMP,
                 files[i], phases[i]);
        expect_stderr(needle, "", args);
        assert_null(tmp_file("o/summary.json"));
    }
}
#endif

/* Fails if TMP/name (a file or a folder) is there. */
static void expect_no_file(const char *name)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", TMP, name);
    if (access(path, F_OK) == 0) fail_msg("%s is there", path);
}

static void test_a_fork_a_sigterm_or_a_chdir_is_caught(void **state)
{
    (void)state;
    /* 4 steps: a decision at step 2, and an end */
    const char *args = "run --train-samples 64 --test-samples 50 --batch 8 --workers 2 --epochs 1 "
                       "--quiet --policy " ENDER_POLICY " --force --out @/o";
    int st = run_ending("fork mid", args);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 1);
    expect_stderr("bellows: the policy plug-in " ENDER_POLICY " (--policy), in its decision at "
                  "step 2, called fork()",
                  "fork mid", args);
    expect_no_file("forked-child"); /* the child never ran the plug-in's code */
    expect_no_file("o");            /* no summary, no empty folder (item 26) */
    st = run_ending("sigterm mid", args);
    assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM);
    expect_stderr("bellows: SIGTERM arrived in the policy plug-in " ENDER_POLICY
                  " (--policy), in its decision at step 2",
                  "sigterm mid", args);
    /* a chdir() mid-run: the run's relative --out stays where it was when bellows started */
    char elsewhere[1024];
    snprintf(elsewhere, sizeof elsewhere, "%s/elsewhere", TMP);
    assert_int_equal(mkdir(elsewhere, 0755), 0);
    st = run_ending("chdir mid", "run --train-samples 64 --test-samples 50 --batch 8 --workers 2 "
                                 "--epochs 1 --quiet --policy " ENDER_POLICY " --out rel");
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    assert_true(summary_num("rel", "steps") == 4);
    expect_no_file("elsewhere/rel/summary.json");
    /* an _exit() in the init compare and sweep run in their own process */
    const char *cmds[] = {"compare " SMALL " --no-plots --policies sync," ENDER_POLICY
                          " --out @/c2",
                          "sweep " SMALL " --no-plots --policies sync," ENDER_POLICY
                          " --bandwidth 1Gbps,10Gbps --out @/s2"};
    for (int i = 0; i < 2; i++) {
        st = run_ending("_exit init", cmds[i]);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 1) {
            char *e = tmp_file("stderr");
            fail_msg("'%s': status %d: %s", cmds[i], st, e ? e : "");
        }
        expect_stderr("bellows: the policy plug-in " ENDER_POLICY " (--policy), in its init, "
                      "ended bellows",
                      "_exit init", cmds[i]);
        expect_no_file(i ? "s2" : "c2");
    }
}

/* Without BELLOWS_TEST_END the plug-ins are well-behaved: the supervisor passes the run's
 * output and status through unchanged. */
static void test_a_well_behaved_plugin_runs_as_before(void **state)
{
    (void)state;
    for (int k = 0; k < 2; k++) {
        char args[1024];
        args_for(k, args, sizeof args);
        int st = run_ending("none none", args);
        assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        assert_true(summary_num("o", "steps") == 32);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_an_exit_or_exit_underscore_anywhere_names_the_plugin),
        cmocka_unit_test(test_an_abort_is_blamed_on_the_plugin_of_its_kind),
        cmocka_unit_test(test_a_stalled_simulation_fails_instead_of_completing),
        cmocka_unit_test(test_compare_names_the_plugin_that_ended_its_run),
        cmocka_unit_test(test_a_fork_a_sigterm_or_a_chdir_is_caught),
#if defined(BW_HAVE_PYTHON)
        cmocka_unit_test(test_a_python_os_exit_names_the_policy),
#endif
        cmocka_unit_test(test_a_well_behaved_plugin_runs_as_before),
    };
    return cmocka_run_group_tests(tests, clitest_setup, clitest_teardown);
}
