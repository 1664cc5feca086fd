/* test_costs.c: cost profiles (sim/costs/): every built-in loads and `pytorch` is the cluster
 * GPU's; every bad profile is a usage error naming the file and the field, and the command
 * writes nothing; a profile that lacks what a run needs is refused by name; an operation's
 * seconds interpolate its rates; and a costed step's simulated time, with a toy profile, equals
 * the hand-computed sum of its parts (compute, the compressor's stages by phase, the fixed costs,
 * the collectives' cycle, the ring and allgather formulas at the profile's link shares, the
 * optimiser) to 1e-9. */
#include "testutil.h"

#include <math.h>
#include <sys/stat.h>

#include "clitest.h"
#include "costs.h"

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* A valid profile's fields, as JSON members; a bad one replaces one of them. */
static const char *const GOOD[] = {
    "\"bellows_costs\": 1",
    "\"name\": \"toy\"",
    "\"implementation\": \"a toy\"",
    "\"gpu\": \"V100\"",
    "\"efficiency\": {\"fp32\": 0.5}",
    "\"fixed\": {\"tensor_s\": 1e-4, \"kernel_s\": 1e-5, \"collective_s\": 2e-4, \"cycle_s\": "
    "4e-3}",
    "\"ops\": {\"elementwise\": {\"kernels\": 1, \"rate\": [[1, 5e11]]}, "
    "\"topk\": {\"kernels\": 3, \"rate\": [[1, 2e9]]}, "
    "\"scatter\": {\"kernels\": 2, \"rate\": [[1, 1e10]]}, "
    "\"optimizer\": {\"kernels\": 4, \"rate\": [[1e3, 1e9], [1e7, 1e11]]}}",
    "\"networks\": {\"tcp\": {\"allreduce\": 0.5, \"allgather\": 0.25}}",
    "\"allgather\": {\"overlaps_backward\": true}",
};
#define N_GOOD ((int)(sizeof GOOD / sizeof *GOOD))

/* The profile with member `which` replaced by `with` (NULL: left out), into TMP/NAME.json. */
static void write_profile(const char *name, int which, const char *with, char *path, size_t n)
{
    char text[4096] = "{";
    for (int i = 0, first = 1; i < N_GOOD; i++) {
        const char *m = i == which ? with : GOOD[i];
        if (!m) continue;
        snprintf(text + strlen(text), sizeof text - strlen(text), "%s%s", first ? "" : ", ", m);
        first = 0;
    }
    strcat(text, "}");
    snprintf(path, n, "%s/%s.json", TMP, name);
    write_file(path, text);
}

static void test_every_builtin_loads_and_pytorch_is_the_gpus(void **state)
{
    (void)state;
    int n = 0;
    for (const char *const *b = costs_builtin_names(); *b; b++, n++) {
        CostProfile *p = NULL;
        BwError err = {{0}};
        const char *gpu = strstr(*b, "a100")   ? "A100"
                          : strstr(*b, "h100") ? "H100"
                          : strstr(*b, "h200") ? "H200"
                                               : "V100";
        if (costs_load(*b, "--costs", gpu, &p, &err) != BW_OK) fail_msg("%s: %s", *b, err.msg);
        assert_string_equal(p->name, *b);
        assert_false(p->ideal);
        assert_true(p->net[COST_NET_TCP].present);
        /* every built-in prices every compressor; but grace-tf's blockq (zeropp_plan.c prices
         * it at quantise's rate) and qr where the hook runs no QR (CostHook qr_above_rank) */
        const CostHook *h = costs_hook(p, "powersgd");
        for (int op = 0; op < COST_OP_COUNT; op++)
            if (!p->ops[op].present && !(op == COST_OP_BLOCKQ && strstr(*b, "grace")) &&
                !(op == COST_OP_QR && !(h && h->qr_above_rank)))
                fail_msg("%s lacks %s", *b, costs_op_name((CostOp)op));
        if (!p->software[0]) fail_msg("%s names no software generation", *b); /* issue 48 */
        costs_free(p);
    }
    /* grace-tf, horovod-{0.18,0.21}-v100, pytorch-{a100,h100,h200,v100}, pytorch2-{a100,v100} */
    assert_int_equal(n, 9);
    CostProfile *p = NULL;
    assert_int_equal(costs_load("pytorch", "--costs", "H100", &p, NULL), BW_OK);
    assert_string_equal(p->name, "pytorch-h100");
    costs_free(p);
    assert_int_equal(costs_load("pytorch", "--costs", "H200", &p, NULL), BW_OK);
    assert_string_equal(p->name, "pytorch-h200");
    costs_free(p);
    assert_int_equal(costs_load("pytorch", "--costs", NULL, &p, NULL), BW_OK); /* --gpu-flops */
    assert_true(p->ideal);
    costs_free(p);
    /* a measured profile with the GPU given by its rate (--gpu-flops): its calls and rates,
     * compute at the rate (issue 47; it was refused) */
    assert_int_equal(costs_load("pytorch-a100", "--costs", NULL, &p, NULL), BW_OK);
    assert_false(p->ideal);
    assert_true(p->collective_s > 0);
    costs_free(p);
    assert_int_equal(costs_load("ideal", "--costs", "A100", &p, NULL), BW_OK);
    assert_true(p->ideal);
    assert_true(costs_share(p, COST_NET_TCP, 1) == 1.0);
    costs_free(p);
}

/* Issue 48: `bellows costs NAME` gives every rate its software generation and source; the
 * PyTorch 2 V100 profile carries the H100's measured rates by memory bandwidth (0.9 of 3.35
 * TB/s), and a run's header and summary name the generation. */
static void test_costs_name_lists_every_rate_with_its_software(void **state)
{
    (void)state;
    assert_int_equal(bw("costs pytorch-v100"), 0);
    char *out = tmp_file("stdout");
    int ops = 0;
    for (const char *at = strstr(out, "\n  op "); at; at = strstr(at + 1, "\n  op "), ops++) {
        const char *next = strchr(at + 1, '\n');
        if (strncmp(next, "\n    software: ", 15) != 0 || strncmp(next + 15, "not stated", 10) == 0)
            fail_msg("a rate without its software: %.80s", at + 1);
    }
    assert_int_equal(ops, COST_OP_COUNT - 1); /* no qr: PyTorch 1.10's hook is Gram-Schmidt */
    assert_non_null(strstr(out, "op topk: 6 kernels a call; 7.82e+07 units/s at every size\n"
                                "    software: PyTorch 1.1 (pytorch#22812"));
    assert_non_null(strstr(out, "  software   PyTorch 1.x (GRACE's runs, 2020"));
    free(out);
    CostProfile *h = NULL, *v2 = NULL;
    assert_int_equal(costs_load("pytorch-h100", "--costs", "H100", &h, NULL), BW_OK);
    assert_int_equal(costs_load("pytorch2-v100", "--costs", "V100", &v2, NULL), BW_OK);
    const CostOpRate *a = &h->ops[COST_OP_TOPK], *b = &v2->ops[COST_OP_TOPK];
    double top = 0;
    for (int i = 0; i < a->n_points; i++) top = fmax(top, a->points[i].rate);
    const double want = top * 0.9 / 3.35; /* gen_costs.py rounds to 4 digits */
    if (fabs(b->points[b->n_points - 1].rate / want - 1) > 1e-3)
        fail_msg("pytorch2-v100 topk %g, the H100's %g carried: %g", b->points[0].rate, top, want);
    costs_free(h);
    costs_free(v2);
    assert_int_equal(bw("run --workers 2 --epochs 1 --train-samples 256 --test-samples 64 --quiet "
                        "--gpu V100 --costs pytorch2-v100 --collectives analytic --out @/p2"),
                     0);
    out = tmp_file("stdout");
    assert_non_null(strstr(out, "costs pytorch2-v100 (V100: PyTorch 2.x DDP + NCCL, compression in "
                                "DDP communication hooks; software: PyTorch 2.x, derived"));
    free(out);
    out = tmp_file("p2/summary.json");
    assert_non_null(strstr(out, "\"costs_software\": \"PyTorch 2.x, derived"));
    free(out);
    expect_refusal("costs nosuch: unknown cost profile", "costs nosuch");
}

/* Issue 48: the distance between a run's setting and a validation row's, against its closed
 * form; and a ResNet-50 run on 10 GbE with 2 GPUs per node names the rows near it (under
 * grace-tf, GRACE's TensorFlow ResNet-50 rows at 10 Gbps, one GPU a node) or says there is none
 * (under the PyTorch default on V100s, pytorch#74148's ResNet-50 rows at 3 Gbps; on A100s there
 * is none), from the committed summary. */
static void test_a_run_names_the_validation_rows_near_it(void **state)
{
    (void)state;
    CostSetting run = {"resnet50", "pytorch", COST_NET_TCP, 1, 10, 2, "V100", "", ""};
    CostSetting row = {"resnet9", "pytorch", COST_NET_TCP, 16, 25, 1, "V100", "", ""};
    char why[128];
    const double d = costs_setting_distance(&run, &row, why, sizeof why);
    const double want = 1 + log10(25.0 / 10) + log2(2.0) / 3 + log2(16.0) / 6;
    if (fabs(d - want) > 1e-12) fail_msg("distance %.17g, want %.17g", d, want);
    assert_string_equal(why, "model, bandwidth, GPUs per NIC, sockets");
    assert_true(costs_setting_distance(&run, &run, NULL, 0) == 0);
    CostSetting other = {"resnet50", "tensorflow", COST_NET_RDMA, 1, 100, 2, "A100", "", ""};
    assert_true(costs_setting_distance(&run, &other, NULL, 0) == 4); /* 3 kinds + a tenfold */
    /* sharding: the ZeRO stages apart / 3, DDP against ZeRO-3 not near; ZeRO++'s collectives
     * that differ / 3 each (qwz's bits count) */
    CostSetting z3 = run, z1 = run, zpp = run;
    snprintf(z3.sharding, sizeof z3.sharding, "zero3");
    snprintf(z1.sharding, sizeof z1.sharding, "zero1");
    assert_true(costs_setting_distance(&run, &z3, why, sizeof why) == 1);
    assert_string_equal(why, "sharding");
    if (fabs(costs_setting_distance(&z1, &z3, NULL, 0) - 2.0 / 3) > 1e-12) fail_msg("zero1-zero3");
    zpp = z3;
    snprintf(zpp.zeropp, sizeof zpp.zeropp, "qwz:int8,hpz,qgz");
    assert_true(costs_setting_distance(&zpp, &z3, why, sizeof why) == 1);
    assert_string_equal(why, "ZeRO++");
    CostSetting zq = z3;
    snprintf(zq.zeropp, sizeof zq.zeropp, "qwz:int4,hpz");
    if (fabs(costs_setting_distance(&zpp, &zq, NULL, 0) - 2.0 / 3) > 1e-12) fail_msg("zeropp");
    /* the built-in rows: ZeRO++'s 18B GPT on 100 Gbps a node of 16 V100s (summary.json). DDP
     * there is near none of them, ZeRO-3 nearest its baseline rows, ZeRO++ nearest its own */
    CostSetting zs = {"gpt2", "pytorch", COST_NET_RDMA, 1, 100, 16, "", "", ""};
    char line[512];
    costs_validation_near(&zs, line, sizeof line);
    assert_non_null(strstr(line, "no published row near this setting; the nearest, zpp-18b-"));
    snprintf(zs.sharding, sizeof zs.sharding, "zero3");
    costs_validation_near(&zs, line, sizeof line);
    assert_non_null(strstr(line, "5 published rows near this setting"));
    assert_non_null(strstr(line, "nearest: zpp-18b-ib1-1k (-"));
    snprintf(zs.zeropp, sizeof zs.zeropp, "qwz:int8,hpz,qgz");
    costs_validation_near(&zs, line, sizeof line);
    assert_non_null(strstr(line, "nearest: zpp-18b-ib1-1k-gain ("));
    const char *base =
        "run --workers 4 --gpus-per-node 2 --topology hierarchical --bandwidth 10Gbps "
        "--gpu V100 --epochs 1 --train-samples 512 --test-samples 64 --batch 32 "
        "--collectives analytic --quiet --out @/";
    char cmd[512];
    snprintf(cmd, sizeof cmd, "%snear_pt --workload resnet50", base); /* pytorch#74148's rows */
    assert_int_equal(bw(cmd), 0);
    char *sum = tmp_file("near_pt/summary.json");
    assert_non_null(strstr(sum, "\"validation_near\": \"3 published rows near this setting"));
    assert_non_null(strstr(sum, "nearest: pt74148-psgd-4v1 (+6.7%, distance 0.52)"));
    free(sum);
    snprintf(cmd, sizeof cmd, "%snear_a100 --workload resnet50", base); /* no A100 row */
    char *at100 = strstr(cmd, "--gpu V100");
    assert_non_null(at100);
    memcpy(at100 + 6, "A", 1);
    assert_int_equal(bw(cmd), 0);
    sum = tmp_file("near_a100/summary.json");
    assert_non_null(strstr(sum, "\"validation_near\": \"no published row near this setting; the "
                                "nearest, pt74148-psgd-4v1 (+6.7%), at distance 1.52: another "
                                "GPU, bandwidth"));
    free(sum);
    snprintf(cmd, sizeof cmd, "%snear_tf --workload resnet50-tf --costs grace-tf", base);
    assert_int_equal(bw(cmd), 0);
    sum = tmp_file("near_tf/summary.json");
    const char *at = strstr(sum, "\"validation_near\": \"");
    assert_non_null(at);
    assert_true(strtol(at + 20, NULL, 10) > 0); /* "N published rows near this setting" */
    assert_non_null(strstr(at, " published rows near this setting (median error "));
    assert_non_null(strstr(at, "nearest: grace-r50-")); /* TensorFlow ResNet-50 at 10 Gbps */
    assert_non_null(strstr(at, "distance 0.33)"));      /* 2 GPUs per NIC against 1: log2(2) / 3 */
    free(sum);
}

static void expect_refused(const char *spec, const char *gpu, const char *what)
{
    CostProfile *p = (CostProfile *)1;
    BwError err = {{0}};
    assert_int_equal(costs_load(spec, "--costs", gpu, &p, &err), BW_EUSAGE);
    assert_null(p);
    if (!strstr(err.msg, what) || !strstr(err.msg, "--costs"))
        fail_msg("%s: expected '%s' in: %s", spec, what, err.msg);
}

/* Bad profiles: which field write_profile replaces, with what, and what the refusal says. */
static const struct {
    int which;
    const char *with, *what;
} BAD_PROFILES[] = {
    {0, NULL, "\"bellows_costs\" must be 1"},
    {0, "\"bellows_costs\": 2", "\"bellows_costs\" must be 1"},
    {1, NULL, "\"name\""},
    {3, "\"gpu\": \"K80\"", "unknown GPU \"K80\""},
    {4, "\"efficiency\": {\"fp32\": 1.5}", "efficiency: \"fp32\" must be a number > 0"},
    {4, "\"efficiency\": {\"fp16\": 0.5}", "unknown key \"fp16\""},
    {4, "\"efficiency\": {\"workloads\": {\"toy\": {\"fp32\": 4.5}}}",
     "efficiency: workloads: toy: \"fp32\" must be a number > 0 and at most 4"},
    {4, "\"efficiency\": {\"workloads\": {\"toy\": {\"fp16\": 1}}}",
     "efficiency: workloads: toy: a workload's efficiency: unknown key \"fp16\""},
    {8, "\"allgather\": {\"overlaps_backward\": true}, \"interference\": {\"compute\": 2.5}",
     "interference: \"compute\" must be a number > 0 and at most 2"},
    {8, "\"allgather\": {\"overlaps_backward\": true}, \"interference\": {\"compute\": 0.5}",
     "interference: \"compute\" must be a slowdown of 1 (none) to 2"},
    {8,
     "\"allgather\": {\"overlaps_backward\": true}, \"schedules\": {\"p3\": {\"partition_s\": "
     "0}}",
     "schedules: p3: \"partition_s\" must be a number > 0 and at most 1"},
    {8,
     "\"allgather\": {\"overlaps_backward\": true}, \"schedules\": {\"p3\": {\"slice_s\": "
     "1e-4}}",
     "schedules: p3: a schedule's costs: unknown key \"slice_s\""},
    {8, "\"allgather\": {\"overlaps_backward\": true}, \"interference\": 1.2",
     "\"interference\" must be {\"compute\": a slowdown}"},
    {4, "\"efficiency\": {\"workloads\": {\"toy\": 2}}", "efficiency: workloads: toy:"},
    {4, "\"efficiency\": {\"workloads\": {\"toy\": {\"tf32\": 2}}}", "the V100 has no tf32"},
    {5, "\"fixed\": {\"tensor_s\": -1, \"kernel_s\": 1e-5, \"collective_s\": 1e-4}",
     "fixed: \"tensor_s\" must be a number > 0"},
    {5, "\"fixed\": {\"tensor_s\": 1e-4, \"kernel_s\": 0, \"collective_s\": 1e-4}",
     "fixed: \"kernel_s\" must be a number > 0"},
    {5, "\"fixed\": {\"tensor_s\": 1e-4, \"kernel_s\": 1e-5}", "\"collective_s\""},
    {5,
     "\"fixed\": {\"tensor_s\": 1e-4, \"kernel_s\": 1e-5, \"collective_s\": 1e-4, "
     "\"kernel\": 1}",
     "unknown key \"kernel\""},
    {5, "\"fixed\": {\"tensor_s\": 1e999, \"kernel_s\": 1e-5, \"collective_s\": 1e-4}", "line"},
    {6, "\"ops\": {\"sort\": {\"kernels\": 1, \"rate\": [[1, 1]]}}", "unknown operation \"sort\""},
    {6, "\"ops\": {\"topk\": {\"kernels\": 1, \"rate\": [[10, 1], [5, 2]]}}",
     "ops.topk: \"rate\" must be"},
    {6, "\"ops\": {\"topk\": {\"kernels\": 1, \"rate\": []}}", "ops.topk: \"rate\" must be"},
    {6, "\"ops\": {\"topk\": {\"kernels\": 1, \"rate\": [[1, 0]]}}", "ops.topk: \"rate\""},
    {6, "\"ops\": {\"topk\": {\"rate\": [[1, 1]]}}", "ops.topk: \"kernels\""},
    {7, "\"networks\": {\"infiniband\": {\"allreduce\": 1, \"allgather\": 1}}",
     "unknown network kind \"infiniband\""},
    {7, "\"networks\": {\"tcp\": {\"allreduce\": 1.2, \"allgather\": 1}}",
     "networks.tcp: \"allreduce\" must be a number > 0 and at most 1"},
    {7, "\"networks\": {}", "\"networks\" must be an object with at least one"},
    {8, NULL, "\"allgather\" must be"},
    {8,
     "\"allgather\": {\"overlaps_backward\": true}, \"uncertainty\": {\"version\": 2, "
     "\"compute\": 0.1, \"fixed\": 0.1, \"ops\": 0.1, \"networks\": 0.1}",
     "uncertainty: \"version\" must be 1"},
    {8,
     "\"allgather\": {\"overlaps_backward\": true}, \"uncertainty\": {\"version\": 1, "
     "\"compute\": 0.1, \"fixed\": 0.1, \"ops\": 0.1}",
     "uncertainty: \"networks\" must be a number > 0 and at most 0.9"},
    {8,
     "\"allgather\": {\"overlaps_backward\": true}, \"uncertainty\": {\"version\": 1, "
     "\"compute\": 1.5, \"fixed\": 0.1, \"ops\": 0.1, \"networks\": 0.1}",
     "uncertainty: \"compute\" must be a number > 0 and at most 0.9"},
    {8,
     "\"allgather\": {\"overlaps_backward\": true}, \"uncertainty\": {\"version\": 1, "
     "\"compute\": 0.1, \"fixed\": 0.1, \"ops\": 0.1, \"networks\": 0.1, \"net\": 1}",
     "uncertainty\": unknown key \"net\""},
    {8, "\"allgather\": {\"overlaps_backward\": true}, \"uncertainty\": 0.2",
     "\"uncertainty\" must be {\"version\": 1"},
};

static void test_bad_profiles_name_the_file_and_the_field(void **state)
{
    (void)state;
    SKIP_UNDER_VALGRIND(); /* it only starts bellows (clitest.h) */
    char path[256];
    for (size_t i = 0; i < sizeof BAD_PROFILES / sizeof *BAD_PROFILES; i++) {
        write_profile("bad", BAD_PROFILES[i].which, BAD_PROFILES[i].with, path, sizeof path);
        expect_refused(path, "V100", BAD_PROFILES[i].what);
        expect_refused(path, "V100", path); /* the file, named */
    }
    write_file(path, "{\"bellows_costs\": 1,");
    expect_refused(path, "V100", "line 1");
    expect_refused("grace-tf", "A100", "add --gpu V100");
    expect_refused("nope", "A100", "unknown cost profile (the built-ins: ideal, pytorch,");
}

/* A bad "hooks": the framework missing, a flag that is not a boolean, PowerSGD's option under
 * another compressor, an unknown key: each refused naming the file and the field. */
static void test_bad_hooks_name_the_field(void **state)
{
    (void)state;
    SKIP_UNDER_VALGRIND(); /* it only starts bellows (clitest.h) */
#define HOOKS_X "\"allgather\": {\"overlaps_backward\": true}, \"hooks\": {\"framework\": \"x\", "
    static const struct {
        int which;
        const char *with, *what;
    } bad[] = {
        {8, "\"allgather\": {\"overlaps_backward\": true}, \"hooks\": {\"powersgd\": {}}",
         "hooks: \"framework\""},
        {8, HOOKS_X "\"powersgd\": {\"synchronizes\": 1}}",
         "hooks: powersgd: \"synchronizes\" must be true or false"},
        {8, HOOKS_X "\"topk\": {\"orthogonalises_query\": true}}",
         "hooks: topk: \"orthogonalises_query\" is PowerSGD's"},
        {8, HOOKS_X "\"powersgd\": {\"sync\": true}}",
         "hooks: powersgd: a compressor's hook: unknown key \"sync\""},
        {8, HOOKS_X "\"powersgd\": {\"qr_above_rank\": 2}}", /* no ops.qr in the good one */
         "hooks: powersgd: \"qr_above_rank\" needs the operation \"qr\""},
        {8, HOOKS_X "\"powersgd\": {\"qr_above_rank\": 2.5}}",
         "hooks: powersgd: \"qr_above_rank\" must be an integer from 1 to 8"},
        {8, HOOKS_X "\"topk\": {\"qr_above_rank\": 2}}", "hooks: topk: \"qr_above_rank\" is"},
    };
#undef HOOKS_X
    char path[256];
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        write_profile("bad-hooks", bad[i].which, bad[i].with, path, sizeof path);
        expect_refused(path, "V100", bad[i].what);
        expect_refused(path, "V100", path);
    }
}

static void test_an_uncertainty_is_read_by_group(void **state)
{
    (void)state;
    char path[256];
    write_profile("unc", 8,
                  "\"allgather\": {\"overlaps_backward\": true}, \"uncertainty\": {\"version\": 1, "
                  "\"compute\": 0.1, \"fixed\": 0.2, \"ops\": 0.3, \"networks\": 0.4, "
                  "\"ops_source\": \"a note\"}",
                  path, sizeof path);
    CostProfile *p = NULL;
    assert_int_equal(costs_load(path, "--costs", "V100", &p, NULL), BW_OK);
    assert_true(p->has_uncertainty);
    assert_true(p->uncertainty[COST_GROUP_COMPUTE] == 0.1 &&
                p->uncertainty[COST_GROUP_FIXED] == 0.2);
    assert_true(p->uncertainty[COST_GROUP_OPS] == 0.3 &&
                p->uncertainty[COST_GROUP_NETWORKS] == 0.4);
    costs_free(p);
    write_profile("good", -1, NULL, path, sizeof path); /* optional: none stated */
    assert_int_equal(costs_load(path, "--costs", "V100", &p, NULL), BW_OK);
    assert_false(p->has_uncertainty);
    costs_free(p);
    /* every PyTorch built-in states one (gen_costs.py) */
    static const char *const gpus[] = {"V100", "A100", "H100", "H200"};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(costs_load("pytorch", "--costs", gpus[i], &p, NULL), BW_OK);
        assert_true(p->has_uncertainty);
        costs_free(p);
    }
}

static void test_what_a_run_needs_is_checked_by_name(void **state)
{
    (void)state;
    char path[256];
    write_profile("good", -1, NULL, path, sizeof path);
    CostProfile *p = NULL;
    BwError err = {{0}};
    assert_int_equal(costs_load(path, "--costs", "V100", &p, &err), BW_OK);
    assert_int_equal(
        costs_check(p, COST_OP_BIT(COST_OP_TOPK), COST_NET_TCP, "topk", "--costs", &err), BW_OK);
    assert_int_equal(costs_check(p, COST_OP_BIT(COST_OP_MATMUL), COST_NET_TCP,
                                 "--compressor powersgd", "--costs", &err),
                     BW_EUSAGE);
    assert_non_null(strstr(err.msg, "no operation \"matmul\""));
    assert_non_null(strstr(err.msg, "--compressor powersgd"));
    assert_int_equal(costs_check(p, 0, COST_NET_RDMA, "x", "--costs", &err), BW_EUSAGE);
    assert_non_null(strstr(err.msg, "--transport rdma"));
    /* seconds: the kernels' fixed cost, then size at the rate, log-log between the points and
     * constant beyond them */
    assert_true(fabs(costs_op_seconds(p, COST_OP_TOPK, 4e9) - (3e-5 + 2.0)) < 1e-15);
    const double mid = sqrt(1e3 * 1e7); /* halfway in log: the rate is sqrt(1e9 * 1e11) */
    assert_true(fabs(costs_op_seconds(p, COST_OP_OPTIMIZER, mid) - (4e-5 + mid / 1e10)) < 1e-15);
    assert_true(fabs(costs_op_seconds(p, COST_OP_OPTIMIZER, 10) - (4e-5 + 10 / 1e9)) < 1e-15);
    assert_true(fabs(costs_op_seconds(p, COST_OP_OPTIMIZER, 1e8) - (4e-5 + 1e8 / 1e11)) < 1e-15);
    costs_free(p);
    /* the CLI: a profile without PowerSGD's operations, refused before anything is written */
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             BELLOWS_BIN " run --gpu V100 --costs %s --compressor powersgd --epochs 1 "
                         "--train-samples 512 --out %s/never >%s/out.txt 2>&1",
             path, TMP, TMP);
    assert_int_equal(WEXITSTATUS(system(cmd)), 2);
    snprintf(cmd, sizeof cmd, "%s/out.txt", TMP);
    char *out = slurp(cmd, NULL);
    assert_non_null(strstr(out, "no operation \"matmul\""));
    free(out);
    snprintf(cmd, sizeof cmd, "%s/never", TMP);
    struct stat st;
    assert_int_equal(stat(cmd, &st), -1); /* nothing written */
}

/* One step of the toy workload (one layer, a 1000 x 2000 matrix and its bias) on 4 V100s at 50%
 * efficiency, TopK 10% under the toy profile, --overlap none: the hand-computed step. */
static double toy_step(double *compute, double *compress, double *comm)
{
    const double P = 4, b = 8, speed = 0.5 * 15.7e12, lat = 10e-6, bw = 10e9 / 8;
    const double n = 2e6, k = 2e5, bias = 1000;
    const double tensor_s = 1e-4, kernel_s = 1e-5, collective_s = 2e-4, cycle_s = 4e-3;
    const double elem = 5e11, topk = 2e9, scatter = 1e10;
    *compute = b * 1e9 / speed + b * 2e9 / speed;
    /* encode: the tensor's fixed cost, error feedback, the selection, the gather, the memory */
    double encode = tensor_s + (kernel_s + 12 * n / elem) + (3 * kernel_s + n / topk) +
                    2 * (2 * kernel_s + k / scatter);
    /* decode: zeroing, each worker's entries scatter-added, the division */
    double decode =
        (kernel_s + 4 * n / elem) + P * (2 * kernel_s + k / scatter) + (kernel_s + 8 * n / elem);
    *compress = encode + decode;
    /* the bias (dense, ring) and the values with their indices (allgather, 8 k bytes a rank),
     * each call's fixed cost, half a cycle; links at 0.5 of their rate, the allgather at 0.25 */
    const double a = 2 * lat, b_ar = 1 / (bw * 0.5), b_ag = 1 / (bw * 0.25);
    double ring = 2 * (P - 1) * a + 2 * (P - 1) / P * 4 * bias * b_ar;
    double gather = (P - 1) * a + (P - 1) / P * P * 8 * k * b_ag;
    *comm = cycle_s / 2 + 2 * collective_s + ring + gather;
    /* the optimiser: between the points (1e3, 1e9) and (1e7, 1e11), log-log */
    const double params = n + bias;
    double rate = exp(log(1e9) + log(params / 1e3) / log(1e4) * log(1e11 / 1e9));
    double opt = 4 * kernel_s + params / rate;
    *compute += opt;
    return *compute + *compress + *comm;
}

static double json_number(const char *text, const char *key)
{
    char k[64];
    snprintf(k, sizeof k, "\"%s\": ", key);
    const char *at = strstr(text, k);
    if (!at) fail_msg("no %s", key);
    return strtod(at + strlen(k), NULL);
}

static void test_a_costed_step_is_the_sum_of_its_parts(void **state)
{
    (void)state;
    SKIP_UNDER_VALGRIND(); /* it only starts bellows (clitest.h) */
    char prof[256], wl[256], cmd[2048];
    write_profile("toy", -1, NULL, prof, sizeof prof);
    snprintf(wl, sizeof wl, "%s/toy-workload.json", TMP);
    write_file(wl, "{\"name\": \"toy\", \"compute\": \"flops\", \"layers\": [{\"name\": \"fc\", "
                   "\"fwd_flops\": 1e9, \"bwd_flops\": 2e9, \"tensors\": [{\"name\": "
                   "\"fc.weight\", \"shape\": [1000, 2000]}, {\"name\": \"fc.bias\", "
                   "\"shape\": [1000]}]}]}");
    /* the run: two steps, priced by the actors */
    snprintf(cmd, sizeof cmd,
             BELLOWS_BIN
             " run --workload %s --costs %s --model softmax --workers 4 --batch 8 --gpu "
             "V100 --bandwidth 10Gbps --latency 10us --collectives analytic --overlap "
             "none --compressor topk --policy static:level=0.1 --epochs 1 "
             "--train-samples 64 --test-samples 50 --record-trace %s/toy.jsonl "
             "--quiet --out %s/toy >/dev/null",
             wl, prof, TMP, TMP);
    assert_int_equal(system(cmd), 0);
    double compute, compress, comm, step = toy_step(&compute, &compress, &comm);
    snprintf(cmd, sizeof cmd, "%s/toy/summary.json", TMP);
    char *s = slurp(cmd, NULL);
    assert_non_null(s);
    const double steps = json_number(s, "steps");
    assert_true(steps == 2);
    const struct {
        const char *key;
        double want;
    } books[] = {{"sim_time_s", step},
                 {"compute_s", compute},
                 {"compression_s", compress},
                 {"communication_s", comm}};
    for (int i = 0; i < 4; i++) {
        double got = json_number(s, books[i].key) / steps;
        if (!(fabs(got - books[i].want) <= 1e-9 * books[i].want))
            fail_msg("%s: %.12g a step, hand-computed %.12g", books[i].key, got, books[i].want);
    }
    free(s);
}

/* A profile's efficiency for one workload (in its direct flops, up to 4) prices that
 * workload's layers, and only that workload's: the toy step's layer compute at 2 of the peak
 * is a quarter of its compute at the profile's 0.5; another workload's entry changes nothing. */
static void test_a_workloads_own_efficiency_prices_its_layers(void **state)
{
    (void)state;
    SKIP_UNDER_VALGRIND(); /* it only starts bellows (clitest.h) */
    char prof[256], wl[256], cmd[2048];
    snprintf(wl, sizeof wl, "%s/toy-workload.json", TMP);
    write_file(wl, "{\"name\": \"toy\", \"compute\": \"flops\", \"layers\": [{\"name\": \"fc\", "
                   "\"fwd_flops\": 1e9, \"bwd_flops\": 2e9, \"tensors\": [{\"name\": "
                   "\"fc.weight\", \"shape\": [1000, 2000]}, {\"name\": \"fc.bias\", "
                   "\"shape\": [1000]}]}]}");
    double compute, compress, comm;
    toy_step(&compute, &compress, &comm);
    const double layers = 8 * 3e9 / (0.5 * 15.7e12); /* toy_step's, at 0.5 */
    const struct {
        const char *name;
        double want;
    } cases[] = {{"toy", compute - layers + layers / 4}, {"other", compute}};
    for (int i = 0; i < 2; i++) {
        char member[128];
        snprintf(member, sizeof member,
                 "\"efficiency\": {\"fp32\": 0.5, \"workloads\": {\"%s\": {\"fp32\": 2}}}",
                 cases[i].name);
        write_profile("wl-eff", 4, member, prof, sizeof prof);
        snprintf(cmd, sizeof cmd,
                 BELLOWS_BIN
                 " run --workload %s --costs %s --model softmax --workers 4 --batch 8 --gpu "
                 "V100 --bandwidth 10Gbps --latency 10us --collectives analytic --overlap "
                 "none --compressor topk --policy static:level=0.1 --epochs 1 "
                 "--train-samples 64 --test-samples 50 --quiet --out %s/wl-eff-%d >/dev/null",
                 wl, prof, TMP, i);
        assert_int_equal(system(cmd), 0);
        snprintf(cmd, sizeof cmd, "%s/wl-eff-%d/summary.json", TMP, i);
        char *s = slurp(cmd, NULL);
        assert_non_null(s);
        double got = json_number(s, "compute_s") / json_number(s, "steps");
        if (!(fabs(got - cases[i].want) <= 1e-9 * cases[i].want))
            fail_msg("%s: compute %.12g a step, expected %.12g", cases[i].name, got, cases[i].want);
        free(s);
    }
}

/* The sim_time_s a step of the two-layer workload under --overlap OVERLAP, with the toy profile
 * and `"interference": {"compute": S}` (S 0: none given). */
static double interfered_step(const char *overlap, double S, int i)
{
    char prof[256], wl[256], cmd[2048], member[160];
    snprintf(wl, sizeof wl, "%s/two-layers.json", TMP);
    /* forward order: a (its backward long), then b, whose 2.4 MB fill DDP's first bucket */
    write_file(wl, "{\"name\": \"two\", \"compute\": \"flops\", \"layers\": [{\"name\": \"a\", "
                   "\"fwd_flops\": 1e9, \"bwd_flops\": 4e10, \"tensors\": [{\"name\": "
                   "\"a.weight\", \"shape\": [1000, 1000]}]}, {\"name\": \"b\", \"fwd_flops\": "
                   "1e9, \"bwd_flops\": 1e9, \"tensors\": [{\"name\": \"b.weight\", \"shape\": "
                   "[600, 1000]}]}]}");
    if (S > 0)
        snprintf(member, sizeof member,
                 "\"allgather\": {\"overlaps_backward\": true}, \"interference\": "
                 "{\"compute\": %g}",
                 S);
    write_profile("interfered", 8, S > 0 ? member : GOOD[8], prof, sizeof prof);
    snprintf(cmd, sizeof cmd,
             BELLOWS_BIN " run --workload %s --costs %s --model softmax --workers 4 --batch 8 "
                         "--gpu V100 --bandwidth 10Gbps --latency 10us --collectives analytic "
                         "--overlap %s --compressor none --policy sync --epochs 1 "
                         "--train-samples 64 --test-samples 50 --quiet --out %s/interfered-%d "
                         ">/dev/null",
             wl, prof, overlap, TMP, i);
    assert_int_equal(system(cmd), 0);
    snprintf(cmd, sizeof cmd, "%s/interfered-%d/summary.json", TMP, i);
    char *s = slurp(cmd, NULL);
    assert_non_null(s);
    double step = json_number(s, "sim_time_s") / json_number(s, "steps");
    free(s);
    return step;
}

/* A profile's interference s: DDP's backward beside its first bucket's collective (C seconds,
 * wholly inside the backward) runs at 1/s of its rate, so the step is C (1 - 1/s) longer, to
 * 1e-9; s = 1 changes nothing (the same sim_time_s bit for bit); the layer-wise overlap pays it
 * too (longer). */
static void test_interference_lengthens_an_overlapped_step(void **state)
{
    (void)state;
    SKIP_UNDER_VALGRIND(); /* it only starts bellows (clitest.h) */
    const double P = 4, lat = 10e-6, bw = 10e9 / 8, share = 0.5, S = 1.5;
    const double C = 2 * (P - 1) * 2 * lat + 2 * (P - 1) / P * 4 * 600e3 / (bw * share);
    const double none = interfered_step("ddp", 0, 0), one = interfered_step("ddp", 1, 1);
    const double slowed = interfered_step("ddp", S, 2);
    assert_true(one == none);
    const double want = none + C * (1 - 1 / S);
    if (!(fabs(slowed - want) <= 1e-9 * want))
        fail_msg("a step at interference %g: %.12g s, expected %.12g (%.12g + %.12g)", S, slowed,
                 want, none, C * (1 - 1 / S));
    assert_true(interfered_step("layer", S, 3) > interfered_step("layer", 0, 4));
}

/* The step of one 4 MB tensor under ByteScheduler with 400 kB partitions, one in flight
 * (credit=1), with the toy profile and `"schedules": {"NAME": {"partition_s": X}}` (X 0: none
 * given). */
static double scheduled_step(const char *name, double X, int i)
{
    char prof[256], wl[256], cmd[2048], member[200];
    snprintf(wl, sizeof wl, "%s/one-tensor.json", TMP);
    write_file(wl, "{\"name\": \"one\", \"compute\": \"flops\", \"layers\": [{\"name\": \"a\", "
                   "\"fwd_flops\": 1e9, \"bwd_flops\": 2e9, \"tensors\": [{\"name\": "
                   "\"a.weight\", \"shape\": [1000, 1000]}]}]}");
    if (X > 0)
        snprintf(member, sizeof member,
                 "\"allgather\": {\"overlaps_backward\": true}, \"schedules\": {\"%s\": "
                 "{\"partition_s\": %g}}",
                 name, X);
    write_profile("scheduled", 8, X > 0 ? member : GOOD[8], prof, sizeof prof);
    snprintf(cmd, sizeof cmd,
             BELLOWS_BIN " run --workload %s --costs %s --model softmax --workers 4 --batch 8 "
                         "--gpu V100 --bandwidth 10Gbps --latency 10us --collectives analytic "
                         "--overlap ddp --schedule bytescheduler:partition=400000,credit=1 "
                         "--compressor none --policy sync --epochs 1 --train-samples 64 "
                         "--test-samples 50 --quiet --out %s/scheduled-%d >/dev/null",
             wl, prof, TMP, i);
    assert_int_equal(system(cmd), 0);
    snprintf(cmd, sizeof cmd, "%s/scheduled-%d/summary.json", TMP, i);
    char *s = slurp(cmd, NULL);
    assert_non_null(s);
    double step = json_number(s, "sim_time_s") / json_number(s, "steps");
    free(s);
    return step;
}

/* A schedule's cost per partition (ByteScheduler's core): 10 partitions sent one at a time
 * after the backward make the step 10 X longer, to 1e-9; another schedule's entry changes
 * nothing (bit for bit). */
static void test_a_schedules_partition_cost_is_paid_per_partition(void **state)
{
    (void)state;
    SKIP_UNDER_VALGRIND(); /* it only starts bellows (clitest.h) */
    const double X = 1e-4, none = scheduled_step("bytescheduler", 0, 0);
    assert_true(scheduled_step("p3", X, 1) == none);
    const double got = scheduled_step("bytescheduler", X, 2), want = none + 10 * X;
    if (!(fabs(got - want) <= 1e-9 * want))
        fail_msg("a step with %g s a partition: %.12g s, expected %.12g", X, got, want);
}

/* The step of a DDP run of PowerSGD rank 1 (spec) on `layers` (a workload's layers, as JSON)
 * under a toy profile without a cycle, whose PowerSGD hook synchronises or not (sync -1: no
 * "hooks"; 2: it synchronises and orthogonalises the query too; 3: --costs ideal instead). */
static double hooked_step_of(const char *spec, const char *layers, int sync, int i, double *compute,
                             double *compress)
{
    char prof[256], wl[256], cmd[2048], text[2048];
    snprintf(wl, sizeof wl, "%s/hooked-%d-workload.json", TMP, i);
    snprintf(text, sizeof text, "{\"name\": \"hooked\", \"compute\": \"flops\", \"layers\": [%s]}",
             layers);
    write_file(wl, text);
    snprintf(prof, sizeof prof, "%s/hooked-%d.json", TMP, i);
    snprintf(text, sizeof text,
             "{\"bellows_costs\": 1, \"name\": \"hooked\", \"implementation\": \"a toy\", "
             "\"gpu\": \"V100\", \"efficiency\": {\"fp32\": 0.5}, \"fixed\": {\"tensor_s\": "
             "1e-4, \"kernel_s\": 1e-5, \"collective_s\": 2e-4}, \"ops\": {\"elementwise\": "
             "{\"kernels\": 1, \"rate\": [[1, 5e11]]}, \"matmul\": {\"kernels\": 1, \"rate\": "
             "[[1, 1e11]]}, \"orthogonalise\": {\"kernels\": 4, \"rate\": [[1, 1e9]]}, "
             "\"optimizer\": {\"kernels\": 4, \"rate\": [[1, 1e10]]}}, \"networks\": {\"tcp\": "
             "{\"allreduce\": 0.5, \"allgather\": 0.25}}, \"allgather\": {\"overlaps_backward\": "
             "true}%s%s%s}",
             sync >= 0 ? ", \"hooks\": {\"framework\": \"a toy\", \"powersgd\": {\"synchronizes\": "
                       : "",
             sync > 0    ? "true"
             : sync == 0 ? "false"
                         : "",
             sync == 2   ? ", \"orthogonalises_query\": true}}"
             : sync >= 0 ? "}}"
                         : "");
    write_file(prof, text);
    snprintf(cmd, sizeof cmd,
             BELLOWS_BIN " run --workload %s --costs %s --model softmax --workers 4 --batch 8 "
                         "--gpu V100 --bandwidth 10Gbps --latency 10us --collectives analytic "
                         "--overlap ddp --compressor %s --policy static:level=1 --epochs 1 "
                         "--train-samples 64 --test-samples 50 --quiet --out %s/hooked-%d "
                         ">/dev/null",
             wl, sync == 3 ? "ideal" : prof, spec, TMP, i);
    assert_int_equal(system(cmd), 0);
    snprintf(cmd, sizeof cmd, "%s/hooked-%d/summary.json", TMP, i);
    char *s = slurp(cmd, NULL);
    assert_non_null(s);
    const double steps = json_number(s, "steps");
    if (compute) *compute = json_number(s, "compute_s") / steps;
    if (compress) *compress = json_number(s, "compression_s") / steps;
    double step = json_number(s, "sim_time_s") / steps;
    free(s);
    return step;
}

static double hooked_step(const char *layers, int sync, int i, double *compute, double *compress)
{
    return hooked_step_of("powersgd", layers, sync, i, compute, compress);
}

/* A PowerSGD hook that synchronises (PyTorch's torch.cuda.synchronize in its last callback)
 * gets no overlap: in a two-layer net whose first bucket (b) DDP hides in a's long backward
 * (all but its encode and decode, which share the GPU with the backward either way), the step
 * grows by exactly bucket b's collectives, which b alone prices as its step less its compute
 * and its compression (to 1e-9); "synchronizes": false changes nothing (bit for bit), nor does
 * a profile without "hooks". */
static void test_a_synchronising_hook_gets_no_overlap(void **state)
{
    (void)state;
    SKIP_UNDER_VALGRIND(); /* it only starts bellows (clitest.h) */
    static const char *const A = "{\"name\": \"a\", \"fwd_flops\": 1e9, \"bwd_flops\": 4e10, "
                                 "\"tensors\": [{\"name\": \"a.weight\", \"shape\": [1000, "
                                 "1000]}]}";
    static const char *const B = "{\"name\": \"b\", \"fwd_flops\": 1e9, \"bwd_flops\": 1e9, "
                                 "\"tensors\": [{\"name\": \"b.weight\", \"shape\": [600, "
                                 "1000]}]}";
    char two[1024];
    snprintf(two, sizeof two, "%s, %s", A, B);
    const double plain = hooked_step(two, -1, 0, NULL, NULL);
    const double off = hooked_step(two, 0, 1, NULL, NULL), on = hooked_step(two, 1, 2, NULL, NULL);
    assert_true(off == plain);
    double compute_b, compress_b, alone_b = hooked_step(B, 1, 3, &compute_b, &compress_b);
    assert_true(alone_b == hooked_step(B, 0, 4, NULL, NULL)); /* nothing to overlap */
    const double comm_b = alone_b - compute_b - compress_b, want = plain + comm_b;
    assert_true(comm_b > 0 && compress_b > 0);
    if (!(fabs(on - want) <= 1e-9 * want))
        fail_msg("a synchronising hook's step: %.12g s, expected %.12g (%.12g + bucket b's "
                 "collectives %.12g)",
                 on, want, plain, comm_b);
    /* orthogonalising Q [1000 x 1] too: one column of m = 1000 more, 4 kernels of 1e-5 s and
     * 1000 elements at 1e9 a second, in the encode */
    double compress_q;
    hooked_step(B, 2, 5, NULL, &compress_q);
    const double col = 4 * 1e-5 + 1000 / 1e9;
    if (!(fabs(compress_q - compress_b - col) <= 1e-9 * compress_q))
        fail_msg("Q's Gram-Schmidt: %.12g s a step, expected %.12g", compress_q - compress_b, col);
}

/* powersgd:comm=none (pytorch#74148's ablation, its P and Q allreduces removed) keeps the
 * hook's chain, so a synchronising hook still holds the backward until the bucket's dense
 * allreduce is done: with b's bias beside its weight, the step grows by that allreduce alone,
 * as b alone prices it. Under --costs ideal its roofline is all encode (no decode after a
 * message of its own), as large as PowerSGD's but for Q's division (m r of 36 n m + ...). */
static void test_a_hook_sending_nothing_of_its_own_still_synchronises(void **state)
{
    (void)state;
    static const char *const A = "{\"name\": \"a\", \"fwd_flops\": 1e9, \"bwd_flops\": 4e10, "
                                 "\"tensors\": [{\"name\": \"a.weight\", \"shape\": [1000, "
                                 "1000]}]}";
    static const char *const B = "{\"name\": \"b\", \"fwd_flops\": 1e9, \"bwd_flops\": 1e9, "
                                 "\"tensors\": [{\"name\": \"b.weight\", \"shape\": [600, "
                                 "1000]}, {\"name\": \"b.bias\", \"shape\": [600]}]}";
    const char *none = "powersgd:comm=none";
    char two[1024];
    snprintf(two, sizeof two, "%s, %s", A, B);
    const double off = hooked_step_of(none, two, 0, 6, NULL, NULL);
    const double on = hooked_step_of(none, two, 1, 7, NULL, NULL);
    double compute_b, compress_b, alone_b = hooked_step_of(none, B, 1, 8, &compute_b, &compress_b);
    const double comm_b = alone_b - compute_b - compress_b, want = off + comm_b;
    assert_true(comm_b > 0 && compress_b > 0);
    if (!(fabs(on - want) <= 1e-9 * want))
        fail_msg("comm=none under a synchronising hook: %.12g s, expected %.12g (%.12g + the "
                 "bias's allreduce %.12g)",
                 on, want, off, comm_b);
    double ideal_pq, ideal_none;
    hooked_step_of("powersgd", B, 3, 9, NULL, &ideal_pq);
    hooked_step_of(none, B, 3, 10, NULL, &ideal_none);
    if (!(ideal_none < ideal_pq && ideal_none > 0.999 * ideal_pq))
        fail_msg("comm=none's roofline %.12g s, PowerSGD's %.12g", ideal_none, ideal_pq);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_builtin_loads_and_pytorch_is_the_gpus),
        cmocka_unit_test(test_costs_name_lists_every_rate_with_its_software),
        cmocka_unit_test(test_a_run_names_the_validation_rows_near_it),
        cmocka_unit_test(test_bad_profiles_name_the_file_and_the_field),
        cmocka_unit_test(test_bad_hooks_name_the_field),
        cmocka_unit_test(test_an_uncertainty_is_read_by_group),
        cmocka_unit_test(test_what_a_run_needs_is_checked_by_name),
        cmocka_unit_test(test_a_costed_step_is_the_sum_of_its_parts),
        cmocka_unit_test(test_a_workloads_own_efficiency_prices_its_layers),
        cmocka_unit_test(test_interference_lengthens_an_overlapped_step),
        cmocka_unit_test(test_a_schedules_partition_cost_is_paid_per_partition),
        cmocka_unit_test(test_a_synchronising_hook_gets_no_overlap),
        cmocka_unit_test(test_a_hook_sending_nothing_of_its_own_still_synchronises),
    };
    return cmocka_run_group_tests(tests, clitest_setup, clitest_teardown);
}
