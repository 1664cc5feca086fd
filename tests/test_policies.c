/* test_policies.c: the scheduling policies. A contract suite runs every registered policy
 * through the same synthetic run (several epochs, an lr decay, falling norms, loss and variance);
 * then each adaptive rule meets hand-made observation sequences whose right decisions are worked
 * out by hand in the comments; then bad specs, each a usage error that says what was wrong. */
#include "testutil.h"

#include "policy.h"

/* ---- contexts and a level check standing in for the compressors' ---- */

/* Layers: 0 "a.w" matrix, 1 "a.b" vector, 2 "b.w" matrix, 3 "c.w" matrix. */
static PolicyContext make_ctx(const char *compressor, double level)
{
    PolicyContext c;
    memset(&c, 0, sizeof c);
    static const PolicyLayer layers[] = {
        {"a.w", 64, 784, 2}, {"a.b", 64, 1, 1}, {"b.w", 32, 64, 2}, {"c.w", 10, 32, 2}};
    c.n_layers = 4;
    c.layers = layers; /* policy_create copies it */
    c.workers = 4;
    c.epochs = 6;
    c.batch = 64;
    c.steps_per_epoch = 10;
    c.lr0 = 0.1;
    c.n_decays = 1;
    c.decay_epochs[0] = 4;
    snprintf(c.compressor, sizeof c.compressor, "%s", compressor);
    c.compressor_level = level;
    return c;
}

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

static Policy *create_ok(const char *spec, const PolicyContext *ctx)
{
    Policy *p = NULL;
    BwError err = {{0}};
    int rc = policy_create(spec, "--policy", ctx, &p, &err);
    if (rc != BW_OK) fail_msg("policy_create(\"%s\") failed: %s", spec, err.msg);
    assert_non_null(p);
    return p;
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
    if (ops->mode == POLICY_PERIODIC && averagings == 0)
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
        assert_string_equal(ops->name, DEF_NAMES[n_policies]);
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

/* ---- Accordion on hand-made sequences (2 steps per epoch) ---- */

typedef struct {
    Policy *p;
    long step;
} Feed;

/* One epoch of two steps; rank0[s][l] and mean[s][l] are step s's norms (mean NULL: the same
 * as rank0). decayed: the lr dropped at this epoch. d[0], d[1] receive the two decisions. */
static void feed_epoch(Feed *f, int epoch, double rank0[2][4], double mean[2][4], int decayed,
                       PolicyDecision d[2])
{
    for (int s = 0; s < 2; s++) {
        PolicyObs obs = {
            .step = f->step++,
            .epoch = epoch,
            .epoch_start = s == 0,
            .epoch_end = s == 1,
            .lr_decayed = decayed && s == 0,
            .lr = 0.1,
            .loss = 1,
            .grad_norm_rank0 = rank0[s],
            .grad_norm_mean = mean ? mean[s] : rank0[s],
        };
        assert_int_equal(policy_step(f->p, &obs, &d[s], NULL), BW_OK);
    }
}

/* An epoch whose two steps both have norms (a, b, c, e) for layers 0..3. */
static void feed_const(Feed *f, int epoch, double a, double b, double c, double e, int decayed,
                       PolicyDecision d[2])
{
    double n[2][4] = {{a, b, c, e}, {a, b, c, e}};
    feed_epoch(f, epoch, n, NULL, decayed, d);
}

/* Both steps of the epoch decided levels (l0, 0, l2, l3): the vector layer 1 is always dense. */
static void assert_levels(const PolicyDecision d[2], double l0, double l2, double l3)
{
    for (int s = 0; s < 2; s++) {
        assert_float_equal(d[s].level[0], l0, 0);
        assert_float_equal(d[s].level[1], 0, 0);
        assert_float_equal(d[s].level[2], l2, 0);
        assert_float_equal(d[s].level[3], l3, 0);
    }
}

static void assert_describe(const Policy *p, const char *want)
{
    char buf[64];
    policy_describe(p, buf, sizeof buf);
    assert_string_equal(buf, want);
}

static void test_accordion_detects_critical_regimes_per_layer(void **state)
{
    (void)state;
    PolicyContext ctx = make_ctx("powersgd", 2); /* defaults: critical rank 2, normal rank 1 */
    Feed f = {create_ok("accordion:interval=2,eta=0.5", &ctx), 0};
    PolicyDecision d[2] = {{.level = (double[4]){0}}, {.level = (double[4]){0}}};
    /* epoch 0 starts critical. Epoch sums n[0] = (2, -, 2, 2) (1 per step). Check at its end:
     * no reference, so every layer stays critical for epochs 1-2. */
    feed_const(&f, 0, 1, 1, 1, 1, 0, d);
    assert_levels(d, 2, 2, 2);
    assert_describe(f.p, "C.CC");
    /* epoch 1: 1 % 2 != 0, no check; huge norms change nothing */
    feed_const(&f, 1, 50, 50, 50, 50, 0, d);
    assert_levels(d, 2, 2, 2);
    /* epoch 2 (check): layer 0 steps 0.2 and 0.6, sum 0.8: |2 - 0.8| / 2 = 0.6 >= 0.5 critical;
     * layer 2 sum 1.2: |2 - 1.2| / 2 = 0.4 < 0.5 normal; layer 3 sum 3: |2 - 3| / 2 = 0.5, on
     * the threshold: critical. The decisions of epoch 2 itself are still the old ones. */
    double n2[2][4] = {{0.2, 9, 0.6, 1.5}, {0.6, 9, 0.6, 1.5}};
    feed_epoch(&f, 2, n2, NULL, 0, d);
    assert_levels(d, 2, 2, 2);
    assert_describe(f.p, "C.NC");
    /* epoch 3 runs on the check's result; its own norms (no check) do not matter */
    feed_const(&f, 3, 100, 100, 100, 100, 0, d);
    assert_levels(d, 2, 1, 2);
    /* epoch 4 (check) against n[2] = (0.8, -, 1.2, 3): layer 0 sum 0.8, ratio 0 -> normal;
     * layer 2 sum 0.6: 0.6 / 1.2 = 0.5 -> critical; layer 3 sum 3, ratio 0 -> normal */
    feed_const(&f, 4, 0.4, 9, 0.3, 1.5, 0, d);
    assert_levels(d, 2, 1, 2);
    feed_const(&f, 5, 1, 1, 1, 1, 0, d);
    assert_levels(d, 1, 2, 1);
    assert_describe(f.p, "N.CN");
    policy_free(f.p);
}

static void test_accordion_compares_with_the_norm_interval_epochs_before(void **state)
{
    (void)state;
    PolicyContext ctx = make_ctx("topk", 0.01); /* defaults: critical 0.99, normal 0.1 */
    Feed f = {create_ok("accordion:interval=3", &ctx), 0};
    PolicyDecision d[2] = {{.level = (double[4]){0}}, {.level = (double[4]){0}}};
    /* checks at the ends of epochs 0 and 3 only. Epochs 1 and 2 swing 10x, which would be
     * critical against the previous epoch, but epoch 3 equals epoch 0: ratio 0 -> normal. */
    feed_const(&f, 0, 1, 1, 1, 1, 0, d);
    assert_levels(d, 0.99, 0.99, 0.99);
    feed_const(&f, 1, 10, 10, 10, 10, 0, d);
    assert_levels(d, 0.99, 0.99, 0.99);
    feed_const(&f, 2, 0.1, 0.1, 0.1, 0.1, 0, d);
    assert_levels(d, 0.99, 0.99, 0.99);
    feed_const(&f, 3, 1, 1, 1, 1, 0, d);
    assert_levels(d, 0.99, 0.99, 0.99);
    /* epochs 4, 5 and 6 hold the epoch-3 result whatever their norms */
    feed_const(&f, 4, 7, 7, 7, 7, 0, d);
    assert_levels(d, 0.1, 0.1, 0.1);
    feed_const(&f, 5, 0, 0, 0, 0, 0, d);
    assert_levels(d, 0.1, 0.1, 0.1);
    /* epoch 6 (check) against n[3] = 2: layer 0 sum 2 (ratio 0) normal, layer 2 sum 0.4
     * (ratio 0.8) critical, layer 3 sum 3.2 (ratio 0.6) critical */
    feed_const(&f, 6, 1, 1, 0.2, 1.6, 0, d);
    assert_levels(d, 0.1, 0.1, 0.1);
    feed_const(&f, 7, 1, 1, 1, 1, 0, d);
    assert_levels(d, 0.1, 0.99, 0.99);
    policy_free(f.p);
}

static void test_accordion_zero_reference_counts_as_critical(void **state)
{
    (void)state;
    PolicyContext ctx = make_ctx("powersgd", 2);
    Feed f = {create_ok("accordion:interval=1", &ctx), 0};
    PolicyDecision d[2] = {{.level = (double[4]){0}}, {.level = (double[4]){0}}};
    /* layer 0 has a zero norm at epoch 0: the ratio is "large" (the code's 9) -> critical even
     * when the norm stays 0; layers 2 and 3 are steady -> normal */
    feed_const(&f, 0, 0, 1, 1, 1, 0, d);
    feed_const(&f, 1, 0, 1, 1, 1, 0, d);
    feed_const(&f, 2, 0, 1, 1, 1, 0, d);
    assert_levels(d, 2, 1, 1);
    policy_free(f.p);
}

static void test_accordion_lr_decay_turns_every_layer_critical_until_the_next_check(void **state)
{
    (void)state;
    PolicyContext ctx = make_ctx("powersgd", 2);
    Feed f = {create_ok("accordion:critical=4,normal=1", &ctx), 0};
    PolicyDecision d[2] = {{.level = (double[4]){0}}, {.level = (double[4]){0}}};
    /* steady norms: the check at the end of epoch 2 finds ratio 0 -> normal from epoch 3 */
    feed_const(&f, 0, 1, 1, 1, 1, 0, d);
    feed_const(&f, 1, 1, 1, 1, 1, 0, d);
    feed_const(&f, 2, 1, 1, 1, 1, 0, d);
    assert_levels(d, 4, 4, 4);
    /* the lr drops at epoch 3 (not a check epoch): critical from its first step, held through
     * epoch 4 until the check at the end of epoch 4 (ratio 0 again) */
    feed_const(&f, 3, 1, 1, 1, 1, 1, d);
    assert_levels(d, 4, 4, 4);
    assert_describe(f.p, "C.CC");
    feed_const(&f, 4, 1, 1, 1, 1, 0, d);
    assert_levels(d, 4, 4, 4);
    feed_const(&f, 5, 1, 1, 1, 1, 0, d);
    assert_levels(d, 1, 1, 1);
    /* a drop right after a check overrides that check's result for the epoch */
    feed_const(&f, 6, 1, 1, 1, 1, 1, d);
    assert_levels(d, 4, 4, 4);
    policy_free(f.p);
}

static void test_accordion_decider_rank0_or_all(void **state)
{
    (void)state;
    PolicyContext ctx = make_ctx("powersgd", 2);
    /* rank 0's norms stay at 1; the mean over workers drops to 0.2 at epoch 2 (ratio 0.8) */
    double r[2][4] = {{1, 1, 1, 1}, {1, 1, 1, 1}};
    double m_steady[2][4] = {{1, 1, 1, 1}, {1, 1, 1, 1}};
    double m_drop[2][4] = {{0.2, 0.2, 0.2, 0.2}, {0.2, 0.2, 0.2, 0.2}};
    const char *specs[] = {"accordion", "accordion:decider=rank0"};
    const double want[] = {2, 1}; /* epoch 3: all -> critical (rank 2); rank0 -> normal (1) */
    for (int k = 0; k < 2; k++) {
        Feed f = {create_ok(specs[k], &ctx), 0};
        PolicyDecision d[2] = {{.level = (double[4]){0}}, {.level = (double[4]){0}}};
        feed_epoch(&f, 0, r, m_steady, 0, d);
        feed_epoch(&f, 1, r, m_steady, 0, d);
        feed_epoch(&f, 2, r, m_drop, 0, d);
        feed_epoch(&f, 3, r, m_steady, 0, d);
        assert_levels(d, want[k], want[k], want[k]);
        policy_free(f.p);
    }
}

static void test_accordion_batch_mode(void **state)
{
    (void)state;
    /* compressor none: matrices stay dense, only the global batch adapts, on the whole-model
     * norm sqrt(sum_l n_l^2) per step. Defaults: critical --batch (64), normal 8x (512). */
    PolicyContext ctx = make_ctx("none", 0);
    Feed f = {create_ok("accordion:mode=batch", &ctx), 0};
    PolicyDecision d[2] = {{.level = (double[4]){0}}, {.level = (double[4]){0}}};
    /* epoch 0: norms (3, 0, 4, 0), whole 5 per step; critical: batch 64 */
    feed_const(&f, 0, 3, 0, 4, 0, 0, d);
    assert_int_equal(d[0].batch, 64);
    assert_int_equal(d[1].batch, 64);
    assert_levels(d, 0, 0, 0);
    feed_const(&f, 1, 30, 0, 40, 0, 0, d);
    assert_int_equal(d[1].batch, 64);
    /* epoch 2 (check): whole norm 3.5 per step, |5 - 3.5| / 5 = 0.3 < 0.5 -> normal from
     * epoch 3 (squared norms would give 0.51: critical) */
    feed_const(&f, 2, 0, 0, 3.5, 0, 0, d);
    assert_int_equal(d[0].batch, 64);
    assert_int_equal(d[1].batch, 512); /* a decision's batch is the next step's */
    assert_describe(f.p, "N batch=512");
    feed_const(&f, 3, 1, 1, 1, 1, 0, d);
    assert_int_equal(d[0].batch, 512);
    assert_int_equal(d[1].batch, 512);
    assert_levels(d, 0, 0, 0);
    /* epoch 4 (check): whole 12 vs 3.5, ratio 2.4 -> critical: small batch again from epoch 5 */
    feed_const(&f, 4, 0, 0, 12, 0, 0, d);
    assert_int_equal(d[0].batch, 512);
    assert_int_equal(d[1].batch, 64);
    feed_const(&f, 5, 1, 1, 1, 1, 0, d);
    assert_int_equal(d[0].batch, 64);
    assert_describe(f.p, "C batch=64");
    policy_free(f.p);

    /* explicit batches, and a compressor: every matrix at the compressor's default level */
    ctx = make_ctx("powersgd", 4);
    f = (Feed){create_ok("accordion:mode=batch,critical=128,normal=1024", &ctx), 0};
    feed_const(&f, 0, 1, 1, 1, 1, 0, d);
    feed_const(&f, 1, 1, 1, 1, 1, 0, d);
    feed_const(&f, 2, 1, 1, 1, 1, 0, d);
    assert_int_equal(d[0].batch, 128);
    assert_int_equal(d[1].batch, 1024);
    assert_levels(d, 4, 4, 4);
    feed_const(&f, 3, 1, 1, 1, 1, 0, d);
    assert_int_equal(d[0].batch, 1024);
    assert_levels(d, 4, 4, 4);
    /* the lr-decay rule applies to the batch too */
    feed_const(&f, 4, 1, 1, 1, 1, 1, d);
    assert_int_equal(d[0].batch, 128);
    policy_free(f.p);
}

/* ---- Accordion, the authors' way: paper=1 and the fixed batch schedule ---- */

/* make_ctx's run with the authors' settings scaled to `epochs` (accordion.c's header comment):
 * the compressor's resolved spec, --overlap tensor, lr x workers warmed up per epoch, two 10x
 * decays. */
static PolicyContext paper_ctx(const char *compressor, const char *spec, int epochs, int warmup,
                               int d1, int d2)
{
    PolicyContext c = make_ctx(compressor, strcmp(compressor, "topk") == 0 ? 0.1 : 2);
    c.epochs = epochs;
    snprintf(c.compressor_spec, sizeof c.compressor_spec, "%s", spec);
    c.overlap = BELLOWS_OVERLAP_TENSOR;
    c.lr_known = 1;
    c.lr_peak_scale = c.workers;
    c.warmup_epochs = warmup;
    c.warmup_shape = BELLOWS_WARMUP_EPOCH;
    c.n_decays = 2;
    c.decay_epochs[0] = d1;
    c.decay_epochs[1] = d2;
    c.decay_factor = 0.1;
    return c;
}

/* Epoch e's norms (2 steps): rank 0's and the mean drift apart and swing at different epochs,
 * so the decider and the interval both show in the decisions. */
static void paper_norms(int e, double r[2][4], double m[2][4])
{
    for (int st = 0; st < 2; st++)
        for (int l = 0; l < 4; l++) {
            r[st][l] = (l + 1) * (1 + 0.9 * ((e / 3 + l) % 2)) * (1 + 0.1 * st);
            m[st][l] = (l + 1) * (1 + 0.9 * ((e / 7 + l) % 2)) * (1 + 0.2 * st);
        }
}

/* Feeds `epochs` epochs to each policy (lr drops at the context's decay epochs) and returns
 * how many steps' decisions (levels and batch) differ between a and b. */
static int paper_differences(Policy *a, Policy *b, const PolicyContext *ctx, int epochs)
{
    Feed fa = {a, 0}, fb = {b, 0};
    int differ = 0;
    for (int e = 0; e < epochs; e++) {
        double r[2][4], m[2][4];
        paper_norms(e, r, m);
        int decayed = ctx->n_decays && (e == ctx->decay_epochs[0] || e == ctx->decay_epochs[1]);
        double la[2][4], lb[2][4];
        PolicyDecision da[2] = {{.level = la[0]}, {.level = la[1]}};
        PolicyDecision db[2] = {{.level = lb[0]}, {.level = lb[1]}};
        feed_epoch(&fa, e, r, m, decayed, da);
        feed_epoch(&fb, e, r, m, decayed, db);
        for (int st = 0; st < 2; st++)
            differ += memcmp(la[st], lb[st], sizeof la[st]) != 0 || da[st].batch != db[st].batch;
    }
    return differ;
}

static void test_accordion_paper_equals_the_authors_options_one_by_one(void **state)
{
    (void)state;
    static const struct {
        const char *compressor, *cspec, *paper, *by_hand;
        int epochs, warmup, d1, d2;
    } cases[] = {
        /* 300 epochs: interval 10, as main.py's switch_freq */
        {"powersgd", "powersgd:ef=1,rank_change=reset", "accordion:paper=1",
         "accordion:decider=rank0,interval=10,eta=0.5", 300, 5, 152, 252},
        /* 60 epochs: round(10 x 60 / 300) = 2, warm-up 1, decays round(30.4), round(50.4) */
        {"topk", "topk:ef=0,divide=0,index=int64,count=trunc", "accordion:paper=1",
         "accordion:decider=rank0,interval=2", 60, 1, 30, 50},
        /* mode=batch: switch round(20 x 60 / 300) = 4, compressor none */
        {"none", "none", "accordion:mode=batch,paper=1",
         "accordion:mode=batch,decider=rank0,interval=2,switch=4", 60, 1, 30, 50},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        PolicyContext ctx = paper_ctx(cases[i].compressor, cases[i].cspec, cases[i].epochs,
                                      cases[i].warmup, cases[i].d1, cases[i].d2);
        Policy *paper = create_ok(cases[i].paper, &ctx), *hand = create_ok(cases[i].by_hand, &ctx);
        int n = paper_differences(paper, hand, &ctx, 61);
        if (n) fail_msg("%s: %d decisions differ from %s", cases[i].paper, n, cases[i].by_hand);
        policy_free(paper);
        policy_free(hand);
        /* and the defaults decide otherwise on the same norms, so the equality means something */
        const char *plain =
            strcmp(cases[i].compressor, "none") == 0 ? "accordion:mode=batch" : "accordion";
        paper = create_ok(cases[i].paper, &ctx);
        hand = create_ok(plain, &ctx);
        assert_true(paper_differences(paper, hand, &ctx, 61) > 0);
        policy_free(paper);
        policy_free(hand);
    }
}

/* The error of policy_create(spec) on ctx, which must be a usage error. */
static const char *usage_error(const char *spec, const PolicyContext *ctx)
{
    static BwError err;
    Policy *p = NULL;
    err.msg[0] = '\0';
    int rc = policy_create(spec, "--policy", ctx, &p, &err);
    if (rc != BW_EUSAGE) fail_msg("%s: status %d, want a usage error", spec, rc);
    return err.msg;
}

static void assert_has(const char *msg, const char *want)
{
    if (!strstr(msg, want)) fail_msg("'%s' not in: %s", want, msg);
}

static void test_accordion_paper_refuses_a_run_without_the_authors_settings(void **state)
{
    (void)state;
    /* make_ctx's run (6 epochs, one decay at epoch 4, nothing else set): every setting missing,
     * scaled to 6 epochs: warm-up max(1, round(0.1)) = 1, decays round(3.04), round(5.04) */
    PolicyContext ctx = make_ctx("powersgd", 2);
    snprintf(ctx.compressor_spec, sizeof ctx.compressor_spec, "powersgd:ef=1,rank_change=warm");
    ctx.lr_known = 1;
    ctx.lr_peak_scale = 1;
    ctx.decay_factor = 0.1;
    const char *msg = usage_error("accordion:paper=1", &ctx);
    assert_has(msg, "--policy accordion: paper=1 needs the authors' run settings");
    assert_has(msg, "add: --compressor powersgd:ef=1,rank_change=reset --overlap tensor "
                    "--lr-scale workers --warmup-epochs 1 --warmup-shape epoch --lr-schedule step "
                    "--lr-decay-epochs 3,5 --lr-decay-factor 0.1");
    /* each setting fixed takes its flags off the list, the last one lets it run */
    PolicyContext ok = paper_ctx("powersgd", "powersgd:ef=1,rank_change=reset", 6, 1, 3, 5);
    ctx = ok;
    ctx.overlap = BELLOWS_OVERLAP_DDP;
    assert_true(strstr(usage_error("accordion:paper=1", &ctx), "add: --overlap tensor") &&
                !strstr(usage_error("accordion:paper=1", &ctx), "--lr-scale"));
    ctx = ok;
    ctx.warmup_shape = BELLOWS_WARMUP_STEP;
    assert_has(usage_error("accordion:paper=1", &ctx), "add: --warmup-epochs 1 --warmup-shape");
    ctx = ok;
    ctx.decay_epochs[1] = 4;
    assert_has(usage_error("accordion:paper=1", &ctx), "add: --lr-schedule step --lr-decay-ep");
    ctx = ok;
    snprintf(ctx.compressor_spec, sizeof ctx.compressor_spec, "powersgd:ef=1,rank_change=warm");
    assert_has(usage_error("accordion:paper=1", &ctx),
               "add: --compressor powersgd:ef=1,rank_change=reset");
    ctx = ok;
    ctx.lr_peak_scale = 1;
    assert_has(usage_error("accordion:paper=1", &ctx), "add: --lr-scale workers");
    policy_free(create_ok("accordion:paper=1", &ok));
    /* a replay's rate is the trace's: only the compressor and the overlap are checked */
    ctx = ok;
    ctx.lr_known = 0;
    ctx.n_decays = 0;
    ctx.warmup_epochs = ctx.lr_peak_scale = 0;
    policy_free(create_ok("accordion:paper=1", &ctx));
    /* TopK: the authors' wire; another compressor: none of theirs */
    ctx = paper_ctx("topk", "topk:ef=1,divide=1,index=int32,count=ceil", 6, 1, 3, 5);
    assert_has(usage_error("accordion:paper=1", &ctx),
               "add: --compressor topk:ef=0,divide=0,index=int64,count=trunc");
    ctx = paper_ctx("qsgd", "qsgd", 6, 1, 3, 5);
    assert_has(usage_error("accordion:paper=1,critical=8,normal=2", &ctx),
               "PowerSGD or TopK, not 'qsgd'");
    ctx = paper_ctx("powersgd", "powersgd:ef=1,rank_change=reset", 6, 1, 3, 5);
    assert_has(usage_error("accordion:mode=batch,paper=1", &ctx), "add: --compressor none");
    /* an option paper=1 sets, given with another value; the same value is fine */
    assert_has(usage_error("accordion:paper=1,decider=all", &ok), "paper=1 sets decider=rank0");
    assert_has(usage_error("accordion:paper=1,interval=2", &ok), "paper=1 sets interval=1");
    assert_has(usage_error("accordion:paper=1,eta=0.3", &ok), "paper=1 sets eta=0.5");
    policy_free(create_ok("accordion:paper=1,decider=rank0,interval=1,critical=4", &ok));
    /* one epoch cannot hold two decays */
    ctx = paper_ctx("powersgd", "powersgd:ef=1,rank_change=reset", 1, 1, 1, 2);
    assert_has(usage_error("accordion:paper=1", &ctx), "do not fit into 1 epoch;");
}

static void test_accordion_batch_fixed_switch_schedule(void **state)
{
    (void)state;
    /* switch=3: batch 64 (--batch) for epochs 0-2, 512 from epoch 3 on, whatever the norms and
     * through the lr decay at epoch 4 (the authors' logs stay at 4096 after both decays) */
    PolicyContext ctx = make_ctx("none", 0);
    Feed f = {create_ok("accordion:mode=batch,switch=3", &ctx), 0};
    PolicyDecision d[2] = {{.level = (double[4]){0}}, {.level = (double[4]){0}}};
    for (int e = 0; e < 6; e++) {
        feed_const(&f, e, 1 + 5 * (e % 2), 0, 1, 0, e == 4, d);     /* a 6x swing every epoch */
        int want0 = e < 3 ? 64 : 512, want1 = e + 1 < 3 ? 64 : 512; /* the next step's batch */
        assert_int_equal(d[0].batch, want0);
        assert_int_equal(d[1].batch, want1);
        assert_describe(f.p, want1 == 64 ? "C batch=64" : "N batch=512");
    }
    policy_free(f.p);
    /* the online rule on the same norms goes back to the small batch (6x swings, the decay) */
    f = (Feed){create_ok("accordion:mode=batch,interval=1", &ctx), 0};
    int small_late = 0;
    for (int e = 0; e < 6; e++) {
        feed_const(&f, e, 1 + 5 * (e % 2), 0, 1, 0, e == 4, d);
        small_late += e >= 3 && d[0].batch == 64;
    }
    assert_true(small_late > 0);
    policy_free(f.p);
    /* a fixed batch schedule is for mode=batch only */
    assert_has(usage_error("accordion:switch=3", &ctx), "switch=3: a fixed schedule");
}

/* ---- the periodic policies ---- */

/* Runs n steps of a periodic policy with steps_per_epoch from ctx, constant lr and loss, and
 * records the steps it averaged after (returns how many) and the reported periods. */
static int run_periodic(Policy *p, int n, long *avg_steps, int *periods)
{
    double norms[4] = {1, 1, 1, 1};
    int k = 0;
    long spe = p->ctx->steps_per_epoch;
    for (long t = 0; t < n; t++) {
        PolicyObs obs = {.step = t,
                         .epoch = (int)(t / spe),
                         .epoch_start = t % spe == 0,
                         .epoch_end = t % spe == spe - 1,
                         .lr = 0.1,
                         .loss = 1,
                         .grad_norm_rank0 = norms,
                         .grad_norm_mean = norms};
        PolicyDecision d = {.level = (double[4]){0}};
        assert_int_equal(policy_step(p, &obs, &d, NULL), BW_OK);
        if (periods) periods[t] = d.period;
        if (d.average) avg_steps[k++] = t;
    }
    return k;
}

static void test_cpsgd_averages_exactly_every_period_steps(void **state)
{
    (void)state;
    PolicyContext ctx = make_ctx("none", 0);
    const int periods[] = {1, 5, 8};
    const char *specs[] = {"cpsgd:period=1", "cpsgd:period=5", "cpsgd"};
    for (int k = 0; k < 3; k++) {
        Policy *p = create_ok(specs[k], &ctx);
        long avg[100];
        int per[100];
        int n = run_periodic(p, 100, avg, per);
        assert_int_equal(n, 100 / periods[k]);
        for (int i = 0; i < n; i++) assert_int_equal(avg[i], (long)(i + 1) * periods[k] - 1);
        for (int t = 0; t < 100; t++) assert_int_equal(per[t], periods[k]);
        char buf[32];
        snprintf(buf, sizeof buf, "period=%d", periods[k]);
        assert_describe(p, buf);
        policy_free(p);
    }
}

static void test_postlocal_switches_at_switch_epoch(void **state)
{
    (void)state;
    long avg[100];
    int per[100];
    /* steps_per_epoch 10; default switch = the first decay epoch (4) -> step 40; period 16 */
    PolicyContext ctx = make_ctx("none", 0);
    Policy *p = create_ok("postlocal", &ctx);
    int n = run_periodic(p, 100, avg, per);
    /* every step 0..39 (40 averagings), then after steps 55, 71, 87 */
    assert_int_equal(n, 43);
    for (int i = 0; i < 40; i++) assert_int_equal(avg[i], i);
    assert_int_equal(avg[40], 55);
    assert_int_equal(avg[41], 71);
    assert_int_equal(avg[42], 87);
    assert_int_equal(per[39], 1);
    assert_int_equal(per[40], 16);
    assert_describe(p, "period=16");
    policy_free(p);

    /* explicit switch_epoch=2, period=3: every step to 19, then after 22, 25, 28 */
    p = create_ok("postlocal:switch_epoch=2,period=3", &ctx);
    n = run_periodic(p, 30, avg, per);
    assert_int_equal(n, 23);
    assert_int_equal(avg[19], 19);
    assert_int_equal(avg[20], 22);
    assert_int_equal(avg[22], 28);
    policy_free(p);

    /* no step schedule: the switch falls at epochs / 2 = 3 (step 30): first local average 45 */
    ctx.n_decays = 0;
    p = create_ok("postlocal", &ctx);
    n = run_periodic(p, 50, avg, per);
    assert_int_equal(n, 31);
    assert_int_equal(avg[29], 29);
    assert_int_equal(avg[30], 45);
    policy_free(p);
}

static void test_adacomm_periods_follow_loss_and_lr(void **state)
{
    (void)state;
    PolicyContext ctx = make_ctx("none", 0); /* lr0 = 0.1 */
    Policy *p = create_ok("adacomm:tau0=4,max=16", &ctx);
    double norms[4] = {1, 1, 1, 1};
    /* tau = ceil(sqrt((0.1 / lr) * F / F0) * 4), clamped to [1, 16]:
     *  steps 0-3   loss 2, lr 0.1: the first period; F0 = mean 2; tau = ceil(1 * 4) = 4
     *  steps 4-7   losses .25 .75 .25 .75 (mean 0.5): tau = ceil(sqrt(0.25) * 4) = 2
     *  steps 8-9   loss 0.125: tau = ceil(sqrt(1/16) * 4) = 1
     *  step  10    loss 0.125, lr 0.01: tau = ceil(sqrt(10 / 16) * 4) = ceil(3.16) = 4
     *  steps 11-14 loss 2, lr 0.001: tau = ceil(sqrt(100) * 4) = 40 -> clamped to 16
     *  steps 15-30 loss 1e-6, lr 0.1: tau = ceil(sqrt(5e-7) * 4) = 1 */
    static const struct {
        double loss, lr;
        int period, average;
    } seq[] = {
        {2, 0.1, 4, 0},     {2, 0.1, 4, 0},     {2, 0.1, 4, 0},      {2, 0.1, 4, 1},
        {0.25, 0.1, 4, 0},  {0.75, 0.1, 4, 0},  {0.25, 0.1, 4, 0},   {0.75, 0.1, 4, 1},
        {0.125, 0.1, 2, 0}, {0.125, 0.1, 2, 1}, {0.125, 0.01, 1, 1}, {2, 0.001, 4, 0},
        {2, 0.001, 4, 0},   {2, 0.001, 4, 0},   {2, 0.001, 4, 1},
    };
    long t = 0;
    for (size_t i = 0; i < sizeof seq / sizeof *seq; i++, t++) {
        PolicyObs obs = {.step = t,
                         .lr = seq[i].lr,
                         .loss = seq[i].loss,
                         .grad_norm_rank0 = norms,
                         .grad_norm_mean = norms};
        PolicyDecision d = {.level = (double[4]){0}};
        assert_int_equal(policy_step(p, &obs, &d, NULL), BW_OK);
        if (d.period != seq[i].period || d.average != seq[i].average)
            fail_msg("step %ld: period %d average %d, expected %d %d", t, d.period, d.average,
                     seq[i].period, seq[i].average);
    }
    assert_describe(p, "period=16");
    for (; t <= 31; t++) {
        PolicyObs obs = {
            .step = t, .lr = 0.1, .loss = 1e-6, .grad_norm_rank0 = norms, .grad_norm_mean = norms};
        PolicyDecision d = {.level = (double[4]){0}};
        assert_int_equal(policy_step(p, &obs, &d, NULL), BW_OK);
        assert_int_equal(d.period, t <= 30 ? 16 : 1);
        assert_int_equal(d.average, t == 30 || t == 31);
    }
    assert_describe(p, "period=1");
    policy_free(p);

    /* rounding: F0 = 0.9, then F = 0.81 at lr 0.04: sqrt(2.5 * 0.9) * 4 is 6 exactly, but
     * computes as 6.000000000000001; the period must be 6, not 7 */
    p = create_ok("adacomm:tau0=4", &ctx);
    for (t = 0; t < 8; t++) {
        PolicyObs obs = {.step = t,
                         .lr = t < 4 ? 0.1 : 0.04,
                         .loss = t < 4 ? 0.9 : 0.81,
                         .grad_norm_rank0 = norms,
                         .grad_norm_mean = norms};
        PolicyDecision d = {.level = (double[4]){0}};
        assert_int_equal(policy_step(p, &obs, &d, NULL), BW_OK);
        assert_int_equal(d.average, t == 3 || t == 7);
    }
    assert_describe(p, "period=6");
    policy_free(p);
}

/* ---- ADPSGD on synthetic variances ---- */

/* A run of 400 steps (40 epochs of 10), lr 0.1 divided by 10 at each of the context's decays. */
static PolicyContext adpsgd_ctx(int n_decays, int d0, int d1)
{
    PolicyContext c = make_ctx("none", 0);
    c.epochs = 40;
    c.n_decays = n_decays;
    c.decay_epochs[0] = d0;
    c.decay_epochs[1] = d1;
    return c;
}

static double adpsgd_lr(const PolicyContext *c, long t)
{
    double lr = c->lr0;
    for (int i = 0; i < c->n_decays; i++)
        if (t >= (long)c->decay_epochs[i] * c->steps_per_epoch) lr *= 0.1;
    return lr;
}

/* The variance an interval of len steps from start measures: rate(t) x len^b x mean lr^2. */
typedef double (*RateFn)(long t);

typedef struct {
    int period[400];
    long averagings;
} AdpsgdRun;

/* The naive reference of the rule (policies/adpsgd.c), from scratch at every measurement: the
 * fit over every stored point with its forgetting weight, and J by a midpoint sum. */
typedef struct {
    double g, decay;
    long T, budget, warmup;
    double x[400], y[400], w[400];
    int n;
    double ubar;
} AdpsgdRef;

/* The period the rule plans at step t after n_avg averagings, before rounding. */
static double adpsgd_ref_plan(AdpsgdRef *r, const PolicyContext *c, long t, long n_avg)
{
    const double a = 1 / (r->g + 1);
    const long left = r->T - t, R = r->budget - n_avg;
    if (R <= 0) return (double)left + 1;
    if (t < r->warmup && r->warmup * 10 <= r->budget) return 1; /* the warm-up: every step */
    double beta = 0, mx = 0, my = 0, W = 0;
    for (int j = 0; j < r->n; j++) {
        double w = r->w[j] * exp(-(r->x[r->n - 1] - r->x[j]));
        W += w, mx += w * r->x[j], my += w * r->y[j];
    }
    if (r->n > 0) mx /= W, my /= W;
    if (r->n >= 3) {
        double sxy = 0, sxx = 0;
        for (int j = 0; j < r->n; j++) {
            double w = r->w[j] * exp(-(r->x[r->n - 1] - r->x[j]));
            sxy += w * (r->x[j] - mx) * (r->y[j] - my), sxx += w * (r->x[j] - mx) * (r->x[j] - mx);
        }
        beta = fmin(1, fmax(-2, sxy / sxx));
    }
    /* J by the midpoint rule within each lr phase (the factor constant there) */
    double J = 0, lo = (double)t, f = 1;
    for (int i = 0; i <= c->n_decays; i++) {
        double hi = i < c->n_decays ? (double)c->decay_epochs[i] * (double)c->steps_per_epoch
                                    : (double)r->T;
        if (hi <= lo) continue;
        const int slices = 20000;
        double h = (hi - lo) / slices;
        for (int k = 0; k < slices; k++)
            J += h * pow(pow((lo + (k + 0.5) * h) / (double)t, beta) * f * f, a);
        lo = hi;
        f *= r->decay;
    }
    double p = J / (double)R;
    if (r->n > 0) p *= exp(a * (my + beta * (log((double)t) - mx) - r->ubar));
    return p < 1 ? 1 : p > (double)left ? (double)left : p;
}

/* Feeds spec 400 steps whose variances follow rate and b; with ref, checks every period the
 * policy plans after a measurement against the naive reference. */
static void adpsgd_feed(const char *spec, const PolicyContext *c, RateFn rate, double b,
                        AdpsgdRef *ref, AdpsgdRun *out)
{
    Policy *p = create_ok(spec, c);
    double norms[4] = {1, 1, 1, 1};
    long start = 0, pend_start = 0, pend_len = 0;
    double lr2 = 0, pend_lr2 = 0;
    out->averagings = 0;
    for (long t = 0; t < 400; t++) {
        const double lr = adpsgd_lr(c, t);
        const int decayed = t > 0 && lr < adpsgd_lr(c, t - 1);
        PolicyObs obs = {.step = t,
                         .epoch = (int)(t / 10),
                         .lr = lr,
                         .loss = 1,
                         .lr_decayed = decayed,
                         .grad_norm_rank0 = norms,
                         .grad_norm_mean = norms,
                         .averaged = pend_len > 0};
        if (pend_len > 0) {
            obs.param_variance = rate(t - 1) * pow((double)pend_len, b) * pend_lr2;
            if (ref && pend_start >= ref->warmup) {
                int j = ref->n++;
                ref->x[j] = log((double)pend_start + 0.5 * (double)pend_len);
                ref->y[j] = log(obs.param_variance / (pow((double)pend_len, ref->g) * pend_lr2));
                ref->w[j] = (double)pend_len;
                ref->ubar = j == 0 ? ref->y[j] : 0.5 * (ref->y[j] + ref->ubar);
            }
        }
        PolicyDecision d = {.level = (double[4]){0}};
        assert_int_equal(policy_step(p, &obs, &d, NULL), BW_OK);
        out->period[t] = d.period;
        if (ref && pend_len > 0) {
            /* the period is the reference's rounded, either way within 1e-6 of a half */
            double want = adpsgd_ref_plan(ref, c, t, out->averagings);
            if (fabs(d.period - want) > 0.5 + 1e-6 ||
                (fabs(fabs(d.period - want) - 0.5) > 1e-6 && d.period != floor(want + 0.5)))
                fail_msg("step %ld: period %d, the reference %.6f", t, d.period, want);
        }
        lr2 += lr * lr;
        pend_len = 0;
        if (d.average) {
            out->averagings++;
            pend_start = start, pend_len = t + 1 - start, pend_lr2 = lr2 / (double)pend_len;
            start = t + 1, lr2 = 0;
        }
    }
    policy_free(p);
}

static double adpsgd_mean(const AdpsgdRun *r, long lo, long hi)
{
    double s = 0;
    for (long t = lo; t < hi; t++) s += r->period[t];
    return s / (double)(hi - lo);
}

static double rate_flat(long t)
{
    (void)t;
    return 1e-3;
}
static double rate_falling(long t) /* falls 1600-fold over the run, as 1/t^2 */
{
    return 1e-3 * 100.0 / ((double)(t + 10) * (double)(t + 10));
}
static double rate_bump(long t) /* flat, 4x for the interval that ends at step 199 */
{
    return t == 199 ? 4e-3 : 1e-3;
}

/* Before any measurement the period is the plan's: J / budget, J = int_0^T (lr(s)/lr0)^(2a) ds
 * (without the warm-up, warmup=0). By hand, T = 400, period=4 (budget 100), g = 1.5 (a = 0.4):
 *   no decay:          J = 400                                  -> 4
 *   decay at step 200: J = 200 + 200 x 0.01^0.4 = 231.70        -> 2.317 -> 2
 *   growth=1 (a=1/2):  J = 200 + 200 x 0.1     = 220            -> 2.2   -> 2
 *   decay=0.5:         J = 200 + 200 x 0.25^0.4 = 315.49        -> 3.15  -> 3
 *   period=2, no decay: 400 / 200 = 2 */
static void test_adpsgd_first_period_is_the_plan(void **state)
{
    (void)state;
    const struct {
        const char *spec;
        int n_decays, want;
    } cases[] = {{"adpsgd:period=4,warmup=0", 0, 4},
                 {"adpsgd:period=4,warmup=0", 1, 2},
                 {"adpsgd:period=4,growth=1,warmup=0", 1, 2},
                 {"adpsgd:period=4,decay=0.5,warmup=0", 1, 3},
                 {"adpsgd:period=2,warmup=0", 0, 2},
                 /* the warm-up (10 steps) averages every step when it spends at most a tenth of
                  * the budget: 100 averagings, yes; 25 (period=16), no */
                 {"adpsgd:period=4", 0, 1},
                 {"adpsgd:period=16", 0, 16}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        PolicyContext c = adpsgd_ctx(cases[i].n_decays, 20, 0);
        Policy *p = create_ok(cases[i].spec, &c);
        double norms[4] = {1, 1, 1, 1};
        PolicyObs obs = {.lr = 0.1, .loss = 1, .grad_norm_rank0 = norms, .grad_norm_mean = norms};
        PolicyDecision d = {.level = (double[4]){0}};
        assert_int_equal(policy_step(p, &obs, &d, NULL), BW_OK);
        if (d.period != cases[i].want)
            fail_msg("%s, %d decays: first period %d, want %d", cases[i].spec, cases[i].n_decays,
                     d.period, cases[i].want);
        policy_free(p);
    }
    /* a run shorter than the period: a budget of 0, so no averaging (as cpsgd:period=100) */
    PolicyContext c = make_ctx("none", 0); /* 60 steps */
    Policy *p = create_ok("adpsgd:period=100", &c);
    long avg[60];
    assert_int_equal(run_periodic(p, 60, avg, NULL), 0);
    policy_free(p);
}

/* Every period after a measurement is the naive reference's (fit, forecast, budget), with the
 * variance growing as l^1.75 while the rule assumes l^1.5, across two decays. */
static void test_adpsgd_matches_its_naive_reference(void **state)
{
    (void)state;
    PolicyContext c = adpsgd_ctx(2, 15, 30);
    static AdpsgdRef ref;
    static AdpsgdRun run;
    ref = (AdpsgdRef){.g = 1.5, .decay = 0.1, .T = 400, .budget = 400 / 3, .warmup = 10};
    adpsgd_feed("adpsgd:period=3", &c, rate_falling, 1.75, &ref, &run);
    assert_true(ref.n > 20);
    ref = (AdpsgdRef){.g = 1, .decay = 0.1, .T = 400, .budget = 400 / 5, .warmup = 0};
    adpsgd_feed("adpsgd:period=5,growth=1,warmup=0", &c, rate_bump, 1.4, &ref, &run);
    assert_true(ref.n > 10);
}

/* The property the rule exists for, on the budget of cpsgd:period=4 (100 averagings): a flat
 * variance keeps the period; a falling one lengthens it (the last third at least twice the
 * first tenth); one large measurement shortens the next interval; a 10x lr decay, the variance
 * ~ lr^2, lengthens it 100^(1/(1+1.5)) = 6.3-fold. */
static void test_adpsgd_period_follows_the_variance_on_a_budget(void **state)
{
    (void)state;
    static AdpsgdRun run;
    PolicyContext c = adpsgd_ctx(0, 0, 0);
    adpsgd_feed("adpsgd:period=4", &c, rate_flat, 1.5, NULL, &run);
    assert_int_equal(run.averagings, 100);
    for (long t = 0; t < 10; t++) assert_int_equal(run.period[t], 1); /* the warm-up */
    /* then the 90 left over 390 steps, 4.33 on average: 4 or 5, as the rounding goes */
    for (long t = 10; t < 400; t++) assert_in_range(run.period[t], 4, 5);

    adpsgd_feed("adpsgd:period=4", &c, rate_falling, 1.5, NULL, &run);
    double first = adpsgd_mean(&run, 0, 40), last = adpsgd_mean(&run, 267, 400);
    if (labs(run.averagings - 100) > 10 || last < 2 * first)
        fail_msg("falling: %ld averagings, mean period %.2f then %.2f", run.averagings, first,
                 last);

    adpsgd_feed("adpsgd:period=4,warmup=0", &c, rate_bump, 1.5, NULL, &run); /* flat: 4 */
    assert_int_equal(run.period[199], 4);
    assert_true(run.period[200] < 4); /* (1/4)^(0.4 / 2) of the plan: the smoothed log rate */

    c = adpsgd_ctx(1, 20, 0);
    adpsgd_feed("adpsgd:period=4", &c, rate_flat, 1.5, NULL, &run);
    first = adpsgd_mean(&run, 100, 200), last = adpsgd_mean(&run, 220, 320);
    if (labs(run.averagings - 100) > 10 || fabs(last / first / pow(100, 0.4) - 1) > 0.15)
        fail_msg("decay: %ld averagings, mean period %.2f then %.2f", run.averagings, first, last);
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
        cmocka_unit_test(test_accordion_detects_critical_regimes_per_layer),
        cmocka_unit_test(test_accordion_compares_with_the_norm_interval_epochs_before),
        cmocka_unit_test(test_accordion_zero_reference_counts_as_critical),
        cmocka_unit_test(test_accordion_lr_decay_turns_every_layer_critical_until_the_next_check),
        cmocka_unit_test(test_accordion_decider_rank0_or_all),
        cmocka_unit_test(test_accordion_batch_mode),
        cmocka_unit_test(test_accordion_paper_equals_the_authors_options_one_by_one),
        cmocka_unit_test(test_accordion_paper_refuses_a_run_without_the_authors_settings),
        cmocka_unit_test(test_accordion_batch_fixed_switch_schedule),
        cmocka_unit_test(test_cpsgd_averages_exactly_every_period_steps),
        cmocka_unit_test(test_postlocal_switches_at_switch_epoch),
        cmocka_unit_test(test_adacomm_periods_follow_loss_and_lr),
        cmocka_unit_test(test_adpsgd_first_period_is_the_plan),
        cmocka_unit_test(test_adpsgd_matches_its_naive_reference),
        cmocka_unit_test(test_adpsgd_period_follows_the_variance_on_a_budget),
        cmocka_unit_test(test_static_and_sync_levels),
        cmocka_unit_test(test_bad_specs_are_usage_errors),
        cmocka_unit_test(test_listing_names_every_policy_and_marks_reconstructions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
