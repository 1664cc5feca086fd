/* test_busbw.c: collectives priced from nccl-tests' bus bandwidth (sim/costs/costs_busbw.c,
 * nccl_import.c) and NICs shared by a node's GPUs (--nics-per-node, sim/net/cluster.c): a
 * published log of 2 nodes x 8 V100 behind one 100 Gb/s NIC each goes through the importer, and
 * a simulated ring allreduce on such a cluster takes the log's measured time; malformed logs are
 * refused with their file and line, and nothing is written. */
#include "colltest.h"

#include <sys/stat.h>

#include "costs.h"
#include "driver.h"
#include "nccl_import.h"

#define LOG_8_PER_NIC BELLOWS_SOURCE_DIR "/tests/data/nccl-tests/p3dn-2x8-efa-allreduce.txt"

/* A hierarchical cluster of P GPUs, G a node, behind nics NICs a node of B bytes/s, no latency
 * (nccl-tests' busbw already holds NCCL's per-step latency). */
static Cluster nodes(int P, int G, int nics, double B)
{
    Cluster c = star(P, B, 0);
    c.topology = TOPO_HIERARCHICAL;
    c.gpus_per_node = G;
    c.nics_per_node = nics;
    c.intra_bandwidth_Bps = 150e9;
    c.intra_latency_s = 0;
    return c;
}

static int import(const char *log, const char *out, BwError *err)
{
    const char *logs[] = {log};
    NcclImport a = {.logs = logs,
                    .n_logs = 1,
                    .net = COST_NET_RDMA,
                    .link_Bps = 100e9 / 8,
                    .gpus_per_node = 8,
                    .nics_per_node = 1,
                    .collective = -1,
                    .base = "pytorch-v100",
                    .out = out};
    return costs_import_nccl_tests(&a, err);
}

static void test_imported_log_prices_an_allreduce_at_its_measured_time(void **state)
{
    (void)state;
    char out[] = "/tmp/bellows-busbw-XXXXXX.json";
    int fd = mkstemps(out, 5);
    assert_true(fd >= 0);
    close(fd);
    BwError err;
    assert_int_equal(import(LOG_8_PER_NIC, out, &err), BW_OK);
    CostProfile *p = NULL;
    assert_int_equal(costs_load(out, "--costs", "V100", &p, &err), BW_OK);
    unlink(out);
    SC = (Scenario){.cl = nodes(16, 8, 1, 100e9 / 8), .algo = COLL_RING};
    assert_int_equal(cluster_gpus_per_nic(&SC.cl), 8);
    assert_true(costs_busbw_curve(p, COST_NET_RDMA, 0, 8, &CURVE[0]));
    assert_true(costs_busbw_curve(p, COST_NET_RDMA, 1, 8, &CURVE[1]));
    assert_true(costs_share(p, COST_NET_RDMA, 0) == 1.0); /* the links at line rate */
    costs_free(p);
    /* the log's out-of-place times (us) at 1, 2 and 4 MiB. Within 1%: busbw is printed to 3
     * digits (1.90: +-0.26%) and the time to 5, and the links add no latency here */
    const double bytes[] = {1048576, 2097152, 4194304}, measured_us[] = {1035.3, 671.4, 1140.5};
    for (int i = 0; i < 3; i++) {
        SC.count = (size_t)bytes[i] / 4;
        SC.backend = COLL_TRANSFER;
        double t = simulate().time_s * 1e6;
        expect_close(t, measured_us[i], 0.01, "ring allreduce against nccl-tests' time");
        SC.backend = COLL_ANALYTIC; /* the transfers round each message's bytes on the wire */
        expect_close(simulate().time_s * 1e6, t, 1e-5, "analytic against transfer");
    }
    memset(CURVE, 0, sizeof CURVE);
}

/* A V100 profile whose tcp network is the JSON object body tcp. Writes it to path (a mkstemps
 * template ending in .json). */
static void write_tcp_profile(char *path, const char *tcp)
{
    int fd = mkstemps(path, 5);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fprintf(f,
            "{\"bellows_costs\": 1, \"name\": \"t\", \"implementation\": \"t\", \"gpu\": "
            "\"V100\", \"fixed\": {\"tensor_s\": 1e-5, \"kernel_s\": 1e-5, \"collective_s\": "
            "1e-5}, \"allgather\": {\"overlaps_backward\": true}, \"networks\": {\"tcp\": "
            "{%s}}}\n",
            tcp);
    fclose(f);
}

/* A V100 profile whose tcp network has busbw tables on an 80 Gbps (10 GB/s) link: tables is
 * the "allreduce" list's JSON. Writes it to path (a mkstemps template ending in .json). */
static void write_busbw_profile(char *path, const char *tables)
{
    char tcp[1024];
    snprintf(tcp, sizeof tcp, "\"busbw\": {\"link_Gbps\": 80, \"allreduce\": %s}", tables);
    write_tcp_profile(path, tcp);
}

/* A busbw above its link's rate, or below a thousandth of it, is refused, naming the pair. */
static void test_busbw_beyond_its_link_is_refused(void **state)
{
    (void)state;
    const char *bad[] = {"[{\"gpus_per_nic\": 1, \"points\": [[1e6, 2], [1e8, 11]]}]",
                         "[{\"gpus_per_nic\": 1, \"points\": [[1e6, 0.001], [1e8, 8]]}]"};
    for (int i = 0; i < 2; i++) {
        char path[] = "/tmp/bellows-busbw-XXXXXX.json";
        write_busbw_profile(path, bad[i]);
        CostProfile *p = NULL;
        BwError err = {{0}};
        assert_int_equal(costs_load(path, "--costs", "V100", &p, &err), BW_EUSAGE);
        unlink(path);
        assert_null(p);
        if (!strstr(err.msg, "busbw") || !strstr(err.msg, i ? "pair 0" : "pair 1"))
            fail_msg("%s", err.msg);
    }
}

static void test_curve_interpolates_sizes_and_gpus_per_nic(void **state)
{
    (void)state;
    char path[] = "/tmp/bellows-busbw-XXXXXX.json";
    write_busbw_profile(path, "[{\"gpus_per_nic\": 1, \"points\": [[1e6, 2], [1e8, 8]]}, "
                              "{\"gpus_per_nic\": 8, \"points\": [[1e6, 1], [1e8, 4]]}]");
    CostProfile *p = NULL;
    BwError err;
    assert_int_equal(costs_load(path, "--costs", "V100", &p, &err), BW_OK);
    unlink(path);
    CollShareCurve k;
    assert_true(costs_busbw_curve(p, COST_NET_TCP, 0, 1, &k));
    expect_close(coll_share_curve_at(&k, 1e6), 0.2, 1e-12, "1 GPU a NIC, 1 MB: 2 of 10 GB/s");
    expect_close(coll_share_curve_at(&k, 1e7), 0.4, 1e-12, "log-log half way: 4 GB/s");
    expect_close(coll_share_curve_at(&k, 1e9), 0.8, 1e-12, "clamped beyond the last size");
    assert_true(costs_busbw_curve(p, COST_NET_TCP, 0, 8, &k));
    expect_close(coll_share_curve_at(&k, 1e8), 0.4, 1e-12, "8 GPUs a NIC");
    assert_true(costs_busbw_curve(p, COST_NET_TCP, 1, 16, &k)); /* allgather: the allreduce's */
    expect_close(coll_share_curve_at(&k, 1e8), 0.4, 1e-12, "clamped to the last table");
    assert_true(costs_busbw_curve(p, COST_NET_TCP, 0, 2, &k)); /* a third of the way in log */
    expect_close(coll_share_curve_at(&k, 1e8), 0.8 - (0.8 - 0.4) / 3, 1e-12, "2 GPUs a NIC");
    assert_false(costs_busbw_curve(p, COST_NET_RDMA, 0, 1, &k));
    costs_free(p);
}

/* Writes text to a new temporary log; returns its path in path. */
static void write_log(char *path, const char *text)
{
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_true(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
    close(fd);
}

static void test_malformed_logs_are_refused_with_file_and_line(void **state)
{
    (void)state;
    const char *header = "# nThread 1\n#  Rank  0 Group 0 Pid 1 on a device 0 [0x1] V100\n"
                         "#       size         count      type   redop    root     time   algbw "
                         "  busbw #wrong     time   algbw   busbw #wrong\n";
    struct {
        const char *rows, *want;
    } cases[] = {
        {"1048576 262144 float sum -1 100.0 10.4 10.4 0 100.0 10.4\n", ":4: a table row must "
                                                                       "have 13 columns"},
        {"1048576 262144 float sum -1 100.0 10.4 x10 0 100.0 10.4 10.4 0\n",
         ":4: column 8 (busbw) must be a number"},
        {"2097152 524288 float sum -1 1 1 1 0 1 1 1 0\n1048576 262144 float sum -1 1 1 1 0 1 1 1 "
         "0\n",
         ":5: sizes must rise"},
        {"NCCL INFO nothing here\n", ":1: no nccl-tests table"},
        /* a row's size that is not a size is refused, not dropped */
        {"1024 256 float sum -1 1 1 1 0 1 1 1 0\n-1024 256 float sum -1 1 1 1 0 1 1 1 0\n",
         ":5: column 1 (size) must be a number >= 0, got '-1024'"},
        {"1024 256 float sum -1 1 1 1 0 1 1 1 0\nabc 256 float sum -1 1 1 1 0 1 1 1 0\n",
         ":5: column 1 (size) must be a number >= 0, got 'abc'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char log[] = "/tmp/bellows-log-XXXXXX", out[] = "/tmp/bellows-busbw-out.json", text[1024];
        snprintf(text, sizeof text, "%s%s", i == 3 ? "" : header, cases[i].rows);
        write_log(log, text);
        unlink(out);
        BwError err = {0};
        assert_int_equal(import(log, out, &err), BW_EUSAGE);
        char want[256];
        snprintf(want, sizeof want, "%s%s", log, cases[i].want);
        if (!strstr(err.msg, want)) fail_msg("case %zu: '%s' lacks '%s'", i, err.msg, want);
        struct stat st;
        assert_true(stat(out, &st) != 0); /* nothing written */
        unlink(log);
    }
    /* --name without --base: the fragment has no name to carry it; refused, not dropped */
    const char *logs[] = {LOG_8_PER_NIC};
    NcclImport a = {.logs = logs,
                    .n_logs = 1,
                    .net = COST_NET_RDMA,
                    .link_Bps = 100e9 / 8,
                    .gpus_per_node = 8,
                    .nics_per_node = 1,
                    .collective = -1,
                    .name = "mine",
                    .out = "/tmp/bellows-busbw-out.json"};
    BwError err = {0};
    assert_int_equal(costs_import_nccl_tests(&a, &err), BW_EUSAGE);
    if (!strstr(err.msg, "--name mine: names the whole profile written with --base"))
        fail_msg("%s", err.msg);
    struct stat st;
    assert_true(stat(a.out, &st) != 0);
}

static void test_nics_per_node_splits_a_node_gpus_between_its_nics(void **state)
{
    (void)state;
    /* 2 nodes of 4 GPUs, 2 NICs a node: in the hierarchical allreduce's inter-node phase the 4
     * rings (one per local GPU index) share 2 NICs, 2 rings each: B/2 a flow */
    const int P = 8, G = 4, m = 2;
    const double B = 12.5e9, Bi = 150e9, n = 240000.0 * 4;
    memset(CURVE, 0, sizeof CURVE); /* links at their rate */
    SC = (Scenario){.cl = nodes(P, G, 2, B), .algo = COLL_HIERARCHICAL, .count = 240000};
    assert_int_equal(cluster_gpus_per_nic(&SC.cl), 2);
    double want = 2.0 * (G - 1) / G * n / Bi + 2.0 * (m - 1) / m * (n / G) / (B / 2);
    expect_close(simulate().time_s, want, 1e-6, "hierarchical allreduce, 2 NICs a node");
    SC.backend = COLL_ANALYTIC;
    expect_close(simulate().time_s, want, 1e-6, "analytic, 2 NICs a node");
    /* one NIC a node (0, the default) is --nics-per-node 1 */
    SC.cl.nics_per_node = 0;
    double one = simulate().time_s;
    SC.cl.nics_per_node = 1;
    expect_close(simulate().time_s, one, 1e-12, "--nics-per-node 1 is the default");
    BwError err;
    Cluster bad = nodes(P, G, 3, B);
    assert_int_equal(cluster_resolve(&bad, &err), BW_EUSAGE);
    assert_non_null(strstr(err.msg, "--nics-per-node: 3 does not divide --gpus-per-node 4"));
}

/* A V100 profile whose tcp network runs at share 0.5 of the link, capped at cap Gbit/s. */
static CostProfile *cap_profile(const char *cap)
{
    char path[] = "/tmp/bellows-cap-XXXXXX.json", tcp[256];
    snprintf(tcp, sizeof tcp, "\"allreduce\": 0.5, \"allgather\": 0.5, \"cap_gbps\": %s", cap);
    write_tcp_profile(path, tcp);
    CostProfile *p = NULL;
    BwError err = {{0}};
    assert_int_equal(costs_load(path, "--costs", "V100", &p, &err), BW_OK);
    unlink(path);
    return p;
}

/* The ring allreduce of P workers on a star of 10 Gbps NICs at the share the run loads
 * (driver_cluster_loaded: costs_link_share at the cluster's --bandwidth), analytic backend. */
static double capped_allreduce_s(const CostProfile *p, int P, size_t count)
{
    RunConfig cfg = {.cluster = star(P, 1.25e9, 0), .costs = p, .transport = COST_NET_TCP};
    SC = (Scenario){.algo = COLL_RING, .count = count, .backend = COLL_ANALYTIC};
    driver_cluster_loaded(&cfg, &SC.cl);
    return simulate().time_s;
}

/* A transport's cap (networks.tcp.cap_gbps) is a rate, not a share: the collectives reach
 * min(share x link, cap). A cap of 2.5 Gbit/s below 0.5 of a 10 Gbps link gives the links a
 * quarter of their rate, and the ring allreduce its closed form at 2.5 Gbit/s exactly; a cap
 * above 5 Gbit/s changes nothing. */
static void test_a_cap_below_share_times_link_is_the_rate(void **state)
{
    (void)state;
    const int P = 4;
    const size_t count = 262144 * P;
    const double n = (double)count * sizeof(float);
    CostProfile *capped = cap_profile("2.5"), *above = cap_profile("100");
    assert_true(costs_link_share(capped, COST_NET_TCP, 0, 1.25e9) == 0.25);
    assert_true(costs_link_share(capped, COST_NET_TCP, 1, 1.25e9) == 0.25);
    const double t = capped_allreduce_s(capped, P, count);
    assert_true(SC.cl.link_share == 0.25);
    const double want = coll_allreduce_formula_s(COLL_RING, P, 1, n, 0, 1 / 3.125e8, 0, 0);
    if (t != want) fail_msg("capped allreduce %.17g s, closed form at the cap %.17g s", t, want);
    assert_true(costs_link_share(above, COST_NET_TCP, 0, 1.25e9) == 0.5);
    const double t_above = capped_allreduce_s(above, P, count);
    assert_true(SC.cl.link_share == 0.5);
    const double want_share = coll_allreduce_formula_s(COLL_RING, P, 1, n, 0, 1 / 6.25e8, 0, 0);
    if (t_above != want_share)
        fail_msg("uncapped %.17g s, at the share %.17g s", t_above, want_share);
    costs_free(capped);
    costs_free(above);
}

/* A cap beside nccl-tests' tables is refused, naming the field: the tables are the rates. */
static void test_a_cap_beside_busbw_is_refused(void **state)
{
    (void)state;
    char path[] = "/tmp/bellows-busbw-XXXXXX.json";
    write_busbw_profile(path, "[{\"gpus_per_nic\": 1, \"points\": [[1e6, 2], [1e8, 8]]}]}, "
                              "\"cap_gbps\": 5, \"source\": {\"x\": 1");
    CostProfile *p = NULL;
    BwError err = {{0}};
    assert_int_equal(costs_load(path, "--costs", "V100", &p, &err), BW_EUSAGE);
    unlink(path);
    assert_null(p);
    if (!strstr(err.msg, "networks.tcp: \"cap_gbps\" with \"busbw\"")) fail_msg("%s", err.msg);
}

/* A log is taken only as what its program measures, on the network it ran over, at a rate its
 * NIC allows, and an error blames the log's line or the flag at fault (issue 49, items 15 and
 * 30): other programs' logs, rooted rows, a nameless log without --collective, one host's ranks
 * as a network's table, a busbw above --link-gbps and a bad --name are refused; nothing is
 * written. The last case, an allreduce log of 2 hosts, is imported. */
static void test_logs_are_taken_only_as_what_they_measure(void **state)
{
    (void)state;
    struct {
        const char *program, *host2, *root, *busbw, *name, *want;
        int collective;
    } cases[] = {
        {"reduce_perf", "b", "-1", "1.4", NULL, ":1: a reduce_perf log", -1},
        {"sendrecv_perf", "b", "-1", "1.4", NULL, ":1: a sendrecv_perf log", -1},
        {"./build/broadcast_perf -b 8", "b", "0", "1.4", NULL, ":1: a broadcast_perf log", -1},
        {"", "b", "0", "1.4", NULL, ":5: column 5 (root) is 0", 0},
        {"", "b", "-1", "1.4", NULL, ": no line names the nccl-tests program", -1},
        {"all_reduce_perf", "a", "-1", "1.4", NULL, ": its 2 ranks are all on host a", -1},
        {"all_reduce_perf", "b", "-1", "40", NULL, ":5: a busbw of 40 GB/s is 12.8 of --link-gbps",
         -1},
        {"all_reduce_perf", "b", "-1", "1.4", "a\tb", "--name a", -1},
        {"all_gather_perf", "b", "-1", "1.4", NULL,
         ":1: the log is all_gather_perf's, "
         "--collective says allreduce",
         0},
        {"all_reduce_perf", "b", "-1", "1.4", NULL, NULL, -1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char log[] = "/tmp/bellows-log-XXXXXX", out[] = "/tmp/bellows-busbw-what.json", text[1024];
        snprintf(text, sizeof text,
                 "#%s%s\n#  Rank  0 Group 0 Pid 1 on a device 0 [0x1] V100\n#  Rank  1 Group 0 "
                 "Pid 1 on %s device 0 [0x1] V100\n#  size  count  type  redop  root  time  "
                 "algbw  busbw #wrong  time  algbw  busbw #wrong\n"
                 " 1048576 262144 float sum %s 100.0 1.4 %s 0 100.0 1.4 1.4 0\n",
                 *cases[i].program ? " Collective test starting: " : "", cases[i].program,
                 cases[i].host2, cases[i].root, cases[i].busbw);
        write_log(log, text);
        unlink(out);
        const char *logs[] = {log};
        NcclImport a = {.logs = logs,
                        .n_logs = 1,
                        .net = COST_NET_TCP,
                        .link_Bps = 25e9 / 8,
                        .nics_per_node = 1,
                        .collective = cases[i].collective,
                        .base = "pytorch-v100",
                        .name = cases[i].name,
                        .out = out};
        BwError err = {0};
        int rc = costs_import_nccl_tests(&a, &err);
        struct stat st;
        if (!cases[i].want) {
            if (rc != BW_OK) fail_msg("case %zu: %s", i, err.msg);
            assert_int_equal(stat(out, &st), 0);
        } else {
            char want[256];
            snprintf(want, sizeof want, "%s%s", cases[i].name ? "" : log, cases[i].want);
            assert_int_equal(rc, BW_EUSAGE);
            if (!strstr(err.msg, want)) fail_msg("case %zu: '%s' lacks '%s'", i, err.msg, want);
            assert_true(stat(out, &st) != 0);
        }
        unlink(out);
        unlink(log);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_imported_log_prices_an_allreduce_at_its_measured_time),
        cmocka_unit_test(test_curve_interpolates_sizes_and_gpus_per_nic),
        cmocka_unit_test(test_busbw_beyond_its_link_is_refused),
        cmocka_unit_test(test_malformed_logs_are_refused_with_file_and_line),
        cmocka_unit_test(test_logs_are_taken_only_as_what_they_measure),
        cmocka_unit_test(test_nics_per_node_splits_a_node_gpus_between_its_nics),
        cmocka_unit_test(test_a_cap_below_share_times_link_is_the_rate),
        cmocka_unit_test(test_a_cap_beside_busbw_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
