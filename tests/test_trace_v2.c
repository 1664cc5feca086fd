/* test_trace_v2.c: version 2 of the trace format, a policy's own trace (traces/README.md): the
 * header's "policy" and each step's decision ("levels", or "average" and "period"; "bytes";
 * "state") read back; a decision where it does not belong (a version-1 trace, a header without
 * "policy", the other mode's fields, a vector's level) is refused with the file, line and field;
 * a version-1 trace still reads, without decisions. compare --traces' loader checks the
 * compressor and the levels as the run would take them, naming the file, line and field.
 * Each mode's decision fields come from one table (the other mode's refused); two different
 * evaluations of a step, a step after one that says the run stopped, and epoch norms off an
 * epoch's end are refused. */
#include "testutil.h"

#include "csv.h"
#include "own_traces.h"
#include "trace.h"

static char TMP[64];

#define HDR2(policy)                                                                               \
    "{\"format\":\"bellows-trace\",\"version\":2,\"model\":\"m\",\"workers\":2,\"batch\":4,"       \
    "\"flops_per_sample\":10,\"layers\":[{\"name\":\"w\",\"rows\":2,\"cols\":3},{\"name\":\"b\","  \
    "\"rows\":2,\"cols\":1}]" policy "}\n"
#define GRAD                                                                                       \
    ",\"policy\":{\"spec\":\"accordion\",\"mode\":\"gradient\",\"compressor\":\"powersgd\","       \
    "\"seed\":3}"
#define PERI                                                                                       \
    ",\"policy\":{\"spec\":\"adpsgd\",\"mode\":\"periodic\",\"compressor\":\"none\",\"seed\":1}"
#define STEP(n, dec)                                                                               \
    "{\"type\":\"step\",\"step\":" #n                                                              \
    ",\"epoch\":0,\"lr\":0.1,\"loss\":1,\"grad_norms\":[1,2]" dec "}\n"
#define EVAL "{\"type\":\"eval\",\"step\":0,\"test_accuracy\":0.5}\n"

static int read_text(const char *text, Trace *t, BwError *err)
{
    char path[256];
    snprintf(path, sizeof path, "%s/t.jsonl", TMP);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    return trace_read(path, t, err);
}

static void test_decisions_read_back(void **state)
{
    (void)state;
    Trace t;
    BwError err = {{0}};
    int rc = read_text(HDR2(GRAD) EVAL STEP(0, ",\"levels\":[2,0],\"bytes\":64,\"state\":\"C.\"")
                           STEP(1, ",\"levels\":[1,0],\"bytes\":40"),
                       &t, &err);
    if (rc) fail_msg("%s", err.msg);
    assert_int_equal(t.h.version, 2);
    assert_true(t.h.has_policy && !t.h.policy_periodic);
    assert_string_equal(t.h.policy_spec, "accordion");
    assert_string_equal(t.h.policy_compressor, "powersgd");
    assert_int_equal(t.h.policy_seed, 3);
    assert_true(t.steps[0].has_decision && t.steps[1].has_decision);
    assert_true(t.steps[0].levels[0] == 2 && t.steps[0].levels[1] == 0);
    assert_true(t.steps[1].levels[0] == 1 && t.steps[1].bytes == 40);
    assert_string_equal(t.steps[0].state, "C.");
    assert_true(t.steps[0].grad_norms[1] == 2); /* the norms stay where they were */
    trace_free(&t);
    rc = read_text(HDR2(PERI) EVAL STEP(0, ",\"average\":false,\"period\":4,\"bytes\":0")
                       STEP(1, ",\"average\":true,\"period\":4,\"bytes\":32"),
                   &t, &err);
    if (rc) fail_msg("%s", err.msg);
    assert_true(t.h.policy_periodic && t.steps[1].average && !t.steps[0].average);
    assert_int_equal(t.steps[1].period, 4);
    assert_null(t.steps[1].levels);
    trace_free(&t);
    /* version 1 reads as before: no policy, no decisions */
    rc = read_text("{\"format\":\"bellows-trace\",\"version\":1,\"model\":\"m\",\"workers\":2,"
                   "\"batch\":4,\"flops_per_sample\":10,\"layers\":[{\"name\":\"w\",\"rows\":2,"
                   "\"cols\":3},{\"name\":\"b\",\"rows\":2,\"cols\":1}]}\n" EVAL STEP(0, ""),
                   &t, &err);
    assert_int_equal(rc, BW_OK);
    assert_true(t.h.version == 1 && !t.h.has_policy && !t.steps[0].has_decision);
    trace_free(&t);
    /* the same evaluation written twice is one; epoch norms at an epoch's end read */
    rc = read_text(HDR2("") EVAL EVAL STEP(0, ",\"epoch_end\":true,\"epoch_norms\":[1,1]"), &t,
                   &err);
    if (rc) fail_msg("%s", err.msg);
    assert_int_equal(t.n_evals, 1);
    assert_true(t.steps[0].has_epoch_norms);
    trace_free(&t);
}

static void test_misplaced_decisions_are_refused(void **state)
{
    (void)state;
    static const struct {
        const char *text, *needle;
    } bad[] = {
        {"{\"format\":\"bellows-trace\",\"version\":1,\"model\":\"m\",\"workers\":2,\"batch\":4,"
         "\"flops_per_sample\":10,\"layers\":[{\"name\":\"w\",\"rows\":2,\"cols\":3}]" GRAD "}\n",
         ":1: \"policy\": a version 2 field in a version 1 trace"},
        {HDR2("") STEP(0, ",\"levels\":[1,0],\"bytes\":4"), ":2: a decision, but the header"},
        {HDR2(GRAD) STEP(0, ",\"average\":true,\"period\":1,\"bytes\":4"),
         ":2: a gradient-mode policy's decision: expected \"levels\""},
        {HDR2(PERI) STEP(0, ",\"levels\":[1,0],\"bytes\":4"), ":2: a periodic policy's decision"},
        {HDR2(GRAD) STEP(0, ",\"levels\":[1,1],\"bytes\":4"), "\"levels\"[1]: a vector"},
        {HDR2(GRAD) STEP(0, ",\"levels\":[1,0]"), ":2: missing \"bytes\""},
        {HDR2(PERI) STEP(0, ",\"average\":true,\"bytes\":4"), ":2: missing \"period\""},
        {HDR2(",\"policy\":{\"spec\":\"x\",\"mode\":\"other\",\"compressor\":\"none\",\"seed\":1}"),
         "\"mode\": expected \"gradient\" or \"periodic\""},
        {HDR2(",\"policy\":{\"mode\":\"gradient\",\"compressor\":\"none\",\"seed\":1}"),
         "missing \"spec\""},
        /* one field table per mode: the other mode's field is refused, even beside this one's */
        {HDR2(GRAD) STEP(0, ",\"levels\":[1,0],\"bytes\":4,\"period\":3"),
         ":2: a gradient-mode policy's decision: expected \"levels\", no \"average\" or "
         "\"period\"; \"period\" is the other mode's"},
        {HDR2(GRAD) STEP(0, ",\"bytes\":4"), ":2: missing \"levels\""},
        {HDR2(PERI) STEP(0, ",\"state\":\"x\""), ":2: missing \"average\""},
        /* two different evaluations of one step */
        {HDR2("") EVAL "{\"type\":\"eval\",\"step\":0,\"test_accuracy\":0.9}\n" STEP(0, ""),
         ":3: \"step\": step 0 is evaluated twice, test_accuracy 0.5 then 0.9"},
        /* a step after the one that says the run stopped; epoch norms off an epoch's end */
        {HDR2("") STEP(0, ",\"stopped\":\"diverged\"") STEP(1, ""),
         ":3: a step after step 0, whose \"stopped\": \"diverged\" ended the run"},
        {HDR2("") STEP(0, ",\"epoch_norms\":[1,1]"),
         ":2: \"epoch_norms\": on a step that does not end an epoch"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        Trace t;
        BwError err = {{0}};
        int rc = read_text(bad[i].text, &t, &err);
        if (rc != BW_EUSAGE || !strstr(err.msg, bad[i].needle) || !strstr(err.msg, "t.jsonl"))
            fail_msg("case %zu: status %d, '%s', expected '%s'", i, rc, err.msg, bad[i].needle);
    }
}

/* A level the compressor refuses (PowerSGD's rank 1.5) or an unknown compressor is refused as
 * compare --traces and sweep --traces read the trace, naming the file, its line and the field,
 * not --compressor or the run's policy (issue 49 items 28, 29); a valid trace loads. */
static void test_own_trace_levels_are_the_compressors(void **state)
{
    (void)state;
    static const struct {
        const char *text, *needle;
    } cases[] = {
        {HDR2(GRAD) STEP(0, ",\"levels\":[1.5,0],\"bytes\":4"),
         "t.jsonl:2: \"levels\"[0]: powersgd level 1.5: expected"},
        {HDR2(",\"policy\":{\"spec\":\"x\",\"mode\":\"gradient\",\"compressor\":\"zzz\","
              "\"seed\":1}") STEP(0, ",\"levels\":[1,0],\"bytes\":4"),
         "t.jsonl:1: \"policy\": \"compressor\": unknown compressor 'zzz'"},
        /* a step's bytes are what its decision sends: rank 2 of the 2x3 matrix, 4 (2 + 3) x 2,
         * and the 2 biases dense, 8: 48 (issue 49 item 6) */
        {HDR2(GRAD) STEP(0, ",\"levels\":[2,0],\"bytes\":4"),
         "t.jsonl:2: \"bytes\": 4, but the decision sends 48"},
        {HDR2(GRAD) STEP(0, ",\"levels\":[2,0],\"bytes\":48"), NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        Trace t;
        BwError err = {{0}};
        assert_int_equal(read_text(cases[i].text, &t, &err), BW_OK);
        trace_free(&t);
        char path[256], specs[4][SPEC_MAX_TEXT], pol[4][SPEC_MAX_TEXT], comp[4][SPEC_MAX_TEXT];
        snprintf(path, sizeof path, "%s/t.jsonl", TMP);
        OwnTraces o;
        int rc = own_traces_load(path, &o, specs, pol, comp, 4, &err);
        own_traces_free(&o);
        if (cases[i].needle ? rc != BW_EUSAGE || !strstr(err.msg, cases[i].needle) : rc != BW_OK)
            fail_msg("case %zu: status %d, '%s', expected '%s'", i, rc, err.msg,
                     cases[i].needle ? cases[i].needle : "success");
    }
}

/* A policy spec holding '"' (a trace's "policy.spec") is one field of compare.csv, written by
 * the one CSV writer sweep.csv's fields go through (csv.h), so every row has the header's
 * fields (issue 49 item 21). */
static void test_compare_csv_escapes_a_quote_in_a_spec(void **state)
{
    (void)state;
    const char *own = BELLOWS_SOURCE_DIR "/tests/data/own/";
    char cmd[2048], path[256];
    snprintf(cmd, sizeof cmd,
             "zcat %smlp-static-4w.jsonl.gz | sed '1s/\"spec\":\"static:level=1\"/\"spec\":"
             "\"static:level=\\\\\"1\"/' > %s/q.jsonl && " BELLOWS_BIN " compare --traces "
             "%smlp-sync-4w.jsonl.gz,%s/q.jsonl --no-plots --quiet --out %s/cq >/dev/null",
             own, TMP, own, TMP, TMP);
    assert_int_equal(system(cmd), 0);
    snprintf(path, sizeof path, "%s/cq/compare.csv", TMP);
    char *csv = slurp(path, NULL), *fields[64];
    assert_non_null(csv);
    char *line = strtok(csv, "\n");
    const int n = csv_split(line, fields, 64);
    int rows = 0;
    for (line = strtok(NULL, "\n"); line; line = strtok(NULL, "\n"), rows++) {
        char copy[4096];
        snprintf(copy, sizeof copy, "%s", line);
        if (csv_split(line, fields, 64) != n) fail_msg("a row of another width: %s", copy);
        if (rows == 1 && strcmp(fields[0], "static:level=\"1") != 0) fail_msg("%s", fields[0]);
    }
    assert_int_equal(rows, 2);
    free(csv);
}

static int setup(void **state)
{
    (void)state;
    make_tmpdir(TMP, sizeof TMP);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    rm_tree(TMP);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decisions_read_back),
        cmocka_unit_test(test_misplaced_decisions_are_refused),
        cmocka_unit_test(test_own_trace_levels_are_the_compressors),
        cmocka_unit_test(test_compare_csv_escapes_a_quote_in_a_spec),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
