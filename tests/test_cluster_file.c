/* test_cluster_file.c: bellows cluster's input, answered as every bad input must be: exit 2,
 * one line naming the file, the job and the key, and nothing written (clitest.h's
 * expect_refusal compares the scratch folder before and after). A key that is not a flag, a
 * cluster key in a job and a job key at the top, a value of the wrong type or range, two jobs on
 * one GPU, a job that does not fit, jobs that disagree on the hardware, an analytic job out of
 * the rank order its closed forms take (spread, or its hosts), --set's keys; and a run
 * that fails midway, or is interrupted, leaves a new --out as it found it (absent). */
#include "testutil.h"

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>

#include "clitest.h"

#define JOB "\"workers\": 2, \"epochs\": 1, \"train_samples\": 1024, \"test_samples\": 200"

/* expect_refusal for a cluster file holding text. */
static void refused(const char *needle, const char *text)
{
    write_tmp("c.json", text);
    expect_refusal(needle, "cluster @/c.json --out @/out");
}

static void test_keys_are_flags_in_their_place(void **state)
{
    (void)state;
    refused("c.json: job \"a\": unknown key \"polcy\"",
            "{\"jobs\": [{\"name\": \"a\", \"polcy\": 1}]}");
    refused("c.json: unknown key \"bogus\"", "{\"bogus\": 1, \"jobs\": [{\"name\": \"a\"}]}");
    refused("c.json: job \"a\": unknown key \"out\"",
            "{\"jobs\": [{\"name\": \"a\", \"out\": \"x\"}]}");
    refused("job \"a\": key \"bandwidth\" belongs to the cluster",
            "{\"jobs\": [{\"name\": \"a\", \"bandwidth\": \"1Gbps\"}]}");
    refused("c.json: key \"policy\" belongs to a job",
            "{\"policy\": \"sync\", \"jobs\": [{\"name\": \"a\"}]}");
    refused("job \"a\": key \"train-samples\": write the flag's hyphens as underscores",
            "{\"jobs\": [{\"name\": \"a\", \"train-samples\": 64}]}");
    refused("c.json: key \"jobs\": missing", "{\"bandwidth\": \"1Gbps\"}");
    refused("c.json: key \"version\"", "{\"version\": 2, \"jobs\": [{\"name\": \"a\"}]}");
    refused("c.json: line 1", "{\"jobs\": [{\"name\": \"a\",}]}");
    refused("c.json: jobs[0]: key \"name\"", "{\"jobs\": [{\"name\": \"../x\"}]}");
    refused("job \"a\": key \"name\": jobs 0 and 1 are both called \"a\"",
            "{\"jobs\": [{\"name\": \"a\"}, {\"name\": \"a\"}]}");
}

static void test_values_are_checked_as_the_flags(void **state)
{
    (void)state;
    refused("c.json: job \"a\": key \"epochs\": expected an integer",
            "{\"jobs\": [{\"name\": \"a\", \"epochs\": \"x\"}]}");
    refused("job \"a\": key \"stop_at_target\": expected true or false",
            "{\"jobs\": [{\"name\": \"a\", \"stop_at_target\": 1}]}");
    refused("job \"a\": key \"slowdown\": 3 values for 2 workers",
            "{\"jobs\": [{\"name\": \"a\", " JOB ", \"slowdown\": [1, 2, 3]}]}");
    refused("c.json: key \"oversubscription\"",
            "{\"oversubscription\": 4, \"jobs\": [{\"name\": \"a\", " JOB "}]}");
    refused("job \"a\": key \"start_s\"", "{\"jobs\": [{\"name\": \"a\", \"start_s\": -1}]}");
    refused("job \"a\": key \"policy\"",
            "{\"jobs\": [{\"name\": \"a\", " JOB ", \"policy\": \"nope\"}]}");
    refused("job \"a\": key \"placement\"",
            "{\"jobs\": [{\"name\": \"a\", \"placement\": \"wide\"}]}");
}

static void test_placement_is_checked(void **state)
{
    (void)state;
    refused("job \"b\": key \"hosts\": GPU 1 is job \"a\"'s too; two jobs on one GPU",
            "{\"workers\": 4, \"jobs\": [{\"name\": \"a\", " JOB ", \"hosts\": [0, 1]}, "
            "{\"name\": \"b\", " JOB ", \"hosts\": [1, 2]}]}");
    refused("job \"a\": key \"hosts\": gpu9 is not a GPU of the cluster of 2 (gpu0 to gpu1; "
            "the top-level \"workers\" sizes the cluster",
            "{\"jobs\": [{\"name\": \"a\", " JOB ", \"hosts\": [\"gpu0\", \"gpu9\"]}]}");
    const char *sloppy[] = {"gpu-0", "gpu+1", "gpu 1", "gpu01", "gpu", "gpu1x"};
    for (int i = 0; i < 6; i++) {
        char text[256], needle[96];
        snprintf(text, sizeof text,
                 "{\"workers\": 4, \"jobs\": [{\"name\": \"a\", " JOB
                 ", \"hosts\": [\"gpu3\", \"%s\"]}]}",
                 sloppy[i]);
        snprintf(needle, sizeof needle, "key \"hosts\": %s is not a GPU of the cluster of 4",
                 sloppy[i]);
        refused(needle, text);
    }
    refused("key \"workers\": 2, but key \"hosts\" lists 1", /* one number is one GPU */
            "{\"workers\": 4, \"jobs\": [{\"name\": \"a\", " JOB ", \"hosts\": 3}]}");
    refused("job \"b\": key \"workers\": 4 GPUs, but 2 of the cluster's 4 are free",
            "{\"workers\": 4, \"jobs\": [{\"name\": \"a\", " JOB "}, {\"name\": \"b\", "
            "\"workers\": 4}]}");
    refused("job \"a\": key \"workers\": 3, but key \"hosts\" lists 2",
            "{\"jobs\": [{\"name\": \"a\", \"workers\": 3, \"hosts\": [0, 1]}]}");
}

/* The jobs share the hardware and the network: they must agree on what it is. */
static void test_jobs_share_the_hardware(void **state)
{
    (void)state;
    refused("job \"b\": key \"costs\"", "{\"jobs\": [{\"name\": \"a\", " JOB ", \"costs\": "
                                        "\"ideal\"}, {\"name\": \"b\", " JOB "}]}");
    refused("job \"a\": key \"collectives\": analytic prices each collective alone",
            "{\"jobs\": [{\"name\": \"a\", " JOB ", \"collectives\": \"analytic\"}, "
            "{\"name\": \"b\", " JOB "}]}");
    refused("c.json: key \"network_model\"",
            "{\"network_model\": \"lv08\", \"jobs\": [{\"name\": \"a\", " JOB "}]}");
}

/* A priced job (price_workers): its GPUs, at least its workers, that fit the cluster; placed
 * by placement; its traffic is a ring's on the exact model (cl_fabric.c). */
static void test_priced_jobs_are_checked(void **state)
{
    (void)state;
#define PRICED JOB ", \"collectives\": \"analytic\", \"price_workers\": "
    refused("c.json: job \"a\": key \"price_workers\": expected an integer from its workers (2)",
            "{\"jobs\": [{\"name\": \"a\", " PRICED "\"x\"}]}");
    refused("c.json: job \"a\": key \"price_workers\": expected an integer from its workers (2)",
            "{\"jobs\": [{\"name\": \"a\", " PRICED "1}]}");
    refused("c.json: job \"b\": key \"price_workers\": 8 GPUs, but 6 of the cluster's 8 are free",
            "{\"workers\": 8, \"jobs\": [{\"name\": \"a\", " JOB "}, {\"name\": \"b\", " PRICED
            "8}]}");
    refused("c.json: job \"a\": key \"hosts\": a priced job",
            "{\"jobs\": [{\"name\": \"a\", " PRICED "4, \"hosts\": [0, 1]}]}");
    refused("c.json: job \"a\": key \"price_workers\": a priced job's traffic on the shared "
            "links is its ring's",
            "{\"jobs\": [{\"name\": \"a\", " PRICED "4, \"allreduce\": \"tree\"}]}");
    refused("c.json: job \"a\": key \"price_workers\" 4 with \"collectives\" transfer",
            "{\"jobs\": [{\"name\": \"a\", " JOB ", \"price_workers\": 4}]}");
    /* an analytic job unpriced, its ranks out of the order its closed forms take (spread over
     * leaves, or its hosts on two leaves alternately): priced as packed, so refused */
#define FAT "\"topology\": \"fat-tree\", \"leaf_size\": 2, \"workers\": 4, "
    refused("c.json: job \"a\": key \"placement\": spread puts its ranks under the leaf "
            "switches out of rank order",
            "{" FAT "\"placement\": \"spread\", \"jobs\": [{\"name\": \"a\", " JOB
            ", \"collectives\": \"analytic\"}]}");
    refused("c.json: job \"a\": key \"hosts\": its hosts put its ranks under the leaf switches "
            "out of rank order",
            "{" FAT "\"jobs\": [{\"name\": \"a\", " JOB
            ", \"collectives\": \"analytic\", \"hosts\": [0, 2]}]}");
#undef FAT
#undef PRICED
}

static void test_command_line_is_checked(void **state)
{
    (void)state;
    write_tmp("ok.json", "{\"jobs\": [{\"name\": \"a\", " JOB "}]}");
    expect_refusal("expected the cluster file first", "cluster --out @/out");
    expect_refusal("cluster file @/none.json", "cluster @/none.json --out @/out");
    expect_refusal("--set z.policy: @/ok.json has no job \"z\"",
                   "cluster @/ok.json --out @/out --set z.policy=sync");
    expect_refusal("--set point a.polcy=sync", "cluster @/ok.json --out @/out --set a.polcy=sync");
    expect_refusal("--set: expected KEY=V1", "cluster @/ok.json --out @/out --set policy");
    expect_refusal("--timeline-steps",
                   "cluster @/ok.json --out @/out --timeline --timeline-steps 3");
    /* every point a folder of its own, of a name a file system takes */
    expect_refusal("a.workload's values 'x/50' and 'x-50' would both write the folder "
                   "points/a.workload=x-50",
                   "cluster @/ok.json --out @/out --set a.workload=x/50,x-50");
    expect_refusal("a.seed's values '3' and '3' would both write",
                   "cluster @/ok.json --out @/out --set a.seed=1,3,3");
    char longer[1024];
    snprintf(longer, sizeof longer,
             "cluster @/ok.json --out @/out --set 'a.lr=0.%0130d,0.1 a.seed=%0130d,2'", 1, 1);
    expect_refusal("would be 275 bytes, more than a file name's 255", longer);
    expect_refusal("key \"seed\": expected an integer, got '11111111111111111111'",
                   "cluster @/ok.json --out @/out --set a.seed=11111111111111111111");
    /* a job's name may hold dots: JOB.KEY splits at the last */
    write_tmp("dots.json", "{\"jobs\": [{\"name\": \"x.y\", " JOB "}]}");
    assert_int_equal(bw("cluster @/dots.json --out @/dots --alone none --set x.y.seed=1,2"), 0);
    char *seed = tmp_file("dots/points/x.y.seed=2/jobs/x.y/summary.json");
    assert_non_null(seed);
    free(seed);
    char full[128];
    snprintf(full, sizeof full, "%s/full", TMP);
    assert_int_equal(mkdir(full, 0755), 0);
    write_tmp("full/x", "earlier results");
    expect_refusal("--out @/full: the folder is not empty", "cluster @/ok.json --out @/full");
}

/* A job whose policy calls exit() fails the cluster (exit 1, saying so), and a new --out is
 * gone again. */
static void test_a_failure_leaves_no_out(void **state)
{
    (void)state;
    char text[1024];
    snprintf(text, sizeof text,
             "{\"jobs\": [{\"name\": \"a\", " JOB "}, {\"name\": \"b\", " JOB
             ", \"policy\": \"%s\"}]}",
             PLUGIN_EXIT);
    write_tmp("exits.json", text);
    assert_int_equal(bw("cluster @/exits.json --out @/gone"), 1);
    char *err = tmp_file("stderr");
    assert_non_null(strstr(err, "exit()"));
    free(err);
    char path[256];
    snprintf(path, sizeof path, "%s/gone", TMP);
    assert_false(file_exists(path));
}

/* Starts `bellows cluster TMP/long.json ARGS` in a process group of its own, interrupts it with
 * SIGINT while its children simulate, and returns its stderr (exit 130 checked). */
static char *interrupted(const char *args)
{
    write_tmp("long.json", "{\"jobs\": [{\"name\": \"a\", \"workers\": 2, \"epochs\": 200, "
                           "\"train_samples\": 4096}, {\"name\": \"b\", \"workers\": 2, "
                           "\"epochs\": 200, \"train_samples\": 4096}]}");
    write_tmp("stdout", "");
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "exec %s cluster %s/long.json %s >%s/stdout 2>%s/stderr", BELLOWS_BIN,
             TMP, args, TMP, TMP);
    pid_t pid = clitest_spawn(cmd);
    int ready = 0;
    for (int tries = 0; tries < 12000 && !ready; tries++) {
        usleep(5000);
        char *out = tmp_file("stdout");
        ready = out && strstr(out, "results in");
        free(out);
    }
    assert_true(ready);
    usleep(300000); /* the children are simulating */
    kill(-pid, SIGINT);
    int st;
    waitpid(pid, &st, 0);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 130);
    return tmp_file("stderr");
}

/* Whether a folder below path (path itself aside) is empty. */
static int has_empty_folder(const char *path)
{
    DIR *d = opendir(path);
    int found = 0;
    for (struct dirent *e; d && !found && (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        char sub[1024];
        snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
        DIR *s = opendir(sub);
        if (!s) continue;
        int n = 0;
        for (struct dirent *f; (f = readdir(s));) n += f->d_name[0] != '.';
        closedir(s);
        found = n == 0 || has_empty_folder(sub);
    }
    if (d) closedir(d);
    return found;
}

/* Ctrl-C (SIGINT to the process group) once the simulations run: exit 130, one line saying so,
 * and a new --out gone again, no temporary file left; into a folder that held files, those stay
 * and no empty folder of the stopped point is left. */
static void test_an_interruption_leaves_no_out(void **state)
{
    (void)state;
    char args[512], path[256];
    snprintf(args, sizeof args, "--out %s/int", TMP);
    char *err = interrupted(args);
    if (!strstr(err, "bellows: cluster: interrupted") || !strstr(err, "nothing written"))
        fail_msg("stderr: %s", err);
    free(err);
    snprintf(path, sizeof path, "%s/int", TMP);
    assert_false(file_exists(path));
    /* into a folder with files (--force): they stay, and so does nothing half-made */
    snprintf(path, sizeof path, "%s/kept", TMP);
    assert_int_equal(mkdir(path, 0755), 0);
    write_tmp("kept/notes.txt", "mine");
    snprintf(args, sizeof args, "--out %s/kept --force --set b.seed=2,3", TMP);
    err = interrupted(args);
    if (!strstr(err, "the files written so far stay")) fail_msg("stderr: %s", err);
    free(err);
    char *notes = tmp_file("kept/notes.txt");
    assert_string_equal(notes, "mine");
    free(notes);
    assert_false(has_empty_folder(path));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_keys_are_flags_in_their_place),
        cmocka_unit_test(test_values_are_checked_as_the_flags),
        cmocka_unit_test(test_placement_is_checked),
        cmocka_unit_test(test_jobs_share_the_hardware),
        cmocka_unit_test(test_priced_jobs_are_checked),
        cmocka_unit_test(test_command_line_is_checked),
        cmocka_unit_test(test_a_failure_leaves_no_out),
        cmocka_unit_test(test_an_interruption_leaves_no_out),
    };
    return cmocka_run_group_tests(tests, clitest_setup, clitest_teardown);
}
