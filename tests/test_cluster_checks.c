/* test_cluster_checks.c: bellows cluster against what issue 37 found wrong: a job that starts
 * within SimGrid's timing precision of 0, a scheduled job's summary, messages that blame a key
 * the file does not have (the jobs' workers added up, hosts as reals, a top-level placement),
 * flags given twice, --set's limit, and what a Ctrl-C keeps (--resume). */
#include "testutil.h"

#include <signal.h>
#include <sys/stat.h>

#include "clitest.h"

#define SMALL "\"epochs\": 1, \"train_samples\": 1024, \"test_samples\": 200"
/* A synchronous job of 2 dense workers, uncosted. */
#define JOB(name, extra)                                                                           \
    "{\"name\": \"" name "\", \"workers\": 2, " SMALL ", \"policy\": \"sync\", \"compressor\": "   \
    "\"none\", \"costs\": \"ideal\"" extra "}"

/* expect_refusal for a cluster file holding text. */
static void refused(const char *needle, const char *text)
{
    write_tmp("c.json", text);
    expect_refusal(needle, "cluster @/c.json --out @/out");
}

/* SimGrid wakes a job of "start_s": 1e-12 at 1e-9 (its timing precision): the job's books count
 * from there and add up (it aborted on their assertion), from the file and from --set. */
static void test_a_start_within_the_timing_precision_runs(void **state)
{
    (void)state;
    write_tmp("tiny.json", "{\"jobs\": [" JOB("a", ", \"start_s\": 1e-12") ", " JOB("b", "") "]}");
    if (bw("cluster @/tiny.json --alone none --out @/t1") != 0)
        fail_msg("stderr: %s", tmp_file("stderr"));
    write_tmp("two.json", "{\"jobs\": [" JOB("a", "") ", " JOB("b", "") "]}");
    if (bw("cluster @/two.json --alone none --out @/t2 --set a.start_s=0,1e-12") != 0)
        fail_msg("stderr: %s", tmp_file("stderr"));
    double sim = summary_num("t2/points/a.start_s=1e-12/jobs/a", "sim_time_s");
    double books = summary_num("t2/points/a.start_s=1e-12/jobs/a", "compute_s") +
                   summary_num("t2/points/a.start_s=1e-12/jobs/a", "communication_s") +
                   summary_num("t2/points/a.start_s=1e-12/jobs/a", "compression_s") +
                   summary_num("t2/points/a.start_s=1e-12/jobs/a", "wait_s");
    assert_true(fabs(books - sim) <= 1e-9 * sim);
}

/* A scheduled job's summary.json says what its schedule did, as bellows run's does. */
static void test_a_scheduled_job_reports_its_schedule(void **state)
{
    (void)state;
    write_tmp("s.json", "{\"jobs\": [{\"name\": \"a\", \"workers\": 2, " SMALL
                        ", \"workload\": \"resnet18-cifar\", \"schedule\": \"bytescheduler\", "
                        "\"costs\": \"ideal\"}]}");
    assert_int_equal(bw("cluster @/s.json --alone none --out @/s"), 0);
    char *summary = tmp_file("s/jobs/a/summary.json");
    assert_non_null(summary);
    if (strstr(summary, "\"schedule_state\": \"\"")) fail_msg("no schedule state: %s", summary);
    assert_true(summary_num("s/jobs/a", "partitions_per_step") > 1);
    free(summary);
}

/* Each message names what the file really holds. */
static void test_messages_blame_the_keys_the_file_has(void **state)
{
    (void)state;
    refused("c.json: the jobs' \"workers\" add up to 8192 GPUs",
            "{\"jobs\": [{\"name\": \"a\", \"workers\": 4096}, {\"name\": \"b\", \"workers\": "
            "4096}]}");
    refused("job \"a\": key \"hosts\": item 1: expected an integer GPU index (0, 1, ...) or a "
            "host name (\"gpu0\", or a platform file's), got 1.0",
            "{\"jobs\": [{\"name\": \"a\", \"workers\": 2, \"hosts\": [0, 1.0]}]}");
    refused("key \"hosts\": item 0: expected an integer GPU index",
            "{\"jobs\": [{\"name\": \"a\", \"workers\": 2, \"hosts\": [0.0, 1.0]}]}");
    char cmd[256];
    snprintf(cmd, sizeof cmd, "%s platform --workers 4 >%s/p.xml", BELLOWS_BIN, TMP);
    assert_int_equal(system(cmd), 0);
    char text[512];
    snprintf(
        text, sizeof text,
        "{\"platform\": \"%s/p.xml\", \"placement\": \"spread\", \"jobs\": [" JOB("a", "") "]}",
        TMP);
    refused("c.json: key \"placement\": spread needs a generated fat-tree", text);
    snprintf(
        text, sizeof text,
        "{\"platform\": \"%s/p.xml\", \"jobs\": [" JOB("a", ", \"placement\": \"spread\"") "]}",
        TMP);
    refused("c.json: job \"a\": key \"placement\": spread needs", text);
}

/* A flag given twice is refused, as bellows run refuses it, but --set: repeated, its keys
 * combine into axes (they ran one axis only, and --out A --out B wrote B). */
static void test_flags_given_twice(void **state)
{
    (void)state;
    write_tmp("two.json", "{\"jobs\": [" JOB("a", "") ", " JOB("b", "") "]}");
    expect_refusal("--out: given twice", "cluster @/two.json --out @/A --out @/B");
    expect_refusal("--alone: given twice", "cluster @/two.json --alone none --alone=run");
    expect_refusal("--set: key 'a.seed' given twice",
                   "cluster @/two.json --out @/A --set a.seed=1 --set=a.seed=2");
    assert_int_equal(bw("cluster @/two.json --alone none --out @/sets --set a.seed=1 --set "
                        "b.seed=2,3"),
                     0);
    char *csv = tmp_file("sets/sweep.csv");
    assert_non_null(csv);
    assert_true(strncmp(csv, "a.seed,b.seed,job,", 18) == 0);
    free(csv);
    char *b3 = tmp_file("sets/points/a.seed=1_b.seed=3/cluster.json");
    assert_non_null(b3);
    free(b3);
}

/* --set's cross product is held to sweep's limit, refused before any point is checked. */
static void test_too_many_points_are_refused(void **state)
{
    (void)state;
    write_tmp("two.json", "{\"jobs\": [" JOB("a", "") ", " JOB("b", "") "]}");
    char args[1024] = "cluster @/two.json --out @/many";
    const char *keys[] = {"a.seed",   "b.seed",   "a.lr",    "b.lr",
                          "a.epochs", "b.epochs", "a.batch", "b.batch"};
    for (int k = 0; k < 8; k++) {
        size_t n = strlen(args);
        snprintf(args + n, sizeof args - n, " --set %s=1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16",
                 keys[k]);
    }
    expect_refusal("--set: 4294967296 points is too many (at most 1000000, as bellows sweep)", "%s",
                   args);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, clitest_setup, clitest_teardown)
        T(test_a_start_within_the_timing_precision_runs),
        T(test_a_scheduled_job_reports_its_schedule),
        T(test_messages_blame_the_keys_the_file_has),
        T(test_flags_given_twice),
        T(test_too_many_points_are_refused),
#undef T
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
