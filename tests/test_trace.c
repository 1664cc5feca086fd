/* test_trace.c: the gradient-trace format. The writer's output reads back identically (plain
 * and gzip); a corpus of broken traces is refused with the file, line and what was wrong; and
 * a trace recorded from a real simulated run (bellows run --record-trace) holds every step and
 * evaluation of that run. */
#include "testutil.h"

#include <math.h>
#include <sys/wait.h>

#include "../traces/trace.h"

static char TMP[64];

static TraceHeader header(int n_layers)
{
    TraceHeader h;
    memset(&h, 0, sizeof h);
    snprintf(h.source, sizeof h.source, "test");
    snprintf(h.model, sizeof h.model, "mlp");
    snprintf(h.dataset, sizeof h.dataset, "synthetic");
    h.workers = 4;
    h.batch = 16;
    h.flops_per_sample = 1234.5;
    h.epochs = 2;
    h.steps_per_epoch = 3;
    snprintf(h.lr_schedule, sizeof h.lr_schedule, "constant");
    h.lr_base = 0.05;
    h.n_layers = n_layers;
    for (int l = 0; l < n_layers; l++) {
        snprintf(h.layers[l].name, sizeof h.layers[l].name, "layer%d", l);
        h.layers[l].rows = 10 + l;
        h.layers[l].cols = l % 2 ? 1 : 7;
    }
    return h;
}

static void test_written_traces_read_back_identically(void **state)
{
    (void)state;
    const char *names[] = {"t.jsonl", "t.jsonl.gz"};
    for (int k = 0; k < 2; k++) {
        char path[256];
        snprintf(path, sizeof path, "%s/%s", TMP, names[k]);
        TraceHeader h = header(3);
        TraceWriter *w;
        BwError err;
        assert_int_equal(trace_writer_open(path, &h, &w, &err), BW_OK);
        TraceEval e0 = {.step = 0, .test_accuracy = 0.1, .test_loss = 2.3};
        trace_write_eval(w, &e0);
        for (int s = 0; s < 6; s++) {
            TraceStep st = {.step = s,
                            .epoch = s / 3,
                            .epoch_end = s % 3 == 2,
                            .batch = 64,
                            .lr = 0.05,
                            .loss = 2.0 / (s + 1)};
            for (int l = 0; l < 3; l++) st.grad_norms[l] = 0.1 * (s + 1) + l / 3.0;
            if (st.epoch_end) {
                st.has_epoch_norms = 1;
                for (int l = 0; l < 3; l++) st.epoch_norms[l] = 1.0 / (l + 1);
            }
            if (s == 4) st.has_variance = 1, st.param_variance = 1e-7;
            trace_write_step(w, &st);
            if (st.epoch_end) {
                TraceEval e = {.step = s + 1, .test_accuracy = 0.5 + 0.1 * s, .test_loss = NAN};
                trace_write_eval(w, &e);
            }
        }
        assert_int_equal(trace_writer_close(w, &err), BW_OK);
        Trace t;
        if (trace_read(path, &t, &err) != BW_OK) fail_msg("%s", err.msg);
        assert_int_equal(t.n_steps, 6);
        assert_int_equal(t.n_evals, 3);
        assert_string_equal(t.h.model, "mlp");
        assert_int_equal(t.h.n_layers, 3);
        assert_int_equal(t.h.layers[1].rows, 11);
        assert_true(t.h.flops_per_sample == 1234.5);
        for (int s = 0; s < 6; s++)
            for (int l = 0; l < 3; l++)
                assert_true(t.steps[s].grad_norms[l] == 0.1 * (s + 1) + l / 3.0);
        assert_true(t.steps[4].has_variance && t.steps[4].param_variance == 1e-7);
        assert_true(t.steps[2].has_epoch_norms && !t.steps[1].has_epoch_norms);
        assert_true(t.evals[2].step == 6 && fabs(t.evals[2].test_accuracy - 1.0) < 1e-15);
        assert_true(isnan(t.evals[1].test_loss));
        trace_free(&t);
    }
}

typedef struct {
    const char *text; /* the whole file */
    const char *needle;
} BadTrace;

#define HDR                                                                                        \
    "{\"format\":\"bellows-trace\",\"version\":1,\"model\":\"m\",\"workers\":2,\"batch\":4,"       \
    "\"flops_per_sample\":10,\"layers\":[{\"name\":\"w\",\"rows\":2,\"cols\":3},{\"name\":\"b\","  \
    "\"rows\":2,\"cols\":1}]}\n"
#define STEP(n, e)                                                                                 \
    "{\"type\":\"step\",\"step\":" #n ",\"epoch\":" #e                                             \
    ",\"lr\":0.1,\"loss\":1,\"grad_norms\":[1,2]}\n"

static const BadTrace BAD[] = {
    {"", "empty trace"},
    {HDR, "no step records"},
    {HDR STEP(0, 0) "{\"type\":\"step\",\"step\":1,\n", ":3:"},
    {"not json\n", ":1:"},
    {"[1,2]\n", ":1: expected a JSON object"},
    {"{\"format\":\"other\",\"version\":1}\n", "\"format\": expected \"bellows-trace\""},
    {"{\"format\":\"bellows-trace\",\"version\":2}\n", "reads version 1, not 2"},
    {"{\"format\":\"bellows-trace\",\"version\":1,\"model\":\"m\",\"workers\":0,\"batch\":4}\n",
     "\"workers\": 0 is outside"},
    {"{\"format\":\"bellows-trace\",\"version\":1,\"model\":\"m\",\"workers\":2,\"batch\":4,"
     "\"layers\":[{\"name\":\"w\",\"rows\":2,\"cols\":3}]}\n",
     "flops_per_sample"},
    {"{\"format\":\"bellows-trace\",\"version\":1,\"model\":\"m\",\"workers\":2,\"batch\":4,"
     "\"flops_per_sample\":10,\"layers\":[{\"name\":\"w\",\"rows\":-2,\"cols\":3}]}\n",
     ":1: \"rows\": -2 is outside"},
    {"{\"format\":\"bellows-trace\",\"version\":1,\"model\":\"m\",\"workers\":2,\"batch\":4,"
     "\"flops_per_sample\":10,\"layers\":[]}\n",
     "\"layers\": expected a non-empty array"},
    {HDR "{\"type\":\"step\",\"step\":0,\"epoch\":0,\"lr\":0.1,\"loss\":1,\"grad_norms\":[1]}\n",
     ":2: \"grad_norms\": expected an array of 2 numbers"},
    {HDR "{\"type\":\"step\",\"step\":0,\"epoch\":0,\"lr\":0.1,\"loss\":1,\"grad_norms\":[1,-2]}\n",
     "\"grad_norms\"[1]: expected a finite number >= 0"},
    {HDR "{\"type\":\"step\",\"step\":0,\"epoch\":0,\"lr\":0.1,\"grad_norms\":[1,2]}\n",
     ":2: missing \"loss\""},
    {HDR STEP(0, 0) STEP(2, 0), ":3: \"step\": expected 1"},
    {HDR STEP(0, 1) STEP(1, 0), ":3: \"epoch\": 0 goes back from 1"},
    {HDR STEP(0, 0) "{\"type\":\"eval\",\"step\":5,\"test_accuracy\":0.5}\n",
     ":3: \"step\": an evaluation after step 5"},
    {HDR STEP(0, 0) "{\"type\":\"eval\",\"step\":1,\"test_accuracy\":1.5}\n",
     "\"test_accuracy\": 1.5 is outside"},
    {HDR STEP(0, 0) "{\"type\":\"restart\"}\n", "\"type\": expected \"step\" or \"eval\""},
    {HDR "{\"type\":\"step\",\"step\":0,\"step\":0}\n", ":2:"},
    {HDR STEP(0, 0) "{\"type\":\"step\",\"step\":1,\"epoch\":0,\"lr\":\"fast\",\"loss\":1,"
                    "\"grad_norms\":[1,2]}\n",
     "\"lr\": expected a number"},
};

static void test_broken_traces_are_refused_with_file_and_line(void **state)
{
    (void)state;
    char path[256];
    snprintf(path, sizeof path, "%s/bad.jsonl", TMP);
    for (size_t i = 0; i < sizeof BAD / sizeof *BAD; i++) {
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fputs(BAD[i].text, f);
        fclose(f);
        Trace t;
        BwError err = {{0}};
        int rc = trace_read(path, &t, &err);
        if (rc != BW_EUSAGE || !strstr(err.msg, BAD[i].needle) || !strstr(err.msg, path))
            fail_msg("case %zu: status %d, message '%s', expected to contain '%s'", i, rc, err.msg,
                     BAD[i].needle);
    }
    /* a gzip file cut short */
    char gz[256], cmd[1024];
    snprintf(gz, sizeof gz, "%s/t.jsonl.gz", TMP);
    snprintf(cmd, sizeof cmd, "head -c 200 %s > %s/cut.jsonl.gz", gz, TMP);
    assert_int_equal(system(cmd), 0);
    snprintf(path, sizeof path, "%s/cut.jsonl.gz", TMP);
    Trace t;
    BwError err;
    assert_int_equal(trace_read(path, &t, &err), BW_EUSAGE);
    snprintf(path, sizeof path, "%s/missing.jsonl", TMP);
    assert_int_equal(trace_read(path, &t, &err), BW_EUSAGE);
    print_message("%zu broken traces checked\n", sizeof BAD / sizeof *BAD + 2);
}

static int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++) n += *s == '\n';
    return n;
}

static void test_a_recorded_run_holds_every_step_and_evaluation(void **state)
{
    (void)state;
    char cmd[1024], path[256];
    snprintf(cmd, sizeof cmd,
             "%s run --train-samples 2048 --test-samples 300 --epochs 2 --workers 4 --batch 16 "
             "--policy cpsgd:period=4 --quiet --out %s/rec --record-trace %s/rec.jsonl.gz "
             ">/dev/null",
             BELLOWS_BIN, TMP, TMP);
    assert_int_equal(system(cmd), 0);
    snprintf(path, sizeof path, "%s/rec.jsonl.gz", TMP);
    Trace t;
    BwError err;
    if (trace_read(path, &t, &err) != BW_OK) fail_msg("%s", err.msg);
    snprintf(path, sizeof path, "%s/rec/steps.csv", TMP);
    char *steps = slurp(path, NULL);
    snprintf(path, sizeof path, "%s/rec/evals.csv", TMP);
    char *evals = slurp(path, NULL);
    assert_int_equal(t.n_steps, count_lines(steps) - 1);
    assert_int_equal(t.n_evals, count_lines(evals) - 1);
    assert_int_equal(t.h.workers, 4);
    assert_int_equal(t.h.batch, 16);
    assert_string_equal(t.h.model, "mlp");
    long with_variance = 0, epoch_ends = 0;
    for (long s = 0; s < t.n_steps; s++) {
        for (int l = 0; l < t.h.n_layers; l++) assert_true(t.steps[s].grad_norms[l] > 0);
        with_variance += t.steps[s].has_variance;
        epoch_ends += t.steps[s].epoch_end && t.steps[s].has_epoch_norms;
    }
    /* cpsgd:period=4 averages every 4th step; the last one's variance has no next step */
    assert_int_equal(with_variance, t.n_steps / 4 - 1);
    assert_int_equal(epoch_ends, 2);
    free(steps);
    free(evals);
    trace_free(&t);
}

static double json_number(const char *text, const char *key)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\": ", key);
    const char *p = strstr(text, pat);
    if (!p) fail_msg("no %s in summary.json", key);
    return strtod(p + strlen(pat), NULL);
}

/* Replaying the trace of a live sync or static run, on the same cluster, gives that run's
 * simulated time and bytes (to 1e-6): the replay charges the same compute and moves the same
 * messages, without training. */
static void test_replaying_a_recorded_run_reproduces_its_time_and_bytes(void **state)
{
    (void)state;
    const char *policies[] = {"sync", "static:level=2"};
    const char *folders[] = {"1-sync", "1-static-level-2"};
    for (int k = 0; k < 2; k++) {
        char cmd[2048], path[256];
        snprintf(cmd, sizeof cmd,
                 "%s run --train-samples 2048 --test-samples 300 --epochs 2 --workers 4 "
                 "--batch 16 --bandwidth 25Gbps --latency 3us --policy %s --quiet --out %s/live%d "
                 "--record-trace %s/live%d.jsonl >/dev/null && "
                 "%s replay --trace %s/live%d.jsonl --workers 4 --bandwidth 25Gbps --latency 3us "
                 "--policies %s --no-plots --quiet --out %s/replay%d >/dev/null",
                 BELLOWS_BIN, policies[k], TMP, k, TMP, k, BELLOWS_BIN, TMP, k, policies[k], TMP,
                 k);
        assert_int_equal(system(cmd), 0);
        snprintf(path, sizeof path, "%s/live%d/summary.json", TMP, k);
        char *live = slurp(path, NULL);
        snprintf(path, sizeof path, "%s/replay%d/%s/summary.json", TMP, k, folders[k]);
        char *rep = slurp(path, NULL);
        assert_non_null(live);
        assert_non_null(rep);
        const char *keys[] = {"sim_time_s", "bytes_per_worker", "communication_s", "compute_s"};
        for (int i = 0; i < 4; i++) {
            double a = json_number(live, keys[i]), b = json_number(rep, keys[i]);
            if (fabs(a - b) > 1e-6 * fabs(a))
                fail_msg("%s: %s live %.12g, replayed %.12g", policies[k], keys[i], a, b);
        }
        assert_non_null(strstr(rep, "\"accuracy_source\": \"trace\""));
        /* and the accuracy is the trace's */
        assert_true(json_number(live, "final_test_accuracy") ==
                    json_number(rep, "final_test_accuracy"));
        free(live);
        free(rep);
    }
    /* a sweep of replays: at the recorded scenario, sync's row has the live run's time */
    {
        char cmd2[2048], path[256];
        snprintf(cmd2, sizeof cmd2,
                 "%s sweep --trace %s/live0.jsonl --workers 4 --bandwidth 10Gbps,25Gbps "
                 "--latency 3us --policies sync,static:level=1 --no-plots --quiet --out %s/sw "
                 ">/dev/null",
                 BELLOWS_BIN, TMP, TMP);
        assert_int_equal(system(cmd2), 0);
        snprintf(path, sizeof path, "%s/sw/sweep.csv", TMP);
        char *csv = slurp(path, NULL);
        snprintf(path, sizeof path, "%s/live0/summary.json", TMP);
        char *live = slurp(path, NULL);
        assert_non_null(csv);
        assert_non_null(live);
        char *row = strstr(csv, "\n25Gbps,1,sync,");
        assert_non_null(row);
        /* bandwidth,seed,policy,folder,status,final,best,tta,speedup,bytes,ratio,sim_time_s */
        char *p = row + 1;
        for (int k = 0; k < 11; k++) p = strchr(p, ',') + 1;
        double sim = strtod(p, NULL), want = json_number(live, "sim_time_s");
        if (fabs(sim - want) > 1e-6 * want)
            fail_msg("swept replay %.12g s, live %.12g s", sim, want);
        free(csv);
        free(live);
    }
    /* usage errors: no trace, model flags with a trace, a policy that changes the batch */
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s replay --out %s/r 2>/dev/null", BELLOWS_BIN, TMP);
    assert_int_equal(WEXITSTATUS(system(cmd)), 2);
    snprintf(cmd, sizeof cmd, "%s replay --trace %s/live0.jsonl --epochs 3 --out %s/r 2>/dev/null",
             BELLOWS_BIN, TMP, TMP);
    assert_int_equal(WEXITSTATUS(system(cmd)), 2);
    snprintf(
        cmd, sizeof cmd,
        "%s replay --trace %s/live0.jsonl --workers 4 --policies accordion:mode=batch,critical=128 "
        "--compressor none --out %s/r 2>/dev/null",
        BELLOWS_BIN, TMP, TMP);
    assert_int_equal(WEXITSTATUS(system(cmd)), 2);
}

int main(void)
{
    make_tmpdir(TMP, sizeof TMP);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_written_traces_read_back_identically),
        cmocka_unit_test(test_broken_traces_are_refused_with_file_and_line),
        cmocka_unit_test(test_a_recorded_run_holds_every_step_and_evaluation),
        cmocka_unit_test(test_replaying_a_recorded_run_reproduces_its_time_and_bytes),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    rm_tree(TMP);
    return rc;
}
