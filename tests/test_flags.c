/* test_flags.c: every numeric flag of every simulating command, generated from the flag tables
 * themselves (run_parse_flags builds them as the commands do), with the values that break
 * programs: 0, -1, NaN, infinity, 1e308, 1e-308 and the values just past the flag's range (for
 * a rate or a duration, in its units). Each must be refused as bad input naming the flag, or
 * run to representable results. The parse is tried in this process (the commands' own parser
 * and tables: a refusal there is exit 2, as main maps it); whatever it accepts runs through the
 * binary on a short scenario, which must exit 2 with one line naming the flag, or exit 0 with
 * a summary.json whose times are finite numbers. A new flag is covered the day it is added. */
#include "testutil.h"

#include "clitest.h"

#include <float.h>

#include "run_args.h"

/* The scenario the accepted values run in: tiny (a flag under test replaces its own entry),
 * on every command's own defaults otherwise. */
static const char *const SHORT[][2] = {{"train-samples", "64"},
                                       {"test-samples", "16"},
                                       {"batch", "4"},
                                       {"workers", "2"},
                                       {"epochs", "1"}};

typedef struct {
    const char *name; /* as main dispatches it */
    RunMode mode;
    const char *own; /* what else makes a run of it short */
} Command;

static const Command COMMANDS[] = {
    {"run", RUN_MODE_RUN, "--quiet"},
    {"compare", RUN_MODE_COMPARE, "--quiet --policies sync --no-plots"},
    {"sweep", RUN_MODE_SWEEP, "--quiet --policies sync --no-plots"},
};

/* The flags a flag needs to apply at all: without them its value is never looked at. */
static const char *const CONTEXT[][2] = {
    {"train-samples", "--batch 1024"}, /* 0 is all 60,000: a few steps of them */
    {"lr-decay-epochs", "--lr-schedule step"},
    {"lr-decay-factor", "--lr-schedule step --lr-decay-epochs 1"},
    {"intra-bandwidth", "--topology hierarchical --gpus-per-node 2"},
    {"intra-latency", "--topology hierarchical --gpus-per-node 2"},
    {"gpus-per-node", "--topology hierarchical"},
    {"leaf-size", "--topology fat-tree"},
    {"oversubscription", "--topology fat-tree"},
    {"channels", "--model cnn"},
    {"kernel", "--model cnn"},
    {"widths", "--model resnet"},
    {"blocks", "--model resnet"},
};

/* The command line's scenario for flag `name`: SHORT without name's own entry, then what name
 * needs to apply. */
static void scenario(const Command *c, const char *name, char *buf, size_t n)
{
    size_t used = (size_t)snprintf(buf, n, "%s", c->own);
    const char *context = "";
    for (size_t i = 0; i < sizeof CONTEXT / sizeof *CONTEXT; i++)
        if (strcmp(CONTEXT[i][0], name) == 0) context = CONTEXT[i][1];
    for (size_t i = 0; i < sizeof SHORT / sizeof *SHORT && used < n; i++) {
        char given[80];
        snprintf(given, sizeof given, "--%s ", SHORT[i][0]);
        if (strcmp(SHORT[i][0], name) != 0 && !strstr(context, given))
            used += (size_t)snprintf(buf + used, n - used, " --%s %s", SHORT[i][0], SHORT[i][1]);
    }
    /* smalldata.h's copy of the packaged set's first samples (CLITEST_DATA): the same short
     * runs; a flag of the sample counts tries its values on the packaged set itself */
    if (strcmp(name, "train-samples") != 0 && strcmp(name, "test-samples") != 0 && used < n)
        used += (size_t)snprintf(buf + used, n - used, " " CLITEST_DATA);
    snprintf(buf + used, n - used, " %s", context);
}

static int numeric(const CliOpt *o)
{
    return o->kind != CLI_STRING && o->kind != CLI_CHOICE && o->kind != CLI_FLAG;
}

/* The values to try on flag o, as typed (with the flag's unit where it takes one). */
static int values_of(const CliOpt *o, char v[][64])
{
    const char *unit = o->kind == CLI_BANDWIDTH ? "Bps" : o->kind == CLI_DURATION ? "s" : "";
    const char *plain[] = {"0", "-1", "nan", "inf", "1e308", "1e-308"};
    int n = 0;
    for (size_t i = 0; i < sizeof plain / sizeof *plain; i++)
        snprintf(v[n++], 64, "%s%s", plain[i], unit);
    int integer = o->kind == CLI_INT || o->kind == CLI_LONG || o->kind == CLI_INT_LIST;
    int ranged = o->kind < CLI_BANDWIDTH || o->max > 0;
    if (!ranged) return n;
    if (integer) {
        snprintf(v[n++], 64, "%.0f", o->min - 1);
        snprintf(v[n++], 64, "%.0f", o->max + 1);
    } else {
        snprintf(v[n++], 64, "%.17g%s", nextafter(o->min, -DBL_MAX), unit);
        snprintf(v[n++], 64, "%.17g%s", nextafter(o->max, DBL_MAX), unit);
    }
    if (*unit || o->kind == CLI_FLOPS) { /* a rate or time SimGrid gets: its edges run too */
        snprintf(v[n++], 64, "%.17g%s", o->min, unit);
        snprintf(v[n++], 64, "%.17g%s", o->max, unit);
    }
    return n;
}

/* Whether summary.json in TMP/dir holds only representable times: sim_time_s a positive
 * number, compute_s, communication_s, wait_s and compression_s numbers, steps at least 1. */
static void expect_representable(const char *dir, const char *what)
{
    const char *keys[] = {"sim_time_s",      "compute_s", "compression_s",
                          "communication_s", "wait_s",    "steps"};
    for (size_t k = 0; k < sizeof keys / sizeof *keys; k++) {
        double x = summary_num(dir, keys[k]);
        if (!isfinite(x) || x < 0 || (k == 0 && !(x > 0)) || (k == 5 && x < 1))
            fail_msg("%s: %s is %g", what, keys[k], x);
    }
}

/* One flag and value through the binary: refused naming the flag, or representable results. */
static int try_binary(const Command *c, const CliOpt *o, const char *value)
{
    char what[700];
    snprintf(what, sizeof what, "%s --%s %s", c->name, o->name, value);
    char rm[128];
    snprintf(rm, sizeof rm, "rm -rf %s/o", TMP);
    assert_int_equal(system(rm), 0);
    char flags[512];
    scenario(c, o->name, flags, sizeof flags);
    int st = bw("%s --%s=%s %s --out @/o", c->name, o->name, value, flags);
    char *err = tmp_file("stderr");
    if (st == 2) {
        if (strncmp(err, "bellows: ", 9) != 0 || count_lines(err) != 1)
            fail_msg("%s: exit 2 without one line: %s", what, err);
        free(err);
        return 0;
    }
    /* a run that diverged (a learning rate at its edge) is a result too: exit 1, its files */
    int diverged = st == 1 && strstr(err, "diverged") != NULL;
    if (st != 0 && !diverged) fail_msg("%s: exit %d: %s", what, st, err);
    free(err);
    char dir[64];
    snprintf(dir, sizeof dir, "%s", c->mode == RUN_MODE_RUN ? "o" : "o/seed-1/1-sync");
    if (c->mode == RUN_MODE_SWEEP) snprintf(dir, sizeof dir, "o/runs/seed-1/1-sync");
    if (c->mode != RUN_MODE_RUN && strcmp(o->name, "seeds") == 0) /* the seed given */
        snprintf(dir, sizeof dir,
                 c->mode == RUN_MODE_SWEEP ? "o/runs/seed-%s/1-sync" : "o/seed-%s/1-sync", value);
    expect_representable(dir, what);
    return 1;
}

static void test_every_numeric_flag_refuses_or_runs_representably(void **state)
{
    (void)state;
    char seen[256][64];
    int n_seen = 0, tried = 0, refused_here = 0, ran = 0, refused_there = 0, unrun = 0;
    for (size_t c = 0; c < sizeof COMMANDS / sizeof *COMMANDS; c++) {
        Flags *table = calloc(1, sizeof *table), *f = calloc(1, sizeof *f);
        BwError err;
        assert_int_equal(run_parse_flags(COMMANDS[c].name, COMMANDS[c].mode, 0, NULL, table, &err),
                         BW_OK);
        for (int i = 0; i < table->n; i++) {
            const CliOpt *o = &table->opts[i];
            int dup = 0; /* a flag shared by the commands is tried once, in the first */
            for (int k = 0; k < n_seen; k++) dup |= strcmp(seen[k], o->name) == 0;
            if (dup || !numeric(o)) continue;
            snprintf(seen[n_seen++], sizeof seen[0], "%s", o->name);
            char values[10][64];
            int nv = values_of(o, values);
            for (int v = 0; v < nv; v++) {
                char arg[700], *argv[] = {arg, NULL};
                snprintf(arg, sizeof arg, "--%s=%s", o->name, values[v]);
                tried++;
                int rc = run_parse_flags(COMMANDS[c].name, COMMANDS[c].mode, 1, argv, f, &err);
                run_flags_release(f);
                if (rc == BW_EUSAGE) {
                    char flag[600];
                    snprintf(flag, sizeof flag, "--%s", o->name);
                    if (!strstr(err.msg, flag))
                        fail_msg("%s: refused without naming it: %s", arg, err.msg);
                    refused_here++;
                    continue;
                }
                assert_int_equal(rc, BW_OK);
                /* valgrind watches this process only: the binary it would start runs natively
                 * there, as in build/'s ctest pass (and under the sanitizers in build-asan/'s),
                 * so under valgrind the parse alone is tried (12.7 CPU s of runs, 2026-11-28) */
                if (getenv("BELLOWS_VALGRIND"))
                    unrun++;
                else if (try_binary(&COMMANDS[c], o, values[v]))
                    ran++;
                else
                    refused_there++;
            }
        }
        run_flags_release(table);
        free(table);
        free(f);
    }
    print_message("%d flags, %d values: %d refused by the parser, %d by the command, %d ran, "
                  "%d not run (valgrind)\n",
                  n_seen, tried, refused_here, refused_there, ran, unrun);
    assert_true(n_seen > 30 && (ran > 0 || unrun > 0));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_numeric_flag_refuses_or_runs_representably),
    };
    return cmocka_run_group_tests(tests, clitest_setup_data, clitest_teardown);
}
