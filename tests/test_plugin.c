/* test_plugin.c: policies loaded from shared objects, at the C level: the path form of a spec,
 * the network-aware example's rule on a context with the cluster filled in, what a plugin
 * observes before the driver fills the new fields, the ops check on every built-in, and every
 * refusal of a plug-in's option table (spec_opt_check, which the policy and schedule loaders
 * share).
 * tests/test_plugins.sh runs plugins through the commands. */
#include "testutil.h"

#include "policy.h"

static PolicyContext ctx_with(double bandwidth, double latency)
{
    PolicyContext c;
    memset(&c, 0, sizeof c);
    static const PolicyLayer layers[4] = {
        {"l0", 64, 784, 2}, {"l1", 64, 1, 1}, {"l2", 32, 64, 2}, {"l3", 10, 32, 2}};
    c.n_layers = 4;
    c.layers = layers; /* policy_create copies it */
    c.workers = 4, c.epochs = 2, c.batch = 64, c.steps_per_epoch = 10, c.lr0 = 0.1;
    snprintf(c.compressor, sizeof c.compressor, "powersgd");
    c.compressor_level = 2;
    c.bandwidth_Bps = bandwidth, c.latency_s = latency;
    return c;
}

static PolicyDecision one_step(Policy *p)
{
    double norms[4] = {1, 1, 1, 1};
    PolicyObs obs = {
        .epoch_start = 1, .lr = 0.1, .loss = 1, .grad_norm_rank0 = norms, .grad_norm_mean = norms};
    static double level[4]; /* the returned decision's, until the next call */
    PolicyDecision d = {.level = level};
    assert_int_equal(policy_step(p, &obs, &d, NULL), BW_OK);
    return d;
}

static void test_netaware_rank_from_bandwidth_and_latency(void **state)
{
    (void)state;
    BwError err = {{0}};
    Policy *p = NULL;
    /* bytes(r) = 4 (986 r + 64); t(r) = 2 (1.5 bytes / bw + 6 latency). bw 1e7 B/s, latency
     * 1e-5 s, budget 0.5 x 0.01 s: 12 (986 r + 64) / 1e7 <= 0.00488 -> r <= 4.06 -> rank 4 */
    PolicyContext c = ctx_with(1e7, 1e-5);
    assert_int_equal(policy_create(PLUGIN_NETAWARE ":compute_s=0.01", "--policy", &c, &p, &err),
                     BW_OK);
    PolicyDecision d = one_step(p);
    assert_true(d.level[0] == 4 && d.level[1] == 0 && d.level[2] == 4 && d.level[3] == 4);
    policy_free(p);
    /* 10x the bandwidth: every rank up to max=8 fits */
    c = ctx_with(1e8, 1e-5);
    assert_int_equal(policy_create(PLUGIN_NETAWARE ":compute_s=0.01", "--policy", &c, &p, &err),
                     BW_OK);
    assert_true(one_step(p).level[0] == 8);
    policy_free(p);
    /* no bandwidth known (the driver of phase 1): the compressor's default, said in the state */
    c = ctx_with(0, 0);
    assert_int_equal(policy_create(PLUGIN_NETAWARE, "--policy", &c, &p, &err), BW_OK);
    assert_true(one_step(p).level[0] == 2);
    char buf[64];
    policy_describe(p, buf, sizeof buf);
    assert_string_equal(buf, "rank=2 fallback");
    policy_free(p);
}

/* A plugin's option error names its file; a bad path is a usage error, not a lookup. */
static void test_plugin_specs(void **state)
{
    (void)state;
    BwError err = {{0}};
    Policy *p = NULL;
    PolicyContext c = ctx_with(0, 0);
    assert_int_equal(policy_create(PLUGIN_NETAWARE ":fraction=x", "--policy", &c, &p, &err),
                     BW_EUSAGE);
    assert_non_null(strstr(err.msg, PLUGIN_NETAWARE ": fraction=x: expected a number"));
    assert_int_equal(policy_create("./no such.so", "--policy", &c, &p, &err), BW_EUSAGE);
    assert_non_null(strstr(err.msg, "a plugin's path is made of"));
    assert_int_equal(policy_create("Static", "--policy", &c, &p, &err), BW_EUSAGE);
    assert_non_null(strstr(err.msg, "expected NAME or NAME:key=value"));
    Spec s;
    assert_int_equal(spec_parse("./x.so", "--compressor", &s, &err), BW_EUSAGE);
    assert_int_equal(spec_parse_plugin("dir/x:k=1", "--policy", &s, &err), BW_OK);
    assert_string_equal(s.path, "dir/x");
    assert_string_equal(s.name, "");
    assert_int_equal(s.n, 1);
    assert_null(p);
}

/* Before the driver fills them, the new observation fields read as absent: NaN and -1. */
static int seen_have = -1;
static double seen_acc, seen_compute;
static long seen_eval_step;
static void spy_decide(Policy *p, const PolicyObs *o, PolicyDecision *d)
{
    (void)p, (void)d;
    seen_have = (int)o->have, seen_acc = o->eval_accuracy, seen_compute = o->compute_s;
    seen_eval_step = o->eval_step;
}

static void test_new_observation_fields_read_as_absent(void **state)
{
    (void)state;
    for (const PolicyOps *const *r = policy_registry(); *r; r++) {
        BwError err = {{0}};
        if (policy_ops_check(*r, (*r)->name, &err) != BW_OK) fail_msg("%s", err.msg);
        assert_int_equal((*r)->iVersion, BELLOWS_POLICY_VERSION);
    }
    PolicyContext c = ctx_with(0, 0);
    Policy *p = NULL;
    BwError err = {{0}};
    assert_int_equal(policy_create("sync", "--policy", &c, &p, &err), BW_OK);
    PolicyOps spy = *p->ops; /* the core's copy: sync's ops with a spying decide */
    spy.decide = spy_decide;
    *(PolicyOps *)(void *)p->ops = spy;
    one_step(p);
    assert_int_equal(seen_have, 0); /* sync does not ask for norms */
    assert_true(isnan(seen_acc) && isnan(seen_compute) && seen_eval_step == -1);
    policy_free(p);
}

/* Entry i of opts, checked: BW_OK, or a usage error whose message holds `words`. */
static void opt_check_says(const SpecOpt *opts, int i, int known, const char *words)
{
    BwError err = {{0}};
    int rc = spec_opt_check(opts, i, 9, known, "p.so", &err);
    if (!words) {
        if (rc != BW_OK) fail_msg("refused: %s", err.msg);
        return;
    }
    assert_int_equal(rc, BW_EUSAGE);
    if (!strstr(err.msg, words) || strncmp(err.msg, "p.so: option ", 13) != 0)
        fail_msg("'%s' does not say '%s'", err.msg, words);
}

static void test_option_tables_are_checked_entry_by_entry(void **state)
{
    (void)state;
    const SpecOpt good[] = {{"k", SPEC_DOUBLE, "0.5", 0, 1, NULL, "a fraction"},
                            {"n", SPEC_INT, NULL, 1, 8, NULL, "a count, no default"},
                            {"m", SPEC_CHOICE, "b", 0, 0, "a|b", "a mode"}};
    for (int i = 0; i < 3; i++) opt_check_says(good, i, 1, NULL);
    opt_check_says((SpecOpt[]){{"K", SPEC_DOUBLE, NULL, 0, 1, NULL, "h"}}, 0, 1, "option 0: key");
    opt_check_says((SpecOpt[]){{"", SPEC_DOUBLE, NULL, 0, 1, NULL, "h"}}, 0, 1, "option 0: key");
    opt_check_says((SpecOpt[]){{"k", SPEC_DOUBLE, NULL, 0, 1, NULL, "h"},
                               {"k", SPEC_INT, NULL, 0, 1, NULL, "h"}},
                   1, 1, "'k' is declared twice");
    opt_check_says(good, 0, 0, "option 'k': type 9 is not DOUBLE, INT or CHOICE");
    opt_check_says((SpecOpt[]){{"k", SPEC_DOUBLE, NULL, 0, 1, NULL, NULL}}, 0, 1, "has no help");
    const char *bad_choices[] = {NULL, "", "|a", "a|", "a||b"};
    for (int c = 0; c < 5; c++)
        opt_check_says((SpecOpt[]){{"m", SPEC_CHOICE, NULL, 0, 0, bad_choices[c], "h"}}, 0, 1,
                       "choices must be");
    opt_check_says((SpecOpt[]){{"k", SPEC_DOUBLE, NULL, 2, 1, NULL, "h"}}, 0, 1, "range [2, 1]");
    opt_check_says((SpecOpt[]){{"k", SPEC_INT, NULL, 0, INFINITY, NULL, "h"}}, 0, 1, "not finite");
    opt_check_says((SpecOpt[]){{"k", SPEC_INT, "1.5", 0, 4, NULL, "h"}}, 0, 1,
                   "its default '1.5' is not valid");
    opt_check_says((SpecOpt[]){{"m", SPEC_CHOICE, "c", 0, 0, "a|b", "h"}}, 0, 1,
                   "its default 'c' is not valid");
    assert_true(spec_name_ok("a-b_9") && !spec_name_ok("a.b") && !spec_name_ok(NULL));
    assert_false(spec_name_ok("abcdefghijklmnopqrstuvwxyz0123456789"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_netaware_rank_from_bandwidth_and_latency),
        cmocka_unit_test(test_plugin_specs),
        cmocka_unit_test(test_new_observation_fields_read_as_absent),
        cmocka_unit_test(test_option_tables_are_checked_entry_by_entry),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
