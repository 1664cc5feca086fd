/* test_price_workers.c: --price-workers N prices every step's communication as N GPUs would pay
 * it while the small model trains on --workers. The priced times are checked against the
 * collectives' closed forms written out here (coll.h; the fat-tree's routes in and across leaves
 * of cluster.h), at N: the fast replay of the sample trace at 65,536 GPUs (ring), a live run on
 * the actors at 16,384 (halving-doubling step by step, oversubscribed uplinks), and an unpriced
 * replay at its own 8 workers, which checks the formula itself. Bad input: N below --workers, or
 * the transfer level, is refused naming the flag, with nothing written. */
#include "testutil.h"

#include <math.h>
#include <sys/stat.h>

#include "clitest.h"
#include "coll_impl.h" /* coll_allreduce_bytes: what each rank is charged */

#define SAMPLE BELLOWS_SOURCE_DIR "/traces/samples/mlp-sync-8w.jsonl.gz"
#define LAT    5e-6         /* the default link latency, s */
#define BW     (10e9 / 8.0) /* the default 10 Gbps, bytes/s */

/* Runs `bellows ARGS --quiet --out TMP/NAME`, its stdout and stderr into TMP/NAME.out. */
static int bellows(const char *name, const char *args)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, BELLOWS_BIN " %s --quiet --out %s/%s >%s/%s.out 2>&1", args, TMP,
             name, TMP, name);
    return WEXITSTATUS(system(cmd));
}

static char *read_out(const char *name, const char *file)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s%s%s", TMP, name, file ? "/" : ".out", file ? file : "");
    char *s = slurp(path, NULL);
    if (!s) fail_msg("no %s", path);
    return s;
}

static double json_number(const char *text, const char *key)
{
    char k[64];
    snprintf(k, sizeof k, "\"%s\": ", key);
    const char *at = strstr(text, k);
    if (!at) fail_msg("no %s in summary.json", key);
    return strtod(at + strlen(k), NULL);
}

static void assert_close(double got, double want, const char *what)
{
    if (!(fabs(got - want) <= 1e-9 * fabs(want)))
        fail_msg("%s: %.17g, the closed form gives %.17g (relative %.3g)", what, got, want,
                 fabs(got - want) / fabs(want));
}

/* The ring's allreduce of n bytes on p GPUs over routes of latency a and seconds per byte b. */
static double ring_s(double p, double n, double a, double b)
{
    return 2 * (p - 1) * a + 2 * (p - 1) / p * n * b;
}

/* The replay's communication over its steps against steps x the ring at p GPUs: one dense
 * allreduce of the mlp's parameters a step (compressor none), on fat-tree routes across leaves
 * (4 latencies), a ring's one flow per uplink (line rate). */
static void check_replay(const char *name, const char *extra, double p)
{
    char args[1024];
    snprintf(args, sizeof args,
             "replay --trace " SAMPLE " --topology fat-tree --collectives analytic --costs ideal "
             "--compressor none --policies sync --no-plots %s",
             extra);
    assert_int_equal(bellows(name, args), 0);
    char *s = read_out(name, "seed-1/1-sync/summary.json");
    const double steps = json_number(s, "steps"), n = 4 * json_number(s, "n_params");
    assert_true(steps > 1000 && strstr(s, "\"replay_engine\": \"fast\""));
    assert_close(json_number(s, "communication_s"), steps * ring_s(p, n, 4 * LAT, 1 / BW),
                 "communication_s");
    free(s);
}

static void test_a_replay_priced_at_65536_gpus_pays_the_closed_form_there(void **state)
{
    (void)state;
    check_replay("own", "", 8); /* the formula at the trace's own 8 workers */
    check_replay("p64k", "--price-workers 65536", 65536);
    char *out = read_out("p64k", NULL), *s = read_out("p64k", "seed-1/1-sync/summary.json");
    assert_non_null(strstr(out, "every step's communication as 65536 GPUs pay it"));
    assert_true(json_number(s, "price_workers") == 65536 && json_number(s, "workers") == 8);
    free(out);
    free(s);
}

/* A live run on the actors: 4 workers train, priced at 16,384 on leaves of 8 with 2:1 uplinks.
 * Unpriced, the 4 would share one leaf; priced, halving-doubling's steps at distances of 8 and
 * more cross leaves (4 latencies), a leaf's 8 flows sharing its uplink (oversubscription x the
 * seconds per byte), and its three steps at distances 4, 2, 1 stay in the leaves (2 latencies,
 * line rate; coll_hier_steps.c), each step of the reduce-scatter again in the allgather. */
static void test_a_live_run_priced_at_16384_gpus_pays_halving_doubling_there(void **state)
{
    (void)state;
    assert_int_equal(bellows("live",
                             "run --epochs 1 --train-samples 512 --test-samples 100 --collectives "
                             "analytic --costs ideal --overlap none --compressor none --workers 4 "
                             "--topology fat-tree --leaf-size 8 --oversubscription 2 --allreduce "
                             "halving-doubling --price-workers 16384"),
                     0);
    char *s = read_out("live", "summary.json");
    const double p = 16384, n = 4 * json_number(s, "n_params");
    double step = 0, x = n;
    for (double d = p / 2; d >= 1; d /= 2) {
        x /= 2;
        step += d >= 8 ? 2 * (4 * LAT + x * 2 / BW) : 2 * (2 * LAT + x / BW);
    }
    assert_close(json_number(s, "communication_s"), json_number(s, "steps") * step,
                 "communication_s");
    free(s);
}

/* bench's throughput in all is the priced GPUs', each at the per-GPU rate of a priced step. */
static void test_bench_counts_the_priced_gpus(void **state)
{
    (void)state;
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             BELLOWS_BIN " bench --workload resnet50 --workers 8 --collectives analytic "
                         "--price-workers 4096 >%s/bench.out 2>&1",
             TMP);
    assert_int_equal(WEXITSTATUS(system(cmd)), 0);
    char *out = read_out("bench", NULL);
    double per = 0, all = 0;
    const char *at = strstr(out, "throughput: ");
    if (!at ||
        sscanf(at, "throughput: %lf samples/s per GPU, %lf samples/s in all", &per, &all) != 2)
        fail_msg("no throughput in: %s", out);
    assert_non_null(strstr(out, "(4096 GPUs)"));
    assert_true(fabs(all - 4096 * per) <= 1e-3 * all + 0.1);
    free(out);
}

static void test_bad_prices_are_refused_naming_the_flag(void **state)
{
    (void)state;
    const char *bad[][2] = {
        {"below", "run --workers 8 --price-workers 4 --collectives analytic"},
        {"transfer", "run --workers 8 --price-workers 4096"},
        {"rbelow", "replay --trace " SAMPLE " --price-workers 7 --collectives analytic"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        assert_int_equal(bellows(bad[i][0], bad[i][1]), 2);
        char *msg = read_out(bad[i][0], NULL);
        if (!strstr(msg, "--price-workers"))
            fail_msg("%s: no --price-workers in: %s", bad[i][1], msg);
        free(msg);
        char dir[256];
        struct stat st;
        snprintf(dir, sizeof dir, "%s/%s", TMP, bad[i][0]);
        assert_int_not_equal(stat(dir, &st), 0); /* nothing written */
    }
    char *msg = read_out("below", NULL);
    assert_non_null(strstr(msg, "below --workers 8"));
    free(msg);
}

/* The mean over n ranks of comm c's allreduce bytes for a message of 1 MB. */
static double mean_bytes(const Comm *c, int n)
{
    double sum = 0;
    for (int r = 0; r < n; r++) sum += coll_allreduce_bytes(c, r, 1e6);
    return sum / n;
}

/* The bytes a worker sends are priced at N, as the time is: whatever --workers P trains, the
 * mean over its ranks is the mean over the N ranks of an unpriced N-GPU allreduce (the naive
 * reference), for the tree and the halving-doubling, whose ranks send different amounts
 * (issue 49 item 18: the tree's mean was 3.0n at 2 workers and 2.125n at 16, priced at 16). */
static void test_bytes_are_priced_at_the_priced_gpus(void **state)
{
    (void)state;
    const struct {
        CollAlgo algo;
        int n;
    } cases[] = {{COLL_TREE, 16}, {COLL_TREE, 12}, {COLL_HALVING_DOUBLING, 12}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        Cluster at_n = cluster_default();
        at_n.workers = cases[i].n;
        Comm *ref = coll_comm_create_offline(&at_n, cases[i].algo);
        const double want = mean_bytes(ref, cases[i].n);
        coll_comm_free(ref);
        for (int p = 2; p <= cases[i].n; p *= 2) {
            Cluster cl = at_n;
            cl.workers = p;
            Comm *c = coll_comm_create_offline(&cl, cases[i].algo);
            coll_comm_set_price(c, &at_n);
            char what[96];
            snprintf(what, sizeof what, "algorithm %d priced at %d on %d workers", cases[i].algo,
                     cases[i].n, p);
            assert_close(mean_bytes(c, p), want, what);
            coll_comm_free(c);
        }
    }
}

/* Seconds of one analytic allreduce of n bytes by 4 workers priced at cluster `at` (offline:
 * the closed form without SimGrid), charged twice: the second from the steps the first kept
 * (the communicator's table holds them, for `at`'s workers), then again once re-priced at about
 * half as many GPUs (as a fresh communicator prices them) and back: the table follows the size
 * it is asked for. */
static double priced_call_s(CollAlgo algo, const Cluster *at, double n)
{
    Cluster cl = *at, fewer = *at;
    cl.workers = 4;
    fewer.workers = at->workers / 2 + 8; /* irregular too, a step fewer */
    Comm *c = coll_comm_create_offline(&cl, algo);
    coll_comm_set_price(c, at);
    const double t = coll_charge_allreduce(c, (size_t)(n / 4), 4);
    assert_non_null(c->steps);
    assert_int_equal(c->steps->p, at->workers);
    assert_true(coll_charge_allreduce(c, (size_t)(n / 4), 4) == t);
    Comm *fresh = coll_comm_create_offline(&cl, algo);
    coll_comm_set_price(fresh, &fewer);
    const double t_fewer = coll_charge_allreduce(fresh, (size_t)(n / 4), 4);
    coll_comm_free(fresh);
    coll_comm_set_price(c, &fewer);
    assert_true(coll_charge_allreduce(c, (size_t)(n / 4), 4) == t_fewer && t_fewer != t);
    coll_comm_set_price(c, at);
    assert_true(coll_charge_allreduce(c, (size_t)(n / 4), 4) == t);
    coll_comm_free(c);
    return t;
}

/* Layouts coll_hier_steps.c enumerates pair by pair (not a power of two of GPUs for
 * halving-doubling, leaves of 6 for the tree) above 4,096 GPUs, where they were once priced by
 * the one-rate form, every step at a whole leaf's share of the uplink (+59% and +522% here),
 * against their steps written from the messages. Halving-doubling on 5,120 GPUs in leaves of 8
 * at 4:1: ranks 0-2047 fold in pairs inside their leaves (2 l + n / B, and again to fold out);
 * its core is their 1,024 odd ranks (4 a leaf) and ranks 2048-5119 (8 a leaf), whose steps at
 * distances 2048 to 8 cross leaves, 8 flows an uplink of 8 B / 4 (4 l + x 4 / B), at distance
 * 4 the odd ranks cross, 4 flows an uplink (4 l + x 2 / B), and at 2 and 1 all stay in their
 * leaves. The tree on 4,800 GPUs in leaves of 6 at 12:1: the level of mask 1 stays in the leaves,
 * every other level has a pair across, one flow an uplink of 6 B / 12 (4 l + n 2 / B). */
static void test_irregular_layouts_above_4096_gpus_are_priced_step_by_step(void **state)
{
    (void)state;
    const double n = 4e6;
    Cluster at = cluster_default();
    at.topology = TOPO_FAT_TREE;
    at.workers = 5120;
    at.leaf_size = 8;
    at.oversubscription = 4;
    double want = 2 * (2 * LAT + n / BW), x = n;
    for (int d = 2048; d >= 1; d /= 2) {
        x /= 2;
        want += d >= 8   ? 2 * (4 * LAT + x * 4 / BW)
                : d == 4 ? 2 * (4 * LAT + x * 2 / BW)
                         : 2 * (2 * LAT + x / BW);
    }
    assert_close(priced_call_s(COLL_HALVING_DOUBLING, &at, n), want, "halving-doubling at 5120");
    at.workers = 4800;
    at.leaf_size = 6;
    at.oversubscription = 12;
    want = 2 * (2 * LAT + n / BW) + 2 * 12 * (4 * LAT + n * 2 / BW); /* 13 levels */
    assert_close(priced_call_s(COLL_TREE, &at, n), want, "tree at 4800");
}

int main(void)
{
    make_tmpdir(TMP, sizeof TMP);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_replay_priced_at_65536_gpus_pays_the_closed_form_there),
        cmocka_unit_test(test_a_live_run_priced_at_16384_gpus_pays_halving_doubling_there),
        cmocka_unit_test(test_bench_counts_the_priced_gpus),
        cmocka_unit_test(test_bytes_are_priced_at_the_priced_gpus),
        cmocka_unit_test(test_irregular_layouts_above_4096_gpus_are_priced_step_by_step),
        cmocka_unit_test(test_bad_prices_are_refused_naming_the_flag),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    rm_tree(TMP);
    return rc;
}
