/* test_policies.c: the scheduling policies' contract and specs. A contract suite runs every
 * registered policy (and the example plugins) through the same synthetic run (several epochs, an
 * lr decay, falling norms, loss and variance); static and sync give the levels they are asked
 * for; bad specs are each a usage error that says what was wrong; the listing names every
 * policy. The adaptive rules meet hand-made observation sequences in test_policies_accordion.c
 * and test_policies_periodic.c. */
#include "testutil.h"

#include "policy.h"
#include "policytest.h"

/* ---- a level check standing in for the compressors' ---- */

/* What the driver would wire to compress_check_level: PowerSGD takes an integer rank >= 1,
 * TopK a fraction in (0, 1]. arg is the compressor's name. */
static int fake_check_level(const void *arg, double level, const char *what, BwError *err)
{
    const char *comp = arg;
    if (strcmp(comp, "powersgd") == 0 && (level < 1 || level != floor(level)))
        return bw_fail(err, BW_EUSAGE, "%s=%g: powersgd takes an integer rank >= 1", what, level);
    if (strcmp(comp, "topk") == 0 && !(level > 0 && level <= 1))
        return bw_fail(err, BW_EUSAGE, "%s=%g: topk takes a fraction in (0, 1]", what, level);
    return BW_OK;
}

static PolicyContext make_checked_ctx(const char *compressor, double level)
{
    PolicyContext c = make_ctx(compressor, level);
    c.check_level = fake_check_level;
    c.check_level_arg = compressor; /* a string literal: outlives every copy of c */
    return c;
}

/* ---- the contract: every policy through one synthetic run ---- */

#define CONTRACT_STEPS 60 /* 6 epochs of 10 steps; the lr drops 10x at epoch 4 */

typedef struct {
    PolicyDecision d[CONTRACT_STEPS];
    double level[CONTRACT_STEPS][4]; /* d[t].level */
    char describe[CONTRACT_STEPS][64];
} ContractRun;

/* Feeds the run, answering each averaging with a variance that falls over time and grows with
 * the interval (as local SGD's would). */
static void contract_run(Policy *p, ContractRun *out)
{
    double rank0[4], mean[4];
    long since_avg = 0, last_len = 0;
    int averaged = 0;
    for (long t = 0; t < CONTRACT_STEPS; t++) {
        int epoch = (int)(t / 10);
        double lr = epoch >= 4 ? 0.01 : 0.1;
        for (int l = 0; l < 4; l++) {
            rank0[l] = (l + 1) * exp(-t / 25.0) * (1 + 0.3 * sin((double)t + l));
            mean[l] = (l + 1) * exp(-t / 25.0) * (1 + 0.1 * cos((double)t * 0.7 + l));
        }
        PolicyObs obs = {
            .step = t,
            .epoch = epoch,
            .epoch_start = t % 10 == 0,
            .epoch_end = t % 10 == 9,
            .lr_decayed = t == 40,
            .lr = lr,
            .loss = 0.2 + 2.1 * exp(-t / 20.0),
            .grad_norm_rank0 = rank0,
            .grad_norm_mean = mean,
            .averaged = averaged,
            .param_variance = averaged ? 0.5 * exp(-t / 15.0) * (lr / 0.1) * last_len : 0,
            .sim_time_s = 0.01 * (double)t,
            .bytes_per_worker = 1e5 * (double)t,
        };
        out->d[t].level = out->level[t];
        assert_int_equal(policy_step(p, &obs, &out->d[t], NULL), BW_OK);
        policy_describe(p, out->describe[t], sizeof out->describe[t]);
        since_avg++;
        averaged = out->d[t].average;
        if (averaged) {
            last_len = since_avg;
            since_avg = 0;
        }
    }
}

/* One policy (a spec: a name or a plugin's path) through the contract run on ctx. */
static void contract_check(const char *spec, const PolicyContext *pctx)
{
    const PolicyContext ctx = *pctx;
    Policy *p = create_ok(spec, &ctx);
    Policy *q = create_ok(spec, &ctx);
    const PolicyOps *ops = p->ops;
    assert_string_equal(policy_spec(p), spec);
    BwError oerr = {{0}};
    if (policy_ops_check(ops, spec, &oerr) != BW_OK) fail_msg("%s", oerr.msg);
    static ContractRun a, b;
    contract_run(p, &a);
    contract_run(q, &b);
    int averagings = 0;
    for (int t = 0; t < CONTRACT_STEPS; t++) {
        const PolicyDecision *d = &a.d[t];
        if (!a.describe[t][0]) fail_msg("%s: empty describe at step %d", ops->name, t);
        assert_true(d->batch > 0);
        for (int l = 0; l < ctx.n_layers; l++) {
            assert_true(d->level[l] >= 0);
            if (ctx.layers[l].ndim == 1) assert_true(d->level[l] == 0);
            /* every level is one the compressor accepts (0 is dense) */
            BwError err;
            if (d->level[l] > 0 &&
                fake_check_level(ctx.compressor, d->level[l], "level", &err) != BW_OK)
                fail_msg("%s with %s: %s", ops->name, ctx.compressor, err.msg);
        }
        if (ops->mode == POLICY_PERIODIC) {
            assert_true(d->period >= 1);
            averagings += d->average;
        } else {
            assert_int_equal(d->average, 0);
        }
        /* deterministic: the same observations give the same decisions */
        assert_memory_equal(d->level, b.d[t].level, sizeof d->level);
        assert_int_equal(d->batch, b.d[t].batch);
        assert_int_equal(d->average, b.d[t].average);
        assert_int_equal(d->period, b.d[t].period);
        assert_string_equal(a.describe[t], b.describe[t]);
    }
    /* a period longer than the run (diloco's H = 500 by default) need not average in it */
    if (ops->mode == POLICY_PERIODIC && averagings == 0 && a.d[0].period <= CONTRACT_STEPS)
        fail_msg("%s never averaged in %d steps", ops->name, CONTRACT_STEPS);
    policy_free(p);
    policy_free(q);
}

static const char *const PLUGINS[] = {PLUGIN_NETAWARE, PLUGIN_PLATEAU, PLUGIN_HALFWAY};

/* The names policies.def registers, in its order: the registry holds exactly these, each under
 * the name its line gives. */
static const char *const DEF_NAMES[] = {
#define POLICY(name) #name,
#include "policies.def"
#undef POLICY
};
#define N_DEF_NAMES ((int)(sizeof DEF_NAMES / sizeof *DEF_NAMES))

static void test_every_policy_meets_the_contract(void **state)
{
    (void)state;
    static const struct {
        const char *compressor;
        double level;
    } comps[] = {{"powersgd", 2}, {"topk", 0.01}};
    int n_policies = 0;
    for (const PolicyOps *const *r = policy_registry(); *r; r++, n_policies++) {
        const PolicyOps *ops = *r;
        assert_true(n_policies < N_DEF_NAMES);
        char name[32]; /* policies.def's NAME is a C name: '-' in a policy's name is '_' there */
        snprintf(name, sizeof name, "%s", ops->name);
        for (char *c = name; *c; c++) *c = *c == '-' ? '_' : *c;
        assert_string_equal(name, DEF_NAMES[n_policies]);
        assert_ptr_equal(policy_find(ops->name), ops);
        assert_true(ops->help && *ops->help && ops->source && *ops->source);
        for (size_t c = 0; c < sizeof comps / sizeof *comps; c++) {
            PolicyContext ctx = make_checked_ctx(comps[c].compressor, comps[c].level);
            contract_check(ops->name, &ctx);
        }
    }
    /* a loaded plugin meets the same contract (the examples, built by CMake as modules) */
    PolicyContext ctx = make_checked_ctx("powersgd", 2);
    for (size_t k = 0; k < sizeof PLUGINS / sizeof *PLUGINS; k++) contract_check(PLUGINS[k], &ctx);
    assert_int_equal(n_policies, N_DEF_NAMES);
    policy_free(NULL); /* a no-op */
}

/* ---- static and sync ---- */

static void test_static_and_sync_levels(void **state)
{
    (void)state;
    double norms[4] = {1, 1, 1, 1};
    PolicyObs obs = {.lr = 0.1, .loss = 1, .grad_norm_rank0 = norms, .grad_norm_mean = norms};
    PolicyDecision d = {.level = (double[4]){0}};
    struct {
        const char *compressor, *spec;
        double ctx_level, want;
        const char *describe;
    } cases[] = {
        {"powersgd", "static", 2, 2, "level=2"}, /* the compressor's default */
        {"powersgd", "static:level=4", 2, 4, "level=4"},
        {"topk", "static:level=0.25", 0.01, 0.25, "level=0.25"},
        {"powersgd", "static:level=0", 2, 0, "level=0"}, /* 0: dense */
        {"none", "static", 0, 0, "level=0"},             /* nothing to choose: dense */
        {"none", "static:level=0", 0, 0, "level=0"},
        {"powersgd", "sync", 2, 0, "dense"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        PolicyContext ctx = make_checked_ctx(cases[i].compressor, cases[i].ctx_level);
        Policy *p = create_ok(cases[i].spec, &ctx);
        assert_int_equal(policy_step(p, &obs, &d, NULL), BW_OK);
        assert_float_equal(d.level[0], cases[i].want, 0);
        assert_float_equal(d.level[1], 0, 0);
        assert_float_equal(d.level[2], cases[i].want, 0);
        assert_int_equal(d.batch, 64);
        assert_describe(p, cases[i].describe);
        policy_free(p);
    }
}

/* ---- bad specs ---- */

static void test_bad_specs_are_usage_errors(void **state)
{
    (void)state;
    struct {
        const char *compressor;
        double level;
        const char *spec;
        const char *needle[3];
    } bad[] = {
        {"powersgd", 2, "bogus", {"--policy 'bogus': unknown policy", "accordion, cpsgd", ""}},
        {"powersgd", 2, "accordion:foo=1", {"--policy accordion: unknown option 'foo'", "eta", ""}},
        {"powersgd", 2, "accordion:eta=-1", {"eta=-1", "expected a value in [0,", ""}},
        {"powersgd", 2, "accordion:interval=0", {"interval=0", "[1,", ""}},
        {"powersgd", 2, "accordion:mode=fast", {"mode=fast", "compression|batch", ""}},
        {"powersgd", 2, "accordion:decider=rank1", {"decider=rank1", "all|rank0", ""}},
        {"powersgd", 2, "cpsgd:period=0", {"--policy cpsgd: period=0", "[1,", ""}},
        {"powersgd", 2, "cpsgd:period=2.5", {"period=2.5", "an integer", ""}},
        {"powersgd", 2, "accordion:", {"--policy", "key=value", ""}},
        {"powersgd", 2, "Accordion", {"--policy", "NAME", ""}},
        {"qsgd", 8, "accordion", {"--policy accordion:", "compressor 'qsgd'", "critical= "}},
        {"qsgd", 8, "accordion:critical=8", {"compressor 'qsgd'", "normal=", ""}},
        {"none", 0, "accordion", {"--policy accordion:", "'none'", "mode=batch"}},
        {"none", 0, "static:level=2", {"--policy static: level=2", "'none' takes no level", ""}},
        {"powersgd", 2, "static:level=1.5", {"--policy static: level=1.5", "integer rank", ""}},
        {"topk", 0.01, "static:level=2", {"--policy static: level=2", "fraction", ""}},
        {"powersgd", 2, "accordion:critical=0.5", {"--policy accordion: critical=0.5", "", ""}},
        {"topk", 0.01, "accordion:normal=10", {"--policy accordion: normal=10", "fraction", ""}},
        {"none",
         0,
         "accordion:mode=batch,normal=1002",
         {"--policy accordion: normal=1002", "multiple of the 4 workers", ""}},
        {"none", 0, "accordion:mode=batch,critical=0", {"critical=0", "global batch", ""}},
        {"none", 0, "adacomm:tau0=32", {"--policy adacomm: tau0=32 is above max=16", "", ""}},
        {"none", 0, "adpsgd:growth=0", {"--policy adpsgd: growth=0", "", ""}},
        {"none", 0, "postlocal:switch_epoch=-1", {"switch_epoch=-1", "", ""}},
        /* found by tests/fuzz/fuzz_spec.c (corpus_spec/newline-in-key): a newline in what the
         * user typed is quoted as '?', so the message stays one line */
        {"powersgd",
         2,
         "accordion:c\nitmal=1",
         {"--policy 'accordion:c?itmal=1'", "bad option name 'c?itmal'", ""}},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        PolicyContext ctx = make_checked_ctx(bad[i].compressor, bad[i].level);
        static Policy sentinel;
        Policy *p = &sentinel; /* must come back NULL */
        BwError err = {{0}};
        int rc = policy_create(bad[i].spec, "--policy", &ctx, &p, &err);
        if (rc != BW_EUSAGE) fail_msg("'%s' with %s: status %d", bad[i].spec, ctx.compressor, rc);
        assert_null(p);
        if (strchr(err.msg, '\n')) fail_msg("'%s': message of two lines: %s", bad[i].spec, err.msg);
        for (int k = 0; k < 3; k++)
            if (!strstr(err.msg, bad[i].needle[k]))
                fail_msg("'%s': message '%s' lacks '%s'", bad[i].spec, err.msg, bad[i].needle[k]);
    }
    /* and the good neighbours of some of them */
    PolicyContext ctx = make_checked_ctx("qsgd", 8);
    Policy *p = create_ok("accordion:critical=8,normal=2", &ctx);
    assert_string_equal(policy_spec(p), "accordion:critical=8,normal=2");
    policy_free(p);
}

static void test_listing_names_every_policy_and_marks_reconstructions(void **state)
{
    (void)state;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    policy_print_list(f);
    fclose(f);
    for (const PolicyOps *const *r = policy_registry(); *r; r++) {
        char head[64];
        snprintf(head, sizeof head, "\n%-10s %s", (*r)->name,
                 (*r)->reconstruction ? "[reconstruction]" : "");
        if (!strstr(text, head)) fail_msg("the listing lacks '%s'", head);
        assert_non_null(strstr(text, (*r)->source));
    }
    assert_non_null(strstr(text, "\nadpsgd     [reconstruction]"));
    /* only ADPSGD is a reconstruction */
    const char *first = strstr(text, "[reconstruction]");
    assert_null(strstr(first + 1, "[reconstruction]"));
    assert_non_null(strstr(text, "eta=0.5"));
    /* paper=1 sets decider and interval unless given: no table default, the help says it */
    assert_non_null(strstr(text, "decider=- (all|rank0)"));
    assert_non_null(strstr(text, "all (default: the mean over workers)"));
    assert_non_null(strstr(text, "default 2 (suits short runs); the authors' code: 10"));
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_policy_meets_the_contract),
        cmocka_unit_test(test_static_and_sync_levels),
        cmocka_unit_test(test_bad_specs_are_usage_errors),
        cmocka_unit_test(test_listing_names_every_policy_and_marks_reconstructions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
