/* test_costs_horovod.c: a cost profile's "horovod" (issue 48 item 7): the calls Horovod's
 * background thread makes of a backward's tensors (costs_horovod_fuse) against the closed form
 * worked out by hand on a small timeline, with a thread that is never late and with one whose
 * calls outlast a cycle; the cycle's start rule; a run's buckets are those calls (the tensors
 * of each call in the timeline, and a shorter cycle moving the step by exactly the cycles'
 * difference); the built-ins give each release's defaults; a cost band's drawn profile moves
 * the cycle with the fixed costs; a bad "horovod" is refused naming the field, with exit 2. */
#include "testutil.h"

#include <math.h>

#include "clitest.h"
#include "costs.h"
#include "costs_band.h"

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
    /* ready on the idle thread's cycle but for the clock's rounding (a second step's backward
     * of 2 ms from 2837.30999 us, 1 ms cycles): that cycle, not one later */
    const double last = 0.0028373099931790747, now = last + 2e-3;
    assert_true((now - last) / 1e-3 > 2); /* the rounding this is about */
    assert_true(costs_horovod_cycle_start(now, last, 1e-3, 0) == now);
    assert_true(fabs(costs_horovod_cycle_start(now + 1e-7, last, 1e-3, 0) - (last + 3e-3)) < 1e-15);
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

/* A cost band's drawn profile (costs_band_scaled) moves Horovod's cycle with the fixed costs,
 * as the profile's own cycle_s (the two are one cycle): at a fixed factor of 1.5, 0.21's 1 ms
 * becomes 1.5 ms, and a tensor ready at 1.2 ms, which the thread fuses at its cycle of 2 ms,
 * is fused at 1.5 ms; the other groups leave it. */
static void test_a_drawn_profile_moves_horovods_cycle(void **state)
{
    (void)state;
    CostProfile *p = NULL, drawn;
    assert_int_equal(costs_load("horovod-0.21-v100", "--costs", "V100", &p, NULL), BW_OK);
    double f[COST_GROUP_COUNT] = {1.3, 1.3, 1.3, 1.3};
    f[COST_GROUP_FIXED] = 1.5;
    costs_band_scaled(p, f, &drawn);
    assert_true(fabs(drawn.horovod.cycle_s - 1.5e-3) < 1e-15);
    assert_true(drawn.cycle_s == drawn.horovod.cycle_s);
    const HvdTensor t = {.ready_s = 1.2e-3, .bytes = MIB};
    HvdCall c;
    assert_int_equal(costs_horovod_fuse(&p->horovod, &t, 1, NULL, NULL, &c), 1);
    expect_call(&c, 0, 1, 2e-3, 1);
    assert_int_equal(costs_horovod_fuse(&drawn.horovod, &t, 1, NULL, NULL, &c), 1);
    expect_call(&c, 0, 1, 1.5e-3, 1);
    f[COST_GROUP_FIXED] = 1;
    costs_band_scaled(p, f, &drawn);
    assert_true(drawn.horovod.cycle_s == 1e-3);
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

/* ---- --horovod, --horovod-fusion, --horovod-cycle over any profile (sim/cli/hvd_args.c) ---- */

/* A tiny costed run of args (the workload, the profile, the flags) into @/out, or a sweep of
 * them (one training, each point priced from it: cheaper than a run a point). */
#define TINY_COSTED                                                                                \
    "--model softmax --workers 2 --batch 8 --bandwidth 10Gbps --latency 10us --collectives "       \
    "analytic --overlap ddp --compressor none --epochs 1 --train-samples 32 --test-samples 8 "     \
    "--quiet --force"

/* A point's step (seconds) and steps.csv (malloc'd, may be NULL): TMP/dir's. */
static double step_of(const char *dir, char **steps)
{
    char name[256];
    snprintf(name, sizeof name, "%s/steps.csv", dir);
    if (steps) *steps = tmp_file(name);
    return summary_num(dir, "sim_time_s") / summary_num(dir, "steps");
}

/* Sweep A's and B's points of --horovod h, whose steps must be the same to the bit. */
static void expect_same_point(const char *h)
{
    char a[64], b[64], *x, *y;
    snprintf(a, sizeof a, "swa/runs/horovod-%s/seed-1/1-sync", h);
    snprintf(b, sizeof b, "swb/runs/horovod-%s/seed-1/1-sync", h);
    const double ta = step_of(a, &x), tb = step_of(b, &y);
    if (!x || !y || strcmp(x, y) != 0 || ta != tb)
        fail_msg("--horovod %s: over pytorch-v100 %.15g s a step, over horovod-0.21-v100 %.15g s "
                 "(steps.csv %s)",
                 h, ta, tb, x && y && strcmp(x, y) == 0 ? "equal" : "differ");
    free(x);
    free(y);
}

/* The release over pytorch-v100 is the built-in horovod-0.21-v100: gen_costs.py makes that one
 * as pytorch-v100's profile with the release's "horovod" and no hooks, which is what --horovod
 * does, so every constant that prices a step is the same and the steps are, to the bit; and
 * off over it is pytorch-v100's DDP, its communication hooks given back. Swept, --horovod off
 * and 0.21 over each profile (off over pytorch-v100 and 0.21 over horovod-0.21-v100: unchanged). */
static void test_the_flag_over_pytorch_is_the_builtin(void **state)
{
    (void)state;
    CostProfile *a = NULL, *b = NULL;
    assert_int_equal(costs_load("horovod-0.21-v100", "--costs", "V100", &a, NULL), BW_OK);
    assert_int_equal(costs_load("pytorch-v100", "--costs", "V100", &b, NULL), BW_OK);
    CostHorovod h;
    char key[24];
    assert_true(costs_horovod_release("0.21", &h, key, sizeof key));
    assert_string_equal(key, "0.21");
    assert_int_equal(costs_set_horovod(b, &h, key), 1);
    assert_int_equal(costs_set_horovod(b, &h, key), 0); /* already runs it */
    assert_string_equal(b->name, "pytorch-v100+horovod-0.21");
    assert_string_equal(costs_framework(b), "horovod");
    assert_true(b->validation[0] == '\0' && b->n_hooks == 0 && b->cycle_s == 1e-3);
    assert_true(a->tensor_s == b->tensor_s && a->kernel_s == b->kernel_s &&
                a->collective_s == b->collective_s && a->cycle_s == b->cycle_s &&
                a->interference == b->interference && a->efficiency[0] == b->efficiency[0] &&
                a->net[COST_NET_TCP].cap_Bps == b->net[COST_NET_TCP].cap_Bps &&
                a->horovod.fusion_bytes == b->horovod.fusion_bytes &&
                a->horovod.batched_memcpy == b->horovod.batched_memcpy);
    assert_int_equal(costs_set_horovod(a, NULL, "off"), 1);
    assert_string_equal(costs_framework(a), "pytorch"); /* the near rows are DDP's again */
    assert_true(!a->horovod.present && a->cycle_s == 0);
    /* and DDP's communication hooks are pytorch-v100's, which profile_horovod dropped: a
     * compressor's hook (powerSGD_hook's synchronisation, Q's orthogonalisation) as there */
    CostProfile *c = NULL;
    assert_int_equal(costs_load("pytorch-v100", "--costs", "V100", &c, NULL), BW_OK);
    assert_true(c->n_hooks > 0 && a->n_hooks == c->n_hooks);
    assert_memory_equal(a->hooks, c->hooks, sizeof a->hooks);
    assert_string_equal(a->hook_framework, c->hook_framework);
    assert_non_null(strstr(a->software, "DDP's communication hooks pytorch-v100's"));
    costs_free(c);
    /* the near rows of ResNet-50 on 10 Gbps V100s, one a NIC: pytorch#74148's DDP rows for DDP,
     * none of them for the same setting under Horovod (another framework: distance 1, not near) */
    CostSetting set = {.family = "resnet50",
                       .transport = COST_NET_TCP,
                       .sockets = 1,
                       .gbps = 10,
                       .gpus_per_nic = 1,
                       .gpu = "V100"};
    char near[1024];
    snprintf(set.framework, sizeof set.framework, "%s", costs_framework(a));
    costs_validation_near(&set, near, sizeof near);
    if (!strstr(near, "near this setting (") || !strstr(near, "pt74148"))
        fail_msg("DDP's setting: %s", near);
    snprintf(set.framework, sizeof set.framework, "%s", costs_framework(b));
    costs_validation_near(&set, near, sizeof near);
    if (strncmp(near, "no published row near", 21) != 0) fail_msg("Horovod's setting: %s", near);
    costs_free(a);
    costs_free(b);
    static const char S[] = "sweep --workload resnet18-cifar --gpu V100 --horovod off,0.21 "
                            "--policies sync --seeds 1 --no-plots --jobs 1 " TINY_COSTED;
    assert_int_equal(bw("%s --costs pytorch-v100 --out @/swa", S), 0);
    assert_int_equal(bw("%s --costs horovod-0.21-v100 --out @/swb", S), 0);
    expect_same_point("0.21");
    expect_same_point("off");
    if (step_of("swa/runs/horovod-0.21/seed-1/1-sync", NULL) ==
        step_of("swa/runs/horovod-off/seed-1/1-sync", NULL))
        fail_msg("Horovod's step and DDP's are the same: the comparison above proves nothing");
    char *sum = tmp_file("swb/runs/horovod-off/seed-1/1-sync/summary.json");
    assert_non_null(strstr(sum, "\"costs\": \"horovod-0.21-v100+horovod-off\""));
    assert_non_null(strstr(sum, "\"ddp_buckets\""));
    free(sum);
}

/* One tensor, of one layer whose backward takes 2 ms at 1e12 flop/s and batch 8. */
static const char ONE[] = "{\"name\": \"one\", \"compute\": \"flops\", \"layers\": [{\"name\": "
                          "\"a\", \"fwd_flops\": 1e6, \"bwd_flops\": 2.5e8, \"tensors\": "
                          "[{\"name\": \"a.weight\", \"shape\": [256, 256]}]}]}";

/* On pytorch-h100 (measured rates, a GPU no horovod-* profile covers): the one tensor, ready at
 * T = 2 ms, waits for the thread's first cycle at or after it, ceil(T / c) c; so Horovod's step
 * is DDP's (whose bucket starts at T) plus ceil(T / c) c - T plus the cycle's negotiation, the
 * same at every cycle: at 5, 3 and 1 ms, 3, 1 and 0 ms of wait (at 1 ms, T on a cycle in the
 * second step too, whatever the clock's rounding). Horovod is the slower. */
static void test_the_cycle_over_h100_in_closed_form(void **state)
{
    (void)state;
    write_tmp("one.json", ONE);
    static const char W[] =
        "--workload @/one.json --gpu-flops 1e12 --costs pytorch-h100 " TINY_COSTED;
    assert_int_equal(bw("run %s --policy sync --out @/ddp", W), 0);
    assert_int_equal(
        bw("sweep %s --policies sync --horovod 0.18 --horovod-cycle 5,3,1 --seeds 1 --no-plots "
           "--jobs 1 --out @/cyc",
           W),
        0);
    const double ddp = step_of("ddp", NULL);
    double neg[3];
    for (int k = 0; k < 3; k++) {
        const int c = (int[]){5, 3, 1}[k];
        char dir[64];
        snprintf(dir, sizeof dir, "cyc/runs/horovod-cycle-%d/seed-1/1-sync", c);
        neg[k] = step_of(dir, NULL) - ddp - (c * ceil(2.0 / c) - 2) * 1e-3;
        assert_true(summary_num(dir, "horovod_calls") == 1 &&
                    summary_num(dir, "horovod_cycle_ms") == c);
    }
    if (!(neg[0] > 0 && neg[0] < 1e-3 && fabs(neg[1] - neg[0]) < 1e-9 &&
          fabs(neg[2] - neg[0]) < 1e-9))
        fail_msg("Horovod's step less DDP's and the cycle's wait: %.12g, %.12g, %.12g s at 5, 3 "
                 "and 1 ms; expected one negotiation's time, the same at each cycle",
                 neg[0], neg[1], neg[2]);
    /* the fusion threshold by its flag: the toy's three tensors at 0.18's 5 ms cycle, b and a
     * ready in the same cycle, fused under 0.18's 64 MiB, apart at 1 MiB
     * (test_a_runs_buckets_are_the_threads_calls) */
    write_tmp("hvd-wl.json", WORKLOAD);
    assert_int_equal(bw("run --workload @/hvd-wl.json --gpu-flops 1e12 --costs pytorch-h100 "
                        "--policy sync --horovod 0.18 --horovod-fusion 1048576 " TINY_COSTED
                        " --out @/f1"),
                     0);
    assert_true(summary_num("f1", "horovod_calls") == 3);
}

/* Bad values and profiles the flags cannot apply to: exit 2 naming the flag, nothing written. */
static void test_bad_horovod_flags_are_refused(void **state)
{
    (void)state;
    static const char R[] = "run --workers 2 --epochs 1 --train-samples 8 --test-samples 8 "
                            "--batch 4 --collectives analytic --out @/never";
    expect_refusal("--horovod: expected a release whose defaults bellows has (0.18, 0.21) or off; "
                   "got '0.3'",
                   "%s --horovod 0.3", R);
    expect_refusal("--horovod-fusion: expected an integer in [0,",
                   "%s --horovod 0.21 "
                   "--horovod-fusion -1",
                   R);
    expect_refusal("--horovod-cycle", "%s --horovod 0.21 --horovod-cycle 0", R);
    expect_refusal("--horovod-cycle: costs pytorch-a100 runs DDP's buckets, not Horovod",
                   "%s --horovod-cycle 2", R);
    expect_refusal("--horovod-fusion: costs horovod-0.21-v100+horovod-off runs DDP's buckets",
                   "%s --gpu V100 --costs horovod-0.21-v100 --horovod off --horovod-fusion 0", R);
    expect_refusal("--horovod: costs ideal is the roofline", "%s --costs ideal --horovod 0.21", R);
    expect_refusal("--horovod: costs grace-tf prices a background thread's cycle of its own",
                   "%s --gpu V100 --costs grace-tf --horovod off", R);
    expect_refusal("--costs horovod-0.18-v100 with --sharding zero2: Horovod allreduces",
                   "%s --gpu V100 --costs horovod-0.18-v100 --sharding zero2", R);
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
        cmocka_unit_test(test_a_drawn_profile_moves_horovods_cycle),
        cmocka_unit_test(test_a_bad_horovod_is_refused_naming_the_field),
        cmocka_unit_test(test_the_flag_over_pytorch_is_the_builtin),
        cmocka_unit_test(test_the_cycle_over_h100_in_closed_form),
        cmocka_unit_test(test_bad_horovod_flags_are_refused),
    };
    return cmocka_run_group_tests(tests, clitest_setup, clitest_teardown);
}
