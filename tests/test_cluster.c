/* test_cluster.c: bellows cluster, several jobs in one engine, end to end on a slice of the real
 * Fashion-MNIST. One job is `bellows run` of the same flags, file for file; two identical jobs
 * whose rings cross one oversubscribed uplink each take the ring's closed form at half the
 * bandwidth (1e-6) while alone they take it at the full, and jobs packed on leaves of their own
 * keep the full; a job that starts later starts its clock at its start, and its neighbour's steps
 * before that are the neighbour's alone; the links' bytes are the messages'; --set changes the
 * key it names; the same command writes the same files; a priced job's closed form prices its
 * ring's hops as placed (spread over switches it would fit one of, or never under one switch).
 * (Refusals: test_cluster_file.c.) */
#include "testutil.h"

#include <jansson.h>

#include "clitest.h"

/* The data and schedule every job of these tests uses: 2048 images, one epoch. */
#define SMALL  "\"epochs\": 1, \"train_samples\": 2048, \"test_samples\": 500"
#define BW_BPS (10e9 / 8)
#define LAT_S  5e-6
/* A fat-tree of leaves of 2 GPUs whose uplink carries one GPU's rate (oversubscription 2). */
#define FABRIC                                                                                     \
    "\"topology\": \"fat-tree\", \"leaf_size\": 2, \"oversubscription\": 2, \"workers\": 8, "      \
    "\"bandwidth\": \"10Gbps\", \"latency\": \"5us\""
/* A synchronous job of 2 dense workers, uncosted (the ring's time is the step's communication). */
#define JOB(name, extra)                                                                           \
    "{\"name\": \"" name "\", \"workers\": 2, " SMALL ", \"policy\": \"sync\", \"compressor\": "   \
    "\"none\", \"costs\": \"ideal\"" extra "}"

/* A 2-worker job priced as ResNet-18, its steps sent by schedule `sched`. */
#define SCHED(name, sched, extra)                                                                  \
    "{\"name\": \"" name "\", \"workers\": 2, " SMALL ", \"workload\": \"resnet18-cifar\", "       \
    "\"schedule\": \"" sched "\", \"costs\": \"ideal\"" extra "}"

/* Column `name` of a CSV file under TMP, every row's, as numbers; returns the row count. */
static int csv_column_of(const char *file, const char *name, double *out, int max)
{
    char *text = tmp_file(file);
    if (!text) fail_msg("%s/%s missing", TMP, file);
    char *save = NULL, *line = strtok_r(text, "\n", &save);
    int col = -1, n = 0, k = 0;
    for (char *f = line; f && col < 0; f = strchr(f, ','), f = f ? f + 1 : NULL, k++)
        if (strncmp(f, name, strlen(name)) == 0 && (f[strlen(name)] == ',' || !f[strlen(name)]))
            col = k;
    if (col < 0) fail_msg("%s has no column %s", file, name);
    while ((line = strtok_r(NULL, "\n", &save)) && n < max) {
        const char *f = line;
        for (int i = 0; i < col && f; i++) f = strchr(f, ',') ? strchr(f, ',') + 1 : NULL;
        out[n++] = f ? strtod(f, NULL) : NAN;
    }
    free(text);
    return n;
}

/* The ring allreduce of n bytes over p ranks whose routes cross `links` links of LAT_S each and
 * a bottleneck of Bps (Patarasuk and Yuan; REFERENCES.md): 2 (p - 1) (links a + (n / p) / B). */
static double ring_s(double n, int p, int links, double Bps)
{
    return 2.0 * (p - 1) * (links * LAT_S + n / p / Bps);
}

/* Every step's communication time of job dir (steps.csv, rank 0's) equals want, to 1e-6. */
static void steps_take(const char *dir, double want)
{
    char file[256];
    double comm[512];
    snprintf(file, sizeof file, "%s/steps.csv", dir);
    int n = csv_column_of(file, "communication_s", comm, 512);
    assert_true(n > 10);
    for (int i = 0; i < n; i++)
        if (fabs(comm[i] - want) > 1e-6 * want)
            fail_msg("%s: step %d communicated %.9g s, the closed form %.9g", dir, i, comm[i],
                     want);
}

/* The fp32 gradient's bytes of the run in TMP/dir. */
static double grad_bytes(const char *dir)
{
    return 4 * summary_num(dir, "n_params");
}

/* cluster.json under TMP/dir, parsed. */
static json_t *cluster_json(const char *dir)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s/cluster.json", TMP, dir);
    json_error_t e;
    json_t *root = json_load_file(path, 0, &e);
    if (!root) fail_msg("%s: %s", path, e.text);
    return root;
}

static double job_num(const json_t *root, int j, const char *key)
{
    const json_t *v =
        json_object_get(json_array_get(json_object_get(root, "jobs"), (size_t)j), key);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

/* text without its lines that hold "wall_s" or "command" (the wall clock, the command's name),
 * in place. */
static char *without_wall(char *text)
{
    char *out = text;
    for (char *line = text; *line;) {
        char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line + 1) : strlen(line);
        char keep[4096];
        snprintf(keep, sizeof keep, "%.*s", (int)(len < sizeof keep ? len : sizeof keep - 1), line);
        if (!strstr(keep, "\"wall_s\"") && !strstr(keep, "\"command\"")) {
            memmove(out, line, len);
            out += len;
        }
        line += len;
    }
    *out = '\0';
    return text;
}

/* Two files under TMP equal byte for byte, but for their wall-clock and command lines. */
static void same_file(const char *a, const char *b)
{
    char *x = tmp_file(a), *y = tmp_file(b);
    if (!x || !y) fail_msg("%s/%s or %s missing", TMP, a, b);
    if (strcmp(without_wall(x), without_wall(y)) != 0) fail_msg("%s/%s and %s differ", TMP, a, b);
    free(x);
    free(y);
}

static void same_run(const char *a, const char *b)
{
    const char *files[] = {"summary.json", "evals.csv", "steps.csv"};
    for (int i = 0; i < 3; i++) {
        char fa[256], fb[256];
        snprintf(fa, sizeof fa, "%s/%s", a, files[i]);
        snprintf(fb, sizeof fb, "%s/%s", b, files[i]);
        same_file(fa, fb);
    }
}

/* The runs in TMP/a and TMP/b have the same figures to 1e-8: simulated times, books, bytes,
 * every step's end and loss. (Jobs that share no link still differ from alone in the last
 * digits: SimGrid brings every flow's remaining bytes up to date, in floating point, at each
 * event of the engine, and the other jobs add events: p3's 160 KB slices of ResNet-18 beside two
 * other jobs drifted 1.3e-9 of a run. Sharing a link changes the times by far more.) */
static void close_run(const char *a, const char *b)
{
    const char *keys[] = {"sim_time_s", "compute_s",        "communication_s",
                          "wait_s",     "bytes_per_worker", "final_test_accuracy"};
    for (size_t k = 0; k < sizeof keys / sizeof *keys; k++) {
        double x = summary_num(a, keys[k]), y = summary_num(b, keys[k]);
        if (!(fabs(x - y) <= 1e-8 * fabs(y)))
            fail_msg("%s: %s %.17g, %s: %.17g", a, keys[k], x, b, y);
    }
    const char *cols[] = {"end_s", "loss"};
    for (int c = 0; c < 2; c++) {
        double x[512], y[512];
        char fa[256], fb[256];
        snprintf(fa, sizeof fa, "%s/steps.csv", a);
        snprintf(fb, sizeof fb, "%s/steps.csv", b);
        int n = csv_column_of(fa, cols[c], x, 512);
        assert_int_equal(csv_column_of(fb, cols[c], y, 512), n);
        for (int i = 0; i < n; i++) assert_true(fabs(x[i] - y[i]) <= 1e-8 * fabs(y[i]));
    }
}

/* In a merged timeline every thread of a job's process is one lane of one worker: a thread named
 * twice would draw two workers' events (a parameter server's schedule has 17 lanes) as one. */
static void threads_apart(const char *file)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", TMP, file);
    json_error_t e;
    json_t *root = json_load_file(path, 0, &e);
    if (!root) fail_msg("%s: %s", path, e.text);
    const json_t *events = json_object_get(root, "traceEvents");
    size_t i, k, named = 0;
    json_t *a, *b;
    json_array_foreach(events, i, a)
    {
        if (strcmp(json_string_value(json_object_get(a, "name")), "thread_name") != 0) continue;
        named++;
        json_array_foreach(events, k, b)
        {
            if (k <= i || strcmp(json_string_value(json_object_get(b, "name")), "thread_name"))
                continue;
            if (json_equal(json_object_get(a, "pid"), json_object_get(b, "pid")) &&
                json_equal(json_object_get(a, "tid"), json_object_get(b, "tid")))
                fail_msg("%s: one thread named %s and %s", file,
                         json_dumps(json_object_get(a, "args"), 0),
                         json_dumps(json_object_get(b, "args"), 0));
        }
    }
    assert_true(named > 6 * 3); /* 3 jobs of 2 workers, compute and lanes */
    json_decref(root);
}

/* One job in cluster equals bellows run of the same flags: an uncosted ring, and a costed step
 * (a workload, DDP's overlap with its stream actors, the default cost profile). */
static void test_one_job_is_a_run(void **state)
{
    (void)state;
    write_tmp("one.json", "{\"bandwidth\": \"10Gbps\", \"jobs\": [{\"name\": \"a\", \"workers\": "
                          "4, " SMALL ", \"policy\": \"accordion\", \"compressor\": \"topk\"}]}");
    assert_int_equal(bw("cluster @/one.json --out @/c1 --alone none"), 0);
    /* the job stops short of the 0.85 target and runs with no twin alone: its table says "-" and
     * why, never nan (issue 49, item 39) */
    char *out = tmp_file("stdout");
    assert_non_null(out);
    assert_null(strstr(out, "nan"));
    assert_non_null(strstr(out, "1 of 1 job(s) never reached their target accuracy"));
    assert_non_null(strstr(out, "--alone none ran no job alone"));
    free(out);
    /* a job evaluates as compare's runs (steps an epoch / 20, at least 1) */
    assert_int_equal(bw("run --bandwidth 10Gbps --workers 4 --epochs 1 --train-samples 2048 "
                        "--test-samples 500 --policy accordion --compressor topk --eval-every 1 "
                        "--out @/r1"),
                     0);
    same_run("c1/jobs/a", "r1");
    write_tmp("ddp.json", "{\"topology\": \"fat-tree\", \"oversubscription\": 2, \"jobs\": "
                          "[{\"name\": \"a\", \"workers\": 8, " SMALL
                          ", \"workload\": \"resnet18-cifar\", \"compressor\": \"powersgd\"}]}");
    assert_int_equal(bw("cluster @/ddp.json --out @/c2 --alone none"), 0);
    assert_int_equal(bw("run --topology fat-tree --oversubscription 2 --workers 8 --epochs 1 "
                        "--train-samples 2048 --test-samples 500 --workload resnet18-cifar "
                        "--compressor powersgd --eval-every 1 --out @/r2"),
                     0);
    same_run("c2/jobs/a", "r2");
    /* cluster.json names what ran, as each job's summary.json: accordion's topk; sync (the
     * default policy) sends no compressor's output, whatever the job's "compressor" */
    const char *want[2] = {"topk", "none"};
    for (int k = 0; k < 2; k++) {
        json_t *root = cluster_json(k ? "c2" : "c1");
        const json_t *job = json_array_get(json_object_get(root, "jobs"), 0);
        assert_string_equal(json_string_value(json_object_get(job, "compressor")), want[k]);
        json_decref(root);
    }
}

/* Two identical jobs whose rings cross the leaves' uplinks, which carry one GPU's rate: every
 * collective takes the ring's closed form at half the bandwidth, alone at the full; contention
 * took the difference; each uplink carried both jobs' bytes, never above its rate. */
static void test_shared_uplink_halves_the_bandwidth(void **state)
{
    (void)state;
    write_tmp("two.json", "{" FABRIC ", \"jobs\": [" JOB("a", ", \"hosts\": [0, 2]") ", " JOB(
                              "b", ", \"hosts\": [1, 3]") "]}");
    assert_int_equal(bw("cluster @/two.json --out @/two"), 0);
    const double n = grad_bytes("two/jobs/a");
    const double shared = ring_s(n, 2, 4, BW_BPS / 2), alone = ring_s(n, 2, 4, BW_BPS);
    steps_take("two/jobs/a", shared);
    steps_take("two/jobs/b", shared);
    steps_take("two/alone/a", alone);
    steps_take("two/alone/b", alone);
    json_t *root = cluster_json("two");
    for (int j = 0; j < 2; j++)
        assert_true(fabs(job_num(root, j, "contention_share") - (1 - alone / shared)) < 1e-6);
    const json_t *links = json_object_get(root, "links");
    const double sent = summary_num("two/jobs/a", "bytes_per_worker") +
                        summary_num("two/jobs/b", "bytes_per_worker");
    const char *busiest = json_string_value(json_object_get(json_array_get(links, 0), "link"));
    assert_true(strncmp(busiest, "up", 2) == 0); /* an uplink: both jobs' rank 0 and 1 cross it */
    const double up = json_number_value(json_object_get(json_array_get(links, 0), "bytes"));
    assert_true(fabs(up - sent) <= 1e-9 * sent);
    for (size_t i = 0; i < json_array_size(links); i++)
        assert_true(json_number_value(
                        json_object_get(json_array_get(links, i), "peak_utilisation")) <= 1 + 1e-6);
    json_decref(root);
    /* the same command, the same files */
    assert_int_equal(bw("cluster @/two.json --out @/again"), 0);
    same_run("two/jobs/a", "again/jobs/a");
    same_file("two/links.csv", "again/links.csv");
    same_file("two/cluster.json", "again/cluster.json");
}

/* Packed jobs on leaves of their own share no link: full speed, their files those alone. The
 * second is another job (a softmax through TopK's allgathers, whose messages differ): each job's
 * messages reach its own ranks only; so do a scheduled job's lanes and servers. */
static void test_packed_jobs_apart_keep_full_speed(void **state)
{
    (void)state;
    write_tmp("packed.json",
              "{" FABRIC ", \"jobs\": [" JOB(
                  "a", "") ", {\"name\": \"b\", \"workers\": 2, " SMALL
                           ", \"model\": \"softmax\", \"compressor\": \"topk\", \"policy\": "
                           "\"static:level=0.1\", \"costs\": \"ideal\"}]}");
    assert_int_equal(bw("cluster @/packed.json --out @/packed"), 0);
    steps_take("packed/jobs/a", ring_s(grad_bytes("packed/jobs/a"), 2, 2, BW_BPS)); /* a leaf's */
    same_run("packed/jobs/a", "packed/alone/a");
    same_run("packed/jobs/b", "packed/alone/b");
    json_t *root = cluster_json("packed");
    for (int j = 0; j < 2; j++) {
        assert_true(fabs(job_num(root, j, "contention_share")) < 1e-9);
        assert_true(fabs(job_num(root, j, "slowdown") - 1) < 1e-9);
    }
    json_decref(root);
    /* on a star no two jobs share a link: ResNet-18's costs sent by three schedules' lanes (a
     * communicator each, their job's mailbox names), two rings and parameter servers (actors on
     * the job's GPUs) */
    write_tmp("star.json",
              "{\"bandwidth\": \"10Gbps\", \"jobs\": [" SCHED("a", "p3", "") ", " SCHED(
                  "c", "bytescheduler",
                  ", \"allreduce\": \"ps\"") ", " SCHED("d", "tictac", ", \"seed\": 2") "]}");
    assert_int_equal(bw("cluster @/star.json --out @/star --timeline --timeline-steps 0:1"), 0);
    threads_apart("star/timeline.json");
    close_run("star/jobs/a", "star/alone/a");
    close_run("star/jobs/c", "star/alone/c");
    close_run("star/jobs/d", "star/alone/d");
    root = cluster_json("star");
    double links = 0, sent = 0;
    for (size_t i = 0; i < json_array_size(json_object_get(root, "links")); i++)
        links += json_number_value(
            json_object_get(json_array_get(json_object_get(root, "links"), i), "bytes"));
    for (int j = 0; j < 3; j++) sent += job_num(root, j, "bytes_per_worker");
    /* links.csv keeps the 8 busiest of the 12 directions: each job's rank 0 and 1 send what
     * rank 0 does, over two links each (its NIC out, the peer's in) */
    assert_true(links > 0 && links <= 2 * 2 * sent * (1 + 1e-9));
    json_decref(root);
}

/* A job that starts after its neighbour has ended runs as it does alone, from its start: the
 * same steps and accuracies, its times its own (1e-9), its first slice at its start in the
 * timeline. One that starts midway leaves its neighbour's earlier steps as they are alone, and
 * slows the later ones. */
static void test_a_later_job_starts_at_its_start(void **state)
{
    (void)state;
    write_tmp("late.json", "{" FABRIC ", \"jobs\": [" JOB("a", ", \"hosts\": [0, 2]") ", " JOB(
                               "b", ", \"hosts\": [1, 3], \"start_s\": 1.5") "]}");
    assert_int_equal(bw("cluster @/late.json --out @/late --timeline"), 0);
    same_run("late/jobs/a", "late/alone/a");
    double shared[512], alone[512];
    int n = csv_column_of("late/jobs/b/steps.csv", "end_s", shared, 512);
    assert_int_equal(csv_column_of("late/alone/b/steps.csv", "end_s", alone, 512), n);
    for (int i = 0; i < n; i++) assert_true(fabs(shared[i] - alone[i]) <= 1e-9 * alone[i]);
    json_t *root = cluster_json("late");
    assert_true(fabs(job_num(root, 1, "end_s") - 1.5 - summary_num("late/jobs/b", "sim_time_s")) <
                1e-12);
    json_decref(root);
    char *tl = tmp_file("late/timeline.json");
    assert_non_null(tl);
    /* job b is process 1; its first compute slice starts at 1.5 s = 1500000 us */
    assert_non_null(strstr(tl, "\"pid\":1,\"tid\":0,\"ts\":1500000.0,"));
    assert_null(strstr(tl, "\"pid\":1,\"tid\":0,\"ts\":1499"));
    free(tl);

    const double start = 0.003; /* about halfway through a's run */
    write_tmp("mid.json", "{" FABRIC ", \"jobs\": [" JOB("a", ", \"hosts\": [0, 2]") ", " JOB(
                              "b", ", \"hosts\": [1, 3], \"start_s\": 0.003") "]}");
    assert_int_equal(bw("cluster @/mid.json --out @/mid"), 0);
    double comm_s[512], comm_alone[512];
    n = csv_column_of("mid/jobs/a/steps.csv", "end_s", shared, 512);
    csv_column_of("mid/jobs/a/steps.csv", "communication_s", comm_s, 512);
    csv_column_of("mid/alone/a/steps.csv", "end_s", alone, 512);
    csv_column_of("mid/alone/a/steps.csv", "communication_s", comm_alone, 512);
    int before = 0, slower = 0;
    for (int i = 0; i < n; i++) {
        if (shared[i] <= start) {
            assert_true(shared[i] == alone[i] && comm_s[i] == comm_alone[i]);
            before++;
        } else if (shared[i] - comm_s[i] >= start) { /* a step that began after b's start */
            assert_true(comm_s[i] > comm_alone[i] * 1.5);
            slower++;
        }
    }
    assert_true(before > 2 && slower > 2);
}

/* Each point of TMP/sw has its plots, with every job (shared and alone) and the busiest link in
 * them; `bellows plot` on the sweep's folder draws them again. */
static void plots_of_points(void)
{
    if (system("gnuplot --version >/dev/null 2>&1") != 0) return;
    for (int round = 0; round < 2; round++) {
        for (int p = 1; p <= 2; p++) {
            char path[128];
            snprintf(path, sizeof path, "sw/points/oversubscription=%d/jobs_accuracy_vs_time.svg",
                     p);
            char *acc = tmp_file(path);
            if (!acc) fail_msg("%s/%s missing (round %d)", TMP, path, round);
            assert_non_null(strstr(acc, "<text>a alone</text>"));
            assert_non_null(strstr(acc, "<text>b</text>"));
            free(acc);
            snprintf(path, sizeof path, "sw/points/oversubscription=%d/links_utilisation.svg", p);
            char *links = tmp_file(path);
            assert_non_null(links);
            assert_non_null(strstr(links, "up0_UP"));
            free(links);
            snprintf(path, sizeof path,
                     "%s/sw/points/oversubscription=%d/jobs_accuracy_vs_time.svg", TMP, p);
            if (round == 0) assert_int_equal(unlink(path), 0);
        }
        if (round == 0) assert_int_equal(bw("plot @/sw"), 0);
    }
}

/* --set oversubscription=1,2: at 1 the uplinks carry both jobs at full speed, at 2 they halve;
 * sweep.csv has a row per point and job. */
static void test_set_sweeps_a_key(void **state)
{
    (void)state;
    write_tmp("two.json", "{" FABRIC ", \"jobs\": [" JOB("a", ", \"hosts\": [0, 2]") ", " JOB(
                              "b", ", \"hosts\": [1, 3]") "]}");
    assert_int_equal(bw("cluster @/two.json --out @/sw --set oversubscription=1,2"), 0);
    char *csv = tmp_file("sw/sweep.csv");
    assert_non_null(csv);
    assert_int_equal(count_lines(csv), 5);
    /* oversubscription, job, status, tta, sim_time, bytes, communication_s (6), alone's tta,
     * sim_time, communication_s (9) */
    double full = csv_num_at(csv, "1,a,", 6), full_alone = csv_num_at(csv, "1,a,", 9);
    double half = csv_num_at(csv, "2,b,", 6), half_alone = csv_num_at(csv, "2,b,", 9);
    assert_true(fabs(full - full_alone) <= 1e-9 * full);
    assert_true(half > 1.8 * half_alone);
    free(csv);
    steps_take("sw/points/oversubscription=1/jobs/a",
               ring_s(grad_bytes("sw/points/oversubscription=1/jobs/a"), 2, 4, BW_BPS));
    plots_of_points();
}

/* Two jobs priced as 4 GPUs (price_workers) train on 2 each, spread over leaves of 2 whose
 * uplinks carry one GPU's rate: every hop of each job's ring crosses an uplink the other job's
 * ring crosses too, so each step is the ring's closed form at 4 GPUs and half the bandwidth,
 * alone at the full; alone, the job is `bellows run --price-workers 4` (its bytes exactly, its
 * times to 1e-12: the wait is the closed form's plus the flows' delay, added in another order). */
static void test_priced_jobs_share_their_rings_uplinks(void **state)
{
    (void)state;
#define PRICED(name) JOB(name, ", \"collectives\": \"analytic\", \"price_workers\": 4")
    write_tmp("priced.json", "{" FABRIC ", \"placement\": \"spread\", \"jobs\": [" PRICED(
                                 "a") ", " PRICED("b") "]}");
#undef PRICED
    assert_int_equal(bw("cluster @/priced.json --out @/pr"), 0);
    const double n = grad_bytes("pr/jobs/a");
    steps_take("pr/jobs/a", ring_s(n, 4, 4, BW_BPS / 2));
    steps_take("pr/jobs/b", ring_s(n, 4, 4, BW_BPS / 2));
    steps_take("pr/alone/a", ring_s(n, 4, 4, BW_BPS));
    assert_int_equal(bw("run --topology fat-tree --leaf-size 2 --oversubscription 2 --bandwidth "
                        "10Gbps --latency 5us --workers 2 --price-workers 4 --collectives "
                        "analytic --epochs 1 --train-samples 2048 --test-samples 500 --policy "
                        "sync --compressor none --costs ideal --eval-every 1 --out @/pr1"),
                     0);
    assert_true(summary_num("pr/alone/a", "bytes_per_worker") ==
                summary_num("pr1", "bytes_per_worker"));
    const char *keys[] = {"sim_time_s", "communication_s"};
    for (int k = 0; k < 2; k++) {
        const double x = summary_num("pr/alone/a", keys[k]), y = summary_num("pr1", keys[k]);
        if (!(fabs(x - y) <= 1e-12 * y)) fail_msg("%s: %.17g alone, %.17g run", keys[k], x, y);
    }
    same_file("pr/alone/a/steps.csv", "pr1/steps.csv");
    json_t *root = cluster_json("pr");
    assert_true(job_num(root, 0, "price_workers") == 4);
    assert_true(job_num(root, 1, "contention_share") > 0.4);
    /* the busiest link, an uplink, carried both rings' hops across it: 2 (p-1)/p n each */
    const json_t *up = json_array_get(json_object_get(root, "links"), 0);
    const double steps = summary_num("pr/jobs/a", "steps");
    assert_true(strncmp(json_string_value(json_object_get(up, "link")), "up", 2) == 0);
    assert_true(fabs(json_number_value(json_object_get(up, "bytes")) - 2 * steps * 1.5 * n) <=
                1e-9 * n * steps);
    json_decref(root);
}

/* The ring's hops as the job was placed (sim/net/coll.c coll_comm_set_layout), not as its ranks
 * in order would sit: a job priced as 4 GPUs, spread one a leaf over leaves of 4 (GPUs 0, 4, 8,
 * 12), takes the ring's closed form over 4 links of latency a hop (nic, up, up, nic), not a
 * leaf's 2; on nodes of 2 whose intra links (1 Gbps) are slower than the NICs, spread one a node,
 * every hop crosses a NIC and none the slow links, so the closed form is the NICs', while packed
 * (hops of both kinds) it is the intra links'. Both spread jobs were priced as packed before:
 * measured 548.496 and 4896.96 us a step, the transfer level's rings of 4 so spread 608.5056 and
 * 548.5056. */
static void test_priced_job_pays_its_hops_as_placed(void **state)
{
    (void)state;
#define PRICED4 JOB("a", ", \"collectives\": \"analytic\", \"price_workers\": 4")
#define LINKS   "\"bandwidth\": \"10Gbps\", \"latency\": \"5us\", "
#define NODES                                                                                      \
    "{\"topology\": \"hierarchical\", \"gpus_per_node\": 2, \"nic_per_gpu\": true, "               \
    "\"intra_bandwidth\": \"1Gbps\", \"workers\": 8, " LINKS
    const char *file[] = {"{\"topology\": \"fat-tree\", \"leaf_size\": 4, \"workers\": 16, " LINKS
                          "\"placement\": \"spread\", \"jobs\": [" PRICED4 "]}",
                          NODES "\"placement\": \"spread\", \"jobs\": [" PRICED4 "]}",
                          NODES "\"jobs\": [" PRICED4 "]}"};
#undef PRICED4
#undef LINKS
#undef NODES
    const char *hops[] = {"across", "across", "across and inside"};
    double step_s[3];
    for (int i = 0; i < 3; i++) {
        char dir[16], cmd[96];
        snprintf(dir, sizeof dir, "lay%d", i);
        write_tmp("lay.json", file[i]);
        snprintf(cmd, sizeof cmd, "cluster @/lay.json --out @/%s --alone none", dir);
        assert_int_equal(bw(cmd), 0);
        json_t *root = cluster_json(dir);
        const json_t *job = json_array_get(json_object_get(root, "jobs"), 0);
        assert_string_equal(json_string_value(json_object_get(job, "ring_hops")), hops[i]);
        json_decref(root);
        snprintf(dir, sizeof dir, "lay%d/jobs/a", i);
        const double n = grad_bytes(dir);
        /* across: 4 links of a fat-tree, 2 NIC links; inside: 2 intra links of 1 us, 1 Gbps */
        step_s[i] =
            i < 2 ? ring_s(n, 4, i == 0 ? 4 : 2, BW_BPS) : 2.0 * 3 * (2e-6 + n / 4 / (1e9 / 8));
        steps_take(dir, step_s[i]);
    }
    assert_true(step_s[2] > 5 * step_s[1]);
}

/* Islands in a cluster (cl_place.c): two DiLoCo jobs of 4 GPUs on 2 islands of 4, each job's
 * ranks 2 per island in order. Each exchange's WAN bytes are the hierarchical closed form,
 * 2 (K-1) n over the job's ranks; the two jobs exchange at the same steps, so each island's WAN
 * link carries 4 rings (2 a job) instead of 2: each exchange's share between the islands,
 * 2 (K-1)/K (n/S) at S / W, takes 2 (K-1)/K (n/S) x 2 / W more than alone (to 1e-4: SimGrid's
 * sharing of the WAN link adds 2e-5 relative here). */
static void test_jobs_on_islands_share_the_wan(void **state)
{
    (void)state;
#define DILOCO(name)                                                                               \
    "{\"name\": \"" name "\", \"workers\": 4, " SMALL ", \"policy\": \"diloco:h=4\", "             \
    "\"compressor\": \"none\", \"costs\": \"ideal\"}"
    write_tmp("isl.json",
              "{\"topology\": \"islands\", \"islands\": 2, \"workers\": 8, "
              "\"wan_bandwidth\": \"1Gbps\", \"jobs\": [" DILOCO("a") ", " DILOCO("b") "]}");
#undef DILOCO
    assert_int_equal(bw("cluster @/isl.json --out @/isl"), 0);
    const double n = grad_bytes("isl/jobs/a"), K = 2, S = 2, W = 1e9 / 8;
    const double x = summary_num("isl/jobs/a", "averagings");
    assert_true(x >= 2);
    for (int j = 0; j < 2; j++) {
        char shared[32], alone[32];
        snprintf(shared, sizeof shared, "isl/jobs/%c", 'a' + j);
        snprintf(alone, sizeof alone, "isl/alone/%c", 'a' + j);
        assert_float_equal(summary_num(shared, "wan_bytes"), x * 2 * (K - 1) * n, 0);
        assert_float_equal(summary_num(alone, "wan_bytes"), x * 2 * (K - 1) * n, 0);
        const double more = summary_num(shared, "sim_time_s") - summary_num(alone, "sim_time_s");
        const double want = x * 2 * (K - 1) / K * (n / S) * 2 / W;
        if (fabs(more - want) > 1e-4 * want) /* measured 2e-5 apart: the flows' ramps */
            fail_msg("job %c: %.9g s more than alone, closed form %.9g", 'a' + j, more, want);
    }
    /* a job's workers must make equal islands, and hosts are not taken there */
    write_tmp("isl3.json", "{\"topology\": \"islands\", \"islands\": 2, \"jobs\": [{\"name\": "
                           "\"a\", \"workers\": 3}, {\"name\": \"b\", \"workers\": 3}]}");
    assert_int_equal(bw("cluster @/isl3.json --out @/isl3"), 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_job_is_a_run),
        cmocka_unit_test(test_shared_uplink_halves_the_bandwidth),
        cmocka_unit_test(test_packed_jobs_apart_keep_full_speed),
        cmocka_unit_test(test_a_later_job_starts_at_its_start),
        cmocka_unit_test(test_set_sweeps_a_key),
        cmocka_unit_test(test_priced_jobs_share_their_rings_uplinks),
        cmocka_unit_test(test_priced_job_pays_its_hops_as_placed),
        cmocka_unit_test(test_jobs_on_islands_share_the_wan),
    };
    return cmocka_run_group_tests(tests, clitest_setup, clitest_teardown);
}
