/* test_compat.c: the compatibility table (sim/cli/compat.def, issue 47) against what the
 * commands do. Every pair of the features' values below, each other feature at its default, goes
 * through the run's own checks in this process (run_parse_flags, run_setup, driver_check and the
 * policy's kind against the table, run_note_idle_flags: everything a run does before its engine
 * starts), on one tiny scenario whose data is loaded once. A scene the table allows must pass every
 * check; one it refuses (the table itself is the oracle: any line whose two sides the scene's
 * values match) must be a usage error naming both flags of that line. Then the binary: every line
 * of the table is refused from the command line, exit 2, one line naming both flags, and a sweep
 * runs a tiny instance of the allowed pairs of the features a sweep can cross, in one process. */
#include "testutil.h"

#include "clitest.h"

#include "compat.h"
#include "run_args.h"

/* A feature's value as a command line gives it; "" for the default (not given). */
typedef struct {
    CompatFeature f;
    const char *value; /* what the table matches; NULL: not given */
    const char *args;
} Value;

static const Value VALUES[] = {
    {COMPAT_TOPOLOGY, "fat-tree", "--topology fat-tree --leaf-size 2"},
    {COMPAT_TOPOLOGY, "hierarchical", "--topology hierarchical --gpus-per-node 2"},
    {COMPAT_TOPOLOGY, "islands", "--topology islands --islands 2"},
    {COMPAT_ALLREDUCE, "ring", "--allreduce ring"},
    {COMPAT_ALLREDUCE, "tree", "--allreduce tree"},
    {COMPAT_ALLREDUCE, "ps", "--allreduce ps"},
    {COMPAT_COLLECTIVES, "transfer", "--collectives transfer"},
    {COMPAT_NETWORK_MODEL, "tcp", "--network-model tcp"},
    {COMPAT_OVERLAP, "none", "--overlap none"},
    {COMPAT_OVERLAP, "ddp", "--overlap ddp"},
    {COMPAT_OVERLAP, "layer", "--overlap layer"},
    {COMPAT_SHARDING, "zero3", "--sharding zero3"},
    {COMPAT_SCHEDULE, "fifo", "--schedule fifo"},
    {COMPAT_SCHEDULE, "p3", "--schedule p3"},
    {COMPAT_POLICY, "periodic", "--policy cpsgd:period=2"},
    {COMPAT_POLICY, "outer", "--policy diloco:H=2"},
    {COMPAT_POLICY, "eager-outer", "--policy diloco:H=2,eager=1"},
    {COMPAT_WORKLOAD, "resnet18-cifar", "--workload resnet18-cifar"},
    {COMPAT_PRICE_WORKERS, "*", "--price-workers 8"},
    {COMPAT_HOROVOD, "0.21.0", "--horovod 0.21"},
};
#define N_VALUES ((int)(sizeof VALUES / sizeof *VALUES))

/* The tiny scenario every pair runs in: the smallest model (mlp), 2 workers, 1 epoch of 8
 * samples, analytic collectives (the cheapest level; transfer is a value above). */
#define BASE "--epochs 1 --train-samples 8 --test-samples 8 --batch 4 --workers 2 --quiet"
static const char *const DEFAULTS[COMPAT_N_FEATURES] = {
    [COMPAT_TOPOLOGY] = "star", [COMPAT_COLLECTIVES] = "analytic", [COMPAT_POLICY] = "gradient"};

/* The first line of the table that the scene's values match, or -1. */
static int table_refuses(const char *const *v)
{
    for (int i = 0; i < compat_lines(); i++) {
        CompatFeature a, b, c;
        const char *va, *vb, *vc, *why;
        compat_line_when(i, &a, &va, &b, &vb, &c, &vc, &why);
        if (compat_match(va, v[a]) && compat_match(vb, v[b]) &&
            (c == COMPAT_N_FEATURES || compat_match(vc, v[c])))
            return i;
    }
    return -1;
}

static int split(char *line, char **argv, int max)
{
    int n = 0;
    for (char *t = strtok(line, " "); t && n < max; t = strtok(NULL, " ")) argv[n++] = t;
    return n;
}

typedef struct {
    Dataset train, test;
    int loaded;
} Data;

/* The run's checks in this process, as bellows run makes them before its engine starts. */
static int check_in_process(const char *args, Data *d, BwError *err)
{
    char line[1024], *argv[64];
    snprintf(line, sizeof line, "%s %s %s", BASE,
             strstr(args, "--collectives") ? "" : "--collectives analytic", args);
    int argc = split(line, argv, 64);
    Flags *f = calloc(1, sizeof *f);
    TrainArgs ta;
    RunConfig cfg;
    double slowdown[DRIVER_MAX_WORKERS];
    int rc = run_parse_flags("bellows run", RUN_MODE_RUN, argc, argv, f, err);
    if (!rc) rc = run_setup("run", f, &ta, &cfg, slowdown, err);
    if (!rc && !d->loaded) {
        rc = run_load_data(&ta, &cfg, &d->train, &d->test, err);
        d->loaded = rc == BW_OK;
    }
    cfg.train = &d->train;
    cfg.test = &d->test;
    char one[1][SPEC_MAX_TEXT];
    snprintf(one[0], sizeof one[0], "%s", cfg.policy ? cfg.policy : "sync");
    if (!rc) rc = run_check_compat("run", f, &cfg, one, 1, err);
    if (!rc) rc = driver_check(&cfg, err);
    if (!rc) rc = run_note_idle_flags(f, &cfg, one, 1, err);
    run_flags_release(f);
    free(f);
    return rc;
}

/* Whether msg names feature f's flag (a policy: --policy, or --policies where a command takes
 * several; a cluster file's key "topology" for --topology). */
static int names(const char *msg, CompatFeature f)
{
    const char *flag = compat_flag(f);
    char key[64];
    snprintf(key, sizeof key, "\"%s\"", flag + 2);
    return strstr(msg, f == COMPAT_POLICY ? "--polic" : flag) ||
           (flag[0] == '-' && strstr(msg, key));
}

/* Whether msg names both flags of the table's line and gives its reason. */
static int names_both(const char *msg, int line, const char *what)
{
    CompatFeature a, b;
    const char *va, *vb, *why;
    compat_line(line, &a, &va, &b, &vb, &why);
    if (names(msg, a) && names(msg, b) && strstr(msg, why)) return 1;
    print_message("%s: refused without naming %s and %s with the table's reason: %s\n", what,
                  compat_flag(a), compat_flag(b), msg);
    return 0;
}

/* Every pair of values of two different features, in this process. */
static void test_every_pair_is_allowed_or_refused_as_the_table_says(void **state)
{
    (void)state;
    Data d = {0};
    int allowed = 0, refused = 0, bad = 0;
    for (int i = 0; i < N_VALUES; i++)
        for (int j = i + 1; j < N_VALUES; j++) {
            if (VALUES[i].f == VALUES[j].f) continue;
            const char *v[COMPAT_N_FEATURES];
            memcpy(v, DEFAULTS, sizeof v);
            v[VALUES[i].f] = VALUES[i].value;
            v[VALUES[j].f] = VALUES[j].value;
            char args[512];
            snprintf(args, sizeof args, "%s %s", VALUES[i].args, VALUES[j].args);
            BwError err = {0};
            const int rc = check_in_process(args, &d, &err), line = table_refuses(v);
            if (line < 0 && rc != BW_OK) {
                print_message("%s: the table allows it, but: %s\n", args, err.msg);
                bad++;
            }
            if (line >= 0 && rc != BW_EUSAGE) {
                print_message("%s: the table refuses it (line %d), but it passed\n", args, line);
                bad++;
            }
            if (line >= 0 && rc == BW_EUSAGE) bad += !names_both(err.msg, line, args);
            allowed += line < 0;
            refused += line >= 0;
        }
    dataset_free(&d.train);
    dataset_free(&d.test);
    print_message("%d pairs allowed and checked, %d refused by the table\n", allowed, refused);
    assert_int_equal(bad, 0);
    assert_true(allowed > 50 && refused > 10);
}

/* The values the command line gives beyond VALUES: what a refusal from the binary needs. */
static const Value MORE[] = {
    {COMPAT_PLATFORM, "*", "--platform @/star.xml"},
    {COMPAT_REPLAY, "*", "--trace @/t.jsonl.gz"},
    {COMPAT_CLUSTER, "*", ""},
    {COMPAT_TOPOLOGY, "star", ""},
    {COMPAT_COLLECTIVES, "analytic", "--collectives analytic"},
    {COMPAT_POLICY, "gradient", "--policy sync"},
    {COMPAT_SHARDING, "hybrid", "--sharding hybrid"},
};

/* A value of feature f that values matches: VALUES' first, then MORE's. */
static const Value *value_for(CompatFeature f, const char *values)
{
    for (int i = 0; i < N_VALUES; i++)
        if (VALUES[i].f == f && compat_match(values, VALUES[i].value)) return &VALUES[i];
    for (size_t i = 0; i < sizeof MORE / sizeof *MORE; i++)
        if (MORE[i].f == f && compat_match(values, MORE[i].value)) return &MORE[i];
    return NULL;
}

/* Line i's pair as a command line: bellows run, or replay with a trace (its --policies), or
 * bellows cluster with a file of the other side's topology. */
static void command_of(int i, char *cmd, size_t n)
{
    CompatFeature f[3];
    const char *v[3], *why;
    compat_line_when(i, &f[0], &v[0], &f[1], &v[1], &f[2], &v[2], &why);
    const Value *x[3] = {value_for(f[0], v[0]), value_for(f[1], v[1]),
                         f[2] == COMPAT_N_FEATURES ? NULL : value_for(f[2], v[2])};
    int replay = 0, cluster = 0;
    char args[512] = "";
    for (int k = 0; k < 3; k++) {
        if (k < 2 && !x[k])
            fail_msg("line %d: no value of %s matches %s", i, compat_flag(f[k]), v[k]);
        if (!x[k]) continue;
        replay |= x[k]->f == COMPAT_REPLAY;
        cluster |= x[k]->f == COMPAT_CLUSTER;
        const char *a = x[k]->args;
        size_t used = strlen(args);
        if (x[k]->f == COMPAT_POLICY) /* replay takes --policies */
            snprintf(args + used, sizeof args - used, " --polic%s%s", replay ? "ies" : "y",
                     strchr(a, ' '));
        else
            snprintf(args + used, sizeof args - used, " %s", a);
    }
    if (cluster) { /* the only cluster line: its shared topology */
        write_tmp("c.json", "{\"version\": 1, \"topology\": \"islands\", \"islands\": 2, "
                            "\"jobs\": [{\"name\": \"a\", \"workers\": 2, \"epochs\": 1}]}");
        snprintf(cmd, n, "cluster @/c.json --out @/o");
    } else if (replay) {
        snprintf(cmd, n, "replay %s --quiet --out @/o", args);
    } else {
        snprintf(cmd, n, "run %s %s %s --out @/o", BASE,
                 strstr(args, "--collectives") ? "" : "--collectives analytic", args);
    }
}

/* Every line of the table, from the command line: exit 2, one line naming both flags and the
 * table's reason, nothing written. */
static void test_every_refused_pair_exits_2_naming_both_flags(void **state)
{
    (void)state;
    assert_int_equal(bw("platform --workers 2"), 0);
    char *xml = tmp_file("stdout");
    write_tmp("star.xml", xml);
    free(xml);
    assert_int_equal(bw("run " BASE " --collectives analytic --record-trace @/t.jsonl.gz"), 0);
    for (int i = 0; i < compat_lines(); i++) {
        CompatFeature a, b;
        const char *va, *vb, *why;
        compat_line(i, &a, &va, &b, &vb, &why);
        char cmd[1024];
        command_of(i, cmd, sizeof cmd);
        expect_refusal(why, "%s", cmd);
        char *err = tmp_file("stderr");
        if (!names(err, a) || !names(err, b))
            fail_msg("%s: the refusal names not both %s and %s: %s", cmd, compat_flag(a),
                     compat_flag(b), err);
        free(err);
    }
    print_message("%d lines of the table refused from the command line\n", compat_lines());
}

/* A tiny instance of the allowed pairs among the features a sweep crosses, simulated, in one
 * sweep (one process that trains each policy once and prices every point): each policy kind on
 * each topology, overlap and collectives level; every run must finish. */
static void test_the_allowed_pairs_run(void **state)
{
    (void)state;
    assert_int_equal(bw("sweep " BASE " --seeds 1 --no-plots --policies sync,cpsgd:period=2,"
                        "diloco:H=2 --topology star,hierarchical --overlap none,ddp,tensor "
                        "--collectives analytic,transfer --out @/sweep"),
                     0);
    char *csv = tmp_file("sweep/sweep.csv");
    assert_non_null(csv);
    assert_int_equal(count_lines(csv), 1 + 3 * 2 * 3 * 2); /* the header, then every run */
    free(csv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_pair_is_allowed_or_refused_as_the_table_says),
        cmocka_unit_test(test_every_refused_pair_exits_2_naming_both_flags),
        cmocka_unit_test(test_the_allowed_pairs_run),
    };
    return cmocka_run_group_tests(tests, clitest_setup, clitest_teardown);
}
