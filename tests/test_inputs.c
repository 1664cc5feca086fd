/* test_inputs.c: what a user's numbers and files can make bellows simulate. A number that would
 * reach SimGrid as a time or rate it cannot represent (a flag, a profile's field, a platform's
 * host or link, a run too long) is refused naming it; a trace's integers are read with their
 * ranges and their products checked; input files are regular files, read exactly (no garbage
 * after a gzip stream, no NUL byte); only the --cfg= options bellows vouches for pass, and they
 * are recorded; the memory estimate of a replay counts what a replay holds. Every refusal is
 * one line, exit 2, and leaves the scratch folder as it was (clitest.h). A few seconds. */
#include "testutil.h"

#include "clitest.h"

#include <sys/resource.h>
#include <sys/stat.h>

#include "run_args.h"

#define PSMALL "--train-samples 256 --test-samples 64 --batch 8 --epochs 1 --quiet " CLITEST_DATA
#define SMALL  PSMALL " --workers 2"

#define HDR_FMT                                                                                    \
    "{\"format\":\"bellows-trace\",\"version\":1,\"model\":\"m\",\"workers\":%s,\"batch\":%s,"     \
    "\"flops_per_sample\":10,\"steps_per_epoch\":%s,\"layers\":[{\"name\":\"w\",\"rows\":2,"       \
    "\"cols\":3},{\"name\":\"b\",\"rows\":2,\"cols\":1}]}\n"
#define STEP_FMT                                                                                   \
    "{\"type\":\"step\",\"step\":%d,\"epoch\":0,\"batch\":%s,\"lr\":%s,\"loss\":1,"                \
    "\"grad_norms\":[1,2]}\n"
#define EVAL "{\"type\":\"eval\",\"step\":2,\"test_accuracy\":0.5}\n"

/* TMP/name: a trace with the header's workers, batch and steps_per_epoch, and two steps with
 * the given global batch and learning rates, then an evaluation; extra: text after it. */
static void write_trace(const char *name, const char *workers, const char *batch, const char *spe,
                        const char *step_batch, const char *lr0, const char *lr1, const char *extra)
{
    char text[4096];
    int n = snprintf(text, sizeof text, HDR_FMT, workers, batch, spe);
    n += snprintf(text + n, sizeof text - (size_t)n, STEP_FMT, 0, step_batch, lr0);
    n += snprintf(text + n, sizeof text - (size_t)n, STEP_FMT, 1, step_batch, lr1);
    snprintf(text + n, sizeof text - (size_t)n, "%s%s", EVAL, extra);
    write_tmp(name, text);
}

static void test_numbers_simgrid_cannot_represent_are_refused(void **state)
{
    (void)state;
    SKIP_UNDER_VALGRIND();
    expect_refusal("--latency: expected 0s to 10s", "run " SMALL " --latency 1e308s");
    expect_refusal("--bandwidth: expected 1Kbps to", "run " SMALL " --bandwidth 1e-305bps");
    expect_refusal("--gpu-flops: expected 0.01 to 1e+18", "run " SMALL " --gpu-flops 1e-300");
    expect_refusal("--intra-bandwidth", "platform --topology hierarchical --gpus-per-node 2 "
                                        "--intra-bandwidth 1e20Bps");
    write_tmp("huge.json",
              "{\"name\": \"huge\", \"compute\": \"flops\", \"layers\": [{\"name\": \"fc1\", "
              "\"fwd_flops\": 1e308, \"bwd_flops\": 2, \"tensors\": [{\"name\": \"w1\", \"shape\": "
              "[100, 784]}]}, {\"name\": \"fc2\", \"fwd_flops\": 1, \"bwd_flops\": 2, \"tensors\": "
              "[{\"name\": \"w2\", \"shape\": [10, 100]}]}]}\n");
    expect_refusal("huge.json: layers[0] \"fc1\": \"fwd_flops\" must be at most 1e+15",
                   "run " SMALL " --workload @/huge.json");
    /* each number in range, the run too long to simulate with microsecond resolution */
    expect_refusal("--bandwidth: the run would simulate about",
                   "run --bandwidth 1Kbps --workload resnet50 --epochs 20 --quiet");
    expect_refusal("--workload: the run would simulate about",
                   "run --gpu-flops 1e6 --workload gpt2-small --epochs 100 --quiet");
    /* at the edges of the ranges the runs complete with finite times */
    assert_int_equal(bw("run " SMALL " --latency 10s --bandwidth 1Kbps --out @/edge"), 0);
    double t = summary_num("edge", "sim_time_s");
    assert_true(isfinite(t) && t > 16 * 2 * 10);
}

static void test_a_trace_reads_every_integer_with_its_range(void **state)
{
    (void)state;
    SKIP_UNDER_VALGRIND();
    write_trace("b31.jsonl", "2", "4", "0", "2147483712", "0.1", "0.1", "");
    expect_refusal("b31.jsonl:2: \"batch\": 2147483712 is outside", "replay --trace @/b31.jsonl");
    write_trace("b32.jsonl", "2", "4", "0", "4294967424", "0.1", "0.1", "");
    expect_refusal("b32.jsonl:2: \"batch\": 4294967424 is outside", "replay --trace @/b32.jsonl");
    write_trace("prod.jsonl", "1000000", "1000000", "0", "8", "0.1", "0.1", "");
    expect_refusal("prod.jsonl:1: \"workers\" x \"batch\"", "replay --trace @/prod.jsonl");
    write_trace("spe.jsonl", "2", "4", "1000000000", "8", "0.1", "0.1", "");
    expect_refusal("spe.jsonl:1: \"steps_per_epoch\" x \"workers\" x \"batch\"",
                   "replay --trace @/spe.jsonl");
    write_trace("lr0.jsonl", "2", "4", "0", "8", "0", "0", "");
    expect_refusal("lr0.jsonl: its learning rate is 0 at every step",
                   "replay --trace @/lr0.jsonl --out @/x");
    /* a warm-up that starts at 0 is a trace like any other */
    write_trace("warm.jsonl", "2", "4", "0", "8", "0", "0.1", "");
    assert_int_equal(bw("replay --trace @/warm.jsonl --policies sync,static --no-plots "
                        "--out @/warm"),
                     0);
    write_trace("banana.jsonl", "2", "4", "0", "8", "0.1", "0.1",
                "{\"type\":\"step\",\"step\":2,\"epoch\":0,\"lr\":0.1,\"loss\":1,"
                "\"grad_norms\":[1,2],\"stopped\":\"banana\"}\n");
    expect_refusal("banana.jsonl:5: \"stopped\": expected \"diverged\" or \"reached_target\"",
                   "replay --trace @/banana.jsonl");
}

/* What a trace file holds is read exactly: bytes after its gzip stream, a NUL byte, corrupt
 * gzip data (not "an empty trace"), a FIFO (not a wait without end), a folder, a device. */
static void test_a_trace_file_is_read_exactly(void **state)
{
    (void)state;
    SKIP_UNDER_VALGRIND();
    write_trace("t.jsonl", "2", "4", "0", "8", "0.1", "0.1", "");
    char cmd[1024];
    snprintf(
        cmd, sizeof cmd,
        "cd %s && gzip -c t.jsonl >t.jsonl.gz && (cat t.jsonl.gz; echo junk) >tail.jsonl.gz && "
        "printf 'a\\0b\\n' | cat t.jsonl - >nul.jsonl && "
        "printf '\\037\\213\\010\\000\\000\\000\\000\\000\\000\\003not deflate' >bad.jsonl.gz "
        "&& mkfifo fifo.jsonl && mkdir dir.jsonl",
        TMP);
    assert_int_equal(system(cmd), 0);
    assert_int_equal(bw("replay --trace @/t.jsonl.gz --policies sync,static --no-plots --out @/ok"),
                     0);
    expect_refusal("tail.jsonl.gz: data after the end of the gzip stream",
                   "replay --trace @/tail.jsonl.gz");
    expect_refusal("nul.jsonl: a NUL byte at column 2 (line 5)", "replay --trace @/nul.jsonl");
    expect_refusal("bad.jsonl.gz: corrupt gzip data", "replay --trace @/bad.jsonl.gz");
    expect_refusal("bad.jsonl.gz: corrupt gzip data", "run --workload @/bad.jsonl.gz");
    expect_refusal("--trace @/fifo.jsonl: not a regular file (a FIFO",
                   "replay --trace @/fifo.jsonl");
    expect_refusal("--trace @/dir.jsonl: is a folder", "replay --trace @/dir.jsonl");
    expect_refusal("--trace /dev/zero: not a regular file (a device)", "replay --trace /dev/zero");
}

static void test_profiles_and_platforms_must_be_regular_files(void **state)
{
    (void)state;
    SKIP_UNDER_VALGRIND();
    char cmd[512];
    snprintf(cmd, sizeof cmd, "cd %s && mkfifo fifo.json && mkdir dir.json && mkfifo fifo.xml",
             TMP);
    assert_int_equal(system(cmd), 0);
    expect_refusal("--workload @/fifo.json: not a regular file (a FIFO",
                   "run " SMALL " --workload @/fifo.json");
    expect_refusal("--workload @/dir.json: is a folder", "run " SMALL " --workload @/dir.json");
    expect_refusal("--platform @/fifo.xml: not a regular file",
                   "run " SMALL " --platform @/fifo.xml");
    expect_refusal("--platform /dev/zero: not a regular file",
                   "run " SMALL " --platform /dev/zero");
}

/* A platform of two hosts a, b on one link, with the given host speed and link values. */
static void write_platform(const char *name, const char *speed, const char *bw, const char *lat)
{
    char text[1024];
    snprintf(text, sizeof text,
             "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM "
             "\"https://simgrid.org/simgrid.dtd\">\n<platform version=\"4.1\">\n"
             "<zone id=\"z\" routing=\"Full\"><host id=\"a\" speed=\"%s\"/><host id=\"b\" "
             "speed=\"1Tf\"/><link id=\"l\" bandwidth=\"%s\" latency=\"%s\"/><route src=\"a\" "
             "dst=\"b\"><link_ctn id=\"l\"/></route></zone></platform>\n",
             speed, bw, lat);
    write_tmp(name, text);
}

static void test_a_platform_is_checked_after_loading(void **state)
{
    (void)state;
    SKIP_UNDER_VALGRIND();
    write_platform("bw0.xml", "1Tf", "0Bps", "10us");
    write_platform("bwneg.xml", "1Tf", "-5Bps", "10us");
    write_platform("speed0.xml", "0f", "1GBps", "10us");
    write_platform("latneg.xml", "1Tf", "1GBps", "-10us");
    expect_refusal("bw0.xml: link 'l' (on the route from host 'a' to host 'b') has bandwidth 0",
                   "run " SMALL " --platform @/bw0.xml --out @/x");
    expect_refusal("bwneg.xml: link 'l'", "run " SMALL " --platform @/bwneg.xml --out @/x");
    expect_refusal("speed0.xml: host 'a' (rank 0) has speed 0",
                   "run " SMALL " --platform @/speed0.xml --out @/x");
    expect_refusal("latency -1e-05 s", "run " SMALL " --platform @/latneg.xml --out @/x");
    write_tmp("zones.xml",
              "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM "
              "\"https://simgrid.org/simgrid.dtd\">\n<platform version=\"4.1\">\n<zone id=\"w\" "
              "routing=\"Full\"><zone id=\"z1\" routing=\"Full\"><host id=\"a\" speed=\"1Tf\"/>"
              "<host id=\"b\" speed=\"1Tf\"/><link id=\"l1\" bandwidth=\"1GBps\" latency=\"1us\"/>"
              "<route src=\"a\" dst=\"b\"><link_ctn id=\"l1\"/></route></zone><zone id=\"z2\" "
              "routing=\"Full\"><host id=\"c\" speed=\"1Tf\"/><host id=\"d\" speed=\"1Tf\"/><link "
              "id=\"l2\" bandwidth=\"1GBps\" latency=\"1us\"/><route src=\"c\" dst=\"d\"><link_ctn "
              "id=\"l2\"/></route></zone></zone></platform>\n");
    expect_refusal(
        "zones.xml: SimGrid failed on the route from host 'a' to host 'c' (ranks 0 and 2",
        "run " PSMALL " --platform @/zones.xml --out @/x");
    /* more hosts than bellows simulates, without --workers: the platform is named */
    char *big = malloc(5000 * 40 + 512);
    assert_non_null(big);
    int n = sprintf(big, "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM "
                         "\"https://simgrid.org/simgrid.dtd\">\n<platform version=\"4.1\">\n<zone "
                         "id=\"z\" routing=\"Full\">\n");
    for (int h = 0; h < 5000; h++) n += sprintf(big + n, "<host id=\"h%d\" speed=\"1Tf\"/>\n", h);
    sprintf(big + n, "</zone></platform>\n");
    write_tmp("big.xml", big);
    free(big);
    expect_refusal("--platform @/big.xml: 5000 hosts, more than the 4096 workers",
                   "run " PSMALL " --platform @/big.xml --out @/x");
}

static void test_only_vouched_cfg_options_pass_and_are_recorded(void **state)
{
    (void)state;
    SKIP_UNDER_VALGRIND();
    expect_refusal("--cfg=contexts/stack-size:1: not an option bellows vouches for",
                   "run " SMALL " --cfg=contexts/stack-size:1");
    expect_refusal("tunes SimGrid's TCP model", "run " SMALL " --cfg=network/TCP-gamma:100");
    expect_refusal("expected network/crosstraffic:0|1|yes|no",
                   "run " SMALL " --network-model tcp --cfg=network/crosstraffic:2");
    assert_int_equal(bw("run " SMALL " --network-model tcp --cfg=network/TCP-gamma:4096 "
                        "--out @/cfg"),
                     0);
    char *out = tmp_file("stdout"), *sum = tmp_file("cfg/summary.json");
    assert_non_null(strstr(out, "# SimGrid options: --cfg=network/TCP-gamma:4096\n"));
    assert_non_null(strstr(sum, "\"simgrid_cfg\": [\n      \"network/TCP-gamma:4096\"\n    ]"));
    free(out);
    free(sum);
    /* the window changes the times: it is a result, not a comment */
    assert_int_equal(bw("run " SMALL " --network-model tcp --out @/nocfg"), 0);
    assert_true(summary_num("cfg", "sim_time_s") != summary_num("nocfg", "sim_time_s"));
}

/* A replay computes no activations: its memory estimate is the stand-in model's parameters and
 * the workers' buffers. A ResNet-50-sized trace (25.6 M parameters, 24.6 GFLOP and 256 samples a
 * step) on 2 workers was refused at 366.6 GiB. */
static void test_a_replay_estimates_what_it_holds(void **state)
{
    (void)state;
    write_tmp("r50.jsonl",
              "{\"format\":\"bellows-trace\",\"version\":1,\"model\":\"r50\","
              "\"workers\":2,\"batch\":256,\"flops_per_sample\":24.6e9,\"layers\":"
              "[{\"name\":\"w\",\"rows\":5000,\"cols\":5111}]}\n"
              "{\"type\":\"step\",\"step\":0,\"epoch\":0,\"lr\":0.1,\"loss\":1,"
              "\"grad_norms\":[1]}\n{\"type\":\"eval\",\"step\":1,\"test_accuracy\":0.5}\n");
    char path[256];
    snprintf(path, sizeof path, "%s/r50.jsonl", TMP);
    char *argv[] = {"--trace", path, "--workers", "2", "--collectives", "analytic", NULL};
    Flags *f = calloc(1, sizeof *f);
    TrainArgs ta;
    RunConfig cfg;
    Trace t;
    double slowdown[DRIVER_MAX_WORKERS];
    BwError err;
    assert_int_equal(run_parse_flags("bellows replay", RUN_MODE_COMPARE, 6, argv, f, &err), BW_OK);
    assert_int_equal(run_setup("replay", f, &ta, &cfg, slowdown, &err), BW_OK);
    assert_int_equal(trace_read(path, &t, &err), BW_OK);
    assert_int_equal(run_apply_trace(f, &cfg, &t, &err), BW_OK);
    cfg.policy = "sync";
    double machine, need = driver_memory_bytes(&cfg, &machine);
    double params = 5000.0 * 5111;
    if (!(need > 22 * params && need < 50 * params)) fail_msg("estimated %.3g bytes", need);
    trace_free(&t);
    run_flags_release(f);
    free(f);
}

/* 4,096 workers with transfer collectives: before it starts, a run says how long it will take,
 * from the messages SimGrid will simulate: PowerSGD's three allreduces a step (P, Q and the
 * vectors), each 2 P (P - 1) ring messages; the analytic collectives simulate none. */
static void test_a_long_run_says_how_long_before_it_starts(void **state)
{
    (void)state;
    char *argv[] = {"--workers",
                    "4096",
                    "--train-samples",
                    "16384",
                    "--test-samples",
                    "64",
                    "--batch",
                    "4",
                    "--epochs",
                    "1",
                    NULL};
    Flags *f = calloc(1, sizeof *f);
    TrainArgs ta;
    RunConfig cfg;
    Dataset train = {0}, test = {0};
    double slowdown[DRIVER_MAX_WORKERS], messages;
    BwError err;
    assert_int_equal(run_parse_flags("bellows run", RUN_MODE_RUN, 10, argv, f, &err), BW_OK);
    assert_int_equal(run_setup("run", f, &ta, &cfg, slowdown, &err), BW_OK);
    assert_int_equal(run_load_data(&ta, &cfg, &train, &test, &err), BW_OK);
    double wall = driver_wall_estimate_s(&cfg, &messages);
    const double P = 4096, steps = 1; /* 16,384 samples / 4,096 workers / 4 */
    assert_true(fabs(messages - steps * 3 * 2 * P * (P - 1)) < 1);
    assert_true(wall > 60); /* the header says so (run_print_scenario) */
    cfg.backend = COLL_ANALYTIC;
    driver_wall_estimate_s(&cfg, &messages);
    assert_true(messages == 0); /* a barrier and the closed form */
    dataset_free(&train);
    dataset_free(&test);
    run_flags_release(f);
    free(f);
}

/* A trace of many layers reads without reserving room for 1,024 steps of them first: 100,000
 * layers, read under a 1.5 GiB address-space limit (the old first reservation was 3.2 GB). */
static void test_a_wide_trace_reads_without_a_large_reservation(void **state)
{
    (void)state;
#if defined(__SANITIZE_ADDRESS__)
    skip(); /* the sanitizer reserves its shadow memory: no address-space limit */
#endif
    if (getenv("BELLOWS_VALGRIND")) skip();
    enum { L = 100000 };
    char path[256];
    snprintf(path, sizeof path, "%s/wide.jsonl", TMP);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "{\"format\":\"bellows-trace\",\"version\":1,\"model\":\"w\",\"workers\":2,"
               "\"batch\":4,\"flops_per_sample\":10,\"layers\":[");
    for (int l = 0; l < L; l++)
        fprintf(f, "%s{\"name\":\"l\",\"rows\":1,\"cols\":1}", l ? "," : "");
    fprintf(f,
            "]}\n{\"type\":\"step\",\"step\":0,\"epoch\":0,\"lr\":0.1,\"loss\":1,\"grad_norms\":[");
    for (int l = 0; l < L; l++) fprintf(f, "%s1", l ? "," : "");
    fprintf(f, "]}\n");
    fclose(f);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        struct rlimit lim = {1536L << 20, 1536L << 20};
        setrlimit(RLIMIT_AS, &lim);
        Trace t;
        BwError err;
        int rc = trace_read(path, &t, &err);
        if (rc) fprintf(stderr, "%s\n", err.msg);
        _exit(rc == BW_OK && t.h.n_layers == L && t.n_steps == 1 ? 0 : 1);
    }
    int st;
    waitpid(pid, &st, 0);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_numbers_simgrid_cannot_represent_are_refused),
        cmocka_unit_test(test_a_trace_reads_every_integer_with_its_range),
        cmocka_unit_test(test_a_trace_file_is_read_exactly),
        cmocka_unit_test(test_profiles_and_platforms_must_be_regular_files),
        cmocka_unit_test(test_a_platform_is_checked_after_loading),
        cmocka_unit_test(test_only_vouched_cfg_options_pass_and_are_recorded),
        cmocka_unit_test(test_a_replay_estimates_what_it_holds),
        cmocka_unit_test(test_a_long_run_says_how_long_before_it_starts),
        cmocka_unit_test(test_a_wide_trace_reads_without_a_large_reservation),
    };
    return cmocka_run_group_tests(tests, clitest_setup_data, clitest_teardown);
}
