/* test_costs_horovod.c: a cost profile's "horovod" (issue 48 item 7): the calls Horovod's
 * background thread makes of a backward's tensors (costs_horovod_fuse) against the closed form
 * worked out by hand on a small timeline, with a thread that is never late and with one whose
 * calls outlast a cycle; the cycle's start rule; a run's buckets are those calls (the tensors
 * of each call in the timeline, and a shorter cycle moving the step by exactly the cycles'
 * difference); the built-ins give each release's defaults; a bad "horovod" is refused naming
 * the field, with exit 2. */
#include "testutil.h"

#include <math.h>

#include "clitest.h"
#include "costs.h"

#define MIB (1024.0 * 1024.0)

/* Each call of the thread takes 7 ms (ctx unused). */
static double seven_ms(void *ctx, const HvdCall *call)
{
    (void)ctx;
    (void)call;
    return 7e-3;
}

static void expect_call(const HvdCall *c, int first, int n, double start, int opens)
{
    if (c->first != first || c->n != n || fabs(c->start_s - start) > 1e-12 ||
        c->opens_cycle != opens)
        fail_msg("call of tensors %d..+%d at %.9g s (opens %d), expected %d..+%d at %.9g s (%d)",
                 c->first, c->n, c->start_s, c->opens_cycle, first, n, start, opens);
}

/* Six tensors ready at 1, 2, 3, 7, 16 and 16 ms, of 30, 30, 10, 4, 100 and 1 MiB; a cycle of
 * 5 ms and a threshold of 64 MiB (Horovod 0.18's defaults). A thread never late wakes at 0, 5,
 * 10, 15, 20 ms: at 5 it takes the first three, fuses 30 + 30 (60 <= 64) and leaves the 10
 * (70 > 64) to a call of its own in the same cycle; at 10 the 4 alone; at 15 nothing is ready;
 * at 20 the 100 alone (above the threshold) and the 1 after it (101 > 64). A thread whose calls
 * take 7 ms each: the cycle at 5 ends at 19 (two calls), so the next starts at once at 19
 * (max(5 + 5, 19)) and finds the 4, the 100 and the 1 ready (at 7 and 16): three calls, at 19,
 * 26 and 33. Threshold 0: every tensor a call of its own. */
static void test_fusion_follows_the_cycle_clock(void **state)
{
    (void)state;
    const HvdTensor t[] = {{1e-3, 30 * MIB}, {2e-3, 30 * MIB},   {3e-3, 10 * MIB},
                           {7e-3, 4 * MIB},  {16e-3, 100 * MIB}, {16e-3, 1 * MIB}};
    const CostHorovod h = {.present = 1, .fusion_bytes = 64 * MIB, .cycle_s = 5e-3};
    HvdCall c[6];
    assert_int_equal(costs_horovod_fuse(&h, t, 6, NULL, NULL, c), 5);
    expect_call(&c[0], 0, 2, 5e-3, 1);
    expect_call(&c[1], 2, 1, 5e-3, 0);
    expect_call(&c[2], 3, 1, 10e-3, 1);
    expect_call(&c[3], 4, 1, 20e-3, 1);
    expect_call(&c[4], 5, 1, 20e-3, 0);
    assert_true(c[0].bytes == 60 * MIB && c[3].bytes == 100 * MIB);
    assert_int_equal(costs_horovod_fuse(&h, t, 6, seven_ms, NULL, c), 5);
    expect_call(&c[0], 0, 2, 5e-3, 1);
    expect_call(&c[1], 2, 1, 12e-3, 0);
    expect_call(&c[2], 3, 1, 19e-3, 1);
    expect_call(&c[3], 4, 1, 26e-3, 0);
    expect_call(&c[4], 5, 1, 33e-3, 0);
    const CostHorovod none = {.present = 1, .fusion_bytes = 0, .cycle_s = 5e-3};
    assert_int_equal(costs_horovod_fuse(&none, t, 6, NULL, NULL, c), 6);
    expect_call(&c[1], 1, 1, 5e-3, 0);
}

/* RunLoopOnce's rule: idle, the grid's next point; busy past the cycle, at once; busy within
 * it, the cycle's end. */
static void test_the_cycle_starts_as_horovods_loop(void **state)
{
    (void)state;
    assert_true(fabs(costs_horovod_cycle_start(7e-3, 0, 5e-3, 0) - 10e-3) < 1e-15);
    assert_true(costs_horovod_cycle_start(10e-3, 0, 5e-3, 0) == 10e-3);
    assert_true(costs_horovod_cycle_start(0, 0, 5e-3, 0) == 0); /* ready at the cycle: taken */
    assert_true(costs_horovod_cycle_start(12e-3, 5e-3, 5e-3, 1) == 12e-3);
    assert_true(costs_horovod_cycle_start(8e-3, 5e-3, 5e-3, 1) == 10e-3);
}

/* Three layers a, b, c whose backward (c first) takes 2, 4 and 1 ms at 1e12 flop/s and batch 8:
 * c's 256 KiB ready at 2 ms, b's 1 MiB at 6, a's 64 KiB at 7. */
static const char WORKLOAD[] =
    "{\"name\": \"hvd\", \"compute\": \"flops\", \"layers\": ["
    "{\"name\": \"a\", \"fwd_flops\": 1e6, \"bwd_flops\": 1.25e8, \"tensors\": [{\"name\": "
    "\"a.weight\", \"shape\": [128, 128]}]}, "
    "{\"name\": \"b\", \"fwd_flops\": 1e6, \"bwd_flops\": 5e8, \"tensors\": [{\"name\": "
    "\"b.weight\", \"shape\": [512, 512]}]}, "
    "{\"name\": \"c\", \"fwd_flops\": 1e6, \"bwd_flops\": 2.5e8, \"tensors\": [{\"name\": "
    "\"c.weight\", \"shape\": [256, 256]}]}]}";

static void write_hvd_profile(const char *file, const char *horovod)
{
    char text[4096];
    snprintf(text, sizeof text,
             "{\"bellows_costs\": 1, \"name\": \"hvd\", \"implementation\": \"a toy\", \"gpu\": "
             "\"V100\", \"efficiency\": {\"fp32\": 0.5}, \"fixed\": {\"tensor_s\": 1e-4, "
             "\"kernel_s\": 1e-5, \"collective_s\": 2e-4}, \"ops\": {\"elementwise\": "
             "{\"kernels\": 1, \"rate\": [[1, 5e11]]}, \"optimizer\": {\"kernels\": 4, "
             "\"rate\": [[1, 1e10]]}}, \"networks\": {\"tcp\": {\"allreduce\": 0.5, "
             "\"allgather\": 0.25}}, \"allgather\": {\"overlaps_backward\": true}, "
             "\"horovod\": {%s}}",
             horovod);
    write_tmp(file, text);
}

#define HVD(cycle, threshold)                                                                      \
    "\"version\": \"0.18.0\", \"fusion_threshold_bytes\": " threshold ", \"cycle_ms\": " cycle     \
    ", \"response_cache\": true, \"batched_memcpy\": false, \"controller\": \"mpi\", "             \
    "\"operations\": \"nccl\""

/* The run's step (seconds), and its first step's calls on worker 0: tensors and bytes each. */
static double hvd_run(const char *profile, const char *out, int *tensors, double *bytes, int *n)
{
    assert_int_equal(
        bw("run --workload @/hvd-wl.json --costs @/%s --model softmax --workers 4 "
           "--batch 8 --gpu-flops 1e12 --bandwidth 10Gbps --latency "
           "10us --collectives analytic --overlap ddp --compressor none --policy sync --epochs 1 "
           "--train-samples 64 --test-samples 50 --quiet --out @/%s --timeline "
           "@/%s.json",
           profile, out, out),
        0);
    char name[128];
    snprintf(name, sizeof name, "%s.json", out);
    char *tl = tmp_file(name);
    assert_non_null(tl);
    *n = 0;
    for (const char *p = strstr(tl, "\"collectives\""); p && *n < 8;
         p = strstr(p + 1, "\"collectives\"")) {
        if (strncmp(strstr(p, "\"pid\":"), "\"pid\":0,", 8) || !strstr(p, "\"step\":0,")) continue;
        if (strstr(p, "\"step\":0,") > strchr(strstr(p, "\"args\""), '}')) continue;
        tensors[*n] = atoi(strstr(p, "\"tensors\":") + 10);
        bytes[(*n)++] = strtod(strstr(p, "\"bytes\":") + 8, NULL);
    }
    free(tl);
    return summary_num(out, "sim_time_s") / summary_num(out, "steps");
}

/* A run's buckets are the thread's calls: at a 5 ms cycle and a 1 MiB threshold, c alone (cycle
 * at 5 ms), then b and a in the cycle at 10 (1 MiB + 64 KiB > 1 MiB: two calls); at 2 MiB, b and
 * a fused. At a 4 ms cycle the calls are the same (at 4 and 8 ms), and the step, which ends
 * with the second cycle's calls, is exactly 2 ms shorter. */
static void test_a_runs_buckets_are_the_threads_calls(void **state)
{
    (void)state;
    write_tmp("hvd-wl.json", WORKLOAD);
    write_hvd_profile("hvd5.json", HVD("5", "1048576"));
    write_hvd_profile("hvd4.json", HVD("4", "1048576"));
    write_hvd_profile("hvd5f.json", HVD("5", "2097152"));
    int tensors[8], n;
    double bytes[8];
    const double five = hvd_run("hvd5.json", "r5", tensors, bytes, &n);
    assert_int_equal(n, 3);
    assert_true(bytes[0] == 262144 && bytes[1] == 1048576 && bytes[2] == 65536);
    assert_true(tensors[0] == 1 && tensors[1] == 1 && tensors[2] == 1);
    const double four = hvd_run("hvd4.json", "r4", tensors, bytes, &n);
    assert_int_equal(n, 3);
    if (!(fabs(five - four - 2e-3) <= 1e-9))
        fail_msg("a step at a 5 ms cycle %.12g s, at 4 ms %.12g s: expected 2 ms apart", five,
                 four);
    hvd_run("hvd5f.json", "r5f", tensors, bytes, &n);
    assert_int_equal(n, 2);
    assert_true(tensors[0] == 1 && tensors[1] == 2 && bytes[1] == 1048576 + 65536);
}

/* The seconds of the last step of run folder `out` (its steps.csv's last two end_s). */
static double last_step_s(const char *out)
{
    char name[128];
    snprintf(name, sizeof name, "%s/steps.csv", out);
    char *csv = tmp_file(name);
    assert_non_null(csv);
    double end[2] = {0, 0};
    for (const char *l = strchr(csv, '\n'); l && l[1]; l = strchr(l + 1, '\n')) {
        const char *f = l + 1; /* step,epoch,global_batch,lr,loss,end_s */
        for (int k = 0; k < 5; k++) f = strchr(f, ',') + 1;
        end[0] = end[1];
        end[1] = strtod(f, NULL);
    }
    free(csv);
    return end[1] - end[0];
}

/* The calls follow the batch: Accordion's batch mode (switch=1) trains epoch 0 at 8 images a GPU
 * and epoch 1 at 64, and its step at 64 is Horovod's at 64 as a run at 64 from the start plans it
 * (c, b and a each in a cycle of its own, where at 8 b and a were fused in one): not the calls
 * of the first batch, which they once stayed. */
static void test_the_calls_follow_a_policys_batch(void **state)
{
    (void)state;
    write_tmp("hvd-wl.json", WORKLOAD);
    write_hvd_profile("hvd5f.json", HVD("5", "2097152"));
    const char *base = "run --workload @/hvd-wl.json --costs @/hvd5f.json --model softmax "
                       "--workers 4 --gpu-flops 1e12 --bandwidth 10Gbps --latency 10us "
                       "--collectives analytic --overlap ddp --compressor none --train-samples 256 "
                       "--test-samples 50 --quiet --force";
    assert_int_equal(bw("%s --batch 8 --epochs 2 --policy accordion:mode=batch,switch=1 --out "
                        "@/acc",
                        base),
                     0);
    assert_int_equal(bw("%s --batch 64 --epochs 1 --policy sync --out @/at64", base), 0);
    const double acc = last_step_s("acc"), at64 = last_step_s("at64");
    if (!(fabs(acc - at64) <= 1e-12 * at64))
        fail_msg("Accordion's step at 64 a GPU %.15g s, a run at 64 %.15g s", acc, at64);
}

/* The sim time of the replay of @/hvd-rec.jsonl.gz by engine (fast or actors), free compression
 * (the fast replay's DDP closed form needs it). */
static double replayed(const char *engine)
{
    assert_int_equal(bw("replay --trace @/hvd-rec.jsonl.gz --workload @/hvd-wl.json --costs "
                        "@/hvd5.json --workers 4 --gpu-flops 1e12 --bandwidth 10Gbps --latency "
                        "10us --collectives analytic --overlap ddp --free-compression --compressor "
                        "none --policies sync --replay-engine %s --quiet --out @/rp-%s",
                        engine, engine),
                     0);
    char dir[64];
    snprintf(dir, sizeof dir, "rp-%s/seed-1/1-sync", engine);
    return summary_num(dir, "sim_time_s");
}

/* The fast replay's closed form (cost_fast.c) times a Horovod plan as the actors do (cost.c):
 * the cycles, the negotiation and the copies, to 1e-12 of the time. */
static void test_the_closed_form_times_horovod_as_the_actors(void **state)
{
    (void)state;
    write_tmp("hvd-wl.json", WORKLOAD);
    write_hvd_profile("hvd5.json", HVD("5", "1048576"));
    assert_int_equal(bw("run --workload @/hvd-wl.json --costs @/hvd5.json --model softmax "
                        "--workers 4 --batch 8 --gpu-flops 1e12 --bandwidth 10Gbps --latency 10us "
                        "--collectives analytic --overlap ddp --compressor none --policy sync "
                        "--epochs 1 --train-samples 64 --test-samples 50 --quiet --out @/rec "
                        "--record-trace @/hvd-rec.jsonl.gz"),
                     0);
    const double fast = replayed("fast"), actors = replayed("actors");
    if (!(fabs(fast - actors) <= 1e-12 * actors))
        fail_msg("the fast replay %.15g s, the actors %.15g s", fast, actors);
}

/* The built-ins: each release's defaults as its code sets them. */
static void test_the_builtins_carry_each_releases_defaults(void **state)
{
    (void)state;
    CostProfile *p = NULL;
    assert_int_equal(costs_load("horovod-0.18-v100", "--costs", "V100", &p, NULL), BW_OK);
    assert_true(p->horovod.present && p->horovod.fusion_bytes == 64 * MIB &&
                p->horovod.cycle_s == 5e-3 && p->horovod.response_cache &&
                p->horovod.cache_capacity == 1024 && !p->horovod.batched_memcpy);
    assert_true(p->cycle_s == 5e-3);
    costs_free(p);
    assert_int_equal(costs_load("horovod-0.21-v100", "--costs", "V100", &p, NULL), BW_OK);
    assert_true(p->horovod.fusion_bytes == 128 * MIB && p->horovod.cycle_s == 1e-3 &&
                p->horovod.batched_memcpy);
    assert_string_equal(costs_framework(p), "horovod");
    costs_free(p);
    assert_int_equal(costs_load("pytorch-v100", "--costs", "V100", &p, NULL), BW_OK);
    assert_false(p->horovod.present);
    costs_free(p);
}

/* A bad "horovod": the field named, exit 2, nothing written. */
static void test_a_bad_horovod_is_refused_naming_the_field(void **state)
{
    (void)state;
    static const struct {
        const char *horovod, *what;
    } bad[] = {
        {HVD("0", "1048576"), "horovod: \"cycle_ms\" must be a number of milliseconds > 0"},
        {HVD("5000", "1048576"), "horovod: \"cycle_ms\""},
        {HVD("5", "-1"), "horovod: \"fusion_threshold_bytes\" must be a whole number"},
        {HVD("5", "1.5"), "horovod: \"fusion_threshold_bytes\""},
        {"\"version\": \"0.18.0\", \"fusion_threshold_bytes\": 0, \"cycle_ms\": 5, "
         "\"response_cache\": 1, \"batched_memcpy\": false, \"controller\": \"mpi\", "
         "\"operations\": \"nccl\"",
         "horovod: \"response_cache\" must be true or false"},
        {"\"version\": \"0.18.0\", \"fusion_threshold_bytes\": 0, \"cycle_ms\": 5, "
         "\"response_cache\": true, \"batched_memcpy\": false, \"controller\": \"nccl\", "
         "\"operations\": \"nccl\"",
         "horovod: \"controller\" must be \"mpi\" or \"gloo\""},
        {HVD("5", "0") ", \"cache_capacity\": 0", "horovod: \"cache_capacity\""},
        {HVD("5", "0") ", \"cycle\": 5", "horovod: unknown key \"cycle\""},
        {"\"fusion_threshold_bytes\": 0, \"cycle_ms\": 5", "horovod: \"version\""},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        write_hvd_profile("bad-hvd.json", bad[i].horovod);
        CostProfile *p = NULL;
        BwError err = {{0}};
        char path[512];
        snprintf(path, sizeof path, "%s/bad-hvd.json", TMP);
        assert_int_equal(costs_load(path, "--costs", "V100", &p, &err), BW_EUSAGE);
        if (!strstr(err.msg, bad[i].what) || !strstr(err.msg, path))
            fail_msg("expected '%s' and the file in: %s", bad[i].what, err.msg);
    }
    write_hvd_profile("bad-cycle.json", HVD("-1", "0"));
    expect_refusal("horovod: \"cycle_ms\"", "costs @/bad-cycle.json");
    /* the cycle given twice; no rate for the copies */
    char text[2048];
    snprintf(text, sizeof text,
             "{\"bellows_costs\": 1, \"name\": \"hvd\", \"implementation\": \"a toy\", "
             "\"gpu\": \"V100\", \"fixed\": {\"tensor_s\": 1e-4, \"kernel_s\": 1e-5, "
             "\"collective_s\": 2e-4%s}, \"ops\": {%s\"optimizer\": {\"kernels\": 4, "
             "\"rate\": [[1, 1e10]]}}, \"networks\": {\"tcp\": {\"allreduce\": 0.5, "
             "\"allgather\": 0.25}}, \"allgather\": {\"overlaps_backward\": true}, "
             "\"horovod\": {" HVD("5", "0") "}}",
             ", \"cycle_s\": 5e-3", "\"elementwise\": {\"kernels\": 1, \"rate\": [[1, 5e11]]}, ");
    write_tmp("twice.json", text);
    expect_refusal("horovod: the cycle is Horovod's", "costs @/twice.json");
    snprintf(text, sizeof text,
             "{\"bellows_costs\": 1, \"name\": \"hvd\", \"implementation\": \"a toy\", "
             "\"gpu\": \"V100\", \"fixed\": {\"tensor_s\": 1e-4, \"kernel_s\": 1e-5, "
             "\"collective_s\": 2e-4}, \"ops\": {\"optimizer\": {\"kernels\": 4, "
             "\"rate\": [[1, 1e10]]}}, \"networks\": {\"tcp\": {\"allreduce\": 0.5, "
             "\"allgather\": 0.25}}, \"allgather\": {\"overlaps_backward\": true}, "
             "\"horovod\": {" HVD("5", "0") "}}");
    write_tmp("no-copy.json", text);
    expect_refusal("horovod: needs \"ops\": \"elementwise\"", "costs @/no-copy.json");
    expect_refusal("horovod: \"cycle_ms\"",
                   "run --costs @/bad-cycle.json --gpu V100 --workers 2 --epochs 1 "
                   "--train-samples 64 --test-samples 50 --out @/never");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fusion_follows_the_cycle_clock),
        cmocka_unit_test(test_the_cycle_starts_as_horovods_loop),
        cmocka_unit_test(test_a_runs_buckets_are_the_threads_calls),
        cmocka_unit_test(test_the_closed_form_times_horovod_as_the_actors),
        cmocka_unit_test(test_the_calls_follow_a_policys_batch),
        cmocka_unit_test(test_the_builtins_carry_each_releases_defaults),
        cmocka_unit_test(test_a_bad_horovod_is_refused_naming_the_field),
    };
    return cmocka_run_group_tests(tests, clitest_setup, clitest_teardown);
}
