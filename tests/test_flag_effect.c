/* test_flag_effect.c: no flag is taken and silently ignored (issue 47). Every flag of bellows
 * run's table that says what is trained or how it is priced (flag_class.c: dynamics or price)
 * is given a value other than its default, in the context it applies in, on one tiny run: its
 * results (steps.csv, evals.csv) must differ from those of the same run without it, or stderr must
 * note that the flag has no effect here (flag_effect.c's table), or the run must be refused naming
 * the flag. Then flag_effect.c's own table, each flag in the case where it does nothing: noted,
 * with the same results as without it, or refused. The flags of how a run goes (flag_class "run":
 * --quiet,
 * --compute-threads, --out, ...) change no result by design and are left out; so are those that
 * need a file of their own (--platform,
 * --hosts, --data-dir, --trace), and the model options of the models other than mlp (test_models
 * covers them). The other commands that take run's flags (bench, compare, replay, sweep, train)
 * try the same rows in test_flag_effect_cmds.c. Where a
 * value matches the default's results by design in a tiny run (the analytic level equals the
 * transfer level on an uncontended star, tests/test_coll_time.c), its context is one where it
 * must not. (--servers with --overlap none tries the fused call, now cut into BytePS's
 * partitions over every server. --intra-bandwidth's context is the analytic ring across two nodes,
 * whose closed form runs at its slowest hop, the intra-node links at 1Gbps under a 10Gbps NIC.) A
 * new flag of run's table must be listed in flag_cases.h (the test fails on a flag it does not
 * know). */
#include "testutil.h"

#include "clitest.h"
#include "smalldata.h"

#include "flag_class.h"
#include "run_args.h"

#define BASE "run --quiet"

#include "flag_cases.h"

static int skipped(const char *name)
{
    for (size_t i = 0; i < sizeof SKIPPED / sizeof *SKIPPED; i++)
        if (strcmp(SKIPPED[i], name) == 0) return 1;
    return 0;
}

/* The results of TMP/dir: its steps and evaluations (summary.json also echoes the flags). */
static char *results(const char *dir)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "cd %s/%s && cat steps.csv evals.csv > %s/r.txt", TMP, dir, TMP);
    assert_int_equal(system(cmd), 0);
    return tmp_file("r.txt");
}

/* The tiny run's own flags, each where neither the context nor the case's flag gives it; its
 * data the packaged Fashion-MNIST's first samples (smalldata.h, written by setup): the same
 * runs, without reading the 60,000 images in each of the suite's 190 runs. */
static const char *const TINY[][2] = {{"--epochs", "1"},         {"--collectives", "analytic"},
                                      {"--train-samples", "16"}, {"--batch", "4"},
                                      {"--test-samples", "8"},   {"--workers", "2"},
                                      {"--eval-every", "2"},     {"--data-dir", "@/fmnist"}};

static const char *defaults(const char *context, const char *flag)
{
    static char buf[256];
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof TINY / sizeof *TINY; i++) {
        char given[64];
        snprintf(given, sizeof given, "%s ", TINY[i][0]);
        if (strcmp(flag, TINY[i][0]) != 0 && !strstr(context, given))
            used +=
                (size_t)snprintf(buf + used, sizeof buf - used, " %s %s", TINY[i][0], TINY[i][1]);
    }
    return buf;
}

/* The results of BASE with a context, run once per context; NULL when the context alone is
 * refused (a flag it needs is the case's own: --lr-schedule step needs --lr-decay-epochs). */
typedef struct {
    const char *context;
    char *results;
} Before;

static const char *before_of(Before *seen, int *n, const char *context)
{
    for (int i = 0; i < *n; i++)
        if (strcmp(seen[i].context, context) == 0) return seen[i].results;
    int st = bw(BASE " %s %s --out @/ctx --force", defaults(context, ""), context);
    if (st != 0 && st != 2) fail_msg("context '%s': exit %d", context, st);
    seen[*n] = (Before){context, st == 0 ? results("ctx") : NULL};
    return seen[(*n)++].results;
}

/* What the case's flag does: 'c' changed a result (or made a refused context run), 'n' noted,
 * 'r' refused naming it, 0 none of these. */
static char effect(int k, const char *before)
{
    const char *name = CASES[k][0], *value = CASES[k][1], *context = CASES[k][2];
    char flag[80];
    snprintf(flag, sizeof flag, "--%s", name);
    int st =
        bw(BASE " %s %s %s %s --out @/with --force", defaults(context, flag), context, flag, value);
    char *err = tmp_file("stderr");
    char what = 0;
    /* a refusal of the value's form or of a repeated flag would be this test's own mistake */
    if (st == 2 && strstr(err, flag) && !strstr(err, "given twice") && !strstr(err, ": expected")) {
        what = 'r';
        print_message("%s %s (context '%s'): refused: %s", flag, value, context, err);
    } else if (st == 0 && strstr(err, "note:") && strstr(err, flag))
        what = 'n';
    else if (st == 0) {
        char *after = results("with");
        if (!before || strcmp(before, after) != 0) what = 'c';
        free(after);
    }
    if (!what)
        print_message("%s %s (context '%s'): exit %d, the same results, no note: %s\n", flag, value,
                      context, st, err);
    free(err);
    return what;
}

static void test_every_flag_changes_a_result_or_is_noted_or_refused(void **state)
{
    (void)state;
    Flags *f = calloc(1, sizeof *f);
    BwError err;
    assert_int_equal(run_parse_flags("run", RUN_MODE_RUN, 0, NULL, f, &err), BW_OK);
    for (int i = 0; i < f->n; i++) { /* every flag of the table is a case or left out */
        const char *name = f->opts[i].name;
        int known = skipped(name) || flag_class(name) == FLAG_RUN;
        for (int k = 0; k < N_CASES; k++) known |= strcmp(CASES[k][0], name) == 0;
        if (!known) fail_msg("--%s: a flag of run that this test does not try", name);
    }
    run_flags_release(f);
    free(f);
    Before seen[N_CASES];
    int n_seen = 0, n[4] = {0};
    for (int k = 0; k < N_CASES; k++) {
        char e = effect(k, before_of(seen, &n_seen, CASES[k][2]));
        n[e == 'c' ? 0 : e == 'n' ? 1 : e == 'r' ? 2 : 3]++;
    }
    for (int i = 0; i < n_seen; i++) free(seen[i].results);
    print_message("%d flags: %d changed a result, %d noted, %d refused, %d ignored\n", N_CASES,
                  n[0], n[1], n[2], n[3]);
    assert_int_equal(n[3], 0);
}

/* flag_effect.c's table of flags with no effect, each in its idle case: bellows run notes it on
 * stderr and writes the same results as without it, or refuses it naming it. */
static const char *const IDLE[][3] = {
    /* flag and value, the case where it does nothing, 'n' noted, 'r' refused or 'q' quiet (a
     * value that agrees with the case is not worth a note) */
    {"--bucket-mb 1", "--overlap none", "n"},
    {"--bucket-mb 1", "--allreduce ps --collectives transfer --overlap ddp", "n"},
    {"--transport rdma", "--costs ideal", "n"},
    {"--bucket-mb 1", "--workload resnet18-cifar --horovod 0.21", "n"},
    {"--horovod-fusion 0", "--workload resnet18-cifar --horovod 0.21 --overlap none", "n"},
    {"--compressor topk", "--policy sync", "n"},
    {"--compressor topk", "--policy cpsgd", "n"}, /* periodic: dense parameters averaged */
    {"--compressor none", "--policy cpsgd", "q"}, /* what reproduce's recipes say */
    {"--timeline-steps 0:1", "", "r"},
    {"--rs-comm own", "--workload resnet18-cifar --sharding zero2", "r"},
    {"--fsdp-unit 2", "--workload resnet18-cifar --sharding zero3 --overlap none", "r"},
};

static void test_the_idle_flags_are_noted_or_refused(void **state)
{
    (void)state;
    for (size_t k = 0; k < sizeof IDLE / sizeof *IDLE; k++) {
        const char *flag = IDLE[k][0], *context = IDLE[k][1];
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)strcspn(flag, " "), flag);
        int st = bw(BASE " %s %s %s --out @/idle --force", defaults(context, ""), context, flag);
        char *err = tmp_file("stderr");
        if (IDLE[k][2][0] == 'r') {
            if (st != 2 || !strstr(err, name))
                fail_msg("%s: exit %d, not refused: %s", flag, st, err);
            free(err);
            continue;
        }
        char note[128];
        snprintf(note, sizeof note, "note: %s has no effect", name);
        if (IDLE[k][2][0] == 'q' && (st != 0 || strstr(err, note)))
            fail_msg("%s (%s): exit %d, noted: %s", flag, context, st, err);
        if (IDLE[k][2][0] == 'n' && (st != 0 || !strstr(err, note)))
            fail_msg("%s (%s): exit %d, no note: %s", flag, context, st, err);
        free(err);
        char *with = results("idle");
        assert_int_equal(bw(BASE " %s %s --out @/idle --force", defaults(context, ""), context), 0);
        char *without = results("idle");
        if (strcmp(with, without) != 0)
            fail_msg("%s (%s): noted as idle, but it changed a result", flag, context);
        free(with);
        free(without);
    }
}

static int setup(void **state)
{
    clitest_setup(state);
    char dir[128];
    snprintf(dir, sizeof dir, "%s/fmnist", TMP);
    smalldata_write(dir, 256, 64); /* flag_cases.h's runs take 32 and 16 at most */
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_flag_changes_a_result_or_is_noted_or_refused),
        cmocka_unit_test(test_the_idle_flags_are_noted_or_refused),
    };
    return cmocka_run_group_tests(tests, setup, clitest_teardown);
}
