/* test_schedules.c: the schedule plug-in kind (schedules/): every registered schedule through
 * the same contract (a consistent ops table, a valid decision on a toy context, its rule: fifo's
 * reverse order, priority by layer, TicTac's forward order), options checked against the model
 * (a partition below 1 KB or above the model, a credit of 0: usage errors naming the option),
 * plugins loaded from a shared object (the example, a bad version, a bad decision at run time),
 * and the binary: `bellows schedules`, every bad invocation of the flags (exit 2 naming the
 * flag, nothing written), a scheduled run's files naming the schedule, and the same command
 * giving the same files. */
#include "testutil.h"

#include "clitest.h"
#include "schedule.h"

/* A context of three layers of one tensor each (300, 200, 100 x 1000 floats), the first layer's
 * forward the longest. */
static BellowsScheduleTensor T[3];
static BellowsScheduleLayer L[3];

static ScheduleContext toy_context(void)
{
    const double rows[3] = {300, 200, 100}, fwd[3] = {3e-3, 1e-3, 2e-3};
    for (int l = 0; l < 3; l++) {
        snprintf(T[l].name, sizeof T[l].name, "layer%d.weight", l);
        T[l].layer = l;
        T[l].numel = rows[l] * 1000;
        T[l].ndim = 2;
        snprintf(L[l].name, sizeof L[l].name, "layer%d", l);
        L[l].fwd_s = fwd[l];
        L[l].bwd_s = 2 * fwd[l];
        L[l].first_tensor = l;
        L[l].n_tensors = 1;
    }
    return (ScheduleContext){.n_tensors = 3,
                             .tensors = T,
                             .n_layers = 3,
                             .layers = L,
                             .model_bytes = 2.4e6,
                             .workers = 4,
                             .bandwidth_Bps = 1.25e9,
                             .latency_s = 5e-6,
                             .algorithm = "ring",
                             .layerwise = 1,
                             .bucket_bytes = 25 * 1048576.0,
                             .first_bucket_bytes = 1048576.0};
}

/* spec's first decision on the toy context. */
static ScheduleDecision decide_once(const char *spec, double *priority)
{
    ScheduleContext ctx = toy_context();
    Schedule *s = NULL;
    BwError err;
    if (schedule_create(spec, "--schedule", &ctx, &s, &err)) fail_msg("%s: %s", spec, err.msg);
    const double bytes[3] = {1.2e6, 0.8e6, 0.4e6};
    ScheduleObs obs = {.step = 0, .tensor_bytes = bytes, .last_step_s = NAN};
    ScheduleDecision d = {.priority = priority};
    assert_int_equal(schedule_step(s, &obs, &d, &err), BW_OK);
    schedule_free(s);
    return d;
}

static void test_every_registered_schedule_keeps_the_contract(void **state)
{
    (void)state;
    int n = 0;
    for (const ScheduleOps *const *r = schedule_registry(); *r; r++, n++) {
        BwError err;
        if (schedule_ops_check(*r, "built-in", &err)) fail_msg("%s: %s", (*r)->name, err.msg);
        assert_ptr_equal(schedule_find((*r)->name), *r);
        double priority[3];
        ScheduleDecision d = decide_once((*r)->name, priority);
        assert_true(d.partition_bytes == 0 || d.partition_bytes >= 1024);
        char desc[64];
        ScheduleContext ctx = toy_context();
        Schedule *s = NULL;
        assert_int_equal(schedule_create((*r)->name, "--schedule", &ctx, &s, &err), BW_OK);
        schedule_describe(s, desc, sizeof desc);
        assert_true(desc[0] != '\0');
        schedule_free(s);
    }
    assert_int_equal(n, 4); /* schedules.def: fifo, bytescheduler, p3, tictac */
    assert_string_equal(schedule_registry()[0]->name, "fifo");
}

static void test_each_built_in_decides_its_rule(void **state)
{
    (void)state;
    double p[3];
    ScheduleDecision d = decide_once("fifo", p); /* the backward's order, DDP's buckets */
    assert_true(p[2] < p[1] && p[1] < p[0]);
    assert_true(d.bucket_bytes == 25 * 1048576.0 && d.first_bucket_bytes == 1048576.0);
    assert_true(d.partition_bytes == 0 && d.credit_bytes == 0 && d.credit_partitions == 0);
    d = decide_once("bytescheduler", p); /* layers in order; the model is below 4096000 bytes */
    assert_true(p[0] < p[1] && p[1] < p[2]);
    assert_true(d.bucket_bytes == 0 && d.partition_bytes == 2.4e6 && d.credit_bytes == 4 * 2.4e6);
    d = decide_once("bytescheduler:partition=100000,credit=3", p);
    assert_true(d.partition_bytes == 100000 && d.credit_bytes == 300000);
    d = decide_once("p3", p);
    assert_true(p[0] < p[1] && p[1] < p[2]);
    assert_true(d.partition_bytes == 160000 && d.credit_partitions == 1);
    d = decide_once("tictac", p); /* when the forward reaches each: 0, 3 ms, 4 ms */
    assert_true(p[0] == 0 && p[1] == 3e-3 && p[2] == 4e-3);
    assert_true(d.partition_bytes == 0 && d.credit_partitions == 1 && d.bucket_bytes == 0);
}

/* A usage error naming the option, for a spec the toy model cannot take. */
static void expect_refused(const char *spec, const char *needle)
{
    ScheduleContext ctx = toy_context();
    Schedule *s = NULL;
    BwError err = {{0}};
    int rc = schedule_create(spec, "--schedule", &ctx, &s, &err);
    if (rc != BW_EUSAGE || !strstr(err.msg, needle) || !strstr(err.msg, "--schedule"))
        fail_msg("%s: status %d, message '%s' (expected a usage error naming '%s')", spec, rc,
                 err.msg, needle);
    assert_null(s);
}

static void test_bad_options_are_usage_errors_naming_them(void **state)
{
    (void)state;
    expect_refused("nope", "'nope': unknown schedule (known: fifo, bytescheduler, p3, tictac)");
    expect_refused("bytescheduler:partition=1023", "partition");
    expect_refused("bytescheduler:partition=2400001", "larger than the whole model");
    expect_refused("bytescheduler:credit=0", "credit");
    expect_refused("p3:slice=512", "slice");
    expect_refused("p3:slice=1e9", "larger than the whole model");
    expect_refused("p3:credit=0", "credit");
    expect_refused("fifo:partition=4096", "unknown option 'partition'");
    expect_refused("tictac:x=1", "unknown option");
    expect_refused("./no-such-file.so", "no such file");
    expect_refused("./x.py", "Python is for policies only");
    /* the largest partition the toy takes is the whole model */
    double p[3];
    assert_true(decide_once("bytescheduler:partition=2400000", p).partition_bytes == 2.4e6);
}

static void test_the_example_plugin_loads_and_decides(void **state)
{
    (void)state;
    double p[3];
    ScheduleDecision d = decide_once(PLUGIN_SMALLFIRST, p);
    assert_true(p[2] < p[1] && p[1] < p[0]); /* by this step's bytes */
    assert_int_equal(d.credit_partitions, 1);
    BwError err;
    assert_int_equal(schedule_print_plugin(NULL, PLUGIN_SMALLFIRST, "--plugin", &err), BW_OK);
    expect_refused(PLUGIN_BAD_VERSION, "interface version 2");
}

/* ---- the binary ---- */

#define RUN "run --epochs 1 --train-samples 256 --test-samples 50 --workers 4 --quiet "

static void test_bad_invocations_exit_2_naming_the_flag(void **state)
{
    (void)state;
    expect_refusal("--schedule 'nope': unknown schedule", RUN "--schedule nope");
    expect_refusal("partition", RUN "--workload resnet50 --schedule bytescheduler:partition=512");
    expect_refusal("larger than the whole model",
                   RUN "--workload resnet50 --schedule bytescheduler:partition=1e12");
    expect_refusal("credit", RUN "--workload resnet50 --schedule bytescheduler:credit=0");
    expect_refusal("--servers", RUN "--allreduce ps --servers 0");
    expect_refusal("--servers: parameter servers need --allreduce ps", RUN "--servers 2");
    expect_refusal("--ps-hosts: parameter servers need --allreduce ps", RUN "--ps-hosts own");
    expect_refusal("--servers: 9 colocated servers for 4 workers",
                   RUN "--allreduce ps --servers 9");
    expect_refusal("--topology islands with --allreduce ps",
                   RUN "--allreduce ps --topology islands");
    expect_refusal("--overlap none with --schedule p3", RUN "--schedule p3 --overlap none");
    /* a periodic or outer policy: refused, not priced as without --schedule (issue 47) */
    expect_refusal("--policy cpsgd:period=4 (periodic) with --schedule p3",
                   RUN "--policy cpsgd:period=4 --schedule p3");
    expect_refusal("--policy diloco:H=4 (outer) with --schedule tictac",
                   RUN "--workload resnet50 --policy diloco:H=4 --schedule tictac");
    expect_refusal("--policy cpsgd:period=4 (periodic) with --overlap layer",
                   RUN "--policy cpsgd:period=4 --overlap layer");
    expect_refusal("--collectives analytic",
                   RUN "--workload resnet50 --allreduce ps --collectives analytic --schedule p3");
    expect_refusal("--schedule ./missing.so: no such file", RUN "--schedule ./missing.so");
    expect_refusal("interface version 2", RUN "--schedule " PLUGIN_BAD_VERSION);
    expect_refusal("--overlap: expected one of none|ddp|tensor|layer", RUN "--overlap bogus");
    expect_refusal("schedules: takes no arguments", "schedules bogus");
}

static void test_the_listing_names_every_schedule(void **state)
{
    (void)state;
    assert_int_equal(bw("schedules --plugin %s", PLUGIN_SMALLFIRST), 0);
    char *out = tmp_file("stdout");
    for (const ScheduleOps *const *r = schedule_registry(); *r; r++)
        assert_non_null(strstr(out, (*r)->name));
    assert_non_null(strstr(out, "smallfirst"));
    assert_non_null(strstr(out, "partition=-"));
    free(out);
}

/* A scheduled run names its schedule in summary.json and each step's state in steps.csv, and
 * the same command gives the same files (but for the wall clock). */
static void test_a_scheduled_run_names_its_schedule_and_repeats_exactly(void **state)
{
    (void)state;
    for (int k = 0; k < 2; k++)
        assert_int_equal(bw(RUN "--workload resnet50 --schedule p3:slice=1000000 --allreduce ps "
                                "--servers 2 --out @/run%d",
                            k),
                         0);
    char *sum = tmp_file("run0/summary.json"), *steps = tmp_file("run0/steps.csv");
    assert_non_null(strstr(sum, "\"schedule\": \"p3:slice=1000000,credit=1\""));
    assert_non_null(strstr(sum, "\"overlap\": \"layer\""));
    assert_non_null(strstr(sum, "\"servers\": 2"));
    assert_non_null(strstr(steps, ",policy_state,schedule\n"));
    assert_non_null(strstr(steps, ",\"slice=1000000,credit=1\"\n"));
    char cmd[512];
    snprintf(cmd, sizeof cmd,
             "cd %s && cmp run0/steps.csv run1/steps.csv && cmp run0/evals.csv run1/evals.csv && "
             "diff <(grep -v wall_s run0/summary.json) <(grep -v wall_s run1/summary.json) "
             ">/dev/null",
             TMP);
    char bash[600];
    snprintf(bash, sizeof bash, "bash -c '%s'", cmd);
    assert_int_equal(system(bash), 0);
    free(sum);
    free(steps);
    /* a run with plugin that decides badly at step 2: a runtime failure naming it */
    assert_int_equal(
        bw(RUN "--batch 8 --workload resnet50 --schedule %s --out @/bad", PLUGIN_BAD_STEP), 1);
    char *err = tmp_file("stderr");
    assert_non_null(strstr(err, "invalid decision at step 2"));
    free(err);
}

/* One timeline event of worker 0 (a line of the Chrome trace: name, cat, tid, ts, dur, step). */
typedef struct {
    char name[64], cat[24];
    int tid;
    double ts, dur;
    long step;
} Event;

static int parse_event(const char *line, Event *e)
{
    const char *n = strstr(line, "{\"name\":\""), *c = strstr(line, "\"cat\":\"");
    const char *p = strstr(line, "\"pid\":0,"), *t = strstr(line, "\"ts\":");
    const char *d = strstr(line, "\"dur\":"), *st = strstr(line, "\"step\":");
    if (!n || !c || !p || !t || !d || !st) return 0;
    memset(e, 0, sizeof *e);
    sscanf(n + 9, "%63[^\"]", e->name);
    sscanf(c + 7, "%23[^\"]", e->cat);
    sscanf(p + 8, "\"tid\":%d", &e->tid);
    e->ts = strtod(t + 5, NULL);
    e->dur = strtod(d + 6, NULL);
    e->step = strtol(st + 7, NULL, 10);
    return 1;
}

/* The timeline of a layer-wise run shows its partitions with their priority on the
 * communication lane, the compute lane waiting for a layer's update, and step t's communication
 * overlapping step t+1's forward. */
static void test_the_timeline_shows_partitions_and_cross_step_overlap(void **state)
{
    (void)state;
    assert_int_equal(bw(RUN "--batch 16 --workload vgg16 --schedule bytescheduler "
                            "--timeline @/tl.json --timeline-steps 0:3 --out @/tl"),
                     0);
    char *text = tmp_file("tl.json");
    assert_non_null(text);
    static Event ev[20000];
    int n = 0, partitions = 0, waits = 0, overlaps = 0;
    for (char *line = strtok(text, "\n"); line && n < 20000; line = strtok(NULL, "\n")) {
        if (!parse_event(line, &ev[n])) continue;
        partitions += strcmp(ev[n].name, "partition") == 0 && strstr(line, "\"priority\":");
        waits += strncmp(ev[n].name, "wait for ", 9) == 0 && ev[n].tid == 0;
        n++;
    }
    for (int i = 0; i < n; i++) /* a collective of step t while step t+1's forward runs */
        for (int j = 0; ev[i].tid > 0 && j < n; j++)
            overlaps += ev[j].tid == 0 && ev[j].step == ev[i].step + 1 &&
                        strncmp(ev[j].name, "forward", 7) == 0 && ev[j].ts < ev[i].ts + ev[i].dur &&
                        ev[i].ts < ev[j].ts + ev[j].dur;
    if (!partitions || !waits || !overlaps)
        fail_msg("%d events: %d partitions with a priority, %d waits for an update, %d overlaps", n,
                 partitions, waits, overlaps);
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_registered_schedule_keeps_the_contract),
        cmocka_unit_test(test_each_built_in_decides_its_rule),
        cmocka_unit_test(test_bad_options_are_usage_errors_naming_them),
        cmocka_unit_test(test_the_example_plugin_loads_and_decides),
        cmocka_unit_test(test_bad_invocations_exit_2_naming_the_flag),
        cmocka_unit_test(test_the_listing_names_every_schedule),
        cmocka_unit_test(test_a_scheduled_run_names_its_schedule_and_repeats_exactly),
        cmocka_unit_test(test_the_timeline_shows_partitions_and_cross_step_overlap),
    };
    return cmocka_run_group_tests(tests, clitest_setup, clitest_teardown);
}
