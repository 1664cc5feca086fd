/* test_trace.c: the gradient-trace format. The writer's output reads back identically (plain
 * and gzip); a corpus of broken traces is refused with the file, line and what was wrong; short
 * traces are complete only when they say why; a replay whose policy needs what the trace lacks
 * is refused; a trace of 240 tensors with timing reads back and replays; and a trace recorded
 * from a real simulated run (bellows run --record-trace) holds every step and evaluation of that
 * run, and replaying it reproduces the run's time and bytes. The replay engines against each
 * other: test_trace_replay.c. */
#include "testutil.h"

#include <math.h>
#include <sys/wait.h>

#include "trace.h"

static char TMP[64];

/* A header on the caller's layers[n_layers]. */
static TraceHeader header(int n_layers, TraceLayer *layers)
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
    h.layers = layers;
    for (int l = 0; l < n_layers; l++) {
        memset(&h.layers[l], 0, sizeof h.layers[l]);
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
        TraceLayer layers[3];
        TraceHeader h = header(3, layers);
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
            double norms[3], epoch_norms[3];
            st.grad_norms = norms;
            st.epoch_norms = epoch_norms;
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
        assert_false(t.h.has_timing); /* a trace without "timing" still reads */
        assert_true(t.h.layers[2].fwd_s == 0 && t.h.layers[2].bwd_s == 0);
        assert_null(t.steps[1].epoch_norms);
        assert_true(t.steps[2].epoch_norms[1] == 0.5);
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
/* the same, promising 2 epochs of 3 steps */
#define HDRLEN                                                                                     \
    "{\"format\":\"bellows-trace\",\"version\":1,\"model\":\"m\",\"workers\":2,\"batch\":4,"       \
    "\"flops_per_sample\":10,\"epochs\":2,\"steps_per_epoch\":3,\"layers\":[{\"name\":\"w\","      \
    "\"rows\":2,\"cols\":3},{\"name\":\"b\",\"rows\":2,\"cols\":1}]}\n"
/* the same, with a "timing" of the given JSON text */
#define HDRT(timing)                                                                               \
    "{\"format\":\"bellows-trace\",\"version\":1,\"model\":\"m\",\"workers\":2,\"batch\":4,"       \
    "\"flops_per_sample\":10,\"layers\":[{\"name\":\"w\",\"rows\":2,\"cols\":3},{\"name\":\"b\","  \
    "\"rows\":2,\"cols\":1}],\"timing\":" timing "}\n"
#define STEP(n, e)                                                                                 \
    "{\"type\":\"step\",\"step\":" #n ",\"epoch\":" #e                                             \
    ",\"lr\":0.1,\"loss\":1,\"grad_norms\":[1,2]}\n"

#define EVAL(n, a) "{\"type\":\"eval\",\"step\":" #n ",\"test_accuracy\":" #a "}\n"

static const BadTrace BAD[] = {
    {"", "empty trace"},
    {HDR, "no step records"},
    {HDR STEP(0, 0) "{\"type\":\"step\",\"step\":1,\n", ":3:"},
    {HDR STEP(0, 0) "{\"type\":\"step\",\"step\":1,", "truncated: the file ends within line 3"},
    {HDRLEN STEP(0, 0) STEP(1, 0) STEP(2, 1),
     "truncated: the header promises 6 steps (2 epochs of 3) but the trace holds 3 step records"},
    {"not json\n", ":1:"},
    {"[1,2]\n", ":1: expected a JSON object"},
    {"{\"format\":\"other\",\"version\":1}\n", "\"format\": expected \"bellows-trace\""},
    {"{\"format\":\"bellows-trace\",\"version\":3}\n", "reads versions 1 to 2, not 3"},
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
     "\"grad_norms\"[1]: expected a number in [0, "},
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
    /* the optional timing profile */
    {HDRT("[1,2]") STEP(0, 0), ":1: \"timing\": expected an object"},
    {HDRT("{\"fwd_s\":[1,2],\"bwd_s\":[1,2]}") STEP(0, 0), ":1: missing \"device\""},
    {HDRT("{\"device\":\"cpu\",\"fwd_s\":[1],\"bwd_s\":[1,2]}") STEP(0, 0),
     ":1: \"fwd_s\": expected an array of 2 numbers"},
    {HDRT("{\"device\":\"cpu\",\"fwd_s\":[1,2]}") STEP(0, 0), ":1: missing \"bwd_s\""},
    {HDRT("{\"device\":\"cpu\",\"fwd_s\":[1,2],\"bwd_s\":[1,-2]}") STEP(0, 0),
     ":1: \"bwd_s\"[1]: expected a number in [0, 10000]"},
    {HDRT("{\"device\":\"cpu\",\"steps\":0,\"fwd_s\":[1,2],\"bwd_s\":[1,2]}") STEP(0, 0),
     ":1: \"steps\": 0 is outside"},
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
    assert_non_null(strstr(err.msg, "truncated: the gzip stream ends early"));
    assert_non_null(strstr(err.msg, path));
    snprintf(path, sizeof path, "%s/missing.jsonl", TMP);
    assert_int_equal(trace_read(path, &t, &err), BW_EUSAGE);
    print_message("%zu broken traces checked\n", sizeof BAD / sizeof *BAD + 2);
}

/* A header with epochs and steps_per_epoch promises the length: a trace that stopped early says
 * so on its last record, and one that ends its last epoch in fewer steps (an adaptive batch) is
 * complete; one that does neither is refused as truncated, by the replay too (exit 2, nothing
 * written). */
static void test_short_traces_are_complete_only_when_they_say_why(void **state)
{
    (void)state;
    char path[256], cmd[1024];
    snprintf(path, sizeof path, "%s/short.jsonl", TMP);
    const char *tails[] = {"", ",\"stopped\":\"reached_target\"", ",\"epoch_end\":true"};
    for (int k = 0; k < 3; k++) {
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fprintf(f, HDRLEN STEP(0, 0) STEP(1, 0) STEP(2, 1));
        fprintf(f,
                "{\"type\":\"step\",\"step\":3,\"epoch\":1,\"lr\":0.1,\"loss\":1,"
                "\"grad_norms\":[1,2]%s}\n",
                tails[k]);
        fclose(f);
        Trace t;
        BwError err = {{0}};
        int rc = trace_read(path, &t, &err);
        if (k == 0) {
            assert_int_equal(rc, BW_EUSAGE);
            assert_non_null(strstr(err.msg, "promises 6 steps (2 epochs of 3)"));
            assert_non_null(strstr(err.msg, "holds 4 step records"));
            snprintf(cmd, sizeof cmd,
                     "%s replay --trace %s --quiet --no-plots --out %s/short-out 2>/dev/null",
                     BELLOWS_BIN, path, TMP);
            assert_int_equal(system(cmd) >> 8, 2);
            snprintf(cmd, sizeof cmd, "test -e %s/short-out", TMP);
            assert_int_not_equal(system(cmd), 0);
        } else {
            if (rc != BW_OK) fail_msg("case %d: %s", k, err.msg);
            assert_int_equal(t.n_steps, 4);
            assert_string_equal(t.steps[3].stopped, k == 1 ? "reached_target" : "");
            trace_free(&t);
        }
    }
}

/* A policy that needs what the trace never holds is refused before anything is written:
 * ADPSGD without "param_variance", Accordion without "epoch_norms" (exit 2, naming both). */
static void test_replaying_a_policy_needing_what_the_trace_lacks_is_refused(void **state)
{
    (void)state;
    char path[256], cmd[1024];
    snprintf(path, sizeof path, "%s/bare.jsonl", TMP);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f,
            HDRLEN STEP(0, 0) STEP(1, 0) STEP(2, 0) STEP(3, 1) STEP(4, 1) STEP(5, 1) EVAL(6, 0.5));
    fclose(f);
    const char *policies[] = {"sync,adpsgd", "accordion"},
               *fields[] = {"param_variance", "epoch_norms"};
    for (int k = 0; k < 2; k++) {
        snprintf(cmd, sizeof cmd,
                 "%s replay --trace %s --policies %s --quiet --no-plots --out %s/bare-out "
                 "2>%s/bare.err",
                 BELLOWS_BIN, path, policies[k], TMP, TMP);
        assert_int_equal(system(cmd) >> 8, 2);
        char errp[256];
        snprintf(errp, sizeof errp, "%s/bare.err", TMP);
        char *msg = slurp(errp, NULL);
        assert_non_null(msg);
        if (!strstr(msg, k ? "--policy accordion" : "--policy adpsgd") || !strstr(msg, fields[k]) ||
            !strstr(msg, path))
            fail_msg("message: %s", msg);
        free(msg);
        snprintf(cmd, sizeof cmd, "test -e %s/bare-out", TMP);
        assert_int_not_equal(system(cmd), 0);
    }
    /* the policies that need neither replay it */
    snprintf(cmd, sizeof cmd,
             "%s replay --trace %s --policies sync,cpsgd:period=2 --quiet --no-plots --out "
             "%s/bare-ok > %s/bare.out 2>&1",
             BELLOWS_BIN, path, TMP, TMP);
    assert_int_equal(system(cmd), 0);
    snprintf(path, sizeof path, "%s/bare.out", TMP);
    char *out = slurp(path, NULL);
    assert_non_null(strstr(out, "replay: accuracy is the trace's"));
    free(out);
}

/* No cap on the tensors: a trace of 240 (120 matrices and their biases, more than ResNet-50's
 * 161) with a timing profile reads back exactly, and replays under policies that read every
 * layer (Accordion's per-layer norms, PowerSGD per matrix) on the fast engine and the actors;
 * sync sends every parameter, 4 bytes each, every step. */
/* The 240-tensor trace at path replayed with engine: three policies complete, and sync moves
 * every parameter at every step. */
static void replay_wide(const char *path, const char *engine)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "%s replay --trace %s --workers 4 --compressor powersgd --collectives analytic "
             "--replay-engine %s "
             "--policies sync,accordion:interval=1,static:level=1 --seed 1 --quiet --no-plots "
             "--out %s/wide-%s > /dev/null",
             BELLOWS_BIN, path, engine, TMP, engine);
    assert_int_equal(system(cmd), 0);
    snprintf(cmd, sizeof cmd, "%s/wide-%s/compare.csv", TMP, engine);
    char *csv = slurp(cmd, NULL);
    assert_non_null(csv);
    int completed = 0;
    for (const char *c = csv; (c = strstr(c, ",completed,")); c++) completed++;
    assert_int_equal(count_lines(csv), 4);
    assert_int_equal(completed, 3);
    free(csv);
    snprintf(cmd, sizeof cmd, "%s/wide-%s/seed-1/1-sync/summary.json", TMP, engine);
    char *sum = slurp(cmd, NULL);
    assert_non_null(sum);
    /* 120 x (8 x 6 + 8) = 6720 parameters, 4 bytes each, every one of the 8 steps */
    assert_non_null(strstr(sum, "\"n_params\": 6720"));
    const char *pb = strstr(sum, "\"payload_bytes_per_worker\": ");
    assert_non_null(pb);
    assert_true(fabs(atof(pb + strlen("\"payload_bytes_per_worker\": ")) - 6720.0 * 4 * 8) < 1e-6);
    free(sum);
}

static void test_a_trace_of_240_tensors_with_timing_reads_back_and_replays(void **state)
{
    (void)state;
    enum { N = 240, STEPS = 8 };
    char path[256];
    snprintf(path, sizeof path, "%s/wide.jsonl.gz", TMP);
    TraceLayer *layers = calloc(N, sizeof *layers);
    assert_non_null(layers);
    TraceHeader h = header(N, layers);
    h.steps_per_epoch = STEPS / 2;
    for (int l = 0; l < N; l++) {
        h.layers[l].rows = 8;
        h.layers[l].cols = l % 2 ? 1 : 6;
        h.layers[l].fwd_s = l % 2 ? 0 : 1e-4 * (l + 1); /* a module's time on its first tensor */
        h.layers[l].bwd_s = l % 2 ? 0 : 2.5e-4 / (l + 1);
    }
    h.has_timing = 1;
    h.timing_steps = 5;
    snprintf(h.timing_device, sizeof h.timing_device, "cpu");
    TraceWriter *w;
    BwError err;
    if (trace_writer_open(path, &h, &w, &err) != BW_OK) fail_msg("%s", err.msg);
    double norms[3][N];
    for (int s = 0; s < STEPS; s++) {
        TraceStep st = {.step = s,
                        .epoch = s / 4,
                        .epoch_end = s % 4 == 3,
                        .batch = 64,
                        .lr = 0.05,
                        .loss = 2.0 / (s + 1),
                        .has_rank0 = 1,
                        .has_epoch_norms = s % 4 == 3,
                        .grad_norms = norms[0],
                        .grad_norms_rank0 = norms[1],
                        .epoch_norms = norms[2]};
        for (int l = 0; l < N; l++) {
            norms[0][l] = (1 + l % 7) * (s < 4 ? 1.0 : 0.2);
            norms[1][l] = 1.1 * norms[0][l];
            norms[2][l] = 0.5 * norms[0][l];
        }
        trace_write_step(w, &st);
        if (st.epoch_end) { /* a replay takes its accuracies from the evaluations */
            TraceEval ev = {.step = s + 1, .test_accuracy = 0.3 * (s + 1) / STEPS, .test_loss = 1};
            trace_write_eval(w, &ev);
        }
    }
    if (trace_writer_close(w, &err) != BW_OK) fail_msg("%s", err.msg);
    Trace t;
    if (trace_read(path, &t, &err) != BW_OK) fail_msg("%s", err.msg);
    assert_int_equal(t.h.n_layers, N);
    assert_true(t.h.has_timing && t.h.timing_steps == 5);
    assert_string_equal(t.h.timing_device, "cpu");
    for (int l = 0; l < N; l++) {
        assert_true(t.h.layers[l].fwd_s == h.layers[l].fwd_s);
        assert_true(t.h.layers[l].bwd_s == h.layers[l].bwd_s);
        assert_int_equal(t.h.layers[l].cols, h.layers[l].cols);
    }
    assert_true(t.steps[7].grad_norms[N - 1] == norms[0][N - 1]);
    assert_true(t.steps[3].epoch_norms[N - 1] == 0.5 * (1 + (N - 1) % 7));
    trace_free(&t);
    free(layers);
    replay_wide(path, "fast");
    replay_wide(path, "actors");
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
    /* cpsgd:period=4 averages every 4th step, the last step too (its variance written at the
     * end, there being no next step to carry it) */
    assert_int_equal(t.n_steps % 4, 0);
    assert_int_equal(with_variance, t.n_steps / 4);
    assert_true(t.steps[t.n_steps - 1].has_variance);
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
        snprintf(path, sizeof path, "%s/replay%d/seed-1/%s/summary.json", TMP, k, folders[k]);
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
        cmocka_unit_test(test_short_traces_are_complete_only_when_they_say_why),
        cmocka_unit_test(test_replaying_a_policy_needing_what_the_trace_lacks_is_refused),
        cmocka_unit_test(test_a_trace_of_240_tensors_with_timing_reads_back_and_replays),
        cmocka_unit_test(test_a_recorded_run_holds_every_step_and_evaluation),
        cmocka_unit_test(test_replaying_a_recorded_run_reproduces_its_time_and_bytes),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    rm_tree(TMP);
    return rc;
}
