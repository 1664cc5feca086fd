/* test_trace_replay.c: the replay engines on a synthetic trace. The fast engine (no actors, no
 * payloads) gives the actors' summary, steps.csv and evals.csv (1e-9 relative) for every
 * compressor, periodic and gradient policies, every allreduce algorithm and topology; scenarios
 * it cannot replay fall back to the actors and say why; and its outputs are byte-identical from
 * run to run. The trace format itself: test_trace.c. */
#include "testutil.h"

#include <dirent.h>
#include <math.h>
#include <sys/wait.h>

#include "trace.h"

static char TMP[64];

/* ---- the replay engines: fast (no actors, no payloads) against actors ---- */

/* A synthetic trace: 4 epochs of 8 steps, global batch 48 (divisible by 2, 3, 4 and 6 workers),
 * two matrices and two biases; the lr drops 10x at epoch 2, the norms shift between epochs (so
 * Accordion switches), rank 0's norms differ from the mean, some steps carry a parameter
 * variance (ADPSGD), evaluations follow every epoch and step 12. measured: the compute is a
 * measured time per step rather than flops per sample. */
static void write_engine_trace(const char *path, int measured)
{
    TraceHeader h;
    memset(&h, 0, sizeof h);
    snprintf(h.source, sizeof h.source, "test_trace engines");
    snprintf(h.model, sizeof h.model, "mlp");
    h.workers = 4;
    h.batch = 12;
    if (measured)
        h.compute_s_per_step = 2.5e-4;
    else
        h.flops_per_sample = 3.1e6;
    h.epochs = 4;
    h.steps_per_epoch = 8;
    snprintf(h.lr_schedule, sizeof h.lr_schedule, "step");
    h.lr_base = 0.1;
    h.n_layers = 4;
    TraceLayer layers[4];
    memset(layers, 0, sizeof layers);
    h.layers = layers;
    const int rows[] = {24, 24, 10, 10}, cols[] = {40, 1, 24, 1};
    for (int l = 0; l < 4; l++) {
        snprintf(h.layers[l].name, sizeof h.layers[l].name, "layer%d", l);
        h.layers[l].rows = rows[l];
        h.layers[l].cols = cols[l];
    }
    TraceWriter *w;
    BwError err;
    if (trace_writer_open(path, &h, &w, &err) != BW_OK) fail_msg("%s", err.msg);
    TraceEval e0 = {.step = 0, .test_accuracy = 0.1, .test_loss = 2.3};
    trace_write_eval(w, &e0);
    const double shift[] = {1.0, 0.3, 0.25, 0.9};
    for (int s = 0; s < 32; s++) {
        TraceStep st = {.step = s,
                        .epoch = s / 8,
                        .epoch_end = s % 8 == 7,
                        .batch = 48,
                        .lr = s < 16 ? 0.1 : 0.01,
                        .loss = 2.0 / (1 + s / 10.0),
                        .has_rank0 = 1};
        double norms[3][4];
        st.grad_norms = norms[0];
        st.grad_norms_rank0 = norms[1];
        st.epoch_norms = norms[2];
        for (int l = 0; l < 4; l++) {
            st.grad_norms[l] = (1 + l) * shift[s / 8] * (1 + 0.01 * (s % 8));
            st.grad_norms_rank0[l] = 1.1 * st.grad_norms[l];
        }
        if (st.epoch_end) {
            st.has_epoch_norms = 1;
            for (int l = 0; l < 4; l++) st.epoch_norms[l] = st.grad_norms[l] / (2 + l);
        }
        if (s % 5 == 3) st.has_variance = 1, st.param_variance = 1e-4 / (1 + s);
        trace_write_step(w, &st);
        if (st.epoch_end || s == 11) {
            TraceEval e = {.step = s + 1, .test_accuracy = 0.5 + 0.012 * s, .test_loss = 1.0};
            trace_write_eval(w, &e);
        }
    }
    if (trace_writer_close(w, &err) != BW_OK) fail_msg("%s", err.msg);
}

/* The same number, 1e-9 relative (both NaN counts as the same). */
static int close_enough(double a, double b)
{
    if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
    return fabs(a - b) <= 1e-9 * fmax(fabs(a), fabs(b));
}

/* Two CSV files hold the same rows and their first `cols` columns (0: all, as many in both);
 * numbers agree to 1e-9 relative, and every other field is equal. */
static void check_csv_cols(const char *pa, const char *pb, int cols)
{
    char *a = slurp(pa, NULL), *b = slurp(pb, NULL);
    if (!a || !b) fail_msg("missing %s or %s", pa, pb);
    char *sa, *sb, *la = strtok_r(a, "\n", &sa), *lb = strtok_r(b, "\n", &sb);
    int line = 1;
    for (; la && lb; la = strtok_r(NULL, "\n", &sa), lb = strtok_r(NULL, "\n", &sb), line++) {
        char *fa, *fb, *ta = strtok_r(la, ",", &fa), *tb = strtok_r(lb, ",", &fb);
        int col = 1;
        for (; ta && tb && (!cols || col <= cols);
             ta = strtok_r(NULL, ",", &fa), tb = strtok_r(NULL, ",", &fb), col++) {
            char *ea, *eb;
            double x = strtod(ta, &ea), y = strtod(tb, &eb);
            int numbers = ea != ta && !*ea && eb != tb && !*eb;
            if (numbers ? !close_enough(x, y) : strcmp(ta, tb) != 0)
                fail_msg("%s line %d column %d: '%s', but '%s' in %s", pa, line, col, ta, tb, pb);
        }
        if (!cols && (ta || tb)) fail_msg("%s line %d: not as many columns as in %s", pa, line, pb);
    }
    if (la || lb) fail_msg("%s: not as many lines as %s", pa, pb);
    free(a);
    free(b);
}

static void check_csv_close(const char *pa, const char *pb)
{
    check_csv_cols(pa, pb, 0);
}

/* summary.json's value of key as a number (null: NaN); *found = 0 when absent. */
static double summary_number(const char *text, const char *key, int *found)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\": ", key);
    const char *p = strstr(text, pat);
    *found = p != NULL;
    if (!p) return NAN;
    p += strlen(pat);
    return strncmp(p, "null", 4) == 0 ? NAN : strtod(p, NULL);
}

/* The headline figures of two runs' summary.json agree, and each names its engine. */
static void check_summaries(const char *pa, const char *pb)
{
    char *a = slurp(pa, NULL), *b = slurp(pb, NULL);
    if (!a || !b) fail_msg("missing %s or %s", pa, pb);
    const char *keys[] = {"final_test_accuracy",
                          "best_test_accuracy",
                          "time_to_accuracy_s",
                          "sim_time_s",
                          "bytes_per_worker",
                          "compute_s",
                          "payload_bytes_per_worker",
                          "communication_s",
                          "wait_s",
                          "steps",
                          "epochs_done",
                          "averagings"};
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
        int fa, fb;
        double x = summary_number(a, keys[i], &fa), y = summary_number(b, keys[i], &fb);
        if (!fa || !fb || !close_enough(x, y))
            fail_msg("%s: %s %.17g, but %.17g in %s", pa, keys[i], x, y, pb);
    }
    const char *sa = strstr(a, "\"status\""), *sb = strstr(b, "\"status\"");
    assert_non_null(sa);
    assert_non_null(sb);
    assert_int_equal(strcspn(sa, "\n"), strcspn(sb, "\n"));
    assert_memory_equal(sa, sb, strcspn(sa, "\n"));
    assert_non_null(strstr(a, "\"replay_engine\": \"fast\""));
    assert_non_null(strstr(b, "\"replay_engine\": \"actors\""));
    free(a);
    free(b);
}

/* Replays `policies` with the fast engine and with the actors (flags: the scenario) and checks
 * every run folder's summary, steps.csv and evals.csv against each other. */
static void check_engines_agree(const char *trace, const char *flags, const char *policies)
{
    char cmd[4096], out[2][256];
    const char *engines[] = {"fast", "actors"};
    static int k = 0;
    k++;
    for (int e = 0; e < 2; e++) {
        snprintf(out[e], sizeof out[e], "%s/engines%d-%s", TMP, k, engines[e]);
        snprintf(cmd, sizeof cmd,
                 "%s replay --trace %s --collectives analytic %s --policies %s --replay-engine %s "
                 "--target-accuracy 0.6 --no-plots --quiet --out %s >/dev/null",
                 BELLOWS_BIN, trace, flags, policies, engines[e], out[e]);
        if (system(cmd) != 0) fail_msg("failed: %s", cmd);
    }
    char seed_dir[320];
    snprintf(seed_dir, sizeof seed_dir, "%s/seed-1", out[0]); /* a replay: one seed */
    DIR *d = opendir(seed_dir);
    assert_non_null(d);
    int runs = 0;
    for (struct dirent *ent; (ent = readdir(d));) {
        if (ent->d_name[0] == '.' || !strchr(ent->d_name, '-')) continue;
        const char *files[] = {"steps.csv", "evals.csv"};
        char pa[1024], pb[1024];
        for (int i = 0; i < 2; i++) {
            snprintf(pa, sizeof pa, "%s/seed-1/%s/%s", out[0], ent->d_name, files[i]);
            snprintf(pb, sizeof pb, "%s/seed-1/%s/%s", out[1], ent->d_name, files[i]);
            check_csv_close(pa, pb);
        }
        snprintf(pa, sizeof pa, "%s/seed-1/%s/summary.json", out[0], ent->d_name);
        snprintf(pb, sizeof pb, "%s/seed-1/%s/summary.json", out[1], ent->d_name);
        check_summaries(pa, pb);
        runs++;
    }
    closedir(d);
    char pa[512], pb[512];
    snprintf(pa, sizeof pa, "%s/compare.csv", out[0]);
    snprintf(pb, sizeof pb, "%s/compare.csv", out[1]);
    check_csv_close(pa, pb);
    print_message("%d runs agree: %s, %s\n", runs, flags, policies);
}

/* Replays the engines trace with `flags` and `policy` on the clocks from..to of clock[] (their
 * steps.csv into steps[k]). */
static void replay_clocks(const char *name, const char *flags, const char *policy, int from, int to,
                          char steps[][320])
{
    static const char *clock[3] = {"--replay-engine fast", "--replay-engine actors --schedule fifo",
                                   "--replay-engine actors --schedule " PLUGIN_FIFO};
    char trace[256], cmd[4096], out[256];
    snprintf(trace, sizeof trace, "%s/engines.jsonl", TMP);
    if (!file_exists(trace)) write_engine_trace(trace, 0);
    for (int k = from; k <= to; k++) {
        snprintf(out, sizeof out, "%s/%s%d", TMP, name, k);
        snprintf(cmd, sizeof cmd,
                 "%s replay --trace %s --collectives analytic --workers 4 "
                 "--workload resnet18-cifar --costs ideal --overlap ddp %s --policies %s %s "
                 "--no-plots --quiet --out %s >/dev/null",
                 BELLOWS_BIN, trace, flags, policy, clock[k], out);
        if (system(cmd) != 0) fail_msg("failed: %s", cmd);
        snprintf(steps[k], sizeof steps[k], "%s/seed-1/1-%s/steps.csv", out, policy);
        for (char *c = strrchr(steps[k], '/') - strlen(policy); *c != '/'; c++)
            if (*c == ':' || *c == '=') *c = '-'; /* the run folder's name */
    }
}

/* --zeropp qwz (zeropp_plan.c: its quantized gathers, encode and decode in the tail) with the
 * profile's quantise rate, on --overlap none's path: the closed form and DDP's streams agree */
static void zeropp_two_clocks(char steps[][320])
{
    static const char *clock[2] = {"--replay-engine fast",
                                   "--replay-engine actors --schedule fifo"};
    char trace[256], cmd[4096], out[256];
    snprintf(trace, sizeof trace, "%s/engines.jsonl", TMP);
    if (!file_exists(trace)) write_engine_trace(trace, 0);
    for (int k = 0; k < 2; k++) {
        snprintf(out, sizeof out, "%s/zeropp%d", TMP, k);
        snprintf(cmd, sizeof cmd,
                 "%s replay --trace %s --collectives analytic --workers 4 "
                 "--workload resnet18-cifar --overlap none --zeropp qwz --sharding zero3 "
                 "--policies sync %s --no-plots --quiet --out %s >/dev/null",
                 BELLOWS_BIN, trace, clock[k], out);
        if (system(cmd) != 0) fail_msg("failed: %s", cmd);
        snprintf(steps[k], sizeof steps[k], "%s/seed-1/1-sync/steps.csv", out);
    }
    check_csv_cols(steps[0], steps[1], 0);
}

/* --sharding zero3 (issue 50: its FSDP units' all-gathers and reduce-scatters, fsdp_walk) on the
 * two clocks that walk it, under FSDP's defaults, under the other knobs (the reduce-scatters'
 * own lane, BACKWARD_POST, forward prefetch, units of three layers) and with --zeropp qwz (each
 * unit's gathers quantized: zpp_plan_unit_gathers) under knobs of its own: the same steps */
static void fsdp_two_clocks(char steps[][320])
{
    static const char *clock[2] = {"--replay-engine fast",
                                   "--replay-engine actors --schedule fifo"};
    static const char *knobs[3] = {"",
                                   "--rs-comm own --backward-prefetch post --forward-prefetch on "
                                   "--fsdp-unit 3",
                                   "--zeropp qwz:int4 --fsdp-unit 2 --forward-prefetch on"};
    char trace[256], cmd[4096], out[256];
    snprintf(trace, sizeof trace, "%s/engines.jsonl", TMP);
    if (!file_exists(trace)) write_engine_trace(trace, 0);
    for (int j = 0; j < 3; j++) {
        for (int k = 0; k < 2; k++) {
            snprintf(out, sizeof out, "%s/shard%d-%d", TMP, j, k);
            snprintf(cmd, sizeof cmd,
                     "%s replay --trace %s --collectives analytic --workers 4 "
                     "--workload resnet18-cifar --costs ideal --overlap ddp --free-compression "
                     "--sharding zero3 %s --policies sync %s --no-plots --quiet --out %s "
                     ">/dev/null",
                     BELLOWS_BIN, trace, knobs[j], clock[k], out);
            if (system(cmd) != 0) fail_msg("failed: %s", cmd);
            snprintf(steps[k], sizeof steps[k], "%s/seed-1/1-sync/steps.csv", out);
        }
        check_csv_cols(steps[0], steps[1], 0);
    }
}

/* The three clocks of a step plan (sim/driver/exec_impl.h, step_plan.h): the closed form (the
 * fast replay), DDP's streams (actors, fifo) and the schedule engine (actors, a plug-in that
 * keeps fifo's decision, timing the plan's buckets: plan_build_units), under --costs ideal on
 * analytic (uncontended) collectives, price the same steps: every time column of steps.csv
 * agrees (1e-9 relative; the closed form's buckets are max-plus arithmetic, the engine's and
 * the streams' the same bits: test_exec.c), but for the engine's extra column (its schedule). */
static void test_three_clocks_time_the_same_plan(void **state)
{
    (void)state;
    char steps[3][320];
    replay_clocks("clock", "--free-compression", "sync", 0, 2, steps);
    check_csv_cols(steps[0], steps[1], 0);
    check_csv_cols(steps[1], steps[2], 16); /* step .. policy_state; then the schedule's */
    char *a = slurp(steps[1], NULL);
    assert_non_null(a);
    assert_true(strlen(a) > 32 * 40); /* 32 steps */
    free(a);
    /* --sharding zero2 (issue 50: the buckets' reduce-scatters, the tail's all-gather after the
     * optimiser's shard) on all three: the engine walks the plan's stages and its tail (zero3's
     * FSDP units are DDP's streams' and the closed form's: fsdp_two_clocks) */
    replay_clocks("shard", "--free-compression --sharding zero2", "sync", 0, 2, steps);
    check_csv_cols(steps[0], steps[1], 0);
    check_csv_cols(steps[1], steps[2], 16);
    /* the compressor's stages of each bucket (PowerSGD's encode, its work between its two
     * allreduces, its decode), priced on the GPU beside the backward: the streams and the
     * engine (the closed form refuses encoding beside the backward) */
    replay_clocks("powersgd", "--compressor powersgd", "static:level=1", 1, 2, steps);
    check_csv_cols(steps[1], steps[2], 16);
    a = slurp(steps[2], NULL);
    assert_non_null(a);
    const char *row = strchr(a, '\n'); /* step 0: its compression_s (the 8th column) priced */
    for (int c = 0; row && c < 7; c++) row = strchr(row + 1, ',');
    assert_non_null(row);
    assert_true(strtod(row + 1, NULL) > 0);
    free(a);
    zeropp_two_clocks(steps);
    fsdp_two_clocks(steps);
}

static void test_fast_replay_gives_the_actors_results(void **state)
{
    (void)state;
    char flops[256], measured[256];
    snprintf(flops, sizeof flops, "%s/engines.jsonl", TMP);
    snprintf(measured, sizeof measured, "%s/engines-measured.jsonl", TMP);
    write_engine_trace(flops, 0);
    write_engine_trace(measured, 1);
    /* dense and periodic policies; ring on a star */
    check_engines_agree(flops, "--workers 4 --compressor none",
                        "sync,static,cpsgd:period=4,postlocal:period=4,adacomm,adpsgd");
    /* the momentum buffers averaged too: twice the floats at an averaging, in both engines,
     * with the small model's costs and with a workload's */
    check_engines_agree(flops, "--workers 4 --compressor none --average-momentum",
                        "cpsgd:period=4,adpsgd:period=4");
    check_engines_agree(flops,
                        "--workers 4 --compressor none --workload resnet18-cifar "
                        "--overlap none --average-momentum",
                        "cpsgd:period=4");
    /* halves; 6 workers halving-doubling (ranks send different bytes); measured compute */
    check_engines_agree(measured, "--workers 6 --allreduce halving-doubling --compressor fp16",
                        "sync,static");
    /* PowerSGD's two allreduces at ranks 1 and 2 and Accordion's switches; a binomial tree (rank
     * 0 sends more); one slowdown for every worker */
    check_engines_agree(flops,
                        "--workers 3 --allreduce tree --slowdown 2,2,2 --bandwidth 1Gbps "
                        "--compressor powersgd",
                        "sync,static:level=1,static:level=2,accordion:interval=1");
    /* allgathers; hierarchical nodes and allreduce */
    check_engines_agree(flops,
                        "--workers 4 --topology hierarchical --gpus-per-node 2 --allreduce "
                        "hierarchical --compressor topk",
                        "static:level=0.1,accordion:interval=1");
    check_engines_agree(flops, "--workers 4 --topology fat-tree --leaf-size 2 --compressor qsgd",
                        "static,static:level=4");
    check_engines_agree(flops, "--workers 2 --compressor signsgd", "sync,static");
    /* a workload's costs: its tensors' collectives after the backward, encode and decode
     * charged; and DDP's buckets in closed form (max-plus) when encoding is free */
    check_engines_agree(flops,
                        "--workers 4 --compressor powersgd --workload resnet18-cifar "
                        "--overlap none",
                        "sync,static:level=1,cpsgd:period=4");
    check_engines_agree(flops,
                        "--workers 3 --compressor powersgd --workload resnet18-cifar "
                        "--overlap tensor",
                        "static:level=2,accordion:interval=1");
    check_engines_agree(measured,
                        "--workers 4 --compressor topk --workload resnet50 --overlap "
                        "ddp --free-compression --bucket-mb 10",
                        "sync,static:level=0.1");
    check_engines_agree(flops, "--workers 4 --latency 50us --compressor randomk",
                        "static:level=0.05,accordion:interval=1,critical=0.5,normal=0.05");
    /* the roofline (--costs ideal: steps costed only with a workload or an overlap), and a
     * profile with a collectives' cycle, fixed costs per call and tensor, and allgathers that
     * wait for the backward's end (DDP's buckets deferred in closed form) */
    check_engines_agree(flops,
                        "--workers 3 --allreduce tree --slowdown 2,2,2 --bandwidth 1Gbps "
                        "--compressor powersgd --costs ideal",
                        "sync,static:level=1");
    check_engines_agree(flops, "--workers 3 --gpu V100 --costs grace-tf --compressor powersgd",
                        "static:level=1,cpsgd:period=4");
    check_engines_agree(measured,
                        "--workers 4 --gpu V100 --costs grace-tf --compressor topk --workload "
                        "resnet50 --overlap ddp --free-compression --bucket-mb 10",
                        "sync,static:level=0.1");
    /* a sweep of replays: the forked runs of the fast engine skip SimGrid altogether */
    char cmd[2048], pa[512], pb[512];
    for (int e = 0; e < 2; e++) {
        snprintf(cmd, sizeof cmd,
                 "%s sweep --trace %s --workers 4 --collectives analytic --bandwidth 1Gbps,10Gbps "
                 "--compressor powersgd --policies sync,static:level=1 --replay-engine %s "
                 "--target-accuracy 0.6 --no-plots --quiet --out %s/engine-sweep-%d >/dev/null",
                 BELLOWS_BIN, flops, e ? "actors" : "fast", TMP, e);
        assert_int_equal(system(cmd), 0);
    }
    snprintf(pa, sizeof pa, "%s/engine-sweep-0/sweep.csv", TMP);
    snprintf(pb, sizeof pb, "%s/engine-sweep-1/sweep.csv", TMP);
    check_csv_close(pa, pb);
}

/* A scenario whose workers differ, or whose messages are simulated one by one, is replayed by
 * the actors, and its summary says why; insisting on the fast engine there is a usage error. */
static void test_replays_that_need_the_actors_fall_back_and_say_why(void **state)
{
    (void)state;
    char trace[256];
    snprintf(trace, sizeof trace, "%s/engines.jsonl", TMP);
    if (!file_exists(trace)) write_engine_trace(trace, 0);
    const struct {
        const char *flags, *engine, *why;
    } cases[] = {
        {"--collectives analytic", "fast", NULL},
        {"--collectives analytic --slowdown 3,3,3,3", "fast", NULL},
        {"", "actors", "--collectives transfer"},
        {"--collectives analytic --compute-jitter 0.2", "actors", "--compute-jitter"},
        {"--collectives analytic --slowdown 1,2", "actors", "--slowdown"},
        {"--collectives analytic --cfg=contexts/factory:thread", "actors", "--cfg="},
        {"--collectives analytic --replay-engine actors", "actors", "--replay-engine actors"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char cmd[2048], path[512];
        snprintf(cmd, sizeof cmd,
                 "%s replay --trace %s --workers 4 %s --compressor powersgd --policies sync "
                 "--no-plots --quiet --out %s/fallback%zu >/dev/null",
                 BELLOWS_BIN, trace, cases[i].flags, TMP, i);
        assert_int_equal(system(cmd), 0);
        snprintf(path, sizeof path, "%s/fallback%zu/seed-1/1-sync/summary.json", TMP, i);
        char *sum = slurp(path, NULL), want[128];
        assert_non_null(sum);
        snprintf(want, sizeof want, "\"replay_engine\": \"%s\"", cases[i].engine);
        if (!strstr(sum, want)) fail_msg("%s: no %s in %s", cases[i].flags, want, path);
        const char *why = strstr(sum, "\"replay_engine_fallback\": \"");
        if (cases[i].why ? !why || !strstr(why, cases[i].why) : why != NULL)
            fail_msg("%s: the fallback should say '%s': %s", cases[i].flags,
                     cases[i].why ? cases[i].why : "(nothing)", sum);
        free(sum);
    }
    /* --replay-engine fast where it cannot apply: exit status 2, saying why */
    char cmd[2048], path[512];
    snprintf(path, sizeof path, "%s/fast-refused.txt", TMP);
    snprintf(cmd, sizeof cmd,
             "%s replay --trace %s --workers 4 --collectives analytic --compute-jitter 0.2 "
             "--replay-engine fast --policies sync --no-plots --quiet --out %s/refused 2>%s",
             BELLOWS_BIN, trace, TMP, path);
    assert_int_equal(WEXITSTATUS(system(cmd)), 2);
    char *msg = slurp(path, NULL);
    assert_non_null(msg);
    if (!strstr(msg, "--replay-engine fast") || !strstr(msg, "--compute-jitter"))
        fail_msg("expected the refusal to name --replay-engine fast and --compute-jitter: %s", msg);
    free(msg);
    /* and only a replay has a replay engine */
    snprintf(cmd, sizeof cmd, "%s compare --replay-engine fast --out %s/nr 2>/dev/null",
             BELLOWS_BIN, TMP);
    assert_int_equal(WEXITSTATUS(system(cmd)), 2);
}

/* Same command, same files: the fast replay's outputs are byte-identical but for wall_s. */
static void test_fast_replay_outputs_are_byte_identical_run_to_run(void **state)
{
    (void)state;
    char trace[256];
    snprintf(trace, sizeof trace, "%s/engines.jsonl", TMP);
    if (!file_exists(trace)) write_engine_trace(trace, 0);
    for (int k = 0; k < 2; k++) {
        char cmd[2048];
        snprintf(cmd, sizeof cmd,
                 "%s replay --trace %s --workers 4 --collectives analytic --compressor topk "
                 "--policies static,accordion:interval=1,cpsgd:period=3 --no-plots --quiet "
                 "--out %s/same%d >/dev/null",
                 BELLOWS_BIN, trace, TMP, k);
        assert_int_equal(system(cmd), 0);
    }
    const char *files[] = {"compare.csv",
                           "seed-1/1-static/steps.csv",
                           "seed-1/1-static/evals.csv",
                           "seed-1/2-accordion-interval-1/steps.csv",
                           "seed-1/3-cpsgd-period-3/steps.csv",
                           "seed-1/3-cpsgd-period-3/evals.csv",
                           "seed-1/2-accordion-interval-1/summary.json"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        char pa[512], pb[512];
        snprintf(pa, sizeof pa, "%s/same0/%s", TMP, files[i]);
        snprintf(pb, sizeof pb, "%s/same1/%s", TMP, files[i]);
        size_t na, nb;
        char *a = slurp(pa, &na), *b = slurp(pb, &nb);
        if (!a || !b) fail_msg("missing %s or %s", pa, pb);
        char *wa = strstr(a, "\"wall_s\""), *wb = strstr(b, "\"wall_s\"");
        if (wa && wb) *wa = *wb = '\0'; /* the one wall-clock figure, last in summary.json */
        if (strcmp(a, b) != 0) fail_msg("%s differs between two identical runs", files[i]);
        assert_non_null(strstr(files[i], "summary") ? strstr(a, "\"replay_engine\": \"fast\"") : a);
        free(a);
        free(b);
    }
}

int main(void)
{
    make_tmpdir(TMP, sizeof TMP);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fast_replay_gives_the_actors_results),
        cmocka_unit_test(test_three_clocks_time_the_same_plan),
        cmocka_unit_test(test_replays_that_need_the_actors_fall_back_and_say_why),
        cmocka_unit_test(test_fast_replay_outputs_are_byte_identical_run_to_run),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    rm_tree(TMP);
    return rc;
}
