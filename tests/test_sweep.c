/* test_sweep.c: `bellows sweep` and `bellows merge` end to end, on a small slice of the real
 * Fashion-MNIST. A sweep gives the same sweep.csv with -j 1 and -j 2; a sweep killed with
 * SIGKILL in the middle leaves a complete sweep.csv and, resumed, ends with exactly the rows of
 * an uninterrupted sweep (none lost, none twice); two shards merged equal the whole. Each test
 * makes the folders it needs (whole_sweep), so any one runs alone: test_sweep [NAME-PATTERN]. */
#include "testutil.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "smalldata.h"

static char TMP[64];

/* The runs' data: smalldata.h's copy of the packaged set's first 2048 and 500 samples in TMP,
 * the suite's working folder (group_setup): the same runs, without reading the 60,000 images
 * in each */
#define DATA "--data-dir fmnist"
#define SWEEP_ARGS                                                                                 \
    "sweep --bandwidth 1Gbps,10Gbps --latency 1us,20us --policies sync,static:level=1 "            \
    "--train-samples 2048 --test-samples 500 --epochs 2 --workers 4 --batch 32 "                   \
    "--target-accuracy 0.6 --seeds 1 --no-plots --quiet " DATA

static int sh(const char *fmt, const char *a, const char *b)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, fmt, a, b);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static char *csv_of(const char *dir)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s/sweep.csv", TMP, dir);
    char *s = slurp(path, NULL);
    if (!s) fail_msg("%s missing", path);
    return s;
}

/* The whole sweep into TMP/name (-j 2), for a test to compare its own result against. */
static void whole_sweep(const char *name)
{
    char dir[128];
    snprintf(dir, sizeof dir, "%s/%s", TMP, name);
    assert_int_equal(sh(BELLOWS_BIN " " SWEEP_ARGS " -j 2 --out %s >/dev/null%s", dir, ""), 0);
}

/* No temporary file is left in dir (".NAME.tmp.XXXXXX"). */
static void expect_no_temporaries(const char *dir)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "ls -a %s | grep -q '\\.tmp\\.'", dir);
    if (system(cmd) == 0) fail_msg("%s holds temporary files", dir);
}

static void test_sweep_is_the_same_with_one_or_two_jobs(void **state)
{
    (void)state;
    char dir[128];
    whole_sweep("j2");
    snprintf(dir, sizeof dir, "%s/j1", TMP);
    assert_int_equal(sh(BELLOWS_BIN " " SWEEP_ARGS " -j 1 --out %s >/dev/null%s", dir, ""), 0);
    char *a = csv_of("j2"), *b = csv_of("j1");
    assert_int_equal(count_lines(a), 1 + 2 * 2 * 2);
    assert_non_null(strstr(a, "bandwidth,latency,seed,policy,folder,status"));
    assert_string_equal(a, b);
    free(a);
    free(b);
    /* its heatmap renders */
    snprintf(dir, sizeof dir, "%s/j2", TMP);
    assert_int_equal(sh(BELLOWS_BIN " plot %s >/dev/null%s", dir, ""), 0);
    char path[256];
    snprintf(path, sizeof path, "%s/j2/speedup_heatmap.png", TMP);
    size_t len = 0;
    char *png = slurp(path, &len);
    assert_non_null(png);
    assert_true(len > 4000 && memcmp(png, "\x89PNG\r\n\x1a\n", 8) == 0);
    free(png);
    /* resuming with other flags is refused: it would mix two sweeps in one table */
    snprintf(dir, sizeof dir, "%s/j1", TMP);
    assert_int_equal(
        sh(BELLOWS_BIN " " SWEEP_ARGS " --epochs 3 --resume --out %s >/dev/null 2>&1%s", dir, ""),
        2);
    /* a finished sweep is not overwritten by accident */
    snprintf(dir, sizeof dir, "%s/j1", TMP);
    assert_int_equal(sh(BELLOWS_BIN " " SWEEP_ARGS " --out %s >/dev/null 2>&1%s", dir, ""), 2);
}

static pid_t last_group; /* the process group of the last interrupted sweep */

/* Waits (up to 20 s) until no process of that group is left: a fixed pause was not always
 * enough for the runs in flight to clean up on a loaded machine. */
static void wait_group_gone(void)
{
    for (int tries = 0; tries < 4000 && kill(-last_group, 0) == 0; tries++) usleep(5000);
}

/* Starts the sweep into dir with `jobs` at a time, in its own process group, waits until
 * sweep.csv holds `lines` lines, sends sig to the whole group and returns the wait status. */
static int interrupt_sweep(const char *dir, int jobs, int lines, int sig)
{
    char path[256];
    snprintf(path, sizeof path, "%s/sweep.csv", dir);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        setpgid(0, 0);
        char cmd[2048];
        snprintf(cmd, sizeof cmd, "exec %s " SWEEP_ARGS " -j %d --out %s >/dev/null", BELLOWS_BIN,
                 jobs, dir);
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    setpgid(pid, pid);
    last_group = pid;
    int rows = 0;
    for (int tries = 0; tries < 6000 && rows < lines; tries++) {
        usleep(5000);
        char *text = slurp(path, NULL);
        rows = text ? count_lines(text) : 0;
        free(text);
    }
    kill(-pid, sig);
    int st;
    waitpid(pid, &st, 0);
    return st;
}

static void test_a_killed_sweep_resumes_without_losing_or_repeating_rows(void **state)
{
    (void)state;
    char dir[128];
    snprintf(dir, sizeof dir, "%s/killed", TMP);
    /* two finished runs (header + 2 rows), then SIGKILL to the sweep and its running child */
    interrupt_sweep(dir, 1, 3, SIGKILL);
    char *partial = csv_of("killed");
    int n = count_lines(partial);
    if (n < 3 || n >= 9) fail_msg("the sweep was killed with %d lines in sweep.csv", n);
    assert_true(partial[strlen(partial) - 1] == '\n'); /* complete rows only */
    free(partial);
    assert_int_equal(sh(BELLOWS_BIN " " SWEEP_ARGS " -j 2 --resume --out %s >/dev/null%s", dir, ""),
                     0);
    whole_sweep("killed-whole");
    char *resumed = csv_of("killed"), *whole = csv_of("killed-whole");
    assert_string_equal(resumed, whole);
    expect_no_temporaries(dir);
    free(resumed);
    free(whole);
}

/* SIGTERM (or Ctrl-C) while sweep.csv is being rewritten and runs are writing their files:
 * only complete files remain. */
static void test_a_terminated_sweep_leaves_only_complete_files(void **state)
{
    (void)state;
    char dir[128];
    snprintf(dir, sizeof dir, "%s/terminated", TMP);
    int st = interrupt_sweep(dir, 2, 2, SIGTERM);
    assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM);
    wait_group_gone(); /* the runs in flight die of the same signal */
    expect_no_temporaries(dir);
    char *partial = csv_of("terminated");
    assert_true(partial[strlen(partial) - 1] == '\n');
    free(partial);
}

static void test_two_shards_merge_into_the_whole_sweep(void **state)
{
    (void)state;
    char dir[128];
    whole_sweep("shards-whole");
    for (int k = 1; k <= 2; k++) {
        snprintf(dir, sizeof dir, "%s/shard%d", TMP, k);
        char args[64];
        snprintf(args, sizeof args, " --shard %d/2", k);
        char cmd[2048];
        snprintf(cmd, sizeof cmd, "%s " SWEEP_ARGS " --out %s%s >%s.out", BELLOWS_BIN, dir, args,
                 dir);
        assert_int_equal(system(cmd), 0);
    }
    /* a shard's table ranks no point it did not run whole: shard 1 ran only sync */
    snprintf(dir, sizeof dir, "%s/shard1.out", TMP);
    char *table = slurp(dir, NULL);
    assert_non_null(table);
    assert_non_null(strstr(table, "(not run)"));
    assert_null(strstr(table, "<- fastest"));
    free(table);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s merge --out %s/merged %s/shard1 %s/shard2 >/dev/null",
             BELLOWS_BIN, TMP, TMP, TMP);
    assert_int_equal(system(cmd), 0);
    /* the same rows as the whole sweep, but for the folder column (which names the shard) */
    snprintf(cmd, sizeof cmd,
             "cut -d, -f1-4,6- %s/merged/sweep.csv > %s/m.csv && "
             "cut -d, -f1-4,6- %s/shards-whole/sweep.csv > %s/w.csv && cmp -s %s/m.csv %s/w.csv",
             TMP, TMP, TMP, TMP, TMP, TMP);
    assert_int_equal(system(cmd), 0);
    /* the merged folder is a sweep of its own: the whole sweep's heatmap grid, and sweep.json
     * says it was merged, so bellows plot can draw it */
    snprintf(cmd, sizeof cmd, "cmp -s %s/merged/speedup_grid.dat %s/shards-whole/speedup_grid.dat",
             TMP, TMP);
    assert_int_equal(system(cmd), 0);
    snprintf(cmd, sizeof cmd, "grep -q '\"shard\": \"merged\"' %s/merged/sweep.json", TMP);
    assert_int_equal(system(cmd), 0);
    /* one shard of two: merged, and the missing half said */
    snprintf(cmd, sizeof cmd,
             "%s merge --out %s/half %s/shard1 | grep -q '4 of the sweep.s 8 runs'", BELLOWS_BIN,
             TMP, TMP);
    assert_int_equal(system(cmd), 0);
    /* merging a shard twice is refused */
    snprintf(cmd, sizeof cmd, "%s merge --out %s/twice %s/shard1 %s/shard1 2>/dev/null",
             BELLOWS_BIN, TMP, TMP, TMP);
    int st = system(cmd);
    assert_int_equal(WEXITSTATUS(st), 2);
}

/* A sweep's runs are what its header says and what compare runs: the same scenario without
 * --epochs or --eval-every gives the same evaluations and steps in both. */
static void test_a_sweep_runs_what_compare_runs(void **state)
{
    (void)state;
    const char *flags =
        "--policies sync,static:level=1 --train-samples 1024 --test-samples 200 "
        "--workers 4 --batch 32 --target-accuracy 0.6 --seeds 2 --no-plots --quiet " DATA;
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s sweep %s -j 2 --out %s/same-sweep >%s/same-sweep.out",
             BELLOWS_BIN, flags, TMP, TMP);
    assert_int_equal(system(cmd), 0);
    snprintf(cmd, sizeof cmd, "%s compare %s --out %s/same-compare >/dev/null", BELLOWS_BIN, flags,
             TMP);
    assert_int_equal(system(cmd), 0);
    const char *files[] = {"evals.csv", "steps.csv"};
    for (int k = 0; k < 2; k++) {
        snprintf(cmd, sizeof cmd,
                 "cmp %s/same-sweep/runs/seed-2/2-static-level-1/%s "
                 "%s/same-compare/seed-2/2-static-level-1/%s",
                 TMP, files[k], TMP, files[k]);
        assert_int_equal(system(cmd), 0);
    }
    /* the header: compare's 20 epochs and twenty evaluations an epoch (8 steps: every step) */
    snprintf(cmd, sizeof cmd, "%s/same-sweep.out", TMP);
    char *out = slurp(cmd, NULL);
    assert_non_null(out);
    assert_non_null(strstr(out, "20 epochs"));
    assert_non_null(strstr(out, "seed 2"));
    assert_non_null(strstr(out, "# evaluation every 1 step (8 an epoch of 8 steps)"));
    free(out);
    snprintf(cmd, sizeof cmd,
             "grep -q '\"epochs\": 20' %s/same-sweep/runs/seed-2/1-sync/summary.json && "
             "grep -q '\"eval_every\": 1' %s/same-sweep/runs/seed-2/1-sync/summary.json",
             TMP, TMP);
    assert_int_equal(system(cmd), 0);
}

static int group_setup(void **state)
{
    (void)state;
    assert_int_equal(chdir(TMP), 0);
    smalldata_write("fmnist", 2048, 500);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1) cmocka_set_test_filter(argv[1]); /* run one test alone */
    make_tmpdir(TMP, sizeof TMP);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sweep_is_the_same_with_one_or_two_jobs),
        cmocka_unit_test(test_a_killed_sweep_resumes_without_losing_or_repeating_rows),
        cmocka_unit_test(test_a_terminated_sweep_leaves_only_complete_files),
        cmocka_unit_test(test_two_shards_merge_into_the_whole_sweep),
        cmocka_unit_test(test_a_sweep_runs_what_compare_runs),
    };
    int rc = cmocka_run_group_tests(tests, group_setup, NULL);
    rm_tree(TMP);
    return rc;
}
