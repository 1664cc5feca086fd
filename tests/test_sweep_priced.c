/* test_sweep_priced.c: train once, price the rest. Every flag of the simulating commands has a
 * class (dynamics, price or run). A sweep whose scenarios differ in price trains one run per
 * dynamics and prices the others by replaying its trace, and every file it writes (sweep.csv,
 * and each run's summary.json, steps.csv, evals.csv, epochs.csv) is byte for byte that of the
 * same sweep with --train-each, but for summary.json's wall_s: with the fast replay (every
 * built-in policy, Accordion's batch mode, a policy that sees the price) and with the actors (a
 * workload under --overlap none and ddp, a straggler, jitter, transfer-level collectives whose
 * order of additions differs); a training that does not complete leaves its scenarios to train,
 * but one under --stop-at-target trains to the end and its scenarios are replays cut there; a
 * resumed or sharded sweep trains only what it is missing; compare, which runs one scenario, sends
 * a list of them to sweep. Each test runs alone: test_sweep_priced [NAME-PATTERN]. */
#include "testutil.h"

#include <sys/wait.h>

#include "flag_class.h"
#include "run_args.h"
#include "smalldata.h"

static char TMP[64];

/* The small sweeps' common flags: a slice of Fashion-MNIST, three workers (two epochs, but in
 * the test of every policy). */
#define SMALL                                                                                      \
    "--train-samples 1024 --test-samples 200 --workers 3 --batch 32 --seeds 1 "                    \
    "--target-accuracy 0.6 --no-plots --quiet -j 2 " DATA
/* The trainings' data: smalldata.h's copy of the packaged set's first 1024 and 200 samples in
 * TMP, the suite's working folder (group_setup): the same runs, without reading the 60,000
 * images in each of the suite's trainings */
#define DATA "--data-dir fmnist"

static void test_every_flag_of_the_simulating_commands_has_a_class(void **state)
{
    (void)state;
    const RunMode modes[] = {RUN_MODE_RUN, RUN_MODE_COMPARE, RUN_MODE_SWEEP, RUN_MODE_SWEEP_RUN};
    int n = 0;
    for (size_t m = 0; m < sizeof modes / sizeof *modes; m++) {
        Flags *f = malloc(sizeof *f);
        BwError err;
        assert_int_equal(run_parse_flags("test", modes[m], 0, NULL, f, &err), BW_OK);
        for (int i = 0; i < f->n; i++, n++)
            if (flag_class(f->opts[i].name) == FLAG_UNCLASSED)
                fail_msg("--%s has no class: add it to sim/cli/flag_class.c (dynamics, price or "
                         "run)",
                         f->opts[i].name);
        run_flags_release(f);
        free(f);
    }
    assert_true(n > 200);
    assert_int_equal(flag_class("bandwidth"), FLAG_PRICE);
    assert_int_equal(flag_class("lr"), FLAG_DYNAMICS);
    assert_int_equal(flag_class("hidden"), FLAG_DYNAMICS); /* a model's option */
    assert_int_equal(flag_class("no-such-flag"), FLAG_UNCLASSED);
}

/* TMP/a and TMP/b hold the same sweep.csv and the same run files, byte for byte but for
 * summary.json's wall_s (the one wall-clock figure); fails naming the first file that differs. */
static void expect_same_files(const char *a, const char *b)
{
    char cmd[4096], out[256];
    snprintf(out, sizeof out, "%s/%s.diff", TMP, a);
    snprintf(cmd, sizeof cmd,
             "bash -c 'cd %s && a=%s b=%s; "
             "diff <(cd $a/runs && find . -type f | sort) <(cd $b/runs && find . -type f | sort) "
             "|| exit 1; cmp $a/sweep.csv $b/sweep.csv || exit 1; n=0; "
             "for f in $(cd $b && find runs -type f); do n=$((n+1)); case $f in "
             "*/summary.json) cmp <(grep -v \\\"wall_s\\\" $a/$f) "
             "<(grep -v \\\"wall_s\\\" $b/$f);; "
             "*) cmp $a/$f $b/$f;; esac || { echo $f differs; exit 1; }; done; "
             "[ $n -gt 0 ] || echo no files' >%s 2>&1",
             TMP, a, b, out);
    int rc = system(cmd);
    char *diff = slurp(out, NULL);
    if (rc != 0 || (diff && diff[0])) fail_msg("%s and %s differ: %s", a, b, diff);
    free(diff);
}

/* Runs `bellows sweep FLAGS` into TMP/NAME (its stdout in TMP/NAME.out) and with --train-each
 * into TMP/NAME-each; fails unless both hold the same files (expect_same_files). */
static void expect_priced_as_trained(const char *name, const char *flags)
{
    char cmd[8192], each[128];
    snprintf(cmd, sizeof cmd,
             BELLOWS_BIN " sweep %s --out %s/%s >%s/%s.out && " BELLOWS_BIN
                         " sweep %s --train-each --out %s/%s-each >/dev/null",
             flags, TMP, name, TMP, name, flags, TMP, name);
    if (system(cmd) != 0) fail_msg("failed: %s", cmd);
    snprintf(each, sizeof each, "%s-each", name);
    expect_same_files(name, each);
}

/* The sweep's header (TMP/NAME.out) holds `line`. */
static void expect_header(const char *name, const char *line)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s.out", TMP, name);
    char *out = slurp(path, NULL);
    assert_non_null(out);
    if (!strstr(out, line)) fail_msg("%s: no '%s' in:\n%s", name, line, out);
    free(out);
}

/* The end-to-end tests check the bellows processes, which valgrind does not look into. */
#define SKIP_UNDER_VALGRIND()                                                                      \
    do {                                                                                           \
        if (getenv("BELLOWS_VALGRIND")) skip();                                                    \
    } while (0)

static void test_priced_runs_are_the_trained_runs_with_the_fast_replay(void **state)
{
    (void)state;
    SKIP_UNDER_VALGRIND();
    char flags[2048];
    snprintf(flags, sizeof flags,
             SMALL
             " --collectives analytic --bandwidth 1Gbps,10Gbps --latency 1us,50us "
             "--epochs 3 --lr-schedule step --lr-decay-epochs 2 --lr-decay-factor 0.6 "
             "--policies sync,static:level=1,accordion:interval=1,accordion:mode=batch,switch=1,"
             "cpsgd:period=4,postlocal,adacomm,adpsgd,%s",
             PLUGIN_NETAWARE);
    expect_priced_as_trained("fast", flags);
    /* 8 blind policies once each, netaware (it reads the bandwidth) at all 4 points */
    expect_header("fast", "# 12 trainings, 24 scenarios priced by replaying their training's "
                          "trace (the fast replay)");
    expect_header("fast", "netaware.so may see the price");
}

static void test_priced_runs_are_the_trained_runs_with_the_actors(void **state)
{
    (void)state;
    SKIP_UNDER_VALGRIND();
    /* a workload, costed with and without DDP's overlap, a straggler and jitter: the actors
     * price them, and every step is reduced in rank order, so overlap none and ddp share one
     * training */
    expect_priced_as_trained("actors",
                             SMALL " --epochs 2 --collectives analytic --workload resnet18-cifar "
                                   "--overlap none,ddp --bandwidth 1Gbps,10Gbps --slowdown 1.5 "
                                   "--compute-jitter 0.2 "
                                   "--policies sync,static:level=1,accordion,adpsgd");
    expect_header("actors", "# 4 trainings, 12 scenarios priced by replaying their training's "
                            "trace (the actors: --compute-jitter makes the workers differ)");
    /* a transfer-level ring and halving-doubling add in different orders: trained apart (at
     * the roofline, where a step is not costed: a costed step reduces in rank order) */
    expect_priced_as_trained("transfer", SMALL " --epochs 2 --allreduce ring,halving-doubling "
                                               "--bandwidth 1Gbps,10Gbps --costs ideal "
                                               "--policies sync,static:level=1");
    expect_header("transfer", "# 4 trainings, 4 scenarios priced by replaying their training's "
                              "trace (the actors: --collectives transfer simulates every message)");
}

static void test_a_training_that_does_not_complete_leaves_its_scenarios_to_train(void **state)
{
    (void)state;
    SKIP_UNDER_VALGRIND();
    /* lr 10 diverges in its first steps */
    expect_priced_as_trained("diverged", SMALL " --epochs 2 --collectives analytic --lr 10 "
                                               "--bandwidth 1Gbps,10Gbps --policies sync");
    expect_header("diverged", "# 1 scenario(s) to train after all");
    /* the closing line books the second phase as what it was, not as pricing */
    expect_header("diverged", " for 1 training(s) after all and 0 priced run(s))");
}

/* Across islands the WAN is a price: a price-blind policy trains once and its other WAN
 * scenarios replay its trace on the actors (transfer-level and analytic collectives, each its own
 * sum order), writing the files of --train-each; so does a policy whose outer exchanges overlap
 * inner steps (Streaming DiLoCo's tau > 0, eager updates): the actors' replay prices the overlap
 * on its outer lanes as the live run does (sim/driver/outer_lane.c). */
static void test_wan_scenarios_are_priced_on_islands(void **state)
{
    (void)state;
    SKIP_UNDER_VALGRIND();
    expect_priced_as_trained(
        "islands", "--train-samples 1024 --test-samples 100 --workers 4 --batch 16 " DATA " "
                   "--epochs 1 --hidden 16 --seeds 1 --no-plots --quiet -j 2 "
                   "--topology islands --islands 2 --collectives transfer,analytic "
                   "--wan-bandwidth 1Gbps,50Mbps --wan-latency 30ms,5ms "
                   "--policies diloco:H=4,streaming-diloco:H=4,bits=4,sync,"
                   "streaming-diloco:H=4,fragments=2,tau=1,diloco:H=4,eager=1");
    /* the 5 policies once per collectives (sum order), the overlapping ones too */
    expect_header("islands", "# 10 trainings, 30 scenarios priced by replaying their training's "
                             "trace (the actors: ");
    /* islands' replicas are their own dynamics: a sweep over the topology trains them apart */
    expect_priced_as_trained(
        "topologies", "--train-samples 1024 --test-samples 100 --workers 4 --batch 16 " DATA " "
                      "--epochs 1 --hidden 16 --seeds 1 --no-plots --quiet -j 2 "
                      "--topology star,islands,fat-tree --bandwidth 1Gbps,10Gbps "
                      "--policies diloco:H=4,sync");
    expect_header("topologies", "# 4 trainings, 8 scenarios priced");
    /* bytes: the WAN's when every point is on islands (issue 49 item 33), all of them across
     * topologies */
    char path[256];
    snprintf(path, sizeof path, "%s/islands/sweep.csv", TMP);
    char *csv = slurp(path, NULL);
    assert_non_null(csv);
    assert_non_null(strstr(csv, ",speedup,wan_bytes_per_worker,wan_bytes_ratio,sim_time_s,"));
    free(csv);
    snprintf(path, sizeof path, "%s/topologies/sweep.csv", TMP);
    csv = slurp(path, NULL);
    assert_non_null(csv);
    assert_non_null(strstr(csv, ",speedup,bytes_per_worker,bytes_ratio,sim_time_s,"));
    free(csv);
}

/* With --stop-at-target a group trains once to the end for its trace, and every scenario of it
 * (the trainer's own too) is a replay cut at its target: the files of --train-each, with the
 * fast replay and with the actors; the header says so, and no scenario trains after all. */
static void test_a_sweep_stopped_at_the_target_still_trains_once(void **state)
{
    (void)state;
    SKIP_UNDER_VALGRIND();
    expect_priced_as_trained("stopped", SMALL " --epochs 2 --collectives analytic --stop-at-target "
                                              "--bandwidth 1Gbps,10Gbps --policies sync,accordion");
    expect_header("stopped", "# 2 trainings, 4 scenarios priced by replaying their training's "
                             "trace (the fast replay)");
    expect_header("stopped", "# --stop-at-target: each such training runs to the end");
    char path[256];
    snprintf(path, sizeof path, "%s/stopped.out", TMP);
    char *out = slurp(path, NULL);
    assert_null(strstr(out, "to train after all"));
    assert_non_null(strstr(out, " training, ")); /* the closing line books both phases */
    assert_non_null(strstr(out, " pricing)"));
    free(out);
    expect_priced_as_trained("stopped-actors",
                             SMALL " --epochs 2 --collectives analytic --stop-at-target "
                                   "--workload resnet18-cifar --bandwidth 1Gbps,10Gbps "
                                   "--compute-jitter 0.2 --policies sync,static:level=1");
    expect_header("stopped-actors", "# 2 trainings, 4 scenarios priced by replaying their "
                                    "training's trace (the actors");
}

/* Copies TMP/from to TMP/to, keeping the header and the first `rows` rows of its sweep.csv. */
static void copy_cut(const char *from, const char *to, int rows)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "cp -r %s/%s %s/%s && head -n %d %s/%s/sweep.csv > %s/%s/sweep.csv",
             TMP, from, TMP, to, rows + 1, TMP, from, TMP, to);
    assert_int_equal(system(cmd), 0);
}

/* Resumes TMP/name's sweep (its output in TMP/name.out); then its files must equal TMP/whole's. */
static void resume_equals(const char *name, const char *flags, const char *whole)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, BELLOWS_BIN " sweep %s --resume --out %s/%s >%s/%s.out", flags, TMP,
             name, TMP, name);
    if (system(cmd) != 0) fail_msg("failed: %s", cmd);
    expect_same_files(name, whole);
}

#define RESUMED                                                                                    \
    SMALL " --epochs 2 --collectives analytic --bandwidth 1Gbps,10Gbps --policies sync,adacomm"

static void test_a_resumed_sweep_trains_only_what_it_is_missing(void **state)
{
    (void)state;
    SKIP_UNDER_VALGRIND();
    char cmd[2048];
    snprintf(cmd, sizeof cmd, BELLOWS_BIN " sweep " RESUMED " --out %s/whole >/dev/null", TMP);
    assert_int_equal(system(cmd), 0);
    /* the priced runs (the second point's) were lost: the traces price them again */
    copy_cut("whole", "lost", 2);
    resume_equals("lost", RESUMED, "whole");
    expect_header("lost", "# this invocation: 0 trainings (and 0 more for the traces of its "
                          "priced runs), 2 priced");
    /* and without the traces: trained again for their traces only */
    copy_cut("whole", "untraced", 2);
    snprintf(cmd, sizeof cmd, "rm -r %s/untraced/traces", TMP);
    assert_int_equal(system(cmd), 0);
    resume_equals("untraced", RESUMED, "whole");
    expect_header("untraced", "# this invocation: 0 trainings (and 2 more for the traces of its "
                              "priced runs), 2 priced");
}

static void test_a_shard_trains_only_the_groups_it_needs(void **state)
{
    (void)state;
    SKIP_UNDER_VALGRIND();
    /* runs 0-2 at 1Gbps and 3-5 at 10Gbps; shard 1 has 0, 2 and 4 (whose training is run 1),
     * shard 2 has 1, 3 and 5 (whose trainings are runs 0 and 2) */
    const char *flags = SMALL " --epochs 2 --collectives analytic --bandwidth 1Gbps,10Gbps "
                              "--policies sync,static:level=1,cpsgd:period=4";
    char cmd[4096], name[32];
    for (int k = 1; k <= 2; k++) {
        snprintf(name, sizeof name, "shard%d", k);
        snprintf(cmd, sizeof cmd, BELLOWS_BIN " sweep %s --shard %d/2 --out %s/%s >%s/%s.out",
                 flags, k, TMP, name, TMP, name);
        assert_int_equal(system(cmd), 0);
    }
    expect_header("shard1", "# this invocation: 2 trainings (and 1 more for the traces of its "
                            "priced runs), 1 priced");
    expect_header("shard2", "# this invocation: 1 training (and 2 more for the traces of its "
                            "priced runs), 2 priced");
    /* merged, they are the whole sweep trained run by run (the folder column names the shard) */
    snprintf(cmd, sizeof cmd,
             BELLOWS_BIN " merge --out %s/merged %s/shard1 %s/shard2 >/dev/null && " BELLOWS_BIN
                         " sweep %s --train-each --out %s/each >/dev/null && "
                         "cut -d, -f1-3,5- %s/merged/sweep.csv > %s/m.csv && "
                         "cut -d, -f1-3,5- %s/each/sweep.csv > %s/e.csv && cmp %s/m.csv %s/e.csv",
             TMP, TMP, TMP, flags, TMP, TMP, TMP, TMP, TMP, TMP, TMP);
    assert_int_equal(system(cmd), 0);
}

/* compare (and replay) run one scenario: a list of a price flag's values points to sweep, with
 * exit status 2, one line, and nothing written. */
static void test_compare_refuses_a_list_of_scenarios_and_names_sweep(void **state)
{
    (void)state;
    const char *bad[] = {"compare --bandwidth 1Gbps,10Gbps", "compare --latency=1us,5us",
                         "compare --workload resnet50,vgg16", "replay --trace x --gpu V100,A100"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char cmd[1024], path[256];
        snprintf(cmd, sizeof cmd, BELLOWS_BIN " %s --out %s/one >/dev/null 2>%s/one.err", bad[i],
                 TMP, TMP);
        int st = system(cmd);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 2) fail_msg("'%s': status %d", bad[i], st);
        snprintf(path, sizeof path, "%s/one.err", TMP);
        char *e = slurp(path, NULL);
        assert_non_null(e);
        if (count_lines(e) != 1 || !strstr(e, "runs one scenario; for several, bellows sweep"))
            fail_msg("'%s': %s", bad[i], e);
        free(e);
        snprintf(path, sizeof path, "%s/one", TMP);
        assert_false(file_exists(path));
    }
}

/* Two policies' own traces (tests/data/own/: PyTorch's MLP on 4 emulated workers, 16 steps,
 * sync and PowerSGD rank 1, recorded by traces/pytorch/train_policy.py) */
#define OWN_SYNC   BELLOWS_SOURCE_DIR "/tests/data/own/mlp-sync-4w.jsonl.gz"
#define OWN_STATIC BELLOWS_SOURCE_DIR "/tests/data/own/mlp-static-4w.jsonl.gz"

/* `bellows CMD` exits 2 with `needle` on stderr, and TMP/bad is not written. */
static void expect_refused(const char *cmd_flags, const char *needle)
{
    char cmd[4096], path[256];
    snprintf(cmd, sizeof cmd, BELLOWS_BIN " %s --out %s/bad >/dev/null 2>%s/bad.err", cmd_flags,
             TMP, TMP);
    int st = system(cmd);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 2) fail_msg("'%s': status %d", cmd_flags, st);
    snprintf(path, sizeof path, "%s/bad.err", TMP);
    char *e = slurp(path, NULL);
    assert_non_null(e);
    if (!strstr(e, needle)) fail_msg("'%s': no '%s' in: %s", cmd_flags, needle, e);
    free(e);
    snprintf(path, sizeof path, "%s/bad", TMP);
    assert_false(file_exists(path));
}

/* sweep --traces prices each policy's own trace in every scenario: every cell of sweep.csv
 * (status to steps) is that of compare --traces at the cell's scenario, exactly; traces of
 * different experiments, or the policies given besides, are refused with nothing written. */
static void test_sweep_traces_prices_each_own_trace_as_compare_does(void **state)
{
    (void)state;
    SKIP_UNDER_VALGRIND();
    const char *bw[] = {"1Gbps", "10Gbps"};
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             BELLOWS_BIN " sweep --traces " OWN_SYNC "," OWN_STATIC " --bandwidth %s,%s "
                         "--no-plots --quiet --out %s/own >%s/own.out",
             bw[0], bw[1], TMP, TMP);
    assert_int_equal(system(cmd), 0);
    expect_header("own", "own traces: each policy's accuracy is that of its own recorded run");
    for (int i = 0; i < 2; i++) {
        snprintf(cmd, sizeof cmd,
                 BELLOWS_BIN " compare --traces " OWN_SYNC "," OWN_STATIC " --bandwidth %s "
                             "--no-plots --quiet --out %s/own-%s >/dev/null && "
                             "grep '^%s,' %s/own/sweep.csv | cut -d, -f3,5-17 > %s/s.csv && "
                             "tail -n +2 %s/own-%s/compare.csv | cut -d, -f1,3-15 | tr -d '\"' "
                             "> %s/c.csv && [ $(wc -l < %s/s.csv) = 2 ] && cmp %s/s.csv %s/c.csv",
                 bw[i], TMP, bw[i], bw[i], TMP, TMP, TMP, bw[i], TMP, TMP, TMP, TMP);
        if (system(cmd) != 0) fail_msg("%s: the sweep's cells are not compare's", bw[i]);
    }
    /* the two policies' own accuracies, not one shared trace's */
    snprintf(cmd, sizeof cmd, "[ $(cut -d, -f6 %s/own/sweep.csv | sort -u | wc -l) = 3 ]", TMP);
    assert_int_equal(system(cmd), 0);
    /* and the files and plots say so, not "the trace's, the same for every policy" (issue 49,
     * item 34) */
    snprintf(cmd, sizeof cmd,
             "grep -q '\"accuracy_source\": \"own trace\"' %s/own-1Gbps/seed-1/1-sync/summary.json",
             TMP);
    assert_int_equal(system(cmd), 0);
    snprintf(cmd, sizeof cmd,
             "command -v gnuplot >/dev/null || exit 0; " BELLOWS_BIN " plot %s/own-1Gbps "
             ">/dev/null && grep -q \"each policy's own recorded run\" "
             "%s/own-1Gbps/accuracy_vs_time.svg && ! grep -q 'same for every policy' "
             "%s/own-1Gbps/*.svg",
             TMP, TMP, TMP);
    assert_int_equal(system(cmd), 0);
    snprintf(cmd, sizeof cmd,
             "zcat " OWN_STATIC " | sed '1s/\"workers\":4/\"workers\":2/' | gzip > %s/w2.gz", TMP);
    assert_int_equal(system(cmd), 0);
    snprintf(cmd, sizeof cmd, "sweep --traces " OWN_SYNC ",%s/w2.gz --bandwidth 1Gbps,10Gbps", TMP);
    expect_refused(cmd, "w2.gz: \"workers\" is 2, but " OWN_SYNC "'s is 4");
    /* a step's "bytes" is checked against what its decision sends (4752 for rank 1 at these
     * levels; an averaging 4 bytes a parameter): another figure is refused at its line */
    snprintf(cmd, sizeof cmd,
             "zcat " OWN_STATIC " | sed '3s/\"bytes\":4752/\"bytes\":1e15/' | gzip > %s/b.gz", TMP);
    assert_int_equal(system(cmd), 0);
    snprintf(cmd, sizeof cmd, "compare --traces " OWN_SYNC ",%s/b.gz", TMP);
    expect_refused(cmd, "b.gz:3: \"bytes\": 1000000000000000, but the decision sends 4752");
    /* a missing file is named under its flag, --traces */
    char needle[256];
    snprintf(cmd, sizeof cmd, "compare --traces " OWN_SYNC ",%s/nosuch.gz", TMP);
    snprintf(needle, sizeof needle, "--traces %s/nosuch.gz: ", TMP);
    expect_refused(cmd, needle);
    expect_refused("compare --traces " OWN_SYNC " --compressor topk",
                   "--compressor: compare --traces takes each policy's compressor from its trace");
    expect_refused("sweep --traces " OWN_SYNC " --compressor topk,powersgd",
                   "--compressor: sweep --traces takes each policy's compressor from its trace");
    expect_refused("sweep --traces " OWN_SYNC " --policies sync --bandwidth 1Gbps,10Gbps",
                   "--policies: sweep --traces takes the policies and seeds from the traces");
}

static int group_setup(void **state)
{
    (void)state;
    assert_int_equal(chdir(TMP), 0);
    smalldata_write("fmnist", 1024, 200);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1) cmocka_set_test_filter(argv[1]); /* run one test alone */
    make_tmpdir(TMP, sizeof TMP);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_flag_of_the_simulating_commands_has_a_class),
        cmocka_unit_test(test_priced_runs_are_the_trained_runs_with_the_fast_replay),
        cmocka_unit_test(test_priced_runs_are_the_trained_runs_with_the_actors),
        cmocka_unit_test(test_a_training_that_does_not_complete_leaves_its_scenarios_to_train),
        cmocka_unit_test(test_wan_scenarios_are_priced_on_islands),
        cmocka_unit_test(test_a_sweep_stopped_at_the_target_still_trains_once),
        cmocka_unit_test(test_a_resumed_sweep_trains_only_what_it_is_missing),
        cmocka_unit_test(test_a_shard_trains_only_the_groups_it_needs),
        cmocka_unit_test(test_compare_refuses_a_list_of_scenarios_and_names_sweep),
        cmocka_unit_test(test_sweep_traces_prices_each_own_trace_as_compare_does),
    };
    int rc = cmocka_run_group_tests(tests, group_setup, NULL);
    rm_tree(TMP);
    return rc;
}
