/* test_policies_accordion.c: Accordion's rule on hand-made observation sequences (2 steps per
 * epoch) whose right decisions are worked out by hand in the comments: critical regimes per
 * layer against the norm interval epochs before, a zero reference, lr decays, the decider
 * (rank 0 or all) and batch mode; then the authors' way: paper=1 decides as its options one by
 * one, is refused (saying which flags to add) without the authors' run settings, and the fixed
 * batch schedule (switch=). */
#include "testutil.h"

#include "policy.h"
#include "policytest.h"

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_accordion_detects_critical_regimes_per_layer),
        cmocka_unit_test(test_accordion_compares_with_the_norm_interval_epochs_before),
        cmocka_unit_test(test_accordion_zero_reference_counts_as_critical),
        cmocka_unit_test(test_accordion_lr_decay_turns_every_layer_critical_until_the_next_check),
        cmocka_unit_test(test_accordion_decider_rank0_or_all),
        cmocka_unit_test(test_accordion_batch_mode),
        cmocka_unit_test(test_accordion_paper_equals_the_authors_options_one_by_one),
        cmocka_unit_test(test_accordion_paper_refuses_a_run_without_the_authors_settings),
        cmocka_unit_test(test_accordion_batch_fixed_switch_schedule),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
