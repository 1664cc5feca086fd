/* test_timeline.c: the Chrome-trace timeline writer (sim/driver/timeline.c). Writes small
 * timelines into a scratch folder and reads them back with jansson: the metadata naming the
 * workers and their lanes, the complete and instant events with their fields, times in
 * microseconds, the step bounds, escaping, and that a file appears whole at close or never;
 * then what a run's own timeline holds (bellows run --timeline). */
#include "testutil.h"

#include <dirent.h>
#include <unistd.h>

#include <jansson.h>

#include "timeline.h"

/* Entries in dir other than . and .. (temporary files included). */
static int dir_entries(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(d);
    return n;
}

/* The file's traceEvents (a new reference), failing the test unless it is that JSON. */
static json_t *load_events(const char *path, json_t **root)
{
    json_error_t jerr;
    *root = json_load_file(path, 0, &jerr);
    if (!*root) fail_msg("%s: line %d: %s", path, jerr.line, jerr.text);
    json_t *ev = json_object_get(*root, "traceEvents");
    assert_true(json_is_array(ev));
    return ev;
}

static int count_ph(json_t *ev, const char *ph)
{
    int n = 0;
    size_t i;
    json_t *e;
    json_array_foreach(ev, i, e) n += strcmp(json_string_value(json_object_get(e, "ph")), ph) == 0;
    return n;
}

/* The i-th event (in file order) whose ph is `ph`. */
static json_t *nth(json_t *ev, const char *ph, int i)
{
    size_t k;
    json_t *e;
    json_array_foreach(ev, k, e)
    {
        if (strcmp(json_string_value(json_object_get(e, "ph")), ph) == 0 && i-- == 0) return e;
    }
    fail_msg("no event %d of ph %s", i, ph);
    return NULL;
}

static const char *str(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    assert_true(json_is_string(v));
    return json_string_value(v);
}

static double num(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    assert_true(json_is_number(v));
    return json_number_value(v);
}

/* Whether metadata names (pid, tid) `name` with an event `what`. */
static int has_meta(json_t *ev, const char *what, int pid, int tid, const char *name)
{
    size_t i;
    json_t *e;
    json_array_foreach(ev, i, e)
    {
        if (strcmp(str(e, "ph"), "M") || strcmp(str(e, "name"), what)) continue;
        if (num(e, "pid") == pid && num(e, "tid") == tid &&
            strcmp(str(json_object_get(e, "args"), "name"), name) == 0)
            return 1;
    }
    return 0;
}

/* The three spans and the instant test_two_workers_spans_and_instant wrote, as read back. */
static void check_written_events(json_t *ev)
{
    json_t *e = nth(ev, "X", 0);
    assert_string_equal(str(e, "name"), "forward");
    assert_string_equal(str(e, "cat"), "compute");
    assert_int_equal(num(e, "pid"), 0);
    assert_int_equal(num(e, "tid"), 0);
    assert_float_equal(num(e, "ts"), 500000.0, 1e-6);
    assert_float_equal(num(e, "dur"), 1234.5, 1e-6); /* to the nanosecond */
    assert_int_equal(num(json_object_get(e, "args"), "step"), 1);
    assert_int_equal(json_object_size(json_object_get(e, "args")), 1);

    e = nth(ev, "X", 1);
    assert_string_equal(str(e, "name"), "backward \"layer\\1\"\n"); /* escaped and back */
    assert_float_equal(num(e, "ts"), 501234.5, 1e-6);
    assert_float_equal(num(e, "dur"), 98765.5, 1e-6);

    e = nth(ev, "X", 2);
    assert_string_equal(str(e, "name"), "bucket 3");
    assert_string_equal(str(e, "cat"), "communication");
    assert_int_equal(num(e, "pid"), 1);
    assert_int_equal(num(e, "tid"), 1);
    assert_float_equal(num(e, "ts"), 2250000.0, 1e-6);
    assert_float_equal(num(e, "dur"), 250000.0, 1e-6);
    json_t *args = json_object_get(e, "args");
    assert_int_equal(num(args, "step"), 2);
    assert_int_equal(num(args, "bucket"), 3);
    assert_int_equal(num(args, "bytes"), 1048576);

    e = nth(ev, "i", 0);
    assert_string_equal(str(e, "name"), "rank 2 -> 1");
    assert_string_equal(str(e, "s"), "t");
    assert_int_equal(num(e, "pid"), 1);
    assert_int_equal(num(e, "tid"), 0);
    assert_float_equal(num(e, "ts"), 750000.0, 1e-6);
    assert_null(json_object_get(e, "dur"));
    assert_int_equal(num(json_object_get(e, "args"), "level"), 1);
    assert_int_equal(num(json_object_get(e, "args"), "step"), 2);
}

static void test_two_workers_spans_and_instant(void **state)
{
    (void)state;
    char dir[64], path[128];
    make_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/run.trace.json", dir);
    Timeline *tl = NULL;
    BwError err = {0};
    assert_int_equal(timeline_open(path, 1, 2, 2, 1, &tl, &err), BW_OK);
    assert_non_null(tl);
    assert_false(timeline_wants(tl, 0));
    assert_true(timeline_wants(tl, 1));
    assert_true(timeline_wants(tl, 2));
    assert_false(timeline_wants(tl, 3));
    assert_false(timeline_wants(NULL, 1));

    timeline_span(tl, 0, TL_LANE_COMPUTE, "compute", "forward", 0.5, 0.5012345, 1, NULL);
    timeline_span(tl, 0, TL_LANE_COMPUTE, "compute", "backward \"layer\\1\"\n", 0.5012345, 0.6, 1,
                  "");
    timeline_span(tl, 1, TL_LANE_COMM, "communication", "bucket 3", 2.25, 2.5, 2,
                  "\"bucket\":3,\"bytes\":1048576");
    timeline_instant(tl, 1, "rank 2 -> 1", 0.75, 2, "\"level\":1");
    /* outside [1, 2]: dropped */
    timeline_span(tl, 0, TL_LANE_COMPUTE, "compute", "forward", 0.0, 0.1, 0, NULL);
    timeline_span(tl, 1, TL_LANE_COMM, "wait", "early", 3.0, 3.5, 3, NULL);
    timeline_instant(tl, 0, "late", 9.0, 5, NULL);
    assert_false(file_exists(path)); /* written whole at close, not before */
    assert_int_equal(timeline_close(tl, &err), BW_OK);
    assert_int_equal(dir_entries(dir), 1); /* no temporary file left */

    json_t *root, *ev = load_events(path, &root);
    assert_int_equal(json_array_size(ev), 6 + 3 + 1);
    assert_int_equal(count_ph(ev, "M"), 6);
    assert_int_equal(count_ph(ev, "X"), 3);
    assert_int_equal(count_ph(ev, "i"), 1);
    for (int w = 0; w < 2; w++) {
        char label[16];
        snprintf(label, sizeof label, "worker %d", w);
        assert_true(has_meta(ev, "process_name", w, 0, label));
        assert_true(has_meta(ev, "thread_name", w, 0, "compute"));
        assert_true(has_meta(ev, "thread_name", w, 1, "communication"));
    }

    check_written_events(ev);
    json_decref(root);
    rm_tree(dir);
}

/* step_hi < 0 keeps every step from step_lo on; none before. */
static void test_no_upper_bound(void **state)
{
    (void)state;
    char dir[64], path[128];
    make_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/t.json", dir);
    Timeline *tl;
    assert_int_equal(timeline_open(path, 10, -1, 1, 1, &tl, NULL), BW_OK);
    assert_false(timeline_wants(tl, 9));
    assert_true(timeline_wants(tl, 10));
    assert_true(timeline_wants(tl, 1000000));
    timeline_span(tl, 0, TL_LANE_COMPUTE, "compute", "a", 0, 1, 9, NULL);
    timeline_span(tl, 0, TL_LANE_COMPUTE, "compute", "b", 1, 2, 10, NULL);
    timeline_span(tl, 0, TL_LANE_COMM, "wait", "c", 1e5, 1e5 + 1e-9, 1000000, NULL);
    assert_int_equal(timeline_close(tl, NULL), BW_OK);
    json_t *root, *ev = load_events(path, &root);
    assert_int_equal(count_ph(ev, "M"), 3);
    assert_int_equal(count_ph(ev, "X"), 2);
    assert_string_equal(str(nth(ev, "X", 0), "name"), "b");
    /* a long run's times keep the nanosecond: 1e11 us, and a 1 ns span */
    assert_float_equal(num(nth(ev, "X", 1), "ts"), 1e11, 1e-3);
    assert_float_equal(num(nth(ev, "X", 1), "dur"), 1e-3, 1e-4);
    json_decref(root);
    rm_tree(dir);
}

/* Spans that meet in simulated time meet in the file: both ends are rounded to the nanosecond
 * before the duration is taken (0.4 ns to 1.6 ns is ts 0, dur 2 ns, not the 1 ns of rounding
 * the difference, which would end 1 ns before the next span starts). */
static void test_adjacent_spans_meet_exactly(void **state)
{
    (void)state;
    char dir[64], path[128];
    make_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/t.json", dir);
    Timeline *tl;
    assert_int_equal(timeline_open(path, 0, -1, 1, 1, &tl, NULL), BW_OK);
    const double t[] = {0.4e-9, 1.6e-9, 3e-9, 0.1, 0.1 + 0.2, 1.0 / 3, 0.7};
    const int n = (int)(sizeof t / sizeof *t);
    for (int i = 0; i + 1 < n; i++)
        timeline_span(tl, 0, TL_LANE_COMPUTE, "compute", "s", t[i], t[i + 1], 0, NULL);
    assert_int_equal(timeline_close(tl, NULL), BW_OK);
    json_t *root, *ev = load_events(path, &root);
    assert_int_equal(count_ph(ev, "X"), n - 1);
    assert_float_equal(num(nth(ev, "X", 0), "ts"), 0, 0);
    assert_float_equal(num(nth(ev, "X", 0), "dur"), 0.002, 1e-12);
    for (int i = 0; i + 2 < n; i++) {
        json_t *a = nth(ev, "X", i), *b = nth(ev, "X", i + 1);
        long long end = llround((num(a, "ts") + num(a, "dur")) * 1000);
        assert_int_equal(end, llround(num(b, "ts") * 1000));
    }
    json_decref(root);
    rm_tree(dir);
}

/* abort removes everything; NULL is a no-op for close and abort. */
static void test_abort_writes_nothing(void **state)
{
    (void)state;
    char dir[64], path[128];
    make_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/t.json", dir);
    Timeline *tl;
    assert_int_equal(timeline_open(path, 0, -1, 3, 1, &tl, NULL), BW_OK);
    timeline_span(tl, 2, TL_LANE_COMM, "communication", "x", 0, 1, 0, NULL);
    timeline_abort(tl);
    assert_int_equal(dir_entries(dir), 0);
    timeline_abort(NULL);
    assert_int_equal(timeline_close(NULL, NULL), BW_OK);
    timeline_span(NULL, 0, TL_LANE_COMPUTE, "compute", "x", 0, 1, 0, NULL); /* ignored */
    rm_tree(dir);
}

/* A bare file name goes in the current folder. */
static void test_bare_name_in_current_folder(void **state)
{
    (void)state;
    char dir[64], cwd[4096];
    make_tmpdir(dir, sizeof dir);
    assert_non_null(getcwd(cwd, sizeof cwd));
    assert_int_equal(chdir(dir), 0);
    Timeline *tl;
    int rc = timeline_open("bare.json", 0, 0, 1, 1, &tl, NULL);
    if (rc == BW_OK) rc = timeline_close(tl, NULL);
    assert_int_equal(chdir(cwd), 0);
    assert_int_equal(rc, BW_OK);
    char path[128];
    snprintf(path, sizeof path, "%s/bare.json", dir);
    json_t *root, *ev = load_events(path, &root);
    assert_int_equal(json_array_size(ev), 3);
    json_decref(root);
    rm_tree(dir);
}

/* Bad paths and bounds are usage errors naming the path, found at open. */
static void test_bad_paths_are_usage_errors(void **state)
{
    (void)state;
    char dir[64], path[160];
    make_tmpdir(dir, sizeof dir);
    Timeline *tl = (Timeline *)1;
    BwError err = {0};
    snprintf(path, sizeof path, "%s/missing/sub/t.json", dir);
    assert_int_equal(timeline_open(path, 0, -1, 2, 1, &tl, &err), BW_EUSAGE);
    assert_null(tl);
    assert_non_null(strstr(err.msg, path));
    assert_non_null(strstr(err.msg, "missing/sub"));

    snprintf(path, sizeof path, "%s/", dir); /* a folder, no file name */
    assert_int_equal(timeline_open(path, 0, -1, 2, 1, &tl, &err), BW_EUSAGE);
    assert_non_null(strstr(err.msg, path));

    snprintf(path, sizeof path, "%s/file", dir); /* a file in the way of the folder */
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fclose(f);
    snprintf(path, sizeof path, "%s/file/t.json", dir);
    assert_int_equal(timeline_open(path, 0, -1, 2, 1, &tl, &err), BW_EUSAGE);
    assert_non_null(strstr(err.msg, path));

    snprintf(path, sizeof path, "%s/t.json", dir);
    assert_int_equal(timeline_open(path, 5, 4, 2, 1, &tl, &err), BW_EUSAGE);
    assert_non_null(strstr(err.msg, path));
    assert_int_equal(timeline_open("", 0, -1, 2, 1, &tl, &err), BW_EUSAGE);
    assert_int_equal(dir_entries(dir), 1); /* only "file": nothing created */
    rm_tree(dir);
}

/* The events a run's timeline holds, counted by name, after `bellows run FLAGS --timeline`. */
static json_t *run_timeline(const char *dir, const char *flags, json_t **root)
{
    char cmd[1024], path[256];
    snprintf(path, sizeof path, "%s/t.json", dir);
    snprintf(cmd, sizeof cmd,
             "%s run --train-samples 256 --test-samples 64 --batch 8 --epochs 1 --workers 2 "
             "--quiet %s --timeline %s >/dev/null",
             BELLOWS_BIN, flags, path);
    assert_int_equal(system(cmd), 0);
    return load_events(path, root);
}

static int count_named(json_t *ev, const char *ph, const char *name)
{
    int n = 0;
    size_t i;
    json_t *e;
    json_array_foreach(ev, i, e) n += !strcmp(str(e, "ph"), ph) && !strcmp(str(e, "name"), name);
    return n;
}

/* A run's timeline: the collectives of a run without a workload carry the bytes each worker
 * sent (the mlp's dense step: 101,770 floats, the ring's 2 (P - 1) / P of them, with P = 2),
 * no zero-length wait is drawn, and a costed step shows its rendezvous on every worker's
 * compute lane (a slice when it waited, an instant when it did not). */
static void test_a_runs_timeline_says_what_happened(void **state)
{
    (void)state;
    char dir[64];
    make_tmpdir(dir, sizeof dir);
    json_t *root, *ev = run_timeline(dir, "--compressor none", &root);
    size_t i;
    json_t *e;
    int collectives = 0;
    json_array_foreach(ev, i, e)
    {
        if (strcmp(str(e, "ph"), "X")) continue;
        assert_true(num(e, "dur") > 0); /* no zero-length slice */
        if (strcmp(str(e, "name"), "collectives")) continue;
        assert_int_equal(num(json_object_get(e, "args"), "bytes"), 101770 * 4);
        collectives++;
    }
    assert_int_equal(collectives, 2 * 16);
    assert_int_equal(count_named(ev, "X", "wait for the slowest"), 0);
    json_decref(root);
    ev = run_timeline(dir, "--compressor none --slowdown 1,2", &root);
    assert_int_equal(count_named(ev, "X", "wait for the slowest"), 16); /* the fast worker's */
    json_decref(root);
    ev = run_timeline(dir, "--workload resnet18-cifar", &root);
    assert_int_equal(count_named(ev, "i", "step rendezvous"), 2 * 16);
    json_decref(root);
    ev = run_timeline(dir, "--workload resnet18-cifar --slowdown 1,2", &root);
    /* the fast worker waits at every step but the first, where both start at 0 */
    assert_int_equal(count_named(ev, "X", "step rendezvous"), 15);
    assert_int_equal(count_named(ev, "i", "step rendezvous"), 17);
    json_decref(root);
    rm_tree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_workers_spans_and_instant),
        cmocka_unit_test(test_no_upper_bound),
        cmocka_unit_test(test_adjacent_spans_meet_exactly),
        cmocka_unit_test(test_abort_writes_nothing),
        cmocka_unit_test(test_bare_name_in_current_folder),
        cmocka_unit_test(test_bad_paths_are_usage_errors),
        cmocka_unit_test(test_a_runs_timeline_says_what_happened),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
