/* test_flag_effect_cmds.c: no flag is taken and silently ignored, by any command that takes bellows
 * run's flags (issue 47; test_flag_effect.c does run itself): bench, compare, replay, sweep,
 * train and cluster. Every flag of each command's table (its --help, as BELLOWS_HELP_FORMAT=tsv
 * prints it) that says what is trained or how it is priced (flag_class.c: not "run") is given a
 * value other than its default, in the context it applies in (flag_cases.h's rows, or the command's
 * own below), on one tiny instance of the command: the CSV files it writes must differ from those
 * of the same command without it, or stderr must note that the flag has no effect there, or the
 * command must be refused naming the flag (exit 2). A flag of a command's table that no row
 * tries fails the test. Not here: validate (--rows, --csv: its 85 published rows take a minute,
 * tests/test_published.sh) and reproduce (a reproduction takes minutes; tests/test_reproduce.c
 * runs its --smoke size); bellows costs takes no flag. Cluster's
 * scenario flags are its file's fields (test_cluster_file). About 90 tiny runs: label once. */
#include "testutil.h"

#include "clitest.h"
#include "smalldata.h"

#include "flag_cases.h"
#include "flag_class.h"
#include "run_args.h"

#define TRACE BELLOWS_SOURCE_DIR "/tests/data/own/mlp-sync-4w.jsonl.gz" /* 16 steps */

typedef struct {
    const char *flag, *value, *context;
} Row;

typedef struct {
    const char *name; /* the command and what it always takes */
    const char *base;
    int runs_table;          /* 1: its table is run's (run_args.c) and its runs run's driver */
    const char *tiny[10][2]; /* its tiny scenario: each where neither context nor flag gives it */
    Row own[10];             /* rows of its own, before flag_cases.h's */
} Command;

/* The data of the commands that load it (bench, compare, sweep, train): the packaged
 * Fashion-MNIST's first samples (smalldata.h, written by setup; flag_cases.h's runs take 32 and
 * 16 at most): the same runs, without reading the 60,000 images in each. */
#define SMALL_DATA                                                                                 \
    {                                                                                              \
        "--data-dir", "@/fmnist"                                                                   \
    }

/* compare's and sweep's tiny runs: one seed of sync, two workers, one epoch of 16 samples */
#define TINY_MULTI_RUN                                                                             \
    {"--epochs", "1"}, {"--collectives", "analytic"}, {"--train-samples", "16"}, {"--batch", "4"}, \
        {"--test-samples", "8"}, {"--workers", "2"}, {"--eval-every", "2"}, {"--seeds", "1"},      \
        {"--policies", "sync"}, SMALL_DATA

static const Command COMMANDS[] = {
    {"bench",
     "bench --quiet",
     1,
     {{"--workload", "resnet18-cifar"},
      {"--workers", "2"},
      {"--batch", "4"},
      {"--collectives", "analytic"},
      SMALL_DATA},
     /* one epoch of 12 steps: a decay or a warmup within it (--epochs is refused) */
     {{"workload", "vgg16", ""},
      {"overlap", "none", ""},
      {"lr-decay-epochs", "0.5", "--lr-schedule step"},
      {"lr-decay-factor", "0.5", "--lr-schedule step --lr-decay-epochs 0.5"},
      {"warmup-shape", "epoch", "--warmup-epochs 2 --lr-scale workers"}}},
    {"compare",
     "compare --quiet --no-plots",
     1,
     {TINY_MULTI_RUN},
     {{"policies", "static:level=1", ""}, {"seeds", "2", ""}, {"traces", NULL, NULL}}},
    {"replay",
     "replay --quiet --no-plots --trace " TRACE,
     0,
     {{"--collectives", "analytic"}, {"--policies", "sync"}, {"--seeds", "1"}},
     /* the trace's 4 workers at a batch of 32: leaf 4 holds them all, leaf 2 crosses leaves;
      * --price-batch 32 and --price-workers 4 would be the trace's own */
     {{"policies", "static:level=1", ""},
      {"seeds", "2", "--compute-jitter 0.1"},
      {"seed", "2", "--compute-jitter 0.1"},
      {"leaf-size", "2", "--topology fat-tree --oversubscription 4"},
      {"price-batch", "128", "--workload resnet18-cifar"},
      {"price-workers", "16", ""},
      {"workers", "2", ""},
      {"target-accuracy", "0.2", "--stop-at-target "},
      {"stop-at-target", "", "--target-accuracy 0.2 "},
      {"traces", NULL, NULL}}},
    {"sweep",
     "sweep --quiet --no-plots",
     1,
     {TINY_MULTI_RUN},
     {{"policies", "static:level=1", ""}, {"seeds", "2", ""}, {"traces", NULL, NULL}}},
    {"train",
     "train --quiet",
     0,
     {{"--epochs", "1"},
      {"--train-samples", "16"},
      {"--batch", "4"},
      {"--test-samples", "8"},
      SMALL_DATA},
     {{"epochs", "2", ""}}},
    /* two tiny jobs on one fat-tree (CLUSTER_FILE below): --alone none leaves out the runs
     * alone, --set sweeps a key of the file */
    {"cluster",
     "cluster @/two.json",
     0,
     {{"--jobs", "1"}},
     {{"alone", "none", ""}, {"set", "a.policy=cpsgd:period=2", ""}}},
};
#define N_COMMANDS ((int)(sizeof COMMANDS / sizeof *COMMANDS))

static const char CLUSTER_FILE[] =
    "{\"version\": 1, \"topology\": \"fat-tree\", \"leaf_size\": 2, \"oversubscription\": 2,"
    " \"workers\": 4, \"bandwidth\": \"10Gbps\", \"jobs\": ["
    "{\"name\": \"a\", \"workers\": 2, \"epochs\": 1, \"train_samples\": 16,"
    " \"test_samples\": 8, \"batch\": 4, \"policy\": \"sync\"},"
    "{\"name\": \"b\", \"workers\": 2, \"epochs\": 1, \"train_samples\": 16,"
    " \"test_samples\": 8, \"batch\": 4, \"policy\": \"sync\"}]}\n";

/* The row for flag name in command c: its own first (value NULL: left out, a file of its own),
 * then flag_cases.h's; NULL when none. */
static const Row *row_of(const Command *c, const char *name, Row *buf)
{
    for (int i = 0; i < 10 && c->own[i].flag; i++)
        if (strcmp(c->own[i].flag, name) == 0) return &c->own[i];
    for (int k = 0; k < N_CASES; k++)
        if (strcmp(CASES[k][0], name) == 0) {
            *buf = (Row){CASES[k][0], CASES[k][1], CASES[k][2]};
            return buf;
        }
    return NULL;
}

static int left_out(const char *name)
{
    for (size_t i = 0; i < sizeof SKIPPED / sizeof *SKIPPED; i++)
        if (strcmp(SKIPPED[i], name) == 0) return 1;
    return flag_class(name) == FLAG_RUN || strcmp(name, "help") == 0;
}

/* The tiny scenario's flags that neither the context nor flag gives. */
static const char *defaults(const Command *c, const char *context, const char *flag)
{
    static char buf[512];
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < 10 && c->tiny[i][0]; i++) {
        char given[64];
        snprintf(given, sizeof given, "%s ", c->tiny[i][0]);
        if (strcmp(flag, c->tiny[i][0]) != 0 && !strstr(context, given))
            used += (size_t)snprintf(buf + used, sizeof buf - used, " %s %s", c->tiny[i][0],
                                     c->tiny[i][1]);
    }
    return buf;
}

/* Every CSV file the command wrote into TMP/dir, in name order. */
static char *results(const char *dir)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd,
             "cd %s/%s && find . -name '*.csv' | LC_ALL=C sort | xargs cat > %s/r.txt", TMP, dir,
             TMP);
    assert_int_equal(system(cmd), 0);
    return tmp_file("r.txt");
}

/* The context as c takes it: run's --policy is --policies where c runs several. */
static const char *as_command(const Command *c, const char *context, char *buf, size_t n)
{
    const char *p = strstr(context, "--policy ");
    if (!p || strncmp(c->base, "bench", 5) == 0 || strncmp(c->base, "train", 5) == 0)
        return context;
    snprintf(buf, n, "%.*s--policies %s", (int)(p - context), context, p + strlen("--policy "));
    return buf;
}

/* Runs c with context and flag (NULL: none) into a fresh TMP/dir; its exit status. */
static int run_in(const Command *c, const char *context, const char *flag, const char *value,
                  const char *dir)
{
    char rm[256], ctx[512];
    snprintf(rm, sizeof rm, "rm -rf %s/%s", TMP, dir);
    assert_int_equal(system(rm), 0);
    context = as_command(c, context, ctx, sizeof ctx);
    return bw("%s %s %s %s %s --out @/%s", c->base, defaults(c, context, flag ? flag : ""), context,
              flag ? flag : "", flag ? value : "", dir);
}

/* The results of c in a context, run once per context; NULL when refused. */
typedef struct {
    const char *context;
    char *results;
} Before;

static const char *before_of(const Command *c, Before *seen, int *n, const char *context)
{
    for (int i = 0; i < *n; i++)
        if (strcmp(seen[i].context, context) == 0) return seen[i].results;
    int st = run_in(c, context, NULL, NULL, "ctx");
    if (st != 0 && st != 2) fail_msg("%s, context '%s': exit %d", c->name, context, st);
    seen[*n] = (Before){context, st == 0 ? results("ctx") : NULL};
    return seen[(*n)++].results;
}

/* 'c' changed a result, 'n' noted, 'r' refused naming it, 0 none of these. */
static char effect(const Command *c, const Row *r, const char *before)
{
    char flag[80];
    snprintf(flag, sizeof flag, "--%s", r->flag);
    int st = run_in(c, r->context, flag, r->value, "with");
    char *err = tmp_file("stderr");
    char what = 0;
    if (st == 2 && strstr(err, flag) && !strstr(err, "given twice") && !strstr(err, ": expected"))
        what = 'r';
    else if (st == 0 && strstr(err, "note:") && strstr(err, flag))
        what = 'n';
    else if (st == 0) {
        char *after = results("with");
        if (!before || strcmp(before, after) != 0) what = 'c';
        free(after);
    }
    if (!what)
        print_message("%s %s %s (context '%s'): exit %d, the same results, no note: %s\n", c->name,
                      flag, r->value, r->context, st, err);
    free(err);
    return what;
}

/* The flags of c's table, from its --help as a table; n of them. */
static int flags_of(const Command *c, char names[][32], int max)
{
    char cmd[64];
    snprintf(cmd, sizeof cmd, "%.*s --help", (int)strcspn(c->base, " "), c->base);
    setenv("BELLOWS_HELP_FORMAT", "tsv", 1);
    const int st = bw("%s", cmd);
    unsetenv("BELLOWS_HELP_FORMAT");
    assert_int_equal(st, 0);
    char *out = tmp_file("stdout");
    int n = 0;
    for (char *line = strtok(out, "\n"); line && n < max; line = strtok(NULL, "\n"))
        if (strncmp(line, "flag\t", 5) == 0)
            snprintf(names[n++], 32, "%.*s", (int)strcspn(line + 5, "\t"), line + 5);
    free(out);
    return n;
}

/* Whether bellows run's table has flag name. */
static int in_run_table(const char *name)
{
    static Flags *run;
    if (!run) {
        BwError err;
        run = calloc(1, sizeof *run);
        assert_int_equal(run_parse_flags("run", RUN_MODE_RUN, 0, NULL, run, &err), BW_OK);
    }
    for (int i = 0; i < run->n; i++)
        if (strcmp(run->opts[i].name, name) == 0) return 1;
    return 0;
}

/* BELLOWS_FLAG_EFFECT_ALL=1: every flag of every command. By default a command whose table is
 * run's and whose runs are run's driver's (bench, compare, sweep) tries only the flags that are
 * its own, and run's flags in their idle cases (below): test_flag_effect tries run's flags
 * through the same setup (run_setup) and driver; replay (its own refusals) and train (its own
 * table) try every flag. Measured with it set: every flag of the five commands changed a result
 * or was noted or refused (about 260 runs, 61 s of CPU on this project's 2-core machine). */
static int every_flag(void)
{
    const char *all = getenv("BELLOWS_FLAG_EFFECT_ALL");
    return all && strcmp(all, "1") == 0;
}

static void try_command(const Command *c, int *ignored)
{
    char names[128][32];
    const int n = flags_of(c, names, 128);
    assert_true(n > 0);
    Before seen[128];
    int n_seen = 0, counts[3] = {0};
    /* the tiny instance is deterministic: the same files twice */
    char *again = NULL;
    const char *first = before_of(c, seen, &n_seen, "");
    assert_non_null(first);
    assert_int_equal(run_in(c, "", NULL, NULL, "again"), 0);
    again = results("again");
    assert_string_equal(first, again);
    free(again);
    for (int i = 0; i < n; i++) {
        if (left_out(names[i]) || (c->runs_table && !every_flag() && in_run_table(names[i])))
            continue;
        Row buf;
        const Row *r = row_of(c, names[i], &buf);
        if (!r)
            fail_msg("%s --%s: a flag of %s that this test does not try", c->name, names[i],
                     c->name);
        if (!r->value) continue; /* a file of its own */
        char e = effect(c, r, before_of(c, seen, &n_seen, r->context));
        counts[e == 'c' ? 0 : e == 'n' ? 1 : 2] += e != 0;
        *ignored += e == 0;
    }
    for (int i = 0; i < n_seen; i++) free(seen[i].results);
    print_message("%s: %d changed a result, %d noted, %d refused\n", c->name, counts[0], counts[1],
                  counts[2]);
}

/* flag_effect.c's idle flags (as test_flag_effect.c's IDLE), each in its idle case: every
 * command that takes it notes it on stderr (train has none of them). */
static const char *const IDLE[][2] = {
    {"--bucket-mb 1", "--overlap none"},
    {"--transport rdma", "--costs ideal"},
    {"--compressor topk", "--policy sync"},
};

static void test_the_idle_flags_are_noted_by_every_command(void **state)
{
    (void)state;
    for (int k = 0; k < N_COMMANDS; k++) {
        const Command *c = &COMMANDS[k];
        if (!c->runs_table && strncmp(c->base, "replay", 6) != 0) continue;
        for (size_t i = 0; i < sizeof IDLE / sizeof *IDLE; i++) {
            char flag[64], value[64], note[128];
            snprintf(flag, sizeof flag, "%.*s", (int)strcspn(IDLE[i][0], " "), IDLE[i][0]);
            snprintf(value, sizeof value, "%s", IDLE[i][0] + strlen(flag) + 1);
            const int st = run_in(c, IDLE[i][1], flag, value, "idle");
            char *err = tmp_file("stderr");
            snprintf(note, sizeof note, "note: %s has no effect", flag);
            if (st != 0 || !strstr(err, note))
                fail_msg("%s %s (%s): exit %d, no note: %s", c->name, IDLE[i][0], IDLE[i][1], st,
                         err);
            free(err);
        }
    }
}

static void test_every_commands_flags_change_a_result_or_are_noted_or_refused(void **state)
{
    (void)state;
    int ignored = 0;
    write_tmp("two.json", CLUSTER_FILE);
    for (int k = 0; k < N_COMMANDS; k++) try_command(&COMMANDS[k], &ignored);
    assert_int_equal(ignored, 0);
}

static int setup(void **state)
{
    clitest_setup(state);
    char dir[128];
    snprintf(dir, sizeof dir, "%s/fmnist", TMP);
    smalldata_write(dir, 256, 64);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_commands_flags_change_a_result_or_are_noted_or_refused),
        cmocka_unit_test(test_the_idle_flags_are_noted_by_every_command),
    };
    return cmocka_run_group_tests(tests, setup, clitest_teardown);
}
